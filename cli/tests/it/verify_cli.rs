//! `sim verify` end to end: exit codes, text and JSON Lines reports, rule selection.

use crate::common::sim;
use std::path::PathBuf;
use std::process::Output;

fn bir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/bir")
        .join(name)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn clean_module_exits_0() {
    let o = sim(&["verify", bir("clean_core_v4.bir.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(": valid for core_v4 (40)"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("0 error(s)"), "{}", stdout(&o));
}

#[test]
fn broken_module_exits_1_with_code() {
    let o = sim(&["verify", bir("engines_400.bir.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("INVALID"), "{out}");
    assert!(out.contains("error [L1 checkValidEngines #400]"), "{out}");
    assert!(
        out.contains("function main\n  block bb0\n    2:TensorTensor(add_in_place) on pe\n"),
        "{out}"
    );
}

#[test]
fn json_lines_have_the_l2_keys() {
    let f = bir("engines_400.bir.json");
    let o = sim(&["verify", "--json", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let err = lines
        .iter()
        .find(|v| v["severity"] == "error")
        .expect("an error line");
    for k in [
        "file",
        "engine",
        "index",
        "offset",
        "layer",
        "rule",
        "code",
        "severity",
        "field",
        "message",
        "function",
        "block",
        "instruction",
    ] {
        assert!(err.get(k).is_some(), "missing {k}: {err}");
    }
    assert_eq!(err["code"], 400);
    assert_eq!(err["layer"], "L1");
    assert_eq!(err["file"], f.display().to_string());
}

#[test]
fn rule_selection() {
    let f = bir("engines_400.bir.json");
    let o = sim(&[
        "verify",
        "--skip-rules",
        "valid-engines",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = sim(&[
        "verify",
        "--rules",
        "checkMemType,arch-level",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = sim(&["verify", "--rules", "no-such-rule", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown rule or property `no-such-rule`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn arch_override() {
    // The v4 module verified as gen3: MatmultMx does not exist there.
    let o = sim(&[
        "verify",
        "--arch",
        "gen3",
        "--rules",
        "arch-level",
        bir("clean_core_v4.bir.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("#366"), "{}", stdout(&o));
    let o = sim(&[
        "verify",
        "--arch",
        "v9",
        bir("clean_core_v4.bir.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn usage_and_io_errors_exit_2() {
    // A stream is lifted for a generation the command line must name.
    let o = sim(&["verify", "PE.bin"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--arch is required"), "{}", stderr(&o));
    let o = sim(&["verify", "missing.bir.json"]);
    assert_eq!(o.status.code(), Some(2));
    let dir = std::env::temp_dir().join(format!("tpbsim-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.bir.json");
    std::fs::write(&bad, r#"{"arch": "core_v4", "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [{"op": "TensorCopy", "args": [{"mem": "SB", "buffer": "x", "dtype": "float9"}]}]}]}]}"#).unwrap();
    let o = sim(&["verify", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "functions[0].blocks[0].instructions[0].args[0].dtype: unknown dtype \"float9\""
        ),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
    let o = sim(&["verify"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn l0_drift_and_rule_list() {
    let o = sim(&["verify", "--l0-drift", "--arch", "core_v4"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("Pool                         core_v4              {Pool}"),
        "{}",
        stdout(&o)
    );
    let o = sim(&["verify", "--list-rules"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("checkValidEngines"), "{}", stdout(&o));
}

#[test]
fn fail_fast_stops_at_the_first_error() {
    let f = bir("two_errors.bir.json");
    let all = sim(&["verify", "--json", f.to_str().unwrap()]);
    let first = sim(&["verify", "--json", "--fail-fast", f.to_str().unwrap()]);
    assert_eq!(all.status.code(), Some(1));
    assert_eq!(first.status.code(), Some(1));
    let errors = |o: &Output| {
        stdout(o)
            .lines()
            .filter(|l| l.contains("\"severity\":\"error\""))
            .count()
    };
    assert_eq!(errors(&all), 2);
    assert_eq!(errors(&first), 1);
    // The first error in walk order: instruction 1 (mem type) precedes instruction 2 (engine).
    assert!(
        stdout(&first).contains("\"code\":310"),
        "{}",
        stdout(&first)
    );
}

#[test]
fn every_fixture_exit_code() {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bir("cases.json")).unwrap()).unwrap();
    for case in manifest.as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let want = if case["errors"].as_array().unwrap().is_empty() {
            0
        } else {
            1
        };
        let o = sim(&["verify", "--json", bir(file).to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(want), "{file}: {}", stdout(&o));
    }
}

#[test]
fn opcode_unknown_to_v5_is_an_error_without_a_wire_validator() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("PE.bin");
    let mut b = [0u8; 64];
    b[1] = 0x10;
    // 0x02 (Matmul) is defined on v5; 0xFE is not.
    b[0] = 0x02;
    let mut stream = b.to_vec();
    b[0] = 0xFE;
    stream.extend_from_slice(&b);
    std::fs::write(&path, &stream).expect("write stream");
    let o = sim(&[
        "verify",
        path.to_str().expect("utf-8 path"),
        "--arch",
        "v5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let errors: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"severity\":\"error\""))
        .collect();
    assert_eq!(errors.len(), 1, "{out}");
    assert!(errors[0].contains("\"rule\":\"decode\""), "{out}");
    assert!(errors[0].contains("\"index\":1"), "{out}");
}
