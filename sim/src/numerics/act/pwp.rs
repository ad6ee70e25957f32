//! Piecewise-polynomial (PWP) activation tables and their evaluator.
//!
//! A table holds, per IEEE-754 octave (biased exponent) of the input, `2^extract_size`
//! equal-width buckets selected by the top `extract_size` mantissa bits; each bucket is a cubic
//! about its breakpoint `x`: `d0 + d1·t + d2·t² + d3·t³`, `t = sel − x`. Evaluation order:
//!
//! 1. `x == ±0` → the zero result; `|x| > FLT_MAX` (±inf) → the ±inf results; NaN falls through.
//! 2. Symmetry fold: with symmetry enabled the table is read at `|x|` (or `−|x|`).
//! 3. Four-way saturation clamp per sign (high / low points compared on biased exponent, then
//!    mantissa); inside the clamps, the two-level bucket lookup.
//! 4. Mixed precision: `t` and `d0 + d1·t` in f32, `d2·t²` and `d3·t³` (via `powf(t, 3)`) in
//!    f64, one rounding to f32 at the end.
//! 5. For a negative input of a symmetric table: negate if `invert_sign`, then add the symmetry
//!    point.
//!
//! The JSON format (`"format": "tpbsim-pwp/1"`) is documented in `docs/numerics.md`.

use serde::Deserialize;

use super::ActFunction;

/// Errors of table loading and evaluation.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PwpError {
    /// The text is not JSON of the expected shape.
    #[error("PWP table JSON: {0}")]
    Json(String),
    /// The JSON is well formed but describes an impossible table.
    #[error("PWP table: {0}")]
    Invalid(String),
    /// The input falls in an octave or bucket the table does not cover.
    #[error("PWP table of {function} has no section for input {x:e} (bits {bits:#010x})")]
    UnhandledSection {
        /// The table's function.
        function: ActFunction,
        /// The (folded) input.
        x: f32,
        /// Its bits.
        bits: u32,
    },
}

/// One cubic bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Section {
    /// Breakpoint (expansion centre).
    pub x: f32,
    /// Coefficients d0..d3.
    pub d: [f32; 4],
}

/// One saturation clamp: inputs beyond (`high`) or below (`low`) the point by biased exponent,
/// then mantissa, use `section`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SatPoint {
    /// Biased exponent threshold.
    pub exponent: i32,
    /// Mantissa threshold (23-bit field value).
    pub mantissa: i32,
    /// The clamp region's polynomial.
    pub section: Section,
}

/// The buckets of one octave.
#[derive(Clone, Debug, PartialEq)]
struct Region {
    extract_size: u32,
    sections: Vec<Section>,
}

/// Symmetry options.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Symmetry {
    /// Evaluate on `|x|` and reconstruct negative inputs.
    pub enabled: bool,
    /// Odd function: negate the result for negative inputs.
    pub invert_sign: bool,
    /// Read the negative table at `−|x|` instead of the positive one at `|x|`.
    pub use_neg_region: bool,
    /// Added to the reconstructed result of a negative input.
    pub point: f32,
}

