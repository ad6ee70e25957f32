//! `sim check` and `sim run --check-races / --schedules` on the testdata kernels: exit codes,
//! the reports in text and JSON, and no output files unless asked.

use crate::common::text;
use std::path::PathBuf;
use std::process::{Command, Output};

fn kernel(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/kernels/{name}.neff"))
}

fn sim(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn check_passes_clean_kernels_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["vadd", "softmax", "matmul_bf16", "counter_join"] {
        let k = kernel(name);
        let o = sim(
            &["check", k.to_str().unwrap(), "--schedules", "3"],
            dir.path(),
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains("race check: 0 findings"), "{t}");
        assert!(
            t.contains("schedules: 3 interleavings, 0 output differences"),
            "{t}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "check wrote files"
    );
}

#[test]
fn a_credit_hand_off_is_clean_under_sixteen_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("credit_handoff");
    let o = sim(
        &["check", k.to_str().unwrap(), "--schedules", "16"],
        dir.path(),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("race check: 0 findings"), "{t}");
    assert!(
        t.contains("schedules: 16 interleavings, 0 output differences"),
        "{t}"
    );
}

#[test]
fn check_reports_a_race_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("race_dma_wait");
    let o = sim(&["check", k.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("race: read of dve bundle #0 TENSOR_TENSOR_ARITH_OP operand `src1`"),
        "{t}"
    );
    assert!(
        t.contains("and write of DMA queue sp:in `in[0].desc[1].to` (triggered by sp bundle #0 PSEUDO_DMATRIGGER)"),
        "{t}"
    );
    assert!(
        t.contains("on SBUF partitions 0..128, bytes 0x1000..0x1800 of each (address 0x00001000)"),
        "{t}"
    );
    let o = sim(&["check", k.to_str().unwrap(), "--json"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "findings");
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["kind"], "race");
    assert_eq!(f[0]["a"]["origin"]["operand"], "src1");
    assert_eq!(f[0]["b"]["origin"]["agent"], "sp:in");
    assert_eq!(f[0]["extent"]["bytes"], serde_json::json!([4096, 6144]));
}

