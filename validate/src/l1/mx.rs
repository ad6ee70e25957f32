//! The MX-matmul contract (seed 000): `checkMatmultMxInputs` (11 asserts) and
//! `checkMatmultMxInstruction` (7 asserts), 18 in all, each with its assertion code.
//!
//! Operands are positional: `args[0]` ifmap data, `args[1]` weights data (x4-packed FP4/FP8),
//! `args[2]` ifmap scales, `args[3]` weights scales (E8M0), `outs[0]` the PSUM result. Every
//! per-partition element count is the unpacked one: ×4 for the x4 containers {2, 8, 9}.

use crate::bir::{ArchLevel, EngineType, InstClass, InstRef, Instruction, Module};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::error_at;

/// One violated MX assert: code and the predicate with the values found.
pub type MxViolation = (u32, String);

/// `max_ifmap_elements = 32 × psumBankBytes / dtypeBytes(out)`: 32 K per OCP block times the
/// output elements one PSUM bank holds per partition.
pub fn max_ifmap_elements(arch: ArchLevel, out_dtype_bytes: u64) -> u64 {
    32 * (u64::from(arch.psum_geometry().bank_bytes) / out_dtype_bytes.max(1))
}

/// The MX operands are present (4 inputs, 1 output).
fn has_operands(i: &Instruction) -> bool {
    i.args.len() >= 4 && !i.outs.is_empty()
}

/// `checkMatmultMxInputs`: the 11 shape / numeric asserts, in source-line order.
pub fn check_inputs(i: &Instruction, arch: ArchLevel) -> Vec<MxViolation> {
    let mut v = Vec::new();
    if !has_operands(i) {
        return v;
    }
    let (a0, a1, a2, a3, o0) = (&i.args[0], &i.args[1], &i.args[2], &i.args[3], &i.outs[0]);
    let if_k = a0.unpacked_elements_per_partition();
    let wt_k = a1.unpacked_elements_per_partition();
    let if_sc = a2.unpacked_elements_per_partition();
    let wt_sc = a3.unpacked_elements_per_partition();
    let out_e = o0.unpacked_elements_per_partition();
    let (if_sp, wt_sp) = (a2.start_partition, a3.start_partition);
    let (if_p, wt_p, out_p) = (a0.partitions, a1.partitions, o0.partitions);
    let max_if = max_ifmap_elements(arch, o0.dtype.container_bytes() as u64);
    let x4 = |n: u64| n.saturating_mul(4);

    if if_k != x4(if_sc) {
        v.push((228, format!("ifMapNumElementsPerPartition == 4 * ifMapScalesNumElementsPerPartition: {if_k} vs 4 × {if_sc}")));
    }
    if wt_k != x4(wt_sc) {
        v.push((229, format!("weightsNumElementsPerPartition == 4 * weightsScalesNumElementsPerPartition: {wt_k} vs 4 × {wt_sc}")));
    }
    if if_sp % 32 >= 16 {
        v.push((
            230,
            format!("ifmapScalesStartPartition % 32 < 16: start partition {if_sp}"),
        ));
    }
    if wt_sp % 32 >= 16 {
        v.push((
            231,
            format!("weightsScalesStartPartition % 32 < 16: start partition {wt_sp}"),
        ));
    }
    if if_k > max_if {
        v.push((
            232,
            format!(
                "ifMapNumElementsPerPartition <= max_ifmap_elements: {if_k} > {max_if} (32 × {} B PSUM bank / {} B {})",
                arch.psum_geometry().bank_bytes,
                o0.dtype.container_bytes(),
                o0.dtype
            ),
        ));
    }
    if wt_k > 128 * 4 {
        v.push((
            233,
            format!("weightsNumElementsPerPartition <= 128 * 4: {wt_k}"),
        ));
    }
    if (wt_k / 4) % 2 != 0 {
        v.push((
            289,
            format!(
                "(weightsNumElementsPerPartition / 4) % 2 == 0: {wt_k} / 4 = {} is odd",
                wt_k / 4
            ),
        ));
    }
    if !matches!(if_p, 32 | 64 | 128) {
        v.push((
            234,
            format!("ifmapNumPartitionsAccessed ∈ {{32, 64, 128}}: {if_p}"),
        ));
    }
    if if_p != wt_p {
        v.push((
            235,
            format!("ifmapNumPartitionsAccessed == weightsNumPartitionsAccessed: {if_p} vs {wt_p}"),
        ));
    }
    if x4(out_p) != wt_k {
        v.push((236, format!("outputNumPartitionsAccessed * 4 == weightsNumElementsPerPartition: 4 × {out_p} vs {wt_k}")));
    }
    if x4(out_e) != if_k {
        v.push((237, format!("outputNumElementsPerPartition * 4 == ifMapNumElementsPerPartition: 4 × {out_e} vs {if_k}")));
    }
    v
}

