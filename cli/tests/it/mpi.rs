//! `mpirun -np 2 sim run --mpi` (feature `mpi`; docs/mpi.md): the ranks of a world spread over
//! two MPI processes give the outputs of the same world run in one process, byte for byte, in
//! both fold orders and both placements; a deadlock across the processes is the named fault
//! and a non-zero exit on every process, never a hang.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ranks::{collective_kernel, copy_to_sbuf, input, write_f32, N};

/// Every `mpirun` of these tests is stopped after this long: a hang fails the test.
const LIMIT_SECONDS: &str = "120";

struct Case {
    dir: tempfile::TempDir,
    neff: PathBuf,
    ranks: usize,
}

impl Case {
    fn new(ranks: usize, groups: &[Vec<u32>], ops: &[(u8, u16)], out: usize) -> Case {
        Case::sized(ranks, groups, ops, N, out, input)
    }

    /// A kernel of `n` input elements per rank, rank r's input `x(r)`.
    fn sized(
        ranks: usize,
        groups: &[Vec<u32>],
        ops: &[(u8, u16)],
        n: usize,
        out: usize,
        x: impl Fn(usize) -> Vec<f32>,
    ) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let neff = dir.path().join("k.neff");
        collective_kernel(groups, ops, n, out)
            .to_neff()
            .unwrap()
            .write_to(&neff)
            .unwrap();
        for r in 0..ranks {
            write_f32(&dir.path().join(format!("x.{r}.npy")), &[n as u64], &x(r));
        }
        Case { dir, neff, ranks }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// `sim run` of the kernel with `extra`, in one process: exit code, stdout, stderr.
    fn run(&self, extra: &[&str]) -> (i32, String, String) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sim"));
        c.arg("run").arg(&self.neff).args(extra);
        output(c, self.dir.path())
    }

    /// `sim run` of the kernel with `extra` under `mpirun -np 2 ... --mpi`: each process's
    /// exit code, stdout, stderr.
    fn mpirun(&self, extra: &[&str]) -> (Vec<String>, String, String) {
        let neff = self.neff.display().to_string();
        let mut args = vec!["run", neff.as_str(), "--mpi"];
        args.extend(extra);
        self.mpirun_args(&args)
    }

    /// `sim ARGS` under `mpirun -np 2`: each process's exit code, stdout, stderr. Each
    /// process writes its exit code to `codes.P`; mpirun lets every process finish even when
    /// one exits non-zero (which by default ends the job and may stop the others before they
    /// write theirs).
    fn mpirun_args(&self, args: &[&str]) -> (Vec<String>, String, String) {
        self.mpirun_in(self.dir.path(), args)
    }

    /// [`Case::mpirun_args`] with `dir` as the processes' working directory.
    fn mpirun_in<S: AsRef<std::ffi::OsStr>>(
        &self,
        dir: &Path,
        args: &[S],
    ) -> (Vec<String>, String, String) {
        for p in 0..2 {
            let _ = std::fs::remove_file(self.path(&format!("codes.{p}")));
        }
        let mut c = Command::new("timeout");
        c.env("OMPI_MCA_orte_abort_on_non_zero_status", "0")
            .env("TPBSIM_TEST_CODES", self.path("codes"));
        c.args([
            LIMIT_SECONDS,
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
        ])
        .args(["-np", "2", "sh", "-c"])
        .arg(r#""$0" "$@"; c=$?; echo $c > "$TPBSIM_TEST_CODES.$OMPI_COMM_WORLD_RANK"; exit $c"#)
        .arg(env!("CARGO_BIN_EXE_sim"))
        .args(args);
        let (code, o, e) = output(c, dir);
        // `timeout` exits 124 when the limit stops mpirun.
        assert_ne!(code, 124, "mpirun hung: {o}{e}");
        (self.codes(), o, e)
    }

    /// The exit code each MPI process wrote.
    fn codes(&self) -> Vec<String> {
        (0..2)
            .map(|p| {
                std::fs::read_to_string(self.path(&format!("codes.{p}")))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .collect()
    }
}

fn output(mut c: Command, dir: &Path) -> (i32, String, String) {
    let out = c
        .current_dir(dir)
        // Shared-memory transfers without cross-process memory access, which containers
        // often forbid.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .output()
        .expect("mpirun (Open MPI) on PATH: the `mpi` feature's tests need it");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn two_processes_give_the_outputs_of_one_process_byte_for_byte() {
    for ranks in [2usize, 4] {
        let group = vec![(0..ranks as u32).collect::<Vec<u32>>()];
        // All-reduce (type 1) and all-gather (type 3).
        for (ctype, out) in [(1u8, N), (3, N * ranks)] {
            let case = Case::new(ranks, &group, &[(ctype, 0)], out);
            for order in ["replica", "ring"] {
                let one = format!("one-{order}");
                let (code, o, e) = case.run(&[
                    "--input",
                    "x=x.{rank}.npy",
                    "--collective-order",
                    order,
                    "--out-dir",
                    &one,
                ]);
                assert_eq!(code, 0, "{o}{e}");
                for placement in ["blocks", "round-robin"] {
                    let spread = format!("mpi-{order}-{placement}");
                    let (code, o, e) = case.mpirun(&[
                        "--input",
                        "x=x.{rank}.npy",
                        "--collective-order",
                        order,
                        "--mpi-placement",
                        placement,
                        "--out-dir",
                        &spread,
                    ]);
                    let what = format!("type {ctype}, {ranks} ranks, {order}, {placement}");
                    assert_eq!(code, ["0", "0"], "{what}: {o}{e}");
                    // One report, from process 0, naming every rank.
                    let totals = o.lines().filter(|l| l.starts_with("ran ")).count();
                    assert_eq!(totals, 1, "{what}: {o}");
                    assert!(o.contains("spread over 2 MPI processes"), "{what}: {o}");
                    for r in 0..case.ranks {
                        assert!(o.contains(&format!("rank {r}: wrote y -> ")), "{what}: {o}");
                        let a = std::fs::read(case.path(&format!("{one}/rank{r}/y.npy"))).unwrap();
                        let b =
                            std::fs::read(case.path(&format!("{spread}/rank{r}/y.npy"))).unwrap();
                        assert_eq!(a, b, "{what}: rank {r}");
                    }
                }
            }
        }
    }
}

#[test]
fn large_contributions_cross_in_both_directions_without_a_stall() {
    // An all-gather of 1 MiB per rank over 4 ranks: 4 MiB results travel back to each
    // process while contributions travel in, far beyond MPI's eager sizes.
    let n = 1 << 18;
    let x = |r: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7 + r * 13) % 1001) as f32 * 0.25 - r as f32)
            .collect()
    };
    let case = Case::sized(4, &[(0..4).collect()], &[(3, 0)], n, n * 4, x);
    let (code, o, e) = case.run(&["--input", "x=x.{rank}.npy", "--out-dir", "one"]);
    assert_eq!(code, 0, "{o}{e}");
    for placement in ["blocks", "round-robin"] {
        let (codes, o, e) = case.mpirun(&[
            "--input",
            "x=x.{rank}.npy",
            "--mpi-placement",
            placement,
            "--out-dir",
            placement,
        ]);
        assert_eq!(codes, ["0", "0"], "{o}{e}");
        for r in 0..4 {
            let a = std::fs::read(case.path(&format!("one/rank{r}/y.npy"))).unwrap();
            let b = std::fs::read(case.path(&format!("{placement}/rank{r}/y.npy"))).unwrap();
            assert!(a == b, "{placement}: rank {r} differs");
        }
    }
}

