//! The L1 verifier: structural checks over BIR, in the manner of the compiler's `birverifier`.
//!
//! The compiler's per-op drivers (`visitInst<Op>`) compose five shared helpers with op data,
//! then call op-specific checks. Here the op data is the driver table ([`table`]); each shared
//! helper and each op-specific check is one [`Rule`] registered in the
//! [`Registry`](crate::registry::Registry). Every diagnostic is `Layer::L1`, carries the
//! compiler function's name as its rule and the assertion code where the facts give one, and
//! is located at function / block / instruction (with the instruction's engine where it has a
//! wire engine). `docs/l1.md` lists every rule.

/// The descriptive methods of a [`Rule`] impl.
macro_rules! rule_meta {
    (name: $name:literal, property: $prop:ident, codes: $codes:expr, summary: $summary:literal, source: $source:literal $(, project: $project:literal)? $(, scope: $scope:ident)? $(,)?) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn property(&self) -> $crate::registry::Property {
            $crate::registry::Property::$prop
        }
        fn codes(&self) -> &'static [u32] {
            &$codes
        }
        fn summary(&self) -> &'static str {
            $summary
        }
        fn source(&self) -> &'static str {
            $source
        }
        $(fn project_defined(&self) -> &'static str {
            $project
        })?
        $(fn scope(&self) -> $crate::registry::Scope {
            $crate::registry::Scope::$scope
        })?
    };
}

#[cfg(test)]
mod boundaries;
pub mod collective;
pub mod drift;
pub mod enum_arch;
pub mod helpers;
pub mod kernel;
pub mod module_scope;
pub mod mx;
pub mod name_only;
pub mod sb2sb;
pub mod table;
pub mod write_in_place;

use std::borrow::Cow;

use crate::bir::InstRef;
use crate::diag::{Diagnostic, Layer, Severity};
use crate::registry::Rule;
use table::Src;

/// Every L1 rule, in registration (driver) order.
pub fn rules() -> Vec<Box<dyn Rule>> {
    vec![
        Box::new(module_scope::Fp8TypeConsistency),
        Box::new(module_scope::InstCount),
        Box::new(module_scope::SbIo),
        Box::new(name_only::InstructionCommon),
        Box::new(name_only::TensorIndirectIo),
        Box::new(helpers::MemType),
        Box::new(helpers::ArchLevelRule),
        Box::new(helpers::ValidEngines),
        Box::new(helpers::PartitionAccess),
        Box::new(helpers::DataType),
        Box::new(enum_arch::ArchLevelForEnum),
        Box::new(name_only::SelectCheck),
        Box::new(name_only::IotaCheck),
        Box::new(name_only::MemsetMode),
        Box::new(name_only::LoopVerifiers),
        Box::new(mx::Inputs),
        Box::new(mx::InstructionRule),
        Box::new(collective::CollectiveIo),
        Box::new(collective::CollectiveCompute),
        Box::new(collective::InDynamicCfg),
        Box::new(kernel::BirKernel),
        Box::new(kernel::NkiKernelFunction),
        Box::new(kernel::NkiKernelBufferShapes),
        Box::new(name_only::NkiAddressRotation),
        Box::new(kernel::CustomOp),
        Box::new(sb2sb::GpsimdSb2Sb),
        Box::new(write_in_place::WriteInPlace),
    ]
}

/// An L1 error at an instruction.
pub(crate) fn error_at(
    r: &InstRef<'_>,
    rule: impl Into<Cow<'static, str>>,
    code: Option<u32>,
    message: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(Layer::L1, rule, code, message).at(r.location())
}

/// An L1 "not checked" finding at an instruction.
pub(crate) fn not_checked_at(
    r: &InstRef<'_>,
    rule: impl Into<Cow<'static, str>>,
    message: impl Into<String>,
) -> Diagnostic {
    error_at(r, rule, None, message).with_severity(Severity::NotChecked)
}

/// The suffix naming project-defined data behind a finding (empty for seed data).
pub(crate) fn provenance(src: Src) -> String {
    match src {
        Src::Seed(_) => String::new(),
        Src::Project(why) => format!(" [project-defined: {why}]"),
    }
}

/// `args[i]` / `outs[i]`.
pub(crate) fn operand(dir: Dir, i: usize) -> String {
    match dir {
        Dir::Arg => format!("args[{i}]"),
        Dir::Out => format!("outs[{i}]"),
    }
}

/// Operand direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// An input.
    Arg,
    /// An output.
    Out,
}

/// Every operand of an instruction with its direction and index.
pub(crate) fn operands(
    inst: &crate::bir::Instruction,
) -> impl Iterator<Item = (Dir, usize, &crate::bir::AccessPattern)> {
    inst.args
        .iter()
        .enumerate()
        .map(|(i, a)| (Dir::Arg, i, a))
        .chain(inst.outs.iter().enumerate().map(|(i, a)| (Dir::Out, i, a)))
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Module builders for the rule tests.

    use crate::bir::{
        AccessPattern, ArchLevel, Block, EngineType, Function, InstClass, Instruction, MemoryType,
        Module,
    };
    use crate::diag::{Diagnostic, Mode};
    use crate::registry::{Property, PropertySet, Registry};
    use tpbsim_isa::NumFormat;

    /// A one-function, one-block module.
    pub fn module(arch: ArchLevel, insts: Vec<Instruction>) -> Module {
        Module {
            name: None,
            arch,
            functions: vec![Function {
                name: "main".into(),
                attrs: Default::default(),
                blocks: vec![Block {
                    name: "bb0".into(),
                    dynamic_cfg: false,
                    instructions: insts,
                }],
            }],
        }
    }

    /// An SB pattern.
    pub fn sb(buf: &str, dtype: NumFormat, start: u64, parts: u64, elems: u64) -> AccessPattern {
        AccessPattern::contiguous(MemoryType::Sb, buf, dtype, start, parts, elems)
    }

    /// A PSUM pattern.
    pub fn psum(buf: &str, dtype: NumFormat, parts: u64, elems: u64) -> AccessPattern {
        AccessPattern::contiguous(MemoryType::Psum, buf, dtype, 0, parts, elems)
    }

    /// A DVE TensorTensor `out = a + b` on SB buffers.
    pub fn tensor_tensor(a: &str, b: &str, out: &str) -> Instruction {
        Instruction::new(InstClass::TensorTensor, EngineType::Dve)
            .with_args(vec![
                sb(a, NumFormat::Bfloat16, 0, 128, 64),
                sb(b, NumFormat::Bfloat16, 0, 128, 64),
            ])
            .with_outs(vec![sb(out, NumFormat::Bfloat16, 0, 128, 64)])
    }

    /// Diagnostics of one property.
    pub fn run(p: Property, m: &Module) -> Vec<Diagnostic> {
        Registry::l1().verify(PropertySet::empty().with(p), m, Mode::CollectAll)
    }

    /// Codes of the error diagnostics.
    pub fn error_codes(d: &[Diagnostic]) -> Vec<Option<u32>> {
        d.iter().filter(|d| d.is_error()).map(|d| d.code).collect()
    }

    /// Rule names of the error diagnostics.
    pub fn error_rules(d: &[Diagnostic]) -> Vec<String> {
        d.iter()
            .filter(|d| d.is_error())
            .map(|d| d.rule.to_string())
            .collect()
    }
}
