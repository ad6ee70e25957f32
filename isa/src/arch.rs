//! NeuronCore generations and their identifiers.

use std::fmt;
use std::str::FromStr;

/// A NeuronCore generation whose engine ISA tpbsim decodes.
///
/// Names follow the shipped ISA headers (SUNDA, CAYMAN, MARIANA, MAVERICK); the compiler's
/// ArchLevel numbers are 20, 30, 40 and 50.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Gen {
    /// NC-v2, Trn1/Inf2 (ArchLevel 20).
    V2,
    /// NC-v3, Trn2 (ArchLevel 30).
    V3,
    /// NC-v4, Trn3 (ArchLevel 40).
    V4,
    /// NC-v5, Trn4 (ArchLevel 50): header facts only.
    V5,
}

impl Gen {
    /// Every generation, oldest first.
    pub const ALL: [Gen; 4] = [Gen::V2, Gen::V3, Gen::V4, Gen::V5];

    /// Index 0..=3 (v2..v5), for per-generation tables.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short name used on the command line (`v2`..`v5`).
    pub const fn short(self) -> &'static str {
        match self {
            Gen::V2 => "v2",
            Gen::V3 => "v3",
            Gen::V4 => "v4",
            Gen::V5 => "v5",
        }
    }

    /// Header/runtime codename.
    pub const fn codename(self) -> &'static str {
        match self {
            Gen::V2 => "sunda",
            Gen::V3 => "cayman",
            Gen::V4 => "mariana",
            Gen::V5 => "maverick",
        }
    }

    /// Compiler ArchLevel number (20, 30, 40, 50).
    pub const fn arch_level(self) -> u32 {
        match self {
            Gen::V2 => 20,
            Gen::V3 => 30,
            Gen::V4 => 40,
            Gen::V5 => 50,
        }
    }

    /// NEURON_CORE_VERSION passed to the v3/v4 L2 entry points (2..5).
    pub const fn core_version(self) -> u32 {
        self.arch_level() / 10
    }

    /// Generation for a compiler ArchLevel (20/30/40/50).
    pub const fn from_arch_level(level: u32) -> Option<Gen> {
        match level {
            20 => Some(Gen::V2),
            30 => Some(Gen::V3),
            40 => Some(Gen::V4),
            50 => Some(Gen::V5),
            _ => None,
        }
    }
}

impl fmt::Display for Gen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// Error for an unrecognised generation name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown generation `{0}` (expected v2|v3|v4|v5, sunda|cayman|mariana|maverick, or 20|30|40|50)")]
pub struct UnknownGen(pub String);

impl Gen {
    /// The generation a name spells exactly (lower case, no surrounding space): what a NEFF's
    /// target fields are read with. [`FromStr`] (command-line `--arch`) also trims and folds
    /// case.
    pub fn from_exact_name(s: &str) -> Option<Gen> {
        Some(match s {
            "v2" | "2" | "20" | "sunda" | "trn1" | "inf2" | "trainium" | "corev2" | "core_v2" => {
                Gen::V2
            }
            "v3" | "3" | "30" | "cayman" | "gen3" | "trn2" | "corev3" | "core_v3" => Gen::V3,
            "v4" | "4" | "40" | "mariana" | "trn3" | "corev4" | "core_v4" => Gen::V4,
            "v5" | "5" | "50" | "maverick" | "trn4" | "corev5" | "core_v5" => Gen::V5,
            _ => return None,
        })
    }
}

impl FromStr for Gen {
    type Err = UnknownGen;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Gen::from_exact_name(&s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownGen(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for g in Gen::ALL {
            assert_eq!(g.short().parse::<Gen>().unwrap(), g);
            assert_eq!(g.codename().parse::<Gen>().unwrap(), g);
            assert_eq!(Gen::from_arch_level(g.arch_level()), Some(g));
        }
        assert!("v6".parse::<Gen>().is_err());
        assert_eq!(" V3 ".parse::<Gen>(), Ok(Gen::V3));
        assert_eq!(Gen::from_exact_name("cayman"), Some(Gen::V3));
        for s in [" cayman", "V3 ", "Cayman", "cayman\n"] {
            assert_eq!(Gen::from_exact_name(s), None, "{s:?}");
        }
        assert_eq!(Gen::V4.core_version(), 4);
    }
}
