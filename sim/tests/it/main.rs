//! Integration tests of tpbsim-sim, one module per area, linked into one test binary:
//! each test binary links the whole dependency tree, so one binary per crate keeps the
//! build short (docs/testing.md, "Build and test time").

mod affine_select_modes;
mod api;
mod collective_races;
mod collectives;
mod compare_render;
mod dequant_codebook;
mod dispatch_cache;
mod edges_dma;
mod kernels_exact;
mod machine_control;
mod machine_ops;
mod memset_fill;
mod million_bundles;
mod numerics_tables;
mod pe_transpose;
mod pseudo_band;
mod pseudo_fields;
mod races;
mod real_compiler;
mod real_compiler_forms;
mod robustness_props;
mod target_source;
mod trace_flows;

/// The run configuration of the tools: defaults, with the L2 cascade checking each bundle
/// before it first executes.
fn checked() -> tpbsim_sim::api::RunConfig {
    tpbsim_sim::api::RunConfig {
        validator: Some(std::sync::Arc::new(tpbsim_validate::l2::L2Check)),
        ..tpbsim_sim::api::RunConfig::default()
    }
}
