//! The synchronisation checks on the testdata kernels: each planted bug is reported exactly
//! (engine, bundle, mnemonic, operand, address range, missing synchronisation), the clean
//! kernels report nothing, and the reports are the same under different legal interleavings.

use std::path::PathBuf;

use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::race::{AccessKind, Finding, FindingKind, Memory};
use tpbsim_sim::machine::sched::Order;
use tpbsim_sim::machine::waitfor::SyncRef;
use tpbsim_sim::machine::{Fault, Kernel, Machine, RunOptions};

fn kernel(name: &str) -> Kernel {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/kernels/{name}.neff"));
    let n = Neff::read(&p, &ReadOptions::default()).unwrap();
    kernel_from_neff(&n).unwrap()
}

fn check(k: &Kernel, order: Order) -> Result<Vec<Finding>, Fault> {
    let mut m = Machine::new(k, k.gen.unwrap_or(Gen::V3)).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    m.enable_race_check();
    m.run(
        &RunOptions {
            order,
            ..Default::default()
        },
        &mut |_| {},
    )?;
    Ok(m.race_findings())
}

/// Findings under round-robin, asserted equal under eight seeded interleavings (more with
/// `TPBSIM_SCHEDULES`).
fn findings(name: &str) -> Vec<Finding> {
    let k = kernel(name);
    let base = check(&k, Order::RoundRobin).unwrap();
    let n: u64 = std::env::var("TPBSIM_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    for seed in 0..n {
        let f = check(&k, Order::Seeded(seed)).unwrap();
        assert_eq!(f, base, "{name}: seed {seed} changes the findings");
    }
    base
}

const CLEAN: [&str; 8] = [
    "vadd",
    "counter_join",
    "credit_handoff",
    "iadd_pool",
    "softmax",
    "rmsnorm",
    "matmul_bf16",
    "mx_matmul",
];

#[test]
fn clean_kernels_report_nothing_under_any_schedule() {
    for name in CLEAN {
        let f = findings(name);
        assert!(f.is_empty(), "{name}: {f:#?}");
    }
}

#[test]
fn the_checker_is_off_unless_asked() {
    let k = kernel("race_dma_wait");
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert!(m.race_findings().is_empty());
}

fn race(
    f: &Finding,
) -> (
    &tpbsim_sim::machine::race::RaceSide,
    &tpbsim_sim::machine::race::RaceSide,
    &str,
) {
    match &f.kind {
        FindingKind::Race { a, b, missing } => (a, b, missing.as_str()),
        other => panic!("not a race: {other:?}"),
    }
}

#[test]
fn race_with_an_input_dma_is_reported_precisely() {
    let f = findings("race_dma_wait");
    assert_eq!(f.len(), 1, "{f:#?}");
    let (a, b, missing) = race(&f[0]);
    assert_eq!(a.origin.engine, Engine::Dve);
    assert_eq!(a.origin.index, 0);
    assert_eq!(a.origin.agent, "dve");
    assert_eq!(a.origin.mnemonic, "TENSOR_TENSOR_ARITH_OP");
    assert_eq!(a.origin.operand, "src1");
    assert_eq!(a.kind, AccessKind::Read);
    assert_eq!(b.origin.engine, Engine::Sp);
    assert_eq!(b.origin.index, 0);
    assert_eq!(b.origin.agent, "sp:in");
    assert_eq!(b.origin.mnemonic, "PSEUDO_DMATRIGGER");
    assert_eq!(b.origin.operand, "in[0].desc[1].to");
    assert_eq!(b.kind, AccessKind::Write);
    assert_eq!(f[0].extent.memory, Memory::Sbuf);
    assert_eq!(f[0].extent.partitions, Some((0, 128)));
    assert_eq!(f[0].extent.bytes, (0x1000, 0x1800));
    assert_eq!(f[0].extent.address, Some(0x1000));
    assert_eq!(f[0].extent.count, 128 * 2048);
    assert_eq!(
        b.next_release.as_deref(),
        Some("semaphore 1 += 1 (in[0].desc[1])")
    );
    assert!(
        missing.contains("DMA queue sp:in (in[0].desc[1].to) next updates semaphore 1 += 1 (in[0].desc[1]), which dve bundle #0 does not wait for"),
        "{missing}"
    );
}

