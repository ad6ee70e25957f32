//! Collectives across ranks in one process: each type against a numpy-style oracle written
//! here, the completion semaphore, the fold order, mismatches and deadlocks across ranks.

use std::collections::BTreeMap;
use std::sync::Arc;

use tpbsim_isa::{AluOp, Bundle, Dtype, Engine, Gen, NumFormat, UpdateMode, WaitMode};
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::cluster::SharedBytes;
use tpbsim_sim::machine::collective::Order;
use tpbsim_sim::machine::remote::{self, Link, Placement};
use tpbsim_sim::machine::{Kernel, Program, VarKind, VarSpec};

const IN: u32 = 3;
const OUT: u32 = 4;
const OUT2: u32 = 5;

pub(crate) fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, op);
    b.set_u8(1, 0x10);
    b
}

/// A TRIGGER_COLLECTIVE record (G collectives/ops/trigger-collective.md §1).
#[allow(clippy::too_many_arguments)]
fn trigger(
    ctype: u8,
    op: AluOp,
    dtype: Dtype,
    group: u16,
    input: u32,
    output: u32,
    n: u64,
) -> Bundle {
    let mut b = bundle(0xC8);
    b.set_u8(12, op.0);
    b.set_u8(13, dtype.0);
    b.set_u16(14, group);
    b.set_u32(16, input);
    b.set_u32(20, output);
    b.set_u64(24, n);
    b.set_u8(32, ctype);
    b
}

/// `b` incrementing semaphore `sem` when it completes.
pub(crate) fn inc_on_complete(mut b: Bundle, sem: u8) -> Bundle {
    b.set_u8(6, UpdateMode::SEM_INC_COMPLETE.0);
    b.set_u8(7, sem);
    b
}

/// `b` waiting until semaphore `sem` ≥ `v`.
pub(crate) fn wait_ge(mut b: Bundle, sem: u8, v: u32) -> Bundle {
    b.set_u8(4, WaitMode::SEM_GE_IMM.0);
    b.set_u8(5, sem);
    b.set_u32(8, v);
    b
}

fn var(id: u32, name: &str, kind: VarKind, format: NumFormat, elems: u64) -> VarSpec {
    VarSpec {
        id,
        name: name.into(),
        kind,
        format,
        shape: vec![elems as usize],
        size: elems * format.container_bytes() as u64,
        init: None,
    }
}

fn program(
    pe: Vec<Bundle>,
    vars: Vec<VarSpec>,
    groups: Vec<Vec<u32>>,
    pairs: Vec<(u32, u32)>,
) -> Program {
    let world = groups.iter().map(Vec::len).max().unwrap_or(1);
    let mut k = Kernel {
        gen: Some(Gen::V3),
        vars,
        world,
        replica_groups: groups,
        src_target_pairs: pairs,
        ..Default::default()
    };
    k.streams[Engine::Pe as usize] = pe;
    Program::single(k)
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn bytes(v: &[f32]) -> SharedBytes {
    Arc::new(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

fn run(
    p: &Program,
    per_rank: Vec<Vec<f32>>,
    cfg: &RunConfig,
) -> Result<Vec<BTreeMap<String, Vec<u8>>>, RunError> {
    run_outputs(p, per_rank, cfg).map(|v| v.into_iter().map(|o| owned(o.outputs)).collect())
}

/// Each rank's whole run result, rank r given `per_rank[r]` as `x`.
fn run_outputs(
    p: &Program,
    per_rank: Vec<Vec<f32>>,
    cfg: &RunConfig,
) -> Result<Vec<api::RunOutput>, RunError> {
    let inputs: Vec<BTreeMap<String, SharedBytes>> = per_rank
        .iter()
        .map(|x| BTreeMap::from([("x".to_string(), bytes(x))]))
        .collect();
    api::run_world_schedule(p, Gen::V3, &inputs, cfg, 0, &|_, _, _| {})
}

/// Rank r's input: n values that differ by rank and position, some of them large so that the
/// fold order shows in the last bits.
fn input(r: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let x = ((r * 131 + i * 17) % 23) as f32 - 11.0;
            if i % 5 == 0 {
                x * 1.0e7 + 0.37
            } else {
                x * 0.125 + 0.011 * r as f32
            }
        })
        .collect()
}

fn all_reduce_program(n: u64, op: AluOp, groups: Vec<Vec<u32>>) -> Program {
    program(
        vec![trigger(1, op, Dtype::FP32, 0, IN, OUT, n)],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
        ],
        groups,
        vec![],
    )
}

