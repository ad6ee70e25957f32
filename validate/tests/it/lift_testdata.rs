//! `lower(lift(stream)) == stream` on every instruction stream under `testdata/`: the kernels'
//! NEFFs, the unpacked NEFF directory, every engine-stream `.bin`, and the L2 fixture bundles
//! (one stream per generation and engine), lifted and lowered for every generation. On the
//! generation a kernel's NEFF names, its streams must also pass L2 and lift without `Generic`
//! bundles (the kernels use only instructions the simulator executes; the NEFF directory under
//! `testdata/neff` holds container-test bytes, not a valid program).

use std::path::{Path, PathBuf};

use tpbsim_isa::stream::EngineStream;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{Limits, Neff, ReadOptions};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::l2::{validate_stream, StreamSpec, GENS};
use tpbsim_validate::lift::{lift_stream, lower_function, StreamInput};

/// One stream found under testdata.
struct Found {
    name: String,
    engine: Engine,
    bundles: Vec<Bundle>,
    /// The generation the stream was built for, when its container names one.
    target: Option<Gen>,
}

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read testdata")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        // testdata/hostile holds deliberately malformed inputs (cli/tests/it/hostile_inputs.rs).
        if p.is_dir() && p.file_name().is_some_and(|n| n == "hostile") {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn neff_streams(n: &Neff, name: &str, out: &mut Vec<Found>) {
    let target = n
        .neff_json()
        .expect("neff.json")
        .and_then(|j| j.target_arch)
        .and_then(|a| a.parse::<Gen>().ok());
    for sg in n.subgraphs().expect("subgraphs") {
        for (engine, sm) in sg.streams {
            out.push(Found {
                name: format!("{name}:{}/{engine}", sg.dir),
                engine,
                bundles: sm.stream.bundles().to_vec(),
                target,
            });
        }
    }
}

fn fixture_streams(path: &Path, out: &mut Vec<Found>) {
    let text = std::fs::read_to_string(path).expect("fixtures");
    let mut groups: Vec<((Gen, Engine), Vec<Bundle>)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            continue;
        }
        let key = (f[0].parse().expect("gen"), f[1].parse().expect("engine"));
        let b = Bundle::from_hex(f[5]).expect("hex");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(b),
            None => groups.push((key, vec![b])),
        }
    }
    for ((gen, engine), bundles) in groups {
        out.push(Found {
            name: format!("fixtures.txt:{gen}/{engine}"),
            engine,
            bundles,
            target: None,
        });
    }
}

fn streams() -> Vec<Found> {
    let root = testdata();
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut out = Vec::new();
    for p in &files {
        let name = p.strip_prefix(&root).unwrap_or(p).display().to_string();
        let file_name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".neff") {
            let n = Neff::read(p, &ReadOptions::default()).expect("read NEFF");
            neff_streams(&n, &name, &mut out);
        } else if file_name == "neff.json" {
            let dir = p.parent().expect("dir");
            let n = Neff::from_dir(dir, "dir", &Limits::default()).expect("NEFF directory");
            neff_streams(&n, &name, &mut out);
        } else if name.ends_with("l2/fixtures.txt") {
            fixture_streams(p, &mut out);
        } else if let Some(engine) = Engine::from_file_name(p) {
            // Engine streams outside a NEFF directory (those inside are read above too).
            if let Ok(s) = EngineStream::open(p, Some(engine)) {
                out.push(Found {
                    name,
                    engine,
                    bundles: s.bundles().to_vec(),
                    target: None,
                });
            }
        }
    }
    out
}

#[test]
fn every_testdata_stream_lowers_back_on_every_generation() {
    let all = streams();
    let kernels = all
        .iter()
        .filter(|s| s.name.starts_with("kernels/"))
        .count();
    assert!(kernels >= 5, "{kernels} kernel streams");
    assert!(all.iter().any(|s| s.name.starts_with("fixtures.txt")));
    assert!(all.iter().any(|s| s.name.ends_with(".bin")));
    let mut bundles = 0usize;
    for s in &all {
        // The rebuilt real NEFF ships engine streams that are empty on the page.
        if s.bundles.is_empty() && s.name.starts_with("real/") {
            continue;
        }
        assert!(!s.bundles.is_empty(), "{}: empty", s.name);
        bundles += s.bundles.len();
        for gen in Gen::ALL {
            let lifted = lift_stream(
                &StreamInput {
                    function: "f".into(),
                    file: Some(s.name.clone()),
                    engine: s.engine,
                    bundles: &s.bundles,
                },
                gen,
            );
            let back = lower_function(&lifted.function, gen)
                .unwrap_or_else(|e| panic!("{} on {gen}: {e}", s.name));
            assert!(
                back == s.bundles,
                "{} on {gen}: lower(lift(stream)) differs at bundle {:?}",
                s.name,
                back.iter().zip(&s.bundles).position(|(a, b)| a != b)
            );
            if s.target == Some(gen) && s.name.starts_with("kernels/") {
                if GENS.contains(&gen) {
                    let spec = StreamSpec {
                        file: Some(s.name.clone()),
                        gen,
                        engine: s.engine,
                    };
                    let r = validate_stream(&s.bundles, &spec, Mode::CollectAll);
                    assert!(
                        !r.has_errors(),
                        "{} on {gen}: L2 {:?}",
                        s.name,
                        r.diagnostics
                    );
                }
                assert_eq!(
                    lifted.generic_bundles, 0,
                    "{} on {gen}: {:?}",
                    s.name, lifted.diagnostics
                );
            }
        }
    }
    assert!(bundles > 20, "{bundles} bundles");
}
