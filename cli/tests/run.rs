//! `sim run` end to end: exit codes, messages, outputs and references.

use std::path::{Path, PathBuf};
use std::process::Command;

use tpbsim_isa::neff::{DmaEntry, VarKind, VarRef};
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::pack::Package;
use tpbsim_sim::numerics::Format;

fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = op;
    b.0[1] = 0x10;
    b
}

fn trigger(queue: &str, block: u32) -> Bundle {
    let mut b = bundle(0xC1);
    b.0[12..12 + queue.len()].copy_from_slice(queue.as_bytes());
    b.set_u32(48, block);
    b
}

fn wait(mut b: Bundle, mode: u8, idx: u8, value: u32) -> Bundle {
    b.0[4] = mode;
    b.0[5] = idx;
    b.set_u32(8, value);
    b
}

const X: [f32; 8] = [1.0, -2.0, 3.5, 0.25, 1e-3, 7.0, -0.5, 100.0];

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// SP moves x → SBUF → y with two triggered blocks; PE waits for the queue semaphore.
fn copy_kernel() -> Package {
    let mut p = Package::new("copy", Gen::V3);
    p.var(
        "x",
        VarKind::Input,
        Format::Float32,
        &[2, 4],
        Some(&f32_bytes(&X)),
    )
    .unwrap();
    p.var("y", VarKind::Output, Format::Float32, &[2, 4], None)
        .unwrap();
    let sb = p.onchip();
    p.queue("io", Some(1));
    let mut load = DmaEntry::copy(VarRef::Name("x".into()), sb.clone(), vec![2, 4]);
    load.to_sizes = vec![2, 4];
    load.to_steps = Some(vec![0x40000 / 4, 1]);
    let mut store = DmaEntry::copy(sb, VarRef::Name("y".into()), vec![2, 4]);
    store.from_steps = Some(vec![0x40000 / 4, 1]);
    p.block(Engine::Sp, "io", 0, vec![load]);
    p.block(Engine::Sp, "io", 1, vec![store]);
    p.streams[Engine::Sp as usize] = vec![trigger("io", 0), wait(trigger("io", 1), 5, 1, 1)];
    p.streams[Engine::Pe as usize] = vec![wait(bundle(0xA4), 5, 1, 2), bundle(0xA1)];
    p
}

struct Case {
    dir: tempfile::TempDir,
    neff: PathBuf,
}

