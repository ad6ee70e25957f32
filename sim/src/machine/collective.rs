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
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tpbsim_isa::{AluOp, CollectiveType, NumFormat};

use super::fault::Site;
use crate::numerics::cast::{from_f32_slice, to_f32_slice, CastPolicy};

/// What a member receives from a complete collective: its output bytes, or why the collective
/// failed (the members disagree, the data cannot be reduced).
pub type Received = Result<Arc<Vec<u8>>, String>;

/// The collective types the value model takes: the spec's `COLLECTIVE_TYPE` (the
/// `ctype` byte of `TriggerCollective`, generated as [`CollectiveType`]), with the permute
/// forms folded into one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `ALL_REDUCE`: every member receives the reduction of all contributions.
    AllReduce,
    /// `REDUCE_SCATTER`: member at position p receives block p of the reduction.
    ReduceScatter,
    /// `ALL_GATHER`: every member receives the contributions laid end to end in replica order.
    AllGather,
    /// `ALL_TO_ALL`: block q of member p's contribution goes to member q, at block p.
    AllToAll,
    /// `PERMUTE` (and `PERMUTE_IMPLICIT`): a member receives the contribution of its source in
    /// `src_target_pairs`.
    Permute,
    /// Not a `COLLECTIVE_TYPE`: a SEND_RECV (0xCB) pair. The group is `[sender, receiver]`;
    /// the receiver receives the sender's bytes.
    SendRecv,
}

/// Why a collective type is not in the value model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// `PERMUTE_REDUCE` / `PERMUTE_REDUCE_IMPLICIT`.
    #[error("collective type {code} ({name}) is not simulated: no public source gives the operand it reduces with")]
    PermuteReduce {
        /// The type's code.
        code: u8,
        /// The type's spec name.
        name: &'static str,
    },
    /// `ALL_TO_ALL_V`.
    #[error("collective type {code} (ALL_TO_ALL_V) is not simulated: its send and receive counts are not in the 0xC8 record")]
    AllToAllV {
        /// The type's code.
        code: u8,
    },
    /// A code the spec's `COLLECTIVE_TYPE` does not name as a collective (`INVALID`, or no name).
    #[error("collective type {code} names no collective (1..=9)")]
    NoCollective {
        /// The code.
        code: u8,
    },
}

