//! A timed view of a run: each bundle and each DMA transfer as a slice on its engine's or
//! queue's track, placed by a per-opcode cost model, with semaphore/event waits as flows.
//!
//! The run itself is untimed (`docs/machine.md`); the timeline replays its synchronisation with
//! times: a bundle starts when its engine is free and the updates that satisfied its waits have
//! happened, and takes the cycles of the cost model at its engine's clock. A DMA transfer starts
//! when its queue is free, no earlier than the start of its trigger. The cost model and clocks
//! are documented, with their provenance, in `docs/trace.md`.

use serde_json::{json, Value};
use tpbsim_isa::{opcode_byte, Engine};

use super::race::Agent;

/// Engine clocks in GHz by wire id (PE, ACT, POOL, DVE, SP).
pub const CLOCK_GHZ: [f64; Engine::COUNT] = [2.8, 1.4, 1.4, 1.12, 1.4];

/// Fixed cycles of a data-path bundle on ACT/DVE/POOL (project-defined).
pub const FIXED_CYCLES: u64 = 64;
/// Cycles of a control bundle (no tensor operand) on any engine (project-defined).
pub const CONTROL_CYCLES: u64 = 16;
/// Minimum MultiplyMoving initiation interval in PE cycles.
pub const MM_INIT_CYCLES: u64 = 64;
/// Minimum LoadStationary cycles (project-defined).
pub const LS_MIN_CYCLES: u64 = 16;
/// Fixed latency of one DMA descriptor in ns (project-defined).
pub const DMA_LATENCY_NS: f64 = 2000.0;
/// Bandwidth of one DMA queue in bytes per ns (820 GB/s of HBM over 32 DMA engines).
pub const DMA_BYTES_PER_NS: f64 = 820.0 / 32.0;

/// Cycles of a bundle with opcode `opcode` on `e`, from its operands' shapes
/// `(elements per partition, bytes per element)` in operand order.
pub fn bundle_cycles(e: Engine, opcode: u8, shapes: &[(u64, u32)]) -> u64 {
    let Some(&(first, first_bytes)) = shapes.first() else {
        return CONTROL_CYCLES;
    };
    let fp32 = if first_bytes == 4 { 4 } else { 1 };
    match (e, opcode) {
        // LdWeights / LdWeightsMx: up to 4x faster than a MultiplyMoving of the same size.
        (Engine::Pe, opcode_byte::LDWEIGHTS | opcode_byte::LDWEIGHTS_MX) => {
            first.div_ceil(4).max(LS_MIN_CYCLES) * fp32
        }
        // Matmul / MatmulMx: max(N, 64) per moving tile, 4x for fp32 inputs.
        (Engine::Pe, _) => first.max(MM_INIT_CYCLES) * fp32,
        // 128 lanes: one element per partition per cycle, plus a fixed overhead.
        (Engine::Act | Engine::Dve | Engine::Pool, _) => {
            FIXED_CYCLES + shapes.iter().map(|s| s.0).max().unwrap_or(0)
        }
        (Engine::Sp, _) => CONTROL_CYCLES,
    }
}

/// Duration of one DMA descriptor of `bytes` bytes, in ns.
pub fn dma_ns(bytes: u64) -> f64 {
    DMA_LATENCY_NS + bytes as f64 / DMA_BYTES_PER_NS
}

/// When an update was made: its time, and whether it closes the slice of its track that made
/// it (a `_COMPLETE` update, a DMA transfer's updates) or opens it (issue-time updates and
/// event flips). Where one slice of a track ends exactly when the next starts, the time alone
/// does not say which of the two made the update.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stamp {
    /// Time in ns.
    pub t: f64,
    /// Made at the end of its slice.
    pub end: bool,
}

impl Stamp {
    /// An update made when its slice starts, at `t`.
    pub fn start(t: f64) -> Stamp {
        Stamp { t, end: false }
    }
    /// An update made when its slice ends, at `t`.
    pub fn end(t: f64) -> Stamp {
        Stamp { t, end: true }
    }
}

/// A bare time is an update made at the end of its slice.
impl From<f64> for Stamp {
    fn from(t: f64) -> Stamp {
        Stamp::end(t)
    }
}

