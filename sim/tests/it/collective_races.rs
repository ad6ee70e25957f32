//! The race check across ranks: a collective of a world runs on its own agent, reading its
//! input window when it issues and writing its output window when it completes, and its
//! completion updates release that agent's clock (docs/races.md, "Collectives").

use std::collections::BTreeMap;
use std::sync::Arc;

use tpbsim_isa::opcode_byte::{
    COMPARE_BRANCH, HALT, PSEUDO_DMA_DIRECT2D, PSEUDO_GID_LOAD, PSEUDO_SEND_RECV,
    PSEUDO_TRIGGER_COLLECTIVE,
};
use tpbsim_isa::{AluOp, Bundle, Dtype, Engine, Gen, NumFormat};
use tpbsim_sim::api::{self, RunConfig, RunOutput};
use tpbsim_sim::machine::cluster::SharedBytes;
use tpbsim_sim::machine::race::{AccessKind, Finding, FindingKind, Memory, RaceSide};
use tpbsim_sim::machine::{Kernel, Program, VarKind, VarSpec};

use super::collectives::{bundle, inc_on_complete, wait_ge};

/// Variable ids: the collective's input and output, and a second input.
const X: u32 = 3;
const Y: u32 = 4;
const Z: u32 = 5;
/// Elements of each variable (fp32).
const N: u64 = 32;
/// SBUF partition 1, offset 0.
const SBUF: u32 = 0x40000;

/// An all-reduce (sum, fp32) of all of `x` into `y` over replica group 0, incrementing
/// semaphore `sem` when it completes (the runtime's "increment on complete").
fn all_reduce(sem: u8) -> Bundle {
    let mut b = bundle(PSEUDO_TRIGGER_COLLECTIVE);
    b.set_u8(12, AluOp::ADD.0);
    b.set_u8(13, Dtype::FP32.0);
    b.set_u16(14, 0);
    b.set_u32(16, X);
    b.set_u32(20, Y);
    b.set_u64(24, N);
    b.set_u8(32, 1);
    inc_on_complete(b, sem)
}

/// DMA_DIRECT2D moving the whole of a variable (`N` fp32, as 4 rows of 32 bytes) from
/// `(var, addr)` to `(var, addr)` (var 0: on chip), adding `inc` to semaphore `sem` when done.
fn direct(src: (u32, u32), dst: (u32, u32), sem: u8, inc: u8) -> Bundle {
    let mut b = bundle(PSEUDO_DMA_DIRECT2D);
    b.set_u8(13, sem);
    b.set_u8(14, inc);
    for (base, (var, addr)) in [(16usize, src), (40, dst)] {
        let step: u32 = if var == 0 { 0x40000 } else { 32 };
        b.set_u32(base, addr);
        b.set_u32(base + 4, var);
        b.set_u8(base + 7, 0x10);
        b.set_u32(base + 12, step);
        b.set_u16(base + 16, 1);
        b.set_u16(base + 18, 4);
        b.set_u16(base + 20, 32);
    }
    b.set_u8(62, 0x0A);
    b.set_u8(63, 0x0A);
    b
}

/// A SEND_RECV leg: a send of all of `x` to `peer`, or a receive of its bytes into `y`.
fn send_recv(send: bool, peer: u64) -> Bundle {
    let mut b = bundle(PSEUDO_SEND_RECV);
    b.set_u32(12, if send { X } else { Y });
    b.set_u64(16, peer);
    b.set_u8(24, send as u8);
    b.set_u64(56, N * 4);
    b
}

fn var(id: u32, name: &str, kind: VarKind) -> VarSpec {
    VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![N as usize],
        size: N * 4,
        init: None,
    }
}

/// A program over `x`, `z` (inputs) and `y` (output) of the given streams (PE, ACT, POOL,
/// DVE, SP), its collectives over one group of `ranks`.
fn program(streams: [Vec<Bundle>; 5], ranks: u32) -> Program {
    Program::single(Kernel {
        gen: Some(Gen::V3),
        streams,
        vars: vec![
            var(X, "x", VarKind::Input),
            var(Y, "y", VarKind::Output),
            var(Z, "z", VarKind::Input),
        ],
        world: ranks as usize,
        replica_groups: vec![(0..ranks).collect()],
        ..Kernel::default()
    })
}

fn checked() -> RunConfig {
    RunConfig {
        check_races: true,
        ..RunConfig::default()
    }
}