#[test]
fn the_report_is_merged_and_a_mismatch_on_any_rank_fails_every_process() {
    let case = Case::new(4, &[(0..4).collect()], &[(1, 0)], N);
    let (code, o, e) = case.run(&["--input", "x=x.{rank}.npy", "--out-dir", "one"]);
    assert_eq!(code, 0, "{o}{e}");
    // References: rank r's is the one-process output, rank 3's off by one in one element.
    for r in 0..4 {
        let d = case.path(&format!("refs/rank{r}"));
        std::fs::create_dir_all(&d).unwrap();
        let mut bytes = std::fs::read(case.path(&format!("one/rank{r}/y.npy"))).unwrap();
        if r == 3 {
            let last = bytes.len() - 4;
            let v = f32::from_le_bytes(bytes[last..].try_into().unwrap()) + 1.0;
            bytes[last..].copy_from_slice(&v.to_le_bytes());
        }
        std::fs::write(d.join("y.npy"), bytes).unwrap();
    }
    let (code, o, e) = case.mpirun(&[
        "--input",
        "x=x.{rank}.npy",
        "--ref-dir",
        "refs",
        "--out-dir",
        "spread",
        "--json",
        "--schedules",
        "3",
    ]);
    assert_eq!(code, ["1", "1"], "{o}{e}");
    let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    assert_eq!(v["status"], "mismatch", "{v}");
    assert_eq!(v["mpi"]["processes"], 2, "{v}");
    // Three runs of the world, each over both processes, none differing.
    assert_eq!(v["schedules"]["count"], 3, "{v}");
    assert_eq!(
        v["schedules"]["output_differences"],
        serde_json::json!([]),
        "{v}"
    );
    let per: Vec<bool> = (0..4)
        .map(|r| v["ranks"][r]["comparisons"][0]["mismatches"] == 0)
        .collect();
    assert_eq!(v["ranks"][3]["rank"], 3, "{v}");
    assert_eq!(per, [true, true, true, false], "{v}");
}

