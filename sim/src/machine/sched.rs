//! The deterministic scheduler over the five engine queues.
//!
//! Policy: rounds over the engines in wire-id order (PE, ACT, POOL, DVE, SP). In each round
//! every unfinished engine whose current bundle's waits hold issues exactly that one bundle:
//! wait side effects and `_READ` updates, then the bundle's effects, then `_COMPLETE` updates,
//! then its program counter moves. An engine finishes on Halt, on PSEUDO_INST EXIT, or by
//! running past its last bundle. A round in which no engine issued, while some engine is
//! unfinished, is a deadlock; the report names each blocked engine's bundle and condition.
//! Each issued bundle counts one step against the step budget.

use tpbsim_isa::Engine;

use super::fault::{BlockedEngine, DeadlockReport, Fault, Site};
use super::sync::{Events, SyncState};
use super::waitfor::{find_cycle, CycleEdge, PendingUpdate, Producer, SyncRef};

/// Where an engine goes after a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The next bundle.
    Next,
    /// Bundle index `n` of the same stream.
    Jump(usize),
    /// The engine is done (Halt, EXIT).
    Finish,
}

/// The program the scheduler drives: per-engine streams and their execution.
pub trait Streams {
    /// Number of bundles in `e`'s stream (0 when the engine has none).
    fn stream_len(&self, e: Engine) -> usize;
    /// Opcode byte of bundle `pc` of `e`.
    fn opcode(&self, e: Engine, pc: usize) -> u8;
    /// Synchronisation of bundle `pc` of `e`.
    fn events(&mut self, e: Engine, pc: usize) -> Result<Events, Fault>;
    /// Registers of `e` (for the REG forms of waits and updates).
    fn regs(&self, e: Engine) -> &[u32];
    /// Execute the effects of bundle `pc` of `e`.
    fn execute(&mut self, e: Engine, pc: usize, sync: &mut SyncState) -> Result<Flow, Fault>;
    /// Issue-time synchronisation of `e`'s current bundle (its waits hold): wait side effects
    /// and `_READ` updates.
    fn issue(&mut self, e: Engine, ev: &Events, sync: &mut SyncState) {
        ev.issue(sync, self.regs(e));
    }
    /// Completion-time synchronisation of `e`'s current bundle: `_COMPLETE` updates.
    fn complete(&mut self, e: Engine, ev: &Events, sync: &mut SyncState) {
        ev.complete(sync, self.regs(e));
    }
    /// No engine can issue, or every engine has finished: wait for what is outside the core
    /// (collectives other ranks complete) and apply it. `true` when something was applied and
    /// the run goes on; `false` when nothing is outstanding.
    fn stalled(&mut self, _sync: &mut SyncState) -> Result<bool, Fault> {
        Ok(false)
    }
    /// Steps charged so far besides the bundles issued (DMA bytes moved and engine operand bytes; see
    /// [`super::budget::DMA_BYTES_PER_STEP`]).
    fn work(&self) -> u64 {
        0
    }
    /// The caller asked the run to stop: checked before each bundle issues.
    fn stop_requested(&self) -> bool {
        false
    }
    /// The semaphore and event updates that bundles `from..` of `e`'s stream can still make
    /// (for the wait-for graph of a deadlock report). The default reads the events blocks.
    fn pending_updates(&mut self, e: Engine, from: usize) -> Vec<PendingUpdate> {
        let mut v = Vec::new();
        for pc in from..self.stream_len(e) {
            if let Ok(ev) = self.events(e, pc) {
                v.extend(ev.pending_updates(pc));
            }
        }
        v
    }
}

/// The order in which ready engines issue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Rounds over the engines in wire-id order, one bundle per ready engine per round.
    #[default]
    RoundRobin,
    /// At every step, one ready engine chosen by a pseudo-random generator with this seed
    /// issues a burst of 1 to 4 bundles (while it stays ready).
    Seeded(u64),
}

/// Counters of a finished run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchedStats {
    /// Bundles issued in total.
    pub steps: u64,
    /// Bundles issued per engine, by wire id.
    pub per_engine: [u64; Engine::COUNT],
    /// Scheduler rounds.
    pub rounds: u64,
}

#[derive(Clone, Copy, Debug)]
struct Queue {
    pc: usize,
    done: bool,
    pending: Option<Events>,
}

impl Queue {
    const START: Queue = Queue {
        pc: 0,
        done: false,
        pending: None,
    };
}

