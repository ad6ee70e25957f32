//! The machine: one NeuronCore's state driving a [`Kernel`] through the scheduler.

use std::time::{Duration, Instant};

use tpbsim_isa::{Bundle, Engine, Gen};

use super::control::{self, NUM_REGS};
use super::dma::{self, DmaDesc, DmaMem, DmaSide};
use super::exec::EngineState;
use super::fault::{Fault, Site};
use super::geometry::Geometry;
use super::kernel::Kernel;
use super::memory::{Dram, DramVar, OnChip};
use super::sched::{self, Flow, Program, SchedStats};
use super::sync::{Events, SyncState};
use crate::numerics::Format;

/// Default step budget of a run.
pub const DEFAULT_MAX_STEPS: u64 = 100_000_000;

/// Checks a bundle before it first executes; returns the reasons it is invalid.
pub type BundleValidator = dyn Fn(&Bundle, Gen, Engine) -> Result<(), String> + Send + Sync;

/// Options of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Step budget.
    pub max_steps: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// Counters of a finished run.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RunStats {
    /// Scheduler counters (steps, per-engine bundles).
    pub sched: SchedStats,
    /// Bytes written by DMA transfers.
    pub dma_bytes: u64,
    /// DMA transfers executed.
    pub dma_transfers: u64,
    /// Wall time of the run.
    #[serde(serialize_with = "ser_secs")]
    pub wall: Duration,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Why a machine cannot be set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// Initial data of the wrong size.
    #[error("variable `{name}`: {got} bytes of data for a {want}-byte variable")]
    Size {
        /// Variable.
        name: String,
        /// Bytes given.
        got: u64,
        /// Bytes declared.
        want: u64,
    },
    /// No such variable.
    #[error("no variable `{0}`")]
    Unknown(String),
}

/// One NeuronCore running one kernel.
pub struct Machine<'k> {
    kernel: &'k Kernel,
    /// Generation.
    pub gen: Gen,
    /// SBUF and PSUM.
    pub chip: OnChip,
    /// DRAM variables.
    pub dram: Dram,
    /// Semaphores and events.
    pub sync: SyncState,
    /// Per-engine registers, by wire id.
    pub regs: [[u32; NUM_REGS]; 5],
    /// PE stationary operand, ACT/DVE accumulators, ACT table selection.
    pub engines: EngineState,
    validator: Option<Box<BundleValidator>>,
    validated: [Vec<bool>; 5],
    dma_bytes: u64,
    dma_transfers: u64,
    buf: Vec<u8>,
}

impl<'k> Machine<'k> {
    /// A machine for `kernel` on `gen`, DRAM variables holding their initial data (or zeros).
    pub fn new(kernel: &'k Kernel, gen: Gen) -> Result<Machine<'k>, SetupError> {
        let mut dram = Dram::default();
        for v in &kernel.vars {
            let bytes = match &v.init {
                Some(d) if d.len() as u64 != v.size => {
                    return Err(SetupError::Size {
                        name: v.name.clone(),
                        got: d.len() as u64,
                        want: v.size,
                    })
                }
                Some(d) => d.clone(),
                None => vec![0; v.size as usize],
            };
            dram.insert(
                v.id,
                DramVar {
                    name: v.name.clone(),
                    kind: v.kind,
                    bytes,
                },
            );
        }
        Ok(Machine {
            kernel,
            gen,
            chip: OnChip::new(Geometry::of(gen)),
            dram,
            sync: SyncState::default(),
            regs: [[0; NUM_REGS]; 5],
            engines: EngineState::default(),
            validator: None,
            validated: std::array::from_fn(|i| vec![false; kernel.streams[i].len()]),
            dma_bytes: 0,
            dma_transfers: 0,
            buf: Vec::new(),
        })
    }

    /// Validate every bundle with `v` the first time it executes.
    pub fn set_validator(&mut self, v: Box<BundleValidator>) {
        self.validator = Some(v);
    }

    /// Replace the contents of variable `name`.
    pub fn set_var(&mut self, name: &str, data: &[u8]) -> Result<(), SetupError> {
        let id = self
            .dram
            .id_of(name)
            .ok_or_else(|| SetupError::Unknown(name.to_string()))?;
        let var = self
            .dram
            .get_mut(id)
            .ok_or_else(|| SetupError::Unknown(name.to_string()))?;
        if var.bytes.len() != data.len() {
            return Err(SetupError::Size {
                name: name.into(),
                got: data.len() as u64,
                want: var.bytes.len() as u64,
            });
        }
        var.bytes.copy_from_slice(data);
        Ok(())
    }

    /// Contents of variable `name`.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.dram
            .id_of(name)
            .and_then(|id| self.dram.get(id))
            .map(|v| v.bytes.as_slice())
    }