#[test]
fn a_deadlock_across_processes_is_named_and_fails_every_process() {
    // Ranks 2 and 3 are not in group 0: they fault at the first all-reduce and never post
    // the second, over all four ranks, in which ranks 0 and 1 (on the other process) wait.
    let case = Case::new(4, &[vec![0, 1], (0..4).collect()], &[(1, 0), (1, 1)], N);
    let (code, o, e) = case.run(&["--input", "x=x.{rank}.npy", "--out-dir", "one"]);
    assert_eq!(code, 3, "{o}{e}");
    let one = e.clone();
    let (code, o, e) = case.mpirun(&["--input", "x=x.{rank}.npy", "--out-dir", "spread"]);
    assert_eq!(code, ["3", "3"], "{o}{e}");
    // Reported once, by process 0, as in one process.
    assert_eq!(e.matches("sim: error:").count(), 1, "{e}");
    assert!(e.contains("deadlock across ranks"), "{e}");
    assert!(
        e.contains("never by rank 2 (faulted), rank 3 (faulted)"),
        "{e}"
    );
    let line = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("sim: error:"))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(line(&e), line(&one));
}

#[test]
fn bad_input_on_any_process_stops_every_process_before_the_run() {
    let case = Case::new(2, &[vec![0, 1]], &[(1, 0)], N);
    // Rank 1's input is missing: process 1 (blocks) cannot start; process 0 must not wait
    // for it.
    std::fs::remove_file(case.path("x.1.npy")).unwrap();
    let (code, o, e) = case.mpirun(&["--input", "x=x.{rank}.npy", "--out-dir", "spread"]);
    assert_eq!(code, ["2", "2"], "{o}{e}");
    assert!(e.contains("x.1.npy"), "{e}");
    assert_eq!(e.matches("sim: error:").count(), 1, "{e}");
}

