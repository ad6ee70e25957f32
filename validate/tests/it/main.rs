//! Integration tests of tpbsim-validate, one module per area, linked into one test binary:
//! each test binary links the whole dependency tree, so one binary per crate keeps the
//! build short (docs/testing.md, "Build and test time").

mod bir_json_prop;
mod bir_strategies_prop;
mod dtype_names;
mod format_handlers;
mod fuzz_corpus;
mod fuzz_props;
mod l1_cases;
mod l1_prop;
mod l2_boundaries;
mod l2_docs_and_props;
mod l2_dtype_rows;
mod l2_fixtures;
mod l2_quadrant;
mod lift_fixtures;
mod lift_testdata;
mod real_compiler;
mod robustness_props;
