//! The example kernels of `docs/asm.md`, built and run by `examples/run_all.sh` exactly as CI
//! runs them: assemble with lint warnings denied, pack, validate, run against the numpy
//! references, check for races.

use std::path::Path;
use std::process::Command;

#[test]
fn run_all_builds_and_runs_every_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let o = Command::new("bash")
        .arg(root.join("examples/run_all.sh"))
        .env("SIM", env!("CARGO_BIN_EXE_sim"))
        .output()
        .expect("bash runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    for ex in [
        "1_dve_affine",
        "2_act_bias_accumulate",
        "3_pe_matmul_psum",
        "4_double_buffer",
    ] {
        assert!(
            out.contains(&format!("== {ex}")),
            "{ex} did not run:\n{out}"
        );
    }
    assert_eq!(out.matches("race check: 0 findings").count(), 4, "{out}");
    assert!(out.contains("all examples passed"), "{out}");
}

/// Each trap of the tutorial is caught: the example with the trap put back fails to assemble
/// with `--deny-warnings`.
#[test]
fn example_traps_are_denied() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = std::fs::read_to_string(root.join("examples/2_act_bias_accumulate/src/Activation.s"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (from, to, rule) in [
        ("EXP scale_value=0.5", "EXP", "act-scale-zero"),
        (
            "wait_idx=1 semaphore_value=1",
            "wait_idx=1 update_mode=SEM_WR_IMM_COMPLETE update_idx=1",
            "wait-degenerate",
        ),
    ] {
        assert!(src.contains(from), "{from}");
        let trap = src.replacen(from, to, 1);
        let s = dir.path().join("Activation.s");
        std::fs::write(&s, trap).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("asm")
            .arg(&s)
            .args(["-o"])
            .arg(dir.path().join("Activation.bin"))
            .args(["--arch", "v3", "--deny-warnings"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(rule), "{err}");
        assert!(err.contains("fix:"), "{err}");
        assert!(!dir.path().join("Activation.bin").exists());
    }
}

/// Tutorial, kernel 4: without the wait for the store of `out0`, `sim check` reports the race.
#[test]
fn double_buffer_without_its_wait_races() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/4_double_buffer");
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("k");
    let o = Command::new("cp")
        .arg("-r")
        .arg(root.join("pack"))
        .arg(&k)
        .status()
        .unwrap();
    assert!(o.success());
    let dve = std::fs::read_to_string(root.join("src/DVE.s")).unwrap();
    assert!(dve.contains("NOP $S[5]>=1;"));
    let broken: String = dve
        .lines()
        .filter(|l| !l.starts_with("NOP $S[5]>=1;"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("DVE.s"), broken).unwrap();
    let sim = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(args)
            .output()
            .unwrap()
    };
    let d = dir.path();
    for (src, out) in [
        (d.join("DVE.s"), k.join("sg00/DVE.bin")),
        (root.join("src/SP.s"), k.join("sg00/SP.bin")),
    ] {
        let o = sim(&[
            "asm".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--arch".as_ref(),
            "v3".as_ref(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let neff = d.join("k.neff");
    let o = sim(&[
        "neff".as_ref(),
        "pack".as_ref(),
        k.as_os_str(),
        "-o".as_ref(),
        neff.as_os_str(),
    ]);
    assert!(o.status.success());
    let o = sim(&["check".as_ref(), neff.as_os_str()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("race: write of dve bundle #2"), "{out}");
    assert!(out.contains("race check: 1 finding"), "{out}");
}
