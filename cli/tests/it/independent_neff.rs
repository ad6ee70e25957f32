//! A NEFF written by an independent writer (`testdata/neff/independent_writer.py`: Python
//! standard library only, bundles and container encoded from the published byte layouts, the
//! expected output computed there in pure Python) runs under `sim run` and matches bit for bit;
//! the same kernel unpacked and re-packed by `sim neff pack` runs to identical outputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/independent")
}

fn sim(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .output()
        .expect("run sim")
}

/// `sim run NEFF --out-dir OUT --ref-dir expected --json`, asserting an exact match; returns the
/// written output file.
fn run_and_match(neff: &Path, out: &Path) -> Vec<u8> {
    let expected = dir().join("add_square.expected");
    let r = sim(&[
        "run".as_ref(),
        neff.as_os_str(),
        "--out-dir".as_ref(),
        out.as_os_str(),
        "--ref-dir".as_ref(),
        expected.as_os_str(),
        "--json".as_ref(),
    ]);
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json summary");
    assert_eq!(v["status"], "ok");
    let comps = v["comparisons"].as_array().expect("comparisons");
    assert_eq!(comps.len(), 1, "{v}");
    let c = &comps[0];
    assert_eq!(c["name"], "out", "{c}");
    assert_eq!(c["elements"], 512, "{c}");
    assert_eq!(c["mismatches"], 0, "{c}");
    assert_eq!(c["max_ulp"], 0, "exact match expected: {c}");
    for (e, n) in [("dve", 1), ("act", 1), ("sp", 2), ("pe", 0), ("pool", 0)] {
        assert_eq!(v["summary"]["bundles"][e], n, "{e}: {v}");
    }
    std::fs::read(out.join("out.npy")).expect("out.npy written")
}

#[test]
fn independently_written_neff_runs_and_matches() {
    let tmp = tempfile::tempdir().unwrap();
    let neff = dir().join("add_square.neff");
    let first = run_and_match(&neff, &tmp.path().join("a"));

    // Unpack, re-pack with tpbsim's writer, run again: the same outputs, byte for byte.
    let unpacked = tmp.path().join("unpacked");
    let repacked = tmp.path().join("repacked.neff");
    for args in [
        vec![
            "neff".as_ref(),
            "unpack".as_ref(),
            neff.as_os_str(),
            "-o".as_ref(),
            unpacked.as_os_str(),
        ],
        vec![
            "neff".as_ref(),
            "pack".as_ref(),
            unpacked.as_os_str(),
            "-o".as_ref(),
            repacked.as_os_str(),
        ],
    ] {
        let r = sim(&args);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    // The streams and data survive the round trip; the container bytes are tpbsim's own.
    for m in [
        "sg00/dve_instr",
        "sg00/Activation.bin",
        "sg00/SP.bin",
        "sg00/x.npy",
    ] {
        assert!(unpacked.join(m).is_file(), "{m} unpacked");
    }
    assert_ne!(
        std::fs::read(&repacked).unwrap(),
        std::fs::read(&neff).unwrap()
    );
    let second = run_and_match(&repacked, &tmp.path().join("b"));
    assert_eq!(first, second, "re-packed NEFF gives identical outputs");
}
