//! `docs/isa.md` is generated from the spec; this test fails when the committed file differs.
//! `TPBSIM_BLESS=1 cargo test -p tpbsim-isa` rewrites it.

use std::path::PathBuf;

#[test]
fn isa_md_matches_the_spec() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/isa.md");
    let want = tpbsim_isa::docs::isa_markdown();
    if std::env::var("TPBSIM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &want).expect("write docs/isa.md");
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
        panic!("docs/isa.md is out of date with the spec (first difference at line {line}); run `TPBSIM_BLESS=1 cargo test -p tpbsim-isa --test docs`");
    }
}