/// `checkMatmultMxInstruction`: the 7 instruction asserts, in the order the compiler
/// evaluates them (engine, quadrants, alignment, then per tile the column check before the
/// row check, then the replication shift).
pub fn check_instruction(i: &Instruction) -> Vec<MxViolation> {
    let mut v = Vec::new();
    if i.engine != EngineType::Pe {
        v.push((
            205,
            format!(
                "I.getEngine() == bir::EngineType::PE: engine is {}",
                i.engine
            ),
        ));
    }
    if has_operands(i) {
        let (a0, a1, a2, a3) = (&i.args[0], &i.args[1], &i.args[2], &i.args[3]);
        if a0.start_quadrant() != a2.start_quadrant() {
            v.push((
                212,
                format!(
                    "ifmapStartQuadrant == ifmapScalesStartQuadrant: quadrant {} (partition {}) vs {} (partition {})",
                    a0.start_quadrant(),
                    a0.start_partition,
                    a2.start_quadrant(),
                    a2.start_partition
                ),
            ));
        }
        if a1.start_quadrant() != a3.start_quadrant() {
            v.push((
                213,
                format!(
                    "weightsStartQuadrant == weightsScalesStartQuadrant: quadrant {} (partition {}) vs {} (partition {})",
                    a1.start_quadrant(),
                    a1.start_partition,
                    a3.start_quadrant(),
                    a3.start_partition
                ),
            ));
        }
        if a2.start_partition % 4 != 0 || a3.start_partition % 4 != 0 {
            v.push((
                214,
                format!(
                    "(ifmapScalesStartPartition % 4 == 0) && (weightsScalesStartPartition % 4 == 0): {} and {}",
                    a2.start_partition, a3.start_partition
                ),
            ));
        }
        if let Some(t) = i.matmult_mx().and_then(|f| f.tiles.as_ref()) {
            let n_parts = a0.partitions;
            let col_bad = (0..t.len()).find(|&k| {
                !((t.col_pos[k] == -1 || t.col_pos[k] == 0)
                    && (t.col_size[k] == -1 || t.col_size[k] == 128))
            });
            let row_bad = (0..t.len()).find(|&k| {
                !(t.row_size[k] == -1 || u64::try_from(t.row_size[k]).ok() == Some(n_parts))
            });
            if let Some(k) = col_bad {
                v.push((
                    241,
                    format!(
                        "(col_tile_pos[i] == -1 || col_tile_pos[i] == 0) && (col_tile_size[i] == -1 || col_tile_size[i] == 128): tile {k} has position {} size {}",
                        t.col_pos[k], t.col_size[k]
                    ),
                ));
            }
            if let Some(k) = row_bad {
                v.push((
                    240,
                    format!(
                        "row_tile_size[i] == -1 || row_tile_size[i] == numPartitionsAccessed: tile {k} has size {} for {n_parts} partitions",
                        t.row_size[k]
                    ),
                ));
            }
        }
    }
    let shift = i.matmult_mx().map_or(0, |f| f.replication_shift);
    if shift != 0 {
        v.push((
            204,
            format!("I.getReplicationShiftAmnt() == 0: shift {shift}"),
        ));
    }
    v
}

/// `checkMatmultMxInputs`, codes 228–237 and 289.
pub struct Inputs;