impl Case {
    fn new(p: &Package) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let neff = dir.path().join(format!("{}.neff", p.name));
        p.to_neff().unwrap().write_to(&neff).unwrap();
        Case { dir, neff }
    }

    fn refs(&self, name: &str, vals: &[f32], shape: &[u64], tolerance: Option<&str>) {
        let d = self.neff.with_file_name(format!(
            "{}.ref",
            self.neff.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::create_dir_all(&d).unwrap();
        let npy = tpbsim_isa::neff::npy::encode_npy(
            tpbsim_isa::neff::Dtype::Float32,
            shape,
            &f32_bytes(vals),
        )
        .unwrap();
        std::fs::write(d.join(format!("{name}.npy")), npy).unwrap();
        if let Some(t) = tolerance {
            std::fs::write(d.join("tolerance.json"), t).unwrap();
        }
    }

    fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn run(&self, extra: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("run")
            .arg(&self.neff)
            .arg("--out-dir")
            .arg(self.out_dir())
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn no_outputs(dir: &Path) -> bool {
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn matching_run_exits_0_and_writes_outputs() {
    let c = Case::new(&copy_kernel());
    c.refs("y", &X, &[2, 4], None);
    let (code, out, err) = c.run(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("y: ok: 8 elements (float32), 0 mismatches"),
        "{out}"
    );
    assert!(
        out.contains("ran 4 bundles (pe 2, act 0, pool 0, dve 0, sp 2)"),
        "{out}"
    );
    assert!(out.contains("DMA 64 bytes in 2 transfers"), "{out}");
    let y = tpbsim_isa::neff::npy::read_npy_file(c.out_dir().join("y.npy")).unwrap();
    assert_eq!(y.shape, vec![2, 4]);
    assert_eq!(y.data, f32_bytes(&X));
}

#[test]
fn mismatch_exits_1_with_first_index() {
    let c = Case::new(&copy_kernel());
    let mut want = X;
    want[5] = 7.000001;
    c.refs("y", &want, &[2, 4], None);
    let (code, out, _) = c.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("y: MISMATCH: 8 elements (float32), 1 mismatches"),
        "{out}"
    );
    assert!(
        out.contains("first mismatch at [1, 1] (flat 5): got 7 want 7.00000095"),
        "{out}"
    );
    // A tolerance admits it: from the command line, or from tolerance.json.
    assert_eq!(c.run(&["--ulp", "8"]).0, 0);
    c.refs("y", &want, &[2, 4], Some(r#"{"default": {"rtol": 1e-6}}"#));
    assert_eq!(c.run(&[]).0, 0);
}

#[test]
fn json_summary() {
    let c = Case::new(&copy_kernel());
    c.refs("y", &X, &[2, 4], None);
    let (code, out, _) = c.run(&["--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["arch"], "v3");
    assert_eq!(v["summary"]["bundles"]["sp"], 2);
    assert_eq!(v["summary"]["dma_bytes"], 64);
    assert_eq!(v["comparisons"][0]["mismatches"], 0);
    assert_eq!(v["comparisons"][0]["ulp_histogram"][0], 8);
}

#[test]
fn wrong_input_shape_or_dtype_exits_2() {
    let c = Case::new(&copy_kernel());
    let bad = c.dir.path().join("bad.npy");
    let npy =
        tpbsim_isa::neff::npy::encode_npy(tpbsim_isa::neff::Dtype::Float32, &[8], &f32_bytes(&X))
            .unwrap();
    std::fs::write(&bad, npy).unwrap();
    let (code, _, err) = c.run(&["--input", &format!("x={}", bad.display())]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("shape [8], variable `x` has shape [2, 4]"),
        "{err}"
    );
    let npy =
        tpbsim_isa::neff::npy::encode_npy(tpbsim_isa::neff::Dtype::Int32, &[2, 4], &[0u8; 32])
            .unwrap();
    std::fs::write(&bad, npy).unwrap();
    let (code, _, err) = c.run(&["--input", &format!("x={}", bad.display())]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("variable `x` is float32"), "{err}");
    let (code, _, err) = c.run(&["--input", "nope=1.npy"]);
    assert_eq!(code, 2);
    assert!(err.contains("no variable `nope`"), "{err}");
    assert!(no_outputs(&c.out_dir()));
}

#[test]
fn deadlock_exits_3_and_writes_nothing() {
    let mut p = copy_kernel();
    // PE now waits for a semaphore nobody signals.
    p.streams[Engine::Pe as usize][0] = wait(bundle(0xA4), 5, 9, 1);
    let c = Case::new(&p);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("deadlock fault"), "{err}");
    assert!(err.contains("pe bundle #0 (opcode 0xa4, byte offset 0x0) waits for semaphore 9 >= 1 (current value 0)"), "{err}");
    assert!(no_outputs(&c.out_dir()));
}

#[test]
fn out_of_bounds_exits_3() {
    let mut p = copy_kernel();
    // Store from a partition-folded address whose rows run past the active SBUF bytes.
    let blk = &mut p.sidecars[Engine::Sp as usize].dma[1].desc[0];
    blk.from_offset = 224 * 1024 - 8;
    let c = Case::new(&p);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("out-of-bounds fault: sp bundle #1"), "{err}");
    assert!(err.contains("operand `io[1].desc[0].from`"), "{err}");
    assert!(no_outputs(&c.out_dir()));
}

#[test]
fn runaway_loop_exits_3() {
    let mut p = copy_kernel();
    let mut br = bundle(0xA9);
    br.0[13] = 0x08;
    br.0[14] = 3;
    p.streams[Engine::Act as usize] = vec![br];
    let c = Case::new(&p);
    let (code, _, err) = c.run(&["--max-steps", "1000"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("step-budget fault: step budget of 1000 bundles exhausted"),
        "{err}"
    );
    assert!(no_outputs(&c.out_dir()));
}

#[test]
fn invalid_events_exit_3() {
    let mut p = copy_kernel();
    p.streams[Engine::Pe as usize][1].0[4] = 0x42; // not a wait mode
    let c = Case::new(&p);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("invalid-bundle fault: pe bundle #1"), "{err}");
    assert!(err.contains("unknown wait mode 0x42"), "{err}");
}

#[test]
fn l2_rejects_before_execution_unless_disabled() {
    let mut p = copy_kernel();
    p.streams[Engine::Pe as usize][1].0[1] = 0x11; // inst_word_len must be 16
    let c = Case::new(&p);
    c.refs("y", &X, &[2, 4], None);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("invalid-bundle fault: pe bundle #1"), "{err}");
    assert!(err.contains("L2 "), "{err}");
    assert!(no_outputs(&c.out_dir()));
    let (code, out, err) = c.run(&["--no-validate"]);
    assert_eq!(code, 0, "{out}{err}");
}
