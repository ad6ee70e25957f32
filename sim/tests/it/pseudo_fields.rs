//! The fields of a TRIGGER_COLLECTIVE record (G `neff/concrete-carve.md` §5.1) are read as
//! little-endian words whole: variable ids and element counts above 255, and a count above
//! 32 bits.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::{Kernel, Machine, RunOptions, VarKind, VarSpec};

/// Variable ids with every byte of the low half set.
const INPUT: u32 = 0x0103;
const OUTPUT: u32 = 0x0204;

/// A single-rank ALL_REDUCE ADD of `count` fp32 elements from `INPUT` to `OUTPUT`.
fn collective(count: u64) -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, 0xC8);
    b.set_u8(1, 0x10);
    b.set_u8(0x0C, 0x04);
    b.set_u8(0x0D, 0x0A);
    b.set_u32(0x10, INPUT);
    b.set_u32(0x14, OUTPUT);
    b.set_u64(0x18, count);
    b.set_u8(0x20, 0x01);
    b
}

fn kernel(count: u64, elems: usize) -> Kernel {
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![elems],
        size: 4 * elems as u64,
        init: None,
    };
    let mut k = Kernel {
        gen: Some(Gen::V3),
        vars: vec![
            var(INPUT, "a", VarKind::Input),
            var(OUTPUT, "b", VarKind::Output),
        ],
        world: 1,
        ..Default::default()
    };
    k.streams[Engine::Pe as usize] = vec![collective(count)];
    k
}

#[test]
fn a_collective_reads_multi_byte_ids_and_counts() {
    // 0x120 elements: the count's second byte is set too.
    let n = 0x120;
    let k = kernel(n as u64, n);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let data: Vec<u8> = (0..4 * n).map(|i| (i * 7 % 251) as u8).collect();
    m.set_var("a", &data).unwrap();
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.var("b").unwrap(), &data[..]);
    assert_eq!(st.dma_bytes, 4 * n as u64);
}

#[test]
fn a_collective_count_past_32_bits_is_refused_with_its_value() {
    // Only the high word's second byte is set.
    let n = 2u64 << 40;
    let k = kernel(n, 4);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "execution", "{f}");
    assert!(
        f.to_string()
            .contains(&format!("collective of {n} elements: the input window")),
        "{f}"
    );
}
