//! Semaphore and event histories: release, acquire, and the clocks a wait observes.

use super::*;

#[derive(Clone, Debug)]
pub(super) struct SemEntry {
    pub(super) value: u32,
    pub(super) cum: VClock,
    pub(super) time: Stamp,
    pub(super) agent: Agent,
}

#[derive(Clone, Debug)]
pub(super) struct SemHist {
    pub(super) base_value: u32,
    pub(super) base: VClock,
    pub(super) base_time: Stamp,
    pub(super) base_agent: Option<Agent>,
    pub(super) entries: Vec<SemEntry>,
}

#[derive(Clone, Debug)]
pub(super) struct EvHist {
    pub(super) state: bool,
    pub(super) clock: VClock,
    pub(super) time: Stamp,
    pub(super) agent: Option<Agent>,
}

/// History entries kept per semaphore before the oldest half is folded into the base.
pub(super) const SEM_HISTORY: usize = 64;

impl Checker {
    // ---- synchronisation ----

    /// Records kept for the reports that grow with the run (release descriptions, operand
    /// origins); charged to the memory budget by the machine.
    pub(crate) fn growing_records(&self) -> u64 {
        (self.releases.iter().map(Vec::len).sum::<usize>() + self.origins.len()) as u64
    }

    pub(super) fn release_desc(&mut self, agent: Agent, desc: impl FnOnce() -> String) {
        let epoch = self.clocks[agent as usize].get(agent);
        let rel = &mut self.releases[agent as usize];
        // In epoch order (a collective's completion releases at the epochs it kept when it
        // issued, which may come before those of its agent's later collectives).
        let i = rel.partition_point(|r| r.0 < epoch);
        if rel.get(i).map(|r| r.0) != Some(epoch) {
            rel.insert(i, (epoch, desc()));
        }
    }

    pub(super) fn tick(&mut self, agent: Agent) {
        self.clocks[agent as usize].tick(agent);
    }

    pub(super) fn where_(&self) -> String {
        match self.cur_site {
            Some(s) => format!("{} bundle #{}", s.engine, s.index),
            None => "start".to_string(),
        }
    }

    /// Apply update `u` by `agent` to `sync` and release its clock into the semaphore or event
    /// at `time` (a bare time: the end of the slice that makes the update).
    pub fn update(
        &mut self,
        agent: Agent,
        u: &Update,
        sync: &mut SyncState,
        regs: &[u32],
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let i = u.idx as usize;
        match u.op {
            UpdateOp::EventSet | UpdateOp::EventClear => {
                u.apply(sync, regs);
                self.event_release(agent, u.idx, sync.event(u.idx), time, at);
            }
            _ => {
                let before = sync.sems[i];
                u.apply(sync, regs);
                let after = sync.sems[i];
                let reset = matches!(u.op, UpdateOp::SemWrite(_));
                self.sem_release(agent, u.idx, before, after, reset, time, at);
            }
        }
    }

    /// Record that `agent` changed semaphore `idx` from `before` to `after` (a write when
    /// `reset`) at `time` (a bare time: the end of its slice).
    #[allow(clippy::too_many_arguments)]
    pub fn sem_release(
        &mut self,
        agent: Agent,
        idx: u8,
        before: u32,
        after: u32,
        reset: bool,
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let i = idx as usize;
        let n = self.labels.len();
        let clock = self.clocks[agent as usize].clone();
        let h = &mut self.sems[i];
        let last = h.entries.last().map_or(h.base_value, |e| e.value);
        self.skeleton.sem(
            agent,
            idx,
            before,
            after,
            reset,
            last != before,
            clock.clone(),
        );
        if reset || last != before {
            // A write, or a change the history did not see: restart.
            h.base_value = if reset { after } else { before };
            h.base = if reset {
                clock.clone()
            } else {
                VClock::zero(n)
            };
            h.base_time = time;
            h.entries.clear();
        }
        if !reset {
            let mut cum = h
                .entries
                .last()
                .map_or_else(|| h.base.clone(), |e| e.cum.clone());
            cum.join(&clock);
            h.entries.push(SemEntry {
                value: after,
                cum,
                time,
                agent,
            });
            if h.entries.len() > SEM_HISTORY {
                let fold = SEM_HISTORY / 2;
                let e = &h.entries[fold - 1];
                h.base_value = e.value;
                h.base = e.cum.clone();
                h.base_time = e.time;
                h.base_agent = Some(e.agent);
                h.entries.drain(..fold);
            }
        }
        let delta = after.wrapping_sub(before) as i32;
        self.release_desc(agent, || {
            if reset {
                format!("semaphore {idx} = {after} ({at})")
            } else if delta >= 0 {
                format!("semaphore {idx} += {delta} ({at})")
            } else {
                format!("semaphore {idx} -= {} ({at})", -(delta as i64))
            }
        });
        self.tick(agent);
    }

    /// Record that `agent` set event `idx` to `state` at `time` (a bare time: the end of its
    /// slice).
    pub fn event_release(
        &mut self,
        agent: Agent,
        idx: u8,
        state: bool,
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let clock = self.clocks[agent as usize].clone();
        self.skeleton.event(agent, idx, state, clock.clone());
        let h = &mut self.events[idx as usize];
        if h.state == state {
            h.clock.join(&clock);
            if time.t >= h.time.t {
                h.time = time;
                h.agent = Some(agent);
            }
        } else {
            h.state = state;
            h.clock = clock;
            h.time = time;
            h.agent = Some(agent);
        }
        self.release_desc(agent, || {
            format!(
                "event {idx} {} ({at})",
                if state { "set" } else { "cleared" }
            )
        });
        self.tick(agent);
    }