/// One slice of a track.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Slice {
    /// Track (agent).
    pub agent: Agent,
    /// Name (mnemonic, or the DMA descriptor).
    pub name: String,
    /// Operands and other arguments.
    pub args: String,
    /// Start in ns.
    pub start: f64,
    /// Duration in ns.
    pub dur: f64,
    /// Time the slice waited for synchronisation before it could start, in ns.
    pub waited: f64,
    /// The (agent, time) whose update or trigger determined the start, when it was not the
    /// end of the track's previous slice.
    pub dep: Option<(Agent, Stamp)>,
    /// Index of the bundle in its engine's stream (engine slices; `None` for DMA transfers).
    pub bundle: Option<usize>,
}

/// A wait satisfied by an update of another track.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Flow {
    /// Releasing track and time.
    pub from: (Agent, Stamp),
    /// Waiting slice index.
    pub to: usize,
    /// Semaphore or event.
    pub name: String,
}

/// The timeline being built.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Track names by agent.
    pub labels: Vec<String>,
    /// Time each track is free again, in ns.
    pub now: Vec<f64>,
    /// Slices in creation order.
    pub slices: Vec<Slice>,
    /// Flows.
    pub flows: Vec<Flow>,
    /// Flows into the bundle being issued: (from agent, time, name).
    pub(crate) pending_flows: Vec<(Agent, Stamp, String)>,
    /// Start of the bundle being executed, per engine.
    pub(crate) cur_start: [f64; Engine::COUNT],
    cur_ready: [(f64, Option<(Agent, Stamp)>); Engine::COUNT],
}

impl Timeline {
    /// A timeline for `labels` tracks (the five engines first).
    pub fn new(labels: Vec<String>) -> Timeline {
        let n = labels.len();
        Timeline {
            labels,
            now: vec![0.0; n],
            ..Timeline::default()
        }
    }

    /// Engine `e` issues a bundle whose waits became true at `ready`: its start.
    pub fn start(&mut self, e: Engine, ready: f64) -> f64 {
        let i = e as usize;
        let free = self.now[i];
        let start = free.max(ready);
        self.cur_start[i] = start;
        let dep = self
            .pending_flows
            .iter()
            .filter(|f| f.1.t >= start && f.1.t > free)
            .map(|f| (f.0, f.1))
            .next();
        self.cur_ready[i] = (start - free, dep);
        start
    }

    /// Engine `e`'s bundle ends after `cycles`; returns the end time.
    pub fn finish(&mut self, e: Engine, name: &str, args: String, cycles: u64) -> f64 {
        let i = e as usize;
        let start = self.cur_start[i];
        let dur = cycles as f64 / CLOCK_GHZ[i];
        let (waited, dep) = self.cur_ready[i];
        let idx = self.slices.len();
        self.slices.push(Slice {
            agent: e as Agent,
            name: name.to_string(),
            args,
            start,
            dur,
            waited,
            dep,
            bundle: None,
        });
        for (from, t, n) in self.pending_flows.drain(..) {
            self.flows.push(Flow {
                from: (from, t),
                to: idx,
                name: n,
            });
        }
        self.now[i] = start + dur;
        start + dur
    }

    /// Queue `q` performs a transfer of `bytes` triggered by `by` at `not_before`; returns its
    /// end time.
    pub fn dma(&mut self, q: Agent, by: Agent, name: String, bytes: u64, not_before: f64) -> f64 {
        let free = self.now[q as usize];
        let start = free.max(not_before);
        let dur = dma_ns(bytes);
        let dep = (not_before >= free).then_some((by, Stamp::start(not_before)));
        self.slices.push(Slice {
            agent: q,
            name,
            args: format!("{bytes} bytes"),
            start,
            dur,
            waited: 0.0,
            dep,
            bundle: None,
        });
        self.now[q as usize] = start + dur;
        start + dur
    }

    /// Each agent's slice indices in push order, which is start order: an agent's next slice
    /// never starts before its previous one ends.
    fn by_agent(&self) -> Vec<Vec<usize>> {
        let mut v: Vec<Vec<usize>> = vec![Vec::new(); self.labels.len()];
        for (i, s) in self.slices.iter().enumerate() {
            let a = s.agent as usize;
            if a >= v.len() {
                v.resize(a + 1, Vec::new());
            }
            v[a].push(i);
        }
        v
    }

