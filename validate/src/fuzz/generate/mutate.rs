//! Mutations: break one documented L2 rule of a valid bundle and name the rule.
//!
//! Every mutation starts from a bundle of [`super::valid_bundle`] and changes only what its
//! kind says. [`Mutation::rule`] is the L2 rule (docs/l2.md) that must reject the result;
//! plain bit flips outside reserved bytes may or may not break a rule and carry `None`.

use super::recipes::{self, EVENT_ENUMS};
use super::{dtype_rows, enum_knows, field_max, rule_rows, write_field, Entropy, Generated};
use crate::l2::formats::pe;
use crate::l2::rule::Field;
use crate::l2::table::{FieldRule, Values};
use tpbsim_isa::spec::{self, FieldType};
use tpbsim_isa::{decode, Bundle, Engine, Gen, INST_WORD_LEN};

/// What a mutation changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutationKind {
    /// One bit of a reserved byte set.
    ReservedBitFlip,
    /// A reserved byte set to a random non-zero value.
    ReservedByte,
    /// `inst_word_len` other than 0x10.
    InstWordLen,
    /// An opcode byte that is not an opcode of the generation.
    OpcodeAbsent,
    /// An enum-like field set outside its enumeration.
    EnumOutOfRange,
    /// One count word of an access pattern set to zero.
    ZeroCount,
    /// An access pattern's start address outside SBUF and PSUM.
    AddrOutside,
    /// The bundle placed in the stream of an engine that does not execute its opcode.
    WrongEngine,
    /// A dtype field set to INVALID (0).
    InvalidDtype,
    /// v4 LdWeights: the dual-FP8 selector or one of its conditions broken.
    DualFp8,
    /// One arbitrary bit flipped (may or may not break a rule).
    BitFlip,
}

impl MutationKind {
    /// Every kind.
    pub const ALL: [MutationKind; 11] = [
        MutationKind::ReservedBitFlip,
        MutationKind::ReservedByte,
        MutationKind::InstWordLen,
        MutationKind::OpcodeAbsent,
        MutationKind::EnumOutOfRange,
        MutationKind::ZeroCount,
        MutationKind::AddrOutside,
        MutationKind::WrongEngine,
        MutationKind::InvalidDtype,
        MutationKind::DualFp8,
        MutationKind::BitFlip,
    ];

    /// Short name (`reserved-bit`, `zero-count`).
    pub const fn name(self) -> &'static str {
        match self {
            MutationKind::ReservedBitFlip => "reserved-bit",
            MutationKind::ReservedByte => "reserved-byte",
            MutationKind::InstWordLen => "inst-word-len",
            MutationKind::OpcodeAbsent => "opcode-absent",
            MutationKind::EnumOutOfRange => "enum-out-of-range",
            MutationKind::ZeroCount => "zero-count",
            MutationKind::AddrOutside => "addr-outside",
            MutationKind::WrongEngine => "wrong-engine",
            MutationKind::InvalidDtype => "invalid-dtype",
            MutationKind::DualFp8 => "dual-fp8",
            MutationKind::BitFlip => "bit-flip",
        }
    }
}

/// A mutated bundle and the rule it must break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutation {
    /// The mutated bundle.
    pub bundle: Bundle,
    /// Engine stream that holds it.
    pub engine: Engine,
    /// What was changed.
    pub kind: MutationKind,
    /// Field changed (spec name, or `reserved`).
    pub field: &'static str,
    /// The L2 rule that must reject it (`None`: the change need not break a rule).
    pub rule: Option<&'static str>,
}

/// Apply a random applicable mutation to `g` (a valid bundle of `gen`). Falls back to a bit
/// flip when no rule-breaking kind applies.
pub fn mutate<R: Entropy>(rng: &mut R, gen: Gen, g: Generated) -> Mutation {
    let mut kinds = MutationKind::ALL.to_vec();
    // Try kinds in a random order until one applies.
    while !kinds.is_empty() {
        let k = kinds.swap_remove(rng.below(kinds.len() as u64) as usize);
        if let Some(m) = mutate_kind(rng, gen, g, k) {
            return m;
        }
    }
    bit_flip(rng, g)
}

