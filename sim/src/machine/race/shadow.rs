//! Shadow memory: per partition / DRAM variable interval maps of the last write and reads,
//! the race, uninitialised-read and PSUM-accumulation checks on each access.

use super::*;

/// Which memory a shadow access goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mem {
    /// An on-chip partition.
    Chip(Space, u32),
    /// A DRAM variable.
    Dram(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Acc {
    pub(super) agent: Agent,
    pub(super) epoch: u32,
    pub(super) origin: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Cell {
    pub(super) w: Option<Acc>,
    pub(super) reads: Vec<Acc>,
    /// PSUM: inside an open accumulation group.
    pub(super) open: bool,
    /// The last write was a matmul that closed its group.
    pub(super) closed_by_matmul: bool,
}

/// Byte intervals of one partition or variable: start → (end, state).
#[derive(Clone, Debug, Default)]
pub(super) struct IMap(pub(super) BTreeMap<u32, (u32, Cell)>);

impl IMap {
    /// Split the segment containing `at` (if any) so that a segment starts at `at`; whether
    /// a segment was added.
    pub(super) fn split(&mut self, at: u32) -> bool {
        let hit = self
            .0
            .range(..at)
            .next_back()
            .filter(|(_, (e, _))| *e > at)
            .map(|(&s, (e, c))| (s, *e, c.clone()));
        if let Some((s, e, c)) = hit {
            if let Some(seg) = self.0.get_mut(&s) {
                seg.0 = at;
            }
            self.0.insert(at, (e, c));
            return true;
        }
        false
    }

    pub(super) fn keys_in(&self, lo: u32, hi: u32) -> Vec<u32> {
        self.0.range(lo..hi).map(|(&k, _)| k).collect()
    }

    /// Merge the segment starting at `s` with equal neighbours; the number of segments removed.
    pub(super) fn coalesce(&mut self, s: u32) -> u64 {
        let Some((e, c)) = self.0.get(&s).cloned() else {
            return 0;
        };
        let mut removed = 0;
        let mut start = s;
        let mut end = e;
        if let Some((&ls, (le, lc))) = self.0.range(..s).next_back() {
            if *le == s && *lc == c {
                start = ls;
            }
        }
        if let Some((re, rc)) = self.0.get(&e) {
            if *rc == c {
                end = *re;
                self.0.remove(&e);
                removed += 1;
            }
        }
        if start != s {
            self.0.remove(&s);
            removed += 1;
        }
        if let Some(seg) = self.0.get_mut(&start) {
            seg.0 = end;
        }
        removed
    }
}

/// A shadow update that would grow the shadow memory past the segments the machine made room
/// for ([`Checker::set_segment_cap`]); the update stops there and the run with a budget fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShadowFull {
    /// Live segments the update needed.
    pub segments: u64,
}

/// A finding at bytes `lo..hi` before aggregation: key, lo, hi, epochs, agents.
pub(super) type Hit = (Key, u32, u32, (u32, u32), (Agent, Agent));

/// A found problem before aggregation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Key {
    Race {
        a: u32,
        ak: AccessKind,
        b: u32,
        bk: AccessKind,
    },
    Uninit(u32),
    Psum(u32, Option<u32>),
}

#[derive(Clone, Debug)]
pub(super) struct Agg {
    pub(super) partitions: Option<(u32, u32)>,
    pub(super) bytes: (u32, u32),
    pub(super) count: u64,
    /// Epochs of the first occurrence (race: both sides).
    pub(super) epochs: (u32, u32),
    pub(super) agents: (Agent, Agent),
}

impl Checker {
    // ---- memory ----

    /// Bundle `index` of engine `e` finished: place it on the timeline (when one is built).
    pub fn finish_bundle(&mut self, e: Engine, index: usize, opcode: u8, mnemonic: &str) {
        let Some(t) = self.timeline.as_mut() else {
            return;
        };
        let cycles = crate::machine::timeline::bundle_cycles(e, opcode, &self.shapes);
        let args: Vec<String> = self
            .operands
            .iter()
            .zip(&self.shapes)
            .map(|((n, r), (elems, eb))| {
                format!(
                    "{n}: {} partitions {}..{} +0x{:x}, {elems} × {eb} B",
                    r.space,
                    r.first_partition,
                    r.first_partition + r.partitions,
                    r.base
                )
            })
            .collect();
        t.finish(e, mnemonic, args.join("; "), cycles);
        if let Some(s) = t.slices.last_mut() {
            s.bundle = Some(index);
        }
    }

