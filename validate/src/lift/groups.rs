//! The multi-bundle groups: the runs of bundles the compiler emits for one BIR instruction
//! (LDWEIGHTS + MATMUL, LDWEIGHTS_MX + MATMUL_MX, ACTIVATE + READ_ACCUMULATOR, ...).
//!
//! [`GROUPS`] is the one list of them. The lifter's recognition ([`recognise`]), lowering's
//! opcode choice ([`plan`]) and the operand bindings both share ([`pieces`]) all read it: a
//! group added here is found in a stream, chosen for an instruction and bound in one place.

use serde_json::Value;
use tpbsim_isa::formats::loc::{
    activate as act_loc, ld_weights as ldw_loc, ld_weights_mx as ldwmx_loc, matmul as mm_loc,
    matmul_mx as mmx_loc,
};
use tpbsim_isa::opcode_byte as ob;
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{Bundle, Gen};

use super::error::PlanError;
use super::lower::{piece, Bind, Piece, Slot};
use super::rules::{self, Dt, Role};
use super::ATTR_PAYLOADS;
use crate::bir::{InstClass, Instruction};

/// How the opcodes of a group follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One lead bundle, then the follower.
    Pair,
    /// The pair, once or twice (the PE fp32 Low / High passes).
    Passes,
    /// One lead bundle, then any number of followers (CUSTOM_OP_PAYLOAD).
    Repeat,
}

/// A group's lowering choice: its opcodes for an instruction, or `None` when the instruction
/// lowers otherwise.
pub(crate) type Lowers = fn(&Instruction, &GroupDef) -> Result<Option<Vec<u8>>, PlanError>;

/// One multi-bundle group.
pub(crate) struct GroupDef {
    /// The class the group lifts to (the PE group: Matmult, or Transpose when the MATMUL
    /// transposes).
    pub classes: &'static [InstClass],
    /// The lead bundle's opcode (one of).
    pub lead: &'static [u8],
    /// The follower's opcode.
    pub follow: u8,
    /// How the bundles follow each other.
    pub shape: Shape,
    /// Inputs of the lifted instruction; `None` when the lead bundle decides it.
    pub nargs: Option<usize>,
    /// Why a lead bundle found without its follower is not lifted; `None` when it lifts alone.
    pub lone_lead: Option<&'static str>,
    /// Why a follower found without its lead is not lifted; `None` when it lifts alone.
    pub lone_follow: Option<&'static str>,
    /// Lifting: whether the bundles from `i` (lead and follower present) form the group.
    pub lifts: fn(&[Bundle], usize, Gen) -> bool,
    /// Lowering: the group's opcodes for `inst`, or `None` when `inst` lowers otherwise.
    pub lowers: Lowers,
    /// The bundles' operand bindings for the opcodes found or chosen and `nargs` inputs.
    pub pieces: fn(&[u8], usize, Gen) -> Vec<Piece>,
}

