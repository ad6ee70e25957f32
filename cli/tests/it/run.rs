//! `sim run` end to end: exit codes, messages, outputs and references.

use std::path::{Path, PathBuf};
use std::process::Command;

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{DmaEntry, VarKind, VarRef};
use tpbsim_sim::machine::pack::Package;

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
        NumFormat::Float32,
        &[2, 4],
        Some(&f32_bytes(&X)),
    )
    .unwrap();
    p.var("y", VarKind::Output, NumFormat::Float32, &[2, 4], None)
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
        let npy =
            tpbsim_neff::npy::encode_npy(tpbsim_isa::NumFormat::Float32, shape, &f32_bytes(vals))
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
    let y = tpbsim_neff::npy::read_npy_file(c.out_dir().join("y.npy")).unwrap();
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
        tpbsim_neff::npy::encode_npy(tpbsim_isa::NumFormat::Float32, &[8], &f32_bytes(&X)).unwrap();
    std::fs::write(&bad, npy).unwrap();
    let (code, _, err) = c.run(&["--input", &format!("x={}", bad.display())]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("shape [8], variable `x` has shape [2, 4]"),
        "{err}"
    );
    let npy =
        tpbsim_neff::npy::encode_npy(tpbsim_isa::NumFormat::Int32, &[2, 4], &[0u8; 32]).unwrap();
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

/// [`copy_kernel`] with ACT branching to itself forever.
fn runaway_kernel() -> Package {
    let mut p = copy_kernel();
    let mut br = bundle(0xA9);
    br.0[13] = 0x08;
    br.0[14] = 3;
    p.streams[Engine::Act as usize] = vec![br];
    p
}

#[test]
fn runaway_loop_exits_3() {
    let c = Case::new(&runaway_kernel());
    let (code, _, err) = c.run(&["--max-steps", "1000"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("step-budget fault: step budget of 1000 steps exhausted"),
        "{err}"
    );
    assert!(no_outputs(&c.out_dir()));
}

/// A run long enough for the progress bar (more than a second, many progress calls) prints
/// nothing but its result when its output is not a terminal, with or without `--json`.
#[test]
fn long_run_off_a_terminal_shows_no_progress() {
    let c = Case::new(&runaway_kernel());
    let steps = "3000000";
    let t = std::time::Instant::now();
    let (code, out, err) = c.run(&["--max-steps", steps]);
    let took = t.elapsed();
    assert_eq!(code, 3, "{err}");
    assert_eq!(out, "");
    let kernel = c.neff.display().to_string();
    assert_eq!(
        err.trim_end(),
        format!(
            "sim: error: {kernel}: step-budget fault: step budget of {steps} steps exhausted (runaway loop?) after 2999998 bundles and 2 steps of work (one per 64 bytes a DMA moves or an engine operand spans); engines at: act #0"
        ),
        "took {took:?}"
    );
    let (code, out, err) = c.run(&["--max-steps", steps, "--json"]);
    assert_eq!(code, 3, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["fault"]["kind"], "step-budget", "{out}");
    assert!(!err.contains("bundles ("), "{err}");
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
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

/// An empty, pre-created output directory: a failing run must leave it empty (no outputs, no
/// temporary files).
fn empty_out(c: &Case) -> PathBuf {
    let d = c.out_dir();
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run_file(neff: &Path, out: &Path, extra: &[&str]) -> (i32, String) {
    let r = Command::new(env!("CARGO_BIN_EXE_sim"))
        .arg("run")
        .arg(neff)
        .arg("--out-dir")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (
        r.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    )
}

/// One ustar entry: a 512-byte header (type flag, link name, checksum) and the padded data.
fn tar_entry(name: &str, kind: u8, link: &str, data: &[u8]) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut v = h.to_vec();
    v.extend_from_slice(data);
    v.resize(v.len().div_ceil(512) * 512, 0);
    v
}

fn tar(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut v: Vec<u8> = entries.concat();
    v.extend_from_slice(&[0u8; 1024]);
    v
}

#[test]
fn hostile_archives_exit_2_and_write_nothing() {
    let c = Case::new(&copy_kernel());
    let out = empty_out(&c);
    let good = std::fs::read(&c.neff).unwrap();
    let json = br#"{"target_arch": "cayman"}"#;
    let cases: Vec<(&str, Vec<u8>, Vec<&str>, &str)> = vec![
        (
            "escape",
            tar(&[tar_entry("../evil.json", b'0', "", json)]),
            vec![],
            "unsafe member path `../evil.json`",
        ),
        (
            "symlink",
            tar(&[tar_entry("neff.json", b'2', "/etc/passwd", b"")]),
            vec![],
            "member `neff.json` is a symbolic link",
        ),
        (
            "duplicate",
            tar(&[
                tar_entry("neff.json", b'0', "", json),
                tar_entry("./neff.json", b'0', "", json),
            ]),
            vec![],
            "duplicate member `neff.json`",
        ),
        (
            "member-limit",
            tar(&[tar_entry("sg00/big.bin", b'0', "", &vec![0u8; 3 << 20])]),
            vec!["--max-member-mib", "2"],
            "member `sg00/big.bin` is 3145728 bytes, above the per-member limit of 2097152",
        ),
        (
            "truncated-header",
            good[..700].to_vec(),
            vec![],
            "truncated NEFF header: 700 bytes, the header alone is 1024",
        ),
        (
            "hash",
            {
                let mut b = good.clone();
                b[172] ^= 0xFF;
                b
            },
            vec!["--verify-hash"],
            "MD5 mismatch",
        ),
        (
            "truncated-archive",
            {
                // Half of the payload, data_size patched to match, digest check off.
                let keep = (good.len() - 1024) / 2;
                let mut b = good[..1024 + keep].to_vec();
                b[16..24].copy_from_slice(&(keep as u64).to_le_bytes());
                b
            },
            vec!["--no-verify-hash"],
            "truncated archive",
        ),
    ];
    for (what, bytes, extra, want) in cases {
        let f = c.dir.path().join(format!("{what}.neff"));
        std::fs::write(&f, bytes).unwrap();
        let (code, err) = run_file(&f, &out, &extra);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(want), "{what}: {err}");
        assert!(no_outputs(&out), "{what}: output left behind");
    }
    // A gzip bomb: 64 MiB of zeros in a few KiB, refused by the total limit while inflating.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(
        &mut gz,
        &tar(&[tar_entry("sg00/zeros.bin", b'0', "", &vec![0u8; 64 << 20])]),
    )
    .unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20);
    let f = c.dir.path().join("bomb.neff");
    std::fs::write(&f, bomb).unwrap();
    let (code, err) = run_file(&f, &out, &["--max-total-mib", "8"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("uncompressed archive exceeds the limit of 8388608 bytes"),
        "{err}"
    );
    assert!(no_outputs(&out));
    // The digest override reads the tampered-hash NEFF and runs it.
    let mut b = good.clone();
    b[172] ^= 0xFF;
    let f = c.dir.path().join("hash-ok.neff");
    std::fs::write(&f, b).unwrap();
    assert_eq!(run_file(&f, &out, &["--no-verify-hash"]).0, 0);
    assert!(out.join("y.npy").is_file());
}

