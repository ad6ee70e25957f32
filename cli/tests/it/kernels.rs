//! Every testdata kernel runs to completion and matches its independently computed reference
//! (`testdata/kernels/<kernel>.ref/`, written by `make_refs.py`), with L2 validation on.

use std::path::PathBuf;
use std::process::Command;

/// Kernels with a planted synchronisation bug (checked by `sim check`, see `cli/tests/it/check.rs`).
fn is_planted(p: &std::path::Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    ["race_", "deadlock_", "uninit_"]
        .iter()
        .any(|pre| name.starts_with(pre))
}

/// The looped, double-buffered kernels (`sim/examples/build_big_kernels.rs`).
const LOOPED: [&str; 3] = ["matmul_k64", "layernorm_1024", "attention_512"];

fn kernels() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/kernels");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .filter(|p| !is_planted(p))
        .collect();
    v.sort();
    v
}

#[test]
fn every_kernel_matches_its_reference() {
    let ks = kernels();
    assert!(ks.len() >= 6, "expected the testdata kernels, found {ks:?}");
    for name in [
        "vadd",
        "iadd_pool",
        "softmax",
        "rmsnorm",
        "matmul_bf16",
        "mx_matmul",
        "range_select",
        "matmul_k64",
        "layernorm_1024",
        "attention_512",
    ] {
        assert!(
            ks.iter().any(|k| k.file_stem().is_some_and(|s| s == name)),
            "{name}.neff is missing from {ks:?}"
        );
    }
    let mut engines_used = [0u64; 5];
    for k in ks {
        let out = tempfile::tempdir().unwrap();
        let r = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("run")
            .arg(&k)
            .arg("--out-dir")
            .arg(out.path())
            .arg("--json")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&r.stdout);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{}: {stdout}{}",
            k.display(),
            String::from_utf8_lossy(&r.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(v["status"], "ok", "{}", k.display());
        let comps = v["comparisons"].as_array().unwrap();
        assert!(!comps.is_empty(), "{}: no reference compared", k.display());
        for c in comps {
            assert_eq!(c["mismatches"], 0, "{}: {c}", k.display());
            assert!(c["elements"].as_u64().unwrap() > 0);
        }
        // A kernel whose ops rely on project-defined details says so; the others carry no note.
        let notes = v["project_defined"].as_array().unwrap();
        let select = k.file_stem().is_some_and(|s| s == "range_select");
        assert_eq!(!notes.is_empty(), select, "{}: {notes:?}", k.display());
        if select {
            assert!(
                notes[0].as_str().unwrap().contains("RANGE_SELECT"),
                "{notes:?}"
            );
        }
        let mut executed = 0;
        for (i, e) in ["pe", "act", "pool", "dve", "sp"].iter().enumerate() {
            let n = v["summary"]["bundles"][e].as_u64().unwrap();
            engines_used[i] += n;
            executed += n;
        }
        // The looped kernels execute at least 10^4 bundles from streams far shorter.
        if LOOPED
            .iter()
            .any(|l| k.file_stem().is_some_and(|s| s == *l))
        {
            assert!(executed >= 10_000, "{}: {executed} bundles", k.display());
        }
    }
    assert!(
        engines_used.iter().all(|&n| n > 0),
        "every queue runs in some kernel: {engines_used:?}"
    );
}