impl Kind {
    /// The type of `ctype`, or why it is not simulated.
    pub fn of(ctype: CollectiveType) -> Result<Kind, KindError> {
        let code = ctype.0;
        Ok(match ctype {
            CollectiveType::ALL_REDUCE => Kind::AllReduce,
            CollectiveType::REDUCE_SCATTER => Kind::ReduceScatter,
            CollectiveType::ALL_GATHER => Kind::AllGather,
            CollectiveType::ALL_TO_ALL => Kind::AllToAll,
            CollectiveType::PERMUTE | CollectiveType::PERMUTE_IMPLICIT => Kind::Permute,
            CollectiveType::PERMUTE_REDUCE | CollectiveType::PERMUTE_REDUCE_IMPLICIT => {
                return Err(KindError::PermuteReduce {
                    code,
                    name: ctype.name().unwrap_or("PERMUTE_REDUCE"),
                })
            }
            CollectiveType::ALL_TO_ALL_V => return Err(KindError::AllToAllV { code }),
            _ => return Err(KindError::NoCollective { code }),
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
            Kind::AllReduce | Kind::AllToAll | Kind::Permute | Kind::SendRecv => n,
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

    /// `acc[i] = acc[i] ∘ x[i]`.
    fn apply_slice(self, acc: &mut [f32], x: &[f32]) {
        match self {
            // A loop of its own for the add, with the op known, so that it vectorises.
            Reduce::Add => acc
                .iter_mut()
                .zip(x)
                .for_each(|(a, b)| *a = Reduce::Add.apply(*a, *b)),
            _ => acc
                .iter_mut()
                .zip(x)
                .for_each(|(a, b)| *a = self.apply(*a, *b)),
        }
    }

    #[inline]
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
    pub data: Window,
    /// The issuing bundle.
    pub site: Site,
}

/// Bytes a member posted: a range of a buffer shared with the poster's variable, which the
/// poster copies before it writes the variable again (copy on write), so the window keeps the
/// bytes of the moment it was posted.
#[derive(Clone)]
pub struct Window {
    buf: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: std::ops::Range<usize>,
}

impl Window {
    /// Bytes `range` of `buf`; `None` when the range is not inside it.
    pub fn new(
        buf: Arc<dyn AsRef<[u8]> + Send + Sync>,
        range: std::ops::Range<usize>,
    ) -> Option<Window> {
        let ok = range.start <= range.end && range.end <= (*buf).as_ref().len();
        ok.then_some(Window { buf, range })
    }
}

impl std::ops::Deref for Window {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.buf).as_ref()[self.range.clone()]
    }
}

impl From<Vec<u8>> for Window {
    fn from(v: Vec<u8>) -> Window {
        let range = 0..v.len();
        Window {
            buf: Arc::new(v),
            range,
        }
    }
}

impl PartialEq for Window {
    fn eq(&self, o: &Window) -> bool {
        self[..] == o[..]
    }
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Window({} bytes)", self.len())
    }
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

/// A wait at the [`Comm`] that can never complete: no rank of the world runs any more and
/// collectives are open.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{report}")]
pub struct Deadlock {
    /// The open collectives, the ranks that never posted them and where every waiting rank
    /// stands.
    pub report: String,
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
    /// Stop the world: every wait fails with `why` (see [`Comm::abort`]). A transport to
    /// another process leaves it to the host: the member's leaving is what it forwards.
    fn abort(&self, why: String) {
        let _ = why;
    }
    /// Whether rank `r` is a member of the world, where the meeting point knows it locally; a
    /// transport that does not answers `true`, and a post naming a rank outside the world is
    /// then reported by the world as a deadlock naming that rank.
    fn has_rank(&self, r: u32) -> bool {
        let _ = r;
        true
    }
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
        Comm::wait(self, m, tickets, where_).map_err(|d| d.report)
    }

    fn leave(&self, m: Member, faulted: bool) {
        Comm::leave(self, m, faulted)
    }

    fn abort(&self, why: String) {
        Comm::abort(self, why)
    }

