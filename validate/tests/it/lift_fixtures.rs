//! The lifter over the L2 fixture bundles (crafted legal and illegal bundles of every
//! generation): lowering gives every stream back, and every legal bundle of an opcode with a
//! lifting rule lifts to its class, not to `Generic`.

use std::path::PathBuf;

use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::bir::InstClass;
use tpbsim_validate::lift::{lift_stream, lower_function, StreamInput};

struct Fixture {
    gen: Gen,
    engine: Engine,
    valid: bool,
    bundle: Bundle,
    comment: String,
}

fn fixtures() -> Vec<Fixture> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/l2/fixtures.txt");
    let text = std::fs::read_to_string(&path).expect("fixtures");
    let mut out = Vec::new();
    let mut comment = String::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix('#') {
            comment = c.trim().to_string();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            continue;
        }
        out.push(Fixture {
            gen: f[0].parse().expect("gen"),
            engine: f[1].parse().expect("engine"),
            valid: f[2] == "valid",
            bundle: Bundle::from_hex(f[5]).expect("hex"),
            comment: comment.clone(),
        });
    }
    out
}

#[test]
fn every_fixture_lowers_back_and_legal_ones_lift() {
    let all = fixtures();
    assert!(all.len() > 20, "{} fixtures", all.len());
    let mut lifted_valid = 0;
    let mut failures = Vec::new();
    for f in &all {
        let bundles = [f.bundle];
        let s = lift_stream(
            &StreamInput {
                function: "f".into(),
                file: None,
                engine: f.engine,
                bundles: &bundles,
            },
            f.gen,
        );
        assert_eq!(
            lower_function(&s.function, f.gen).expect("lower"),
            bundles,
            "{}",
            f.comment
        );
        let inst = &s.function.blocks[0].instructions[0];
        if f.valid {
            if inst.class == InstClass::Generic {
                failures.push(format!(
                    "{} ({} {}): {}",
                    f.comment,
                    f.gen,
                    f.engine,
                    s.diagnostics
                        .iter()
                        .map(|d| d.message.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            } else {
                lifted_valid += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "legal bundles not lifted:\n{}",
        failures.join("\n")
    );
    assert!(lifted_valid > 10);
}