/// Run `p` as a world of `ranks` ranks under `cfg`, every input holding distinct values.
fn run_world(p: &Program, ranks: u32, cfg: &RunConfig) -> Vec<RunOutput> {
    let data = |r: u32, k: u32| -> SharedBytes {
        Arc::new(
            (0..N as u32)
                .flat_map(|i| ((r * 100 + k * 10 + i) as f32).to_le_bytes())
                .collect::<Vec<u8>>(),
        )
    };
    let inputs: Vec<BTreeMap<String, SharedBytes>> = (0..ranks)
        .map(|r| BTreeMap::from([("x".to_string(), data(r, 1)), ("z".to_string(), data(r, 2))]))
        .collect();
    api::run_world_schedule(p, Gen::V3, &inputs, cfg, 0, &|_, _, _| {}).expect("the world runs")
}

/// The sides of a race finding, when `f` is one.
fn race(f: &Finding) -> Option<(&RaceSide, &RaceSide)> {
    match &f.kind {
        FindingKind::Race { a, b, .. } => Some((a, b)),
        _ => None,
    }
}

/// The side of `(a, b)` whose agent is `agent`.
fn side<'f>(sides: (&'f RaceSide, &'f RaceSide), agent: &str) -> Option<&'f RaceSide> {
    [sides.0, sides.1]
        .into_iter()
        .find(|s| s.origin.agent == agent)
}

/// Assert that every rank found exactly one finding, a race on DRAM `mem` between the
/// collective of PE bundle 0 (`operand`, `kind`) and `other` (agent, operand, kind).
fn assert_one_race(
    outs: &[RunOutput],
    mem: &str,
    (operand, kind): (&str, AccessKind),
    other: (&str, &str, AccessKind),
) {
    for (r, o) in outs.iter().enumerate() {
        assert_eq!(o.findings.len(), 1, "rank {r}: {:#?}", o.findings);
        let f = &o.findings[0];
        assert_eq!(f.extent.memory, Memory::Dram(mem.into()), "rank {r}");
        assert_eq!(f.extent.count, N * 4, "rank {r}: the whole window");
        let sides = race(f).unwrap_or_else(|| panic!("rank {r}: not a race: {f:?}"));
        let c = side(sides, "pe:collective#0")
            .unwrap_or_else(|| panic!("rank {r}: no collective side: {f:?}"));
        assert_eq!(
            (c.origin.engine, c.origin.index),
            (Engine::Pe, 0),
            "rank {r}"
        );
        assert_eq!(
            (c.origin.operand.as_str(), c.kind),
            (operand, kind),
            "rank {r}"
        );
        let o = side(sides, other.0)
            .unwrap_or_else(|| panic!("rank {r}: no side of {}: {f:?}", other.0));
        assert_eq!(
            (o.origin.operand.as_str(), o.kind),
            (other.1, other.2),
            "rank {r}"
        );
    }
}

fn assert_clean(outs: &[RunOutput]) {
    for (r, o) in outs.iter().enumerate() {
        assert!(o.findings.is_empty(), "rank {r}: {:#?}", o.findings);
    }
}

/// PE all-reduces x into y (semaphore 2 on completion); SP waits for it and copies y on chip.
fn waiting_consumer() -> Program {
    program(
        [
            vec![all_reduce(2)],
            vec![],
            vec![],
            vec![],
            vec![wait_ge(direct((Y, 0), (0, SBUF), 0, 0), 2, 1)],
        ],
        2,
    )
}

#[test]
fn a_consumer_that_waits_for_the_completion_semaphore_is_clean() {
    let p = waiting_consumer();
    let outs = run_world(&p, 2, &checked());
    assert_clean(&outs);
    // The all-reduce ran: y is the sum of both ranks' x.
    let y = |o: &RunOutput| o.outputs["y"][4..8].to_vec();
    assert_eq!(
        y(&outs[0]),
        (1.0f32 * 10.0 + 1.0 + 110.0 + 1.0).to_le_bytes()
    );
    assert_eq!(y(&outs[0]), y(&outs[1]));
}

#[test]
fn a_consumer_that_does_not_wait_races_with_the_collectives_write() {
    let p = program(
        [
            vec![all_reduce(2)],
            vec![],
            vec![],
            vec![],
            vec![direct((Y, 0), (0, SBUF), 0, 0)],
        ],
        2,
    );
    let outs = run_world(&p, 2, &checked());
    assert_one_race(
        &outs,
        "y",
        ("output", AccessKind::Write),
        ("sp:direct", "dma.from", AccessKind::Read),
    );
    // The report names the collective's bundle and the missing completion update.
    let text = outs[0].findings[0].to_string();
    assert!(text.contains("pe:collective#0"), "{text}");
    assert!(text.contains("semaphore 2 += 1"), "{text}");
}

