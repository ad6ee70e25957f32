use super::*;
use crate::machine::pattern::{Dim, TensorPattern};
use crate::machine::sync::{Cmp, Operand};
use tpbsim_isa::Gen;

fn checker() -> (Checker, Geometry) {
    let g = Geometry::of(Gen::V3);
    let labels = ["pe", "act", "pool", "dve", "sp", "sp:in"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    (Checker::new(g, labels, BTreeMap::new()), g)
}

fn rows(g: &Geometry, offset: u32, bytes: u32) -> Resolved {
    Resolved::new(
        g,
        &TensorPattern::dense(g.sbuf_address(0, offset), 4, 4, bytes / 4),
    )
    .unwrap()
}

fn site(e: Engine, index: usize) -> Site {
    Site {
        engine: e,
        index,
        opcode: 0x41,
    }
}

/// Run `accesses` as bundle `index` of engine `e`.
fn bundle(c: &mut Checker, e: Engine, index: usize, accesses: Vec<ChipAccess>) {
    c.begin(e as Agent, site(e, index), "OP");
    let mut log = accesses;
    c.flush(&mut log).unwrap();
}

fn sem_ge(idx: u8, v: u32) -> Wait {
    Wait::Sem {
        idx,
        cmp: Cmp::Ge,
        rhs: Operand::Imm(v),
    }
}

#[test]
fn unordered_write_then_read_is_a_race_ordered_is_not() {
    let (mut c, g) = checker();
    let r = rows(&g, 0x100, 64);
    bundle(
        &mut c,
        Engine::Act,
        0,
        vec![
            ChipAccess::Operand("dst".into(), r.clone()),
            ChipAccess::Write(r.clone()),
        ],
    );
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src0".into(), r.clone()),
            ChipAccess::Read(r.clone()),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    let FindingKind::Race { a, b, missing } = &f[0].kind else {
        panic!("{f:?}")
    };
    assert_eq!(
        (a.origin.agent.as_str(), a.kind, a.origin.operand.as_str()),
        ("act", AccessKind::Write, "dst")
    );
    assert_eq!(
        (b.origin.agent.as_str(), b.kind, b.origin.operand.as_str()),
        ("dve", AccessKind::Read, "src0")
    );
    assert_eq!(f[0].extent.partitions, Some((0, 4)));
    assert_eq!(f[0].extent.bytes, (0x100, 0x140));
    assert_eq!(f[0].extent.count, 256);
    assert!(
        missing.contains("act bundle #0 makes no semaphore or event update"),
        "{missing}"
    );

    // The same with ACT releasing semaphore 3 at completion and DVE waiting for it.
    let (mut c, g) = checker();
    let r = rows(&g, 0x100, 64);
    let mut sync = SyncState::default();
    bundle(&mut c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
    let u = Update {
        idx: 3,
        op: UpdateOp::SemInc,
        when: When::Complete,
    };
    c.update(Engine::Act as Agent, &u, &mut sync, &[], 0.0, "act #0");
    c.acquire(Engine::Dve as Agent, &sem_ge(3, 1), &sync, &[]);
    bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(r.clone())]);
    assert!(c.findings().is_empty(), "{:?}", c.findings());
}

#[test]
fn a_release_before_the_access_does_not_cover_it() {
    // A `_READ` update releases before the bundle's accesses: a waiter is not ordered
    // after them.
    let (mut c, g) = checker();
    let r = rows(&g, 0, 16);
    let mut sync = SyncState::default();
    let u = Update {
        idx: 1,
        op: UpdateOp::SemInc,
        when: When::Read,
    };
    c.update(Engine::Act as Agent, &u, &mut sync, &[], 0.0, "act #0");
    bundle(&mut c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
    c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
    bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(r)]);
    assert_eq!(c.findings().len(), 1);
}

