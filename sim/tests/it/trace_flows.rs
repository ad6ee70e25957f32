//! Trace flows bind to the slice that made the releasing update: a flow's `s` event lies inside
//! that slice, also when the next slice of the same track starts the moment it ends.

use std::path::PathBuf;

use serde_json::Value;
use tpbsim_isa::Gen;
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::timeline::Timeline;
use tpbsim_sim::machine::{Machine, RunOptions};

fn timeline(name: &str) -> Timeline {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/kernels/{name}.neff"));
    let n = Neff::read(&p, &ReadOptions::default()).unwrap();
    let k = kernel_from_neff(&n).unwrap();
    let mut m = Machine::new(&k, k.gen.unwrap_or(Gen::V3)).unwrap();
    m.enable_timeline();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    m.timeline().unwrap().clone()
}

/// The `X` events of track `tid` as (name, start, end) in µs, and the `s` event of flow `id`.
fn slices(trace: &Value, tid: u64) -> Vec<(String, f64, f64)> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == tid)
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                e["name"].as_str().unwrap().to_string(),
                ts,
                ts + e["dur"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn flow_start(trace: &Value, id: usize) -> (u64, f64) {
    let e = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "s" && e["id"] == id as u64)
        .unwrap_or_else(|| panic!("flow {id} has no start"));
    (e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap())
}

/// The slices of a track containing `ts` (strictly inside).
fn containing(sl: &[(String, f64, f64)], ts: f64) -> Vec<&(String, f64, f64)> {
    sl.iter().filter(|s| s.1 < ts && ts < s.2).collect()
}

#[test]
fn a_descriptor_followed_back_to_back_keeps_its_flow() {
    // One SP queue with two descriptors back to back; the first increments semaphore 1, which
    // DVE waits for (>= 1). The flow starts inside `in[0].desc[0]`, not `in[0].desc[1]`.
    let t = timeline("race_dma_wait");
    let trace = t.to_chrome();
    let q = t.labels.iter().position(|l| l == "sp:in").unwrap();
    let sl = slices(&trace, q as u64 + 1);
    let d0 = sl.iter().find(|s| s.0 == "in[0].desc[0]").unwrap();
    let d1 = sl.iter().find(|s| s.0 == "in[0].desc[1]").unwrap();
    assert!(
        (d0.2 - d1.1).abs() < 1e-9,
        "the descriptors are back to back: {sl:?}"
    );
    let ids: Vec<usize> = (0..t.flows.len())
        .filter(|&i| t.flows[i].from.0 as usize == q)
        .collect();
    assert_eq!(ids.len(), 1, "{:?}", t.flows);
    let (tid, ts) = flow_start(&trace, ids[0]);
    assert_eq!(tid, q as u64 + 1);
    assert_eq!(
        containing(&sl, ts),
        vec![d0],
        "flow start {ts} µs is not inside in[0].desc[0] {d0:?}"
    );
}

#[test]
fn every_flow_starts_inside_its_releasing_slice() {
    // The releasing slice of a `_COMPLETE` update or a DMA transfer's update is the one that
    // ends when the update is made; of an issue-time update, the one that starts then. Every
    // flow's `s` event lies strictly inside exactly that slice.
    for name in [
        "vadd",
        "softmax",
        "rmsnorm",
        "matmul_bf16",
        "mx_matmul",
        "range_select",
        "iadd_pool",
        "counter_join",
        "credit_handoff",
        "race_dma_wait",
    ] {
        let t = timeline(name);
        let trace = t.to_chrome();
        assert!(!t.flows.is_empty(), "{name}");
        for (id, f) in t.flows.iter().enumerate() {
            let (tid, ts) = flow_start(&trace, id);
            assert_eq!(tid, f.from.0 as u64 + 1, "{name}: flow {id}");
            let sl = slices(&trace, tid);
            let inside = containing(&sl, ts);
            assert_eq!(inside.len(), 1, "{name}: flow {id} at {ts} µs: {inside:?}");
            let s = inside[0];
            let at = f.from.1.t / 1e3;
            let edge = if f.from.1.end { s.2 } else { s.1 };
            assert!(
                (edge - at).abs() < 1e-6,
                "{name}: flow {id} ({}) released at {at} µs ({}) starts in {s:?}",
                f.name,
                if f.from.1.end { "end" } else { "start" }
            );
        }
    }
}
