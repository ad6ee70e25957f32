//! The vector loops the value models choose from at run time, and which of them the host runs.

/// A family of loops: the portable loop, then AVX2 with FMA, then AVX-512F with FMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loop {
    /// Any CPU.
    Portable = 0,
    /// AVX2 with FMA.
    Avx2 = 1,
    /// AVX-512F with FMA.
    Avx512 = 2,
}

/// The environment variable that caps the loops a process may use: `portable`, `avx2` or
/// `avx512` (the default: the widest the CPU has). Results do not depend on it (every loop is
/// bit-identical); it measures or works around a host's vector units.
pub const SIMD_ENV: &str = "TPBSIM_SIMD";

/// The widest loop [`SIMD_ENV`] allows: `None` when unset, an error naming the value when it
/// is not one of the loop names.
pub fn cap_from_env() -> Result<Option<Loop>, String> {
    parse_cap(std::env::var_os(SIMD_ENV).as_deref())
}

/// [`cap_from_env`] of the variable's value.
fn parse_cap(v: Option<&std::ffi::OsStr>) -> Result<Option<Loop>, String> {
    match v {
        None => Ok(None),
        Some(v) => match v.to_str() {
            Some("portable") => Ok(Some(Loop::Portable)),
            Some("avx2") => Ok(Some(Loop::Avx2)),
            Some("avx512") => Ok(Some(Loop::Avx512)),
            _ => Err(format!(
                "{SIMD_ENV}={}: expected portable, avx2 or avx512",
                v.to_string_lossy()
            )),
        },
    }
}

/// The cap in force for this process (read once; a value that is not a loop name caps
/// nothing here — the CLI and the Python package refuse it before a run).
fn cap() -> Loop {
    static CAP: std::sync::OnceLock<Loop> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| cap_from_env().ok().flatten().unwrap_or(Loop::Avx512))
}

impl Loop {
    /// Whether this CPU runs the loop and [`SIMD_ENV`] allows it.
    pub fn host_has(self) -> bool {
        self <= cap() && self.cpu_has()
    }

    /// Whether this CPU runs the loop.
    fn cpu_has(self) -> bool {
        match self {
            Loop::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Loop::Avx2 => {
                std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("avx2")
            }
            #[cfg(target_arch = "x86_64")]
            Loop::Avx512 => {
                std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The loops this CPU runs, widest first (always ending with `Portable`).
    pub fn available() -> Vec<Loop> {
        [Loop::Avx512, Loop::Avx2, Loop::Portable]
            .into_iter()
            .filter(|l| l.host_has())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_names_a_loop_or_is_refused() {
        for (v, want) in [
            ("portable", Ok(Some(Loop::Portable))),
            ("avx2", Ok(Some(Loop::Avx2))),
            ("avx512", Ok(Some(Loop::Avx512))),
        ] {
            assert_eq!(parse(v), want, "{v}");
        }
        assert_eq!(parse_cap(None), Ok(None));
        for v in ["AVX2", "sse", "", " avx2"] {
            assert!(
                parse(v)
                    .unwrap_err()
                    .contains("expected portable, avx2 or avx512"),
                "{v}"
            );
        }
    }

    fn parse(v: &str) -> Result<Option<Loop>, String> {
        parse_cap(Some(std::ffi::OsStr::new(v)))
    }
}