#[test]
fn a_counter_wait_acquires_only_the_updates_it_needs() {
    // The DMA queue writes two regions, incrementing semaphore 1 after each; a wait for
    // >= 1 is ordered after the first only.
    let (mut c, g) = checker();
    let q: Agent = 5;
    let mut sync = SyncState::default();
    let inc = Update {
        idx: 1,
        op: UpdateOp::SemInc,
        when: When::Complete,
    };
    c.begin(q, site(Engine::Sp, 0), "DMA");
    c.dma_access(
        q,
        "in[0].desc[0].to",
        Mem::Chip(Space::Sbuf, 0),
        0,
        64,
        AccessKind::Write,
    )
    .unwrap();
    c.update(q, &inc, &mut sync, &[], 0.0, "in[0].desc[0]");
    c.dma_access(
        q,
        "in[0].desc[1].to",
        Mem::Chip(Space::Sbuf, 0),
        64,
        128,
        AccessKind::Write,
    )
    .unwrap();
    c.update(q, &inc, &mut sync, &[], 0.0, "in[0].desc[1]");
    let one = Resolved::new(&g, &TensorPattern::dense(g.sbuf_address(0, 0), 1, 4, 32)).unwrap();
    c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
    bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(one.clone())]);
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].extent.bytes, (64, 128));
    let FindingKind::Race { b, .. } = &f[0].kind else {
        panic!()
    };
    assert_eq!(b.origin.operand, "in[0].desc[1].to");
    assert_eq!(
        b.next_release.as_deref(),
        Some("semaphore 1 += 1 (in[0].desc[1])")
    );
    // Waiting for >= 2 acquires both.
    c.acquire(Engine::Pool as Agent, &sem_ge(1, 2), &sync, &[]);
    bundle(&mut c, Engine::Pool, 0, vec![ChipAccess::Read(one)]);
    assert_eq!(c.findings().len(), 1, "{:#?}", c.findings());
}

#[test]
fn uninitialised_reads_and_psum_groups() {
    let (mut c, g) = checker();
    let r = rows(&g, 0x40, 32);
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src".into(), r.clone()),
            ChipAccess::Read(r),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kind_name(), "uninit-read");
    assert_eq!(f[0].extent.bytes, (0x40, 0x60));

    // PSUM: START zeroes and writes, END closes, a MID after it accumulates onto a closed
    // group.
    let (mut c, g) = checker();
    let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 2, 4, 8)).unwrap();
    let flags = |b| PsumFlags::from_wire(b).unwrap();
    let mm = |f: PsumFlags, zero: bool| {
        let mut v = vec![
            ChipAccess::Operand("dst".into(), p.clone()),
            ChipAccess::Accumulate(p.clone(), f),
        ];
        if zero {
            v.push(ChipAccess::Zero {
                space: Space::Psum,
                first: 0,
                count: 2,
                lo: 0,
                hi: 2048,
            });
        }
        v.push(ChipAccess::Read(p.clone()));
        v.push(ChipAccess::Write(p.clone()));
        v
    };
    bundle(&mut c, Engine::Pe, 0, mm(flags(1), true));
    bundle(&mut c, Engine::Pe, 1, mm(flags(0), false));
    bundle(&mut c, Engine::Pe, 2, mm(flags(2), false));
    assert!(c.findings().is_empty(), "{:?}", c.findings());
    bundle(&mut c, Engine::Pe, 3, mm(flags(0), false));
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    let FindingKind::PsumUnzeroed { at, last } = &f[0].kind else {
        panic!()
    };
    assert_eq!(at.index, 3);
    assert_eq!(last.as_ref().map(|o| o.index), Some(2));
    // BEGIN_ACCUM only needs written bytes; never-written bytes are reported.
    let (mut c, g) = checker();
    let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 1, 4, 4)).unwrap();
    c.begin(0, site(Engine::Pe, 0), "MATMUL");
    c.flush(&mut vec![
        ChipAccess::Accumulate(p.clone(), flags(4)),
        ChipAccess::Read(p.clone()),
        ChipAccess::Write(p),
    ])
    .unwrap();
    let f = c.findings();
    assert_eq!(f.len(), 1);
    assert!(matches!(
        &f[0].kind,
        FindingKind::PsumUnzeroed { last: None, .. }
    ));
}

