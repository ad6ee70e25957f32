//! The fixtures of `testdata/bir/`: each breaks one rule and must produce exactly the errors
//! its manifest entry lists (rule name and assertion code); the clean modules produce none.

use std::path::PathBuf;

use tpbsim_validate::bir::from_json_str;
use tpbsim_validate::diag::Mode;
use tpbsim_validate::registry::{PropertySet, Registry};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/bir")
}

#[test]
fn every_fixture_reports_exactly_its_errors() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("cases.json")).expect("cases.json"),
    )
    .expect("manifest");
    let registry = Registry::l1();
    let cases = manifest.as_array().expect("array");
    assert!(cases.len() >= 10);
    let mut failures = Vec::new();
    for case in cases {
        let file = case["file"].as_str().expect("file");
        let text = std::fs::read_to_string(dir().join(file)).expect(file);
        let module = from_json_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let diags = registry.verify(PropertySet::all(), &module, Mode::CollectAll);
        let mut got: Vec<(String, Option<u64>)> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| (d.rule.to_string(), d.code.map(u64::from)))
            .collect();
        let mut want: Vec<(String, Option<u64>)> = case["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| {
                (
                    e["rule"].as_str().expect("rule").to_string(),
                    e["code"].as_u64(),
                )
            })
            .collect();
        got.sort();
        want.sort();
        if got != want {
            let detail: Vec<String> = diags
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.to_string())
                .collect();
            failures.push(format!(
                "{file}: want {want:?}\n  got {got:?}\n  {}",
                detail.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
