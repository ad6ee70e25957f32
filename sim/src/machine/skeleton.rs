//! The synchronisation skeleton of a run and the schedule-independent acquisition rule.
//!
//! While a race check runs, every clock-changing event is recorded in run order: DMA hand-offs,
//! releases (semaphore and event updates, each with the clock it released and the *segment*
//! of the semaphore or event it belongs to) and acquisitions (each satisfied wait, with the
//! number of updates of its segment it needs). After the run, [`Skeleton::resolve`] computes for
//! every wait the clock that every legal interleaving guarantees it:
//!
//! * A **segment** is the history of one semaphore from a write (`SEM_WRITE`, whose clock is the
//!   segment's *base*) or from the start, or of one event from a change of state; its *entries*
//!   are the updates to it that follow, each with a weight (the amount it adds, or subtracts,
//!   or 1 for an event update to the segment's state).
//! * A wait in a segment **needs** `n` of the weight in one direction: `sem >= v` needs
//!   `v − base value` of increments, `sem <= v` `base value − v` of decrements, `==` whichever
//!   direction leads from the base value to `v`, an event wait one update to the awaited
//!   state, plus the weight of the other direction that certainly came before the wait (the
//!   waiter's clock covers it: its own earlier decrement of the semaphore it waits on, as in a
//!   credit hand-off). Decrements that may or may not have happened are assumed absent, which
//!   can only lower `n`.
//! * The **candidates** are the entries of the segment, in the whole run, that are not ordered
//!   after the wait (their clock does not cover the waiter's epoch at the wait): each could
//!   have arrived before the wait in some interleaving, including those that arrived after it
//!   in this run.
//! * The wait acquires the base, joined, per vector-clock component, with the smallest value
//!   `t` such that the candidates whose component is `≤ t` weigh at least `n` — the meet over
//!   every set of candidates that satisfies the wait of the join of their clocks (for unit
//!   weights: the `n`-th smallest of the candidates' components).
//!
//! Clocks of later entries depend on earlier acquisitions and the reverse, so the rule is
//! solved as a fixed point: starting from the clocks of the run (where each wait acquired the
//! prefix of updates it observed, which is one of the satisfying sets), passes over the
//! skeleton in run order recompute every clock until none changes. The function is monotone
//! and the start is above every fixed point, so the passes descend to the greatest fixed
//! point, which depends only on the program order of each agent and on the segments — not
//! on the interleaving (`docs/races.md` has the argument and the limits).

use super::race::{Agent, VClock};

/// One clock-changing event of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Queue `q` starts a transfer triggered by `by`: it joins `by`'s clock, then `by`'s
    /// epoch advances.
    Handoff { by: Agent, q: Agent },
    /// Release number `.0`.
    Release(u32),
    /// Acquisition number `.0`.
    Acquire(u32),
    /// A collective issued on `agent` keeps the agent's clock as its own (the next fork
    /// slot), and the agent's own component advances by `stride` (the epochs the collective
    /// uses).
    Fork { agent: Agent, stride: u32 },
    /// `agent`'s clock and the clock kept in fork slot `slot` change places: a collective's
    /// completion runs on its own clock, and gives the agent's back after it.
    Swap { agent: Agent, slot: u32 },
}

#[derive(Clone, Debug)]
struct Release {
    agent: Agent,
    /// Segment the release is an entry of (or the base of).
    seg: u32,
    /// Weight upward (increments, event updates) and downward (decrements).
    up: u64,
    down: u64,
    /// The clock it released (in the run, then in the resolution).
    clock: VClock,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Need {
    /// Nothing recorded to acquire (the value changed outside the model's view).
    Nothing,
    /// `n` of the segment's weight in one direction, plus the weight of the other direction
    /// that is certainly applied before the wait (`n <= 0` and nothing certain: the base
    /// alone).
    Count { seg: u32, up: bool, n: i64 },
}

#[derive(Clone, Debug)]
struct Acquire {
    agent: Agent,
    /// The waiter's own clock component at the wait.
    epoch: u32,
    need: Need,
    /// The clock acquired in the run.
    clock: VClock,
}

#[derive(Clone, Debug, Default)]
struct Segment {
    /// The release whose clock the segment starts from (a semaphore write).
    base: Option<u32>,
    /// Semaphore value at the start of the segment; event state (0/1).
    base_value: u32,
    /// Entries (release ids) in run order.
    entries: Vec<u32>,
    /// The single agent of every entry, while there is one.
    single: Option<Agent>,
    /// More than one agent has entries.
    multi: bool,
    /// Cumulative upward and downward weights of the entries.
    cum_up: Vec<u64>,
    cum_down: Vec<u64>,
    /// An event segment in the event's initial (clear) state: a wait for it holds from the
    /// start, whatever the updates to the same state.
    from_start: bool,
}

/// The synchronisation skeleton of a run (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Skeleton {
    agents: usize,
    steps: Vec<Step>,
    releases: Vec<Release>,
    acquires: Vec<Acquire>,
    segs: Vec<Segment>,
    sem_seg: Vec<Option<u32>>,
    event_seg: Vec<Option<u32>>,
    /// Fork slots handed out ([`Skeleton::fork`]).
    forks: u32,
}