#[test]
fn a_declared_read_modify_write_of_the_destination_is_checked_for_uninitialised_bytes() {
    let (mut c, g) = checker();
    let r = rows(&g, 0x200, 64);
    let half = rows(&g, 0x200, 32);
    // DVE wrote the first half earlier.
    bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Write(half)]);
    // A gather of the destination that the operation does not use (predicated lanes):
    // not a use of the bytes.
    let preserve = |c: &mut Checker, i| {
        bundle(
            c,
            Engine::Dve,
            i,
            vec![
                ChipAccess::Operand("dst".into(), r.clone()),
                ChipAccess::Read(r.clone()),
                ChipAccess::Write(r.clone()),
            ],
        )
    };
    preserve(&mut c, 1);
    assert!(c.findings().is_empty(), "{:?}", c.findings());
    // The same bytes read by an operation that accumulates into its destination.
    let (mut c, g) = checker();
    let r = rows(&g, 0x200, 64);
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![ChipAccess::Write(rows(&g, 0x200, 32))],
    );
    bundle(
        &mut c,
        Engine::Dve,
        1,
        vec![
            ChipAccess::Operand("dst".into(), r.clone()),
            ChipAccess::ReadModifyWrite(r.clone()),
            ChipAccess::Read(r.clone()),
            ChipAccess::Write(r),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    let FindingKind::UninitRead { at } = &f[0].kind else {
        panic!("{f:?}")
    };
    assert_eq!((at.index, at.operand.as_str()), (1, "dst"));
    assert_eq!(f[0].extent.bytes, (0x220, 0x240));
    assert_eq!(f[0].extent.count, 4 * 32);
}

#[test]
fn psum_accumulation_onto_unwritten_bytes_is_one_finding() {
    // The matmul's read of its PSUM destination is a read-modify-write: its uninitialised
    // bytes are reported once, as the PSUM finding.
    let (mut c, g) = checker();
    let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 2, 4, 8)).unwrap();
    bundle(
        &mut c,
        Engine::Pe,
        0,
        vec![
            ChipAccess::Operand("dst".into(), p.clone()),
            ChipAccess::Accumulate(p.clone(), PsumFlags::from_wire(0).unwrap()),
            ChipAccess::Read(p.clone()),
            ChipAccess::Write(p),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind_name(), "psum-unzeroed");
}

#[test]
fn operand_runs_are_merged_before_the_shadow_update() {
    let g = Geometry::of(Gen::V3);
    let at = |dims: &[Dim]| {
        Resolved::new(
            &g,
            &TensorPattern::new(g.sbuf_address(0, 0x100), 2, 4, dims),
        )
        .unwrap()
    };
    // A 4×4 transpose visits 16 four-byte runs that cover one range.
    let t = at(&[Dim::new(4, 4), Dim::new(1, 4)]);
    let mut n = 0;
    t.for_each_run_in_partition(|_, _| n += 1);
    assert_eq!(n, 16);
    assert_eq!(merged_runs(&t), vec![(0x100, 0x140)]);
    // A broadcast repeats one run; a strided pattern keeps its gaps.
    assert_eq!(merged_runs(&at(&[Dim::new(0, 8)])), vec![(0x100, 0x104)]);
    assert_eq!(
        merged_runs(&at(&[Dim::new(2, 3)])),
        vec![(0x100, 0x104), (0x108, 0x10C), (0x110, 0x114)]
    );
    // A reversed pattern visits its runs from the last byte down: one range all the same.
    let reversed = Resolved::new(
        &g,
        &TensorPattern::new(g.sbuf_address(0, 0x10C), 2, 4, &[Dim::new(-1, 4)]),
    )
    .unwrap();
    assert_eq!(merged_runs(&reversed), vec![(0x100, 0x110)]);
    // One shadow segment per partition after the transposed write, and a later read of a
    // part of it by another engine is one race over exactly the bytes read.
    let (mut c, _) = checker();
    bundle(
        &mut c,
        Engine::Act,
        0,
        vec![
            ChipAccess::Operand("dst".into(), t.clone()),
            ChipAccess::Write(t),
        ],
    );
    assert_eq!((c.sbuf[0].0.len(), c.sbuf[1].0.len()), (1, 1));
    let part = at(&[Dim::new(1, 4)]);
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src".into(), part.clone()),
            ChipAccess::Read(part),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].extent.bytes, (0x100, 0x110));
    assert_eq!(f[0].extent.count, 2 * 16);
}

