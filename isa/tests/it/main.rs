//! Integration tests of tpbsim-isa, one module per area, linked into one test binary:
//! each test binary links the whole dependency tree, so one binary per crate keeps the
//! build short (docs/testing.md, "Build and test time").

mod catalog;
mod crafted;