impl Skeleton {
    /// An empty skeleton for `agents` agents.
    pub fn new(agents: usize) -> Skeleton {
        Skeleton {
            agents,
            sem_seg: vec![None; super::sync::NUM_SEMAPHORES],
            event_seg: vec![None; super::sync::NUM_EVENTS],
            ..Skeleton::default()
        }
    }

    /// Queue `q` joined `by`'s clock.
    pub fn handoff(&mut self, by: Agent, q: Agent) {
        self.steps.push(Step::Handoff { by, q });
    }

    /// A collective issued on `agent` keeps the agent's current clock as its own: the slot it
    /// is kept in. The agent's own component then advances by `stride`.
    pub fn fork(&mut self, agent: Agent, stride: u32) -> u32 {
        let slot = self.forks;
        self.forks += 1;
        self.steps.push(Step::Fork { agent, stride });
        slot
    }

    /// `agent`'s clock and the clock kept in fork slot `slot` change places.
    pub fn swap(&mut self, agent: Agent, slot: u32) {
        self.steps.push(Step::Swap { agent, slot });
    }

    fn new_seg(&mut self, base: Option<u32>, base_value: u32) -> u32 {
        let id = self.segs.len() as u32;
        self.segs.push(Segment {
            base,
            base_value,
            ..Segment::default()
        });
        id
    }

    fn push_release(&mut self, agent: Agent, seg: u32, up: u64, down: u64, clock: VClock) {
        let id = self.releases.len() as u32;
        self.releases.push(Release {
            agent,
            seg,
            up,
            down,
            clock,
        });
        self.steps.push(Step::Release(id));
    }

    fn push_entry(&mut self, agent: Agent, seg: u32, up: u64, down: u64, clock: VClock) {
        let id = self.releases.len() as u32;
        self.push_release(agent, seg, up, down, clock);
        let s = &mut self.segs[seg as usize];
        s.entries.push(id);
        match s.single {
            None if !s.multi => s.single = Some(agent),
            Some(a) if a != agent => {
                s.single = None;
                s.multi = true;
            }
            _ => {}
        }
        let (u, d) = (
            s.cum_up.last().copied().unwrap_or(0),
            s.cum_down.last().copied().unwrap_or(0),
        );
        s.cum_up.push(u + up);
        s.cum_down.push(d + down);
    }

    /// `agent` changed semaphore `idx` from `before` to `after` releasing `clock`: a write when
    /// `write`; `restart` when the value changed outside the recorded history first.
    #[allow(clippy::too_many_arguments)]
    pub fn sem(
        &mut self,
        agent: Agent,
        idx: u8,
        before: u32,
        after: u32,
        write: bool,
        restart: bool,
        clock: VClock,
    ) {
        let i = idx as usize;
        if write {
            let id = self.releases.len() as u32;
            let seg = self.new_seg(Some(id), after);
            self.sem_seg[i] = Some(seg);
            self.push_release(agent, seg, 0, 0, clock);
            return;
        }
        let seg = match self.sem_seg[i] {
            Some(s) if !restart => s,
            _ => {
                let s = self.new_seg(None, before);
                self.sem_seg[i] = Some(s);
                s
            }
        };
        let delta = after.wrapping_sub(before) as i32 as i64;
        let (up, down) = if delta >= 0 {
            (delta as u64, 0)
        } else {
            (0, delta.unsigned_abs())
        };
        self.push_entry(agent, seg, up, down, clock);
    }