/// Every multi-bundle group.
pub(crate) static GROUPS: [GroupDef; 10] = [
    GroupDef {
        classes: &[InstClass::Matmult, InstClass::Transpose],
        lead: &[ob::LDWEIGHTS],
        follow: ob::MATMUL,
        shape: Shape::Passes,
        nargs: Some(2),
        lone_lead: None,
        lone_follow: None,
        lifts: always,
        lowers: pe_passes,
        pieces: pe_pieces,
    },
    GroupDef {
        classes: &[InstClass::MatmultMx],
        lead: &[ob::LDWEIGHTS_MX],
        follow: ob::MATMUL_MX,
        shape: Shape::Pair,
        nargs: Some(4),
        lone_lead: Some("LDWEIGHTS_MX without the MATMUL_MX that always follows it"),
        lone_follow: Some("MATMUL_MX without the LDWEIGHTS_MX that always precedes it"),
        lifts: always,
        lowers: pair,
        pieces: mx_pieces,
    },
    GroupDef {
        classes: &[InstClass::Activation],
        lead: &[ob::ACTIVATE],
        follow: ob::ACTIVATION_READ_ACCUMULATOR,
        shape: Shape::Pair,
        nargs: None,
        lone_lead: None,
        lone_follow: None,
        lifts: accumulates,
        lowers: two_outputs,
        pieces: act_pieces,
    },
    GroupDef {
        classes: &[InstClass::TensorScalar],
        lead: &[ob::TENSOR_SCALAR_CACHE_REDUCE],
        follow: ob::DVE_READ_ACCUMULATOR,
        shape: Shape::Pair,
        nargs: Some(1),
        lone_lead: None,
        lone_follow: None,
        lifts: always,
        lowers: two_narrow_outputs,
        pieces: tsc_pieces,
    },
    GroupDef {
        classes: &[InstClass::Select],
        lead: &[ob::COPY, ob::CAST],
        follow: ob::SELECT_REDUCE,
        shape: Shape::Pair,
        nargs: Some(3),
        lone_lead: None,
        lone_follow: None,
        lifts: select_dsts_agree,
        lowers: select_copy,
        pieces: select_pieces,
    },
    GroupDef {
        classes: &[InstClass::StreamShuffle],
        lead: &[ob::LOAD_MASK_SELECT],
        follow: ob::STREAM_SHUFFLE,
        shape: Shape::Pair,
        nargs: Some(1),
        lone_lead: Some(LONE_MASK_SELECT),
        lone_follow: None,
        lifts: always,
        lowers: pair,
        pieces: stream_pieces,
    },
    GroupDef {
        classes: &[InstClass::StreamTranspose],
        lead: &[ob::LOAD_MASK_SELECT],
        follow: ob::STREAM_TRANSPOSE,
        shape: Shape::Pair,
        nargs: Some(1),
        lone_lead: Some(LONE_MASK_SELECT),
        lone_follow: None,
        lifts: always,
        lowers: pair,
        pieces: stream_pieces,
    },
    GroupDef {
        classes: &[InstClass::MaxIndex],
        lead: &[ob::MATCH_VALUE_LOAD],
        follow: ob::FIND_INDEX8,
        shape: Shape::Pair,
        nargs: Some(0),
        lone_lead: Some(LONE_MAX_INDEX),
        lone_follow: Some(LONE_MAX_INDEX),
        lifts: always,
        lowers: pair,
        pieces: opaque_pieces,
    },
    GroupDef {
        classes: &[InstClass::Gather],
        lead: &[ob::POOL_BUFFER_LOAD],
        follow: ob::GATHER,
        shape: Shape::Pair,
        nargs: Some(0),
        lone_lead: Some(LONE_GATHER),
        lone_follow: Some(LONE_GATHER),
        lifts: always,
        lowers: pair,
        pieces: opaque_pieces,
    },
    GroupDef {
        classes: &[InstClass::CustomOp],
        lead: &[ob::CUSTOM_OP_HEADER],
        follow: ob::CUSTOM_OP_PAYLOAD,
        shape: Shape::Repeat,
        nargs: Some(0),
        lone_lead: None,
        lone_follow: Some("CUSTOM_OP_PAYLOAD without its CUSTOM_OP_HEADER"),
        lifts: always,
        lowers: custom_op,
        pieces: opaque_pieces,
    },
];

const LONE_MASK_SELECT: &str =
    "LOAD_MASK_SELECT without the STREAM_SHUFFLE / STREAM_TRANSPOSE it feeds";
const LONE_MAX_INDEX: &str = "MATCH_VALUE_LOAD and FIND_INDEX8 come as a pair (MaxIndex)";
const LONE_GATHER: &str = "POOL_BUFFER_LOAD and GATHER come as a pair (Gather)";

/// A group found at bundle `i`: its entry and its bundle count.
pub(crate) struct Found {
    pub def: &'static GroupDef,
    pub len: usize,
}

/// The group starting at bundle `i`: `Ok(Some)` when the bundles form one, `Ok(None)` when
/// bundle `i` lifts alone, `Err` (the reason) when it is a group member without its partner.
pub(crate) fn recognise(
    bundles: &[Bundle],
    i: usize,
    gen: Gen,
) -> Result<Option<Found>, &'static str> {
    let op = bundles[i].opcode();
    let next = bundles.get(i + 1).map(Bundle::opcode);
    for g in GROUPS.iter().filter(|g| g.lead.contains(&op)) {
        let len = match g.shape {
            Shape::Repeat => {
                1 + bundles[i + 1..]
                    .iter()
                    .take_while(|x| x.opcode() == g.follow)
                    .count()
            }
            Shape::Pair | Shape::Passes if next == Some(g.follow) => 2,
            _ => continue,
        };
        if (g.lifts)(bundles, i, gen) {
            return Ok(Some(Found { def: g, len }));
        }
    }
    let lone = GROUPS.iter().find_map(|g| {
        if g.lead.contains(&op) {
            g.lone_lead
        } else if g.follow == op {
            g.lone_follow
        } else {
            None
        }
    });
    match lone {
        Some(why) => Err(why),
        None => Ok(None),
    }
}

/// The group opcodes `inst` lowers to, if it lowers to a group.
pub(crate) fn plan(inst: &Instruction) -> Result<Option<Vec<u8>>, PlanError> {
    for g in GROUPS.iter().filter(|g| g.classes.contains(&inst.class)) {
        if let Some(ops) = (g.lowers)(inst, g)? {
            return Ok(Some(ops));
        }
    }
    Ok(None)
}