#[test]
fn out_of_bounds_compute_operand_exits_3() {
    use tpbsim_isa::{Addr4, AluOp, Dtype, DtypePair, Tensor, TensorTensor};
    let mut p = copy_kernel();
    let f32t = Dtype(0x0A);
    // DVE add whose second source runs 16 bytes past the active 224 KiB of each partition.
    let t = |off: u32| Tensor::new(Addr4::imm(off), [1, 1, 1], [8, 1, 1]);
    p.streams[Engine::Dve as usize] = vec![TensorTensor {
        in_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        op: AluOp(0x04),
        num_active_partitions: 2,
        src0: t(0),
        src1: t(224 * 1024 - 16),
        dst: t(64),
        ..Default::default()
    }
    .to_bundle()];
    let c = Case::new(&p);
    let out = empty_out(&c);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("out-of-bounds fault: dve bundle #0 (opcode 0x41, byte offset 0x0)"),
        "{err}"
    );
    assert!(err.contains("operand `src1` out of bounds"), "{err}");
    assert!(
        err.contains("bytes 229360..229392 of each partition are outside the active 0..229376"),
        "{err}"
    );
    assert!(no_outputs(&out));
}

#[test]
fn bad_reference_or_failed_write_leaves_no_output() {
    let c = Case::new(&copy_kernel());
    let out = empty_out(&c);
    // A reference of the wrong shape is a usage error found before any output is written.
    c.refs("y", &X, &[8], None);
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shape"), "{err}");
    assert!(
        no_outputs(&out),
        "outputs written despite the bad reference"
    );
    // An output path that cannot be replaced (a directory): exit 2, no temporary file left.
    c.refs("y", &X, &[2, 4], None);
    std::fs::create_dir_all(out.join("y.npy")).unwrap();
    let (code, _, err) = c.run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("y.npy"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        vec!["y.npy".to_string()],
        "only the blocking directory remains"
    );
}

#[test]
fn corrupt_input_npy_exits_2() {
    let c = Case::new(&copy_kernel());
    let out = empty_out(&c);
    let bad = c.dir.path().join("trunc.npy");
    let npy = tpbsim_neff::npy::encode_npy(tpbsim_isa::NumFormat::Float32, &[2, 4], &f32_bytes(&X))
        .unwrap();
    std::fs::write(&bad, &npy[..npy.len() - 5]).unwrap();
    let (code, _, err) = c.run(&["--input", &format!("x={}", bad.display())]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("trunc.npy"), "{err}");
    assert!(no_outputs(&out));
}

/// `TPBSIM_SIMD` caps the vector loops: every cap gives the same output bytes (softmax runs
/// exp on ACT and adds, maxima and products on DVE), and a value that names no loop is refused.
#[test]
fn every_simd_cap_gives_the_same_outputs_and_an_unknown_one_is_refused() {
    let neff = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/kernels/softmax.neff");
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for cap in ["avx512", "avx2", "portable"] {
        let out = dir.path().join(cap);
        let o = Command::new(env!("CARGO_BIN_EXE_sim"))
            .args([
                "run",
                neff.to_str().unwrap(),
                "--out-dir",
                out.to_str().unwrap(),
            ])
            .env("TPBSIM_SIMD", cap)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{cap}: {}",
            crate::common::text(&o)
        );
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{cap}");
        outs.push(files);
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
    let o = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args([
            "run",
            neff.to_str().unwrap(),
            "--out-dir",
            dir.path().join("x").to_str().unwrap(),
        ])
        .env("TPBSIM_SIMD", "sse4")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::common::text(&o).contains("TPBSIM_SIMD=sse4: expected portable, avx2 or avx512"));
    assert!(!dir.path().join("x").exists());
}
