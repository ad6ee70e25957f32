//! Integration tests of the `sim` binary (tpbsim-cli), one module per area, linked into one test binary:
//! each test binary links the whole dependency tree, so one binary per crate keeps the
//! build short (docs/testing.md, "Build and test time").

mod asm_cli;
mod check;
mod common;
mod convert;
mod corpus;
mod examples;
mod fuzz_cli;
mod hostile_inputs;
mod independent_neff;
mod isa_cli;
mod kernels;
mod lift_cli;
#[cfg(feature = "mpi")]
mod mpi;
mod neff_cli;
mod ranks;
mod real_compiler_neff;
mod real_compiler_run;
mod real_compiler_validate;
mod real_neff;
mod run;
mod validate;
mod verify_cli;