    /// `agent` set event `idx` to `state` releasing `clock`.
    pub fn event(&mut self, agent: Agent, idx: u8, state: bool, clock: VClock) {
        let i = idx as usize;
        let seg = match self.event_seg[i] {
            Some(s) if (self.segs[s as usize].base_value == 1) == state => s,
            cur => {
                let s = self.new_seg(None, state as u32);
                // Clearing a never-set event: the state it had from the start.
                self.segs[s as usize].from_start = cur.is_none() && !state;
                self.event_seg[i] = Some(s);
                s
            }
        };
        self.push_entry(agent, seg, 1, 0, clock);
    }

    /// What a satisfied wait on semaphore `idx` for `cmp` against `rhs` needs: the segment,
    /// the direction and the weight in that direction beyond the base value (negative when the
    /// base value already has a margin that updates in the other direction may consume).
    pub fn sem_need(&self, idx: u8, cmp: super::sync::Cmp, rhs: u32) -> Option<(u32, bool, i64)> {
        use super::sync::Cmp;
        let seg = self.sem_seg[idx as usize]?;
        let b = i64::from(self.segs[seg as usize].base_value);
        let r = i64::from(rhs);
        let (up, n) = match cmp {
            Cmp::Ge => (true, r - b),
            Cmp::Gt => (true, r + 1 - b),
            Cmp::Le => (false, b - r),
            Cmp::Lt => (false, b - r + 1),
            Cmp::Eq if r >= b => (true, r - b),
            Cmp::Eq => (false, b - r),
        };
        Some((seg, up, n))
    }

    /// The current segment of event `idx` when it is in state `state`.
    pub fn event_need(&self, idx: u8, state: bool) -> Option<(u32, bool, i64)> {
        let seg = self.event_seg[idx as usize]?;
        let sg = &self.segs[seg as usize];
        ((sg.base_value == 1) == state).then_some((seg, true, i64::from(!sg.from_start)))
    }

    /// `agent` (at its own epoch `epoch`) passed a wait needing `need` (`None`: nothing known)
    /// and acquired `clock` in the run.
    pub fn acquire(
        &mut self,
        agent: Agent,
        epoch: u32,
        need: Option<(u32, bool, i64)>,
        clock: VClock,
    ) -> usize {
        let id = self.acquires.len();
        self.acquires.push(Acquire {
            agent,
            epoch,
            need: need.map_or(Need::Nothing, |(seg, up, n)| Need::Count { seg, up, n }),
            clock,
        });
        self.steps.push(Step::Acquire(id as u32));
        id
    }

    /// Whether `other` recorded the same synchronisation (same steps, agents, segments and
    /// needs): a replay of the same interleaving.
    pub fn same_shape(&self, other: &Skeleton) -> bool {
        self.steps == other.steps
            && self.releases.len() == other.releases.len()
            && self
                .releases
                .iter()
                .zip(&other.releases)
                .all(|(a, b)| (a.agent, a.seg, a.up, a.down) == (b.agent, b.seg, b.up, b.down))
            && self
                .acquires
                .iter()
                .zip(&other.acquires)
                .all(|(a, b)| (a.agent, a.epoch, &a.need) == (b.agent, b.epoch, &b.need))
    }