#[test]
fn all_reduce_folds_in_replica_order_in_fp32() {
    for ranks in [2usize, 3, 4] {
        let n = 40;
        let p = all_reduce_program(n as u64, AluOp::ADD, vec![(0..ranks as u32).collect()]);
        let xs: Vec<Vec<f32>> = (0..ranks).map(|r| input(r, n)).collect();
        let out = run(&p, xs.clone(), &RunConfig::default()).unwrap();
        let want: Vec<f32> = (0..n)
            .map(|i| xs.iter().skip(1).fold(xs[0][i], |a, x| a + x[i]))
            .collect();
        for (r, o) in out.iter().enumerate() {
            assert_eq!(f32s(&o["y"]), want, "{ranks} ranks, rank {r}");
        }
    }
}

#[test]
fn the_ring_order_is_a_second_model_and_differs_where_rounding_shows() {
    let (ranks, n) = (4usize, 40usize);
    let p = all_reduce_program(n as u64, AluOp::ADD, vec![(0..4).collect()]);
    let xs: Vec<Vec<f32>> = (0..ranks).map(|r| input(r, n)).collect();
    let cfg = RunConfig {
        collective_order: Order::Ring,
        ..RunConfig::default()
    };
    let out = run(&p, xs.clone(), &cfg).unwrap();
    // In the ring order, element i belongs to ring chunk c = i·4/n (the chunk that ends at
    // position c after the reduce-scatter steps), folded from position c + 1 round the ring;
    // every rank receives the same values.
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let c = (0..ranks).rfind(|&c| c * n / ranks <= i).unwrap();
            let first = (c + 1) % ranks;
            (1..ranks).fold(xs[first][i], |a, k| a + xs[(first + k) % ranks][i])
        })
        .collect();
    for (r, o) in out.iter().enumerate() {
        assert_eq!(f32s(&o["y"]), want, "rank {r}");
    }
    let replica = run(&p, xs, &RunConfig::default()).unwrap();
    assert_ne!(
        replica[1]["y"], out[1]["y"],
        "the input is chosen so the orders differ"
    );
}

#[test]
fn max_and_min_reduce_and_bf16_rounds_once() {
    let n = 16usize;
    for (op, f) in [
        (AluOp::MAX, f32::max as fn(f32, f32) -> f32),
        (AluOp::MIN, f32::min),
    ] {
        let p = all_reduce_program(n as u64, op, vec![vec![0, 1, 2]]);
        let xs: Vec<Vec<f32>> = (0..3).map(|r| input(r, n)).collect();
        let out = run(&p, xs.clone(), &RunConfig::default()).unwrap();
        let want: Vec<f32> = (0..n).map(|i| f(f(xs[0][i], xs[1][i]), xs[2][i])).collect();
        assert_eq!(f32s(&out[2]["y"]), want);
    }
    // bf16: 1 + 2^-8 + 2^-8 is 1 + 2^-7 in fp32 (exact), representable in bf16; summed in bf16
    // step by step it would stay 1.
    let bf = |x: f32| half::bf16::from_f32(x).to_bits().to_le_bytes();
    let p = program(
        vec![trigger(1, AluOp::ADD, Dtype::BF16, 0, IN, OUT, 1)],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Bfloat16, 1),
            var(OUT, "y", VarKind::Output, NumFormat::Bfloat16, 1),
        ],
        vec![vec![0, 1, 2]],
        vec![],
    );
    let vals = [1.0f32, 1.0 / 256.0, 1.0 / 256.0];
    let inputs: Vec<BTreeMap<String, SharedBytes>> = vals
        .iter()
        .map(|&v| BTreeMap::from([("x".to_string(), Arc::new(bf(v).to_vec()) as SharedBytes)]))
        .collect();
    let out = api::run_world_schedule(
        &p,
        Gen::V3,
        &inputs,
        &RunConfig::default(),
        0,
        &|_, _, _| {},
    )
    .unwrap();
    assert_eq!(out[0].outputs["y"], bf(1.0 + 1.0 / 128.0).to_vec());
}

