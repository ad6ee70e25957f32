//! `sim convert`: run the cast engine on bit patterns or on one value.
//!
//! Without `--value`, standard input holds one code per line in hex (`0x` prefix optional, blank
//! lines skipped); each is cast from `--from` to `--to` and printed as hex, one per line. Packed
//! ×4 formats are taken per lane: a line is one element's code. Nothing is printed unless every
//! line converts.
//!
//! With `--value X`, the decimal `X` is first rounded into `--from`, then cast to `--to`; the
//! destination code and its decoded value are printed (`0x3e 1.75`).

use crate::exit::{CliError, Outcome};
use tpbsim_isa::NumFormat;
use tpbsim_sim::numerics::{cast, from_f32, to_f32, CastPolicy, FloatToInt};

/// Float → integer rounding on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FloatToIntArg {
    /// Round toward zero (the device ALU path).
    Truncate,
    /// Round to nearest even (the compiler's reference cast).
    Rne,
}

/// Arguments of `sim convert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source format (ml_dtypes name, e.g. float32, bfloat16, float8_e4m3fn).
    #[arg(long, value_parser = parse_format)]
    pub from: NumFormat,
    /// Destination format.
    #[arg(long, value_parser = parse_format)]
    pub to: NumFormat,
    /// FP8 overflow becomes Inf/NaN instead of ±max finite (FP8 config byte 0 = 0).
    #[arg(long)]
    pub no_saturate: bool,
    /// Set the FP8 NaN/Inf selector (FP8 config byte 1).
    #[arg(long)]
    pub nan_selector: bool,
    /// Float → integer rounding.
    #[arg(long, value_enum, default_value = "truncate")]
    pub float_to_int: FloatToIntArg,
    /// Convert this decimal value instead of reading codes from standard input.
    #[arg(long, allow_hyphen_values = true)]
    pub value: Option<String>,
}

fn parse_format(s: &str) -> Result<NumFormat, String> {
    s.parse::<NumFormat>().map_err(|e| e.to_string())
}

impl Args {
    fn policy(&self) -> CastPolicy {
        CastPolicy {
            saturate_fp8: !self.no_saturate,
            fp8_nan_selector: self.nan_selector,
            float_to_int: match self.float_to_int {
                FloatToIntArg::Truncate => FloatToInt::DeviceTruncate,
                FloatToIntArg::Rne => FloatToInt::ReferenceRne,
            },
        }
    }
}

/// Most bytes of standard input `sim convert` reads.
const MAX_STDIN_BYTES: u64 = 256 << 20;

/// Run `sim convert`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let policy = a.policy();
    let out = match &a.value {
        Some(v) => convert_value(v, a.from, a.to, &policy)?,
        None => {
            let bytes = tpbsim_isa::fsio::read_to_limit(std::io::stdin().lock(), MAX_STDIN_BYTES)
                .map_err(|e| CliError::Io(format!("reading standard input: {e}")))?;
            let input = String::from_utf8(bytes).map_err(|_| {
                CliError::Usage("standard input: not UTF-8 text (hex codes, one per line)".into())
            })?;
            convert_lines(&input, a.from, a.to, &policy)?
        }
    };
    print!("{out}");
    Ok(Outcome::Ok)
}

/// `0x` + the code in as many hex digits as the element has nibbles.
fn hex(code: u64, format: NumFormat) -> String {
    let digits = (format.element_bits() as usize).div_ceil(4);
    format!("{code:#0width$x}", width = digits + 2)
}

/// Cast every hex code of `input` (one per line); the output text, or an error naming the line.
pub fn convert_lines(
    input: &str,
    from: NumFormat,
    to: NumFormat,
    policy: &CastPolicy,
) -> Result<String, CliError> {
    let bits = from.element_bits();
    let mut out = String::new();
    for (i, line) in input.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let digits = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        let code = u64::from_str_radix(digits, 16).map_err(|_| {
            CliError::Usage(format!(
                "standard input line {}: `{t}` is not a hex code",
                i + 1
            ))
        })?;
        if bits < 64 && code >> bits != 0 {
            return Err(CliError::Usage(format!(
                "standard input line {}: {t} does not fit a {bits}-bit {from} code",
                i + 1
            )));
        }
        out.push_str(&hex(cast(from, code, to, policy), to));
        out.push('\n');
    }
    Ok(out)
}