/// The group entry whose class and opcode sequence these are.
pub(crate) fn find(class: InstClass, opcodes: &[u8]) -> Option<&'static GroupDef> {
    GROUPS.iter().find(|g| {
        g.classes.contains(&class)
            && match g.shape {
                Shape::Pair => matches!(opcodes, [a, b] if g.lead.contains(a) && *b == g.follow),
                Shape::Passes => match opcodes {
                    [a, b] | [a, b, _, _] => {
                        g.lead.contains(a)
                            && *b == g.follow
                            && (opcodes.len() == 2 || opcodes[2..] == opcodes[..2])
                    }
                    // One or two passes of two bundles: no other length.
                    [] | [_] | [_, _, _] | [_, _, _, _, _, ..] => false,
                },
                Shape::Repeat => match opcodes {
                    [a, rest @ ..] => g.lead.contains(a) && rest.iter().all(|&o| o == g.follow),
                    [] => false,
                },
            }
    })
}

/// The bindings of a group's bundles.
pub(crate) fn pieces(g: &GroupDef, opcodes: &[u8], nargs: usize, gen: Gen) -> Vec<Piece> {
    (g.pieces)(opcodes, nargs, gen)
}

// ------------------------------------------------------------------ lifting conditions

fn always(_: &[Bundle], _: usize, _: Gen) -> bool {
    true
}

/// ACTIVATE feeds READ_ACCUMULATOR when it accumulates (`accumulator_cmd` byte non-zero).
fn accumulates(bundles: &[Bundle], i: usize, gen: Gen) -> bool {
    super::fields::read_loc(&bundles[i], act_loc::ACCUMULATOR_CMD, gen)
        .is_some_and(|c| c != u64::from(tpbsim_isa::AccumCmd::IDLE.0))
}

/// The copy's and the SELECT_REDUCE's destinations are the same pattern.
fn select_dsts_agree(bundles: &[Bundle], i: usize, gen: Gen) -> bool {
    super::lifter::same_output(
        &bundles[i],
        &rules::TR.outs[0],
        &bundles[i + 1],
        &rules::SELRED.outs[0],
        gen,
    )
}

// ------------------------------------------------------------------ lowering choices

/// The group's one opcode sequence.
fn pair(_: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    Ok(Some(vec![g.lead[0], g.follow]))
}

/// The pair when the instruction has a second (accumulator) output.
fn two_outputs(inst: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    Ok((inst.outs.len() == 2).then(|| vec![g.lead[0], g.follow]))
}

/// The pair for two outputs that are not a wide (low + high) integer result.
fn two_narrow_outputs(inst: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    let wide = inst
        .attrs
        .get(super::ATTR_WIDE)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((inst.outs.len() == 2 && !wide).then(|| vec![g.lead[0], g.follow]))
}

/// COPY (same dtype) or CAST ahead of SELECT_REDUCE.
fn select_copy(inst: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    let (Some(src), Some(dst)) = (inst.args.get(2), inst.outs.first()) else {
        return Err(PlanError::SelectOperands);
    };
    let lead = if src.dtype == dst.dtype {
        g.lead[0]
    } else {
        g.lead[1]
    };
    Ok(Some(vec![lead, g.follow]))
}

/// CUSTOM_OP_HEADER and its payload bundles (one unless the attribute says otherwise).
fn custom_op(inst: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    let n = inst.attrs.get(ATTR_PAYLOADS).map_or(Ok(1), |v| {
        v.as_u64()
            .filter(|&n| n < 4096)
            .ok_or_else(|| PlanError::PayloadCount(v.clone()))
    })?;
    Ok(Some(
        std::iter::once(g.lead[0])
            .chain(std::iter::repeat_n(g.follow, n as usize))
            .collect(),
    ))
}

/// MATMUL alone (weights already loaded), LDWEIGHTS + MATMUL, or the two fp32 passes.
fn pe_passes(inst: &Instruction, g: &GroupDef) -> Result<Option<Vec<u8>>, PlanError> {
    let pass = [g.lead[0], g.follow];
    Ok(Some(match inst.args.len() {
        1 => vec![g.follow],
        2 if super::lower::is_two_pass(inst) => pass.repeat(2),
        2 => pass.to_vec(),
        n => {
            return Err(PlanError::PeInputs {
                class: inst.class,
                found: n,
            })
        }
    }))
}

// ------------------------------------------------------------------ bindings

/// The PE in_dtype role of a matmul operand.
fn pe_role(field: FieldLoc, dt: FieldLoc, part: FieldLoc) -> Role {
    rules::role(field, Dt::Field(dt), part)
}

/// The matmul PSUM destination role: `out_dtype` from v3, fixed float32 on v2 (the v2 layout
/// has no output dtype byte; PSUM holds fp32 there).
fn mm_dst(gen: Gen) -> Role {
    let dt = if gen == Gen::V2 {
        Dt::Fixed(tpbsim_isa::NumFormat::Float32)
    } else {
        Dt::PsumOut(mm_loc::OUT_DTYPE)
    };
    rules::role(mm_loc::DST, dt, mm_loc::NUM_ACTIVE_COLS)
}