#[test]
fn reduce_scatter_all_gather_all_to_all_and_permute() {
    let (ranks, n) = (4usize, 8usize);
    let xs: Vec<Vec<f32>> = (0..ranks).map(|r| input(r, n)).collect();
    let group = vec![(0..ranks as u32).collect::<Vec<u32>>()];
    let case = |ctype: u8, out_elems: usize, pairs: Vec<(u32, u32)>| {
        let p = one_collective(ctype, n, out_elems, group.clone(), pairs);
        run(&p, xs.clone(), &RunConfig::default()).unwrap()
    };
    let b = n / ranks;
    let rs = case(2, b, vec![]);
    for (r, o) in rs.iter().enumerate() {
        let want: Vec<f32> = (r * b..(r + 1) * b)
            .map(|i| (1..ranks).fold(xs[0][i], |a, k| a + xs[k][i]))
            .collect();
        assert_eq!(f32s(&o["y"]), want, "reduce-scatter rank {r}");
    }
    let ag = case(3, n * ranks, vec![]);
    let cat: Vec<f32> = xs.concat();
    for o in &ag {
        assert_eq!(f32s(&o["y"]), cat, "all-gather");
    }
    let a2a = case(4, n, vec![]);
    for (r, o) in a2a.iter().enumerate() {
        let want: Vec<f32> = (0..ranks)
            .flat_map(|q| xs[q][r * b..(r + 1) * b].to_vec())
            .collect();
        assert_eq!(f32s(&o["y"]), want, "all-to-all rank {r}");
    }
    let ring: Vec<(u32, u32)> = (0..ranks as u32)
        .map(|r| (r, (r + 1) % ranks as u32))
        .collect();
    let perm = case(5, n, ring);
    for (r, o) in perm.iter().enumerate() {
        assert_eq!(
            f32s(&o["y"]),
            xs[(r + ranks - 1) % ranks],
            "permute rank {r}"
        );
    }
}

#[test]
fn completion_is_signalled_on_the_semaphore_and_a_waiter_sees_the_result() {
    // AR(x) → y, then (after waiting for the first to complete) AR(y) → z.
    let n = 8u64;
    let p = program(
        vec![
            inc_on_complete(trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT, n), 2),
            wait_ge(trigger(1, AluOp::ADD, Dtype::FP32, 0, OUT, OUT2, n), 2, 1),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
            var(OUT2, "z", VarKind::Output, NumFormat::Float32, n),
        ],
        vec![vec![0, 1]],
        vec![],
    );
    let xs = vec![vec![1.0f32; 8], vec![2.0f32; 8]];
    let out = run(&p, xs, &RunConfig::default()).unwrap();
    for o in &out {
        assert_eq!(f32s(&o["y"]), vec![3.0; 8]);
        assert_eq!(f32s(&o["z"]), vec![6.0; 8]);
    }
}

#[test]
fn groups_partition_the_ranks() {
    let n = 4usize;
    let p = all_reduce_program(n as u64, AluOp::ADD, vec![vec![0, 2], vec![1, 3]]);
    // group_id 0 on every rank names [0, 2]; ranks 1 and 3 are not in it.
    let xs: Vec<Vec<f32>> = (0..4).map(|r| input(r, n)).collect();
    let e = run(&p, xs, &RunConfig::default()).unwrap_err().to_string();
    assert!(e.contains("not in replica group 0"), "{e}");
}

#[test]
fn groups_naming_ranks_outside_the_world_are_refused() {
    let n = 4u64;
    let p = all_reduce_program(n, AluOp::ADD, vec![vec![0, 1, 2]]);
    let e = run(&p, vec![vec![1.0; 4], vec![2.0; 4]], &RunConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("replica group 0 names rank 2") && e.contains("2 ranks"),
        "{e}"
    );
}

