//! Kernel and CustomOp gates (seed 000): `checkBIRKernel`, `checkNKIKernelFunction`,
//! `checkNKIKernelBufferShapes` (1680–1683), `checkCustomOp` (178).

use crate::bir::{
    ArchLevel, InstClass, InstRef, MemoryType, Module, NkiKernelFields, NUM_PARTITIONS,
};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::{error_at, operand, operands};

/// `checkBIRKernel`: on-chip kernel operands sit at base partition 0.
pub struct BirKernel;

impl Rule for BirKernel {
    rule_meta! {
        name: "checkBIRKernel",
        property: BirKernel,
        codes: [],
        summary: "BIRKernel inputs and outputs in SB / PSUM are allocated at base partition 0",
        source: "seed 000, kernel and CustomOp gates (checkBIRKernel)",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if r.inst.class != InstClass::BirKernel {
            return;
        }
        for (dir, i, ap) in operands(r.inst) {
            if matches!(ap.mem, MemoryType::Sb | MemoryType::Psum) && ap.start_partition != 0 {
                out.push(error_at(
                    r,
                    "checkBIRKernel",
                    None,
                    format!(
                        "mem.getBasePartition() == 0: Kernel inputs/outputs must be allocated at base partition 0; {} starts at partition {}",
                        operand(dir, i),
                        ap.start_partition
                    ),
                ));
            }
        }
    }
}

/// `checkNKIKernelFunction`: the kernel names a function of the module.
pub struct NkiKernelFunction;

impl Rule for NkiKernelFunction {
    rule_meta! {
        name: "checkNKIKernelFunction",
        property: NkiKernelFunction,
        codes: [],
        summary: "NKIKernel names the module function holding its body",
        source: "seed 000, kernel and CustomOp gates (checkNKIKernelFunction: I.getFunc() != nullptr)",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let Some(f) = r.inst.nki_kernel() else { return };
        match &f.func {
            None => out.push(error_at(r, "checkNKIKernelFunction", None, "I.getFunc() != nullptr: the kernel names no function")),
            Some(name) if m.function(name).is_none() => out.push(error_at(
                r,
                "checkNKIKernelFunction",
                None,
                format!("I.getFunc() != nullptr: the kernel names function {name:?}, which the module does not define"),
            )),
            Some(_) => {}
        }
    }
}

/// The buffer-shape asserts of one NKI kernel: `(code, predicate with values)`.
pub fn check_buffer_shapes(
    f: &NkiKernelFields,
    num_outputs: usize,
    arch: ArchLevel,
) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    let (p, s) = (f.sb_num_partitions, f.sb_per_partition_size);
    if !((p == 0 && s == 0) || (p > 0 && s > 0)) {
        v.push((
            1680,
            format!("(sb_num_partitions == 0 && sb_per_partition_size == 0) || (sb_num_partitions > 0 && sb_per_partition_size > 0): {p} and {s}"),
        ));
    }
    let banks = arch.psum_geometry().banks;
    if f.psum_bank_count > i64::from(banks) {
        v.push((
            1681,
            format!(
                "psum_bank_count <= ArchModel.device.core.psumbuf.numBanks: {} > {banks} on {arch}",
                f.psum_bank_count
            ),
        ));
    }
    if f.psum_num_partitions > NUM_PARTITIONS as i64 {
        v.push((
            1682,
            format!(
                "psum_num_partitions <= NUM_PARTITIONS: {} > {NUM_PARTITIONS}",
                f.psum_num_partitions
            ),
        ));
    }
    let need = i128::from(f.num_sb_buffers) + i128::from(f.num_psum_buffers);
    if (num_outputs as i128) < need {
        v.push((
            1683,
            format!(
                "I.num_outputs() >= num_sb_buffers + num_psum_buffers: {num_outputs} < {} + {}",
                f.num_sb_buffers, f.num_psum_buffers
            ),
        ));
    }
    v
}

/// `checkNKIKernelBufferShapes`, codes 1680–1683.
pub struct NkiKernelBufferShapes;

impl Rule for NkiKernelBufferShapes {
    rule_meta! {
        name: "checkNKIKernelBufferShapes",
        property: NkiKernelBufferShapes,
        codes: [1680, 1681, 1682, 1683],
        summary: "NKIKernel SBUF shape both zero or both positive, PSUM banks within the level's bank count, PSUM partitions <= 128, an output per declared buffer",
        source: "seed 000, kernel and CustomOp gates (checkNKIKernelBufferShapes, inst_visitor.cpp:5286-5308)",
        project: "none; the PSUM bank count per level comes from the shipped headers (16 on sunda, 8 from gen3; 4 on inferentia from the compiler table)",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if let Some(f) = r.inst.nki_kernel() {
            for (code, msg) in check_buffer_shapes(f, r.inst.outs.len(), m.arch) {
                out.push(error_at(r, "checkNKIKernelBufferShapes", Some(code), msg));
            }
        }
    }
}

/// `checkCustomOp`, code 178: CustomOp exists only on Sunda and Tonga (Inferentia).
pub struct CustomOp;