    /// Attribute the logged on-chip accesses to the current bundle. An access the shadow
    /// memory has no room for stops the flush (the rest of the log is dropped).
    pub fn flush(&mut self, log: &mut Vec<ChipAccess>) -> Result<(), ShadowFull> {
        let agent = self.cur_agent;
        if !self.track_memory {
            for a in log.drain(..) {
                match a {
                    ChipAccess::Shape { elems, elem_bytes } => {
                        self.shapes.push((elems, elem_bytes))
                    }
                    ChipAccess::Operand(name, r) => self.operands.push((name, r)),
                    _ => {}
                }
            }
            return Ok(());
        }
        let mut log = std::mem::take(log).into_iter();
        for a in log.by_ref() {
            match a {
                ChipAccess::Shape { elems, elem_bytes } => self.shapes.push((elems, elem_bytes)),
                ChipAccess::Operand(name, r) => self.operands.push((name, r)),
                ChipAccess::Read(r) => {
                    let name = self.operand_name(&r);
                    // A read of a destination is, unless the operation declared it a
                    // read-modify-write (PSUM accumulation, `ReadModifyWrite`), the model's
                    // gather of the bytes an operation leaves unchanged (MX scale slots,
                    // predicated lanes), not a use of their value.
                    let skip_uninit = name.starts_with("dst") && !self.rmw.contains(&r);
                    let o = self.origin(agent, &name);
                    let slots = mx_scale(&name);
                    self.chip_access(agent, o, &r, AccessKind::Read, !skip_uninit, None, slots)?;
                }
                ChipAccess::Write(r) => {
                    let name = self.operand_name(&r);
                    let o = self.origin(agent, &name);
                    let flags = self
                        .accumulate
                        .as_ref()
                        .filter(|(x, _)| *x == r)
                        .map(|(_, f)| *f);
                    let slots = mx_scale(&name);
                    self.chip_access(agent, o, &r, AccessKind::Write, false, flags, slots)?;
                }
                ChipAccess::Zero {
                    space,
                    first,
                    count,
                    lo,
                    hi,
                } => {
                    let o = self.origin(agent, "dst (zero region)");
                    let me = self.acc(agent, o);
                    for p in first..first + count {
                        self.range(
                            Mem::Chip(space, p),
                            lo,
                            hi,
                            AccessKind::Write,
                            me,
                            false,
                            None,
                        )?;
                    }
                }
                ChipAccess::Accumulate(r, flags) => {
                    if !flags.start {
                        let name = self.operand_name(&r);
                        let o = self.origin(agent, &name);
                        self.psum_check(o, &r, flags);
                    }
                    self.rmw.push(r.clone());
                    self.accumulate = Some((r, flags));
                }
                ChipAccess::ReadModifyWrite(r) => self.rmw.push(r),
            }
        }
        Ok(())
    }

    pub(super) fn operand_name(&self, r: &Resolved) -> String {
        self.operands
            .iter()
            .rev()
            .find(|(_, x)| x == r)
            .map_or_else(|| "operand".to_string(), |(n, _)| n.clone())
    }