impl Rule for Inputs {
    rule_meta! {
        name: "checkMatmultMxInputs",
        property: MatmultMxInputs,
        codes: [228, 229, 230, 231, 232, 233, 289, 234, 235, 236, 237],
        summary: "MatmultMx data:scale 4:1 ratios, scale placement in the lower half-quadrant, PSUM-bank fit, K <= 512 and even in x4 blocks, partitions 32/64/128 and agreeing, output = ifmap/4 and weights/4",
        source: "seed 000, the MX-matmul 18-assert contract (checkMatmultMxInputs, inst_visitor.cpp:3067-3102)",
        project: "none beyond the PSUM bank size per level (facts §1.2: 1024 B on sunda, 2048 B from gen3)",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if r.inst.class != InstClass::MatmultMx {
            return;
        }
        if !has_operands(r.inst) {
            out.push(error_at(
                r,
                "checkMatmultMxInputs",
                None,
                format!(
                    "MatmultMx takes 4 inputs (ifmap, weights, ifmap scales, weights scales) and a PSUM output; found {} and {}",
                    r.inst.args.len(),
                    r.inst.outs.len()
                ),
            ));
            return;
        }
        for (code, msg) in check_inputs(r.inst, m.arch) {
            out.push(error_at(r, "checkMatmultMxInputs", Some(code), msg));
        }
    }
}

/// `checkMatmultMxInstruction`, codes 204, 205, 212–214, 240, 241.
pub struct InstructionRule;

