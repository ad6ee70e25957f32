//! Collectives across ranks: the meeting point of the ranks of a world ([`Comm`]) and the
//! value model of each collective type (docs/collectives.md).
//!
//! A PSEUDO_TRIGGER_COLLECTIVE (0xC8) does not block its engine: the rank posts its
//! contribution (the input window, copied when the bundle issues) and goes on. When a rank can
//! go no further (every unfinished engine waits, or every engine has finished) with
//! collectives outstanding, it waits at the [`Comm`] until one of them is complete, writes the
//! result into its output window and only then makes the bundle's `_COMPLETE` updates (the
//! runtime requires "increment on complete"). A collective is complete when every member of
//! its replica group has posted it: the k-th collective a rank posts in a group (per core of
//! the rank) meets the k-th of every other member. What a rank reads is fixed when it posts and
//! what it receives is written while it stands still, so the results do not depend on the
//! threads' timing.
//!
//! **Reduction order.** The hardware's order (ring steps, chunking) is not public. The default
//! is the compiler's BIR simulator's: every contribution widened to fp32 and folded in replica
//! order (the order of the ranks in the group), the result rounded once to the element type
//! (round to nearest even). [`Order::Ring`] folds as a ring reduce-scatter does: the block
//! that ends at rank `r` starts at rank `r + 1` and goes round the ring.
//!
//! **No hang.** A rank that waits is woken when its collective completes, when a mismatch is
//! found, or when no rank of the world runs any more (every rank waits, has finished or has
//! faulted): then the collectives still open are a deadlock, reported with the ranks that have
//! not posted them and where every waiting rank stands.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use tpbsim_isa::{AluOp, NumFormat};

use super::fault::Site;
use crate::numerics::cast::{from_f32_slice, to_f32_slice, CastPolicy};

/// What a member receives from a complete collective: its output bytes, or why the collective
/// failed (the members disagree, the data cannot be reduced).
pub type Received = Result<Vec<u8>, String>;

/// The collective types of the record's `ctype` byte (`NEURON_ISA_TPB_COLLECTIVE_TYPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// 1: every member receives the reduction of all contributions.
    AllReduce,
    /// 2: member at position p receives block p of the reduction.
    ReduceScatter,
    /// 3: every member receives the contributions laid end to end in replica order.
    AllGather,
    /// 4: block q of member p's contribution goes to member q, at block p.
    AllToAll,
    /// 5 (and 7, the implicit form): a member receives the contribution of its source in
    /// `src_target_pairs`.
    Permute,
}

impl Kind {
    /// The type of code `c`, or why it is not simulated.
    pub fn of(c: u8) -> Result<Kind, String> {
        Ok(match c {
            1 => Kind::AllReduce,
            2 => Kind::ReduceScatter,
            3 => Kind::AllGather,
            4 => Kind::AllToAll,
            5 | 7 => Kind::Permute,
            6 | 8 => return Err(format!("collective type {c} (PERMUTE_REDUCE{}) is not simulated: no public source gives the operand it reduces with", if c == 8 { "_IMPLICIT" } else { "" })),
            9 => return Err("collective type 9 (ALL_TO_ALL_V) is not simulated: its send and receive counts are not in the 0xC8 record".into()),
            _ => return Err(format!("collective type {c} names no collective (1..=9)")),
        })
    }

    /// Whether the type reduces.
    pub fn reduces(self) -> bool {
        matches!(self, Kind::AllReduce | Kind::ReduceScatter)
    }

    /// Elements written to each member's output for `n` elements posted by each member of a
    /// group of `g`.
    pub fn out_elements(self, n: u64, g: u64) -> u64 {
        match self {
            Kind::AllReduce | Kind::AllToAll | Kind::Permute => n,
            Kind::ReduceScatter => n / g.max(1),
            Kind::AllGather => n.saturating_mul(g),
        }
    }
}

/// The reduction of a reducing collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// ALU ADD.
    Add,
    /// ALU MAX.
    Max,
    /// ALU MIN.
    Min,
}

impl Reduce {
    /// The reduction of ALU op `op` (the DMA reduction path takes add, max and min).
    pub fn of(op: AluOp) -> Option<Reduce> {
        match op {
            AluOp::ADD => Some(Reduce::Add),
            AluOp::MAX => Some(Reduce::Max),
            AluOp::MIN => Some(Reduce::Min),
            _ => None,
        }
    }

    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Reduce::Add => a + b,
            Reduce::Max => crate::numerics::alu::sse_max(a, b),
            Reduce::Min => crate::numerics::alu::sse_min(a, b),
        }
    }
}