#[test]
fn interval_map_splits_and_coalesces() {
    let mut m = IMap::default();
    let cell = |o| Cell {
        w: Some(Acc {
            agent: 0,
            epoch: 1,
            origin: o,
        }),
        ..Cell::default()
    };
    m.0.insert(0, (100, cell(1)));
    m.split(40);
    m.split(60);
    assert_eq!(m.keys_in(0, 100), vec![0, 40, 60]);
    assert_eq!(m.0[&40].0, 60);
    m.coalesce(40);
    assert_eq!(m.keys_in(0, 100), vec![0]);
    assert_eq!(m.0[&0].0, 100);
    m.0.get_mut(&0).unwrap().0 = 40;
    m.0.insert(40, (100, cell(2)));
    m.coalesce(40);
    assert_eq!(m.keys_in(0, 100), vec![0, 40]);
}

/// Live segments of every shadow map, counted from the maps themselves.
fn counted_segments(c: &Checker) -> u64 {
    c.sbuf
        .iter()
        .chain(&c.psum)
        .chain(c.dram.values())
        .map(|m| m.0.len() as u64)
        .sum()
}

#[test]
fn shadow_segments_are_counted_as_they_are_created_and_merged() {
    let (mut c, _) = checker();
    let q: Agent = 5;
    c.begin(q, site(Engine::Sp, 0), "DMA");
    // Every other byte of a variable, written and then read by another agent, and reads of
    // on-chip gaps: the count follows the maps after every update.
    for i in 0..64u32 {
        c.dma_access(q, "w", Mem::Dram(7), 2 * i, 2 * i + 1, AccessKind::Write)
            .unwrap();
        assert_eq!(c.shadow_segments(), counted_segments(&c));
    }
    assert_eq!(c.shadow_segments(), 64);
    c.dma_access(q, "r", Mem::Chip(Space::Sbuf, 3), 10, 20, AccessKind::Read)
        .unwrap();
    c.dma_access(4, "r", Mem::Dram(7), 1, 100, AccessKind::Read)
        .unwrap();
    assert_eq!(c.shadow_segments(), counted_segments(&c));
    // A write over the whole variable merges its segments into one: they are freed.
    c.dma_access(q, "w", Mem::Dram(7), 0, 128, AccessKind::Write)
        .unwrap();
    assert_eq!(c.shadow_segments(), counted_segments(&c));
    assert_eq!(c.shadow_segments(), 2);
    // Reads inside the written segment split it: at both ends, at the start only, at the
    // end only.
    for (lo, hi, live) in [(10, 20, 4), (50, 128, 5), (0, 5, 6)] {
        c.dma_access(4, "r", Mem::Dram(7), lo, hi, AccessKind::Read)
            .unwrap();
        assert_eq!(c.shadow_segments(), counted_segments(&c), "{lo}..{hi}");
        assert_eq!(c.shadow_segments(), live, "{lo}..{hi}");
    }
}