/// How often (in steps) the progress callback is called.
pub const PROGRESS_INTERVAL: u64 = 1 << 14;

/// Run `p` until every engine finishes, a fault, a deadlock or `max_steps` issued bundles.
/// `progress` is called with the counters so far (bundles issued, per engine) every
/// [`PROGRESS_INTERVAL`] steps.
pub fn run<P: Streams>(
    p: &mut P,
    sync: &mut SyncState,
    max_steps: u64,
    progress: &mut dyn FnMut(&SchedStats),
) -> Result<SchedStats, Fault> {
    run_ordered(p, sync, max_steps, Order::RoundRobin, progress)
}

/// [`run`] with the issue order `order`. Every order is a legal interleaving: an engine issues
/// only when its waits hold, and a deadlock is reported only when no unfinished engine can.
pub fn run_ordered<P: Streams>(
    p: &mut P,
    sync: &mut SyncState,
    max_steps: u64,
    order: Order,
    progress: &mut dyn FnMut(&SchedStats),
) -> Result<SchedStats, Fault> {
    if let Order::Seeded(seed) = order {
        return run_seeded(p, sync, max_steps, seed, progress);
    }
    let mut q = [Queue::START; Engine::COUNT];
    let mut stats = SchedStats::default();
    for e in Engine::ALL {
        q[e as usize].done = p.stream_len(e) == 0;
    }
    loop {
        let mut issued = false;
        let mut unfinished = false;
        for e in Engine::ALL {
            let qe = &mut q[e as usize];
            if qe.done {
                continue;
            }
            if qe.pc >= p.stream_len(e) {
                qe.done = true;
                continue;
            }
            unfinished = true;
            let ev = match qe.pending {
                Some(ev) => ev,
                None => {
                    let ev = p.events(e, qe.pc)?;
                    qe.pending = Some(ev);
                    ev
                }
            };
            if ev.blocking(sync, p.regs(e)).is_some() {
                continue;
            }
            if stats.steps.saturating_add(p.work()) >= max_steps {
                return Err(budget_fault(p, &q, max_steps, stats.steps));
            }
            if p.stop_requested() {
                return Err(Fault::Interrupted {
                    bundles: stats.steps,
                });
            }
            step(p, e, qe, ev, sync, &mut stats, progress)?;
            issued = true;
        }
        stats.rounds += 1;
        if (!unfinished || !issued) && p.stalled(sync)? {
            continue;
        }
        if !unfinished {
            return Ok(stats);
        }
        if !issued {
            return Err(Fault::Deadlock(deadlock_report(p, &q, sync, stats.steps)));
        }
    }
}

/// Issue `e`'s current bundle (its waits hold) and move its program counter.
fn step<P: Streams>(
    p: &mut P,
    e: Engine,
    qe: &mut Queue,
    ev: Events,
    sync: &mut SyncState,
    stats: &mut SchedStats,
    progress: &mut dyn FnMut(&SchedStats),
) -> Result<(), Fault> {
    p.issue(e, &ev, sync);
    let flow = p.execute(e, qe.pc, sync)?;
    p.complete(e, &ev, sync);
    qe.pending = None;
    match flow {
        Flow::Next => qe.pc += 1,
        Flow::Jump(t) => qe.pc = t,
        Flow::Finish => qe.done = true,
    }
    stats.steps += 1;
    stats.per_engine[e as usize] += 1;
    if stats.steps.is_multiple_of(PROGRESS_INTERVAL) {
        progress(stats);
    }
    Ok(())
}

/// Whether `e` can issue now; loads its pending events. Marks engines past their stream done.
fn ready<P: Streams>(
    p: &mut P,
    e: Engine,
    qe: &mut Queue,
    sync: &SyncState,
) -> Result<Option<Events>, Fault> {
    if qe.done {
        return Ok(None);
    }
    if qe.pc >= p.stream_len(e) {
        qe.done = true;
        return Ok(None);
    }
    let ev = match qe.pending {
        Some(ev) => ev,
        None => {
            let ev = p.events(e, qe.pc)?;
            qe.pending = Some(ev);
            ev
        }
    };
    Ok(ev.blocking(sync, p.regs(e)).is_none().then_some(ev))
}