    /// The slice of `agent` that made an update at `at`, found in `by_agent`
    /// ([`Timeline::by_agent`]) by binary search: for an update made at the start of its slice
    /// the latest slice starting at or before `at.t`; for one made at the end, the latest
    /// starting before it (so not the next slice when it starts the moment this one ends),
    /// or a zero-length slice starting at it.
    fn slice_at(&self, by_agent: &[Vec<usize>], agent: Agent, at: Stamp) -> Option<usize> {
        let list = by_agent.get(agent as usize)?;
        let k = list.partition_point(|&i| self.slices[i].start <= at.t + 1e-9);
        let mut k = k.checked_sub(1)?;
        if at.end {
            // Step back over slices that start at the update's time but do not end there.
            while k > 0 {
                let s = &self.slices[list[k]];
                if s.start + 1e-9 < at.t || (s.start + s.dur - at.t).abs() <= 1e-9 {
                    break;
                }
                k -= 1;
            }
        }
        Some(list[k])
    }

    /// Chrome trace-event JSON (`traceEvents`): one named track per engine and DMA queue that
    /// has a slice (the engines always), slices as complete events, flows as `s`/`f`.
    /// Times are in µs. Everything sits in process 1 (`NeuronCore`) and track `t` of the
    /// model is thread `t + 1`: importers such as Perfetto's reserve pid/tid 0 for the idle
    /// process and its swapper thread.
    pub fn to_chrome(&self) -> Value {
        let mut ev = Vec::new();
        self.chrome_events(1, "NeuronCore", &mut ev);
        json!({"traceEvents": ev, "displayTimeUnit": "ns"})
    }

    /// The Chrome trace of several cores' timelines (`(subgraph, timeline)` in core order):
    /// core `c` is process `c + 1`, named `NeuronCore c (subgraph)`, with its tracks as in
    /// [`Timeline::to_chrome`]. One core gives exactly [`Timeline::to_chrome`].
    pub fn cores_to_chrome(cores: &[(String, &Timeline)]) -> Value {
        if let [(_, t)] = cores {
            return t.to_chrome();
        }
        let mut ev = Vec::new();
        for (c, (name, t)) in cores.iter().enumerate() {
            t.chrome_events(c as u32 + 1, &format!("NeuronCore {c} ({name})"), &mut ev);
        }
        json!({"traceEvents": ev, "displayTimeUnit": "ns"})
    }

