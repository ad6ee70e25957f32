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