    /// Run to completion or fault. `progress` receives the step count periodically.
    pub fn run(
        &mut self,
        opts: &RunOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunStats, Fault> {
        let start = Instant::now();
        let mut sync = std::mem::take(&mut self.sync);
        let r = sched::run(self, &mut sync, opts.max_steps, progress);
        self.sync = sync;
        let sched = r?;
        Ok(RunStats {
            sched,
            dma_bytes: self.dma_bytes,
            dma_transfers: self.dma_transfers,
            wall: start.elapsed(),
        })
    }

    fn bundle(&self, e: Engine, pc: usize) -> &'k Bundle {
        &self.kernel.streams[e as usize][pc]
    }

    fn site(&self, e: Engine, pc: usize) -> Site {
        Site {
            engine: e,
            index: pc,
            opcode: self.bundle(e, pc).opcode(),
        }
    }

    fn not_simulated(&self, e: Engine, pc: usize, what: String) -> Fault {
        Fault::NotSimulated {
            site: self.site(e, pc),
            name: what,
            engine: e,
        }
    }

    fn dma(&mut self, site: Site, operand: &str, d: &DmaDesc) -> Result<(), Fault> {
        let n =
            dma::transfer(d, &mut self.dram, &mut self.chip, &mut self.buf).map_err(
                |err| match err {
                    dma::DmaError::Access { side, err } => {
                        Fault::oob(site, format!("{operand}.{side}"), err)
                    }
                    other => Fault::exec(site, format!("{operand}: {other}")),
                },
            )?;
        self.dma_bytes += n;
        self.dma_transfers += 1;
        Ok(())
    }

    fn execute_bundle(
        &mut self,
        e: Engine,
        pc: usize,
        sync: &mut SyncState,
    ) -> Result<Flow, Fault> {
        let b = self.bundle(e, pc);
        let site = self.site(e, pc);
        if let Some(v) = &self.validator {
            if !self.validated[e as usize][pc] {
                v(b, self.gen, e).map_err(|reason| Fault::InvalidBundle { site, reason })?;
                self.validated[e as usize][pc] = true;
            }
        }
        let raw = &b.0;
        match b.opcode() {
            // Events-only control bundles.
            0x9F | 0xA0 | 0xA2 | 0xA4 | 0xA6 => Ok(Flow::Next),
            0xA1 => Ok(Flow::Finish),
            0xDF => match raw[12] {
                1 => Ok(Flow::Finish),
                sub => Err(self.not_simulated(e, pc, format!("PSEUDO_INST sub-op {sub}"))),
            },
            0xB0 => {
                let mask: [u8; 32] = raw[0x20..0x40].try_into().unwrap_or([0; 32]);
                control::range_clear(sync, raw[12], raw[13], raw[14], &mask)
                    .map_err(|m| Fault::exec(site, m))?;
                Ok(Flow::Next)
            }
            0xA9 => {
                let fmt = Format::from_wire_tag(raw[13], self.gen).ok_or_else(|| {
                    Fault::exec(
                        site,
                        format!("branch dtype tag 0x{:02x} is not a format", raw[13]),
                    )
                })?;
                let regs = &self.regs[e as usize];
                let reg = |i: u8| regs.get(i as usize).copied().unwrap_or(0);
                let taken =
                    control::branch_taken(raw[12], fmt, reg(raw[32]), b.u32_at(16), reg(raw[33]))
                        .map_err(|m| Fault::exec(site, m))?;
                if !taken {
                    return Ok(Flow::Next);
                }
                let len = self.kernel.streams[e as usize].len();
                let t = control::branch_target(pc, len, raw[14], b.u64_at(48), reg(raw[34]))
                    .map_err(|m| Fault::exec(site, m))?;
                Ok(Flow::Jump(t))
            }
            0xD4 => {
                let d = self.direct2d(site, b)?;
                self.dma(site, "dma", &d)?;
                let (sem, inc) = (raw[13], raw[14]);
                if inc != 0 {
                    sync.sems[sem as usize] = sync.sems[sem as usize].wrapping_add(inc as u32);
                }
                Ok(Flow::Next)
            }
            0xC1 => {
                let name_bytes = &raw[12..48];
                let end = name_bytes
                    .iter()
                    .position(|&c| c == 0)
                    .unwrap_or(name_bytes.len());
                let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
                self.trigger(site, e, &name, b.u32_at(48), sync)?;
                Ok(Flow::Next)
            }
            op => Err(self.not_simulated(e, pc, format!("opcode 0x{op:02x}"))),
        }
    }