fn run_seeded<P: Streams>(
    p: &mut P,
    sync: &mut SyncState,
    max_steps: u64,
    seed: u64,
    progress: &mut dyn FnMut(&SchedStats),
) -> Result<SchedStats, Fault> {
    let mut q = [Queue::START; Engine::COUNT];
    let mut stats = SchedStats::default();
    let mut rand = seeded_stream(seed);
    loop {
        let mut ready_set: Vec<(Engine, Events)> = Vec::with_capacity(5);
        for e in Engine::ALL {
            if let Some(ev) = ready(p, e, &mut q[e as usize], sync)? {
                ready_set.push((e, ev));
            }
        }
        stats.rounds += 1;
        if ready_set.is_empty() {
            if p.stalled(sync)? {
                continue;
            }
            if q.iter().all(|x| x.done) {
                return Ok(stats);
            }
            return Err(Fault::Deadlock(deadlock_report(p, &q, sync, stats.steps)));
        }
        let (k, burst) = seeded_pick(rand(), ready_set.len());
        let (e, mut ev) = ready_set[k];
        for _ in 0..burst {
            if stats.steps.saturating_add(p.work()) >= max_steps {
                return Err(budget_fault(p, &q, max_steps, stats.steps));
            }
            if p.stop_requested() {
                return Err(Fault::Interrupted {
                    bundles: stats.steps,
                });
            }
            step(p, e, &mut q[e as usize], ev, sync, &mut stats, progress)?;
            match ready(p, e, &mut q[e as usize], sync)? {
                Some(next) => ev = next,
                None => break,
            }
        }
    }
}