    /// The events of this timeline as process `pid` named `process`.
    fn chrome_events(&self, pid: u32, process: &str, ev: &mut Vec<Value>) {
        let engines = Engine::COUNT;
        let tid = |agent: usize| agent + 1;
        ev.push(json!({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": process}}));
        for (i, l) in self.labels.iter().enumerate() {
            if i >= engines && !self.slices.iter().any(|s| s.agent as usize == i) {
                continue;
            }
            let name = if i < engines {
                format!("{l} engine")
            } else {
                format!("DMA {l}")
            };
            ev.push(json!({"ph": "M", "pid": pid, "tid": tid(i), "name": "thread_name", "args": {"name": name}}));
            ev.push(json!({"ph": "M", "pid": pid, "tid": tid(i), "name": "thread_sort_index", "args": {"sort_index": i}}));
        }
        for s in &self.slices {
            ev.push(json!({
                "ph": "X", "pid": pid, "tid": tid(s.agent as usize), "name": s.name, "cat": "bundle",
                "ts": s.start / 1e3, "dur": s.dur / 1e3,
                "args": {"operands": s.args, "waited_ns": s.waited},
            }));
        }
        let by_agent = self.by_agent();
        // Flow ids are unique across processes: the process number in the high bits.
        let base = u64::from(pid) << 40;
        for (id, f) in self.flows.iter().enumerate() {
            let to = &self.slices[f.to];
            let Some(src) = self.slice_at(&by_agent, f.from.0, f.from.1) else {
                continue;
            };
            let s = &self.slices[src];
            // Both ends lie strictly inside their slices (by up to 1 ns, at most half the
            // slice), so an importer that converts µs to integer nanoseconds and orders equal
            // timestamps arbitrarily still finds the enclosing slice.
            let inset = |dur: f64| (dur / 2.0).min(1.0);
            let from_ts = f
                .from
                .1
                .t
                .clamp(s.start + inset(s.dur), s.start + s.dur - inset(s.dur));
            let to_ts = to.start + inset(to.dur);
            let id = if pid == 1 {
                id as u64
            } else {
                base | id as u64
            };
            ev.push(json!({"ph": "s", "id": id, "pid": pid, "tid": tid(f.from.0 as usize), "ts": from_ts / 1e3, "name": f.name, "cat": "sync"}));
            ev.push(json!({"ph": "f", "bp": "e", "id": id, "pid": pid, "tid": tid(to.agent as usize), "ts": to_ts / 1e3, "name": f.name, "cat": "sync"}));
        }
    }

    /// Per-track busy, wait and idle time and the critical path.
    pub fn profile(&self) -> Profile {
        let makespan = self
            .slices
            .iter()
            .map(|s| s.start + s.dur)
            .fold(0.0, f64::max);
        let mut tracks = Vec::new();
        for (i, l) in self.labels.iter().enumerate() {
            let mine: Vec<&Slice> = self
                .slices
                .iter()
                .filter(|s| s.agent as usize == i)
                .collect();
            if i >= 5 && mine.is_empty() {
                continue;
            }
            let busy = mine.iter().fold(0.0, |a, s| a + s.dur);
            let wait = mine.iter().fold(0.0, |a, s| a + s.waited);
            tracks.push(TrackProfile {
                track: l.clone(),
                slices: mine.len(),
                busy_ns: busy,
                wait_ns: wait,
                idle_ns: (makespan - busy - wait).max(0.0),
            });
        }
        // Critical path: from the last slice to end, follow the dependency that set each start.
        let mut path = Vec::new();
        let mut cur = self
            .slices
            .iter()
            .enumerate()
            .max_by(|a, b| (a.1.start + a.1.dur).total_cmp(&(b.1.start + b.1.dur)))
            .map(|(i, _)| i);
        let by_agent = self.by_agent();
        while let Some(i) = cur {
            path.push(i);
            let s = &self.slices[i];
            cur = match s.dep {
                Some((a, t)) => self.slice_at(&by_agent, a, t).filter(|&j| j != i),
                // The agent's previous slice.
                None => {
                    let list = &by_agent[s.agent as usize];
                    list.binary_search(&i)
                        .ok()
                        .and_then(|k| k.checked_sub(1))
                        .map(|k| list[k])
                }
            };
            if path.len() > self.slices.len() {
                break;
            }
        }
        path.reverse();
        let critical = path
            .iter()
            .map(|&i| {
                let s = &self.slices[i];
                CriticalStep {
                    track: self.labels[s.agent as usize].clone(),
                    name: s.name.clone(),
                    start_ns: s.start,
                    dur_ns: s.dur,
                }
            })
            .collect();
        Profile {
            makespan_ns: makespan,
            tracks,
            critical_path: critical,
        }
    }
}

/// Busy, wait and idle time of one track.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrackProfile {
    /// Track name.
    pub track: String,
    /// Slices.
    pub slices: usize,
    /// Time executing.
    pub busy_ns: f64,
    /// Time blocked on semaphore/event waits.
    pub wait_ns: f64,
    /// The rest of the run.
    pub idle_ns: f64,
}

/// One slice of the critical path.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CriticalStep {
    /// Track.
    pub track: String,
    /// Slice name.
    pub name: String,
    /// Start.
    pub start_ns: f64,
    /// Duration.
    pub dur_ns: f64,
}

/// The profile of a timeline.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Profile {
    /// End of the last slice.
    pub makespan_ns: f64,
    /// Per track.
    pub tracks: Vec<TrackProfile>,
    /// The chain of slices that determines the makespan, first to last.
    pub critical_path: Vec<CriticalStep>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_model() {
        // Matmul: max(N, 64), x4 for fp32.
        assert_eq!(bundle_cycles(Engine::Pe, 0x02, &[(512, 2), (512, 4)]), 512);
        assert_eq!(bundle_cycles(Engine::Pe, 0x02, &[(32, 2)]), 64);
        assert_eq!(bundle_cycles(Engine::Pe, 0x02, &[(128, 4)]), 512);
        assert_eq!(bundle_cycles(Engine::Pe, 0x01, &[(128, 2)]), 32);
        assert_eq!(
            bundle_cycles(Engine::Dve, 0x41, &[(512, 4), (512, 4), (512, 4)]),
            576
        );
        assert_eq!(bundle_cycles(Engine::Act, 0x21, &[]), CONTROL_CYCLES);
        assert!((dma_ns(25_625) - (DMA_LATENCY_NS + 1000.0)).abs() < 1e-9);
    }