    fn direct2d(&self, site: Site, b: &Bundle) -> Result<DmaDesc, Fault> {
        let side = |addr: usize,
                    step: usize,
                    num: usize,
                    esz: usize,
                    tag: u8,
                    what: &str|
         -> Result<DmaSide, Fault> {
            let mode = b.0[addr + 7];
            if mode & 0xFC != 0x10 {
                return Err(Fault::exec(
                    site,
                    format!("dma.{what}: ADDR8 mode 0x{mode:02x} is not simulated"),
                ));
            }
            let var = b.u32_at(addr + 4) & 0x00FF_FFFF;
            let format = Format::from_wire_tag(tag, self.gen).ok_or_else(|| {
                Fault::exec(
                    site,
                    format!("dma.{what}: dtype tag 0x{tag:02x} is not a format"),
                )
            })?;
            let eb = format.container_bytes() as u32;
            let chunk = match b.u16_at(esz) {
                0 => 0x10000,
                n => n as u32,
            };
            if chunk % eb != 0 {
                return Err(Fault::exec(
                    site,
                    format!(
                        "dma.{what}: chunk of {chunk} bytes is not whole {} elements",
                        format.name()
                    ),
                ));
            }
            Ok(DmaSide {
                mem: if var == 0 {
                    DmaMem::OnChip
                } else {
                    DmaMem::Dram(var)
                },
                addr: b.u32_at(addr) as u64,
                format,
                dims: vec![
                    (eb as i64, chunk / eb),
                    (b.i32_at(step) as i64, b.u16_at(num) as u32),
                    (b.i32_at(step + 4) as i64, b.u16_at(num + 2) as u32),
                ],
            })
        };
        Ok(DmaDesc {
            from: side(16, 24, 32, 36, b.0[62], "from")?,
            to: side(40, 48, 56, 60, b.0[63], "to")?,
        })
    }

    fn trigger(
        &mut self,
        site: Site,
        e: Engine,
        queue: &str,
        block: u32,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let kernel = self.kernel;
        let q = kernel.queues[e as usize]
            .iter()
            .find(|q| q.name == queue)
            .ok_or_else(|| {
                Fault::exec(
                    site,
                    format!(
                        "DMA trigger names queue `{queue}`, which the {e} sidecar does not define"
                    ),
                )
            })?;
        let blk = q
            .blocks
            .iter()
            .find(|b| b.id == block as u64)
            .ok_or_else(|| {
                let ids: Vec<String> = q.blocks.iter().map(|b| b.id.to_string()).collect();
                Fault::exec(
                    site,
                    format!(
                        "DMA trigger names block {block} of queue `{queue}`, whose blocks are [{}]",
                        ids.join(", ")
                    ),
                )
            })?;
        for (i, entry) in blk.entries.iter().enumerate() {
            let operand = format!("{queue}[{block}].desc[{i}]");
            let d = entry
                .desc
                .as_ref()
                .map_err(|why| Fault::exec(site, format!("{operand}: {why}")))?;
            self.dma(site, &operand, d)?;
            if let Some(u) = &entry.sem {
                u.apply(sync, &self.regs[e as usize]);
            }
            if let Some(ev) = entry.event {
                sync.set_event(ev, true);
            }
        }
        if let Some(s) = q.semaphore {
            sync.sems[s as usize] = sync.sems[s as usize].wrapping_add(1);
        }
        Ok(())
    }
}

impl Program for Machine<'_> {
    fn stream_len(&self, e: Engine) -> usize {
        self.kernel.streams[e as usize].len()
    }

    fn opcode(&self, e: Engine, pc: usize) -> u8 {
        self.bundle(e, pc).opcode()
    }

    fn events(&mut self, e: Engine, pc: usize) -> Result<Events, Fault> {
        let b = self.bundle(e, pc);
        Events::from_bundle(&b.0, b.opcode() == 0xA0).map_err(|err| Fault::InvalidBundle {
            site: self.site(e, pc),
            reason: err.to_string(),
        })
    }

    fn regs(&self, e: Engine) -> &[u32] {
        &self.regs[e as usize]
    }

    fn execute(&mut self, e: Engine, pc: usize, sync: &mut SyncState) -> Result<Flow, Fault> {
        self.execute_bundle(e, pc, sync)
    }
}