fn bit_flip<R: Entropy>(rng: &mut R, g: Generated) -> Mutation {
    let mut b = g.bundle;
    let bit = rng.below(512) as usize;
    b.0[bit / 8] ^= 1 << (bit % 8);
    Mutation {
        bundle: b,
        engine: g.engine,
        kind: MutationKind::BitFlip,
        field: "any",
        rule: None,
    }
}

/// Values of `r`'s field that `r` rejects on `gen`: every non-member byte of a set; for a
/// range, the values just outside it and a random one further out (within the field's width).
fn outside(rng: &mut impl Entropy, gen: Gen, r: &FieldRule) -> Vec<u64> {
    match r.values {
        Values::Range(lo, hi) => {
            let max = field_max(r.field.len);
            let mut v = Vec::new();
            if lo > 0 {
                v.extend([lo - 1, rng.range(0, lo - 1)]);
            }
            if hi < max {
                v.extend([hi + 1, rng.range(hi + 1, max)]);
            }
            v
        }
        Values::Set(_) | Values::PerGen(_) => (0..=255u64).filter(|&v| !r.admits(gen, v)).collect(),
    }
}

/// Apply mutation `kind` to `g`, or `None` when it does not apply to this bundle (no L2 on
/// `gen`, no reserved byte, no recipe for the opcode, ...).
pub fn mutate_kind<R: Entropy>(
    rng: &mut R,
    gen: Gen,
    g: Generated,
    kind: MutationKind,
) -> Option<Mutation> {
    let l2 = matches!(gen, Gen::V2 | Gen::V3 | Gen::V4);
    let op = g.bundle.0[0];
    let recipe = recipes::recipe_for(gen, op);
    let meta = decode(&g.bundle, gen).ok()?.meta();
    let mut b = g.bundle;
    let mk = |b: Bundle, field: &'static str, rule: &'static str| {
        Some(Mutation {
            bundle: b,
            engine: g.engine,
            kind,
            field,
            rule: Some(rule),
        })
    };
    match kind {
        MutationKind::BitFlip => Some(bit_flip(rng, g)),
        MutationKind::ReservedBitFlip | MutationKind::ReservedByte => {
            recipe?;
            let bytes: Vec<usize> = meta
                .reserved
                .iter()
                .flat_map(|&(s, e)| s as usize..e as usize)
                .collect();
            if bytes.is_empty() {
                return None;
            }
            let i = rng.pick(&bytes);
            b.0[i] = if kind == MutationKind::ReservedBitFlip {
                1 << rng.below(8)
            } else {
                rng.range(1, 255) as u8
            };
            mk(b, "reserved", "reserved_zero")
        }
        MutationKind::InstWordLen => {
            if !l2 {
                return None;
            }
            let mut v = rng.next_u64() as u8;
            while v == INST_WORD_LEN || v == INST_WORD_LEN | 1 {
                v = rng.next_u64() as u8;
            }
            b.0[1] = v;
            mk(b, "inst_word_len", "has_valid_inst_len")
        }
        MutationKind::OpcodeAbsent => {
            if !l2 {
                return None;
            }
            let absent: Vec<u8> = (0..=255u8).filter(|&o| spec::opcode(o).is_none()).collect();
            if absent.is_empty() {
                return None;
            }
            b.0[0] = rng.pick(&absent);
            mk(b, "opcode", "has_valid_neuron_header.is_valid_enum(OPCODE)")
        }
        MutationKind::EnumOutOfRange => {
            if !l2 {
                return None;
            }
            // (field, rule, values outside what the rule admits)
            let mut rules: Vec<(Field, &'static str, Vec<u64>)> = EVENT_ENUMS
                .iter()
                .map(|r| {
                    let outside = (0..=255u8)
                        .filter(|&v| {
                            !(r.member)(gen, v)
                                && (r.spec_enum.is_empty() || !enum_knows(r.spec_enum, v))
                        })
                        .map(u64::from)
                        .collect();
                    (Field::new(r.field, r.off, 1), r.rule, outside)
                })
                .collect();
            if recipe.is_some() {
                for r in rule_rows(gen, op) {
                    rules.push((r.field, r.rule.name, outside(rng, gen, r)));
                }
            }
            rules.retain(|(_, _, o)| !o.is_empty());
            if rules.is_empty() {
                return None;
            }
            let (f, rule, vals) = &rules[rng.below(rules.len() as u64) as usize];
            write_field(&mut b, *f, rng.pick(vals));
            mk(b, f.name, rule)
        }
        MutationKind::ZeroCount | MutationKind::AddrOutside => {
            recipe?;
            let pats: Vec<(&'static str, usize, usize)> = meta
                .fields
                .iter()
                .filter_map(|f| match f.ty {
                    FieldType::Tensor(n) | FieldType::MemPattern(n) => {
                        Some((f.name, f.offset as usize, n as usize))
                    }
                    _ => None,
                })
                .collect();
            if pats.is_empty() {
                return None;
            }
            let (name, off, n) = rng.pick(&pats);
            if kind == MutationKind::ZeroCount {
                let i = rng.below(n as u64) as usize;
                b.set_u16(off + 4 + 2 * n + 2 * i, 0);
                mk(b, name, "tensorNd_valid.num_elem")
            } else {
                // An immediate above the PSUM window with no marker bits: neither SBUF nor PSUM.
                let lo = 0x0400_0000u32;
                let a = lo + rng.below(((0x2000_0000 - lo) / 8) as u64) as u32 * 8;
                b.set_u32(off, a);
                mk(b, name, "tensor_start_addr_valid")
            }
        }
        MutationKind::WrongEngine => {
            if !l2 {
                return None;
            }
            let ok = recipes::engines(gen, op);
            let wrong: Vec<Engine> = Engine::ALL
                .into_iter()
                .filter(|e| !ok.contains(e))
                .collect();
            if wrong.is_empty() {
                return None;
            }
            let e = rng.pick(&wrong);
            let rule = if gen == Gen::V2 {
                "instruction_engine_check"
            } else {
                "neuron_isa_check_opcode_on_engine"
            };
            Some(Mutation {
                bundle: b,
                engine: e,
                kind,
                field: "opcode",
                rule: Some(rule),
            })
        }
        MutationKind::InvalidDtype => {
            recipe?;
            let rows: Vec<_> = dtype_rows(gen, op)
                .into_iter()
                .filter(|d| d.applies(&b))
                .collect();
            if rows.is_empty() {
                return None;
            }
            let d = rng.pick(&rows);
            let o = d.field.start as usize;
            b.0[o] = d.with_tag(b.0[o], 0);
            mk(b, d.field.name, "is_valid_dtype")
        }
        MutationKind::DualFp8 => {
            if gen != Gen::V4 || op != tpbsim_isa::opcode_byte::LDWEIGHTS {
                return None;
            }
            let rule = "s3_lw_dual_fp8_restrictions";
            let sel = pe::DUAL_FP8_SELECTOR;
            match rng.below(4) {
                0 => {
                    let bad: Vec<u8> = (0..=255u8).filter(|v| !matches!(v, 0 | 1 | 4)).collect();
                    sel.set(&mut b, rng.pick(&bad).into());
                    mk(b, tpbsim_isa::formats::loc::ld_weights::PERF_OPT.name, rule)
                }
                1 => {
                    sel.set(&mut b, rng.pick(&[1, 4]));
                    let dt = rng.pick(&[0x03, 0x06, 0x07, 0x0A, 0x0D]);
                    pe::IN_DTYPE.set(&mut b, dt);
                    mk(b, pe::IN_DTYPE.name, rule)
                }
                2 => {
                    sel.set(&mut b, rng.pick(&[1, 4]));
                    let g2 = rng.pick(&[0x3u8, 0xC, 0x1, 0x2, 0x4, 0x8]);
                    pe::COL_GRP.set(&mut b, g2.into());
                    pe::NUM_ACTIVE_COLS.set(&mut b, rng.range(1, recipes::col_bound(g2)));
                    mk(b, pe::COL_GRP.name, rule)
                }
                _ => {
                    sel.set(&mut b, rng.pick(&[1, 4]));
                    pe::TRANSPOSE_MODE.set(&mut b, rng.range(1, 255));
                    mk(b, pe::TRANSPOSE_MODE.name, rule)
                }
            }
        }
    }
}
