//! End-to-end machine runs over hand-assembled control and DMA bundles.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::{Fault, Kernel, Machine, RunOptions, VarKind, VarSpec};

fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, op);
    b.set_u8(1, 0x10);
    b
}

fn with_wait(mut b: Bundle, mode: u8, idx: u8, value: u32) -> Bundle {
    b.set_u8(4, mode);
    b.set_u8(5, idx);
    b.set_u32(8, value);
    b
}

fn with_update(mut b: Bundle, mode: u8, idx: u8) -> Bundle {
    b.set_u8(6, mode);
    b.set_u8(7, idx);
    b
}

/// DMA_DIRECT2D moving `rows` × `row_bytes` float32 from (var, addr) to (var, addr).
fn direct2d(
    src: (u32, u32, i32),
    dst: (u32, u32, i32),
    rows: u16,
    row_bytes: u16,
    sem: u8,
) -> Bundle {
    let mut b = bundle(0xD4);
    b.set_u8(13, sem);
    b.set_u8(14, 1);
    for (base, (var, addr, step)) in [(16usize, src), (40, dst)] {
        b.set_u32(base, addr);
        b.set_u32(base + 4, var);
        b.set_u8(base + 7, 0x10);
        b.set_u32(base + 8, 0); // step[0]
        b.set_u32(base + 12, step as u32); // step[1]
        b.set_u16(base + 16, 1); // num[0]
        b.set_u16(base + 18, rows); // num[1]
        b.set_u16(base + 20, row_bytes);
    }
    b.set_u8(62, 0x0A);
    b.set_u8(63, 0x0A);
    b
}

fn kernel(streams: [Vec<Bundle>; 5]) -> Kernel {
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![4, 8],
        size: 128,
        init: None,
    };
    Kernel {
        gen: Some(Gen::V3),
        streams,
        vars: vec![var(1, "x", VarKind::Input), var(2, "y", VarKind::Output)],
        queues: Default::default(),
        world: 1,
        ..Kernel::default()
    }
}

#[test]
fn sp_round_trip_with_semaphore_handshake() {
    let sbuf = 0x40000 * 2; // partition 2, offset 0
    let k = kernel([
        // PE waits until both DMAs have completed, then halts.
        vec![with_wait(bundle(0xA4), 5, 0, 2), bundle(0xA1)],
        vec![],
        vec![],
        vec![],
        vec![
            direct2d((1, 0, 32), (0, sbuf, 0x40000), 4, 32, 0),
            direct2d((0, sbuf, 0x40000), (2, 0, 32), 4, 32, 0),
        ],
    ]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let data: Vec<u8> = (0..128u8).collect();
    m.set_var("x", &data).unwrap();
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.var("y").unwrap(), &data[..]);
    assert_eq!(st.sched.per_engine, [2, 0, 0, 0, 2]);
    assert_eq!(st.dma_bytes, 256);
    assert_eq!(m.sync.sems[0], 2);
}

#[test]
fn direct2d_adds_its_semaphore_increment() {
    // Each transfer adds 3 to semaphore 0 (byte 14), not 1: PE's wait for >= 6 holds only
    // after both.
    let sbuf = 0x40000 * 2;
    let with_inc = |mut b: Bundle| {
        b.set_u8(14, 3);
        b
    };
    let k = kernel([
        vec![with_wait(bundle(0xA4), 5, 0, 6), bundle(0xA1)],
        vec![],
        vec![],
        vec![],
        vec![
            with_inc(direct2d((1, 0, 32), (0, sbuf, 0x40000), 4, 32, 0)),
            with_inc(direct2d((0, sbuf, 0x40000), (2, 0, 32), 4, 32, 0)),
        ],
    ]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.sync.sems[0], 6);
}

#[test]
fn a_cross_core_barrier_is_not_simulated() {
    let mut b = bundle(0xD8);
    b.set_u32(0x0C, 5);
    b.set_u32(0x10, 2);
    let k = kernel([vec![], vec![], vec![], vec![], vec![b]]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "not-simulated");
    let t = f.to_string();
    assert!(
        t.contains("cross-core barrier (CORE_BARRIER id 5, index 2)"),
        "{t}"
    );
}

