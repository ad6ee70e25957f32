//! The real compiler's NEFFs and their engine streams through the `sim` commands: every
//! `*.neff` under `shared/real/` validates clean with no `--arch` (the generation from the
//! NEFF), and the streams of `shared/real/nkipy/matmul_small.neff` (neuronx-cc 2.23, Trn2 =
//! v3), extracted here from the NEFF with flate2 and tar, pass `sim validate`, `sim lift` and
//! `sim verify` on v3 with no error, and `sim disasm` annotates no legal engine.

use crate::common::{sim, text};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Output;

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/real")
}

fn neffs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            neffs(&p, out);
        } else if p.extension().is_some_and(|x| x == "neff") {
            out.push(p);
        }
    }
}

/// Error lines of `sim validate --json` output.
fn json_errors(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["severity"] == "error")
        .collect()
}

#[test]
fn every_real_neff_validates_clean_for_its_own_generation() {
    let mut files = Vec::new();
    neffs(&real_dir(), &mut files);
    assert!(!files.is_empty(), "no NEFF under {}", real_dir().display());
    for f in &files {
        let p = f.to_str().unwrap();
        let o = sim(&["validate", p, "--json"]);
        let errors = json_errors(&o);
        assert!(errors.is_empty(), "{p}: {errors:#?}\n{}", text(&o));
        assert_eq!(o.status.code(), Some(0), "{p}:\n{}", text(&o));
        // Streams were validated: the report names the NEFF's members.
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(".bin"),
            "{p}: no stream reported\n{}",
            text(&o)
        );
    }
}

/// Extract the engine streams of the small NEFF into `dir` (`sg00/Activation.bin`, ...).
fn extract_streams(dir: &Path) -> Vec<PathBuf> {
    let neff = real_dir().join("nkipy/matmul_small.neff");
    let bytes = std::fs::read(&neff).unwrap_or_else(|e| panic!("{}: {e}", neff.display()));
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(&bytes[0x400..])
        .read_to_end(&mut tar_bytes)
        .expect("the payload's gzip member");
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        let name = entry.path().expect("path").to_string_lossy().into_owned();
        let name = name.trim_start_matches("./").to_string();
        let is_stream = ["PE", "Activation", "Pool", "DVE", "SP"]
            .iter()
            .any(|e| name.ends_with(&format!("/{e}.bin")));
        if !is_stream {
            continue;
        }
        let path = dir.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        std::fs::write(&path, data).unwrap();
        out.push(path);
    }
    out.sort();
    assert_eq!(out.len(), 10, "five streams in each of sg00 and sg01");
    out
}

#[test]
fn the_real_streams_pass_validate_lift_and_verify_on_v3() {
    let tmp = tempfile::tempdir().unwrap();
    let streams = extract_streams(tmp.path());
    let all: Vec<&str> = streams.iter().map(|p| p.to_str().unwrap()).collect();

    let mut args = vec!["validate", "--arch", "v3", "--json"];
    args.extend(&all);
    let o = sim(&args);
    assert!(json_errors(&o).is_empty(), "{:#?}", json_errors(&o));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    for s in &all {
        let out = tmp.path().join("lifted.bir.json");
        let o = sim(&["lift", "--arch", "v3", s, "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "lift {s}:\n{}", text(&o));
        let o = sim(&["verify", "--arch", "v3", out.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "verify {s} (lifted):\n{}",
            text(&o)
        );
        let o = sim(&["verify", "--arch", "v3", s]);
        assert_eq!(o.status.code(), Some(0), "verify {s}:\n{}", text(&o));
        assert!(
            text(&o).contains(" 0 error(s)") || text(&o).contains("\n0 error(s)"),
            "verify {s}:\n{}",
            text(&o)
        );
    }
}

#[test]
fn disasm_annotates_act_copy_only_where_it_is_illegal() {
    let tmp = tempfile::tempdir().unwrap();
    extract_streams(tmp.path());
    let act = tmp.path().join("sg00/Activation.bin");
    let act = act.to_str().unwrap();
    for arch in ["v3", "v4"] {
        let o = sim(&["disasm", "--arch", arch, act]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(t.matches("COPY ").count(), 2, "{t}");
        assert!(!t.contains("engine classes"), "{arch}: {t}");
    }
    // v2: the Scalar engine has no tensor_copy.
    let o = sim(&["disasm", "--arch", "v2", act]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        t.matches("; engine classes POOL/DVE do not include act")
            .count(),
        2,
        "{t}"
    );
    // On PE the copies are annotated on every generation.
    let o = sim(&["disasm", "--arch", "v3", "--engine", "pe", act]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        t.matches("; engine classes ACT/POOL/DVE do not include pe")
            .count(),
        2,
        "{t}"
    );
    // And L2 agrees: v2 ACT copies are errors.
    let o = sim(&["validate", "--arch", "v2", "--json", act]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let rules: Vec<String> = json_errors(&o)
        .iter()
        .map(|d| d["rule"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        rules,
        ["instruction_engine_check", "instruction_engine_check"],
        "{}",
        text(&o)
    );
}