#[test]
fn a_shadow_update_past_its_cap_stops_as_it_creates_segments() {
    let (mut c, _) = checker();
    let q: Agent = 5;
    c.begin(q, site(Engine::Sp, 0), "DMA");
    c.set_segment_cap(10);
    for i in 0..10u32 {
        c.dma_access(q, "w", Mem::Dram(1), 2 * i, 2 * i + 1, AccessKind::Write)
            .unwrap();
    }
    let e = c
        .dma_access(q, "w", Mem::Dram(1), 40, 41, AccessKind::Write)
        .unwrap_err();
    assert_eq!(e, ShadowFull { segments: 11 });
    // A read over the ten segments needs their ten gaps: refused before it creates any.
    let e = c
        .dma_access(4, "r", Mem::Dram(1), 0, 20, AccessKind::Read)
        .unwrap_err();
    assert_eq!(e, ShadowFull { segments: 20 });
    assert_eq!(c.shadow_segments(), counted_segments(&c));
    assert_eq!(c.shadow_segments(), 10);
    // A write that merges segments needs no room.
    c.dma_access(q, "w", Mem::Dram(1), 0, 20, AccessKind::Write)
        .unwrap();
    assert_eq!(c.shadow_segments(), 1);
    // A chip access is refused the same way through the bundle's log.
    c.set_segment_cap(1);
    let (_, g) = checker();
    c.begin(Engine::Act as Agent, site(Engine::Act, 0), "OP");
    let e = c
        .flush(&mut vec![ChipAccess::Write(rows(&g, 0, 64))])
        .unwrap_err();
    assert_eq!(e.segments, 2);
}

/// Engine `e` makes update `op` of semaphore or event `idx` as its bundle completes at `time`.
fn release(c: &mut Checker, sync: &mut SyncState, e: Engine, idx: u8, op: UpdateOp, time: f64) {
    let u = Update {
        idx,
        op,
        when: When::Complete,
    };
    c.update(e as Agent, &u, sync, &[], time, "its bundle");
}

#[test]
fn a_semaphore_keeps_its_last_updates_and_folds_the_oldest_half_into_its_base() {
    // POOL increments semaphore 1 `n` times and writes a tile just before increment `m`
    // (counted from 0); DVE waits for >= 1 and reads the tile. The wait needs only the first
    // increment: it is ordered after the write only when the history has folded the entries
    // up to the write's into its base.
    let history = SEM_HISTORY as u32;
    for (n, m, race) in [
        // SEM_HISTORY entries are kept: the wait acquires the first increment alone.
        (history, history / 2 - 1, true),
        // One more folds the oldest half (increments 0 .. SEM_HISTORY / 2) into the base,
        // which a wait that holds since it acquires whole.
        (history + 1, history / 2 - 1, false),
        (history + 1, history / 2, true),
    ] {
        let (mut c, g) = checker();
        let r = rows(&g, 0, 16);
        let mut sync = SyncState::default();
        for i in 0..n {
            if i == m {
                bundle(&mut c, Engine::Pool, 0, vec![ChipAccess::Write(r.clone())]);
            }
            release(&mut c, &mut sync, Engine::Pool, 1, UpdateOp::SemInc, 0.0);
        }
        c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
        bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(r)]);
        let f = c.findings();
        assert_eq!(
            f.len(),
            race as usize,
            "{n} increments, write before #{m}: {f:#?}"
        );
    }
}