/// The completion update releases what the collective did, not what its issuing engine did
/// after issuing it: a consumer waiting for the completion is not ordered after PE's next
/// bundle.
#[test]
fn the_completion_releases_the_collectives_clock_not_the_issuing_engines() {
    let p = program(
        [
            vec![all_reduce(2), direct((Z, 0), (0, SBUF), 0, 0)],
            vec![],
            vec![],
            vec![],
            vec![wait_ge(direct((0, SBUF), (Y, 0), 0, 0), 2, 1)],
        ],
        2,
    );
    for (r, o) in run_world(&p, 2, &checked()).iter().enumerate() {
        assert_eq!(o.findings.len(), 1, "rank {r}: {:#?}", o.findings);
        let sides = race(&o.findings[0]).expect("a race");
        let pe = side(sides, "pe:direct").expect("PE's copy");
        let sp = side(sides, "sp:direct").expect("SP's copy");
        assert_eq!((pe.origin.index, pe.kind), (1, AccessKind::Write));
        assert_eq!((sp.origin.index, sp.kind), (0, AccessKind::Read));
        assert_eq!(o.findings[0].extent.memory, Memory::Sbuf);
    }
}

#[test]
fn a_write_into_the_input_while_the_collective_is_outstanding_races_with_its_read() {
    // SP overwrites x with z: before the completion a race with the all-reduce's read of x,
    // after a wait for it none.
    let write_x = direct((Z, 0), (X, 0), 0, 0);
    for (sp, racy) in [(write_x, true), (wait_ge(write_x, 2, 1), false)] {
        let p = program([vec![all_reduce(2)], vec![], vec![], vec![], vec![sp]], 2);
        let outs = run_world(&p, 2, &checked());
        if racy {
            assert_one_race(
                &outs,
                "x",
                ("input", AccessKind::Read),
                ("sp:direct", "dma.to", AccessKind::Write),
            );
        } else {
            assert_clean(&outs);
        }
    }
}

#[test]
fn what_a_collective_writes_counts_as_initialised() {
    // Without a collective, reading the output y reads nothing defined.
    let read_y = direct((Y, 0), (0, SBUF), 0, 0);
    let p = program([vec![], vec![], vec![], vec![], vec![read_y]], 1);
    let outs = run_world(&p, 1, &checked());
    assert_eq!(outs[0].findings.len(), 1, "{:#?}", outs[0].findings);
    let f = &outs[0].findings[0];
    match &f.kind {
        FindingKind::UninitRead { at } => {
            assert_eq!(
                (at.agent.as_str(), at.operand.as_str()),
                ("sp:direct", "dma.from")
            )
        }
        k => panic!("not an uninitialised read: {k:?}"),
    }
    assert_eq!(f.extent.memory, Memory::Dram("y".into()));
    assert_eq!((f.extent.bytes, f.extent.count), ((0, N * 4), N * 4));
    // After the all-reduce wrote it (waited for), in a world of 2 and of 1 rank: nothing.
    for ranks in [2, 1] {
        let p = program(
            [
                vec![all_reduce(2)],
                vec![],
                vec![],
                vec![],
                vec![wait_ge(read_y, 2, 1)],
            ],
            ranks,
        );
        assert_clean(&run_world(&p, ranks, &checked()));
    }
}

#[test]
fn a_receive_is_the_collectives_write_and_a_send_its_read() {
    // Rank 0 sends x to rank 1, which receives it into y; each leg completes on semaphore 2.
    // Rank 1 reads y without waiting: a race with the receive; rank 0 overwrites x after
    // waiting for its send: clean.
    let gid = {
        let mut b = bundle(PSEUDO_GID_LOAD);
        b.set_u8(12, 1);
        b.set_u8(23, 5);
        b
    };
    let mut branch = bundle(COMPARE_BRANCH);
    branch.set_u8(12, tpbsim_isa::CmpOp::EQ_IMM.0);
    branch.set_u8(13, Dtype::UINT32.0);
    branch.set_u8(14, tpbsim_isa::BrTargetMode::REL_IMM.0);
    branch.set_u32(16, 1);
    branch.set_u8(32, 5);
    branch.set_u64(48, 4 * 64);
    let sp = vec![
        gid,
        branch,
        inc_on_complete(send_recv(true, 1), 2),
        wait_ge(direct((Z, 0), (X, 0), 0, 0), 2, 1),
        bundle(HALT),
        // Rank 1 from here.
        inc_on_complete(send_recv(false, 0), 2),
        direct((Y, 0), (0, SBUF), 0, 0),
    ];
    let p = program([vec![], vec![], vec![], vec![], sp], 2);
    let outs = run_world(&p, 2, &checked());
    assert_clean(&outs[..1]);
    assert_eq!(outs[1].findings.len(), 1, "{:#?}", outs[1].findings);
    let sides = race(&outs[1].findings[0]).expect("a race");
    let recv = side(sides, "sp:collective#5").expect("the receive's side");
    assert_eq!(
        (recv.origin.operand.as_str(), recv.kind),
        ("destination", AccessKind::Write)
    );
    let read = side(sides, "sp").or_else(|| side(sides, "sp:direct"));
    assert!(read.is_some(), "{sides:?}");
}