    pub(super) fn acc(&self, agent: Agent, origin: u32) -> Acc {
        Acc {
            agent,
            epoch: self.clocks[agent as usize].get(agent),
            origin,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn chip_access(
        &mut self,
        agent: Agent,
        origin: u32,
        r: &Resolved,
        kind: AccessKind,
        check_uninit: bool,
        matmul: Option<PsumFlags>,
        mx_slots: bool,
    ) -> Result<(), ShadowFull> {
        let me = self.acc(agent, origin);
        let runs = merged_runs(r);
        for p in r.first_partition..r.first_partition + r.partitions {
            if mx_slots && (p - r.first_partition) % 32 >= 4 {
                continue;
            }
            for &(lo, hi) in &runs {
                self.range(
                    Mem::Chip(r.space, p),
                    lo,
                    hi,
                    kind,
                    me,
                    check_uninit,
                    matmul,
                )?;
            }
        }
        Ok(())
    }

    /// A DMA access by `agent` (operand `operand`) of bytes `lo..hi` of `mem`.
    #[allow(clippy::too_many_arguments)]
    pub fn dma_access(
        &mut self,
        agent: Agent,
        operand: &str,
        mem: Mem,
        lo: u32,
        hi: u32,
        kind: AccessKind,
    ) -> Result<(), ShadowFull> {
        if !self.track_memory {
            return Ok(());
        }
        // A transfer reports one run at a time: look its origin up once.
        let o = match &self.last_dma_origin {
            Some((a, name, id)) if *a == agent && name == operand => *id,
            _ => {
                let id = self.origin(agent, operand);
                self.last_dma_origin = Some((agent, operand.to_string(), id));
                id
            }
        };
        let me = self.acc(agent, o);
        let check = match mem {
            Mem::Chip(..) => true,
            Mem::Dram(v) => self.undefined.contains(&v),
        };
        self.range(
            mem,
            lo,
            hi,
            kind,
            me,
            check && kind == AccessKind::Read,
            None,
        )
    }

    pub(super) fn map(&mut self, mem: Mem) -> &mut IMap {
        match mem {
            Mem::Chip(Space::Sbuf, p) => &mut self.sbuf[p as usize],
            Mem::Chip(Space::Psum, p) => &mut self.psum[p as usize],
            Mem::Dram(v) => self.dram.entry(v).or_default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn range(
        &mut self,
        mem: Mem,
        lo: u32,
        hi: u32,
        kind: AccessKind,
        me: Acc,
        check_uninit: bool,
        matmul: Option<PsumFlags>,
    ) -> Result<(), ShadowFull> {
        if lo >= hi {
            return Ok(());
        }
        let clock = std::mem::take(&mut self.clocks[me.agent as usize]);
        // Live segments, counted as the update creates and merges them; the update stops at
        // the first that would pass the cap.
        let cap = self.segment_cap;
        let mut live = self.segments;
        let mut found: Vec<Hit> = Vec::new();
        let covered = |a: &Acc| a.agent == me.agent || a.epoch <= clock.get(a.agent);
        let race = |prev: &Acc, pk: AccessKind| {
            (
                Key::Race {
                    a: prev.origin,
                    ak: pk,
                    b: me.origin,
                    bk: kind,
                },
                (prev.epoch, me.epoch),
                (prev.agent, me.agent),
            )
        };
        let map = self.map(mem);
        let outcome = 'update: {
            live += u64::from(map.split(lo)) + u64::from(map.split(hi));
            if live > cap {
                break 'update Err(ShadowFull { segments: live });
            }
            let keys = map.keys_in(lo, hi);
            let mut gaps: Vec<(u32, u32)> = Vec::new();
            let mut cursor = lo;
            for &k in &keys {
                let Some((e, cell)) = map.0.get_mut(&k) else {
                    continue;
                };
                let e = *e;
                if k > cursor {
                    gaps.push((cursor, k));
                }
                cursor = e;
                if let Some(w) = &cell.w {
                    if !covered(w) {
                        let (key, ep, ag) = race(w, AccessKind::Write);
                        found.push((key, k, e, ep, ag));
                    }
                } else if kind == AccessKind::Read && check_uninit {
                    found.push((Key::Uninit(me.origin), k, e, (me.epoch, 0), (me.agent, 0)));
                }
                match kind {
                    AccessKind::Read => match cell.reads.iter_mut().find(|r| r.agent == me.agent) {
                        Some(r) => *r = me,
                        None => cell.reads.push(me),
                    },
                    AccessKind::Write => {
                        for r in &cell.reads {
                            if !covered(r) {
                                let (key, ep, ag) = race(r, AccessKind::Read);
                                found.push((key, k, e, ep, ag));
                            }
                        }
                    }
                }
            }
            if cursor < hi {
                gaps.push((cursor, hi));
            }
            match kind {
                AccessKind::Read => {
                    let need = live.saturating_add(gaps.len() as u64);
                    if need > cap {
                        break 'update Err(ShadowFull { segments: need });
                    }
                    live = need;
                    for &(g0, g1) in &gaps {
                        map.0.insert(
                            g0,
                            (
                                g1,
                                Cell {
                                    reads: vec![me],
                                    ..Cell::default()
                                },
                            ),
                        );
                        if check_uninit {
                            found.push((
                                Key::Uninit(me.origin),
                                g0,
                                g1,
                                (me.epoch, 0),
                                (me.agent, 0),
                            ));
                        }
                    }
                }
                AccessKind::Write => {
                    // The segments in the range become one.
                    let need = live.saturating_sub(keys.len() as u64) + 1;
                    if need > live.max(cap) {
                        break 'update Err(ShadowFull { segments: need });
                    }
                    live = need;
                    for k in &keys {
                        map.0.remove(k);
                    }
                    let closed = matmul.is_some_and(|f| f.stop);
                    map.0.insert(
                        lo,
                        (
                            hi,
                            Cell {
                                w: Some(me),
                                reads: Vec::new(),
                                open: !closed,
                                closed_by_matmul: closed,
                            },
                        ),
                    );
                    live -= map.coalesce(lo);
                }
            }
            Ok(())
        };
        self.segments = live;
        self.clocks[me.agent as usize] = clock;
        outcome?;
        for (key, l, h, ep, ag) in found {
            self.note(key, mem, l, h, ep, ag);
        }
        Ok(())
    }

    pub(super) fn psum_check(&mut self, origin: u32, r: &Resolved, flags: PsumFlags) {
        let mut found: Vec<(Key, u32, u32, u32)> = Vec::new();
        let runs = merged_runs(r);
        for p in r.first_partition..r.first_partition + r.partitions {
            let mem = Mem::Chip(r.space, p);
            for &(lo, hi) in &runs {
                let map = self.map(mem);
                let mut cursor = lo;
                let start = map.0.range(..lo).next_back().map(|(&k, _)| k).unwrap_or(lo);
                for (&k, (e, cell)) in map.0.range(start..hi) {
                    if *e <= lo {
                        continue;
                    }
                    let (s, e) = (k.max(lo), (*e).min(hi));
                    if s > cursor {
                        found.push((Key::Psum(origin, None), p, cursor, s));
                    }
                    cursor = e;
                    let ok = cell.w.is_some() && (flags.accumulate || cell.open);
                    if !ok {
                        let last = cell.w.filter(|_| cell.closed_by_matmul).map(|w| w.origin);
                        found.push((Key::Psum(origin, last), p, s, e));
                    }
                }
                if cursor < hi {
                    found.push((Key::Psum(origin, None), p, cursor, hi));
                }
            }
        }
        let agent = self.cur_agent;
        let epoch = self.clocks[agent as usize].get(agent);
        for (key, p, l, h) in found {
            self.note(key, Mem::Chip(r.space, p), l, h, (epoch, 0), (agent, 0));
        }
    }

    pub(super) fn note(
        &mut self,
        key: Key,
        mem: Mem,
        lo: u32,
        hi: u32,
        epochs: (u32, u32),
        agents: (Agent, Agent),
    ) {
        let (mk, part) = match mem {
            Mem::Chip(Space::Sbuf, p) => (MemKey::Sbuf, Some(p)),
            Mem::Chip(Space::Psum, p) => (MemKey::Psum, Some(p)),
            Mem::Dram(v) => (MemKey::Dram(v), None),
        };
        let agg = self.findings.entry((key, mk)).or_insert(Agg {
            partitions: part.map(|p| (p, p + 1)),
            bytes: (lo, hi),
            count: 0,
            epochs,
            agents,
        });
        if let (Some((a, b)), Some(p)) = (&mut agg.partitions, part) {
            *a = (*a).min(p);
            *b = (*b).max(p + 1);
        }
        agg.bytes = (agg.bytes.0.min(lo), agg.bytes.1.max(hi));
        agg.count += (hi - lo) as u64;
    }

    pub(super) fn next_release(&self, agent: Agent, epoch: u32) -> Option<String> {
        let rel = &self.releases[agent as usize];
        let i = rel.partition_point(|r| r.0 < epoch);
        rel.get(i).map(|r| r.1.clone())
    }
}

/// The byte ranges `[lo, hi)` one partition of `r` covers: its runs sorted, with contiguous
/// and overlapping runs merged (a reversed, transposed or broadcast pattern visits many runs
/// that cover few ranges). The layout is the same in every partition of the pattern.
pub(super) fn merged_runs(r: &Resolved) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    r.for_each_run_in_partition(|o, l| {
        let (lo, hi) = (o as u32, (o + l) as u32);
        match runs.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            _ => runs.push((lo, hi)),
        }
    });
    if runs.windows(2).any(|w| w[0].0 > w[1].0) {
        runs.sort_unstable();
    }
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(runs.len());
    for (lo, hi) in runs {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Whether operand `name` is an MX scale buffer (`src.scale`, `dst.scale`). Its pattern is the
/// rectangle from the scale partition to the last scale slot, of which only the slot partitions
/// hold scales: scale row `i` at partition `+ (i & 3) + 32·(i >> 2)` (docs/machine.md,
/// MXMEM_PATTERN1D). Only those partitions are recorded.
pub(super) fn mx_scale(name: &str) -> bool {
    name.ends_with(".scale")
}
