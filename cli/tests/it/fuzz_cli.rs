//! `sim fuzz` end to end: the v4 LdWeights run finds the dual-FP8 restriction as "passes L1,
//! fails L2", writes each reproducer as a 64-byte stream that `sim validate` and `sim verify`
//! judge the same way, and the report is the same for the same seed.

use std::process::Command;

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

#[test]
fn v4_ld_weights_dual_fp8_is_an_l2_only_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let repro = dir.path().join("repro");
    let repro_s = repro.display().to_string();
    let args = [
        "fuzz",
        "--arch",
        "v4",
        "--engine",
        "pe",
        "--format",
        "LdWeights",
        "--cases",
        "400",
        "--seed",
        "7",
        "--json",
    ];
    let (code, out, err) = sim(&[&args[..], &["--write-repro", &repro_s]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["cases"], 400);
    assert!(v["per_format"]["LdWeights"]["cases"].as_u64().unwrap() > 300);
    let ds = v["disagreements"].as_array().unwrap();
    let dual = ds
        .iter()
        .find(|d| {
            d["class"] == "passes L1, fails L2"
                && d["l1"]["verdict"] == "pass"
                && d["l2"]["rules"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r == "s3_lw_dual_fp8_restrictions")
        })
        .expect("a dual-FP8 L2-only disagreement");
    assert_eq!(&dual["hex"].as_str().unwrap()[..2], "01");

    // The reproducer file: 64 bytes, the printed hex, and the same verdicts from the other commands.
    let file = dual["file"].as_str().unwrap();
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(bytes.len(), 64);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, dual["hex"].as_str().unwrap());
    let (code, out, _) = sim(&["validate", file, "--arch", "v4", "--engine", "pe", "--json"]);
    assert_eq!(code, 1);
    assert!(out.contains("s3_lw_dual_fp8_restrictions"), "{out}");
    let (code, out, _) = sim(&["verify", file, "--arch", "v4", "--engine", "pe", "--json"]);
    assert_eq!(code, 1, "L2 rejects it");
    assert!(
        !out.lines()
            .any(|l| l.contains("\"layer\":\"L1\"") && l.contains("\"severity\":\"error\"")),
        "{out}"
    );
    assert_eq!(std::fs::read_dir(&repro).unwrap().count(), ds.len());

    // Same seed, same report.
    let (_, again, _) = sim(&args);
    let w: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(w["disagreements"].as_array().unwrap().len(), ds.len());
    assert_eq!(w["per_format"], v["per_format"]);
    assert_eq!(
        w["disagreements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["hex"].clone())
            .collect::<Vec<_>>(),
        ds.iter().map(|d| d["hex"].clone()).collect::<Vec<_>>()
    );
}

#[test]
fn text_report_and_usage_errors() {
    let (code, out, _) = sim(&["fuzz", "--arch", "v3", "--cases", "50", "--seed", "0x2a"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("sim fuzz: 50 cases on v3"), "{out}");
    assert!(out.contains("disagreements:"));
    let (code, _, err) = sim(&["fuzz", "--arch", "v4", "--format", "NoSuchFormat"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("NoSuchFormat"));
    let (code, _, _) = sim(&["fuzz", "--arch", "v9"]);
    assert_eq!(code, 2);
    // v5 has no L2: every case is at most "not checked" on that side, never a disagreement.
    let (code, out, _) = sim(&["fuzz", "--arch", "v5", "--cases", "40", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["disagreements_total"], 0);
}
