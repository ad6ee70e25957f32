//! Integration tests of tpbsim-neff, one module per area, linked into one test binary
//! (docs/testing.md, "Build and test time").

mod real_compiler;
mod strategies_prop;