/// MATMUL (moving input `args[0]`, PSUM `outs[0]`) after each LDWEIGHTS (weights `args[1]`).
pub(crate) fn pe_pieces(ops: &[u8], _: usize, gen: Gen) -> Vec<Piece> {
    use Slot::*;
    let mm = vec![
        Bind::Role(
            pe_role(mm_loc::SRC, mm_loc::IN_DTYPE, mm_loc::NUM_ACTIVE_ROWS),
            Arg(0),
        ),
        Bind::Role(mm_dst(gen), Out(0)),
    ];
    let ldw = vec![Bind::Role(
        pe_role(ldw_loc::SRC, ldw_loc::IN_DTYPE, ldw_loc::NUM_ACTIVE_ROWS),
        Arg(1),
    )];
    ops.iter()
        .map(|&op| {
            if op == ob::LDWEIGHTS {
                piece(op, &rules::LDW, ldw.clone())
            } else {
                piece(op, &super::lower::MM_FORM, mm.clone())
            }
        })
        .collect()
}

/// LDWEIGHTS_MX (weights data `args[1]`, scales `args[3]`), then MATMUL_MX (moving data
/// `args[0]`, scales `args[2]`, PSUM `outs[0]`).
fn mx_pieces(ops: &[u8], _: usize, _: Gen) -> Vec<Piece> {
    use Slot::*;
    vec![
        piece(
            ops[0],
            &super::lower::LDWMX_FORM,
            vec![Bind::Mx {
                field: ldwmx_loc::SRC,
                dt: ldwmx_loc::IN_DTYPE,
                part: ldwmx_loc::NUM_ACTIVE_ROWS,
                data: Arg(1),
                scale: Arg(3),
            }],
        ),
        piece(
            ops[1],
            &super::lower::MMX_FORM,
            vec![
                Bind::Mx {
                    field: mmx_loc::SRC,
                    dt: mmx_loc::IN_DTYPE,
                    part: mmx_loc::NUM_ACTIVE_ROWS,
                    data: Arg(0),
                    scale: Arg(2),
                },
                Bind::Role(
                    rules::role(
                        mmx_loc::DST,
                        Dt::Field(mmx_loc::OUT_DTYPE),
                        mmx_loc::NUM_ACTIVE_COLS,
                    ),
                    Out(0),
                ),
            ],
        ),
    ]
}

/// ACTIVATE's operands (and bias `args[1]` with two inputs), then READ_ACCUMULATOR into
/// `outs[1]`.
fn act_pieces(ops: &[u8], nargs: usize, _: Gen) -> Vec<Piece> {
    let mut v = vec![super::lower::activate_piece(nargs)];
    v.extend(ops[1..].iter().map(|&op| {
        piece(
            op,
            &rules::RDACC,
            super::lower::form_binds(&rules::RDACC, 0, 1),
        )
    }));
    v
}

/// TENSOR_SCALAR_CACHE_REDUCE's operands, then DVE_READ_ACCUMULATOR into `outs[1]`.
fn tsc_pieces(ops: &[u8], _: usize, _: Gen) -> Vec<Piece> {
    vec![
        piece(
            ops[0],
            &rules::TS,
            super::lower::form_binds(&rules::TS, 0, 0),
        ),
        piece(
            ops[1],
            &rules::RDACC,
            super::lower::form_binds(&rules::RDACC, 0, 1),
        ),
    ]
}

/// COPY / CAST of `on_false` (`args[2]`) into the output, then SELECT_REDUCE.
fn select_pieces(ops: &[u8], _: usize, _: Gen) -> Vec<Piece> {
    vec![
        piece(
            ops[0],
            &rules::TR,
            vec![
                Bind::Role(rules::TR.args[0], Slot::Arg(2)),
                Bind::Role(rules::TR.outs[0], Slot::Out(0)),
            ],
        ),
        piece(
            ops[1],
            &rules::SELRED,
            super::lower::form_binds(&rules::SELRED, 0, 0),
        ),
    ]
}

/// LOAD_MASK_SELECT (no operands), then the STREAM_SHUFFLE / STREAM_TRANSPOSE.
fn stream_pieces(ops: &[u8], _: usize, _: Gen) -> Vec<Piece> {
    vec![
        piece(ops[0], &rules::OPAQUE, vec![]),
        piece(
            ops[1],
            &rules::TR,
            super::lower::form_binds(&rules::TR, 0, 0),
        ),
    ]
}

/// Bundles whose operand layouts are not published.
fn opaque_pieces(ops: &[u8], _: usize, _: Gen) -> Vec<Piece> {
    ops.iter()
        .map(|&op| piece(op, &rules::OPAQUE, vec![]))
        .collect()
}