/// The random stream of a seeded order: xorshift64* whose state is the first output of
/// splitmix64 seeded with `seed` (1 if that is 0, a state xorshift cannot leave).
fn seeded_stream(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    state = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state = (state ^ (state >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    state ^= state >> 31;
    if state == 0 {
        state = 1;
    }
    move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// What a seeded round does with random value `r` when `ready` engines can issue: the index
/// of the engine it runs (`r` modulo `ready`) and how many bundles it runs in a row at most
/// (1 to 4, from the high half of `r`).
fn seeded_pick(r: u64, ready: usize) -> (usize, u64) {
    ((r % ready as u64) as usize, 1 + (r >> 32) % 4)
}

fn site<P: Streams>(p: &P, e: Engine, pc: usize) -> Site {
    Site {
        engine: e,
        index: pc,
        opcode: p.opcode(e, pc),
    }
}

fn deadlock_report<P: Streams>(
    p: &mut P,
    q: &[Queue; Engine::COUNT],
    sync: &SyncState,
    steps: u64,
) -> DeadlockReport {
    // What each unfinished engine can still update.
    let mut pending: [Vec<PendingUpdate>; Engine::COUNT] = Default::default();
    for e in Engine::ALL {
        if !q[e as usize].done {
            pending[e as usize] = p.pending_updates(e, q[e as usize].pc);
        }
    }
    let mut blocked = Vec::new();
    let mut edges: [Vec<Engine>; Engine::COUNT] = Default::default();
    let mut on: [Option<SyncRef>; Engine::COUNT] = [None; Engine::COUNT];
    for e in Engine::ALL {
        let qe = &q[e as usize];
        if qe.done {
            continue;
        }
        let wait = qe
            .pending
            .as_ref()
            .and_then(|ev| ev.blocking(sync, p.regs(e)));
        let waiting_for = wait
            .map(|w| w.describe(sync, p.regs(e)))
            .unwrap_or_else(|| "nothing (not blocked)".to_string());
        let target = wait.map(SyncRef::of_wait);
        let mut producers = Vec::new();
        if let Some(t) = target {
            for f in Engine::ALL {
                for u in pending[f as usize].iter().filter(|u| u.target == t) {
                    producers.push(Producer {
                        engine: f,
                        index: u.index,
                        via: u.via.clone(),
                    });
                    if !edges[e as usize].contains(&f) {
                        edges[e as usize].push(f);
                    }
                }
            }
        }
        on[e as usize] = target;
        blocked.push(BlockedEngine {
            site: site(p, e, qe.pc),
            waiting_for,
            on: target,
            producers,
        });
    }
    let cycle = find_cycle(&edges).map(|c| {
        c.into_iter()
            .filter_map(|e| on[e as usize].map(|t| CycleEdge { engine: e, on: t }))
            .collect()
    });
    DeadlockReport {
        blocked,
        steps,
        cycle,
    }
}

fn budget_fault<P: Streams>(p: &P, q: &[Queue; Engine::COUNT], budget: u64, bundles: u64) -> Fault {
    let positions: Vec<String> = Engine::ALL
        .iter()
        .filter(|e| !q[**e as usize].done)
        .map(|&e| format!("{} #{}", e, q[e as usize].pc))
        .collect();
    Fault::StepBudget {
        budget,
        bundles,
        dma_steps: p.work(),
        positions: positions.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeded stream against values computed independently from the published
    /// algorithms: splitmix64 seeded with 0 first gives 0xe220a8397b1dcdaf (its reference
    /// value); xorshift64* (shifts 12, 25, 27, multiplier 0x2545f4914f6cdd1d) continues from
    /// there. The seed whose splitmix64 value is 0 starts xorshift64* from state 1.
    #[test]
    fn the_seeded_stream_is_xorshift64_star_from_splitmix64() {
        let first = |seed: u64, n: usize| {
            let mut r = seeded_stream(seed);
            (0..n).map(|_| r()).collect::<Vec<u64>>()
        };
        assert_eq!(
            first(0, 3),
            [
                0x7bbc_b40d_5506_82d0,
                0xde7f_e413_d00c_c9fd,
                0xb3c6_3835_3c66_8c91
            ]
        );
        assert_eq!(
            first(1_234_567, 2),
            [0x071f_60b8_6508_44db, 0xf024_5c7f_f745_8f04]
        );
        let zero_state = 0u64.wrapping_sub(0x9E37_79B9_7F4A_7C15);
        assert_eq!(
            first(zero_state, 2),
            [0x47e4_ce4b_896c_dd1d, 0xabcf_a6a8_e079_651d]
        );
    }

    #[test]
    fn a_seeded_pick_takes_the_engine_from_the_low_bits_and_a_burst_of_1_to_4_from_the_high() {
        assert_eq!(seeded_pick(7, 5), (2, 1));
        assert_eq!(seeded_pick(7, 1), (0, 1));
        assert_eq!(seeded_pick(u64::MAX, 5), (0, 4));
        assert_eq!(seeded_pick(u64::MAX, 4), (3, 4));
        // Each burst length comes from bits 32 and 33 alone.
        let bursts: Vec<u64> = (0..4u64).map(|h| seeded_pick(h << 32 | 3, 2).1).collect();
        assert_eq!(bursts, [1, 2, 3, 4]);
        assert_eq!(seeded_pick(4 << 32 | 3, 2), (1, 1));
        // Over a stream every engine and every burst length comes up.
        let mut r = seeded_stream(42);
        let mut seen = [[false; 4]; 5];
        for _ in 0..400 {
            let (k, b) = seeded_pick(r(), 5);
            seen[k][b as usize - 1] = true;
        }
        assert!(seen.iter().flatten().all(|&s| s), "{seen:?}");
    }
    use crate::machine::sync::{Cmp, Operand, Update, UpdateOp, Wait, When};

    /// A scripted program: each bundle is (events, flow); execution logs (engine, pc).
    struct Script {
        streams: [Vec<(Events, Flow)>; Engine::COUNT],
        log: Vec<(Engine, usize)>,
        regs: [u32; 64],
    }

    impl Streams for Script {
        fn stream_len(&self, e: Engine) -> usize {
            self.streams[e as usize].len()
        }
        fn opcode(&self, _: Engine, _: usize) -> u8 {
            0xA4
        }
        fn events(&mut self, e: Engine, pc: usize) -> Result<Events, Fault> {
            Ok(self.streams[e as usize][pc].0)
        }
        fn regs(&self, _: Engine) -> &[u32] {
            &self.regs
        }
        fn execute(&mut self, e: Engine, pc: usize, _: &mut SyncState) -> Result<Flow, Fault> {
            self.log.push((e, pc));
            Ok(self.streams[e as usize][pc].1)
        }
    }

    fn wait_ge(idx: u8, v: u32) -> Events {
        Events {
            waits: [
                Some(Wait::Sem {
                    idx,
                    cmp: Cmp::Ge,
                    rhs: Operand::Imm(v),
                }),
                None,
            ],
            updates: [None, None],
        }
    }
    fn inc(idx: u8) -> Events {
        Events {
            waits: [None, None],
            updates: [
                Some(Update {
                    idx,
                    op: UpdateOp::SemInc,
                    when: When::Complete,
                }),
                None,
            ],
        }
    }

    fn script(streams: [Vec<(Events, Flow)>; Engine::COUNT]) -> Script {
        Script {
            streams,
            log: Vec::new(),
            regs: [0; 64],
        }
    }

    #[test]
    fn handshake_orders_engines() {
        // PE waits for sem 0 >= 1, which SP sets at its second bundle.
        let mut s = script([
            vec![(wait_ge(0, 1), Flow::Next)],
            vec![],
            vec![],
            vec![],
            vec![(Events::default(), Flow::Next), (inc(0), Flow::Next)],
        ]);
        let mut sync = SyncState::default();
        let st = run(&mut s, &mut sync, 100, &mut |_| {}).unwrap();
        assert_eq!(
            s.log,
            vec![(Engine::Sp, 0), (Engine::Sp, 1), (Engine::Pe, 0)]
        );
        assert_eq!(st.steps, 3);
        assert_eq!(st.per_engine, [1, 0, 0, 0, 2]);
        assert_eq!(sync.sems[0], 1);
    }

    #[test]
    fn round_robin_by_wire_id() {
        let n = |k| vec![(Events::default(), Flow::Next); k];
        let mut s = script([n(2), n(1), n(0), n(2), n(1)]);
        let mut sync = SyncState::default();
        run(&mut s, &mut sync, 100, &mut |_| {}).unwrap();
        use Engine::*;
        assert_eq!(
            s.log,
            vec![(Pe, 0), (Act, 0), (Dve, 0), (Sp, 0), (Pe, 1), (Dve, 1)]
        );
    }

    #[test]
    fn deadlock_names_every_blocked_engine() {
        let mut s = script([
            vec![(wait_ge(1, 1), Flow::Next)],
            vec![(Events::default(), Flow::Next), (wait_ge(2, 3), Flow::Next)],
            vec![],
            vec![],
            vec![],
        ]);
        let mut sync = SyncState::default();
        let f = run(&mut s, &mut sync, 100, &mut |_| {}).unwrap_err();
        let Fault::Deadlock(r) = &f else {
            panic!("{f:?}")
        };
        assert_eq!(r.blocked.len(), 2);
        assert_eq!(r.blocked[0].site.engine, Engine::Pe);
        assert_eq!(r.blocked[1].site.index, 1);
        let text = f.to_string();
        assert!(text.contains("pe bundle #0"), "{text}");
        assert!(
            text.contains("semaphore 1 >= 1 (current value 0)"),
            "{text}"
        );
        assert!(text.contains("act bundle #1"), "{text}");
        assert!(
            text.contains("semaphore 2 >= 3 (current value 0)"),
            "{text}"
        );
        assert_eq!(f.kind(), "deadlock");
    }

    #[test]
    fn seeded_orders_respect_waits_and_vary() {
        let mk = || {
            let n = |k| vec![(Events::default(), Flow::Next); k];
            script([
                vec![(wait_ge(0, 1), Flow::Next)],
                n(3),
                n(3),
                n(3),
                vec![(Events::default(), Flow::Next), (inc(0), Flow::Next)],
            ])
        };
        let mut logs = Vec::new();
        for seed in 0..8 {
            let mut s = mk();
            let mut sync = SyncState::default();
            let st = run_ordered(&mut s, &mut sync, 100, Order::Seeded(seed), &mut |_| {}).unwrap();
            assert_eq!(st.steps, 12);
            let pe = s.log.iter().position(|x| *x == (Engine::Pe, 0)).unwrap();
            let sp1 = s.log.iter().position(|x| *x == (Engine::Sp, 1)).unwrap();
            assert!(
                sp1 < pe,
                "seed {seed}: PE issued before its semaphore was set"
            );
            logs.push(s.log);
        }
        logs.sort();
        logs.dedup();
        assert!(logs.len() > 1, "every seed gave the same interleaving");
    }

    #[test]
    fn step_budget_stops_a_loop() {
        let mut s = script([
            vec![(Events::default(), Flow::Jump(0))],
            vec![],
            vec![],
            vec![],
            vec![],
        ]);
        let mut sync = SyncState::default();
        let f = run(&mut s, &mut sync, 1000, &mut |_| {}).unwrap_err();
        assert!(matches!(f, Fault::StepBudget { budget: 1000, .. }), "{f:?}");
        assert!(f.to_string().contains("pe #0"));
        assert_eq!(s.log.len(), 1000);
    }

    #[test]
    fn finish_stops_an_engine() {
        let mut s = script([
            vec![
                (Events::default(), Flow::Finish),
                (Events::default(), Flow::Next),
            ],
            vec![],
            vec![],
            vec![],
            vec![],
        ]);
        let mut sync = SyncState::default();
        let st = run(&mut s, &mut sync, 10, &mut |_| {}).unwrap();
        assert_eq!(st.steps, 1);
    }
}
