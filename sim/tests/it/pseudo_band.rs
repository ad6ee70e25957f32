//! The pseudo band the runtime rewrites: labels and queue re-arms are no-ops, a single-rank
//! collective copies its input to its output, a collective over more ranks than the run has and
//! everything else is refused by name.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::{Fault, Kernel, Machine, RunOptions, VarKind, VarSpec};

fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, op);
    b.set_u8(1, 0x10);
    b
}

/// The collective record of G neff/concrete-carve.md §5.1: ALL_REDUCE ADD fp32 of 32 elements
/// from var 3 to var 4.
fn collective(ctype: u8) -> Bundle {
    let mut b = bundle(0xC8);
    b.set_u8(0x0C, 0x04);
    b.set_u8(0x0D, 0x0A);
    b.set_u32(0x10, 3);
    b.set_u32(0x14, 4);
    b.set_u32(0x18, 32);
    b.set_u8(0x20, ctype);
    b
}

fn kernel(pe: Vec<Bundle>, world: usize) -> Kernel {
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![32],
        size: 128,
        init: None,
    };
    let mut k = Kernel {
        gen: Some(Gen::V2),
        vars: vec![var(3, "a", VarKind::Input), var(4, "b", VarKind::Output)],
        world,
        ..Default::default()
    };
    k.streams[Engine::Pe as usize] = pe;
    k
}

#[test]
fn a_single_rank_all_reduce_copies_and_labels_are_no_ops() {
    let k = kernel(
        vec![bundle(0xCC), bundle(0xC2), bundle(0xCF), collective(1)],
        1,
    );
    let mut m = Machine::new(&k, Gen::V2).unwrap();
    let data: Vec<u8> = (0..128u8).collect();
    m.set_var("a", &data).unwrap();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.var("b").unwrap(), &data[..]);
}

#[test]
fn more_ranks_other_collectives_and_functions_are_refused() {
    let cases: [(Vec<Bundle>, usize, &str); 10] = [
        (vec![collective(1)], 2, "over 2 ranks"),
        (vec![collective(6)], 1, "PERMUTE_REDUCE"),
        (vec![collective(9)], 1, "ALL_TO_ALL_V"),
        (vec![collective(0)], 1, "names no collective"),
        (vec![bundle(0xD2)], 1, "FUNCTION_RETURN"),
        (
            vec![bundle(0xCB)],
            1,
            "SEND_RECV (receive from rank 0) in a run of one rank",
        ),
        (vec![bundle(0xDB)], 1, "CUR_PROCESSING_RANK_ID"),
        (vec![bundle(0xDC)], 1, "GID_LOAD to an address"),
        (vec![bundle(0xD9)], 1, "TRIGGER_COLLECTIVE2"),
        (vec![bundle(0xDA)], 1, "EXTENSION"),
    ];
    for (stream, world, needle) in cases {
        let k = kernel(stream, world);
        let mut m = Machine::new(&k, Gen::V2).unwrap();
        let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
        assert!(matches!(f, Fault::NotSimulated { .. }), "{f}");
        assert!(f.to_string().contains(needle), "{needle}: {f}");
    }
}

#[test]
fn a_trigger_with_use_raw_count_is_refused() {
    let mut b = bundle(0xC1);
    b.0[0x0C..0x0E].copy_from_slice(b"q\0");
    b.set_u8(0x2C, 1);
    let k = kernel(vec![b], 1);
    let mut m = Machine::new(&k, Gen::V2).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(f.to_string().contains("use_raw_count"), "{f}");
}
