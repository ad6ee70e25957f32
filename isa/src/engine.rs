//! Wire engines (`NEURON_ENGINE`) and the per-engine stream file names.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The engine that executes a stream. The engine is not encoded in a bundle: it is implied
/// by the stream file that holds the bundle.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[repr(u8)]
pub enum Engine {
    /// Tensor engine (matmul array), wire id 0.
    Pe = 0,
    /// Scalar/activation engine, wire id 1.
    Act = 1,
    /// GpSimd engine, wire id 2.
    Pool = 2,
    /// Vector engine, wire id 3.
    Dve = 3,
    /// Sync/sequencer engine, wire id 4.
    Sp = 4,
}

impl Engine {
    /// Every engine in wire order.
    pub const ALL: [Engine; 5] = [
        Engine::Pe,
        Engine::Act,
        Engine::Pool,
        Engine::Dve,
        Engine::Sp,
    ];

    /// Number of engines (the length of [`Engine::ALL`]).
    pub const COUNT: usize = Engine::ALL.len();

    /// Wire id (`NEURON_ENGINE`).
    #[inline]
    pub const fn wire_id(self) -> u8 {
        self as u8
    }

    /// Engine from its wire id.
    pub const fn from_wire_id(id: u8) -> Option<Engine> {
        match id {
            0 => Some(Engine::Pe),
            1 => Some(Engine::Act),
            2 => Some(Engine::Pool),
            3 => Some(Engine::Dve),
            4 => Some(Engine::Sp),
            _ => None,
        }
    }

    /// Lower-case name used on the command line and in JSON (`pe`, `act`, `pool`, `dve`, `sp`).
    pub const fn short(self) -> &'static str {
        match self {
            Engine::Pe => "pe",
            Engine::Act => "act",
            Engine::Pool => "pool",
            Engine::Dve => "dve",
            Engine::Sp => "sp",
        }
    }

    /// TitleCase stream file name inside a NEFF (`PE.bin`, `Activation.bin`, ...).
    pub const fn stream_file_name(self) -> &'static str {
        match self {
            Engine::Pe => "PE.bin",
            Engine::Act => "Activation.bin",
            Engine::Pool => "Pool.bin",
            Engine::Dve => "DVE.bin",
            Engine::Sp => "SP.bin",
        }
    }

    /// Engine implied by a stream file name (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`,
    /// `SP.bin`, case-insensitive; the tar-member tokens `pe_instr`, `act_instr`, ... too).
    pub fn from_file_name(path: &Path) -> Option<Engine> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let stem = name.strip_suffix(".bin").unwrap_or(&name);
        let stem = stem.strip_suffix("_instr").unwrap_or(stem);
        match stem {
            "pe" => Some(Engine::Pe),
            "activation" | "act" => Some(Engine::Act),
            "pool" => Some(Engine::Pool),
            "dve" => Some(Engine::Dve),
            "sp" => Some(Engine::Sp),
            _ => None,
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// Error for an unrecognised engine name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{0}` (expected pe|act|pool|dve|sp)")]
pub struct UnknownEngine(pub String);

impl FromStr for Engine {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "pe" | "tensor" | "0" => Engine::Pe,
            "act" | "activation" | "scalar" | "1" => Engine::Act,
            "pool" | "gpsimd" | "2" => Engine::Pool,
            "dve" | "vector" | "3" => Engine::Dve,
            "sp" | "sync" | "4" => Engine::Sp,
            _ => return Err(UnknownEngine(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        for e in Engine::ALL {
            assert_eq!(
                Engine::from_file_name(Path::new(e.stream_file_name())),
                Some(e)
            );
            assert_eq!(Engine::from_wire_id(e.wire_id()), Some(e));
            assert_eq!(e.short().parse::<Engine>().unwrap(), e);
        }
        assert_eq!(
            Engine::from_file_name(Path::new("/x/activation.BIN")),
            Some(Engine::Act)
        );
        assert_eq!(
            Engine::from_file_name(Path::new("dve_instr")),
            Some(Engine::Dve)
        );
        assert_eq!(Engine::from_file_name(Path::new("kernel.bin")), None);
    }
}
