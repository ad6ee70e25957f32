//! The machine of a [`Program`]: one [`Machine`] per NeuronCore, and the DRAM variables the
//! cores share.
//!
//! Each core has its own SBUF, PSUM, semaphores, events, registers, engine queues and private
//! DRAM variables (constants, scratch, virtual variables). The inputs and outputs are bound by
//! name: an input's bytes are one buffer all cores read (a core that writes an input gets its
//! own copy), and each core writes the outputs into its own buffer, recording which bytes it
//! wrote. When every core has finished, each output is assembled from the bytes the cores
//! wrote, in core order.
//!
//! **Determinism.** No instruction the machine simulates orders one core against another (core
//! barriers and remote semaphores are refused as not simulated), so nothing a core reads can
//! depend on what another core writes: every core reads the shared variables' initial bytes
//! and its own writes. The cores can therefore run in parallel threads and the result does not
//! depend on the threads' timing. Bytes of a shared variable that one core writes and another
//! reads or writes are reported as a [`FindingKind::CoreRace`]: on the hardware their value
//! would depend on the cores' timing; here the output holds the last writing core's bytes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tpbsim_isa::Gen;

use super::budget::{Budget, Limits};
use super::core::{zeroed, Machine, RunOptions, RunStats, SetupError};
use super::fault::Fault;
use super::memory::{AccessLog, Ranges, VarBytes, VarKind};
use super::program::{is_bound_by_name, Program};
use super::race::{AccessKind, CoreSide, Extent, Finding, FindingKind, Memory};
use super::sched::SchedStats;

/// Sorted, disjoint byte ranges `[lo, hi)`.
type Spans = Vec<(u64, u64)>;

/// Bytes several cores read: an input's data (a buffer or a mapped file).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A fault of one core.
#[derive(Debug, thiserror::Error)]
pub struct CoreFault {
    /// Core index.
    pub core: usize,
    /// Its subgraph (`sg00`, ...).
    pub subgraph: String,
    /// Cores in the program (a single core's fault is shown without its core).
    pub cores: usize,
    /// The fault.
    #[source]
    pub fault: Fault,
}

impl std::fmt::Display for CoreFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cores > 1 {
            write!(f, "core {} ({}): ", self.core, self.subgraph)?;
        }
        write!(f, "{}", self.fault)
    }
}

/// Counters of a finished run of every core.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ClusterStats {
    /// Per core, in core order.
    pub cores: Vec<RunStats>,
    /// Worker threads the cores ran on.
    pub threads: usize,
    /// Wall time of the whole run.
    #[serde(serialize_with = "ser_secs")]
    pub wall: Duration,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl ClusterStats {
    /// The counters of all cores together (steps and bytes summed, rounds the most any core
    /// took, the cluster's wall time).
    pub fn total(&self) -> RunStats {
        let mut t = RunStats {
            wall: self.wall,
            ..RunStats::default()
        };
        for c in &self.cores {
            t.sched.steps += c.sched.steps;
            for (a, b) in t.sched.per_engine.iter_mut().zip(c.sched.per_engine) {
                *a += b;
            }
            t.sched.rounds = t.sched.rounds.max(c.sched.rounds);
            t.dma_bytes += c.dma_bytes;
            t.dma_transfers += c.dma_transfers;
        }
        t
    }
}

/// The machines of a program's cores.
pub struct Cluster<'p> {
    program: &'p Program,
    /// One machine per core, in core order.
    pub cores: Vec<Machine<'p>>,
    /// The initial bytes of each input, by name.
    inputs: BTreeMap<String, SharedBytes>,
}

/// The worker threads to use for `cores` cores when `threads` are asked (0 = one per
/// available hardware thread).
pub fn worker_threads(threads: usize, cores: usize) -> usize {
    let avail = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = if threads == 0 { avail } else { threads };
    want.clamp(1, cores.max(1))
}

