//! Crafted legal and illegal bundles per generation (testdata/l2/fixtures.txt, written by
//! testdata/l2/make_fixtures.py) get the expected verdict, first failing rule and code, and
//! the silent gate agrees with its collecting twin and the simulator's bundle check.

use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::l2::{check_collect, check_silent, L2Check, Outcome};

#[test]
fn fixtures_verdicts_rules_codes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/l2/fixtures.txt");
    let text = std::fs::read_to_string(path).expect("fixtures");
    let mut n = 0;
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 6, "line {}: {line}", lineno + 1);
        let gen: Gen = f[0].parse().unwrap();
        let engine: Engine = f[1].parse().unwrap();
        let b = Bundle::from_hex(f[5]).expect("hex");
        let all = check_collect(gen, engine, &b);
        let first = all.iter().find(|x| x.outcome == Outcome::Fail);
        let silent = check_silent(gen, engine, &b);
        let at = format!("line {} ({gen} {engine}): {all:?}", lineno + 1);
        match f[2] {
            "valid" => {
                assert!(first.is_none(), "{at}");
                assert!(!silent.failed, "{at}");
                // The simulator's bundle check lets it through.
                assert!(L2Check.check(gen, engine, &b).is_ok(), "{at}");
            }
            "error" => {
                let first = first.unwrap_or_else(|| panic!("expected an error: {at}"));
                assert_eq!(first.rule.name, f[3], "{at}");
                assert_eq!(first.gate.code(gen), Some(f[4].parse().unwrap()), "{at}");
                assert!(silent.failed, "{at}");
                // The simulator's bundle check refuses it, naming each failed rule.
                let r = L2Check.check(gen, engine, &b).unwrap_err();
                let fails = all.iter().filter(|x| x.outcome == Outcome::Fail).count();
                assert_eq!(r.reasons.len(), fails, "{at}");
                let named = format!("L2 {}", f[3]);
                assert!(r.reasons[0].starts_with(&named), "{at}: {:?}", r.reasons);
            }
            v => panic!("line {}: verdict {v}", lineno + 1),
        }
        n += 1;
    }
    assert!(n >= 60, "only {n} fixtures");
}