#[test]
fn an_integer_reduction_is_refused_by_name() {
    let n = 4u64;
    let p = program(
        vec![trigger(1, AluOp::ADD, Dtype::INT32, 0, IN, OUT, n)],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Int32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Int32, n),
        ],
        vec![vec![0, 1]],
        vec![],
    );
    let e = run(&p, vec![vec![0.0; 4], vec![0.0; 4]], &RunConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not an element type the DMA reduction path takes"),
        "{e}"
    );
}

#[test]
fn results_do_not_depend_on_the_threads() {
    let (ranks, n) = (8usize, 64usize);
    let p = all_reduce_program(n as u64, AluOp::ADD, vec![(0..ranks as u32).collect()]);
    let xs: Vec<Vec<f32>> = (0..ranks).map(|r| input(r, n)).collect();
    let first = run(&p, xs.clone(), &RunConfig::default()).unwrap();
    for _ in 0..5 {
        assert_eq!(run(&p, xs.clone(), &RunConfig::default()).unwrap(), first);
    }
}

/// The error of a run that must fail, as text.
fn run_err(p: &Program, per_rank: Vec<Vec<f32>>) -> String {
    match run(p, per_rank, &RunConfig::default()) {
        Ok(_) => panic!("the run succeeded"),
        Err(e) => e.to_string(),
    }
}

/// A SEND_RECV leg (G collectives/ops/sendrecv.md §2): `is_send` 1 sends the window
/// `var[off..off + size]` to `peer`, 0 receives the peer's bytes into it.
fn send_recv(is_send: bool, peer: u64, var: u32, off: u64, size: u64) -> Bundle {
    let mut b = bundle(0xCB);
    b.set_u32(12, var);
    b.set_u64(16, peer);
    b.set_u8(24, is_send as u8);
    b.set_u64(48, off);
    b.set_u64(56, size);
    b
}

/// GID_LOAD (G collectives/ops/rank-id.md §7) of this rank's id into register `reg`.
fn gid_load(reg: u8) -> Bundle {
    let mut b = bundle(0xDC);
    b.set_u8(12, 1);
    b.set_u8(23, reg);
    b
}

/// COMPARE_BRANCH: when register `reg` equals `v` (as u32), jump `by` bundles forward.
fn branch_if_eq(reg: u8, v: u32, by: u64) -> Bundle {
    let mut b = bundle(0xA9);
    b.set_u8(12, tpbsim_isa::CmpOp::EQ_IMM.0);
    b.set_u8(13, Dtype::UINT32.0);
    b.set_u8(14, tpbsim_isa::BrTargetMode::REL_IMM.0);
    b.set_u32(16, v);
    b.set_u8(32, reg);
    b.set_u64(48, by * 64);
    b
}

/// Every rank runs the same stream: rank 0 (by its GID) sends bytes 8..40 of `x`, rank 1
/// receives them at bytes 16..48 of `y`; with `recv` false rank 1 never receives.
fn send_recv_program(n: u64, recv_size: u64, recv: bool) -> Program {
    let rank1 = if recv {
        send_recv(false, 0, OUT, 16, recv_size)
    } else {
        bundle(0xA1)
    };
    program(
        vec![
            gid_load(5),
            branch_if_eq(5, 1, 3),
            send_recv(true, 1, IN, 8, 32),
            bundle(0xA1),
            rank1,
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
        ],
        vec![vec![0, 1]],
        vec![],
    )
}

#[test]
fn send_recv_moves_the_senders_window_bit_for_bit() {
    let n = 16u64;
    let p = send_recv_program(n, 32, true);
    // NaN payloads and a negative zero travel as bytes.
    let mut x0 = input(0, n as usize);
    x0[2] = f32::from_bits(0x7fc0_1234);
    x0[3] = -0.0;
    x0[4] = f32::from_bits(0xff80_0001);
    let xs = vec![x0.clone(), input(1, n as usize)];
    let out = run(&p, xs, &RunConfig::default()).unwrap();
    let sent: Vec<u8> = x0.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut want = vec![0u8; n as usize * 4];
    want[16..48].copy_from_slice(&sent[8..40]);
    assert_eq!(out[1]["y"], want, "rank 1 receives");
    assert_eq!(out[0]["y"], vec![0u8; n as usize * 4], "rank 0 only sends");
}