    /// The clock every interleaving guarantees acquisition `a` under release clocks `rel`,
    /// the waiter holding `held` just before it.
    fn guaranteed(&self, a: &Acquire, rel: &[VClock], held: &VClock) -> VClock {
        let Need::Count { seg, up, n } = a.need else {
            return VClock::zero(self.agents);
        };
        let s = &self.segs[seg as usize];
        let mut out = s
            .base
            .map_or_else(|| VClock::zero(self.agents), |b| rel[b as usize].clone());
        let (cum, cum_other) = if up {
            (&s.cum_up, &s.cum_down)
        } else {
            (&s.cum_down, &s.cum_up)
        };
        // Updates in the other direction that certainly came before the wait (the waiter's
        // clock covers them: its own earlier bundles, or what it acquired) were applied; the
        // wait needs that much more weight in its own direction.
        let before = |i: usize| {
            let r = &self.releases[s.entries[i] as usize];
            let t = rel[s.entries[i] as usize].get(r.agent);
            if r.agent == a.agent {
                t < a.epoch
            } else {
                t <= held.get(r.agent)
            }
        };
        let other: u64 = if s.multi {
            (0..s.entries.len())
                .filter(|&i| before(i))
                .map(|i| {
                    let r = &self.releases[s.entries[i] as usize];
                    if up {
                        r.down
                    } else {
                        r.up
                    }
                })
                .sum()
        } else {
            // One agent: its entries are in program order and those before the wait a prefix.
            let k = prefix_len(s.entries.len(), before);
            if k == 0 {
                0
            } else {
                cum_other[k - 1]
            }
        };
        let n = n + other as i64;
        if n <= 0 {
            return out;
        }
        let n = n as u64;
        let weight = |i: usize| {
            let r = &self.releases[s.entries[i] as usize];
            if up {
                r.up
            } else {
                r.down
            }
        };
        let eligible = |i: usize| rel[s.entries[i] as usize].get(a.agent) < a.epoch;
        if !s.multi {
            // One agent: its entries are in program order, their clocks ascend, and the
            // eligible ones are a prefix. The guaranteed set is the shortest prefix of weight n.
            let k = cum.partition_point(|&c| c < n);
            if k < s.entries.len() && eligible(k) {
                out.join(&rel[s.entries[k] as usize]);
            }
            return out;
        }
        let cands: Vec<(u32, u64)> = (0..s.entries.len())
            .filter(|&i| weight(i) > 0 && eligible(i))
            .map(|i| (s.entries[i], weight(i)))
            .collect();
        if cands.iter().map(|c| c.1).sum::<u64>() < n {
            return out;
        }
        let mut col: Vec<(u32, u64)> = Vec::with_capacity(cands.len());
        for j in 0..self.agents {
            col.clear();
            col.extend(
                cands
                    .iter()
                    .map(|&(r, w)| (rel[r as usize].get(j as Agent), w)),
            );
            col.sort_unstable_by_key(|c| c.0);
            let mut acc = 0u64;
            for &(v, w) in &col {
                acc += w;
                if acc >= n {
                    out.raise(j as Agent, v);
                    break;
                }
            }
        }
        out
    }

