//! What a NEFF runs: one [`Kernel`] per NeuronCore and the DRAM variables the cores share.
//!
//! A NEFF with several subgraphs (`lnc_size` 2, `neff_feature_vnc`) loads each subgraph onto
//! its own physical NeuronCore ([NEFF-doc]: "each subgraph declared in the NEFF will be loaded
//! onto its own TPB"). Each core has its own SBUF, PSUM, semaphores, events, registers, engine
//! queues and scratchpad; the runtime binds the user's tensors to the input and output
//! variables **by name** (R `exec/submit-path.md`), so an input or output variable of the same
//! name in two subgraphs is one tensor. Every other DRAM variable (constants shipped in the
//! NEFF, scratch, virtual variables) belongs to its core.

use std::collections::BTreeMap;

use tpbsim_isa::Gen;

use super::kernel::{Kernel, VarSpec};
use super::memory::VarKind;

/// A NEFF's program: a kernel per core, in subgraph order.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// Target generation.
    pub gen: Option<Gen>,
    /// One kernel per core (subgraph), in the kelf's order.
    pub cores: Vec<Kernel>,
    /// The subgraph name of each core (`sg00`, ...), for messages.
    pub names: Vec<String>,
}

/// Why the cores of a program do not agree on a variable they share.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("variable `{name}`: {core_a} declares {a}, {core_b} declares {b}; variables bound by name must agree")]
pub struct BindingError {
    /// The variable.
    pub name: String,
    /// The first core's subgraph.
    pub core_a: String,
    /// Its declaration.
    pub a: String,
    /// The other core's subgraph.
    pub core_b: String,
    /// Its declaration.
    pub b: String,
}

/// Whether a variable of this kind is one tensor for all cores (bound by name).
pub fn is_bound_by_name(kind: VarKind) -> bool {
    matches!(kind, VarKind::Input | VarKind::Output)
}

fn describe(v: &VarSpec) -> String {
    format!(
        "{:?} {} {:?} ({} bytes{})",
        v.kind,
        v.format.name(),
        v.shape,
        v.size,
        if v.init.is_some() { ", with data" } else { "" }
    )
}

impl Program {
    /// The program of one kernel on one core.
    pub fn single(kernel: Kernel) -> Program {
        Program {
            gen: kernel.gen,
            cores: vec![kernel],
            names: vec!["sg00".into()],
        }
    }

    /// A program of several cores; the variables the cores share by name must agree in kind,
    /// format, shape, size and shipped data.
    pub fn new(
        gen: Option<Gen>,
        cores: Vec<Kernel>,
        names: Vec<String>,
    ) -> Result<Program, BindingError> {
        let p = Program { gen, cores, names };
        let mut seen: BTreeMap<&str, (usize, &VarSpec)> = BTreeMap::new();
        for (c, k) in p.cores.iter().enumerate() {
            for v in k.vars.iter().filter(|v| is_bound_by_name(v.kind)) {
                match seen.get(v.name.as_str()) {
                    None => {
                        seen.insert(&v.name, (c, v));
                    }
                    Some(&(c0, v0)) => {
                        let same = v0.kind == v.kind
                            && v0.format == v.format
                            && v0.shape == v.shape
                            && v0.size == v.size
                            && v0.init == v.init;
                        if !same {
                            return Err(BindingError {
                                name: v.name.clone(),
                                core_a: p.core_name(c0).to_string(),
                                a: describe(v0),
                                core_b: p.core_name(c).to_string(),
                                b: describe(v),
                            });
                        }
                    }
                }
            }
        }
        Ok(p)
    }

    /// The ranks the program's collectives span (the largest world any core states: replica
    /// groups, `src_target_pairs`, `#rank_world_size`; at least 1).
    pub fn world(&self) -> usize {
        self.cores.iter().map(|k| k.world).max().unwrap_or(1).max(1)
    }

    /// The subgraph name of core `c`.
    pub fn core_name(&self, c: usize) -> &str {
        self.names.get(c).map_or("?", String::as_str)
    }

    /// The variables the user sees: every input and output once (by name, in the order the
    /// cores first declare them), then nothing else.
    pub fn io_vars(&self) -> Vec<&VarSpec> {
        let mut out: Vec<&VarSpec> = Vec::new();
        for k in &self.cores {
            for v in k.vars.iter().filter(|v| is_bound_by_name(v.kind)) {
                if !out.iter().any(|o| o.name == v.name) {
                    out.push(v);
                }
            }
        }
        out
    }

    /// A variable by name: a shared (input or output) one, else the first core's.
    pub fn var(&self, name: &str) -> Option<&VarSpec> {
        self.io_vars()
            .into_iter()
            .find(|v| v.name == name)
            .or_else(|| self.cores.iter().find_map(|k| k.var(name)))
    }

    /// Output variables, once each.
    pub fn outputs(&self) -> Vec<&VarSpec> {
        self.io_vars()
            .into_iter()
            .filter(|v| v.kind == VarKind::Output)
            .collect()
    }

    /// Input variables, once each.
    pub fn inputs(&self) -> Vec<&VarSpec> {
        self.io_vars()
            .into_iter()
            .filter(|v| v.kind == VarKind::Input)
            .collect()
    }
}
