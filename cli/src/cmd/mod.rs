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
pub mod validate;
pub mod verify;