/// The element types the DMA reduction path takes.
pub fn reducible(f: NumFormat) -> bool {
    matches!(
        f,
        NumFormat::Bfloat16
            | NumFormat::Float16
            | NumFormat::Float32
            | NumFormat::Float8E4m3
            | NumFormat::Float8E5m2
            | NumFormat::Float8E3m4
    )
}

/// The order a reduction folds the contributions in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Replica order 0..N−1 in fp32 (the compiler's BIR simulator).
    #[default]
    Replica,
    /// Ring reduce-scatter order in fp32: the block that ends at position p is folded starting
    /// at position p + 1 and going round the ring.
    Ring,
}

/// One member's contribution to a collective.
#[derive(Clone, Debug)]
pub struct Post {
    /// Collective type.
    pub kind: Kind,
    /// Reduction (reducing types).
    pub reduce: Option<Reduce>,
    /// The raw ALU op, compared between members.
    pub op: u8,
    /// Element type.
    pub format: NumFormat,
    /// Elements posted.
    pub elements: u64,
    /// The replica group (ranks, in replica order).
    pub group: Vec<u32>,
    /// `src_target_pairs` restricted to the group (permutes).
    pub pairs: Vec<(u32, u32)>,
    /// The input window's bytes.
    pub data: Vec<u8>,
    /// The issuing bundle.
    pub site: Site,
}

impl Post {
    fn signature(&self) -> String {
        format!(
            "type {:?}, op {:#04x}, {} × {}, group {:?}",
            self.kind, self.op, self.elements, self.format, self.group
        )
    }
}

/// A participant: one core of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// Rank.
    pub rank: u32,
    /// Core of the rank (the logical core's index).
    pub core: u32,
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} core {}", self.rank, self.core)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Status {
    Running,
    Waiting(String),
    Finished,
    Faulted,
}

#[derive(Debug, Default)]
struct Instance {
    /// By rank: the post and the poster's ticket.
    posted: BTreeMap<u32, (Post, u64)>,
}

#[derive(Debug, Default)]
struct State {
    status: BTreeMap<Member, Status>,
    /// Per core and group: the collectives in posting order.
    instances: BTreeMap<(u32, Vec<u32>), Vec<Instance>>,
    /// Per member and group: how many it has posted.
    posted: BTreeMap<(Member, Vec<u32>), usize>,
    /// Results not yet taken, by member and ticket.
    results: BTreeMap<(Member, u64), Received>,
    /// Tickets handed out per member.
    tickets: BTreeMap<Member, u64>,
    /// The world stopped: why.
    failure: Option<String>,
}

/// Where the members of a world meet: [`Comm`] in the process that holds it, or a transport
/// that forwards to the process holding the world's one [`Comm`] (`super::remote`, docs/mpi.md).
/// Every implementation folds with the same [`Comm`], so results do not depend on where the
/// members run.
pub trait Meeting: Send + Sync + std::fmt::Debug {
    /// Post `p` for member `m`; the ticket its result will carry.
    fn post(&self, m: Member, p: Post) -> Result<u64, String>;
    /// Wait until one of `tickets` of member `m` is complete (see [`Comm::wait`]).
    fn wait(
        &self,
        m: Member,
        tickets: &[u64],
        where_: String,
    ) -> Result<Vec<(u64, Received)>, String>;
    /// Member `m` has stopped (see [`Comm::leave`]).
    fn leave(&self, m: Member, faulted: bool);
}

impl Meeting for Comm {
    fn post(&self, m: Member, p: Post) -> Result<u64, String> {
        Ok(Comm::post(self, m, p))
    }

    fn wait(
        &self,
        m: Member,
        tickets: &[u64],
        where_: String,
    ) -> Result<Vec<(u64, Received)>, String> {
        Comm::wait(self, m, tickets, where_)
    }

    fn leave(&self, m: Member, faulted: bool) {
        Comm::leave(self, m, faulted)
    }
}

/// The meeting point of the ranks of one run.
#[derive(Debug)]
pub struct Comm {
    state: Mutex<State>,
    cv: Condvar,
    order: Order,
}

