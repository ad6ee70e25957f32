//! The library entry point (`sim::api`) that `sim run` and the Python package share: inputs
//! by name, outputs by name, schedules, the timeline, and the errors a caller can get.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::{Fault, Kernel, Program};

fn kernel(name: &str) -> Kernel {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/kernels/{name}.neff"));
    api::load_kernel(&Neff::read(&p, &ReadOptions::default()).unwrap()).unwrap()
}

fn f32_bytes(v: impl Iterator<Item = f32>) -> Vec<u8> {
    v.flat_map(f32::to_le_bytes).collect()
}

#[test]
fn given_inputs_replace_the_neff_data_and_outputs_come_back_by_name() {
    let k = kernel("vadd");
    let n = (k.var("x").unwrap().size / 4) as usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let mut inputs = BTreeMap::new();
    inputs.insert("x".to_string(), f32_bytes(x.iter().copied()));
    inputs.insert("y".to_string(), f32_bytes(y.iter().copied()));
    let out = api::run_kernel(&k, &inputs, &crate::checked()).unwrap();
    let want = f32_bytes(x.iter().zip(&y).map(|(a, b)| a + b));
    assert_eq!(out.outputs["out"], want);
    assert!(out.stats.sched.steps > 0);
    assert!(out.timelines.is_empty() && out.findings.is_empty());
    // Borrowed slices give the same run.
    let borrowed: BTreeMap<String, &[u8]> = inputs
        .iter()
        .map(|(k, v)| (k.clone(), v.as_slice()))
        .collect();
    let again = api::run_kernel(&k, &borrowed, &crate::checked()).unwrap();
    assert_eq!(again.outputs, out.outputs);
}

#[test]
fn the_timeline_is_recorded_for_the_round_robin_run_only_when_asked() {
    let k = kernel("softmax");
    let none: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let cfg = RunConfig {
        timeline: true,
        schedules: 3,
        ..crate::checked()
    };
    let out = api::run_kernel(&k, &none, &cfg).unwrap();
    let t = out.timeline().expect("timeline");
    let p = t.profile();
    assert!(p.makespan_ns > 0.0 && !p.critical_path.is_empty());
    assert!(out.schedule_diffs.is_empty());
    // A seeded schedule records none.
    let p = Program::single(k.clone());
    let gen = api::generation(&p, None).unwrap();
    let shared = api::share_inputs(&none);
    let other = api::run_schedule(&p, gen, &shared, &cfg, 1, &|_, _| {}).unwrap();
    assert!(other.timelines.is_empty());
    assert_eq!(other.outputs, out.outputs);
}

#[test]
fn requests_that_do_not_fit_the_kernel_are_usage_errors() {
    let k = kernel("vadd");
    let size = k.var("x").unwrap().size as usize;
    let run = |inputs: BTreeMap<String, Vec<u8>>| {
        api::run_kernel(&k, &inputs, &crate::checked()).unwrap_err()
    };
    let one = |name: &str, len: usize| BTreeMap::from([(name.to_string(), vec![0u8; len])]);
    for (e, what) in [
        (run(one("nope", size)), "no variable `nope`"),
        (run(one("out", size)), "not an input"),
        (run(one("x", size - 4)), "bytes given"),
    ] {
        assert!(
            matches!(&e, RunError::Usage(m) if m.contains(what)),
            "{what}: {e}"
        );
    }
}

#[test]
fn a_deadlock_is_a_fault_of_schedule_zero_with_its_timeline() {
    let k = kernel("deadlock_cycle");
    let none: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let cfg = RunConfig {
        timeline: true,
        ..crate::checked()
    };
    match api::run_kernel(&k, &none, &cfg) {
        Err(RunError::Fault {
            fault,
            schedule: 0,
            timelines,
            ..
        }) if matches!(fault.fault, Fault::Deadlock(_)) => assert_eq!(timelines.len(), 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn output_differences_name_the_first_byte_and_the_count() {
    let a = BTreeMap::from([
        ("o".to_string(), vec![1u8, 2, 3, 4]),
        ("p".to_string(), vec![0u8; 2]),
    ]);
    let b = BTreeMap::from([("o".to_string(), vec![1u8, 9, 3, 8])]);
    let d = api::diff_outputs(&a, &b);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].output.as_str(), d[0].first_byte, d[0].bytes_differing),
        ("o", 1, 2)
    );
    assert!(api::diff_outputs(&a, &a).is_empty());
}