#[test]
fn race_between_engines_is_reported_precisely() {
    let f = findings("race_engines");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_act_copy_race(&f[0]);
}

/// ACT bundle #0's write of its copy of x (SBUF 0x2000..0x2800) × DVE bundle #0's read of it
/// as `src0`, with DVE not waiting for ACT's semaphore 3.
fn assert_act_copy_race(f: &Finding) {
    let (a, b, missing) = race(f);
    assert_eq!(
        (
            a.origin.engine,
            a.origin.index,
            a.origin.mnemonic.as_str(),
            a.origin.operand.as_str(),
            a.kind
        ),
        (Engine::Act, 0, "ACTIVATE", "dst", AccessKind::Write)
    );
    assert_eq!(
        (
            b.origin.engine,
            b.origin.index,
            b.origin.mnemonic.as_str(),
            b.origin.operand.as_str(),
            b.kind
        ),
        (
            Engine::Dve,
            0,
            "TENSOR_TENSOR_ARITH_OP",
            "src0",
            AccessKind::Read
        )
    );
    assert_eq!(f.extent.partitions, Some((0, 128)));
    assert_eq!(f.extent.bytes, (0x2000, 0x2800));
    assert!(
        missing.contains("act bundle #0 next updates semaphore 3 += 1 (act bundle #0), which dve bundle #0 does not wait for"),
        "{missing}"
    );
}

#[test]
fn a_wait_for_one_of_two_unordered_increments_races_under_every_schedule() {
    // `findings` asserts the same report under round-robin and every seeded interleaving,
    // including those in which ACT's increment is the one DVE observes first.
    let f = findings("race_counter_partial");
    assert_eq!(f.len(), 1, "{f:#?}");
    // The same report as race_engines: ACT's write of its copy × DVE's read of `src0`.
    assert_act_copy_race(&f[0]);
    assert_eq!(f[0].extent.memory, Memory::Sbuf);
    assert_eq!(f[0].extent.count, 128 * 2048);
    // Round-robin issues ACT's increment before SP triggers `in2`: DVE observed ACT's
    // increment, and only the schedule-independent rule reports the race (also without the L2
    // validator, which `findings` runs).
    let k = kernel("race_counter_partial");
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    m.enable_race_check();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.race_findings(), f);
}

