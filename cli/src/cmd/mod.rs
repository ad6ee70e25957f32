//! One module per subcommand.

pub mod asm;
pub mod check;
pub mod decode;
pub mod disasm;
pub mod fuzz;
pub mod convert;
pub mod info;
pub mod lift;
pub mod neff;
pub mod profile;
pub mod verify;
pub mod run;
pub mod validate;