#[test]
fn a_wait_that_holds_since_a_semaphore_write_acquires_the_writer_alone() {
    // POOL writes tile A and then semaphore 2 = 1; ACT writes tile B and then increments
    // semaphore 2. DVE's wait for >= 1 held since POOL's write: it is ordered after A, not
    // after B, which ACT's increment merely kept true.
    let (mut c, g) = checker();
    let (a, b) = (rows(&g, 0, 16), rows(&g, 0x100, 16));
    let mut sync = SyncState::default();
    bundle(&mut c, Engine::Pool, 0, vec![ChipAccess::Write(a.clone())]);
    release(
        &mut c,
        &mut sync,
        Engine::Pool,
        2,
        UpdateOp::SemWrite(Operand::Imm(1)),
        0.0,
    );
    bundle(&mut c, Engine::Act, 0, vec![ChipAccess::Write(b.clone())]);
    release(&mut c, &mut sync, Engine::Act, 2, UpdateOp::SemInc, 0.0);
    c.acquire(Engine::Dve as Agent, &sem_ge(2, 1), &sync, &[]);
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src0".into(), a.clone()),
            ChipAccess::Read(a),
            ChipAccess::Operand("src1".into(), b.clone()),
            ChipAccess::Read(b),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:#?}");
    let FindingKind::Race { a, b, .. } = &f[0].kind else {
        panic!("{f:#?}")
    };
    assert_eq!(
        (a.origin.agent.as_str(), a.kind, b.origin.agent.as_str()),
        ("act", AccessKind::Write, "dve")
    );
    assert_eq!(b.origin.operand, "src1");
    assert_eq!(f[0].extent.bytes, (0x100, 0x110));
}

#[test]
fn a_satisfied_wait_draws_its_flow_from_the_last_release_and_names_what_it_waited_for() {
    let (mut c, _) = checker();
    c.timeline = Some(crate::machine::timeline::Timeline::new(c.labels.clone()));
    let mut sync = SyncState::default();
    let flows = |c: &Checker| -> Vec<(Agent, f64, String)> {
        let t = c.timeline.as_ref().unwrap();
        t.pending_flows
            .iter()
            .map(|(a, s, n)| (*a, s.t, n.clone()))
            .collect()
    };
    release(&mut c, &mut sync, Engine::Act, 4, UpdateOp::SemInc, 3.0);
    let t = c.acquire(Engine::Dve as Agent, &sem_ge(4, 1), &sync, &[]);
    assert_eq!(t, 3.0);
    assert_eq!(
        flows(&c),
        [(Engine::Act as Agent, 3.0, "semaphore 4".to_string())]
    );
    // Event 2 set by ACT, then set again later by POOL: a wait for it comes from POOL's.
    release(&mut c, &mut sync, Engine::Act, 2, UpdateOp::EventSet, 5.0);
    release(&mut c, &mut sync, Engine::Pool, 2, UpdateOp::EventSet, 10.0);
    let w = Wait::Event {
        idx: 2,
        until: true,
        flip: false,
    };
    let t = c.acquire(Engine::Dve as Agent, &w, &sync, &[]);
    assert_eq!(t, 10.0);
    assert_eq!(
        flows(&c)[1],
        (Engine::Pool as Agent, 10.0, "event 2".to_string())
    );
}

/// Run `scenario` on a fresh checker and, as the machine does, replay it with the resolved
/// clocks imposed when the resolution lowers what some wait acquired: the findings that stand.
fn resolved_findings(scenario: impl Fn(&mut Checker, &Geometry)) -> Vec<Finding> {
    let (mut run, g) = checker();
    scenario(&mut run, &g);
    let Some(clocks) = run.resolve() else {
        return run.findings();
    };
    let (mut replay, g) = checker();
    replay.force(clocks);
    scenario(&mut replay, &g);
    assert!(run.same_sync(&replay));
    replay.findings()
}

