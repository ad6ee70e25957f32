//! Write-in-place validity (seed 002, `validateWriteInPlace` / `checkWriteInPlaceValidity`):
//! for every (output, input) pair of an instruction, decide whether writing the output over
//! the input is alias-safe, in the rule body's seven steps.

use crate::bir::{
    AccessPattern, ArchLevel, EngineType, InstClass, InstRef, Instruction, MemoryType, Module,
};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::table::{is_replication_capable, l0_map};
use super::{error_at, not_checked_at};

/// Verdict for one (writer, reader) pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InPlace {
    /// Legal; the step that decided.
    Legal(u8),
    /// Illegal; the step and why.
    Illegal(u8, String),
    /// Undecidable here (the exact address test would be too large); the reason.
    NotChecked(String),
}

/// Step 3: the patterns' partition ranges and per-partition byte windows intersect.
pub fn accesses_overlap(w: &AccessPattern, r: &AccessPattern) -> bool {
    if w.is_empty() || r.is_empty() {
        return false;
    }
    let parts = w.start_partition < r.end_partition() && r.start_partition < w.end_partition();
    let (wl, wh) = w.byte_window();
    let (rl, rh) = r.byte_window();
    parts && wl < rh && rl < wh
}

/// Sorted, merged byte intervals of a pattern within one partition.
fn intervals(ap: &AccessPattern) -> Option<Vec<(i128, i128)>> {
    let b = ap.dtype.container_bytes() as i128;
    let mut iv: Vec<(i128, i128)> = ap
        .element_offsets()?
        .into_iter()
        .map(|e| (e * b, e * b + b))
        .collect();
    iv.sort_unstable();
    let mut merged: Vec<(i128, i128)> = Vec::with_capacity(iv.len());
    for (lo, hi) in iv {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    Some(merged)
}

/// Step 7's exact test: some byte of some shared partition is touched by both patterns.
/// `None` when a pattern is too large to enumerate.
pub fn addresses_collide(w: &AccessPattern, r: &AccessPattern) -> Option<bool> {
    if !(w.start_partition < r.end_partition() && r.start_partition < w.end_partition()) {
        return Some(false);
    }
    let (a, b) = (intervals(w)?, intervals(r)?);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].0 < b[j].1 && b[j].0 < a[i].1 {
            return Some(true);
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    Some(false)
}

/// The engines the PE-replication ban considers: the assigned one, or for an Unassigned
/// instruction every candidate of its L0 map at the level.
fn replication_engine(i: &Instruction, arch: ArchLevel) -> Option<EngineType> {
    if i.engine == EngineType::Unassigned {
        l0_map(i.class)
            .into_iter()
            .filter(|(a, _)| *a == arch)
            .flat_map(|(_, s)| s.iter())
            .find(|&e| is_replication_capable(e, arch))
    } else {
        Some(i.engine).filter(|&e| is_replication_capable(e, arch))
    }
}

/// `checkWriteInPlaceValidity(W, R)` for instruction `i`.
pub fn check_pair(
    i: &Instruction,
    w: &AccessPattern,
    r: &AccessPattern,
    arch: ArchLevel,
) -> InPlace {
    // Step 1: different memory locations never alias. Step 2 (both DRAM: same location set
    // versus set overlap) collapses into the same buffer-identity test in this model.
    if w.mem != r.mem || w.buffer != r.buffer {
        return InPlace::Legal(1);
    }
    // Step 3: disjoint windows.
    if !accesses_overlap(w, r) {
        return InPlace::Legal(3);
    }
    // Step 4: opaque bodies trusted only over one literal buffer; transposes never in place.
    if matches!(i.class, InstClass::CustomOp | InstClass::BirKernel) {
        let first = i
            .args
            .first()
            .or(i.outs.first())
            .map(|a| (a.mem, a.buffer.as_str()));
        let one_buffer = i
            .args
            .iter()
            .chain(&i.outs)
            .all(|a| Some((a.mem, a.buffer.as_str())) == first);
        return if one_buffer {
            InPlace::Legal(4)
        } else {
            InPlace::Illegal(
                4,
                format!(
                    "{} writes in place but its operands span more than one buffer",
                    i.class
                ),
            )
        };
    }
    if i.class.is_transpose() {
        return InPlace::Illegal(
            4,
            format!("{} transposes: a transpose never writes in place", i.class),
        );
    }
    // Step 5: the same start, dtype and element count: legal exactly when the patterns match.
    if w.start_partition == r.start_partition
        && w.offset == r.offset
        && w.dtype == r.dtype
        && w.num_elements_per_partition() == r.num_elements_per_partition()
    {
        return if w.partitions == r.partitions && w.pattern == r.pattern {
            InPlace::Legal(5)
        } else {
            InPlace::Illegal(5, "same start, dtype and element count but a different pattern: elements land on other elements' addresses".into())
        };
    }
    // Step 6: partition replication makes the partition map non-identity.
    if let Some(e) = replication_engine(i, arch) {
        return InPlace::Illegal(
            6,
            format!(
                "{} on {e} can replicate partitions (2-row / 4-row packing), so an overlapping in-place write is not alias-safe [project-defined: replication-capable engines]",
                if i.engine == EngineType::Unassigned { "an Unassigned instruction with a candidate engine" } else { "the instruction" }
            ),
        );
    }
    // Step 7: ops that read their whole input before computing; else the exact SBUF test.
    if i.class == InstClass::BnStatsAggregate {
        return InPlace::Legal(7);
    }
    if w.mem != MemoryType::Sb {
        return InPlace::Illegal(
            7,
            format!("overlapping {} windows that are not identical", w.mem),
        );
    }
    match addresses_collide(w, r) {
        Some(false) => InPlace::Legal(7),
        Some(true) => InPlace::Illegal(
            7,
            "the patterns write and read the same SBUF addresses in a different order".into(),
        ),
        None => InPlace::NotChecked("the patterns are too large for the exact address test".into()),
    }
}

/// `checkWriteInPlaceValidity` over every (output, input) pair (no assertion code: the
/// compiler's consumer raises the user-facing error).
pub struct WriteInPlace;

impl Rule for WriteInPlace {
    rule_meta! {
        name: "checkWriteInPlaceValidity",
        property: WriteInPlace,
        codes: [],
        summary: "every output that overlaps an input of the same instruction is alias-safe: identical pattern, no transpose, no replication-capable engine, no SBUF address written before it is read",
        source: "seed 002, write-in-place validity (validateWriteInPlace / checkWriteInPlaceValidity, steps 1-7)",
        project: "the replication-capable engine set (PE on every level); memory locations are compared by buffer name",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        for (wi, w) in r.inst.outs.iter().enumerate() {
            for (ri, rd) in r.inst.args.iter().enumerate() {
                match check_pair(r.inst, w, rd, m.arch) {
                    InPlace::Legal(_) => {}
                    InPlace::Illegal(step, why) => out.push(error_at(
                        r,
                        "checkWriteInPlaceValidity",
                        None,
                        format!("outs[{wi}] overwrites args[{ri}] of {:?} in place (step {step}): {why}", w.buffer),
                    )),
                    InPlace::NotChecked(why) => out.push(not_checked_at(
                        r,
                        "checkWriteInPlaceValidity",
                        format!("outs[{wi}] over args[{ri}] of {:?}: {why}", w.buffer),
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::Dim;
    use crate::l1::testutil::*;
    use crate::registry::Property;
    use tpbsim_isa::NumFormat;

    fn tt(out: AccessPattern) -> Instruction {
        let mut i = tensor_tensor("x", "y", "x");
        i.outs[0] = out;
        i
    }

    fn step(v: InPlace) -> (bool, u8) {
        match v {
            InPlace::Legal(s) => (true, s),
            InPlace::Illegal(s, _) => (false, s),
            InPlace::NotChecked(_) => (false, 0),
        }
    }

    fn verdict(i: &Instruction) -> (bool, u8) {
        step(check_pair(i, &i.outs[0], &i.args[0], ArchLevel::CoreV4))
    }

    #[test]
    fn steps() {
        // 1: another buffer.
        assert_eq!(
            verdict(&tt(sb("z", NumFormat::Bfloat16, 0, 128, 64))),
            (true, 1)
        );
        // 3: same buffer, disjoint windows (other partitions, or later bytes).
        assert_eq!(
            verdict(&tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(64))),
            (true, 3)
        );
        // 5: identical pattern.
        assert_eq!(verdict(&tt_ident()), (true, 5));
        // 5: same start/dtype/count, different shape.
        let mut other = sb("x", NumFormat::Bfloat16, 0, 128, 64);
        other.pattern = vec![Dim { step: 1, num: 32 }, Dim { step: 32, num: 2 }];
        assert_eq!(verdict(&tt(other)), (false, 5));
        // 7: shifted by one element, overlapping: collision.
        assert_eq!(
            verdict(&tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1))),
            (false, 7)
        );
        // 7: interleaved, no shared address: legal.
        let mut even = tensor_tensor("x", "y", "x");
        even.args[0].pattern = vec![Dim { step: 2, num: 32 }];
        even.outs[0].pattern = vec![Dim { step: 2, num: 32 }];
        even.outs[0].offset = 1;
        assert_eq!(verdict(&even), (true, 7));
    }

    fn tt_ident() -> Instruction {
        tensor_tensor("x", "y", "x")
    }

    trait WithOffset {
        fn with_offset(self, o: i64) -> Self;
    }
    impl WithOffset for AccessPattern {
        fn with_offset(mut self, o: i64) -> Self {
            self.offset = o;
            self
        }
    }

    #[test]
    fn transpose_and_replication_bans() {
        let mut t = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        t.class = InstClass::StreamTranspose;
        t.engine = EngineType::Pool;
        assert_eq!(verdict(&t), (false, 4));
        // Identical patterns on a transpose are still banned (step 4 precedes step 5).
        let mut t2 = tt_ident();
        t2.class = InstClass::Transpose;
        assert_eq!(verdict(&t2), (false, 4));
        // PE: replication capable.
        let mut pe = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        pe.class = InstClass::Matmult;
        pe.engine = EngineType::Pe;
        assert_eq!(verdict(&pe), (false, 6));
        // Unassigned: the L0 candidates of Matmult include PE.
        pe.engine = EngineType::Unassigned;
        assert_eq!(verdict(&pe), (false, 6));
        // Unassigned TensorTensor: candidates Pool/DVE, no ban; the exact test decides.
        let mut u = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        u.engine = EngineType::Unassigned;
        assert_eq!(verdict(&u), (false, 7));
    }

    #[test]
    fn opaque_bodies_and_full_readers() {
        let mut c = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        c.class = InstClass::CustomOp;
        assert_eq!(verdict(&c), (false, 4));
        c.args[1].buffer = "x".into();
        assert_eq!(verdict(&c), (true, 4));
        let mut bn = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        bn.class = InstClass::BnStatsAggregate;
        assert_eq!(verdict(&bn), (true, 7));
        let mut ps = tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1));
        ps.outs[0].mem = MemoryType::Psum;
        ps.args[0].mem = MemoryType::Psum;
        assert_eq!(verdict(&ps), (false, 7));
    }

    #[test]
    fn rule_reports_pairs() {
        let ok = module(ArchLevel::CoreV4, vec![tt_ident()]);
        assert!(run(Property::WriteInPlace, &ok).is_empty());
        let bad = module(
            ArchLevel::CoreV4,
            vec![tt(sb("x", NumFormat::Bfloat16, 0, 128, 64).with_offset(1))],
        );
        let d = run(Property::WriteInPlace, &bad);
        assert_eq!(error_rules(&d), vec!["checkWriteInPlaceValidity"]);
        assert!(
            d[0].message
                .starts_with("outs[0] overwrites args[0] of \"x\" in place (step 7)"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn overlap_and_collision_helpers() {
        let a = sb("x", NumFormat::Float32, 0, 64, 16);
        let b = sb("x", NumFormat::Float32, 64, 64, 16);
        assert!(!accesses_overlap(&a, &b));
        assert_eq!(addresses_collide(&a, &b), Some(false));
        let c = sb("x", NumFormat::Float32, 32, 64, 16).with_offset(15);
        assert!(accesses_overlap(&a, &c));
        assert_eq!(addresses_collide(&a, &c), Some(true));
        let big = sb(
            "x",
            NumFormat::Float32,
            0,
            1,
            crate::bir::EXACT_SET_LIMIT + 1,
        );
        assert_eq!(addresses_collide(&big, &a), None);
    }
}