impl<'p> Cluster<'p> {
    /// The cores of `program` on `gen` under `limits`, the inputs holding `inputs` (by name;
    /// an input not given takes the NEFF's own data). The inputs the run allocates (the NEFF's
    /// own data, zeroed inputs) are charged once; the caller's `inputs` are already in memory
    /// and are not charged. The rest of each limit is split evenly between the cores, so that no core's budget depends
    /// on another's progress.
    pub fn new(
        program: &'p Program,
        gen: Gen,
        limits: Limits,
        mut inputs: BTreeMap<String, SharedBytes>,
    ) -> Result<Cluster<'p>, SetupError> {
        let n = program.cores.len().max(1) as u64;
        let mut shared = Budget::new(limits);
        for v in program.inputs() {
            // The caller's inputs are already held (once, shared by every core) and are not
            // charged; what the run allocates for the others is.
            let given = inputs.contains_key(&v.name);
            let data: SharedBytes = match (inputs.get(&v.name), &v.init) {
                (Some(d), _) => d.clone(),
                (None, Some(d)) => Arc::new(d.clone()),
                (None, None) => Arc::new(zeroed(v.size).ok_or_else(|| {
                    SetupError::Memory(format!(
                        "variable `{}`: cannot allocate {} bytes",
                        v.name, v.size
                    ))
                })?),
            };
            let len = (*data).as_ref().len() as u64;
            if len != v.size {
                return Err(SetupError::Size {
                    name: v.name.clone(),
                    got: len,
                    want: v.size,
                });
            }
            if !given {
                shared
                    .charge_memory(|| format!("variable `{}`", v.name), v.size)
                    .map_err(SetupError::Budget)?;
            }
            inputs.insert(v.name.clone(), data);
        }
        let base = shared.memory();
        let per_core = Limits {
            max_memory: base + (limits.max_memory - base) / n,
            max_dma_bytes: limits.max_dma_bytes / n,
        };
        let mut cores = Vec::with_capacity(program.cores.len());
        for kernel in &program.cores {
            let mut budget = Budget::new(per_core);
            budget
                .charge_memory(|| "the shared inputs".into(), base)
                .map_err(SetupError::Budget)?;
            let given = |v: &super::kernel::VarSpec| {
                (v.kind == VarKind::Input)
                    .then(|| inputs.get(&v.name))
                    .flatten()
                    .map(|d| VarBytes::Shared(d.clone()))
            };
            let mut m = Machine::with_budget(kernel, gen, budget, &given)?;
            if n > 1 {
                for v in kernel.vars.iter().filter(|v| is_bound_by_name(v.kind)) {
                    m.dram.track(v.id);
                }
            }
            cores.push(m);
        }
        Ok(Cluster {
            program,
            cores,
            inputs,
        })
    }

    /// The program.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// Run every core to completion, the cores on up to `threads` worker threads (0 = one
    /// per available hardware thread). `progress` is told each core's counters periodically.
    /// Every core runs to its end; the first fault in core order is returned.
    pub fn run(
        &mut self,
        opts: &RunOptions,
        threads: usize,
        progress: &(dyn Fn(usize, &SchedStats) + Sync),
    ) -> Result<ClusterStats, Box<CoreFault>> {
        let start = Instant::now();
        let n = self.cores.len();
        let workers = worker_threads(threads, n);
        let results: Vec<Result<RunStats, Fault>> = if workers <= 1 {
            self.cores
                .iter_mut()
                .enumerate()
                .map(|(c, m)| m.run(opts, &mut |st| progress(c, st)))
                .collect()
        } else {
            let mut lanes: Vec<Vec<(usize, &mut Machine<'p>)>> =
                (0..workers).map(|_| Vec::new()).collect();
            for (c, m) in self.cores.iter_mut().enumerate() {
                lanes[c % workers].push((c, m));
            }
            let mut done: Vec<(usize, Result<RunStats, Fault>)> = std::thread::scope(|s| {
                let handles: Vec<_> = lanes
                    .into_iter()
                    .map(|lane| {
                        s.spawn(move || {
                            lane.into_iter()
                                .map(|(c, m)| (c, m.run(opts, &mut |st| progress(c, st))))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            done.sort_by_key(|d| d.0);
            done.into_iter().map(|d| d.1).collect()
        };
        let mut stats = Vec::with_capacity(n);
        for (c, r) in results.into_iter().enumerate() {
            match r {
                Ok(s) => stats.push(s),
                Err(fault) => {
                    return Err(Box::new(CoreFault {
                        core: c,
                        subgraph: self.program.core_name(c).to_string(),
                        cores: n,
                        fault,
                    }))
                }
            }
        }
        Ok(ClusterStats {
            cores: stats,
            threads: workers,
            wall: start.elapsed(),
        })
    }

    /// The bytes of output `name` after a run, taken out of the machine: a single core's
    /// buffer (the variable is left empty), or the bytes each core wrote laid over zeros in
    /// core order.
    pub fn take_output(&mut self, name: &str) -> Option<VarBytes> {
        let spec = self.program.var(name)?;
        if self.cores.len() == 1 {
            // The run is over: the core's buffer becomes the output (no copy).
            let id = self.cores[0].dram.id_of(name)?;
            return self.cores[0].dram.take(id);
        }
        let mut out = vec![0u8; usize::try_from(spec.size).ok()?];
        for m in &mut self.cores {
            let Some(id) = m.dram.id_of(name) else {
                continue;
            };
            let ranges: Vec<(u64, u64)> = match m.dram.log_mut(id) {
                Some(log) => log.writes.ranges().to_vec(),
                None => continue,
            };
            let Some(v) = m.dram.get(id) else { continue };
            for (lo, hi) in ranges {
                let (lo, hi) = (lo as usize, (hi as usize).min(out.len()));
                if lo < hi && hi <= v.bytes.len() {
                    out[lo..hi].copy_from_slice(&v.bytes[lo..hi]);
                }
            }
        }
        Some(VarBytes::Owned(out))
    }

    /// The bytes of the shared variables that two cores access, at least one of them writing
    /// (see the module documentation), in a fixed order: variable, then core pair, then kind.
    pub fn core_races(&mut self) -> Vec<Finding> {
        let n = self.cores.len();
        let mut out = Vec::new();
        if n < 2 {
            return out;
        }
        let names: Vec<String> = self
            .program
            .io_vars()
            .into_iter()
            .map(|v| v.name.clone())
            .collect();
        for name in names {
            let logs: Vec<Option<(Spans, Spans)>> = self
                .cores
                .iter_mut()
                .map(|m| {
                    let id = m.dram.id_of(&name)?;
                    let log: &mut AccessLog = m.dram.log_mut(id)?;
                    Some((log.reads.ranges().to_vec(), log.writes.ranges().to_vec()))
                })
                .collect();
            for a in 0..n {
                for b in a + 1..n {
                    let (Some((ra, wa)), Some((rb, wb))) = (&logs[a], &logs[b]) else {
                        continue;
                    };
                    for (ka, kb, x, y) in [
                        (AccessKind::Write, AccessKind::Write, wa, wb),
                        (AccessKind::Write, AccessKind::Read, wa, rb),
                        (AccessKind::Read, AccessKind::Write, ra, wb),
                    ] {
                        let both = Ranges::intersect(x, y);
                        let (Some(first), Some(last)) = (both.first(), both.last()) else {
                            continue;
                        };
                        let side = |core: usize, kind| CoreSide {
                            core,
                            subgraph: self.program.core_name(core).to_string(),
                            kind,
                        };
                        out.push(Finding {
                            core: None,
                            kind: FindingKind::CoreRace {
                                a: side(a, ka),
                                b: side(b, kb),
                            },
                            extent: Extent {
                                memory: Memory::Dram(name.clone()),
                                partitions: None,
                                bytes: (first.0, last.1),
                                address: None,
                                count: both.iter().map(|r| r.1 - r.0).sum(),
                            },
                        });
                    }
                }
            }
        }
        out
    }

    /// The initial bytes of input `name`.
    pub fn input(&self, name: &str) -> Option<&[u8]> {
        self.inputs.get(name).map(|d| (**d).as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::sched::SchedStats;

    fn core(k: u64) -> RunStats {
        RunStats {
            sched: SchedStats {
                steps: 10 * k,
                per_engine: [k, 2 * k, 3 * k, 4 * k, 0],
                rounds: 7 * k,
            },
            dma_bytes: 100 * k,
            dma_transfers: k,
            wall: Duration::from_millis(k),
        }
    }

    #[test]
    fn the_total_sums_counts_keeps_the_most_rounds_and_the_clusters_wall_time() {
        let stats = ClusterStats {
            cores: vec![core(1), core(3), core(2)],
            threads: 2,
            wall: Duration::from_millis(9),
        };
        let t = stats.total();
        assert_eq!(t.sched.steps, 60);
        assert_eq!(t.sched.per_engine, [6, 12, 18, 24, 0]);
        assert_eq!(t.sched.rounds, 21);
        assert_eq!((t.dma_bytes, t.dma_transfers), (600, 6));
        assert_eq!(t.wall, Duration::from_millis(9));
        // No core: nothing counted.
        let none = ClusterStats::default().total();
        assert_eq!((none.sched.steps, none.sched.per_engine), (0, [0; 5]));
    }
}
