//! `sim neff info|unpack|pack` end to end, on the committed source directory
//! `testdata/neff/kernel`.

use crate::common::sim;
use std::path::{Path, PathBuf};

fn kernel_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/kernel")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn pack_info_unpack_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let neff = tmp.path().join("k.neff");
    let out = sim(&[
        "neff",
        "pack",
        s(&kernel_dir()),
        "-o",
        s(&neff),
        "--name",
        "kern",
        "--keep-layout",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = sim(&["neff", "info", s(&neff), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["header"]["pkg_version"], 2);
    assert_eq!(doc["header"]["name"], "kern");
    assert_eq!(doc["header"]["hash_algorithm"], "MD5");
    assert_eq!(doc["target_arch"], "cayman");
    assert_eq!(doc["members"].as_array().unwrap().len(), 7);
    let sg = &doc["subgraphs"][0];
    assert_eq!(sg["dir"], "sg00");
    assert_eq!(sg["variables"].as_array().unwrap().len(), 4);
    assert_eq!(sg["queues"][1]["semaphores"], serde_json::json!([2, 3]));
    let streams = sg["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    assert_eq!(
        (
            streams[0]["engine"].as_str(),
            streams[0]["bundles"].as_u64()
        ),
        (Some("pe"), Some(2))
    );
    assert_eq!(
        (
            streams[1]["engine"].as_str(),
            streams[1]["bundles"].as_u64()
        ),
        (Some("act"), Some(3))
    );
    assert_eq!(streams[0]["dma_entries"], 2);

    let text = sim(&["neff", "info", s(&neff)]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("sg00/act_instr") && text.contains("3 bundles"),
        "{text}"
    );

    let dest = tmp.path().join("out");
    assert_eq!(
        sim(&["neff", "unpack", s(&neff), "-o", s(&dest)])
            .status
            .code(),
        Some(0)
    );
    for f in [
        "neff.json",
        "sg00/def.json",
        "sg00/PE.bin",
        "sg00/act_instr",
        "sg00/w.npy",
    ] {
        assert_eq!(
            std::fs::read(dest.join(f)).unwrap(),
            std::fs::read(kernel_dir().join(f)).unwrap(),
            "{f}"
        );
    }
    // Refuses to overwrite without --force.
    let again = sim(&["neff", "unpack", s(&neff), "-o", s(&dest)]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(
        sim(&["neff", "unpack", s(&neff), "-o", s(&dest), "--force"])
            .status
            .code(),
        Some(0)
    );

    // Re-packing the extracted tree gives the same file, byte for byte.
    let neff2 = tmp.path().join("k2.neff");
    assert_eq!(
        sim(&[
            "neff",
            "pack",
            s(&dest),
            "-o",
            s(&neff2),
            "--name",
            "kern",
            "--keep-layout"
        ])
        .status
        .code(),
        Some(0)
    );
    assert_eq!(
        std::fs::read(&neff).unwrap(),
        std::fs::read(&neff2).unwrap()
    );
    // The output is not overwritten without --force.
    assert_eq!(
        sim(&["neff", "pack", s(&dest), "-o", s(&neff2)])
            .status
            .code(),
        Some(2)
    );

    // pkg_version 1.
    let neff1 = tmp.path().join("k1.neff");
    assert_eq!(
        sim(&[
            "neff",
            "pack",
            s(&dest),
            "-o",
            s(&neff1),
            "--pkg-version",
            "1"
        ])
        .status
        .code(),
        Some(0)
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&sim(&["neff", "info", s(&neff1), "--json"]).stdout).unwrap();
    assert_eq!(doc["header"]["hash_algorithm"], "SHA-256");
}

#[test]
fn bad_inputs_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let neff = tmp.path().join("k.neff");
    assert_eq!(
        sim(&["neff", "pack", s(&kernel_dir()), "-o", s(&neff)])
            .status
            .code(),
        Some(0)
    );
    // A corrupted digest: read (the digest is not checked unless asked), refused with
    // --verify-hash; the retired --no-verify-hash still parses and changes nothing.
    let mut bytes = std::fs::read(&neff).unwrap();
    bytes[0xAC] ^= 0xFF;
    let bad = tmp.path().join("bad.neff");
    std::fs::write(&bad, &bytes).unwrap();
    let out = sim(&["neff", "info", s(&bad), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["header"]["hash_status"], "not checked");
    let out = sim(&["neff", "info", s(&bad), "--verify-hash"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("MD5 mismatch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sim(&["neff", "info", s(&bad), "--no-verify-hash"])
            .status
            .code(),
        Some(0)
    );
    let out = sim(&["neff", "info", s(&bad), "--no-verify-hash", "--verify-hash"]);
    assert_eq!(out.status.code(), Some(2), "the two flags conflict");
    // The intact file's digest matches when checked.
    let out = sim(&["neff", "info", s(&neff), "--json", "--verify-hash"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["header"]["hash_status"], "match");
    for cmd in ["validate", "verify", "lift"] {
        let out = sim(&[cmd, s(&bad), "--verify-hash"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("MD5 mismatch"),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Truncated file.
    std::fs::write(&bad, &bytes[..500]).unwrap();
    let out = sim(&["neff", "info", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated NEFF header"));
    // Missing file, bad pkg-version, missing directory.
    assert_eq!(
        sim(&["neff", "info", "/nonexistent/x.neff"]).status.code(),
        Some(2)
    );
    assert_eq!(
        sim(&[
            "neff",
            "pack",
            s(&kernel_dir()),
            "-o",
            "x.neff",
            "--pkg-version",
            "3"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        sim(&[
            "neff",
            "pack",
            "/nonexistent",
            "-o",
            s(&tmp.path().join("y.neff"))
        ])
        .status
        .code(),
        Some(2)
    );
    // An inconsistent def.json is refused by pack (and accepted with --no-validate).
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("sg00")).unwrap();
    std::fs::write(
        src.join("sg00/def.json"),
        br#"{"var": [{"var_id": 0, "name": "a", "type": "input"}]}"#,
    )
    .unwrap();
    let out = sim(&["neff", "pack", s(&src), "-o", s(&tmp.path().join("z.neff"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("var[0].size"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.path().join("z.neff").exists(), "no output on failure");
    let z = tmp.path().join("z.neff");
    assert_eq!(
        sim(&["neff", "pack", s(&src), "-o", s(&z), "--no-validate"])
            .status
            .code(),
        Some(0)
    );
    // ...and info then reports the subgraph error with exit 2.
    let out = sim(&["neff", "info", s(&z), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["subgraphs"][0]["error"]
        .as_str()
        .unwrap()
        .contains("needs a size"));
}
