//! `valid_mm_sbuf_quadrant` judges an immediate SBUF source by its partition; a register
//! address word (bit 31) is judged elsewhere, whatever its low bits would read as.

use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::l2::{addr, check_collect};

/// A v4 LdWeights with row group 0x1 (partitions 0..32), 32 active rows, column group 0xF with
/// 0x80 active columns, and `src` as its source address word.
fn ldweights(src: u32) -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = 0x01;
    b.0[1] = 0x10;
    b.set_u32(16, src);
    b.set_u32(20, 0x0001_0001);
    for i in 0..3 {
        b.set_u16(26 + 2 * i, 1);
    }
    b.0[32] = 0x06;
    b.0[38] = 32;
    b.0[39] = 0x80;
    b.0[44] = 0x1;
    b.0[45] = 0xF;
    b
}

fn quadrant_findings(b: &Bundle) -> usize {
    check_collect(Gen::V4, Engine::Pe, b)
        .iter()
        .filter(|f| f.rule.name == "valid_mm_sbuf_quadrant")
        .count()
}

#[test]
fn an_immediate_source_outside_the_row_group_fails_and_a_register_word_is_not_judged() {
    let inside = (0..29)
        .map(|s| 8u32 << s)
        .find(|&w| addr::partition(Gen::V4, w) == 8 && !addr::in_psum(w))
        .expect("an SBUF word at partition 8");
    let outside = (0..29)
        .map(|s| 100u32 << s)
        .find(|&w| addr::partition(Gen::V4, w) == 100 && !addr::in_psum(w))
        .expect("an SBUF word at partition 100");
    assert_eq!(quadrant_findings(&ldweights(inside)), 0);
    assert_eq!(quadrant_findings(&ldweights(outside)), 1);
    let register = 0x8000_0000 | outside;
    assert!(addr::is_register(register) && !addr::is_indirect(register));
    assert_eq!(quadrant_findings(&ldweights(register)), 0);
}