#[test]
fn deadlock_reports_the_waits() {
    let k = kernel([
        vec![with_wait(bundle(0xA4), 5, 3, 1)],
        vec![],
        vec![],
        vec![
            with_update(bundle(0xA4), 0x13, 4),
            with_wait(bundle(0xA4), 6, 9, 0),
        ],
        vec![],
    ]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    let text = f.to_string();
    assert_eq!(f.kind(), "deadlock");
    assert!(text.contains("pe bundle #0 (opcode 0xa4, byte offset 0x0) waits for semaphore 3 >= 1 (current value 0)"), "{text}");
    assert!(
        text.contains(
            "dve bundle #1 (opcode 0xa4, byte offset 0x40) waits for event 9 set (currently clear)"
        ),
        "{text}"
    );
}

#[test]
fn branch_loop_hits_the_step_budget() {
    let mut br = bundle(0xA9);
    br.set_u8(13, 0x08); // int32
    br.set_u8(14, 3); // REL_IMM
    br.set_u64(48, 0); // jump to itself
    let k = kernel([vec![], vec![], vec![], vec![], vec![br]]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m
        .run(
            &RunOptions {
                max_steps: 5000,
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(f, Fault::StepBudget { budget: 5000, .. }), "{f}");
    assert!(f.to_string().contains("sp #0"));
}

#[test]
fn counted_loop_via_semaphore_and_branch() {
    // SP loops: a Nop that may issue only while sem 1 < 3 and increments it at issue, then an
    // unconditional branch back. PE exits once sem 1 >= 3. SP then blocks forever.
    let inc = with_wait(with_update(bundle(0xA4), 0x03, 1), 2, 1, 3);
    let mut br = bundle(0xA9);
    br.set_u8(13, 0x08);
    br.set_u8(14, 3);
    br.set_u64(48, (-64i64) as u64);
    let mut exit = with_wait(bundle(0xDF), 5, 1, 3);
    exit.set_u8(12, 1);
    let k = kernel([vec![exit], vec![], vec![], vec![], vec![inc, br]]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    let Fault::Deadlock(r) = &f else {
        panic!("{f}")
    };
    assert_eq!(r.blocked.len(), 1);
    assert_eq!(r.blocked[0].site.engine, Engine::Sp);
    assert_eq!(m.sync.sems[1], 3);
    assert_eq!(r.steps, 1 + 3 + 3);
}

#[test]
fn out_of_bounds_dma_names_operand_and_address() {
    let k = kernel([
        vec![],
        vec![],
        vec![],
        vec![],
        vec![direct2d((1, 96, 32), (0, 0, 0x40000), 2, 32, 0)],
    ]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "out-of-bounds");
    let t = f.to_string();
    assert!(t.contains("sp bundle #0"), "{t}");
    assert!(t.contains("operand `dma.from`"), "{t}");
    assert!(
        t.contains("DRAM variable `x`: bytes 96..160 are outside its 128 bytes"),
        "{t}"
    );
}

#[test]
fn unknown_opcode_is_not_simulated() {
    // SORT (0x96) on POOL has no value model.
    let k = kernel([vec![], vec![], vec![bundle(0x96)], vec![], vec![]]);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "not-simulated");
    let t = f.to_string();
    assert!(t.contains("pool bundle #0 (opcode 0x96"), "{t}");
    assert!(
        t.contains("SORT (opcode 0x96) is not simulated on the pool engine"),
        "{t}"
    );
}

#[test]
fn dma_trigger_runs_the_named_block() {
    use tpbsim_sim::machine::dma::{DmaDesc, DmaMem, DmaSide};
    use tpbsim_sim::machine::sync::{Update, UpdateOp, When};
    use tpbsim_sim::machine::{DmaBlockSpec, DmaEntrySpec, DmaQueue};
    let side = |mem, addr| DmaSide {
        mem,
        addr,
        format: NumFormat::Float32,
        dims: vec![(4, 32)],
    };
    let entry = |from, to, sem: Option<u8>| DmaEntrySpec {
        desc: Ok(DmaDesc { from, to }),
        sem: sem.map(|idx| Update {
            idx,
            op: UpdateOp::SemInc,
            when: When::Complete,
        }),
        event: None,
    };
    let mut trig = bundle(0xC1);
    trig.0[12..16].copy_from_slice(b"io\0\0");
    trig.set_u32(48, 7);
    let mut k = kernel([
        vec![with_wait(bundle(0xA4), 5, 5, 1)],
        vec![],
        vec![],
        vec![],
        vec![trig],
    ]);
    k.queues[Engine::Sp as usize] = vec![DmaQueue {
        name: "io".into(),
        semaphore: Some(6),
        blocks: vec![
            DmaBlockSpec {
                id: 3,
                entries: vec![entry(
                    side(DmaMem::Dram(2), 0),
                    side(DmaMem::Dram(1), 0),
                    None,
                )],
            },
            DmaBlockSpec {
                id: 7,
                entries: vec![
                    entry(
                        side(DmaMem::Dram(1), 0),
                        side(DmaMem::OnChip, 0x40000),
                        None,
                    ),
                    entry(
                        side(DmaMem::OnChip, 0x40000),
                        side(DmaMem::Dram(2), 0),
                        Some(5),
                    ),
                ],
            },
        ],
    }];
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let data: Vec<u8> = (0..128u8).rev().collect();
    m.set_var("x", &data).unwrap();
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.var("y").unwrap(), &data[..]);
    assert_eq!((m.sync.sems[5], m.sync.sems[6]), (1, 1));
    assert_eq!(st.dma_transfers, 2);
    // An unknown block is a fault naming the queue's blocks.
    k.streams[Engine::Sp as usize][0].set_u32(48, 4);
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(
        f.to_string()
            .contains("block 4 of queue `io`, whose blocks are [3, 7]"),
        "{f}"
    );
}

#[test]
fn direct2d_elem_size_zero_moves_65536_bytes() {
    // An element size of 0 is a 65536-byte chunk: x (64 KiB) to SBUF partition 0 and back to
    // y, one chunk per side.
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![16384],
        size: 65536,
        init: None,
    };
    let mut streams: [Vec<Bundle>; 5] = Default::default();
    streams[Engine::Sp as usize] = vec![
        direct2d((1, 0, 0), (0, 0, 0), 1, 0, 0),
        direct2d((0, 0, 0), (2, 0, 0), 1, 0, 0),
    ];
    let k = Kernel {
        gen: Some(Gen::V3),
        streams,
        vars: vec![var(1, "x", VarKind::Input), var(2, "y", VarKind::Output)],
        queues: Default::default(),
        world: 1,
        ..Kernel::default()
    };
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let data: Vec<u8> = (0..65536u32).map(|i| (i * 7 + i / 256) as u8).collect();
    m.set_var("x", &data).unwrap();
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(st.dma_bytes, 2 * 65536);
    assert_eq!(m.var("y").unwrap(), &data[..]);
}

/// `p` written as a NEFF, read back and loaded as the simulator loads a file: the kernel, or
/// the first error on the way.
fn load_package(p: &tpbsim_sim::machine::pack::Package) -> Result<Kernel, String> {
    use tpbsim_neff::{Neff, ReadOptions};
    use tpbsim_sim::machine::load::kernel_from_neff;
    p.to_neff()
        .map_err(|e| e.to_string())
        .and_then(|n| n.to_bytes().map_err(|e| e.to_string()))
        .and_then(|b| Neff::from_bytes(&b, &ReadOptions::default()).map_err(|e| e.to_string()))
        .and_then(|n| kernel_from_neff(&n).map_err(|e| e.to_string()))
}

#[test]
fn a_sidecar_size_of_zero_is_refused_at_load() {
    use tpbsim_neff::{DmaEntry, VarKind as NeffKind, VarRef};
    use tpbsim_sim::machine::pack::Package;
    let mut p = Package::new("size0", Gen::V3);
    p.onchip();
    p.queue("in", None);
    p.var("x", NeffKind::Input, NumFormat::Float32, &[4, 8], None)
        .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![DmaEntry::copy(
            VarRef::Name("x".into()),
            VarRef::Name("state_buffer".into()),
            vec![4, 0],
        )],
    );
    let err = load_package(&p).expect_err("a transfer dimension of size 0 is refused");
    assert!(err.contains("size 0"), "{err}");
    assert!(err.contains("_sizes[1]"), "{err}");
}