#[test]
fn a_partial_counter_wait_is_the_same_race_under_every_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("race_counter_partial");
    let o = sim(
        &[
            "check",
            k.to_str().unwrap(),
            "--schedules",
            "16",
            "--seed",
            "3",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["kind"], "race");
    assert_eq!(f[0]["a"]["origin"]["agent"], "act");
    assert_eq!(f[0]["a"]["origin"]["operand"], "dst");
    assert_eq!(f[0]["b"]["origin"]["agent"], "dve");
    assert_eq!(f[0]["b"]["origin"]["operand"], "src0");
    assert_eq!(f[0]["extent"]["bytes"], serde_json::json!([8192, 10240]));
    // Every interleaving reports the same finding (some also change the output).
    assert!(
        v["schedules"]["findings_differ"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{v}"
    );
}

#[test]
fn run_without_the_check_reports_nothing_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("race_dma_wait");
    let o = sim(&["run", k.to_str().unwrap(), "--out-dir", "o"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("race"));
    let o = sim(
        &[
            "run",
            k.to_str().unwrap(),
            "--out-dir",
            "o",
            "--check-races",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn schedules_expose_an_order_dependent_output() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("race_engines");
    let o = sim(
        &[
            "run",
            k.to_str().unwrap(),
            "--out-dir",
            "o",
            "--schedules",
            "8",
            "--seed",
            "1",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = v["schedules"]["output_differences"].as_array().unwrap();
    assert!(!d.is_empty(), "{v}");
    assert_eq!(d[0]["output"], "out");
    assert!(v["schedules"]["findings_differ"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn deadlocks_exit_3_with_the_wait_for_graph() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("deadlock_cycle");
    let o = sim(&["check", k.to_str().unwrap(), "--json"], dir.path());
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["fault"]["kind"], "deadlock");
    let cycle = v["fault"]["deadlock"]["cycle"].as_array().unwrap();
    assert_eq!(cycle.len(), 2);
    assert!(text(&o).contains("wait-for cycle: act → semaphore 5 → dve → semaphore 6 → act"));
    let k = kernel("deadlock_missing");
    let o = sim(&["check", k.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(3));
    assert!(
        text(&o).contains("missing producer: dve bundle #0 waits on semaphore 1"),
        "{}",
        text(&o)
    );
}

#[test]
fn trace_is_chrome_json_with_one_named_track_per_engine() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("matmul_bf16");
    let o = sim(
        &[
            "run",
            k.to_str().unwrap(),
            "--out-dir",
            "o",
            "--trace",
            "t.json",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    // What Perfetto's JSON importer requires before it builds anything: the outer object's
    // keys are ones it knows (it stops reading at an unknown key), `displayTimeUnit` is `ms`
    // or `ns`, every event has a `ph` and every non-metadata event a numeric `ts` (others
    // are dropped), complete events a numeric `dur`, flow events a numeric `id`, and
    // `thread_name` metadata a non-empty `args.name`.
    let top: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert!(
        top.iter()
            .all(|k| ["traceEvents", "displayTimeUnit"].contains(&k.as_str())),
        "{top:?}"
    );
    assert!(["ms", "ns"].contains(&v["displayTimeUnit"].as_str().unwrap()));
    for e in ev {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["pid"].is_u64() && (ph == "M" || e["tid"].is_u64()), "{e}");
        if ph != "M" {
            assert!(e["ts"].is_f64() || e["ts"].is_u64(), "{e}");
        }
        match ph {
            "X" => assert!(e["dur"].is_f64() || e["dur"].is_u64(), "{e}"),
            "s" | "f" => assert!(e["id"].is_u64(), "{e}"),
            "M" if e["name"] == "thread_name" => {
                assert!(!e["args"]["name"].as_str().unwrap().is_empty(), "{e}")
            }
            "M" => {}
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    let names: Vec<(u64, String)> = ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (i, e) in ["pe", "act", "pool", "dve", "sp"].iter().enumerate() {
        assert!(
            names.contains(&(i as u64 + 1, format!("{e} engine"))),
            "{names:?}"
        );
    }
    assert!(names.iter().any(|(_, n)| n == "DMA sp:in"), "{names:?}");
    // Every bundle is one slice: 8 PE + 1 ACT + 2 SP, and one per DMA descriptor (3).
    let slices: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 8 + 1 + 2 + 3);
    assert!(slices.iter().all(|s| s["dur"].as_f64().unwrap() > 0.0));
    // Process 1, threads from 1: pid/tid 0 are the idle process and swapper of importers.
    assert!(
        ev.iter().all(|e| e["pid"] == 1 && e["tid"] != 0),
        "pid/tid 0 used"
    );
    let pe: Vec<&&serde_json::Value> = slices.iter().filter(|s| s["tid"] == 1).collect();
    assert_eq!(pe[1]["name"], "MATMUL");
    assert!(pe[1]["args"]["operands"]
        .as_str()
        .unwrap()
        .contains("src: SBUF"));
    // Semaphore waits are flows, each start matched by a finish.
    let s = ev.iter().filter(|e| e["ph"] == "s").count();
    let f = ev.iter().filter(|e| e["ph"] == "f").count();
    assert!(s >= 2 && s == f, "{s} {f}");
    // What a trace-event importer needs to build tracks, slices and flows without dropping
    // any: slices of one track do not partially overlap (they are disjoint here: one bundle
    // at a time per engine or queue), and each flow end lies inside a slice of its own track
    // (`s` in the releasing slice, `f` with `bp: "e"` in the waiting one, both strictly
    // inside so that rounding to integer nanoseconds keeps them there), ids matched.
    let span = |e: &serde_json::Value| {
        let t = e["ts"].as_f64().unwrap();
        (t, t + e["dur"].as_f64().unwrap_or(0.0))
    };
    let mut tids: Vec<u64> = slices.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    tids.sort_unstable();
    tids.dedup();
    for tid in tids {
        let mut on: Vec<(f64, f64)> = slices
            .iter()
            .filter(|e| e["tid"] == tid)
            .map(|e| span(e))
            .collect();
        on.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            on.windows(2).all(|w| w[0].1 <= w[1].0 + 1e-9),
            "overlapping slices on track {tid}: {on:?}"
        );
    }
    let mut ids = std::collections::BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let t = e["ts"].as_f64().unwrap();
        assert!(
            slices
                .iter()
                .any(|x| x["tid"] == e["tid"] && span(x).0 < t && t < span(x).1),
            "flow end outside any slice of its track: {e}"
        );
        if e["ph"] == "f" {
            assert_eq!(e["bp"], "e", "{e}");
        }
        *ids.entry(e["id"].as_u64().unwrap()).or_insert(0) += 1;
    }
    assert!(ids.values().all(|&n| n == 2), "{ids:?}");
}

#[test]
fn profile_prints_busy_wait_idle_and_the_critical_path() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel("softmax");
    let o = sim(&["profile", k.to_str().unwrap(), "--json"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["profile"];
    let makespan = p["makespan_ns"].as_f64().unwrap();
    assert!(makespan > 0.0);
    for t in p["tracks"].as_array().unwrap() {
        let sum = t["busy_ns"].as_f64().unwrap()
            + t["wait_ns"].as_f64().unwrap()
            + t["idle_ns"].as_f64().unwrap();
        assert!((sum - makespan).abs() < 1e-6 * makespan.max(1.0), "{t}");
    }
    let path = p["critical_path"].as_array().unwrap();
    assert_eq!(path.first().unwrap()["track"], "sp");
    assert_eq!(path[1]["track"], "sp:in");
    assert_eq!(path.last().unwrap()["track"], "sp:out");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
