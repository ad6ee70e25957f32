//! Packing a kernel into a NEFF: the inverse of [`super::load`], used by the kernel builders
//! and by tests. Members: `neff.json` (target architecture), `sg00/def.json`, one `.bin`
//! stream and one `.json` sidecar per engine, and one `.npy` member per variable with data.

use std::collections::BTreeMap;

use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{
    self as neff, DefJson, DmaBlock, DmaEntry, DmaQueue, EngineFiles, Neff, Sidecar, VarKind,
    VarRef, Variable,
};

use super::load::dtype_of;
use tpbsim_isa::NumFormat;

/// Subgraph directory the packer writes.
pub const SUBGRAPH: &str = "sg00";

/// A kernel being assembled into a NEFF.
#[derive(Clone, Debug)]
pub struct Package {
    /// Model name (NEFF header).
    pub name: String,
    /// Target generation.
    pub gen: Gen,
    /// Per-engine streams, by wire id.
    pub streams: [Vec<Bundle>; Engine::COUNT],
    /// def.json.
    pub def: DefJson,
    /// Per-engine sidecars, by wire id.
    pub sidecars: [Sidecar; Engine::COUNT],
    /// Extra members relative to the subgraph directory (variable data).
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why a package cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// A format with no def.json dtype.
    #[error("format {0} has no def.json dtype")]
    NumFormat(&'static str),
    /// Data of the wrong size.
    #[error("variable `{name}`: {got} bytes of data for shape {shape:?} of {format}")]
    Size {
        /// Variable.
        name: String,
        /// Bytes given.
        got: usize,
        /// Shape.
        shape: Vec<u64>,
        /// Format name.
        format: &'static str,
    },
    /// The container writer failed.
    #[error(transparent)]
    Neff(#[from] neff::NeffError),
    /// The `.npy` writer failed.
    #[error(transparent)]
    Npy(#[from] neff::NpyError),
}

impl Package {
    /// An empty kernel for `gen`.
    pub fn new(name: impl Into<String>, gen: Gen) -> Package {
        Package {
            name: name.into(),
            gen,
            streams: Default::default(),
            def: DefJson::default(),
            sidecars: Default::default(),
            files: BTreeMap::new(),
        }
    }

    fn next_id(&self) -> u64 {
        self.def
            .var
            .iter()
            .map(|v| v.var_id + 1)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Add a DRAM variable (ids start at 1; 0 is on-chip in the DMA_DIRECT2D var-id form).
    /// With `data`, its contents ship in the NEFF as `<name>.npy` (an input's default data, a
    /// constant). Returns the variable id.
    pub fn var(
        &mut self,
        name: &str,
        kind: VarKind,
        format: NumFormat,
        shape: &[u64],
        data: Option<&[u8]>,
    ) -> Result<u64, PackError> {
        let dtype = dtype_of(format).ok_or(PackError::NumFormat(format.name()))?;
        let elems: u64 = shape.iter().product();
        let size = elems * format.container_bytes() as u64;
        let id = self.next_id();
        let mut v = Variable::new(id, name, kind);
        v.size = Some(size);
        v.dtype = Some(dtype);
        v.shape = Some(shape.to_vec());
        if let Some(d) = data {
            if d.len() as u64 != size {
                return Err(PackError::Size {
                    name: name.into(),
                    got: d.len(),
                    shape: shape.to_vec(),
                    format: format.name(),
                });
            }
            let file = format!("{name}.npy");
            self.files
                .insert(file.clone(), neff::npy::encode_npy(dtype, shape, d)?);
            v.file_name = Some(file);
        }
        self.def.var.push(v);
        Ok(id)
    }

    /// The `state-buffer` variable standing for on-chip memory in sidecar entries (created on
    /// first use; offsets into it are partition-folded SBUF/PSUM addresses).
    pub fn onchip(&mut self) -> VarRef {
        const NAME: &str = "state_buffer";
        if self.def.variable(NAME).is_none() {
            let id = self.next_id();
            self.def
                .var
                .push(Variable::new(id, NAME, VarKind::StateBuffer));
        }
        VarRef::Name(NAME.into())
    }

    /// Declare a DMA queue with an optional completion semaphore.
    pub fn queue(&mut self, name: &str, semaphore: Option<u32>) {
        let mut q = DmaQueue::new(name);
        q.semaphore = semaphore;
        self.def.dma_queue.push(q);
    }

    /// Add a descriptor block to `engine`'s sidecar.
    pub fn block(&mut self, engine: Engine, queue: &str, id: u64, desc: Vec<DmaEntry>) {
        self.sidecars[engine as usize].dma.push(DmaBlock {
            queue: Some(queue.into()),
            instance_name: None,
            id: Some(id),
            desc,
            extra: Default::default(),
        });
    }

    /// The NEFF, in the runtime's layout (kelf, TVM `neff.json`, engine JSONs, lowercase
    /// streams; `tpbsim_neff::to_runtime_layout`).
    pub fn to_neff(&self) -> Result<Neff, PackError> {
        Ok(neff::to_runtime_layout(&self.to_neff_dialect()?)?.neff)
    }

    /// The NEFF in tpbsim's earlier dialect: `neff.json` `target_arch`, `def.json`
    /// `definition.<tok>._instr`, TitleCase `PE.bin` streams and `PE.json` sidecars.
    pub fn to_neff_dialect(&self) -> Result<Neff, PackError> {
        let mut n = Neff::new(&self.name)?;
        let mut def = self.def.clone();
        let at = |f: &str| format!("{SUBGRAPH}/{f}");
        for e in Engine::ALL {
            let s = &self.streams[e as usize];
            if s.is_empty() && self.sidecars[e as usize].dma.is_empty() {
                continue;
            }
            let bin = e.stream_file_name();
            def.definition.insert(
                neff::engine_token(e).into(),
                EngineFiles {
                    instr: Some(bin.into()),
                    extra: Default::default(),
                },
            );
            n.members
                .insert(at(bin), s.iter().flat_map(|b| b.0).collect());
            let sidecar =
                serde_json::to_vec_pretty(&self.sidecars[e as usize]).map_err(json_err)?;
            n.members.insert(at(&bin.replace(".bin", ".json")), sidecar);
        }
        n.members.insert(
            at("def.json"),
            serde_json::to_vec_pretty(&def).map_err(json_err)?,
        );
        for (f, d) in &self.files {
            n.members.insert(at(f), d.clone());
        }
        let manifest = serde_json::json!({ "target_arch": self.gen.codename() });
        n.members.insert(
            "neff.json".into(),
            serde_json::to_vec_pretty(&manifest).map_err(json_err)?,
        );
        Ok(n)
    }
}

/// One collective of a kernel: a PSEUDO_TRIGGER_COLLECTIVE (0xC8) record
/// (`docs/collectives.md`).
#[derive(Clone, Copy, Debug)]
pub struct Collective {
    /// Collective type (1 all-reduce, 2 reduce-scatter, 3 all-gather, 4 all-to-all, 5
    /// permute, ...).
    pub ctype: u8,
    /// Reduction (ALU op).
    pub op: tpbsim_isa::AluOp,
    /// Element type.
    pub format: NumFormat,
    /// Index of the replica group in def.json `replica_groups`.
    pub group: u16,
    /// Var id of the input variable.
    pub input: u64,
    /// Var id of the output variable.
    pub output: u64,
    /// Elements each member posts.
    pub elements: u64,
}

impl Collective {
    /// The bundle on `gen`, with `events` (its semaphore update made when the collective
    /// completes); `None` when a value does not fit its field or the format has no wire tag.
    pub fn to_bundle(&self, gen: Gen, events: tpbsim_isa::Events) -> Option<Bundle> {
        use tpbsim_isa::formats::loc::trigger_collective as c;
        let mut b = tpbsim_isa::Control {
            header: tpbsim_isa::Header::new(tpbsim_isa::Opcode::PSEUDO_TRIGGER_COLLECTIVE),
            events,
            ..Default::default()
        }
        .to_bundle();
        let tag = self.format.wire_tag(gen)?;
        for (field, v) in [
            (c::OP, u64::from(self.op.0)),
            (c::DTYPE, u64::from(tag)),
            (c::GROUP_ID, u64::from(self.group)),
            (c::INPUT_TENSOR_ID, self.input),
            (c::OUTPUT_TENSOR_ID, self.output),
            (c::NUM_ELEMENTS, self.elements),
            (c::CTYPE, u64::from(self.ctype)),
        ] {
            if !field.write_uint(&mut b.0, gen, v) {
                return None;
            }
        }
        Some(b)
    }
}

fn json_err(e: serde_json::Error) -> PackError {
    PackError::Neff(neff::NeffError::Pack {
        what: "a JSON member".into(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::load::kernel_from_neff;
    use crate::machine::VarKind as MVarKind;

    #[test]
    fn pack_then_load_round_trips() {
        let mut p = Package::new("t", Gen::V4);
        let x: Vec<u8> = (0..32u8).collect();
        p.var("x", VarKind::Input, NumFormat::Float32, &[2, 4], Some(&x))
            .unwrap();
        p.var("y", VarKind::Output, NumFormat::Bfloat16, &[2, 4], None)
            .unwrap();
        let sb = p.onchip();
        p.queue("q", Some(3));
        let mut e = DmaEntry::copy(VarRef::Name("x".into()), sb, vec![2, 4]);
        e.to_offset = 0x40000;
        p.block(Engine::Sp, "q", 5, vec![e]);
        let mut nop = Bundle::ZERO;
        nop.0[0] = 0xA4;
        nop.0[1] = 0x10;
        p.streams[Engine::Sp as usize].push(nop);
        let bytes = p.to_neff().unwrap().to_bytes().unwrap();
        let n = Neff::from_bytes(&bytes, &Default::default()).unwrap();
        let k = kernel_from_neff(&n).unwrap();
        assert_eq!(k.gen, Some(Gen::V4));
        assert_eq!(k.streams[Engine::Sp as usize], vec![nop]);
        let xs = k.var("x").unwrap();
        assert_eq!(
            (xs.kind, xs.format, xs.shape.clone(), xs.init.clone()),
            (MVarKind::Input, NumFormat::Float32, vec![2, 4], Some(x))
        );
        assert_eq!(k.var("y").unwrap().format, NumFormat::Bfloat16);
        assert!(
            k.var("state_buffer").is_none(),
            "on-chip memory is not a DRAM variable"
        );
        let q = &k.queues[Engine::Sp as usize][0];
        assert_eq!(
            (q.name.as_str(), q.semaphore, q.blocks[0].id),
            ("q", Some(3), 5)
        );
        let d = q.blocks[0].entries[0].desc.as_ref().unwrap();
        assert_eq!(d.to.mem, crate::machine::dma::DmaMem::OnChip);
        assert_eq!(d.to.addr, 0x40000);
        assert_eq!(d.from.dims, vec![(4, 4), (16, 2)]);
    }
}
