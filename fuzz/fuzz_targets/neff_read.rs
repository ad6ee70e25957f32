#![no_main]
//! cargo-fuzz target `neff_read` (body: `tpbsim_validate::fuzz::targets::neff_read`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tpbsim_validate::fuzz::targets::neff_read(data));
