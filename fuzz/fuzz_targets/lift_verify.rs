#![no_main]
//! cargo-fuzz target `lift_verify` (body: `tpbsim_validate::fuzz::targets::lift_verify`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tpbsim_validate::fuzz::targets::lift_verify(data));