/// A loaded PWP table of one function.
#[derive(Clone, Debug, PartialEq)]
pub struct PwpTable {
    function: ActFunction,
    symmetry: Symmetry,
    zero_result: f32,
    nan_result: f32,
    pos_inf_result: f32,
    neg_inf_result: f32,
    pos_high: SatPoint,
    pos_low: SatPoint,
    neg_high: SatPoint,
    neg_low: SatPoint,
    /// Indexed by biased exponent.
    pos: Vec<Option<Region>>,
    neg: Vec<Option<Region>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonF32 {
    Num(f64),
    Text(String),
}

impl JsonF32 {
    fn get(&self, what: &str) -> Result<f32, PwpError> {
        match self {
            JsonF32::Num(v) => {
                let f = *v as f32;
                if f.is_finite() && f as f64 != *v {
                    return Err(PwpError::Invalid(format!(
                        "{what}: {v} is not an exact f32"
                    )));
                }
                Ok(f)
            }
            JsonF32::Text(s) => match s.as_str() {
                "inf" | "+inf" => Ok(f32::INFINITY),
                "-inf" => Ok(f32::NEG_INFINITY),
                "nan" => Ok(f32::NAN),
                t => t
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .map(f32::from_bits)
                    .ok_or_else(|| {
                        PwpError::Invalid(format!(
                            "{what}: {t:?} is not a number, inf, nan or 0x bits"
                        ))
                    }),
            },
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSymmetry {
    enabled: bool,
    invert_sign: bool,
    use_neg_region: bool,
    point: JsonF32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonResults {
    zero: JsonF32,
    nan: JsonF32,
    pos_inf: JsonF32,
    neg_inf: JsonF32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSat {
    exponent: i32,
    mantissa: i32,
    section: [JsonF32; 5],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSaturation {
    pos_high: JsonSat,
    pos_low: JsonSat,
    neg_high: JsonSat,
    neg_low: JsonSat,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRegion {
    exponent: i32,
    extract_size: u32,
    sections: Vec<[JsonF32; 5]>,
}

#[derive(Deserialize)]
struct JsonTable {
    format: String,
    function: String,
    symmetry: JsonSymmetry,
    results: JsonResults,
    saturation: JsonSaturation,
    pos_regions: Vec<JsonRegion>,
    neg_regions: Vec<JsonRegion>,
}

/// The format tag of the JSON tables.
pub const FORMAT: &str = "tpbsim-pwp/1";

fn section(v: &[JsonF32; 5], what: &str) -> Result<Section, PwpError> {
    Ok(Section {
        x: v[0].get(what)?,
        d: [
            v[1].get(what)?,
            v[2].get(what)?,
            v[3].get(what)?,
            v[4].get(what)?,
        ],
    })
}

fn sat(s: &JsonSat, what: &str) -> Result<SatPoint, PwpError> {
    if !(0..=255).contains(&s.exponent) || !(0..=0x7F_FFFF).contains(&s.mantissa) {
        return Err(PwpError::Invalid(format!(
            "{what}: exponent/mantissa out of range"
        )));
    }
    Ok(SatPoint {
        exponent: s.exponent,
        mantissa: s.mantissa,
        section: section(&s.section, what)?,
    })
}

fn regions(list: &[JsonRegion], side: &str) -> Result<Vec<Option<Region>>, PwpError> {
    let mut out: Vec<Option<Region>> = vec![None; 256];
    for r in list {
        let what = format!("{side}_regions exponent {}", r.exponent);
        let biased = r.exponent + 127;
        if !(0..=255).contains(&biased) {
            return Err(PwpError::Invalid(format!("{what}: exponent out of range")));
        }
        if r.extract_size > 23 {
            return Err(PwpError::Invalid(format!("{what}: extract_size above 23")));
        }
        if r.sections.len() != 1usize << r.extract_size {
            return Err(PwpError::Invalid(format!(
                "{what}: {} sections, extract_size {} needs {}",
                r.sections.len(),
                r.extract_size,
                1usize << r.extract_size
            )));
        }
        let slot = &mut out[biased as usize];
        if slot.is_some() {
            return Err(PwpError::Invalid(format!("{what}: listed twice")));
        }
        let sections = r
            .sections
            .iter()
            .map(|s| section(s, &what))
            .collect::<Result<_, _>>()?;
        *slot = Some(Region {
            extract_size: r.extract_size,
            sections,
        });
    }
    Ok(out)
}

impl PwpTable {
    /// Parse a table from its JSON text.
    pub fn from_json(text: &str) -> Result<Self, PwpError> {
        let j: JsonTable = serde_json::from_str(text).map_err(|e| PwpError::Json(e.to_string()))?;
        if j.format != FORMAT {
            return Err(PwpError::Invalid(format!(
                "format {:?}, expected {FORMAT:?}",
                j.format
            )));
        }
        let function = ActFunction::from_name(&j.function)
            .ok_or_else(|| PwpError::Invalid(format!("unknown function {:?}", j.function)))?;
        Ok(PwpTable {
            function,
            symmetry: Symmetry {
                enabled: j.symmetry.enabled,
                invert_sign: j.symmetry.invert_sign,
                use_neg_region: j.symmetry.use_neg_region,
                point: j.symmetry.point.get("symmetry.point")?,
            },
            zero_result: j.results.zero.get("results.zero")?,
            nan_result: j.results.nan.get("results.nan")?,
            pos_inf_result: j.results.pos_inf.get("results.pos_inf")?,
            neg_inf_result: j.results.neg_inf.get("results.neg_inf")?,
            pos_high: sat(&j.saturation.pos_high, "saturation.pos_high")?,
            pos_low: sat(&j.saturation.pos_low, "saturation.pos_low")?,
            neg_high: sat(&j.saturation.neg_high, "saturation.neg_high")?,
            neg_low: sat(&j.saturation.neg_low, "saturation.neg_low")?,
            pos: regions(&j.pos_regions, "pos")?,
            neg: regions(&j.neg_regions, "neg")?,
        })
    }

    /// The function the table approximates.
    pub fn function(&self) -> ActFunction {
        self.function
    }

    /// The symmetry options.
    pub fn symmetry(&self) -> Symmetry {
        self.symmetry
    }

    /// The NaN result the table carries (not returned by evaluation: NaN inputs fall through
    /// to the polynomial path, as in the reference evaluator).
    pub fn nan_result(&self) -> f32 {
        self.nan_result
    }

    /// Evaluate the table at `v` (already scaled and biased).
    pub fn eval(&self, v: f32) -> Result<f32, PwpError> {
        if v == 0.0 {
            return Ok(self.zero_result);
        }
        let absv = v.abs();
        if absv > f32::MAX {
            return Ok(if v <= 0.0 {
                self.neg_inf_result
            } else {
                self.pos_inf_result
            });
        }
        let sym = self.symmetry;
        let sel = if !sym.enabled {
            v
        } else if sym.use_neg_region {
            -absv
        } else {
            absv
        };
        let bits = sel.to_bits();
        let expo = ((bits >> 23) & 0xFF) as i32;
        let mant = (bits & 0x7F_FFFF) as i32;
        let above = |s: &SatPoint| s.exponent < expo || (s.exponent == expo && s.mantissa <= mant);
        let below = |s: &SatPoint| s.exponent > expo || (s.exponent == expo && s.mantissa >= mant);
        let sect = if bits & 0x8000_0000 == 0 {
            if above(&self.pos_high) {
                self.pos_high.section
            } else if below(&self.pos_low) {
                self.pos_low.section
            } else {
                self.bucket(&self.pos, sel)?
            }
        } else if above(&self.neg_high) {
            self.neg_high.section
        } else if below(&self.neg_low) {
            self.neg_low.section
        } else {
            self.bucket(&self.neg, sel)?
        };
        let t = sel - sect.x;
        let [d0, d1, d2, d3] = sect.d;
        let mut r = ((t * d1) + d0) as f64 + (t as f64) * (t as f64) * d2 as f64;
        r += (t as f64).powf(3.0) * d3 as f64;
        let mut result = r as f32;
        if sym.enabled && v != absv {
            if sym.invert_sign {
                result = -result;
            }
            result += sym.point;
        }
        Ok(result)
    }

    fn bucket(&self, regions: &[Option<Region>], sel: f32) -> Result<Section, PwpError> {
        let bits = sel.to_bits();
        let missing = || PwpError::UnhandledSection {
            function: self.function,
            x: sel,
            bits,
        };
        let region = regions[((bits >> 23) & 0xFF) as usize]
            .as_ref()
            .ok_or_else(missing)?;
        let id = (bits & 0x7F_FFFF) >> (23 - region.extract_size);
        region
            .sections
            .get(id as usize)
            .copied()
            .ok_or_else(missing)
    }
}

#[cfg(test)]
mod clamp_boundaries {
    use super::*;

    /// A table whose every section is a constant: the high clamps give 10 (positive) and 30
    /// (negative), the low clamps 20 and 40, the buckets of octave `2^0` give 1 and -1.
    fn table(high: (i32, i32), low: (i32, i32)) -> PwpTable {
        let sat = |(e, m): (i32, i32), c: i32| {
            format!(r#"{{"exponent":{e},"mantissa":{m},"section":[0,{c},0,0,0]}}"#)
        };
        let text = format!(
            r#"{{"format":"tpbsim-pwp/1","function":"exp",
             "symmetry":{{"enabled":false,"invert_sign":false,"use_neg_region":false,"point":0}},
             "results":{{"zero":0,"nan":"nan","pos_inf":"inf","neg_inf":0}},
             "saturation":{{"pos_high":{},"pos_low":{},"neg_high":{},"neg_low":{}}},
             "pos_regions":[{{"exponent":0,"extract_size":0,"sections":[[0,1,0,0,0]]}}],
             "neg_regions":[{{"exponent":0,"extract_size":0,"sections":[[0,-1,0,0,0]]}}]}}"#,
            sat(high, 10),
            sat(low, 20),
            sat(high, 30),
            sat(low, 40)
        );
        PwpTable::from_json(&text).expect("table")
    }

    fn point((e, m): (i32, i32)) -> f32 {
        f32::from_bits(((e as u32) << 23) | m as u32)
    }

    /// One ulp away from zero, one ulp towards it.
    fn up(x: f32) -> f32 {
        f32::from_bits(x.to_bits() + 1)
    }
    fn down(x: f32) -> f32 {
        f32::from_bits(x.to_bits() - 1)
    }

    /// An input exactly at a clamp point takes the clamp's section, on both signs: `|x| >= high`
    /// takes the high clamp and `|x| <= low` the low one (biased exponent, then mantissa);
    /// one ulp inside either point takes the bucket. Points inside an octave (same exponent,
    /// mantissas compared) and on an octave edge (mantissa 0).
    #[test]
    fn a_clamp_point_belongs_to_its_clamp() {
        for (high, low) in [((127, 0x40_0000), (127, 0x20_0000)), ((128, 0), (127, 0))] {
            let t = table(high, low);
            let (h, l) = (point(high), point(low));
            for (sign, hi_c, lo_c, bucket) in [(1.0f32, 10.0, 20.0, 1.0), (-1.0, 30.0, 40.0, -1.0)]
            {
                let at = |x: f32| {
                    t.eval(sign * x)
                        .unwrap_or_else(|e| panic!("{}: {e}", sign * x))
                };
                let what = |x: f32| format!("{:e} (high {high:?}, low {low:?})", sign * x);
                assert_eq!(at(h), hi_c, "{}", what(h));
                assert_eq!(at(up(h)), hi_c, "{}", what(up(h)));
                assert_eq!(at(down(h)), bucket, "{}", what(down(h)));
                assert_eq!(at(l), lo_c, "{}", what(l));
                assert_eq!(at(down(l)), lo_c, "{}", what(down(l)));
                assert_eq!(at(up(l)), bucket, "{}", what(up(l)));
            }
        }
    }

    /// `extract_size` up to 23 (the mantissa's width) is a bucket count the table may have;
    /// 24 is refused for its size, before its sections are counted.
    #[test]
    fn extract_size_is_at_most_the_mantissa_width() {
        let region = |size: u32, sections: usize| {
            let s = vec!["[0,0,0,0,0]"; sections].join(",");
            format!(r#""pos_regions":[{{"exponent":0,"extract_size":{size},"sections":[{s}]}}]"#)
        };
        let with = |size: u32, sections: usize| {
            let text = format!(
                r#"{{"format":"tpbsim-pwp/1","function":"exp",
                 "symmetry":{{"enabled":false,"invert_sign":false,"use_neg_region":false,"point":0}},
                 "results":{{"zero":0,"nan":"nan","pos_inf":"inf","neg_inf":0}},
                 "saturation":{{"pos_high":{s},"pos_low":{s},"neg_high":{s},"neg_low":{s}}},
                 {},"neg_regions":[]}}"#,
                region(size, sections),
                s = r#"{"exponent":0,"mantissa":0,"section":[0,0,0,0,0]}"#
            );
            PwpTable::from_json(&text)
        };
        for (size, sections) in [(0, 1), (1, 2), (4, 16)] {
            with(size, sections).unwrap_or_else(|e| panic!("{size}: {e}"));
        }
        for (size, need) in [(22u32, 1usize << 22), (23, 1 << 23)] {
            match with(size, 1) {
                Err(PwpError::Invalid(m)) => assert!(
                    m.contains(&format!("1 sections, extract_size {size} needs {need}")),
                    "{size}: {m}"
                ),
                other => panic!("{size}: {other:?}"),
            }
        }
        for size in [24u32, 31, 64] {
            match with(size, 1) {
                Err(PwpError::Invalid(m)) => {
                    assert!(m.contains("extract_size above 23"), "{size}: {m}")
                }
                other => panic!("{size}: {other:?}"),
            }
        }
    }
}
