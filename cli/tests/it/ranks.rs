//! `sim run --ranks N`: a world of ranks in one process, inputs and references per rank
//! (`{rank}` file names or a leading rank axis), outputs in `OUT/rank{r}/`, and the run's
//! refusal to overwrite what it reads.

use std::path::{Path, PathBuf};
use std::process::Command;

use tpbsim_isa::{AluOp, Bundle, Dtype, Engine, Gen, NumFormat, UpdateMode, WaitMode};
use tpbsim_neff::VarKind;
use tpbsim_sim::machine::pack::Package;

pub(crate) const N: usize = 8;

fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, op);
    b.set_u8(1, 0x10);
    b
}

/// An all-reduce (sum) of `x` into `y` over replica group 0, completing on semaphore 2, and a
/// wait for it.
fn all_reduce_kernel(ranks: u32) -> Package {
    collective_kernel(&[(0..ranks).collect()], &[(1, 0)], N, N)
}

/// A kernel of `x` (`n` fp32) and `y` (`out` fp32, plus `z` when there are two collectives) and
/// the collectives `ops` (type, replica group id) of `x` (sum) over `groups`, the first into `y`,
/// the second into `z`, each completing on semaphore 2, and a wait for them all.
pub(crate) fn collective_kernel(
    groups: &[Vec<u32>],
    ops: &[(u8, u16)],
    n: usize,
    out: usize,
) -> Package {
    let mut p = Package::new("collective", Gen::V3);
    let x = p
        .var("x", VarKind::Input, NumFormat::Float32, &[n as u64], None)
        .unwrap();
    let mut outs = Vec::new();
    for name in ["y", "z"].iter().take(ops.len()) {
        outs.push(
            p.var(
                name,
                VarKind::Output,
                NumFormat::Float32,
                &[out as u64],
                None,
            )
            .unwrap(),
        );
    }
    p.def
        .extra
        .insert("replica_groups".into(), serde_json::json!(groups));
    let mut stream = Vec::new();
    for (&(ctype, group), y) in ops.iter().zip(outs) {
        let mut t = bundle(0xC8);
        t.set_u8(12, AluOp::ADD.0);
        t.set_u8(13, Dtype::FP32.0);
        t.set_u16(14, group);
        t.set_u32(16, x as u32);
        t.set_u32(20, y as u32);
        t.set_u64(24, n as u64);
        t.set_u8(32, ctype);
        t.set_u8(6, UpdateMode::SEM_INC_COMPLETE.0);
        t.set_u8(7, 2);
        stream.push(t);
    }
    let mut w = bundle(0xA4);
    w.set_u8(4, WaitMode::SEM_GE_IMM.0);
    w.set_u8(5, 2);
    w.set_u32(8, ops.len() as u32);
    stream.push(w);
    p.streams[Engine::Pe as usize] = stream;
    p
}

/// Rank r's input: values whose sum in another order rounds differently (large magnitudes
/// every third element, small fractions between them).
pub(crate) fn input(r: usize) -> Vec<f32> {
    let scale = |i: usize| if i.is_multiple_of(3) { 1.0e7 } else { 0.125 };
    (0..N)
        .map(|i| (((r * 131 + i * 17) % 23) as f32 - 11.0) * scale(i) + 0.011 * (r + i % 3) as f32)
        .collect()
}

/// The all-reduce in replica order, in fp32.
fn replica_sum(xs: &[Vec<f32>]) -> Vec<f32> {
    (0..N)
        .map(|i| xs.iter().skip(1).fold(xs[0][i], |a, x| a + x[i]))
        .collect()
}

pub(crate) fn write_f32(path: &Path, shape: &[u64], v: &[f32]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(
        path,
        tpbsim_neff::npy::encode_npy(NumFormat::Float32, shape, &bytes).unwrap(),
    )
    .unwrap();
}