/// Two collectives complete at the rank's stall; ACT, waiting for semaphore 2 ≥ 1, happens
/// to observe the first one's completion update, but SP's later increment of semaphore 2
/// (after the second collective) could have satisfied it in another interleaving: the
/// schedule-independent rule orders ACT after neither, and only the replay (which takes what
/// the world delivered from the run's record) reports ACT's read of y as a race.
#[test]
fn the_replay_of_a_world_repeats_what_the_collectives_delivered() {
    let mut second = all_reduce(3);
    second.set_u32(20, Z + 1);
    let p = Program::single(Kernel {
        gen: Some(Gen::V3),
        streams: [
            vec![all_reduce(2)],
            vec![wait_ge(direct((Y, 0), (0, SBUF), 0, 0), 2, 1)],
            vec![second],
            vec![],
            vec![wait_ge(direct((Z, 0), (0, 8 * SBUF), 2, 1), 3, 1)],
        ],
        vars: vec![
            var(X, "x", VarKind::Input),
            var(Y, "y", VarKind::Output),
            var(Z, "z", VarKind::Input),
            var(Z + 1, "w", VarKind::Output),
        ],
        world: 2,
        replica_groups: vec![vec![0, 1]],
        ..Kernel::default()
    });
    let first = run_world(&p, 2, &checked());
    assert_one_race(
        &first,
        "y",
        ("output", AccessKind::Write),
        ("act:direct", "dma.from", AccessKind::Read),
    );
    // The same findings whatever the threads' timing.
    for _ in 0..4 {
        let again = run_world(&p, 2, &checked());
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(a.findings, b.findings);
        }
    }
}

#[test]
fn schedules_run_across_ranks_and_compare_their_findings() {
    let p = waiting_consumer();
    let inputs: Vec<BTreeMap<String, Vec<u8>>> = (0..2u8)
        .map(|r| {
            BTreeMap::from([
                ("x".to_string(), vec![r + 1; N as usize * 4]),
                ("z".to_string(), vec![r + 7; N as usize * 4]),
            ])
        })
        .collect();
    let cfg = RunConfig {
        schedules: 5,
        ..checked()
    };
    let outs = api::run_world(&p, &inputs, &cfg).expect("the world runs");
    assert_eq!(outs.len(), 2);
    for o in &outs {
        assert!(
            o.findings.is_empty() && o.schedule_diffs.is_empty(),
            "{o:?}"
        );
    }
    // After the all-reduce, ACT copies z and SP copies x into y, unordered: the last one
    // wins, which depends on the interleaving; the seeded schedules show it on every rank.
    let p = program(
        [
            vec![all_reduce(2)],
            vec![wait_ge(direct((Z, 0), (Y, 0), 0, 0), 2, 1)],
            vec![],
            vec![],
            vec![wait_ge(direct((X, 0), (Y, 0), 0, 0), 2, 1)],
        ],
        2,
    );
    let outs = api::run_world(&p, &inputs, &cfg).expect("the world runs");
    for (r, o) in outs.iter().enumerate() {
        assert!(
            !o.schedule_diffs.is_empty(),
            "rank {r}: no schedule differs: {:?} {:?}",
            o.outputs["y"],
            o.findings
        );
        for d in &o.schedule_diffs {
            assert_eq!(d.output, "y");
            assert!((1..5).contains(&d.schedule), "{d:?}");
        }
        let sides = o
            .findings
            .iter()
            .find_map(race)
            .expect("the two copies race");
        assert!(side(sides, "act:direct").is_some() && side(sides, "sp:direct").is_some());
    }
}