impl Rule for CustomOp {
    rule_meta! {
        name: "checkCustomOp",
        property: CustomOp,
        codes: [178],
        summary: "CustomOp only on the legacy levels (sunda, inferentia/tonga)",
        source: "seed 000, kernel and CustomOp gates (checkCustomOp)",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if r.inst.class == InstClass::CustomOp
            && !matches!(m.arch, ArchLevel::Sunda | ArchLevel::Inferentia)
        {
            out.push(error_at(
                r,
                "checkCustomOp",
                Some(178),
                format!(
                    "Arch == ArchLevel::Sunda || Arch == ArchLevel::Tonga: module targets {}",
                    m.arch
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{ClassFields, EngineType, Instruction};
    use crate::l1::testutil::*;
    use crate::registry::Property;
    use tpbsim_isa::NumFormat;

    fn nki(f: NkiKernelFields, outs: usize) -> Instruction {
        let mut i = Instruction::new(InstClass::NkiKernel, EngineType::Unassigned).with_outs(
            (0..outs)
                .map(|n| sb(&format!("o{n}"), NumFormat::Float32, 0, 128, 8))
                .collect(),
        );
        i.fields = ClassFields::NkiKernel(f);
        i
    }

    fn good() -> NkiKernelFields {
        NkiKernelFields {
            func: Some("main".into()),
            sb_num_partitions: 128,
            sb_per_partition_size: 1024,
            psum_bank_count: 8,
            psum_num_partitions: 128,
            num_sb_buffers: 1,
            num_psum_buffers: 1,
        }
    }

    fn shape_codes(f: NkiKernelFields, outs: usize, arch: ArchLevel) -> Vec<u32> {
        check_buffer_shapes(&f, outs, arch)
            .into_iter()
            .map(|x| x.0)
            .collect()
    }

    #[test]
    fn buffer_shapes_one_at_a_time() {
        assert!(shape_codes(good(), 2, ArchLevel::CoreV4).is_empty());
        assert!(shape_codes(
            NkiKernelFields {
                sb_num_partitions: 0,
                sb_per_partition_size: 0,
                ..good()
            },
            2,
            ArchLevel::CoreV4
        )
        .is_empty());
        assert_eq!(
            shape_codes(
                NkiKernelFields {
                    sb_num_partitions: 0,
                    ..good()
                },
                2,
                ArchLevel::CoreV4
            ),
            vec![1680]
        );
        assert_eq!(
            shape_codes(
                NkiKernelFields {
                    sb_per_partition_size: -1,
                    ..good()
                },
                2,
                ArchLevel::CoreV4
            ),
            vec![1680]
        );
        assert_eq!(
            shape_codes(
                NkiKernelFields {
                    psum_bank_count: 9,
                    ..good()
                },
                2,
                ArchLevel::CoreV4
            ),
            vec![1681]
        );
        assert!(shape_codes(
            NkiKernelFields {
                psum_bank_count: 16,
                ..good()
            },
            2,
            ArchLevel::Sunda
        )
        .is_empty());
        assert_eq!(
            shape_codes(
                NkiKernelFields {
                    psum_num_partitions: 129,
                    ..good()
                },
                2,
                ArchLevel::CoreV4
            ),
            vec![1682]
        );
        assert_eq!(shape_codes(good(), 1, ArchLevel::CoreV4), vec![1683]);
        let d = run(
            Property::NkiKernelBufferShapes,
            &module(ArchLevel::CoreV4, vec![nki(good(), 1)]),
        );
        assert_eq!(error_codes(&d), vec![Some(1683)]);
    }

    #[test]
    fn kernel_function() {
        assert!(run(
            Property::NkiKernelFunction,
            &module(ArchLevel::CoreV4, vec![nki(good(), 2)])
        )
        .is_empty());
        let d = run(
            Property::NkiKernelFunction,
            &module(
                ArchLevel::CoreV4,
                vec![nki(
                    NkiKernelFields {
                        func: None,
                        ..good()
                    },
                    2,
                )],
            ),
        );
        assert_eq!(error_rules(&d), vec!["checkNKIKernelFunction"]);
        let d = run(
            Property::NkiKernelFunction,
            &module(
                ArchLevel::CoreV4,
                vec![nki(
                    NkiKernelFields {
                        func: Some("nope".into()),
                        ..good()
                    },
                    2,
                )],
            ),
        );
        assert!(d[0].message.contains("\"nope\""), "{}", d[0].message);
    }

    #[test]
    fn bir_kernel_base_partition() {
        let k = Instruction::new(InstClass::BirKernel, EngineType::Unassigned)
            .with_args(vec![sb("a", NumFormat::Float32, 0, 64, 8), dram("d")])
            .with_outs(vec![sb("b", NumFormat::Float32, 0, 64, 8)]);
        assert!(run(
            Property::BirKernel,
            &module(ArchLevel::CoreV4, vec![k.clone()])
        )
        .is_empty());
        let mut bad = k;
        bad.outs[0].start_partition = 64;
        let d = run(Property::BirKernel, &module(ArchLevel::CoreV4, vec![bad]));
        assert_eq!(error_rules(&d), vec!["checkBIRKernel"]);
        assert!(
            d[0].message.contains("outs[0] starts at partition 64"),
            "{}",
            d[0].message
        );
    }

    /// A DRAM pattern (partitions do not apply: its start is not checked).
    fn dram(buf: &str) -> crate::bir::AccessPattern {
        let mut a = sb(buf, NumFormat::Float32, 5, 1, 8);
        a.mem = MemoryType::Dram;
        a
    }

    #[test]
    fn custom_op_legacy_only() {
        let c = Instruction::new(InstClass::CustomOp, EngineType::Pool);
        assert!(run(
            Property::CustomOp,
            &module(ArchLevel::Sunda, vec![c.clone()])
        )
        .is_empty());
        assert!(run(
            Property::CustomOp,
            &module(ArchLevel::Inferentia, vec![c.clone()])
        )
        .is_empty());
        for a in [ArchLevel::Gen3, ArchLevel::CoreV4, ArchLevel::CoreV5] {
            assert_eq!(
                error_codes(&run(Property::CustomOp, &module(a, vec![c.clone()]))),
                vec![Some(178)],
                "{a}"
            );
        }
    }
}