fn read_f32(path: &Path) -> Vec<f32> {
    let a = tpbsim_neff::npy::read_npy_file(path).unwrap();
    a.data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

struct World {
    dir: tempfile::TempDir,
    neff: PathBuf,
    xs: Vec<Vec<f32>>,
}

impl World {
    fn new(ranks: u32) -> World {
        let dir = tempfile::tempdir().unwrap();
        let neff = dir.path().join("allreduce.neff");
        all_reduce_kernel(ranks)
            .to_neff()
            .unwrap()
            .write_to(&neff)
            .unwrap();
        let xs: Vec<Vec<f32>> = (0..ranks as usize).map(input).collect();
        for (r, x) in xs.iter().enumerate() {
            write_f32(&dir.path().join(format!("x.{r}.npy")), &[N as u64], x);
        }
        let all: Vec<f32> = xs.concat();
        write_f32(
            &dir.path().join("x.all.npy"),
            &[ranks as u64, N as u64],
            &all,
        );
        World { dir, neff, xs }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn run(&self, extra: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("run")
            .arg(&self.neff)
            .args(extra)
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn a_world_of_the_neffs_size_runs_with_inputs_and_outputs_per_rank() {
    let w = World::new(3);
    // The world size comes from the NEFF's replica groups.
    let (code, out, err) = w.run(&["--input", "x=x.{rank}.npy", "--out-dir", "out"]);
    assert_eq!(code, 0, "{out}{err}");
    let want = replica_sum(&w.xs);
    for r in 0..3 {
        let p = w.path(&format!("out/rank{r}/y.npy"));
        assert_eq!(read_f32(&p), want, "rank {r}");
        assert!(out.contains(&format!("rank {r}: wrote y -> ")), "{out}");
    }
    assert!(out.contains("3 ranks of 1 core each"), "{out}");
    // The same inputs along a leading rank axis, the same outputs.
    let (code, out, err) = w.run(&["--input", "x=x.all.npy", "--out-dir", "out2"]);
    assert_eq!(code, 0, "{out}{err}");
    for r in 0..3 {
        assert_eq!(read_f32(&w.path(&format!("out2/rank{r}/y.npy"))), want);
    }
}

#[test]
fn references_per_rank_from_a_directory_or_a_stacked_file() {
    let w = World::new(2);
    let want = replica_sum(&w.xs);
    for r in 0..2 {
        std::fs::create_dir_all(w.path(&format!("refs/rank{r}"))).unwrap();
        write_f32(&w.path(&format!("refs/rank{r}/y.npy")), &[N as u64], &want);
    }
    let (code, out, err) = w.run(&["--input", "x=x.{rank}.npy", "--ref-dir", "refs"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rank 1: y: ok: 8 elements"), "{out}");
    // A stacked reference with rank 1's row wrong: a mismatch on rank 1 only.
    let mut stacked = want.clone();
    let mut bad = want.clone();
    bad[1] += 1.0;
    stacked.extend(bad);
    write_f32(&w.path("y.ref.npy"), &[2, N as u64], &stacked);
    let (code, out, err) = w.run(&["--input", "x=x.{rank}.npy", "--ref", "y=y.ref.npy"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("rank 0: y: ok"), "{out}");
    assert!(out.contains("rank 1: y: MISMATCH"), "{out}");
    // A reference directory without a rank's subdirectory is named.
    std::fs::remove_dir_all(w.path("refs/rank1")).unwrap();
    let (code, _, err) = w.run(&["--input", "x=x.{rank}.npy", "--ref-dir", "refs"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no reference directory for this rank"),
        "{err}"
    );
}

#[test]
fn json_reports_each_rank_and_the_ring_order_is_an_option() {
    let w = World::new(4);
    let (code, out, err) = w.run(&["--input", "x=x.{rank}.npy", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(v["collective_order"], "replica");
    assert_eq!(v["ranks"][2]["rank"], 2);
    assert!(v["ranks"][3]["outputs"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("rank3/y.npy"));
    let (code, out, err) = w.run(&[
        "--input",
        "x=x.{rank}.npy",
        "--collective-order",
        "ring",
        "--out-dir",
        "ring",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // Element i of ring chunk c = ⌊4i/N⌋ folds from position c + 1 round the ring; every
    // rank receives the same values.
    let want: Vec<f32> = (0..N)
        .map(|i| {
            let first = (i * 4 / N + 1) % 4;
            (1..4).fold(w.xs[first][i], |a, k| a + w.xs[(first + k) % 4][i])
        })
        .collect();
    for r in 0..4 {
        assert_eq!(read_f32(&w.path(&format!("ring/rank{r}/y.npy"))), want);
    }
}

#[test]
fn fewer_ranks_than_the_neff_spans_and_bad_per_rank_inputs_are_refused() {
    let w = World::new(3);
    let (code, _, err) = w.run(&["--input", "x=x.{rank}.npy", "--ranks", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("span 3 ranks"), "{err}");
    // More ranks than the groups name: a rank outside every group that issues the collective.
    let (code, _, err) = w.run(&["--input", "x=x.0.npy", "--ranks", "0"]);
    assert_eq!(code, 2, "{err}");
    // A file for one rank missing.
    std::fs::remove_file(w.path("x.2.npy")).unwrap();
    let (code, _, err) = w.run(&["--input", "x=x.{rank}.npy"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("x.2.npy"), "{err}");
    // A stacked array of the wrong rank count.
    let (code, _, err) = w.run(&["--input", "x=x.all.npy", "--ranks", "4"]);
    assert_ne!(code, 0, "{err}");
}

#[test]
fn a_run_does_not_overwrite_the_files_it_reads() {
    let w = World::new(2);
    let (code, _, err) = w.run(&["--input", "x=x.{rank}.npy", "--trace", "x.1.npy"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("which this run reads"), "{err}");
    let (code, _, err) = w.run(&[
        "--input",
        "x=x.{rank}.npy",
        "--trace",
        w.neff.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    // --out-dir equal to --ref-dir: the outputs would replace the references.
    let want = replica_sum(&w.xs);
    for r in 0..2 {
        std::fs::create_dir_all(w.path(&format!("refs/rank{r}"))).unwrap();
        write_f32(&w.path(&format!("refs/rank{r}/y.npy")), &[N as u64], &want);
    }
    let before = std::fs::read(w.path("refs/rank0/y.npy")).unwrap();
    let (code, _, err) = w.run(&[
        "--input",
        "x=x.{rank}.npy",
        "--ref-dir",
        "refs",
        "--out-dir",
        "refs",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("which this run reads"), "{err}");
    assert_eq!(std::fs::read(w.path("refs/rank0/y.npy")).unwrap(), before);
    // The trace named like an output of this run.
    let (code, _, err) = w.run(&[
        "--input",
        "x=x.{rank}.npy",
        "--out-dir",
        "o",
        "--trace",
        "o/rank1/y.npy",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// The kernels of `testdata/collectives/` (four), sorted.
fn collective_kernels() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/collectives");
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "neff"))
        .collect();
    kernels.sort();
    assert_eq!(kernels.len(), 4, "{kernels:?}");
    kernels
}

/// The stdout of `cmd` (on `name`), which exits 0.
fn succeeds(name: &str, mut cmd: Command) -> String {
    let r = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{name}: {text}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    text
}

/// `sim SUB KERNEL` with an `--input` for each file of the kernel's `<kernel>.in/`.
fn with_inputs(sub: &str, k: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
    cmd.arg(sub).arg(k);
    for f in std::fs::read_dir(k.with_extension("in")).unwrap() {
        let f = f.unwrap().path();
        let var = f.file_stem().unwrap().to_string_lossy().into_owned();
        cmd.arg("--input").arg(format!("{var}={}", f.display()));
    }
    cmd
}

/// The collective kernels of `testdata/collectives/` (a tensor-parallel matmul with an
/// all-reduce, reduce-scatter + all-gather, a permute ring, all-to-all), each a world of 4
/// ranks: `sim validate` finds no invalid bundle, and `sim run` with every rank's inputs from
/// the stacked files of `<kernel>.in/` matches the numpy references of `<kernel>.ref/rank{r}/`.
#[test]
fn the_collective_kernels_match_their_numpy_references_on_every_rank() {
    let kernels = collective_kernels();
    let out = tempfile::tempdir().unwrap();
    for k in kernels {
        let stem = k.with_extension("");
        let name = stem.file_name().unwrap().to_string_lossy().into_owned();
        let v = Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["validate", "--deny-warnings"])
            .arg(&k)
            .output()
            .unwrap();
        assert_eq!(
            v.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        let mut cmd = with_inputs("run", &k);
        cmd.arg("--ref-dir")
            .arg(stem.with_extension("ref"))
            .arg("--out-dir")
            .arg(out.path().join(&name));
        let text = succeeds(&name, cmd);
        assert!(text.contains("4 ranks of 1 core each"), "{name}: {text}");
        for rank in 0..4 {
            assert!(
                text.contains(&format!("rank {rank}: ")) && !text.contains("MISMATCH"),
                "{name}: {text}"
            );
        }
    }
}

/// `sim check` on the collective kernels of `testdata/collectives/` (correct kernels: every
/// consumer of a collective's output waits for its completion semaphore), with every rank's
/// inputs and references, under two interleavings: exit 0, no finding on any rank.
#[test]
fn sim_check_passes_on_every_collective_kernel() {
    let kernels = collective_kernels();
    for k in kernels {
        let stem = k.with_extension("");
        let name = stem.file_name().unwrap().to_string_lossy().into_owned();
        let mut cmd = with_inputs("check", &k);
        cmd.arg("--ref-dir")
            .arg(stem.with_extension("ref"))
            .args(["--schedules", "2", "--json"]);
        let text = succeeds(&name, cmd);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["status"], "ok", "{name}: {v}");
        let ranks = v["ranks"].as_array().unwrap();
        assert_eq!(ranks.len(), 4, "{name}");
        for r in ranks {
            assert_eq!(r["findings"], serde_json::json!([]), "{name}: {r}");
        }
        assert_eq!(v["schedules"]["findings_differ"], serde_json::json!([]));
    }
}

/// DMA_DIRECT2D on SP copying all of DRAM variable `var` (`N` fp32, one row of 32 bytes) to
/// SBUF partition 1.
pub(crate) fn copy_to_sbuf(var: u64) -> Bundle {
    let mut b = bundle(tpbsim_isa::opcode_byte::PSEUDO_DMA_DIRECT2D);
    b.set_u8(14, 0);
    for (base, (v, addr, step)) in [(16usize, (var as u32, 0, 32)), (40, (0, 0x40000, 0x40000))] {
        b.set_u32(base, addr);
        b.set_u32(base + 4, v);
        b.set_u8(base + 7, 0x10);
        b.set_u32(base + 12, step);
        b.set_u16(base + 16, 1);
        b.set_u16(base + 18, 1);
        b.set_u16(base + 20, (N * 4) as u16);
    }
    b.set_u8(62, 0x0A);
    b.set_u8(63, 0x0A);
    b
}

/// `sim check` on a world whose SP reads the all-reduce's output without waiting for its
/// completion: exit 1, and every rank reports the race between the collective's write and
/// SP's read; with the wait, exit 0.
#[test]
fn sim_check_reports_a_read_of_a_collectives_output_before_it_completes() {
    let w = World::new(2);
    let y = 2; // x is variable 1, y variable 2
    for (wait, code) in [(false, 1), (true, 0)] {
        let mut p = all_reduce_kernel(2);
        let mut read = copy_to_sbuf(y);
        if wait {
            read.set_u8(4, WaitMode::SEM_GE_IMM.0);
            read.set_u8(5, 2);
            read.set_u32(8, 1);
        }
        p.streams[Engine::Sp as usize] = vec![read];
        let neff = w.path(&format!("read_y_{wait}.neff"));
        p.to_neff().unwrap().write_to(&neff).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("check")
            .arg(&neff)
            .args(["--input", "x=x.{rank}.npy"])
            .current_dir(w.dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(code),
            "wait {wait}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for r in 0..2 {
            let race = format!(
                "rank {r}: race: write of collective pe:collective#0 `output` (issued by pe bundle #0 PSEUDO_TRIGGER_COLLECTIVE)\n  and read of DMA queue sp:direct `dma.from`"
            );
            assert_eq!(text.contains(&race), !wait, "rank {r}, wait {wait}: {text}");
        }
    }
}

/// A world's trace: the timeline runs on the race check's clocks, which a world now takes;
/// every core of every rank has its track group, and the run matches its references.
#[test]
fn a_world_writes_its_trace() {
    let w = World::new(2);
    let (code, out, err) = w.run(&["--input", "x=x.{rank}.npy", "--trace", "t.json"]);
    assert_eq!(code, 0, "{out}{err}");
    let trace = std::fs::read_to_string(w.path("t.json")).unwrap();
    for r in 0..2 {
        assert!(trace.contains(&format!("rank{r} sg00")), "{trace}");
    }
}