    /// The clock a satisfied wait acquires, and the time and agent of the update that made it
    /// true.
    pub(super) fn wait_source(
        &self,
        w: &Wait,
        sync: &SyncState,
        regs: &[u32],
    ) -> (VClock, Stamp, Option<Agent>) {
        let none = || (VClock::zero(self.labels.len()), Stamp::default(), None);
        match *w {
            Wait::Sem { idx, .. } => {
                let h = &self.sems[idx as usize];
                let cur = sync.sems[idx as usize];
                let last = h.entries.last().map_or(h.base_value, |e| e.value);
                if last != cur {
                    return none();
                }
                let holds = |v: u32| {
                    let mut s = SyncState::default();
                    s.sems[idx as usize] = v;
                    w.holds(&s, regs)
                };
                // The first entry of the final run of entries whose value satisfies the wait.
                let mut k = h.entries.len();
                while k > 0 && holds(h.entries[k - 1].value) {
                    k -= 1;
                }
                if k == h.entries.len() || (k == 0 && holds(h.base_value)) {
                    // Holds since the base: nothing after it contributed.
                    return (h.base.clone(), h.base_time, h.base_agent);
                }
                let e = &h.entries[k];
                (e.cum.clone(), e.time, Some(e.agent))
            }
            Wait::Event { idx, until, .. } => {
                let h = &self.events[idx as usize];
                if h.state == until && sync.event(idx) == until {
                    (h.clock.clone(), h.time, h.agent)
                } else {
                    none()
                }
            }
        }
    }

    /// `agent` passes wait `w` (it holds): acquire the clock that satisfied it; returns the
    /// time the condition became true.
    pub fn acquire(&mut self, agent: Agent, w: &Wait, sync: &SyncState, regs: &[u32]) -> f64 {
        let (c, t, from) = self.wait_source(w, sync, regs);
        let need = match *w {
            Wait::Sem { idx, cmp, rhs } => {
                let h = &self.sems[idx as usize];
                let last = h.entries.last().map_or(h.base_value, |e| e.value);
                (last == sync.sems[idx as usize])
                    .then(|| {
                        self.skeleton
                            .sem_need(idx, cmp, crate::machine::sync::operand(rhs, regs))
                    })
                    .flatten()
            }
            Wait::Event { idx, until, .. } => {
                let h = &self.events[idx as usize];
                (h.state == until && sync.event(idx) == until)
                    .then(|| self.skeleton.event_need(idx, until))
                    .flatten()
            }
        };
        let epoch = self.clocks[agent as usize].get(agent);
        let id = self.skeleton.acquire(agent, epoch, need, c.clone());
        let c = match self.forced.as_ref().and_then(|f| f.get(id)) {
            Some(f) => f.clone(),
            None => c,
        };
        self.clocks[agent as usize].join(&c);
        if let (Some(tl), Some(from)) = (self.timeline.as_mut(), from) {
            if from != agent {
                tl.pending_flows.push((from, t, SyncRefText::of(w)));
            }
        }
        t.t
    }

    /// Issue-time synchronisation of a bundle by `agent`: acquire the waits, apply their side
    /// effects (event flips, released by the waiter), then the `_READ` updates. Returns the
    /// time the last wait became true.
    pub fn issue(
        &mut self,
        agent: Agent,
        ev: &crate::machine::sync::Events,
        sync: &mut SyncState,
        regs: &[u32],
        time: f64,
    ) -> f64 {
        let mut ready = 0f64;
        for w in ev.waits.iter().flatten() {
            ready = ready.max(self.acquire(agent, w, sync, regs));
        }
        let at = self.where_();
        for w in ev.waits.iter().flatten() {
            if let Wait::Event {
                idx,
                until,
                flip: true,
            } = *w
            {
                w.on_satisfied(sync);
                self.event_release(agent, idx, !until, Stamp::start(time.max(ready)), &at);
            }
        }
        for u in ev.updates.iter().flatten().filter(|u| u.when == When::Read) {
            self.update(agent, u, sync, regs, Stamp::start(time.max(ready)), &at);
        }
        ready
    }

    /// Completion-time synchronisation: the `_COMPLETE` updates, released at `time`.
    pub fn complete(
        &mut self,
        agent: Agent,
        ev: &crate::machine::sync::Events,
        sync: &mut SyncState,
        regs: &[u32],
        time: f64,
    ) {
        let at = self.where_();
        let completes = ev
            .updates
            .iter()
            .flatten()
            .any(|u| u.when == When::Complete);
        // A bundle's completion follows the transfer it handed its direct DMA (a
        // DMA_DIRECT2D, a single-rank collective): its `_COMPLETE` updates release that too.
        if let Some(d) = self.direct_done[agent as usize]
            .take()
            .filter(|_| completes)
        {
            self.skeleton.handoff(d, agent);
            let c = self.clocks[d as usize].clone();
            self.clocks[agent as usize].join(&c);
        }
        for u in ev
            .updates
            .iter()
            .flatten()
            .filter(|u| u.when == When::Complete)
        {
            self.update(agent, u, sync, regs, time, &at);
        }
    }
}