#[test]
fn a_send_without_its_receive_is_a_deadlock_naming_the_ranks() {
    let p = send_recv_program(16, 32, false);
    let e = run_err(&p, vec![input(0, 16), input(1, 16)]);
    assert!(e.contains("deadlock across ranks"), "{e}");
    assert!(e.contains("SendRecv over group [0, 1]"), "{e}");
    assert!(e.contains("posted by rank 0 at"), "{e}");
    assert!(e.contains("never by rank 1 (finished)"), "{e}");
}

#[test]
fn a_send_and_a_receive_of_different_sizes_are_named() {
    let p = send_recv_program(16, 16, true);
    let e = run_err(&p, vec![input(0, 16), input(1, 16)]);
    assert!(e.contains("collectives differ between ranks"), "{e}");
    assert!(e.contains("32 ×") && e.contains("16 ×"), "{e}");
}

#[test]
fn a_send_to_itself_or_outside_the_world_is_refused() {
    for peer in [0u64, 2, 1 << 40] {
        let p = program(
            vec![send_recv(true, peer, IN, 0, 4)],
            vec![var(IN, "x", VarKind::Input, NumFormat::Float32, 4)],
            vec![vec![0, 1]],
            vec![],
        );
        let e = run_err(&p, vec![vec![0.0; 4], vec![0.0; 4]]);
        assert!(
            e.contains(&format!("cannot send to rank {peer}")),
            "{peer}: {e}"
        );
    }
}

#[test]
fn gid_load_writes_each_ranks_id_into_its_register() {
    use tpbsim_sim::machine::collective::{Comm, Member};
    use tpbsim_sim::machine::{Machine, RunOptions};
    let mut k = Kernel {
        gen: Some(Gen::V3),
        world: 3,
        ..Default::default()
    };
    k.streams[Engine::Pe as usize] = vec![gid_load(7)];
    let members = (0..3).map(|rank| Member { rank, core: 0 });
    let world = Arc::new(Comm::new(members, Order::Replica));
    for rank in 0..3u32 {
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        m.regs[Engine::Pe as usize][7] = 99;
        m.join_world(world.clone(), Member { rank, core: 0 })
            .unwrap();
        m.run(&RunOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(m.regs[Engine::Pe as usize][7], rank, "rank {rank}");
    }
    // A run of one rank is rank 0; the address form and a register past the file are refused.
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    m.regs[Engine::Pe as usize][7] = 99;
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(m.regs[Engine::Pe as usize][7], 0);
    let mut addr = gid_load(7);
    addr.set_u8(12, 0);
    let mut past = gid_load(0);
    past.set_u8(23, 0xFF);
    for (b, needle) in [
        (addr, "GID_LOAD to an address"),
        (past, "register 255 does not exist"),
    ] {
        k.streams[Engine::Pe as usize] = vec![b];
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
        assert!(f.to_string().contains(needle), "{f}");
    }
}

#[test]
fn the_peer_rank_of_a_fine_grained_step_is_refused_by_name() {
    let mut b = bundle(0xDB);
    b.set_u16(16, 2);
    b.set_u8(18, 9);
    let p = program(
        vec![b],
        vec![var(IN, "x", VarKind::Input, NumFormat::Float32, 1)],
        vec![vec![0, 1]],
        vec![],
    );
    let e = run_err(&p, vec![vec![0.0], vec![0.0]]);
    assert!(e.contains("CUR_PROCESSING_RANK_ID"), "{e}");
    assert!(
        e.contains("stepping function") && e.contains("iteration 2"),
        "{e}"
    );
}

#[test]
fn an_exchange_where_both_ranks_send_first_completes() {
    let n = 4u64;
    let p = program(
        vec![
            gid_load(5),
            branch_if_eq(5, 1, 4),
            send_recv(true, 1, IN, 0, 16),
            send_recv(false, 1, OUT, 0, 16),
            bundle(0xA1),
            send_recv(true, 0, IN, 0, 16),
            send_recv(false, 0, OUT, 0, 16),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
        ],
        vec![vec![0, 1]],
        vec![],
    );
    let xs = vec![input(0, n as usize), input(1, n as usize)];
    let out = run(&p, xs.clone(), &RunConfig::default()).unwrap();
    assert_eq!(f32s(&out[0]["y"]), xs[1]);
    assert_eq!(f32s(&out[1]["y"]), xs[0]);
}

/// One collective of type `ctype` (sum) from `x` (n fp32) to `y` (`out_elems` fp32) over
/// replica group 0 of `groups`.
fn one_collective(
    ctype: u8,
    n: usize,
    out_elems: usize,
    groups: Vec<Vec<u32>>,
    pairs: Vec<(u32, u32)>,
) -> Program {
    program(
        vec![trigger(
            ctype,
            AluOp::ADD,
            Dtype::FP32,
            0,
            IN,
            OUT,
            n as u64,
        )],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n as u64),
            var(
                OUT,
                "y",
                VarKind::Output,
                NumFormat::Float32,
                out_elems as u64,
            ),
        ],
        groups,
        pairs,
    )
}