#[test]
fn a_v2_transposed_ldweights_is_not_simulated() {
    // CoreV2's transposed load: 0x80 in the source ADDR4's top byte (+0x13).
    let mut b = bundle(0x01);
    b.set_u32(16, 0x8000_0100);
    b.set_u16(20, 1);
    b.set_u16(22, 1);
    b.set_u16(24, 1);
    b.set_u16(26, 128);
    b.set_u16(28, 1);
    b.set_u16(30, 1);
    b.set_u8(32, 0x06); // bf16
    b.set_u8(38, 128);
    b.set_u8(39, 128);
    b.set_u8(44, 0x0F);
    b.set_u8(45, 0x0F);
    b.set_u8(46, 0x10);
    let mut k = kernel([vec![b], vec![], vec![], vec![], vec![]]);
    k.gen = Some(Gen::V2);
    let mut m = Machine::new(&k, Gen::V2).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "not-simulated", "{f}");
    assert!(f.to_string().contains("v2 transposed LdWeights"), "{f}");
}

#[test]
fn variable_types_load_as_their_kind_and_an_unknown_type_is_refused() {
    use tpbsim_neff::{DmaEntry, VarKind as NeffKind, VarRef};
    use tpbsim_sim::machine::pack::Package;
    let load = |kind: NeffKind| {
        let mut p = Package::new("kinds", Gen::V3);
        p.var("x", NeffKind::Input, NumFormat::Float32, &[4], None)
            .unwrap();
        p.var("c", kind, NumFormat::Float32, &[4], Some(&[0x3f; 16]))
            .unwrap();
        let sb = p.onchip();
        p.queue("in", None);
        let e = DmaEntry::copy(VarRef::Name("x".into()), sb, vec![1, 4]);
        p.block(Engine::Sp, "in", 0, vec![e]);
        load_package(&p)
    };
    for (given, loaded) in [
        (NeffKind::Input, VarKind::Input),
        (NeffKind::Output, VarKind::Output),
        (NeffKind::File, VarKind::File),
        (NeffKind::TmpBuf, VarKind::Other),
    ] {
        let k = load(given.clone()).unwrap_or_else(|e| panic!("{given:?}: {e}"));
        let c = k.vars.iter().find(|v| v.name == "c").unwrap();
        assert_eq!(c.kind, loaded, "{given:?}");
        assert_eq!(c.init.as_deref(), Some(&[0x3f; 16][..]), "{given:?}");
    }
    let err = load(NeffKind::Other("mystery".into())).expect_err("an unknown type is refused");
    assert!(err.contains("variable `c`"), "{err}");
    assert!(err.contains("unknown type `mystery`"), "{err}");
}