    #[test]
    fn waits_delay_starts_and_become_flows() {
        let labels = ["pe", "act", "pool", "dve", "sp", "sp:in"]
            .map(String::from)
            .to_vec();
        let mut t = Timeline::new(labels);
        // SP triggers at 0; the DMA ends at 2000 + 1000 ns and releases a semaphore.
        t.start(Engine::Sp, 0.0);
        let end = t.dma(5, Engine::Sp as Agent, "in[0].desc[0]".into(), 25_600, 0.0);
        t.finish(
            Engine::Sp,
            "PSEUDO_DMATRIGGER",
            String::new(),
            CONTROL_CYCLES,
        );
        // DVE waits for it.
        t.pending_flows
            .push((5, Stamp::end(end), "semaphore 1".into()));
        let s = t.start(Engine::Dve, end);
        assert_eq!(s, end);
        t.finish(Engine::Dve, "TENSOR_TENSOR_ARITH_OP", "src0".into(), 576);
        assert_eq!(t.flows.len(), 1);
        let p = t.profile();
        assert_eq!(p.critical_path.len(), 3, "{p:?}");
        assert_eq!(p.critical_path[0].track, "sp");
        assert_eq!(p.critical_path[1].track, "sp:in");
        assert_eq!(p.critical_path[2].track, "dve");
        let dve = p.tracks.iter().find(|x| x.track == "dve").unwrap();
        assert!((dve.wait_ns - end).abs() < 1e-9);
        assert!((dve.busy_ns - 576.0 / 1.12).abs() < 1e-6);
        let j = t.to_chrome();
        let evs = j["traceEvents"].as_array().unwrap();
        assert_eq!(evs.iter().filter(|e| e["ph"] == "s").count(), 1);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "f").count(), 1);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), 3);
    }

    #[test]
    fn a_flow_starts_in_the_slice_that_released_it() {
        let labels = ["pe", "act", "pool", "dve", "sp"]
            .map(String::from)
            .to_vec();
        let mut t = Timeline::new(labels);
        // ACT bundle 0 releases at its end; bundle 1 starts the moment it ends and releases
        // at its start (an issue-time update).
        t.start(Engine::Act, 0.0);
        let end0 = t.finish(Engine::Act, "A0", String::new(), 140);
        t.start(Engine::Act, 0.0);
        let end1 = t.finish(Engine::Act, "A1", String::new(), 140);
        t.pending_flows
            .push((Engine::Act as Agent, Stamp::end(end0), "semaphore 3".into()));
        t.start(Engine::Dve, end0);
        t.finish(Engine::Dve, "D0", String::new(), 112);
        t.pending_flows.push((
            Engine::Act as Agent,
            Stamp::start(end0),
            "semaphore 4".into(),
        ));
        t.start(Engine::Dve, end0);
        t.finish(Engine::Dve, "D1", String::new(), 112);
        assert!((end1 - 2.0 * end0).abs() < 1e-9);
        let j = t.to_chrome();
        let evs = j["traceEvents"].as_array().unwrap();
        let s: Vec<f64> = evs
            .iter()
            .filter(|e| e["ph"] == "s")
            .map(|e| e["ts"].as_f64().unwrap() * 1e3)
            .collect();
        assert_eq!(s.len(), 2);
        assert!(s[0] > 0.0 && s[0] < end0, "{s:?} (A0 is 0..{end0})");
        assert!(s[1] > end0 && s[1] < end1, "{s:?} (A1 is {end0}..{end1})");
        // The critical path follows the same binding: D0 waited for A0's end.
        let d0 = t.slices.iter().position(|x| x.name == "D0").unwrap();
        assert_eq!(
            t.slices[d0].dep,
            Some((Engine::Act as Agent, Stamp::end(end0)))
        );
    }
}
