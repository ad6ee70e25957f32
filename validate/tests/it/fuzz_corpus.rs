//! Replays the cargo-fuzz seed corpus and every regression input (`fuzz/regressions/<target>/`)
//! through the target bodies on stable: none may panic.
//!
//! Seeds come from testdata: the L2 fixtures and the engine streams of the testdata NEFFs
//! (`decode_validate`, `lift_verify`, prefixed with the byte that selects their generation and
//! engine), the NEFFs themselves (`neff_read`) and the BIR JSON modules (`bir_json`). With
//! `TPBSIM_WRITE_FUZZ_CORPUS=DIR` the seeds are also written to `DIR/<target>/` for
//! `cargo fuzz run` (docs/robustness.md).

use std::path::{Path, PathBuf};

use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_validate::fuzz::targets::{self, TARGETS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The selector byte of `gen` and `engine` (see `targets::select`).
fn selector(gen: Gen, engine: Engine) -> u8 {
    gen.index() as u8 | (engine as u8) << 2
}

fn stream_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let text = std::fs::read_to_string(root().join("testdata/l2/fixtures.txt")).unwrap();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Ok(gen), Ok(engine)) = (f[0].parse::<Gen>(), f[1].parse::<Engine>()) else {
            continue;
        };
        let Some(b) = Bundle::from_hex(f[5]) else {
            continue;
        };
        let mut v = vec![selector(gen, engine)];
        v.extend_from_slice(&b.0);
        out.push(v);
    }
    for p in neff_seeds().iter().map(|(_, b)| b) {
        let Ok(n) = Neff::from_bytes(p, &ReadOptions::default()) else {
            continue;
        };
        let gen = n
            .neff_json()
            .ok()
            .flatten()
            .and_then(|j| j.target_arch)
            .and_then(|a| a.parse::<Gen>().ok())
            .unwrap_or(Gen::V3);
        for sg in n.subgraphs().unwrap_or_default() {
            for e in Engine::ALL {
                if let Some(s) = sg.stream(e) {
                    let mut v = vec![selector(gen, e)];
                    v.extend_from_slice(s.as_bytes());
                    out.push(v);
                }
            }
        }
    }
    out
}

fn neff_seeds() -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = files(&root().join("testdata/kernels"), ".neff");
    v.extend(files(&root().join("testdata/neff/independent"), ".neff"));
    v.into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "decode_validate" | "lift_verify" => stream_seeds(),
        "neff_read" => neff_seeds().into_iter().map(|(_, b)| b).collect(),
        "bir_json" => files(&root().join("testdata/bir"), ".json")
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect(),
        _ => unreachable!(),
    }
}

fn regressions(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = root().join("fuzz/regressions").join(target);
    files(&dir, "")
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != ".keep"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn seed_corpus_and_regressions_replay_without_panic() {
    let out = std::env::var_os("TPBSIM_WRITE_FUZZ_CORPUS").map(PathBuf::from);
    for (name, body) in TARGETS {
        let s = seeds(name);
        assert!(s.len() >= 4, "{name}: {} seeds", s.len());
        for (i, input) in s.iter().enumerate() {
            body(input);
            // Truncations and a flipped byte of each seed, too.
            for cut in [0, 1, input.len() / 2, input.len().saturating_sub(1)] {
                body(&input[..cut]);
            }
            let mut m = input.clone();
            if let Some(x) = m.get_mut(input.len() / 3) {
                *x ^= 0x5A;
            }
            body(&m);
            if let Some(dir) = &out {
                let d = dir.join(name);
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join(format!("seed-{i:04}")), input).unwrap();
            }
        }
        // Every target keeps at least one regression input: the replay is never vacuous.
        let reg = regressions(name);
        assert!(!reg.is_empty(), "fuzz/regressions/{name} holds no input");
        for (p, input) in reg {
            eprintln!("replaying {}", p.display());
            body(&input);
        }
    }
}

#[test]
fn selector_byte_picks_generation_and_engine() {
    for gen in Gen::ALL {
        for e in Engine::ALL {
            let input = [selector(gen, e), 1, 2];
            let (g, en, rest) = targets::select(&input);
            assert_eq!((g, en, rest), (gen, e, &[1u8, 2][..]));
        }
    }
    assert_eq!(targets::select(&[]).2.len(), 0);
}