#[test]
fn a_credit_hand_off_is_not_a_race() {
    // DVE decrements semaphore 3 before its second wait for >= 1: only ACT's second increment,
    // made after ACT's overwrite of the tile, can satisfy it. The resolution must not lower
    // that wait to ACT's first increment (which would report ACT bundle #1's write against DVE
    // bundle #2's read).
    let f = findings("credit_handoff");
    assert!(f.is_empty(), "{f:#?}");
    // The output is the same under every interleaving: the kernel really is race-free.
    let k = kernel("credit_handoff");
    let out = |order| {
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        m.run(
            &RunOptions {
                order,
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap();
        m.var("out").unwrap().to_vec()
    };
    let base = out(Order::RoundRobin);
    for seed in 0..8 {
        assert_eq!(out(Order::Seeded(seed)), base, "seed {seed}");
    }
}

#[test]
fn uninitialised_read_is_reported_precisely() {
    let f = findings("uninit_read");
    assert_eq!(f.len(), 1, "{f:#?}");
    let FindingKind::UninitRead { at } = &f[0].kind else {
        panic!("{f:#?}")
    };
    assert_eq!(
        (
            at.engine,
            at.index,
            at.mnemonic.as_str(),
            at.operand.as_str()
        ),
        (Engine::Dve, 0, "TENSOR_TENSOR_ARITH_OP", "src1")
    );
    assert_eq!(f[0].extent.memory, Memory::Sbuf);
    assert_eq!(f[0].extent.partitions, Some((0, 128)));
    assert_eq!(f[0].extent.bytes, (0x1000, 0x1800));
}

#[test]
fn psum_accumulation_onto_an_unzeroed_bank_is_reported() {
    let f = findings("uninit_psum_accumulate");
    assert_eq!(f.len(), 1, "{f:#?}");
    let FindingKind::PsumUnzeroed { at, last } = &f[0].kind else {
        panic!("{f:#?}")
    };
    assert_eq!(
        (
            at.engine,
            at.index,
            at.mnemonic.as_str(),
            at.operand.as_str()
        ),
        (Engine::Pe, 1, "MATMUL", "dst")
    );
    assert_eq!(*last, None);
    assert_eq!(f[0].extent.memory, Memory::Psum);
    assert_eq!(f[0].extent.partitions, Some((0, 128)));
    assert_eq!(f[0].extent.bytes, (0, 512));
    assert_eq!(f[0].extent.address, Some(0x0200_0000));
}

fn deadlock(name: &str, order: Order) -> tpbsim_sim::machine::fault::DeadlockReport {
    match check(&kernel(name), order) {
        Err(Fault::Deadlock(r)) => r,
        other => panic!("{name}: expected a deadlock, got {other:?}"),
    }
}

#[test]
fn deadlock_cycle_is_named() {
    for order in [Order::RoundRobin, Order::Seeded(3)] {
        let r = deadlock("deadlock_cycle", order);
        let c = r.cycle.as_ref().expect("a cycle");
        let c: Vec<(Engine, SyncRef)> = c.iter().map(|e| (e.engine, e.on)).collect();
        assert_eq!(
            c,
            vec![
                (Engine::Act, SyncRef::Semaphore { index: 5 }),
                (Engine::Dve, SyncRef::Semaphore { index: 6 }),
            ]
        );
        let sp = r
            .blocked
            .iter()
            .find(|b| b.site.engine == Engine::Sp)
            .unwrap();
        assert_eq!(sp.on, Some(SyncRef::Semaphore { index: 2 }));
        assert_eq!(sp.producers.len(), 1);
        assert_eq!(
            (sp.producers[0].engine, sp.producers[0].index),
            (Engine::Dve, 1)
        );
        let text = Fault::Deadlock(r).to_string();
        assert!(
            text.contains("wait-for cycle: act → semaphore 5 → dve → semaphore 6 → act"),
            "{text}"
        );
    }
}

#[test]
fn deadlock_missing_producer_is_named() {
    let r = deadlock("deadlock_missing", Order::RoundRobin);
    assert_eq!(r.cycle, None);
    let dve = r
        .blocked
        .iter()
        .find(|b| b.site.engine == Engine::Dve)
        .unwrap();
    assert_eq!(dve.on, Some(SyncRef::Semaphore { index: 1 }));
    assert!(dve.producers.is_empty());
    assert!(dve
        .waiting_for
        .contains("semaphore 1 >= 3 (current value 2)"));
    let text = Fault::Deadlock(r).to_string();
    assert!(
        text.contains("missing producer: dve bundle #0 waits on semaphore 1, which no unfinished engine or DMA queue updates"),
        "{text}"
    );
}

#[test]
fn a_sidecar_entry_sets_its_event_on_completion() {
    // vadd with an event on the second input descriptor: the event is set once the block has
    // run, with and without the race checker (which releases it with the transfer's clock).
    let mut k = kernel("vadd");
    let q = k.queues[Engine::Sp as usize]
        .iter_mut()
        .find(|q| q.name == "in")
        .unwrap();
    q.blocks[0].entries[1].event = Some(9);
    for checked in [false, true] {
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        if checked {
            m.enable_race_check();
        }
        assert!(!m.sync.event(9));
        m.run(&RunOptions::default(), &mut |_| {}).unwrap();
        assert!(m.sync.event(9), "checked {checked}");
        assert!(!m.sync.event(8) && !m.sync.event(10));
    }
}