impl Comm {
    /// A world of `members` (every core of every rank), folding reductions in `order`.
    pub fn new(members: impl IntoIterator<Item = Member>, order: Order) -> Comm {
        let status = members.into_iter().map(|m| (m, Status::Running)).collect();
        Comm {
            state: Mutex::new(State {
                status,
                ..State::default()
            }),
            cv: Condvar::new(),
            order,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Post `p` for member `m`; the ticket its result will carry.
    pub fn post(&self, m: Member, p: Post) -> u64 {
        let mut s = self.lock();
        let ticket = {
            let t = s.tickets.entry(m).or_insert(0);
            *t += 1;
            *t
        };
        let key = (m.core, p.group.clone());
        let seq = {
            let c = s.posted.entry((m, p.group.clone())).or_insert(0);
            *c += 1;
            *c - 1
        };
        let list = s.instances.entry(key.clone()).or_default();
        while list.len() <= seq {
            list.push(Instance::default());
        }
        let group = p.group.clone();
        list[seq].posted.insert(m.rank, (p, ticket));
        if group.iter().all(|r| list[seq].posted.contains_key(r)) {
            let inst = std::mem::take(&mut list[seq]);
            let out = resolve(&inst, self.order);
            for (rank, (_, t)) in inst.posted {
                let who = Member { rank, core: m.core };
                let r = match &out {
                    Ok(v) => Ok(v.get(&rank).cloned().unwrap_or_default()),
                    Err(e) => Err(e.clone()),
                };
                s.results.insert((who, t), r);
            }
            self.cv.notify_all();
        }
        ticket
    }

    /// Wait until one of `tickets` of member `m` is complete: the complete ones with their
    /// output bytes (an error for a collective the members disagree on). `where_` says where
    /// the member stands, for a deadlock report. Errs when the world can no longer complete
    /// any of them.
    pub fn wait(
        &self,
        m: Member,
        tickets: &[u64],
        where_: String,
    ) -> Result<Vec<(u64, Received)>, String> {
        let mut s = self.lock();
        s.status.insert(m, Status::Waiting(where_));
        loop {
            let done: Vec<u64> = tickets
                .iter()
                .copied()
                .filter(|t| s.results.contains_key(&(m, *t)))
                .collect();
            if !done.is_empty() {
                s.status.insert(m, Status::Running);
                let out = done
                    .into_iter()
                    .filter_map(|t| s.results.remove(&(m, t)).map(|r| (t, r)))
                    .collect();
                return Ok(out);
            }
            if let Some(f) = &s.failure {
                return Err(f.clone());
            }
            // A waiting member with a result ready will run again: not a deadlock yet.
            let will_wake = s
                .results
                .keys()
                .any(|(who, _)| matches!(s.status.get(who), Some(Status::Waiting(_))));
            if !will_wake && s.status.values().all(|x| *x != Status::Running) {
                let report = deadlock(&s);
                s.failure = Some(report.clone());
                self.cv.notify_all();
                return Err(report);
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Stop the world: every wait, now and later, fails with `why` (a transport that lost a
    /// member's process).
    pub fn abort(&self, why: String) {
        let mut s = self.lock();
        if s.failure.is_none() {
            s.failure = Some(why);
        }
        self.cv.notify_all();
    }

    /// Member `m` has stopped (finished or faulted): the others no longer wait for it to run.
    pub fn leave(&self, m: Member, faulted: bool) {
        let mut s = self.lock();
        s.status.insert(
            m,
            if faulted {
                Status::Faulted
            } else {
                Status::Finished
            },
        );
        self.cv.notify_all();
    }
}

/// The report of a world in which no rank runs and collectives are open.
fn deadlock(s: &State) -> String {
    let mut open = Vec::new();
    for ((core, group), list) in &s.instances {
        for inst in list {
            let Some((_, (p, _))) = inst.posted.iter().next() else {
                continue;
            };
            let missing: Vec<String> = group
                .iter()
                .filter(|r| !inst.posted.contains_key(r))
                .map(|r| {
                    let who = Member {
                        rank: *r,
                        core: *core,
                    };
                    match s.status.get(&who) {
                        Some(Status::Finished) => format!("rank {r} (finished)"),
                        Some(Status::Faulted) => format!("rank {r} (faulted)"),
                        Some(Status::Waiting(w)) => format!("rank {r} (waiting at {w})"),
                        Some(Status::Running) => format!("rank {r} (running)"),
                        None => format!("rank {r} (not in the world)"),
                    }
                })
                .collect();
            let posted: Vec<String> = inst
                .posted
                .iter()
                .map(|(r, (q, _))| format!("rank {r} at {}", q.site))
                .collect();
            open.push(format!(
                "{:?} over group {:?} on core {core}: posted by {}; never by {}",
                p.kind,
                group,
                posted.join(", "),
                missing.join(", ")
            ));
        }
    }
    format!(
        "deadlock across ranks: no rank can go on and {} collective(s) are open: {}",
        open.len(),
        open.join("; ")
    )
}

/// The output of each member of a complete collective, by rank; an error when the members'
/// posts disagree or the data cannot be reduced.
fn resolve(inst: &Instance, order: Order) -> Result<BTreeMap<u32, Vec<u8>>, String> {
    let mut posts = inst.posted.iter();
    let Some((&r0, (p0, _))) = posts.next() else {
        return Ok(BTreeMap::new());
    };
    for (&r, (p, _)) in posts {
        if (p.kind, p.op, p.format, p.elements) != (p0.kind, p0.op, p0.format, p0.elements) {
            return Err(format!(
                "collectives differ between ranks: rank {r0} at {} posts {}, rank {r} at {} posts {}",
                p0.site,
                p0.signature(),
                p.site,
                p.signature()
            ));
        }
    }
    let group = &p0.group;
    let g = group.len();
    let by_pos: Vec<&Post> = group.iter().map(|r| &inst.posted[r].0).collect();
    let eb = p0.format.container_bytes();
    let n = p0.elements as usize;
    let mut out = BTreeMap::new();
    match p0.kind {
        Kind::AllReduce | Kind::ReduceScatter => {
            let reduce = p0.reduce.ok_or_else(|| {
                format!(
                    "{}: ALU op {:#04x} is not a reduction the DMA path takes (add, max, min)",
                    p0.site, p0.op
                )
            })?;
            if !reducible(p0.format) {
                return Err(format!(
                    "{}: {} is not an element type the DMA reduction path takes (bfloat16, float16, float32, fp8)",
                    p0.site, p0.format
                ));
            }
            let block = if p0.kind == Kind::ReduceScatter {
                if !n.is_multiple_of(g) {
                    return Err(format!(
                        "{}: reduce-scatter of {n} elements over {g} ranks: not a multiple",
                        p0.site
                    ));
                }
                n / g
            } else {
                n
            };
            let xs: Vec<Vec<f32>> = by_pos
                .iter()
                .map(|p| {
                    let mut v = vec![0f32; n];
                    to_f32_slice(&p.data, p.format, &mut v).map(|_| v)
                })
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", p0.site))?;
            let fold = |i: usize, end: usize| -> f32 {
                // The positions in fold order: replica order, or the ring order of the block
                // that ends at position `end`.
                let first = match order {
                    Order::Replica => 0,
                    Order::Ring => (end + 1) % g,
                };
                let mut acc = xs[first][i];
                for k in 1..g {
                    acc = reduce.apply(acc, xs[(first + k) % g][i]);
                }
                acc
            };
            for (pos, r) in group.iter().enumerate() {
                let range = if p0.kind == Kind::ReduceScatter {
                    pos * block..(pos + 1) * block
                } else {
                    0..n
                };
                let vals: Vec<f32> = range.map(|i| fold(i, pos)).collect();
                let mut bytes = vec![0u8; vals.len() * eb];
                from_f32_slice(&vals, &mut bytes, p0.format, &CastPolicy::REFERENCE)
                    .map_err(|e| format!("{}: {e}", p0.site))?;
                out.insert(*r, bytes);
            }
        }
        Kind::AllGather => {
            let mut all = Vec::with_capacity(n * eb * g);
            for p in &by_pos {
                all.extend_from_slice(&p.data);
            }
            for r in group {
                out.insert(*r, all.clone());
            }
        }
        Kind::AllToAll => {
            if !n.is_multiple_of(g) {
                return Err(format!(
                    "{}: all-to-all of {n} elements over {g} ranks: not a multiple",
                    p0.site
                ));
            }
            let bb = n / g * eb;
            for (q, r) in group.iter().enumerate() {
                let mut v = Vec::with_capacity(n * eb);
                for p in &by_pos {
                    v.extend_from_slice(&p.data[q * bb..(q + 1) * bb]);
                }
                out.insert(*r, v);
            }
        }
        Kind::Permute => {
            for &(src, dst) in &p0.pairs {
                if let Some((p, _)) = inst.posted.get(&src) {
                    out.insert(dst, p.data.clone());
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::Engine;

    fn post(kind: Kind, n: u64, group: Vec<u32>, index: usize) -> Post {
        Post {
            kind,
            reduce: Some(Reduce::Add),
            op: AluOp::ADD.0,
            format: NumFormat::Float32,
            elements: n,
            group,
            pairs: Vec::new(),
            data: vec![0; n as usize * 4],
            site: Site {
                engine: Engine::Pool,
                index,
                opcode: 0xC8,
            },
        }
    }

    fn m(rank: u32) -> Member {
        Member { rank, core: 0 }
    }

    #[test]
    fn a_member_that_finishes_without_posting_is_a_deadlock_naming_it() {
        let w = Comm::new([m(0), m(1), m(2)], Order::Replica);
        let t = w.post(m(0), post(Kind::AllReduce, 2, vec![0, 1, 2], 7));
        w.post(m(1), post(Kind::AllReduce, 2, vec![0, 1, 2], 7));
        w.leave(m(2), false);
        let t1 = 1;
        let e = std::thread::scope(|s| {
            let h = s.spawn(|| w.wait(m(1), &[t1], "rank 1 core 0 at POOL #7".into()));
            let e = w
                .wait(m(0), &[t], "rank 0 core 0 at POOL #7".into())
                .unwrap_err();
            assert!(h.join().unwrap().is_err());
            e
        });
        assert!(e.contains("deadlock across ranks"), "{e}");
        assert!(e.contains("never by rank 2 (finished)"), "{e}");
        assert!(
            e.contains("rank 0 at POOL bundle #7") || e.contains("rank 0 at"),
            "{e}"
        );
    }

    #[test]
    fn posts_that_differ_are_an_error_naming_both() {
        let w = Comm::new([m(0), m(1)], Order::Replica);
        let t0 = w.post(m(0), post(Kind::AllReduce, 2, vec![0, 1], 3));
        let t1 = w.post(m(1), post(Kind::AllReduce, 4, vec![0, 1], 5));
        for (who, t) in [(m(0), t0), (m(1), t1)] {
            let got = w.wait(who, &[t], String::new()).unwrap();
            let e = got[0].1.clone().unwrap_err();
            assert!(e.contains("collectives differ between ranks"), "{e}");
            assert!(e.contains("rank 0") && e.contains("rank 1"), "{e}");
            assert!(e.contains("2 ×") && e.contains("4 ×"), "{e}");
        }
    }

    #[test]
    fn the_kth_post_of_a_group_meets_the_kth_of_the_others() {
        let w = Comm::new([m(0), m(1)], Order::Replica);
        let mut a = post(Kind::AllGather, 1, vec![0, 1], 0);
        a.data = 1f32.to_le_bytes().to_vec();
        let mut b = a.clone();
        b.data = 2f32.to_le_bytes().to_vec();
        let mut c = a.clone();
        c.data = 3f32.to_le_bytes().to_vec();
        let mut d = a.clone();
        d.data = 4f32.to_le_bytes().to_vec();
        let r0 = [w.post(m(0), a), w.post(m(0), b)];
        let r1 = [w.post(m(1), c), w.post(m(1), d)];
        let got = w.wait(m(0), &r0, String::new()).unwrap();
        assert_eq!(got.len(), 2);
        let f = |v: &[u8]| -> Vec<f32> {
            v.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        assert_eq!(f(got[0].1.as_ref().unwrap()), vec![1.0, 3.0]);
        assert_eq!(f(got[1].1.as_ref().unwrap()), vec![2.0, 4.0]);
        assert_eq!(w.wait(m(1), &r1, String::new()).unwrap().len(), 2);
    }

    #[test]
    fn types_outside_the_model_are_named() {
        for c in [0u8, 6, 8, 9, 10, 255] {
            assert!(Kind::of(c).is_err(), "{c}");
        }
        for c in 1u8..=5 {
            assert!(Kind::of(c).is_ok(), "{c}");
        }
        assert_eq!(Kind::of(7), Ok(Kind::Permute));
    }
}