#[test]
fn validate_shards_a_corpus_and_prints_the_report_of_one_process() {
    // Five PE streams, valid and invalid in turn, one per directory.
    let case = Case::new(2, &[vec![0, 1]], &[(1, 0)], N);
    let files: Vec<String> = (0..5)
        .map(|i| {
            let d = case.path(&format!("s{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let bytes = super::validate::fixture("v4", i % 2 == 0, "pe");
            std::fs::write(d.join("PE.bin"), bytes).unwrap();
            format!("s{i}/PE.bin")
        })
        .collect();
    for extra in [&[][..], &["--json"][..], &["--fail-fast"][..]] {
        let mut args: Vec<&str> = vec!["validate", "--arch", "v4"];
        args.extend(extra);
        args.extend(files.iter().map(String::as_str));
        let mut c = Command::new(env!("CARGO_BIN_EXE_sim"));
        c.args(&args);
        let (code, one, one_err) = output(c, case.dir.path());
        assert_eq!(code, 1, "{one}{one_err}");
        assert!(
            one.contains("s3/PE.bin") != extra.contains(&"--fail-fast"),
            "{one}"
        );
        args.insert(1, "--mpi");
        let (codes, spread, spread_err) = case.mpirun_args(&args);
        assert_eq!(codes, ["1", "1"], "{extra:?}: {spread}{spread_err}");
        assert_eq!(spread, one, "{extra:?}");
        assert_eq!(spread_err, one_err, "{extra:?}");
    }
    // A missing file on process 1's shard: the error of one process, on every process.
    let mut args = vec![
        "validate",
        "--mpi",
        "--arch",
        "v4",
        "s0/PE.bin",
        "s9/PE.bin",
    ];
    let (codes, o, e) = case.mpirun_args(&args);
    assert_eq!(codes, ["2", "2"], "{o}{e}");
    assert!(
        e.contains("s9/PE.bin") && e.matches("sim: error:").count() == 1,
        "{e}"
    );
    args.remove(1);
    let mut c = Command::new(env!("CARGO_BIN_EXE_sim"));
    c.args(&args);
    let (code, _, one_err) = output(c, case.dir.path());
    assert_eq!((code, one_err), (2, e));
}

/// The race check over MPI: each process checks the ranks it runs (the replay takes what
/// the world delivered from the run's record, never the other processes), and the merged
/// report has every rank's findings, the same as in one process. SP reads the all-reduce's
/// output `y` (variable 2) without waiting for its completion: a race on every rank.
#[test]
fn the_race_check_over_processes_finds_what_one_process_finds() {
    let case = Case::new(4, &[(0..4).collect()], &[(1, 0)], N);
    let mut k = collective_kernel(&[(0..4).collect()], &[(1, 0)], N, N);
    k.streams[tpbsim_isa::Engine::Sp as usize] = vec![copy_to_sbuf(2)];
    k.to_neff().unwrap().write_to(&case.neff).unwrap();
    let args = ["--input", "x=x.{rank}.npy", "--check-races", "--json"];
    let (code, o, e) = case.run(&args);
    assert_eq!(code, 1, "{o}{e}");
    let one: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    for placement in ["blocks", "round-robin"] {
        let mut a = args.to_vec();
        a.extend(["--mpi-placement", placement]);
        let (codes, o, e) = case.mpirun(&a);
        assert_eq!(codes, ["1", "1"], "{placement}: {o}{e}");
        let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
        assert_eq!(v["status"], "findings", "{v}");
        for r in 0..4 {
            let f = &v["ranks"][r]["findings"];
            assert_eq!(
                f.as_array().map(Vec::len),
                Some(1),
                "{placement}: rank {r}: {v}"
            );
            assert_eq!(f[0]["a"]["origin"]["agent"], "pe:collective#0", "{f}");
            assert_eq!(*f, one["ranks"][r]["findings"], "{placement}: rank {r}");
        }
    }
    // `sim check --mpi` is the same check.
    let neff = case.neff.display().to_string();
    let (codes, o, e) = case.mpirun_args(&[
        "check",
        &neff,
        "--mpi",
        "--input",
        "x=x.{rank}.npy",
        "--json",
    ]);
    assert_eq!(codes, ["1", "1"], "{o}{e}");
    let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    for r in 0..4 {
        assert_eq!(
            v["ranks"][r]["findings"], one["ranks"][r]["findings"],
            "rank {r}"
        );
    }
}

/// `sim run` of several kernels under `mpirun -np 2 ... --mpi`: the kernels are sharded over
/// the processes, and process 0 prints the report of the run in one process (apart from its
/// timing), in argument order, with the same outputs and the same exit code on every process
/// — for the collective kernels (each a world of 4 ranks run in one process), in text and
/// JSON and both placements, and for a corpus with a failing kernel.
#[test]
fn run_shards_a_corpus_and_prints_the_report_of_one_process() {
    use super::corpus::{collective_inputs, run_args, sim_in, untimed, KERNELS};
    let case = Case::new(2, &[vec![0, 1]], &[(1, 0)], N);
    let mut inputs = collective_inputs();
    inputs.extend(["--out-dir", "out"].map(String::from));
    let failing = [
        "kernels/vadd.neff",
        "kernels/deadlock_cycle.neff",
        "kernels/missing.neff",
        "kernels/softmax.neff",
        "kernels/rmsnorm.neff",
    ];
    let out = ["--out-dir", "out"].map(String::from).to_vec();
    let runs: [(&[&str], Vec<String>, &str); 3] = [
        (&KERNELS, inputs.clone(), "0"),
        (&KERNELS, [inputs, vec!["--json".into()]].concat(), "0"),
        (&failing, out, "3"),
    ];
    for (i, (kernels, extra, code)) in runs.iter().enumerate() {
        let one = case.path(&format!("one{i}"));
        std::fs::create_dir_all(&one).unwrap();
        let args = run_args(kernels, extra);
        let (c, o, e) = sim_in(&one, &args);
        assert_eq!(c.to_string(), *code, "{o}{e}");
        for placement in ["blocks", "round-robin"] {
            let dir = format!("spread{i}-{placement}");
            std::fs::create_dir_all(case.path(&dir)).unwrap();
            let mut a: Vec<String> = args.clone();
            a.extend(["--mpi", "--mpi-placement", placement].map(String::from));
            // Run from the run's own directory, so that `out` lands there.
            let (codes, so, se) = case.mpirun_in(&case.path(&dir), &a);
            assert_eq!(codes, [*code, *code], "{i} {placement}: {so}{se}");
            assert_eq!(untimed(&so), untimed(&o), "{i} {placement}");
            assert_eq!(
                same_tree(&one.join("out"), &case.path(&dir).join("out")),
                Ok(())
            );
        }
    }
    // A refusal (an input without `{kernel}`) is reported once, by process 0.
    let mut a = run_args(&KERNELS, &["--input".into(), "x=x.npy".into()]);
    a.push("--mpi".into());
    let (codes, o, e) = case.mpirun_in(case.dir.path(), &a);
    assert_eq!(codes, ["2", "2"], "{o}{e}");
    assert_eq!(e.matches("sim: error:").count(), 1, "{e}");
    assert!(
        e.contains("--input x=x.npy: a run of several kernels"),
        "{e}"
    );
    assert!(o.is_empty(), "{o}");
}

/// Whether two directories hold the same files with the same bytes.
fn same_tree(a: &Path, b: &Path) -> Result<(), String> {
    let list = |d: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut all = Vec::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(p) = todo.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let f = e.unwrap().path();
                if f.is_dir() {
                    todo.push(f);
                } else {
                    let rel = f.strip_prefix(d).unwrap().to_path_buf();
                    all.push((rel, std::fs::read(&f).unwrap()));
                }
            }
        }
        all.sort();
        all
    };
    let (x, y) = (list(a), list(b));
    if x.is_empty() {
        return Err(format!("{}: no outputs", a.display()));
    }
    if x != y {
        let names = |v: &[(PathBuf, Vec<u8>)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
        return Err(format!(
            "{:?} != {:?} (or their bytes differ)",
            names(&x),
            names(&y)
        ));
    }
    Ok(())
}
