//! `docs/isa.md` and `docs/asm.md` are generated from the spec (and the examples); these tests
//! fail when a committed file differs. `TPBSIM_BLESS=1 cargo test -p tpbsim-isa --test docs`
//! rewrites them.

use std::path::PathBuf;

#[test]
fn isa_md_matches_the_spec() {
    matches_generator("isa.md", &tpbsim_isa::docs::isa_markdown());
}

#[test]
fn asm_md_matches_the_spec_and_the_examples() {
    matches_generator("asm.md", &tpbsim_isa::docs::asm_markdown());
}

fn matches_generator(name: &str, want: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs")
        .join(name);
    if std::env::var("TPBSIM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, want).expect("write the doc");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or(have.lines().count().min(want.lines().count()) + 1, |i| {
                i + 1
            });
        panic!("docs/{name} is out of date with its generator (first difference at line {line}); run `TPBSIM_BLESS=1 cargo test -p tpbsim-isa --test docs`");
    }
}
