//! Setting a machine up: its memories and variables, the limits, the world it joins, its
//! validator and stop flag.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::{Engine, Gen};

use super::{zeroed, Machine, SetupError, DEFAULT_MAX_STEPS};
use crate::machine::budget::{Budget, Limits};
use crate::machine::collective::{Meeting, Member};
use crate::machine::control::NUM_REGS;
use crate::machine::geometry::Geometry;
use crate::machine::kernel::{Kernel, VarSpec};
use crate::machine::memory::{Dram, DramVar, OnChip, VarBytes};
use crate::machine::ops::EngineState;
use crate::machine::sync::SyncState;

/// The bytes of a variable a core owns: its shipped data or zeros, charged to `budget` first.
fn private_bytes(budget: &mut Budget, v: &VarSpec) -> Result<Vec<u8>, SetupError> {
    budget
        .charge_memory(|| format!("variable `{}`", v.name), v.size)
        .map_err(SetupError::Budget)?;
    match &v.init {
        Some(d) if d.len() as u64 != v.size => Err(SetupError::Size {
            name: v.name.clone(),
            got: d.len() as u64,
            want: v.size,
        }),
        Some(d) => Ok(d.clone()),
        None => zeroed(v.size).ok_or_else(|| {
            SetupError::Memory(format!(
                "variable `{}`: cannot allocate {} bytes",
                v.name, v.size
            ))
        }),
    }
}

/// Per engine, the positions of its collective bundles (TRIGGER_COLLECTIVE, SEND_RECV).
fn collective_sites(kernel: &Kernel) -> [Vec<usize>; Engine::COUNT] {
    use tpbsim_isa::opcode_byte::{PSEUDO_SEND_RECV, PSEUDO_TRIGGER_COLLECTIVE};
    std::array::from_fn(|e| {
        kernel.streams[e]
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b.opcode(), PSEUDO_TRIGGER_COLLECTIVE | PSEUDO_SEND_RECV))
            .map(|(i, _)| i)
            .collect()
    })
}

impl<'k> Machine<'k> {
    /// A machine for `kernel` on `gen`, DRAM variables holding their initial data (or zeros),
    /// with the default [`Limits`].
    pub fn new(kernel: &'k Kernel, gen: Gen) -> Result<Machine<'k>, SetupError> {
        Machine::with_limits(kernel, gen, Limits::default())
    }

    /// [`Machine::new`] under `limits`: the on-chip memories and every variable are charged
    /// to the memory budget before they are allocated.
    pub fn with_limits(
        kernel: &'k Kernel,
        gen: Gen,
        limits: Limits,
    ) -> Result<Machine<'k>, SetupError> {
        Machine::with_budget(kernel, gen, Budget::new(limits), &|_| None)
    }

    /// A machine charging `budget`; the variables for which `shared` gives bytes take them
    /// (shared with other cores, charged by the caller), the others are allocated here.
    pub(crate) fn with_budget(
        kernel: &'k Kernel,
        gen: Gen,
        mut budget: Budget,
        shared: &dyn Fn(&VarSpec) -> Option<VarBytes>,
    ) -> Result<Machine<'k>, SetupError> {
        let geom = Geometry::of(gen);
        let chip_bytes = crate::machine::geometry::PARTITIONS as u64
            * (u64::from(geom.sbuf_bytes_per_partition)
                + u64::from(crate::machine::geometry::PSUM_BYTES_PER_PARTITION));
        budget
            .charge_memory(|| "SBUF and PSUM".into(), chip_bytes)
            .map_err(SetupError::Budget)?;
        let mut dram = Dram::default();
        for v in &kernel.vars {
            let bytes = match shared(v) {
                Some(b) => b,
                None => private_bytes(&mut budget, v)?.into(),
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
            chip: OnChip::new(geom).map_err(|e| SetupError::Memory(e.to_string()))?,
            dram,
            sync: SyncState::default(),
            regs: [[0; NUM_REGS]; Engine::COUNT],
            engines: EngineState::default(),
            validator: None,
            slots: std::array::from_fn(|i| vec![0; kernel.streams[i].len()]),
            entries: Vec::new(),
            seen: Vec::new(),
            dma_bytes: 0,
            dma_transfers: 0,
            buf: Vec::new(),
            bufs: Vec::new(),
            plans: Vec::new(),
            race: None,
            dma_agent: 0,
            budget,
            max_steps: DEFAULT_MAX_STEPS,
            bundles: 0,
            work: std::cell::Cell::new(0),
            timeline_charged: 0,
            records_charged: 0,
            shadow_charged: 0,
            logged_charged: 0,
            comm: None,
            pending: Vec::new(),
            defer_complete: false,
            collective_sites: collective_sites(kernel),
            deliveries: None,
            stop: None,
        })
    }

    /// Stop the run once `stop` is set: the scheduler checks it before each bundle and the
    /// run faults with [`Fault::Interrupted`]; a core of a world stops the world's meeting
    /// point too, so that no member waits at a collective for it.
    pub fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// Make this core member `me` of world `w` (a run of several ranks): its collectives meet
    /// the other members' there. With the race check on, the run records what the world
    /// delivers and the check's replay takes it from that record ([`Deliveries`]).
    pub fn join_world(&mut self, w: Arc<dyn Meeting>, me: Member) -> Result<(), SetupError> {
        self.comm = Some((w, me));
        Ok(())
    }

    /// Check every bundle with `v` the first time it executes; a rejected bundle faults
    /// ([`Fault::InvalidBundle`]) before it runs.
    pub fn set_validator(&mut self, v: Arc<dyn BundleCheck>) {
        self.validator = Some(v);
        // What was validated before was validated by another validator (or none).
        self.seen.clear();
        self.entries.clear();
        for s in self.slots.iter_mut().flatten() {
            *s = 0;
        }
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
        var.bytes.make_mut().0.copy_from_slice(data);
        Ok(())
    }

    /// Contents of variable `name`.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.dram
            .id_of(name)
            .and_then(|id| self.dram.get(id))
            .map(|v| &v.bytes[..])
    }
}
