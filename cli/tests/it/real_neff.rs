//! The NEFF written by the real toolchain (the rebuilt concrete-carve model in
//! `testdata/real/`) and the runtime layout `sim neff pack` writes: info, validate, verify,
//! lift, run against `--ref`, generation handling, and the reader cases of
//! `testdata/hostile/neff-reader/`.

use crate::common::{sim, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn real(name: &str) -> String {
    root()
        .join("testdata/real")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn carve() -> String {
    real("concrete_carve.neff")
}

#[test]
fn info_lists_the_fixture_its_reader_and_what_is_not_modelled() {
    let o = sim(&["neff", "info", &carve()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    for needle in [
        "kelf-a.json",
        "sg00/pool.bin",
        "sg00/pe.bin",
        "reader: runtime",
        "target: * (kelf-a.json target",
        "0 that change results",
        "sg00/def.json: var.output.#file-name",
        "sg00/def.json: debug_info (no effect on results; debug members (G neff/concrete-carve.md §7))",
    ] {
        assert!(t.contains(needle), "`{needle}` missing from:\n{t}");
    }
    let o = sim(&["neff", "info", &carve(), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["members"].as_array().unwrap().len(), 18);
    assert_eq!(doc["header"]["name"], "x");
    let sg = &doc["subgraphs"][0];
    assert_eq!(sg["variables"].as_array().unwrap().len(), 5);
    assert!(doc["unmodelled"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| u["affects_results"] == false));
}

#[test]
fn validate_verify_and_lift_check_the_fixture_on_v2() {
    for cmd in ["validate", "verify", "lift"] {
        let o = sim(&[cmd, "--arch", "v2", &carve()]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", text(&o));
    }
    let o = sim(&["validate", "--arch", "v2", &carve()]);
    let t = text(&o);
    assert!(t.contains("sg00/pe.bin: pe 1 bundle(s)"), "{t}");
    assert!(t.contains("sg00/pool.bin: pool 3 bundle(s)"), "{t}");
}

#[test]
fn a_star_target_needs_arch_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    for args in [
        vec!["validate", carve().leak() as &str],
        vec!["verify", carve().leak()],
        vec!["lift", carve().leak()],
        vec!["run", carve().leak(), "--out-dir", out.to_str().unwrap()],
        vec!["check", carve().leak()],
        vec!["profile", carve().leak()],
    ] {
        let o = sim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("kelf-a.json target \"*\"") && t.contains("pass --arch"),
            "{args:?}: {t}"
        );
    }
    assert!(!out.exists());
}

/// `sim run KERNEL --out-dir OUT`.
fn run_into(kernel: &str, out: &Path) -> Output {
    sim(&["run", kernel, "--out-dir", out.to_str().unwrap()])
}

/// `sim run` of the concrete-carve fixture on v2 with its input, compared with `reference`.
fn run_carve(reference: &str, out: &Path) -> Output {
    sim(&[
        "run",
        &carve(),
        "--arch",
        "v2",
        "--input",
        &format!("input={}", real("concrete_carve.input.npy")),
        "--ref",
        &format!("output={reference}"),
        "--out-dir",
        out.to_str().unwrap(),
    ])
}

#[test]
fn run_copies_the_input_through_the_single_rank_all_reduce() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let o = run_carve(&real("concrete_carve.ref/output.npy"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("32 elements (float32), 0 mismatches"),
        "{}",
        text(&o)
    );
    // The output file equals the input's data byte for byte.
    let got = std::fs::read(out.join("output.npy")).unwrap();
    let want = std::fs::read(real("concrete_carve.input.npy")).unwrap();
    assert_eq!(got[got.len() - 128..], want[want.len() - 128..]);
    // A different reference is a mismatch (exit 1): the comparison is real.
    let zeros = tmp.path().join("zeros.npy");
    let mut z = want.clone();
    let n = z.len();
    z[n - 128..].fill(0);
    std::fs::write(&zeros, z).unwrap();
    let o = run_carve(&zeros.display().to_string(), &tmp.path().join("o2"));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn the_generator_script_rebuilds_the_committed_fixture() {
    let Ok(py) = Command::new("python3").arg("--version").output() else {
        return;
    };
    if !py.status.success() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("make_concrete_carve.py");
    std::fs::copy(root().join("testdata/real/make_concrete_carve.py"), &script).unwrap();
    let o = Command::new("python3").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for f in [
        "concrete_carve.neff",
        "concrete_carve.input.npy",
        "concrete_carve.ref/output.npy",
    ] {
        assert_eq!(
            std::fs::read(tmp.path().join(f)).unwrap(),
            std::fs::read(real(f)).unwrap(),
            "{f} differs from the script's output"
        );
    }
}

#[test]
fn kernels_run_from_the_runtime_layout_and_the_earlier_dialect() {
    let k = |n: &str| {
        root()
            .join("testdata/kernels")
            .join(n)
            .to_str()
            .unwrap()
            .to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    for (name, reader) in [
        ("softmax.neff", "reader: runtime"),
        ("vadd.neff", "reader: by name"),
    ] {
        let o = sim(&["neff", "info", &k(name)]);
        assert!(text(&o).contains(reader), "{name}: {}", text(&o));
        let o = run_into(&k(name), &tmp.path().join(name));
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
    }
}

#[test]
fn pack_writes_the_runtime_layout_from_todays_directory_form() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    // Today's input form: the earlier dialect, unpacked.
    let vadd = root().join("testdata/kernels/vadd.neff");
    let o = sim(&[
        "neff",
        "unpack",
        vadd.to_str().unwrap(),
        "-o",
        src.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(src.join("notes.txt"), "not a member").unwrap();
    let packed = tmp.path().join("v.neff");
    let o = sim(&[
        "neff",
        "pack",
        src.to_str().unwrap(),
        "-o",
        packed.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("`notes.txt` is not packed"),
        "{}",
        text(&o)
    );
    let o = sim(&["neff", "info", packed.to_str().unwrap(), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for m in [
        "kelf-a.json",
        "neff.json",
        "sg00/def.json",
        "sg00/sp.json",
        "sg00/sp.bin",
    ] {
        assert!(names.contains(&m), "{m} not in {names:?}");
    }
    assert!(!names
        .iter()
        .any(|n| n.contains("notes") || n.contains("SP.bin")));
    assert!(doc["reader"].as_str().unwrap().starts_with("runtime"));
    assert!(
        doc["target"].as_str().unwrap().starts_with("cayman"),
        "{doc}"
    );
    // Same outputs as the original.
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for (n, d) in [(vadd.to_str().unwrap(), &a), (packed.to_str().unwrap(), &b)] {
        let o = run_into(n, d);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    assert_eq!(
        std::fs::read(a.join("out.npy")).unwrap(),
        std::fs::read(b.join("out.npy")).unwrap()
    );
    // --keep-layout packs the directory as it is.
    let kept = tmp.path().join("k.neff");
    let o = sim(&[
        "neff",
        "pack",
        src.to_str().unwrap(),
        "-o",
        kept.to_str().unwrap(),
        "--keep-layout",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&sim(&["neff", "info", kept.to_str().unwrap()])).contains("reader: by name"));
}

#[test]
fn pack_checks_dma_sides_against_their_variables_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let o = sim(&["neff", "unpack", &carve(), "-o", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let pool = src.join("sg00/pool.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&pool).unwrap()).unwrap();
    v["dma"][1]["desc"][0]["to_sizes"] = serde_json::json!([256, 1]);
    v["dma"][1]["desc"][0]["from_sizes"] = serde_json::json!([256, 1]);
    std::fs::write(&pool, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = tmp.path().join("bad.neff");
    let o = sim(&[
        "neff",
        "pack",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("dma[1].desc[0]"), "{}", text(&o));
    assert!(!out.exists());
}

/// Every case of `testdata/hostile/neff-reader/cases.json`: its exit code and message, and
/// nothing written to the output directory.
#[test]
fn hostile_reader_cases() {
    let dir = root().join("testdata/hostile/neff-reader");
    let cases: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 20);
    for c in cases {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let args: Vec<String> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                a.as_str()
                    .unwrap()
                    .replace("{case}", dir.to_str().unwrap())
                    .replace("{out}", out.to_str().unwrap())
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = sim(&args);
        let name = c["name"].as_str().unwrap();
        assert_eq!(
            o.status.code().map(i64::from),
            c["exit"].as_i64(),
            "{name}: {}",
            text(&o)
        );
        let want = c["stderr"].as_str().unwrap();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{name}: `{want}` not in {}",
            text(&o)
        );
        let written = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
        assert_eq!(written, 0, "{name}: wrote into the output directory");
    }
}

/// The concrete-carve NEFF unpacked, changed by `edit` (given the directory) and packed as it
/// is; the temporary directory holds it.
fn repacked(edit: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let o = sim(&["neff", "unpack", &carve(), "-o", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    edit(&dir);
    let neff = tmp.path().join("k.neff");
    let o = sim(&[
        "neff",
        "pack",
        dir.to_str().unwrap(),
        "-o",
        neff.to_str().unwrap(),
        "--keep-layout",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    (tmp, neff)
}

#[test]
fn info_cross_checks_each_stream_against_its_asm_member() {
    let o = sim(&["neff", "info", &carve(), "--arch", "v2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("sg00/pe.bin vs sg00/pe.asm: 1 bundle(s) match"),
        "{t}"
    );
    assert!(
        t.contains("sg00/pool.bin vs sg00/pool.asm: 3 bundle(s) match"),
        "{t}"
    );
    // A `*` target without --arch: not checked, and why.
    let t = text(&sim(&["neff", "info", &carve()]));
    assert!(
        t.contains("sg00/pe.bin vs sg00/pe.asm: not checked: the NEFF names no single generation; pass --arch"),
        "{t}"
    );
    // A packed fixture whose .asm disagrees with its stream: the first difference, named.
    let (_tmp, neff) = repacked(|dir| {
        let pool = dir.join("sg00/pool.asm");
        let src = std::fs::read_to_string(&pool).unwrap();
        std::fs::write(&pool, src.replace("$S[22]>0", "$S[21]>0")).unwrap();
    });
    let o = sim(&[
        "neff",
        "info",
        neff.to_str().unwrap(),
        "--arch",
        "v2",
        "--json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["asm_cross_check"].as_array().unwrap();
    let pool = rows
        .iter()
        .find(|r| r["stream"] == "sg00/pool.bin")
        .unwrap();
    assert_eq!(pool["status"], "differ", "{pool}");
    assert_eq!(pool["bundle"], 1);
    assert_eq!(pool["byte"], 5);
    assert_eq!(pool["field"], "wait_idx");
    let pe = rows.iter().find(|r| r["stream"] == "sg00/pe.bin").unwrap();
    assert_eq!(pe["status"], "match", "{pe}");
}

#[test]
fn check_orders_the_collective_before_its_completion_update() {
    let input = format!("input={}", real("concrete_carve.input.npy"));
    let o = sim(&["check", &carve(), "--arch", "v2", "--input", &input]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("race check: 0 findings"), "{t}");
    // The same collective updating its semaphore after the read (`@read`) orders nothing
    // about its output: the race with the output DMA is reported.
    let (_tmp, neff) = repacked(|dir| {
        let pe = dir.join("sg00/pe.bin");
        let mut b = std::fs::read(&pe).unwrap();
        assert_eq!(b[6], 0x13);
        b[6] = 0x03;
        std::fs::write(&pe, b).unwrap();
        std::fs::remove_file(dir.join("sg00/pe.asm")).unwrap();
    });
    let o = sim(&[
        "check",
        neff.to_str().unwrap(),
        "--arch",
        "v2",
        "--input",
        &input,
    ]);
    let t = text(&o);
    assert!(t.contains("race: write of DMA queue pe:direct"), "{t}");
    assert!(t.contains("race check: 1 finding"), "{t}");
}