    fn has_rank(&self, r: u32) -> bool {
        Comm::has_rank(self, r)
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
    ) -> Result<Vec<(u64, Received)>, Deadlock> {
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
                return Err(Deadlock { report: f.clone() });
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
                return Err(Deadlock { report });
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Whether rank `r` is a member of the world.
    pub fn has_rank(&self, r: u32) -> bool {
        self.lock().status.keys().any(|m| m.rank == r)
    }

    /// Stop the world: every wait, now and later, fails with `why` (a transport that lost a
    /// member's process, a member whose run was interrupted).
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

/// The ring chunk `p` of `n` elements over `g` positions: `[p·n/g, (p+1)·n/g)`.
pub fn ring_chunk(p: usize, n: usize, g: usize) -> std::ops::Range<usize> {
    p * n / g..(p + 1) * n / g
}

/// The reduction of the contributions `xs` (by position in the group), element by element in
/// fp32. Replica order folds positions 0, 1, …, g−1; ring order folds the elements of ring
/// chunk `p` starting at position `p + 1` and going round the ring, so that the chunk ends at
/// position `p` (the member that holds it after a ring reduce-scatter).
pub(crate) fn fold(xs: &[&[f32]], n: usize, reduce: Reduce, order: Order) -> Vec<f32> {
    let mut acc = vec![0f32; n];
    fold_into(xs, reduce, order, &mut acc);
    acc
}

/// [`fold`] into `acc` (as many elements as each contribution).
fn fold_into(xs: &[&[f32]], reduce: Reduce, order: Order, acc: &mut [f32]) {
    let (g, n) = (xs.len(), acc.len());
    if g == 0 {
        return;
    }
    let fold_range = |acc: &mut [f32], start: usize, first: usize| {
        let end = start + acc.len();
        acc.copy_from_slice(&xs[first][start..end]);
        for k in 1..g {
            reduce.apply_slice(acc, &xs[(first + k) % g][start..end]);
        }
    };
    // Blocks of 64 Ki elements fold in parallel; each element's order is fixed by its chunk.
    const BLOCK: usize = 1 << 16;
    let chunks: Vec<(usize, usize)> = match order {
        Order::Replica => vec![(0, 0)],
        Order::Ring => (0..g)
            .map(|p| (ring_chunk(p, n, g).start, (p + 1) % g))
            .collect(),
    };
    use rayon::prelude::*;
    acc.par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(b, block)| {
            let mut start = b * BLOCK;
            let end = start + block.len();
            while start < end {
                // The chunk holding `start` and where it ends.
                let c = chunks.partition_point(|&(s, _)| s <= start) - 1;
                let stop = chunks.get(c + 1).map_or(end, |&(s, _)| s.min(end));
                let off = start - b * BLOCK;
                fold_range(&mut block[off..off + (stop - start)], start, chunks[c].1);
                start = stop;
            }
        });
}

/// The output of each member of a complete collective, by rank; an error when the members'
/// posts disagree or the data cannot be reduced.
fn resolve(inst: &Instance, order: Order) -> Result<BTreeMap<u32, Arc<Vec<u8>>>, String> {
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
            // fp32 contributions are read in place; other types are widened to fp32 first.
            let in_place: Option<Vec<&[f32]>> = (p0.format == NumFormat::Float32)
                .then(|| {
                    by_pos
                        .iter()
                        .map(|p| bytemuck::try_cast_slice::<u8, f32>(&p.data).ok())
                        .collect()
                })
                .flatten();
            let widened: Vec<Vec<f32>> = match in_place {
                Some(_) => Vec::new(),
                None => by_pos
                    .iter()
                    .map(|p| {
                        let mut v = vec![0f32; n];
                        to_f32_slice(&p.data, p.format, &mut v).map(|_| v)
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("{}: {e}", p0.site))?,
            };
            let xs: Vec<&[f32]> =
                in_place.unwrap_or_else(|| widened.iter().map(Vec::as_slice).collect());
            // Every element is folded once; all members of an all-reduce receive the same
            // values. In ring order the element's ring chunk decides where its fold starts.
            if p0.kind == Kind::AllReduce && p0.format == NumFormat::Float32 {
                // fp32 results are their own encoding: fold straight into the output bytes.
                let mut bytes = super::core::zeroed((n * eb) as u64)
                    .ok_or_else(|| format!("{}: cannot allocate the result", p0.site))?;
                if let Ok(acc) = bytemuck::try_cast_slice_mut::<u8, f32>(&mut bytes) {
                    fold_into(&xs, reduce, order, acc);
                    let bytes = Arc::new(bytes);
                    for r in group {
                        out.insert(*r, bytes.clone());
                    }
                    return Ok(out);
                }
            }
            let folded = fold(&xs, n, reduce, order);
            let encode = |vals: &[f32]| -> Result<Vec<u8>, String> {
                let mut bytes = super::core::zeroed((vals.len() * eb) as u64)
                    .ok_or_else(|| format!("{}: cannot allocate the result", p0.site))?;
                from_f32_slice(vals, &mut bytes, p0.format, &CastPolicy::REFERENCE)
                    .map_err(|e| format!("{}: {e}", p0.site))?;
                Ok(bytes)
            };
            if p0.kind == Kind::ReduceScatter {
                for (pos, r) in group.iter().enumerate() {
                    out.insert(
                        *r,
                        Arc::new(encode(&folded[pos * block..(pos + 1) * block])?),
                    );
                }
            } else {
                let bytes = Arc::new(encode(&folded)?);
                for r in group {
                    out.insert(*r, bytes.clone());
                }
            }
        }
        Kind::AllGather => {
            let mut all = Vec::with_capacity(n * eb * g);
            for p in &by_pos {
                all.extend_from_slice(&p.data);
            }
            let all = Arc::new(all);
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
                out.insert(*r, Arc::new(v));
            }
        }
        Kind::SendRecv => {
            if let (Some(&s), Some(&t)) = (group.first(), group.get(1)) {
                out.insert(t, Arc::new(inst.posted[&s].0.data.to_vec()));
            }
        }
        Kind::Permute => {
            for &(src, dst) in &p0.pairs {
                if let Some((p, _)) = inst.posted.get(&src) {
                    out.insert(dst, Arc::new(p.data.to_vec()));
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
            data: vec![0; n as usize * 4].into(),
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

    /// The ring fold against an element-by-element reference, for counts that do not divide
    /// by the group (uneven and empty chunks) and across the parallel block size.
    #[test]
    fn the_ring_fold_starts_each_element_after_the_end_of_its_chunk() {
        for (g, n) in [
            (4usize, 2usize),
            (4, 10),
            (3, 7),
            (5, (1 << 16) + 3),
            (1, 5),
        ] {
            let xs: Vec<Vec<f32>> = (0..g)
                .map(|r| {
                    (0..n)
                        .map(|i| {
                            ((r * 7 + i * 13) % 19) as f32 * 1.0e7_f32.powi((i % 2) as i32) + 0.3
                        })
                        .collect()
                })
                .collect();
            let views: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
            let got = fold(&views, n, Reduce::Add, Order::Ring);
            for i in 0..n {
                let c = (0..g)
                    .filter(|&c| ring_chunk(c, n, g).contains(&i))
                    .collect::<Vec<_>>();
                assert_eq!(c.len(), 1, "element {i} in one chunk");
                let first = (c[0] + 1) % g;
                let want = (1..g).fold(xs[first][i], |a, k| a + xs[(first + k) % g][i]);
                assert_eq!(
                    got[i].to_bits(),
                    want.to_bits(),
                    "g {g}, n {n}, element {i}"
                );
            }
            let rep = fold(&views, n, Reduce::Max, Order::Replica);
            for i in 0..n {
                let want = xs
                    .iter()
                    .skip(1)
                    .fold(xs[0][i], |a, x| crate::numerics::alu::sse_max(a, x[i]));
                assert_eq!(rep[i].to_bits(), want.to_bits());
            }
        }
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
                .unwrap_err()
                .report;
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
        a.data = 1f32.to_le_bytes().to_vec().into();
        let mut b = a.clone();
        b.data = 2f32.to_le_bytes().to_vec().into();
        let mut c = a.clone();
        c.data = 3f32.to_le_bytes().to_vec().into();
        let mut d = a.clone();
        d.data = 4f32.to_le_bytes().to_vec().into();
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
        let of = |c: u8| Kind::of(CollectiveType(c));
        for c in [0u8, 6, 8, 9, 10, 255] {
            assert!(of(c).is_err(), "{c}");
        }
        for c in 1u8..=5 {
            assert!(of(c).is_ok(), "{c}");
        }
        assert_eq!(of(7), Ok(Kind::Permute));
        assert_eq!(
            of(8).unwrap_err().to_string(),
            "collective type 8 (PERMUTE_REDUCE_IMPLICIT) is not simulated: no public source gives the operand it reduces with"
        );
        assert_eq!(of(9), Err(KindError::AllToAllV { code: 9 }));
        assert_eq!(of(0), Err(KindError::NoCollective { code: 0 }));
    }
}