    /// The schedule-independent clock of every acquisition, or `None` when each equals the
    /// clock acquired in the run (the run's findings then stand as they are).
    pub fn resolve(&self) -> Option<Vec<VClock>> {
        let n = self.agents;
        let mut rel: Vec<VClock> = self.releases.iter().map(|r| r.clock.clone()).collect();
        let mut acq: Vec<VClock> = self.acquires.iter().map(|a| a.clock.clone()).collect();
        loop {
            let mut clocks: Vec<VClock> = (0..n).map(|i| VClock::unit(n, i as Agent)).collect();
            let mut saved: Vec<VClock> = Vec::with_capacity(self.forks as usize);
            let mut changed = false;
            for step in &self.steps {
                match *step {
                    Step::Fork { agent, stride } => {
                        let c = &mut clocks[agent as usize];
                        saved.push(c.clone());
                        let own = c.get(agent);
                        c.raise(agent, own.saturating_add(stride));
                    }
                    Step::Swap { agent, slot } => {
                        if let Some(s) = saved.get_mut(slot as usize) {
                            std::mem::swap(&mut clocks[agent as usize], s);
                        }
                    }
                    Step::Handoff { by, q } => {
                        if by != q {
                            let c = clocks[by as usize].clone();
                            clocks[q as usize].join(&c);
                            clocks[by as usize].tick(by);
                        }
                    }
                    Step::Release(id) => {
                        let r = &self.releases[id as usize];
                        let c = &clocks[r.agent as usize];
                        if rel[id as usize] != *c {
                            rel[id as usize] = c.clone();
                            changed = true;
                        }
                        clocks[r.agent as usize].tick(r.agent);
                    }
                    Step::Acquire(id) => {
                        let a = &self.acquires[id as usize];
                        let c = self.guaranteed(a, &rel, &clocks[a.agent as usize]);
                        clocks[a.agent as usize].join(&c);
                        if acq[id as usize] != c {
                            acq[id as usize] = c;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let same = acq.iter().zip(&self.acquires).all(|(x, a)| *x == a.clock);
        (!same).then_some(acq)
    }
}

/// The length of the prefix of `0..len` on which `p` holds (`p` holds on a prefix).
fn prefix_len(len: usize, p: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if p(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(v: &[u32]) -> VClock {
        VClock::from_vec(v.to_vec())
    }

    #[test]
    fn prefix_len_finds_every_prefix_asking_only_inside_the_range() {
        for len in 0..70 {
            for k in 0..=len {
                let got = prefix_len(len, |i| {
                    assert!(i < len, "asked {i} of 0..{len}");
                    i < k
                });
                assert_eq!(got, k, "len {len}");
            }
        }
    }

    #[test]
    fn one_of_two_unordered_increments_guarantees_neither() {
        // Agents 0 and 1 increment semaphore 0 (unordered); agent 2 waits for >= 1 after the
        // first and acquired it in the run.
        let mut s = Skeleton::new(3);
        s.sem(0, 0, 0, 1, false, false, clock(&[1, 0, 0]));
        let need = s.sem_need(0, crate::machine::sync::Cmp::Ge, 1);
        s.acquire(2, 1, need, clock(&[1, 0, 0]));
        s.sem(1, 0, 1, 2, false, false, clock(&[0, 1, 0]));
        let r = s
            .resolve()
            .expect("the run's acquisition is not guaranteed");
        assert_eq!(r[0], clock(&[0, 0, 0]));
        // >= 2 needs both, whatever the order.
        let mut s = Skeleton::new(3);
        s.sem(1, 0, 0, 1, false, false, clock(&[0, 1, 0]));
        s.sem(0, 0, 1, 2, false, false, clock(&[1, 0, 0]));
        let need = s.sem_need(0, crate::machine::sync::Cmp::Ge, 2);
        s.acquire(2, 1, need, clock(&[1, 1, 0]));
        assert_eq!(s.resolve(), None);
    }

    #[test]
    fn weighted_kth_smallest_and_ordered_candidates() {
        // Three producers add 2, 1, 1; a wait for >= 3. Every satisfying set contains the
        // producer adding 2 (1 + 1 is short): only it is guaranteed.
        let mut s = Skeleton::new(4);
        s.sem(0, 0, 0, 2, false, false, clock(&[1, 0, 0, 0]));
        s.sem(1, 0, 2, 3, false, false, clock(&[0, 1, 0, 0]));
        let need = s.sem_need(0, crate::machine::sync::Cmp::Ge, 3);
        s.acquire(3, 1, need, clock(&[1, 1, 0, 0]));
        s.sem(2, 0, 3, 4, false, false, clock(&[0, 0, 1, 0]));
        assert_eq!(s.resolve().unwrap()[0], clock(&[1, 0, 0, 0]));
        // A candidate ordered after the wait (its clock covers the waiter's epoch) cannot
        // come first: agent 2 waits for agent 0's increment, then releases semaphore 1, which
        // agent 1 waits for before it increments semaphore 0.
        let mut s = Skeleton::new(3);
        s.sem(0, 0, 0, 1, false, false, clock(&[1, 0, 0]));
        let need = s.sem_need(0, crate::machine::sync::Cmp::Ge, 1);
        s.acquire(2, 1, need, clock(&[1, 0, 0]));
        s.sem(2, 1, 0, 1, false, false, clock(&[1, 0, 1]));
        let need = s.sem_need(1, crate::machine::sync::Cmp::Ge, 1);
        s.acquire(1, 1, need, clock(&[1, 0, 1]));
        s.sem(1, 0, 1, 2, false, false, clock(&[1, 1, 1]));
        assert_eq!(s.resolve(), None);
    }

    #[test]
    fn a_change_outside_the_history_restarts_the_semaphores_segment() {
        use crate::machine::sync::Cmp;
        // Agent 0 increments semaphore 3 from 0 to 1; the value then changes outside the
        // recorded history (to 5), and agent 1 increments it from 5 to 6. A wait for >= 6
        // needs one increment of the new segment, based at 5: agent 1's.
        let mut s = Skeleton::new(3);
        s.sem(0, 3, 0, 1, false, false, clock(&[1, 0, 0]));
        s.sem(1, 3, 5, 6, false, true, clock(&[0, 1, 0]));
        let need = s.sem_need(3, Cmp::Ge, 6);
        assert_eq!(need.map(|(_, up, n)| (up, n)), Some((true, 1)));
        s.acquire(2, 1, need, clock(&[0, 1, 0]));
        assert_eq!(s.resolve(), None, "the run's acquisition is guaranteed");
        // Without the restart, both increments belong to one segment based at 0.
        let mut s = Skeleton::new(3);
        s.sem(0, 3, 0, 1, false, false, clock(&[1, 0, 0]));
        s.sem(1, 3, 1, 2, false, false, clock(&[0, 1, 0]));
        let need = s.sem_need(3, Cmp::Ge, 2);
        assert_eq!(need.map(|(_, up, n)| (up, n)), Some((true, 2)));
    }

    #[test]
    fn a_write_is_the_base_and_events_take_the_meet() {
        let mut s = Skeleton::new(3);
        s.sem(0, 4, 0, 10, true, false, clock(&[1, 0, 0]));
        let need = s.sem_need(4, crate::machine::sync::Cmp::Ge, 10);
        assert_eq!(need.map(|x| x.2), Some(0));
        s.acquire(2, 1, need, clock(&[1, 0, 0]));
        assert_eq!(s.resolve(), None);
        // Event 7 set by agents 0 and 1 (unordered): a wait for set acquires their meet.
        let mut s = Skeleton::new(3);
        s.event(0, 7, true, clock(&[1, 0, 0]));
        s.event(1, 7, true, clock(&[0, 1, 0]));
        let need = s.event_need(7, true);
        s.acquire(2, 1, need, clock(&[1, 1, 0]));
        assert_eq!(s.resolve().unwrap()[0], clock(&[0, 0, 0]));
        // Clearing a never-set event does not make a wait for clear: it held from the start.
        let mut s = Skeleton::new(3);
        s.event(0, 8, false, clock(&[1, 0, 0]));
        let need = s.event_need(8, false);
        assert_eq!(need.map(|x| x.2), Some(0));
        s.acquire(2, 1, need, clock(&[1, 0, 0]));
        assert_eq!(s.resolve().unwrap()[0], clock(&[0, 0, 0]));
    }

    #[test]
    fn a_collective_releases_the_clock_it_kept_at_issue() {
        use crate::machine::sync::Cmp;
        // Engine 0 issues a collective on agent 1 (hand-off), which keeps its clock and moves
        // its own component past four epochs; engine 0 then issues a second collective on the
        // same agent. The first completes on its kept clock and increments semaphore 2, which
        // agent 2 waits for: it acquires the first collective's clock, not the agent's later
        // one, and the resolution computes the same.
        let mut s = Skeleton::new(3);
        s.handoff(0, 1);
        assert_eq!(s.fork(1, 4), 0);
        s.handoff(0, 1);
        assert_eq!(s.fork(1, 4), 1);
        s.swap(1, 0);
        s.sem(1, 2, 0, 1, false, false, clock(&[1, 1, 0]));
        s.swap(1, 0);
        let need = s.sem_need(2, Cmp::Ge, 1);
        s.acquire(2, 1, need, clock(&[1, 1, 0]));
        assert_eq!(s.resolve(), None);
        // The kept clock is what the resolution releases: had the release carried the agent's
        // later clock, the wait would have acquired more than the run's.
        let mut t = Skeleton::new(3);
        t.handoff(0, 1);
        t.fork(1, 4);
        t.handoff(0, 1);
        t.sem(1, 2, 0, 1, false, false, clock(&[1, 1, 0]));
        let need = t.sem_need(2, Cmp::Ge, 1);
        t.acquire(2, 1, need, clock(&[1, 1, 0]));
        assert_eq!(t.resolve().unwrap()[0], clock(&[2, 5, 0]));
    }

    #[test]
    fn a_decrement_before_the_wait_raises_what_it_needs() {
        use crate::machine::sync::Cmp;
        // Credit hand-off on semaphore 3: ACT (agent 0) increments it; DVE (agent 1) waits
        // for >= 1, decrements it, then releases semaphore 4; ACT waits for that and
        // increments semaphore 3 again; DVE waits for >= 1 once more. After its own
        // decrement only ACT's second increment can satisfy DVE's second wait.
        let mut s = Skeleton::new(2);
        s.sem(0, 3, 0, 1, false, false, clock(&[1, 0]));
        let need = s.sem_need(3, Cmp::Ge, 1);
        s.acquire(1, 1, need, clock(&[1, 0]));
        s.sem(1, 3, 1, 0, false, false, clock(&[1, 1]));
        s.sem(1, 4, 0, 1, false, false, clock(&[1, 2]));
        let need = s.sem_need(4, Cmp::Ge, 1);
        s.acquire(0, 2, need, clock(&[1, 2]));
        s.sem(0, 3, 0, 1, false, false, clock(&[2, 2]));
        let need = s.sem_need(3, Cmp::Ge, 1);
        assert_eq!(need.map(|x| x.2), Some(1));
        s.acquire(1, 3, need, clock(&[2, 2]));
        assert_eq!(
            s.resolve(),
            None,
            "the second wait acquires ACT's second increment"
        );
        // The same with the decrement made by a third agent that nothing orders with the
        // wait: it may come after it, and then ACT's first increment satisfies it alone.
        let mut s = Skeleton::new(3);
        s.sem(0, 3, 0, 1, false, false, clock(&[1, 0, 0]));
        let need = s.sem_need(3, Cmp::Ge, 1);
        s.acquire(1, 1, need, clock(&[1, 0, 0]));
        s.sem(2, 3, 1, 0, false, false, clock(&[0, 0, 1]));
        s.sem(1, 4, 0, 1, false, false, clock(&[1, 1, 0]));
        let need = s.sem_need(4, Cmp::Ge, 1);
        s.acquire(0, 2, need, clock(&[1, 1, 0]));
        s.sem(0, 3, 0, 1, false, false, clock(&[2, 1, 0]));
        let need = s.sem_need(3, Cmp::Ge, 1);
        s.acquire(1, 2, need, clock(&[2, 1, 1]));
        assert_eq!(s.resolve().unwrap()[2], clock(&[1, 0, 0]));
        // A base with a margin: 5, two decrements of the waiter, then `>= 4` needs one
        // increment (5 - 2 + 1 >= 4), not none.
        let mut s = Skeleton::new(2);
        s.sem(0, 9, 0, 5, true, false, clock(&[1, 0]));
        s.sem(1, 9, 5, 4, false, false, clock(&[0, 1]));
        s.sem(1, 9, 4, 3, false, false, clock(&[0, 2]));
        s.sem(0, 9, 3, 4, false, false, clock(&[2, 0]));
        let need = s.sem_need(9, Cmp::Ge, 4);
        assert_eq!(need.map(|x| x.2), Some(-1));
        s.acquire(1, 3, need, clock(&[2, 2]));
        assert_eq!(s.resolve().unwrap()[0], clock(&[2, 0]));
    }
}

#[cfg(test)]
mod need_boundaries {
    use super::super::sync::Cmp;
    use super::*;

    /// Whether `sem <cmp> rhs` holds (written out here, independently of the machine's).
    fn holds(cmp: Cmp, sem: i64, rhs: i64) -> bool {
        match cmp {
            Cmp::Eq => sem == rhs,
            Cmp::Lt => sem < rhs,
            Cmp::Le => sem <= rhs,
            Cmp::Gt => sem > rhs,
            Cmp::Ge => sem >= rhs,
        }
    }

    /// What a wait needs is the exact number of unit updates in its direction that takes the
    /// segment's base value to where the wait holds: after `n` of them it holds, after `n − 1`
    /// it does not (a negative `n`: the base holds with a margin of `−n` updates in the other
    /// direction, and one more breaks it). For every comparison and base and awaited values
    /// around each other.
    #[test]
    fn a_wait_needs_exactly_the_updates_that_make_it_hold() {
        for cmp in [Cmp::Eq, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge] {
            for base in 0u32..6 {
                for rhs in 0u32..8 {
                    let mut s = Skeleton::new(1);
                    s.sem(0, 2, 0, base, true, false, VClock::from_vec(vec![1]));
                    let (_, up, n) = s.sem_need(2, cmp, rhs).expect("a segment");
                    let dir = if up { 1 } else { -1 };
                    let after = |k: i64| i64::from(base) + dir * k;
                    let r = i64::from(rhs);
                    let what = format!("{cmp:?} base {base} rhs {rhs}: up {up} n {n}");
                    assert!(holds(cmp, after(n), r), "{what}: does not hold after n");
                    assert!(!holds(cmp, after(n - 1), r), "{what}: holds after n - 1");
                    if cmp != Cmp::Eq {
                        // An inequality keeps holding further in its direction.
                        assert!(holds(cmp, after(n + 1), r), "{what}");
                    }
                }
            }
        }
    }
}