/// The frames between "processes" that are threads of this test: one channel into each.
struct ChanLink {
    me: usize,
    to: Vec<std::sync::mpsc::Sender<(usize, Vec<u8>)>>,
    from: std::sync::mpsc::Receiver<(usize, Vec<u8>)>,
}

impl Link for ChanLink {
    fn send(&mut self, to: usize, frame: &[u8]) -> Result<(), String> {
        self.to[to]
            .send((self.me, frame.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn try_recv(&mut self) -> Result<Option<(usize, Vec<u8>)>, String> {
        Ok(self.from.try_recv().ok())
    }
}

/// One rank's outputs, or its process's first fault.
type RankResult = Result<BTreeMap<String, Vec<u8>>, String>;

/// `p` run as a world of `per_rank.len()` ranks spread over `processes` threads standing for
/// processes, placed by `placement`, their collectives travelling as frames: the outputs of
/// every rank in rank order (each process's first fault in its place).
fn run_over_processes(
    p: &Program,
    per_rank: &[Vec<f32>],
    processes: usize,
    placement: Placement,
    cfg: &RunConfig,
) -> Vec<RankResult> {
    let ranks = per_rank.len();
    let inputs: Vec<BTreeMap<String, SharedBytes>> = per_rank
        .iter()
        .map(|x| BTreeMap::from([("x".to_string(), bytes(x))]))
        .collect();
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..processes)
        .map(|_| std::sync::mpsc::channel::<(usize, Vec<u8>)>())
        .unzip();
    let mut out: Vec<Option<RankResult>> = vec![None; ranks];
    std::thread::scope(|s| {
        let handles: Vec<_> = rxs
            .into_iter()
            .enumerate()
            .map(|(me, from)| {
                let mut link = ChanLink {
                    me,
                    to: txs.clone(),
                    from,
                };
                let inputs = &inputs;
                s.spawn(move || {
                    let mine = placement.ranks_of(me, processes, ranks);
                    let here: Vec<(usize, &BTreeMap<String, SharedBytes>)> =
                        mine.iter().map(|&r| (r, &inputs[r])).collect();
                    let r = remote::session(
                        &mut link,
                        me,
                        processes,
                        || api::world_comm(p, ranks, cfg.collective_order),
                        |m| {
                            api::run_ranks_schedule(
                                p,
                                Gen::V3,
                                ranks,
                                &here,
                                Some(m),
                                cfg,
                                0,
                                &|_, _, _| {},
                            )
                        },
                    )
                    .unwrap();
                    (mine, r)
                })
            })
            .collect();
        for h in handles {
            let (mine, r) = h.join().unwrap();
            match r {
                Ok(outs) => {
                    for (rank, o) in mine.into_iter().zip(outs) {
                        out[rank] = Some(Ok(owned(o.outputs)));
                    }
                }
                Err(e) => {
                    for rank in mine {
                        out[rank] = Some(Err(e.to_string()));
                    }
                }
            }
        }
    });
    out.into_iter().map(Option::unwrap).collect()
}

#[test]
fn ranks_spread_over_processes_give_the_outputs_of_one_process_bit_for_bit() {
    let n = 8usize;
    for ranks in [2usize, 4] {
        let xs: Vec<Vec<f32>> = (0..ranks).map(|r| input(r, n)).collect();
        let group = vec![(0..ranks as u32).collect::<Vec<u32>>()];
        // All-reduce and all-gather, in both fold orders, over 2 and 3 processes placed both
        // ways.
        for (ctype, out_elems) in [(1u8, n), (3, n * ranks)] {
            let p = one_collective(ctype, n, out_elems, group.clone(), vec![]);
            for order in [Order::Replica, Order::Ring] {
                let cfg = RunConfig {
                    collective_order: order,
                    ..RunConfig::default()
                };
                let one = run(&p, xs.clone(), &cfg).unwrap();
                for processes in [2usize, 3] {
                    for placement in [Placement::Blocks, Placement::RoundRobin] {
                        let spread = run_over_processes(&p, &xs, processes, placement, &cfg);
                        let spread: Vec<_> = spread.into_iter().map(Result::unwrap).collect();
                        assert_eq!(
                            spread, one,
                            "type {ctype}, {ranks} ranks, {order:?}, {processes} processes, {placement:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_deadlock_across_processes_is_named_and_no_process_hangs() {
    // Ranks 2 and 3 are not in group 0 and fault at the first all-reduce, before they post
    // the second, over every rank: ranks 0 and 1 wait in it for ranks of the other process.
    let n = 4u64;
    let p = program(
        vec![
            trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT, n),
            trigger(1, AluOp::ADD, Dtype::FP32, 1, IN, OUT2, n),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
            var(OUT2, "z", VarKind::Output, NumFormat::Float32, n),
        ],
        vec![vec![0, 1], vec![0, 1, 2, 3]],
        vec![],
    );
    let xs: Vec<Vec<f32>> = (0..4).map(|r| input(r, n as usize)).collect();
    let one = run(&p, xs.clone(), &RunConfig::default())
        .unwrap_err()
        .to_string();
    for placement in [Placement::Blocks, Placement::RoundRobin] {
        let spread = run_over_processes(&p, &xs, 2, placement, &RunConfig::default());
        // Each process's first fault: rank 0's is the deadlock, as in one process.
        let first = spread[0].clone().unwrap_err();
        assert_eq!(first, one, "{placement:?}");
        assert!(first.contains("deadlock across ranks"), "{first}");
        assert!(
            first.contains("never by rank 2 (faulted), rank 3 (faulted)"),
            "{first}"
        );
        // The other process's first fault: rank 2's own (blocks) or rank 1's deadlock.
        let (rank, want) = match placement {
            Placement::Blocks => (2, "not in replica group 0"),
            Placement::RoundRobin => (1, "deadlock across ranks"),
        };
        let other = spread[rank].clone().unwrap_err();
        assert!(other.contains(want), "{placement:?}: {other}");
    }
}

/// A contribution is the window as it was when posted: z is posted to an all-gather and then
/// rewritten by an all-reduce (max) posted right after it; the all-gather delivers the z it
/// was posted with (the sum) on every rank.
#[test]
fn a_window_overwritten_after_it_was_posted_is_delivered_as_posted() {
    let n = 8u64;
    let p = program(
        vec![
            inc_on_complete(trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT2, n), 2),
            wait_ge(
                inc_on_complete(trigger(3, AluOp::ADD, Dtype::FP32, 0, OUT2, OUT, n), 3),
                2,
                1,
            ),
            inc_on_complete(trigger(1, AluOp::MAX, Dtype::FP32, 0, IN, OUT2, n), 4),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, 2 * n),
            var(OUT2, "z", VarKind::Output, NumFormat::Float32, n),
        ],
        vec![vec![0, 1]],
        vec![],
    );
    let xs = vec![input(0, n as usize), input(1, n as usize)];
    let sum: Vec<f32> = (0..n as usize).map(|i| xs[0][i] + xs[1][i]).collect();
    let max: Vec<f32> = (0..n as usize).map(|i| xs[0][i].max(xs[1][i])).collect();
    assert_ne!(sum, max);
    let out = run(&p, xs, &RunConfig::default()).unwrap();
    for (r, o) in out.iter().enumerate() {
        assert_eq!(
            f32s(&o["y"]),
            [sum.clone(), sum.clone()].concat(),
            "rank {r}"
        );
        assert_eq!(f32s(&o["z"]), max, "rank {r}");
    }
}

/// Run `p` as `ranks` ranks with no step budget, set the stop flag from this thread after
/// 300 ms, and return the run's result and how long it took to end after the stop.
fn stopped_run(p: &Program, ranks: usize) -> (Result<(), RunError>, std::time::Duration) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = RunConfig {
        max_steps: u64::MAX,
        stop: Some(stop.clone()),
        ..RunConfig::default()
    };
    std::thread::scope(|s| {
        let h = s.spawn(|| run(p, vec![vec![1.0; 4]; ranks], &cfg).map(|_| ()));
        std::thread::sleep(Duration::from_millis(300));
        let running = !h.is_finished();
        stop.store(true, Ordering::SeqCst);
        let at = Instant::now();
        let r = h.join().unwrap();
        assert!(running, "the run ended by itself: {r:?}");
        (r, at.elapsed())
    })
}

#[test]
fn a_stopped_loop_returns_interrupted_promptly() {
    // Register 5 starts at 0: the branch jumps to itself for ever.
    let p = program(vec![branch_if_eq(5, 0, 0)], vec![], vec![], vec![]);
    let (r, took) = stopped_run(&p, 1);
    assert!(matches!(r, Err(RunError::Interrupted)), "{r:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_stopped_world_releases_the_rank_waiting_at_a_collective() {
    // Rank 0 loops for ever before its all-reduce; rank 1 posts its own and waits for rank 0.
    let p = program(
        vec![
            gid_load(5),
            branch_if_eq(5, 0, 0),
            trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT, 4),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, 4),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, 4),
        ],
        vec![vec![0, 1]],
        vec![],
    );
    let (r, took) = stopped_run(&p, 2);
    assert!(matches!(r, Err(RunError::Interrupted)), "{r:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

/// A run's outputs as vectors of their own.
fn owned(o: BTreeMap<String, tpbsim_sim::machine::memory::VarBytes>) -> BTreeMap<String, Vec<u8>> {
    o.into_iter().map(|(k, v)| (k, v.into_vec())).collect()
}

#[test]
fn a_result_filling_its_variable_is_shared_and_a_partial_one_is_written_in_place() {
    use tpbsim_sim::machine::memory::VarBytes;
    // AR(x) → y fills y; AR(x) → z writes the first n of z's 2n elements; then AR(y) → y in
    // place (the shared result is both the contribution and the destination).
    let n = 6u64;
    let p = program(
        vec![
            inc_on_complete(trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT, n), 2),
            trigger(1, AluOp::ADD, Dtype::FP32, 0, IN, OUT2, n),
            wait_ge(trigger(1, AluOp::ADD, Dtype::FP32, 0, OUT, OUT, n), 2, 1),
        ],
        vec![
            var(IN, "x", VarKind::Input, NumFormat::Float32, n),
            var(OUT, "y", VarKind::Output, NumFormat::Float32, n),
            var(OUT2, "z", VarKind::Output, NumFormat::Float32, 2 * n),
        ],
        vec![vec![0, 1, 2]],
        vec![],
    );
    let xs: Vec<Vec<f32>> = (0..3).map(|r| vec![r as f32 + 1.0; n as usize]).collect();
    let out = run_outputs(&p, xs, &RunConfig::default()).unwrap();
    let mut z = vec![6.0f32; n as usize];
    z.extend(vec![0.0; n as usize]);
    for (r, o) in out.iter().enumerate() {
        assert_eq!(f32s(&o.outputs["y"]), vec![18.0; n as usize], "rank {r}");
        assert!(matches!(o.outputs["y"], VarBytes::Shared(_)), "rank {r}");
        assert_eq!(f32s(&o.outputs["z"]), z, "rank {r}");
        assert!(matches!(o.outputs["z"], VarBytes::Owned(_)), "rank {r}");
    }
}