impl Rule for InstructionRule {
    rule_meta! {
        name: "checkMatmultMxInstruction",
        property: MatmultMxInstruction,
        codes: [205, 212, 213, 214, 241, 240, 204],
        summary: "MatmultMx on PE, data and scales in the same quadrant, scales 4-partition aligned, columns never tiled, row tiles cover the partitions, no replication shift",
        source: "seed 000, the MX-matmul 18-assert contract (checkMatmultMxInstruction, inst_visitor.cpp:2994-3037)",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if r.inst.class == InstClass::MatmultMx {
            for (code, msg) in check_instruction(r.inst) {
                out.push(error_at(r, "checkMatmultMxInstruction", Some(code), msg));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{AccessPattern, MatmultMxFields, MemoryType, MxTiles};
    use crate::l1::testutil::*;
    use tpbsim_isa::NumFormat;

    /// The legal MatmultMx of the fixtures: K = 128, scales 4:1, output 32 × 32.
    fn mx() -> Instruction {
        Instruction::new(InstClass::MatmultMx, EngineType::Pe)
            .with_args(vec![
                sb("ifmap", NumFormat::Float8E4m3fnX4, 0, 128, 32),
                sb("weights", NumFormat::Float8E4m3fnX4, 0, 128, 32),
                sb("ifmap_scales", NumFormat::Uint8, 0, 16, 32),
                sb("weights_scales", NumFormat::Uint8, 0, 16, 32),
            ])
            .with_outs(vec![psum("out", NumFormat::Float32, 32, 32)])
    }

    fn set_elems(ap: &mut AccessPattern, n: u64) {
        ap.pattern[0].num = n;
    }

    fn codes_inputs(i: &Instruction) -> Vec<u32> {
        check_inputs(i, ArchLevel::CoreV4)
            .into_iter()
            .map(|x| x.0)
            .collect()
    }

    fn codes_instr(i: &Instruction) -> Vec<u32> {
        check_instruction(i).into_iter().map(|x| x.0).collect()
    }

    #[test]
    fn legal_vector_passes_every_rule() {
        assert!(codes_inputs(&mx()).is_empty());
        assert!(codes_instr(&mx()).is_empty());
        let d = crate::registry::Registry::l1().verify(
            crate::registry::PropertySet::all(),
            &module(ArchLevel::CoreV4, vec![mx()]),
            crate::diag::Mode::CollectAll,
        );
        assert!(error_codes(&d).is_empty(), "{d:?}");
    }

    #[test]
    fn max_ifmap_elements_per_level() {
        assert_eq!(max_ifmap_elements(ArchLevel::CoreV4, 4), 16384);
        assert_eq!(max_ifmap_elements(ArchLevel::CoreV4, 2), 32768);
        assert_eq!(max_ifmap_elements(ArchLevel::Sunda, 4), 8192);
    }

    /// One assert broken at a time: exactly its code.
    #[test]
    fn each_input_assert_alone() {
        let mut cases: Vec<(u32, Instruction)> = Vec::new();
        let mut i = mx();
        set_elems(&mut i.args[2], 31);
        cases.push((228, i));
        let mut i = mx();
        set_elems(&mut i.args[3], 31);
        cases.push((229, i));
        let mut i = mx();
        i.args[2].start_partition = 16;
        cases.push((230, i));
        let mut i = mx();
        i.args[3].start_partition = 20;
        cases.push((231, i));
        // K beyond the bank: 4097 containers = 16388 > 32 × 2048 / 4; scales and output follow.
        let mut i = mx();
        set_elems(&mut i.args[0], 4097);
        set_elems(&mut i.args[2], 4097);
        set_elems(&mut i.outs[0], 4097);
        cases.push((232, i));
        // Odd number of x4 blocks: K = 132.
        let mut i = mx();
        set_elems(&mut i.args[1], 33);
        set_elems(&mut i.args[3], 33);
        i.outs[0].partitions = 33;
        cases.push((289, i));
        let mut i = mx();
        i.args[0].partitions = 48;
        i.args[1].partitions = 48;
        cases.push((234, i));
        let mut i = mx();
        i.args[1].partitions = 64;
        cases.push((235, i));
        let mut i = mx();
        i.outs[0].partitions = 31;
        cases.push((236, i));
        let mut i = mx();
        set_elems(&mut i.outs[0], 31);
        cases.push((237, i));
        for (code, inst) in cases {
            assert_eq!(codes_inputs(&inst), vec![code], "assert {code}");
            assert!(codes_instr(&inst).is_empty(), "assert {code}");
        }
    }

    #[test]
    fn k_bound_233_is_coupled_to_236() {
        // K = 520 (130 containers): the output must then span 130 partitions for #10 to hold.
        let mut i = mx();
        set_elems(&mut i.args[1], 130);
        set_elems(&mut i.args[3], 130);
        i.outs[0].partitions = 130;
        assert_eq!(codes_inputs(&i), vec![233]);
    }

    #[test]
    fn each_instruction_assert_alone() {
        let mut cases: Vec<(u32, Instruction)> = Vec::new();
        let mut i = mx();
        i.engine = EngineType::Unassigned;
        cases.push((205, i));
        let mut i = mx();
        i.args[2].start_partition = 32;
        cases.push((212, i));
        let mut i = mx();
        i.args[3].start_partition = 64;
        cases.push((213, i));
        let mut i = mx();
        i.args[2].start_partition = 2;
        cases.push((214, i));
        let tiles = |col_pos, col_size, row_size| MxTiles {
            row_pos: vec![0],
            col_pos: vec![col_pos],
            row_size: vec![row_size],
            col_size: vec![col_size],
        };
        let mut i = mx();
        i.fields = crate::bir::ClassFields::MatmultMx(MatmultMxFields {
            replication_shift: 0,
            tiles: Some(tiles(0, 64, 128)),
        });
        cases.push((241, i));
        let mut i = mx();
        i.fields = crate::bir::ClassFields::MatmultMx(MatmultMxFields {
            replication_shift: 0,
            tiles: Some(tiles(-1, -1, 64)),
        });
        cases.push((240, i));
        let mut i = mx();
        i.fields = crate::bir::ClassFields::MatmultMx(MatmultMxFields {
            replication_shift: 1,
            tiles: None,
        });
        cases.push((204, i));
        for (code, inst) in cases {
            assert_eq!(codes_instr(&inst), vec![code], "assert {code}");
            assert!(codes_inputs(&inst).is_empty(), "assert {code}");
        }
        // Legal tiles: full column, row tile = partitions, or untiled.
        let mut i = mx();
        i.fields = crate::bir::ClassFields::MatmultMx(MatmultMxFields {
            replication_shift: 0,
            tiles: Some(tiles(0, 128, 128)),
        });
        assert!(codes_instr(&i).is_empty());
    }

    #[test]
    fn x4_unpack_counts_containers_times_four() {
        // The same K expressed in plain fp8 (no x4) is 4 times smaller: ratios break.
        let mut i = mx();
        i.args[0].dtype = NumFormat::Float8E4m3fn;
        assert_eq!(codes_inputs(&i), vec![228, 237]);
    }

    #[test]
    fn missing_operands_reported_once() {
        let mut i = mx();
        i.args.truncate(3);
        i.outs[0].mem = MemoryType::Psum;
        let m = module(ArchLevel::CoreV4, vec![i]);
        let d = run(crate::registry::Property::MatmultMxInputs, &m);
        assert_eq!(error_codes(&d), vec![None]);
        assert!(run(crate::registry::Property::MatmultMxInstruction, &m).is_empty());
    }
}