/// Round the decimal `value` into `from`, cast it to `to`; `"<code> <decoded value>\n"`.
pub fn convert_value(
    value: &str,
    from: NumFormat,
    to: NumFormat,
    policy: &CastPolicy,
) -> Result<String, CliError> {
    let x: f32 = value
        .trim()
        .parse()
        .map_err(|_| CliError::Usage(format!("--value `{value}` is not a number")))?;
    let code = cast(from, from_f32(from, x, policy), to, policy);
    Ok(format!("{} {}\n", hex(code, to), to_f32(to, code)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: CastPolicy = CastPolicy::DEVICE;

    #[test]
    fn lines_tolerate_prefix_case_and_blank_lines() {
        let out = convert_lines(
            "0x3f800000\n\n  40490fdb \n0X7F800000\n",
            NumFormat::Float32,
            NumFormat::Bfloat16,
            &P,
        )
        .unwrap();
        assert_eq!(out, "0x3f80\n0x4049\n0x7f80\n");
        let out = convert_lines(
            "3f800000\n43e00000\n",
            NumFormat::Float32,
            NumFormat::Float8E4m3fn,
            &P,
        )
        .unwrap();
        assert_eq!(out, "0x38\n0x7e\n");
        let nosat = CastPolicy {
            saturate_fp8: false,
            ..P
        };
        let out = convert_lines(
            "0x44000000\n",
            NumFormat::Float32,
            NumFormat::Float8E4m3fn,
            &nosat,
        )
        .unwrap();
        assert_eq!(out, "0x7f\n", "512 overflows to NaN without saturation");
        let out = convert_lines(
            "0x7\n0xf\n",
            NumFormat::Float4E2m1fnX4,
            NumFormat::Bfloat16,
            &P,
        )
        .unwrap();
        assert_eq!(out, "0x40c0\n0xc0c0\n", "packed forms are taken per lane");
    }

    #[test]
    fn bad_lines_name_the_line() {
        let e = convert_lines(
            "0x3f80\n\nzz\n",
            NumFormat::Bfloat16,
            NumFormat::Float32,
            &P,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("line 3"), "{e}");
        let e =
            convert_lines("0x100\n", NumFormat::Float8E5m2, NumFormat::Float32, &P).unwrap_err();
        assert!(
            e.to_string().contains("line 1") && e.to_string().contains("8-bit"),
            "{e}"
        );
        let e = convert_lines("0x\n", NumFormat::Float8E5m2, NumFormat::Float32, &P).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn values() {
        assert_eq!(
            convert_value("1.7", NumFormat::Float32, NumFormat::Float8E4m3fn, &P).unwrap(),
            "0x3e 1.75\n"
        );
        assert_eq!(
            convert_value("-1e9", NumFormat::Float32, NumFormat::Float8E5m2, &P).unwrap(),
            "0xfb -57344\n"
        );
        assert_eq!(
            convert_value("2.9", NumFormat::Float32, NumFormat::Int8, &P).unwrap(),
            "0x02 2\n"
        );
        let rne = CastPolicy::REFERENCE;
        assert_eq!(
            convert_value("2.9", NumFormat::Float32, NumFormat::Int8, &rne).unwrap(),
            "0x03 3\n"
        );
        assert_eq!(
            convert_value("nan", NumFormat::Float32, NumFormat::Bfloat16, &P).unwrap(),
            "0x7fc0 NaN\n"
        );
        assert!(convert_value("one", NumFormat::Float32, NumFormat::Bfloat16, &P).is_err());
    }
}
