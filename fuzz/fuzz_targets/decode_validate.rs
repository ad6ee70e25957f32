#![no_main]
//! cargo-fuzz target `decode_validate` (body: `tpbsim_validate::fuzz::targets::decode_validate`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tpbsim_validate::fuzz::targets::decode_validate(data));
