//! `sim run`, `sim check` and `sim profile` on the NEFFs the Neuron compiler wrote
//! (`../shared/real/`, read in place): every one runs on its cores with inputs given as `.npy`
//! files, checks clean and profiles one process per core; the LNC2 matmul's `output0` is x @ y bit
//! for bit on integer inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use half::f16;
use serde_json::Value;
use tpbsim_isa::NumFormat;
use tpbsim_neff::npy::{encode_npy, read_npy};
use tpbsim_neff::{Neff, ReadOptions};

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim"))
}

fn shared_real() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/real")
}

fn neffs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(neffs(&p));
        } else if p.extension().is_some_and(|x| x == "neff") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `--input NAME=FILE` arguments for every input of `neff` (the loaded program's inputs), each
/// holding small integers of the input's dtype and shape, written into `dir`.
fn integer_inputs(neff: &Path, dir: &Path) -> Vec<String> {
    let n = Neff::read(neff, &ReadOptions::default()).unwrap();
    let program = tpbsim_sim::api::load_program(&n).unwrap();
    let mut args = Vec::new();
    for v in program.inputs() {
        let shape: Vec<u64> = v.shape.iter().map(|&d| d as u64).collect();
        let n: u64 = shape.iter().product();
        let data: Vec<u8> = (0..n)
            .flat_map(|i| {
                let x = ((i * 7 + v.name.len() as u64) % 5) as f32 - 2.0;
                match v.format {
                    NumFormat::Float16 => f16::from_f32(x).to_le_bytes().to_vec(),
                    NumFormat::Float32 => x.to_le_bytes().to_vec(),
                    f => vec![0; f.container_bytes()],
                }
            })
            .collect();
        let p = dir.join(format!("{}.npy", v.name));
        std::fs::write(&p, encode_npy(v.format, &shape, &data).unwrap()).unwrap();
        args.push(format!("{}={}", v.name, p.display()));
    }
    args
}

fn with_inputs(cmd: &mut Command, inputs: &[String]) {
    for i in inputs {
        cmd.arg("--input").arg(i);
    }
}

#[test]
fn every_real_neff_runs_checks_and_profiles_from_the_command_line() {
    let all = neffs(&shared_real());
    assert!(!all.is_empty());
    for p in all {
        let dir = tempfile::tempdir().unwrap();
        let inputs = integer_inputs(&p, dir.path());
        let mut run = sim();
        run.arg("run")
            .arg(&p)
            .arg("--json")
            .arg("--out-dir")
            .arg(dir.path().join("out"));
        with_inputs(&mut run, &inputs);
        let out = run.output().unwrap();
        assert!(
            out.status.success(),
            "sim run {}: {}{}",
            p.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["status"], "ok");
        let cores = j["cores"].as_array().map_or(1, Vec::len);
        let mut check = sim();
        check.arg("check").arg(&p);
        with_inputs(&mut check, &inputs);
        let out = check.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "sim check {}: {text}", p.display());
        assert!(text.contains("race check: 0 findings"), "{text}");
        let trace = dir.path().join("trace.json");
        let mut prof = sim();
        prof.arg("profile").arg(&p).arg("--trace").arg(&trace);
        with_inputs(&mut prof, &inputs);
        let out = prof.output().unwrap();
        assert!(out.status.success(), "sim profile {}", p.display());
        let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
        let processes: std::collections::BTreeSet<u64> = t["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["pid"].as_u64().unwrap())
            .collect();
        assert_eq!(processes.len(), cores, "one trace process per core");
    }
}

#[test]
fn the_lnc2_matmul_writes_x_at_y_exactly() {
    let p = shared_real().join("nkipy/matmul_small.neff");
    let dir = tempfile::tempdir().unwrap();
    let inputs = integer_inputs(&p, dir.path());
    let mut run = sim();
    run.arg("run").arg(&p).arg("--out-dir").arg(dir.path());
    with_inputs(&mut run, &inputs);
    let out = run.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("core 0 (sg00)") && text.contains("core 1 (sg01)"),
        "{text}"
    );
    let load = |name: &str| {
        let a = read_npy(&std::fs::read(dir.path().join(format!("{name}.npy"))).unwrap()).unwrap();
        (
            a.shape.clone(),
            a.data
                .chunks_exact(2)
                .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32() as i64)
                .collect::<Vec<i64>>(),
        )
    };
    let ((xs, x), (ys, y)) = (load("x"), load("y"));
    assert_eq!(
        (xs.as_slice(), ys.as_slice()),
        (&[128, 256][..], &[256, 128][..])
    );
    let got = read_npy(&std::fs::read(dir.path().join("output0.npy")).unwrap()).unwrap();
    assert_eq!(got.shape, vec![128, 128]);
    for m in 0..128 {
        for n in 0..128 {
            let exact: i64 = (0..256).map(|k| x[m * 256 + k] * y[k * 128 + n]).sum();
            let b = &got.data[(m * 128 + n) * 2..][..2];
            assert_eq!(
                f16::from_le_bytes([b[0], b[1]]).to_bits(),
                f16::from_f64(exact as f64).to_bits(),
                "output0[{m}][{n}]"
            );
        }
    }
}