#[test]
fn the_replay_with_resolved_clocks_reports_what_another_interleaving_exhibits() {
    // ACT writes a tile and increments semaphore 1; POOL increments it too, unordered. DVE
    // waits for >= 1 and reads the tile: in this run it observed ACT's increment, in another
    // it observes POOL's alone.
    let scenario = |c: &mut Checker, g: &Geometry| {
        let r = rows(g, 0, 16);
        let mut sync = SyncState::default();
        bundle(c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
        release(c, &mut sync, Engine::Act, 1, UpdateOp::SemInc, 0.0);
        release(c, &mut sync, Engine::Pool, 1, UpdateOp::SemInc, 0.0);
        c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
        bundle(c, Engine::Dve, 0, vec![ChipAccess::Read(r)]);
    };
    let (mut run, g) = checker();
    scenario(&mut run, &g);
    assert!(run.findings().is_empty(), "{:#?}", run.findings());
    let f = resolved_findings(scenario);
    assert_eq!(f.len(), 1, "{f:#?}");
    let FindingKind::Race { a, b, .. } = &f[0].kind else {
        panic!("{f:#?}")
    };
    assert_eq!(
        (a.origin.agent.as_str(), b.origin.agent.as_str()),
        ("act", "dve")
    );
}

#[test]
fn an_event_wait_on_its_one_setter_is_ordered_under_every_interleaving() {
    // ACT writes a tile and sets event 2; DVE waits for it and reads the tile: no race, and
    // the resolution keeps the clock the wait acquired.
    let scenario = |c: &mut Checker, g: &Geometry| {
        let r = rows(g, 0, 16);
        let mut sync = SyncState::default();
        bundle(c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
        release(c, &mut sync, Engine::Act, 2, UpdateOp::EventSet, 0.0);
        let w = Wait::Event {
            idx: 2,
            until: true,
            flip: false,
        };
        c.acquire(Engine::Dve as Agent, &w, &sync, &[]);
        bundle(c, Engine::Dve, 0, vec![ChipAccess::Read(r)]);
    };
    let (mut run, g) = checker();
    scenario(&mut run, &g);
    assert_eq!(run.resolve(), None);
    let f = resolved_findings(scenario);
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn an_mx_scale_write_records_its_slot_partitions_from_any_first_partition() {
    // A scale buffer from partition 8 over 36 partitions holds scales at partitions 8..12 and
    // 40..44 (scale row i at + (i & 3) + 32·(i >> 2)); only those are written.
    let (mut c, g) = checker();
    let s = Resolved::new(&g, &TensorPattern::dense(g.sbuf_address(8, 0x80), 36, 4, 1)).unwrap();
    bundle(
        &mut c,
        Engine::Act,
        0,
        vec![
            ChipAccess::Operand("dst.scale".into(), s.clone()),
            ChipAccess::Write(s.clone()),
        ],
    );
    let written: Vec<usize> = (0..c.sbuf.len())
        .filter(|&p| !c.sbuf[p].0.is_empty())
        .collect();
    assert_eq!(written, [8, 9, 10, 11, 40, 41, 42, 43]);
    // DVE reads the whole rectangle: it races with the slots' writes only.
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src".into(), s.clone()),
            ChipAccess::Read(s),
        ],
    );
    let f = c.findings();
    let races: Vec<_> = f.iter().filter(|f| f.kind_name() == "race").collect();
    assert_eq!(races.len(), 1, "{f:#?}");
    assert_eq!(races[0].extent.partitions, Some((8, 44)));
    assert_eq!(races[0].extent.count, 8 * 4);
}

#[test]
fn one_pair_of_bundles_racing_on_two_ranges_is_one_finding_covering_both() {
    let (mut c, g) = checker();
    let (r1, r2) = (rows(&g, 0x100, 64), rows(&g, 0x200, 8));
    bundle(
        &mut c,
        Engine::Act,
        0,
        vec![
            ChipAccess::Operand("dst".into(), r1.clone()),
            ChipAccess::Write(r1.clone()),
            ChipAccess::Operand("dst".into(), r2.clone()),
            ChipAccess::Write(r2.clone()),
        ],
    );
    bundle(
        &mut c,
        Engine::Dve,
        0,
        vec![
            ChipAccess::Operand("src0".into(), r1.clone()),
            ChipAccess::Read(r1),
            ChipAccess::Operand("src0".into(), r2.clone()),
            ChipAccess::Read(r2),
        ],
    );
    let f = c.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    // 4 partitions × 64 bytes and 4 partitions × 8 bytes, in one byte range over both.
    assert_eq!(f[0].extent.count, 4 * 64 + 4 * 8);
    assert_eq!(f[0].extent.bytes, (0x100, 0x208));
    assert_eq!(f[0].extent.partitions, Some((0, 4)));
}
