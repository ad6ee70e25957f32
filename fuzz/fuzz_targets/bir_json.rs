#![no_main]
//! cargo-fuzz target `bir_json` (body: `tpbsim_validate::fuzz::targets::bir_json`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tpbsim_validate::fuzz::targets::bir_json(data));
