//! One module per subcommand.

pub mod asm;
pub mod check;
pub mod convert;
pub mod decode;
pub mod disasm;
pub mod fuzz;
pub mod info;
pub mod kernel_args;
pub mod lift;
pub mod neff;
pub mod profile;
pub mod run;
pub mod stream_args;
pub mod validate;
pub mod verify;

use std::path::Path;

use crate::exit::CliError;

/// The UTF-8 text of `path` (any file type), refusing more than `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, CliError> {
    let bytes = tpbsim_isa::fsio::read_limited(path, limit)
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| {
        CliError::Io(format!(
            "{}: stream did not contain valid UTF-8",
            path.display()
        ))
    })
}
