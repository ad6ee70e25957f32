//! `sim validate` end to end: exit codes, JSON Lines keys, engine from the file name.

use std::path::Path;
use std::process::Command;

pub(crate) fn fixture(gen: &str, want_valid: bool, engine: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/l2/fixtures.txt"
    ))
    .unwrap();
    let mut out = Vec::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f[0] == gen && f[1] == engine && (f[2] == "valid") == want_valid {
            let hex = f[5];
            out.extend((0..64).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()));
        }
    }
    assert!(!out.is_empty());
    out
}

fn sim(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

#[test]
fn exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "PE.bin", &fixture("v4", true, "pe"));
    let (code, out, _) = sim(&["validate", &good, "--arch", "v4"]);
    assert_eq!(code, 0, "{out}");

    let bad_dir = dir.path().join("bad");
    std::fs::create_dir(&bad_dir).unwrap();
    let bad = write(&bad_dir, "PE.bin", &fixture("v4", false, "pe"));
    let (code, out, _) = sim(&["validate", &bad, "--arch", "v4", "--json", "--threads", "2"]);
    assert_eq!(code, 1);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    for v in &lines {
        for k in [
            "file", "engine", "index", "offset", "layer", "rule", "code", "severity", "field",
            "message",
        ] {
            assert!(v.get(k).is_some(), "missing {k} in {v}");
        }
        assert_eq!(v["layer"], "L2");
        assert_eq!(v["engine"], "pe");
    }
    assert!(lines
        .iter()
        .any(|v| v["rule"] == "s3_lw_dual_fp8_restrictions" && v["code"] == 934));
    // Same output with one thread.
    let (_, out1, _) = sim(&["validate", &bad, "--arch", "v4", "--json", "--threads", "1"]);
    assert_eq!(out, out1);
    // Fail-fast: exactly the earliest error.
    let (code, out, _) = sim(&["validate", &bad, "--arch", "v4", "--json", "--fail-fast"]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 1);
    // Text output marks the field.
    let (_, text, _) = sim(&["validate", &bad, "--arch", "v4"]);
    assert!(text.contains("#934"), "{text}");
    // The marker sits under the offending field's piece of the disassembled bundle.
    let lines: Vec<&str> = text.lines().collect();
    let k = lines
        .iter()
        .position(|l| l.contains("s3_lw_dual_fp8_restrictions"))
        .expect("dual-FP8 diagnostic");
    let (dis, marks) = (lines[k + 1], lines[k + 2]);
    assert!(dis.trim_start().starts_with("LDWEIGHTS"), "{text}");
    let col = marks.find('^').expect("marker");
    let end = col + marks[col..].find(|c| c != '^').unwrap_or(marks.len() - col);
    let piece = &dis[col..end];
    assert!(
        !piece.is_empty() && !piece.contains(' '),
        "{piece:?} in\n{text}"
    );
    let field = marks[end..].trim();
    // The marked piece is the field's `name=value`, or its part inside an access pattern.
    let name = field.split(' ').next().unwrap_or("");
    let operand = name.split('.').next().unwrap_or(name);
    let piece_start = dis[..col].rfind(' ').map_or(0, |k| k + 1);
    assert!(
        dis[piece_start..].starts_with(operand) || dis[..col].contains(&format!("{operand}=[")),
        "{piece:?} vs {field:?}"
    );
    assert!(field.contains("(bytes "), "{field}");
}

#[test]
fn usage_and_io_errors() {
    let dir = tempfile::tempdir().unwrap();
    let odd = write(dir.path(), "PE.bin", &[0u8; 65]);
    assert_eq!(sim(&["validate", &odd, "--arch", "v3"]).0, 2);
    let anon = write(dir.path(), "kernel.bin", &[0u8; 64]);
    assert_eq!(
        sim(&["validate", &anon, "--arch", "v3"]).0,
        2,
        "engine not in the name"
    );
    assert_eq!(
        sim(&["validate", &anon, "--arch", "v5", "--engine", "pe"]).0,
        2,
        "no v5 validator"
    );
    assert_eq!(
        sim(&["validate", "/nonexistent/PE.bin", "--arch", "v3"]).0,
        2
    );
    assert_eq!(sim(&["validate", &anon, "--arch", "v9"]).0, 2);
    // An all-zero bundle is invalid (opcode 0), with the engine given explicitly.
    assert_eq!(
        sim(&["validate", &anon, "--arch", "v3", "--engine", "pe"]).0,
        1
    );
}

#[test]
fn neff_every_stream() {
    use tpbsim_neff::{Limits, Neff};
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/neff/kernel");
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("kernel");
    copy_tree(Path::new(src), &tree);
    std::fs::write(tree.join("sg00/PE.bin"), fixture("v3", true, "pe")).unwrap();
    std::fs::write(tree.join("sg00/act_instr"), fixture("v3", true, "act")).unwrap();
    let neff = Neff::from_dir(&tree, "kernel", &Limits::default()).unwrap();
    let path = dir.path().join("kernel.neff");
    neff.write_to(&path).unwrap();
    let p = path.display().to_string();
    let (code, out, err) = sim(&["validate", &p, "--arch", "v3"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("kernel.neff:sg00/PE.bin") && err.contains("act"),
        "{err}"
    );
    std::fs::write(tree.join("sg00/PE.bin"), fixture("v3", false, "pe")).unwrap();
    let neff = Neff::from_dir(&tree, "kernel", &Limits::default()).unwrap();
    neff.write_to(&path).unwrap();
    let (code, out, _) = sim(&["validate", &p, "--arch", "v3", "--json"]);
    assert_eq!(code, 1);
    assert!(
        out.lines().all(|l| l.contains("kernel.neff:sg00/PE.bin")),
        "{out}"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}
