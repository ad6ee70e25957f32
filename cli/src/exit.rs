//! Exit codes, in one place.
//!
//! 0: success (all valid, all outputs match); 1: the input was checked and found invalid, or an
//! output mismatched its reference; 2: usage, input or I/O error; 3: simulation fault
//! (deadlock, out-of-bounds access, invalid bundle during a run, step budget exhausted).

/// Success.
pub const OK: u8 = 0;
/// Checked and found invalid / mismatching.
pub const INVALID: u8 = 1;
/// Usage, input or I/O error.
pub const USAGE: u8 = 2;
/// Simulation fault.
pub const FAULT: u8 = 3;

/// The verdict of a command that ran to completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything held.
    Ok,
    /// Something was checked and failed (invalid bundle, L1 error, output mismatch).
    Invalid,
}

impl Outcome {
    /// Process exit code.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => OK,
            Outcome::Invalid => INVALID,
        }
    }
}

/// An error that stops a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or unusable input.
    #[error("{0}")]
    Usage(String),
    /// File system or stream error.
    #[error("{0}")]
    Io(String),
    /// Simulation fault.
    #[error("{0}")]
    Fault(String),
    /// An error already reported (by another process of an MPI run, or in the report of a
    /// run of several kernels; docs/mpi.md): the process exits with its code and prints
    /// nothing more.
    #[error("")]
    Reported(u8),
}

impl CliError {
    /// Process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Io(_) => USAGE,
            CliError::Fault(_) => FAULT,
            CliError::Reported(code) => *code,
        }
    }
}
