//! Rule data: the simple parts of the format gates — enum membership, numeric ranges and the
//! dtype checks of a field — as rows, evaluated by one generic checker ([`check`],
//! [`check_dtypes`]) and read by the fuzz generator and the generated boundary tests.
//!
//! Each gate (`l2/formats/*.rs`) keeps its rows in `const` slices beside its procedural rules
//! and evaluates each slice at the point of its cascade where the rules ran before, so the
//! rule names, assertion codes, messages and diagnostic order are those of the gate.
//! [`super::formats::table`] lists every gate's rows.

use tpbsim_isa::spec::ByteSet;
use tpbsim_isa::Gen;

use super::addr::{self, Operand, Placement};
use super::dtype;
use super::formats::DtypeOpts;
use super::rule::{Allowed, Ck, Field, Rule, Sink};

/// The values a row admits.
#[derive(Clone, Copy, Debug)]
pub enum Values {
    /// Members of a byte set (the field's byte).
    Set(ByteSet),
    /// Members of a byte set that depends on the generation (the field's byte).
    PerGen(fn(Gen) -> ByteSet),
    /// The inclusive range `lo..=hi` of the field's little-endian value.
    Range(u64, u64),
}

/// Which opcodes of the gate a row applies to.
#[derive(Clone, Copy, Debug)]
pub enum Ops {
    /// Every opcode of the gate.
    All,
    /// Only these opcodes.
    Only(&'static [u8]),
    /// Every opcode but these.
    Except(&'static [u8]),
}

impl Ops {
    /// True when a row with this selector applies to `opcode`.
    #[inline]
    pub fn has(self, opcode: u8) -> bool {
        match self {
            Ops::All => true,
            Ops::Only(o) => o.contains(&opcode),
            Ops::Except(o) => !o.contains(&opcode),
        }
    }
}

/// One field rule of a gate: `rule` rejects a value of `field` outside `values`, reporting
/// `allowed`, for the opcodes `ops` selects on generations from `from` on.
#[derive(Clone, Copy, Debug)]
pub struct FieldRule {
    /// The rule reported on failure.
    pub rule: &'static Rule,
    /// The field checked.
    pub field: Field,
    /// What the field may hold.
    pub values: Values,
    /// What the diagnostic says was allowed.
    pub allowed: Allowed,
    /// The opcodes it applies to.
    pub ops: Ops,
    /// The first generation it applies to.
    pub from: Gen,
    /// The last generation it applies to.
    pub until: Gen,
}

impl FieldRule {
    /// Membership in `set`.
    pub const fn set(rule: &'static Rule, field: Field, set: ByteSet, text: &'static str) -> Self {
        Self::new(rule, field, Values::Set(set), Allowed::Text(text))
    }

    /// Membership in the generation's set.
    pub const fn per_gen(
        rule: &'static Rule,
        field: Field,
        set: fn(Gen) -> ByteSet,
        text: &'static str,
    ) -> Self {
        Self::new(rule, field, Values::PerGen(set), Allowed::Text(text))
    }

    /// `lo..=hi`, reported as `allowed`.
    pub const fn range(
        rule: &'static Rule,
        field: Field,
        lo: u64,
        hi: u64,
        allowed: Allowed,
    ) -> Self {
        Self::new(rule, field, Values::Range(lo, hi), allowed)
    }

    /// A partition / channel count: `1..=128`, reported as that text.
    pub const fn count(rule: &'static Rule, field: Field) -> Self {
        Self::range(rule, field, 1, 128, Allowed::Text("1..=128"))
    }

    /// `0..=max`, reported as `Allowed::Max(max)`.
    pub const fn max(rule: &'static Rule, field: Field, max: u64) -> Self {
        Self::range(rule, field, 0, max, Allowed::Max(max))
    }

    /// Exactly `v`, reported as `Allowed::Eq(v)`.
    pub const fn eq(rule: &'static Rule, field: Field, v: u64) -> Self {
        Self::range(rule, field, v, v, Allowed::Eq(v))
    }

    const fn new(rule: &'static Rule, field: Field, values: Values, allowed: Allowed) -> Self {
        FieldRule {
            rule,
            field,
            values,
            allowed,
            ops: Ops::All,
            from: Gen::V2,
            until: Gen::V5,
        }
    }

    /// The row restricted to `ops`.
    pub const fn only(mut self, ops: &'static [u8]) -> Self {
        self.ops = Ops::Only(ops);
        self
    }

    /// The row for every opcode but `ops`.
    pub const fn except(mut self, ops: &'static [u8]) -> Self {
        self.ops = Ops::Except(ops);
        self
    }

    /// The row from generation `gen` on.
    pub const fn from(mut self, gen: Gen) -> Self {
        self.from = gen;
        self
    }

    /// The row up to generation `gen`.
    pub const fn until(mut self, gen: Gen) -> Self {
        self.until = gen;
        self
    }

    /// True when the row applies to `opcode` on `gen`.
    #[inline]
    pub fn applies(&self, gen: Gen, opcode: u8) -> bool {
        gen >= self.from && gen <= self.until && self.ops.has(opcode)
    }

    /// True when the row admits `v` on `gen`.
    #[inline]
    pub fn admits(&self, gen: Gen, v: u64) -> bool {
        match self.values {
            Values::Set(s) => s.has(v as u8),
            Values::PerGen(f) => f(gen).has(v as u8),
            Values::Range(lo, hi) => (lo..=hi).contains(&v),
        }
    }

    /// The admitted bytes of a one-byte row on `gen`, in ascending order (a range row clamped
    /// to 0..=255): what a generator draws from, whatever order a set was written in.
    pub fn members(&self, gen: Gen) -> ByteSet {
        match self.values {
            Values::Set(s) => s,
            Values::PerGen(f) => f(gen),
            Values::Range(lo, hi) if lo <= 255 => ByteSet::range(lo as u8, hi.min(255) as u8),
            Values::Range(..) => ByteSet::EMPTY,
        }
    }

    /// Evaluate the row on the bundle under check (when it applies).
    #[inline]
    pub fn eval<S: Sink>(&self, ck: &mut Ck<S>) {
        if !self.applies(ck.gen, ck.u8(0)) {
            return;
        }
        let v = ck.get(self.field);
        let (ok, found) = match self.values {
            // A set holds bytes: the byte is what is tested and reported.
            Values::Set(_) | Values::PerGen(_) => {
                (self.admits(ck.gen, v as u8 as u64), v as u8 as u64)
            }
            Values::Range(..) => (self.admits(ck.gen, v), v),
        };
        if !ok {
            ck.fail(self.rule, self.field, found, self.allowed);
        }
    }
}

/// Evaluate `rows` in order.
#[inline]
pub fn check<S: Sink>(ck: &mut Ck<S>, rows: &[FieldRule]) {
    for r in rows {
        r.eval(ck);
    }
}

/// Which part of a byte holds a dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The whole byte.
    Byte,
    /// The low nibble of a dtype pair.
    Low,
    /// The high nibble of a dtype pair.
    High,
}

/// A predicate over the byte of another field: a dtype row applies, or opens its 64-bit path,
/// when that field's byte satisfies it.
#[derive(Clone, Copy, Debug)]
pub struct When {
    /// The field read.
    pub field: Field,
    /// True when the row's condition holds for the field's byte.
    pub holds: fn(u8) -> bool,
}

impl When {
    /// True when the condition holds on `b`.
    #[inline]
    pub fn on(&self, b: &tpbsim_isa::Bundle) -> bool {
        (self.holds)(self.field.get(b) as u8)
    }
}

/// A dtype field the gate passes to `is_valid_dtype` with the given acceptance flags.
#[derive(Clone, Copy, Debug)]
pub struct DtypeRule {
    /// The field (a nibble's `sub` names it).
    pub field: Field,
    /// Where the dtype code sits in the field's byte.
    pub part: Part,
    /// FP32R / 64-bit / FP4 acceptance.
    pub opts: DtypeOpts,
    /// The opcodes it applies to.
    pub ops: Ops,
    /// Checked only when this holds (the branch's compare dtype only for a conditional branch).
    pub when: Option<When>,
    /// The 64-bit path is open when this holds (TensorTensor's integer-band ops).
    pub wide_when: Option<When>,
}

impl DtypeRule {
    /// A whole-byte dtype.
    pub const fn byte(field: Field, opts: DtypeOpts) -> Self {
        DtypeRule {
            field,
            part: Part::Byte,
            opts,
            ops: Ops::All,
            when: None,
            wide_when: None,
        }
    }

    /// A dtype in one nibble of a pair byte.
    pub const fn nibble(field: Field, high: bool, opts: DtypeOpts) -> Self {
        DtypeRule {
            part: if high { Part::High } else { Part::Low },
            ..Self::byte(field, opts)
        }
    }

    /// The row restricted to `ops`.
    pub const fn only(mut self, ops: &'static [u8]) -> Self {
        self.ops = Ops::Only(ops);
        self
    }

    /// The row for every opcode but `ops`.
    pub const fn except(mut self, ops: &'static [u8]) -> Self {
        self.ops = Ops::Except(ops);
        self
    }

    /// The row checked only when `holds` accepts the byte of `field`.
    pub const fn when(mut self, field: Field, holds: fn(u8) -> bool) -> Self {
        self.when = Some(When { field, holds });
        self
    }

    /// The row with its 64-bit path open when `holds` accepts the byte of `field`.
    pub const fn wide_when(mut self, field: Field, holds: fn(u8) -> bool) -> Self {
        self.wide_when = Some(When { field, holds });
        self
    }

    /// True when the row applies to bundle `b` (its opcode and its condition).
    #[inline]
    pub fn applies(&self, b: &tpbsim_isa::Bundle) -> bool {
        self.ops.has(b.0[0]) && self.when.is_none_or(|w| w.on(b))
    }

    /// The acceptance flags the row uses on bundle `b`.
    #[inline]
    pub fn opts_on(&self, b: &tpbsim_isa::Bundle) -> DtypeOpts {
        let mut o = self.opts;
        if self.wide_when.is_some_and(|w| w.on(b)) {
            o.b64 = true;
        }
        o
    }

    /// The dtype code the row reads from `b`.
    #[inline]
    pub fn tag(&self, b: &tpbsim_isa::Bundle) -> u8 {
        let x = self.field.get(b) as u8;
        match self.part {
            Part::Byte => x,
            Part::Low => x & 0xF,
            Part::High => x >> 4,
        }
    }

    /// The byte with its dtype replaced by `tag` (the other nibble kept).
    pub fn with_tag(&self, byte: u8, tag: u8) -> u8 {
        match self.part {
            Part::Byte => tag,
            Part::Low => byte & 0xF0 | tag & 0xF,
            Part::High => byte & 0x0F | tag << 4,
        }
    }

    /// True when `tag` passes the row's `is_valid_dtype` on `gen`, with the flags the row
    /// uses on bundle `b`.
    pub fn admits(&self, b: &tpbsim_isa::Bundle, gen: Gen, tag: u8) -> bool {
        let o = self.opts_on(b);
        dtype::is_valid(gen, tag, o.fp32r, o.b64, o.fp4)
    }

    /// Evaluate the row on the bundle under check: true when it does not apply or the dtype
    /// passes (a failure is reported).
    #[inline]
    pub fn check<S: Sink>(&self, ck: &mut Ck<S>) -> bool {
        if !self.applies(ck.b) {
            return true;
        }
        let tag = self.tag(ck.b);
        let o = self.opts_on(ck.b);
        super::formats::dtype_check(ck, self.field, tag, o)
    }
}

/// Evaluate the dtype rows that apply, in order.
#[inline]
pub fn check_dtypes<S: Sink>(ck: &mut Ck<S>, rows: &[DtypeRule]) {
    for r in rows {
        r.check(ck);
    }
}

/// Where an operand row's dtype comes from.
#[derive(Clone, Copy, Debug)]
pub enum Tag {
    /// The dtype code in a field (a whole byte or one nibble of a pair).
    Of(Field, Part),
    /// A fixed dtype (the descriptor is always read as this type).
    Fixed(u8),
}

impl Tag {
    /// The dtype code on `b`.
    #[inline]
    pub fn on(self, b: &tpbsim_isa::Bundle) -> u8 {
        match self {
            Tag::Of(f, p) => {
                let x = f.get(b) as u8;
                match p {
                    Part::Byte => x,
                    Part::Low => x & 0xF,
                    Part::High => x >> 4,
                }
            }
            Tag::Fixed(t) => t,
        }
    }
}

/// An operand region row: the `dims`-dimensional access pattern `op`, typed by `dtype`, must
/// lie where `placement` allows (`tensor{1..4}d_valid`); with `channels`, its start partition
/// leaves room for that many active partitions (`start_addr_active_channels`); with
/// `pool_sbuf`, a Pool-engine bundle may not place it in PSUM.
#[derive(Clone, Copy, Debug)]
pub struct OperandRule {
    /// The descriptor.
    pub op: Operand,
    /// Its dimensions.
    pub dims: u8,
    /// Its dtype (alignment, the 4-byte rule of a PSUM write).
    pub dtype: Tag,
    /// Where it may live and whether the op writes it.
    pub placement: Placement,
    /// The active-partition count its start partition is checked against.
    pub channels: Option<Field>,
    /// Off PSUM on the Pool engine.
    pub pool_sbuf: bool,
}

impl OperandRule {
    /// A read operand in SBUF or PSUM.
    pub const fn read(op: Operand, dims: u8, dtype: Tag) -> Self {
        OperandRule {
            op,
            dims,
            dtype,
            placement: Placement::READ_ANY,
            channels: None,
            pool_sbuf: false,
        }
    }

    /// A written operand in SBUF or PSUM.
    pub const fn write(op: Operand, dims: u8, dtype: Tag) -> Self {
        OperandRule {
            placement: Placement::WRITE_ANY,
            ..Self::read(op, dims, dtype)
        }
    }

    /// The row with its start partition checked against the count in `num`.
    pub const fn channels(mut self, num: Field) -> Self {
        self.channels = Some(num);
        self
    }

    /// The row kept off PSUM on the Pool engine.
    pub const fn pool_sbuf(mut self) -> Self {
        self.pool_sbuf = true;
        self
    }

    /// True when the row admits PSUM for an operand of dtype `tag` on `engine` (the engine the
    /// format gate is given: v4 only; `None` where the gate does not know it).
    pub fn psum_ok(&self, engine: Option<tpbsim_isa::Engine>, tag: u8) -> bool {
        self.placement.psum
            && !(self.pool_sbuf && engine == Some(tpbsim_isa::Engine::Pool))
            && (!self.placement.write || dtype::is_4byte(tag))
    }
}

/// The rows of a one-source, one-destination op: the source read and the destination written
/// as `dims`-dimensional patterns typed by `tags`, both within the `num` active partitions
/// and, with `pool_sbuf`, kept off PSUM on the Pool engine.
pub const fn src_dst(
    ops: [Operand; 2],
    dims: u8,
    tags: [Tag; 2],
    num: Field,
    pool_sbuf: bool,
) -> [OperandRule; 2] {
    let mut r = [
        OperandRule::read(ops[0], dims, tags[0]).channels(num),
        OperandRule::write(ops[1], dims, tags[1]).channels(num),
    ];
    r[0].pool_sbuf = pool_sbuf;
    r[1].pool_sbuf = pool_sbuf;
    r
}

/// The region pass of operand rows, in order: each descriptor's `tensor{n}d_valid`. Returns
/// the element counts (0 where a count is zero or the arm is not checked), row by row.
#[inline]
pub fn check_regions<S: Sink>(ck: &mut Ck<S>, rows: &[OperandRule]) -> [u64; 4] {
    let mut e = [0u64; 4];
    for (i, r) in rows.iter().enumerate() {
        let tag = r.dtype.on(ck.b);
        let n = addr::tensor_valid(ck, r.op, r.dims, tag, r.placement);
        if let Some(x) = e.get_mut(i) {
            *x = n;
        }
    }
    e
}

/// The partition-window pass of operand rows, in order: every row's
/// `start_addr_active_channels`, then every row's Pool-engine PSUM check.
#[inline]
pub fn check_windows<S: Sink>(ck: &mut Ck<S>, rows: &[OperandRule]) {
    for r in rows {
        if let Some(n) = r.channels {
            addr::start_addr_active_channels(ck, r.op, n);
        }
    }
    for r in rows.iter().filter(|r| r.pool_sbuf) {
        super::formats::pool_no_psum(ck, &[r.op]);
    }
}

/// The rule data of one gate: its field rows (each slice evaluated at one point of the gate's
/// cascade) and its dtype rows.
#[derive(Clone, Copy, Debug)]
pub struct GateTable {
    /// Field rule slices.
    pub fields: &'static [&'static [FieldRule]],
    /// Dtype rows.
    pub dtypes: &'static [&'static [DtypeRule]],
    /// Operand region rows.
    pub operands: &'static [&'static [OperandRule]],
}

impl GateTable {
    /// A gate without rule data.
    pub const EMPTY: GateTable = GateTable {
        fields: &[],
        dtypes: &[],
        operands: &[],
    };

    /// Every field row.
    pub fn rows(&self) -> impl Iterator<Item = &'static FieldRule> + '_ {
        self.fields.iter().flat_map(|s| s.iter())
    }

    /// Every dtype row.
    pub fn dtype_rows(&self) -> impl Iterator<Item = &'static DtypeRule> + '_ {
        self.dtypes.iter().flat_map(|s| s.iter())
    }

    /// Every operand region row.
    pub fn operand_rows(&self) -> impl Iterator<Item = &'static OperandRule> + '_ {
        self.operands.iter().flat_map(|s| s.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::super::formats::testutil::hdr;
    use super::super::rule::{Collect, Gate};
    use super::*;
    use crate::l2::rule::rule;

    rule!(T_RULE, "t_rule", Format, public "test", "test");

    const ROWS: &[FieldRule] = &[
        FieldRule::set(
            &T_RULE,
            Field::new("a", 12, 1),
            ByteSet::of(&[1, 3]),
            "1 or 3",
        ),
        FieldRule::range(
            &T_RULE,
            Field::new("n", 14, 2),
            1,
            300,
            Allowed::Text("1..=300"),
        )
        .only(&[0x41]),
        FieldRule::max(&T_RULE, Field::new("r", 16, 1), 2).from(Gen::V4),
    ];

    /// The start offsets of the fields the rows reject, in order.
    fn run(b: &tpbsim_isa::Bundle, gen: Gen) -> Vec<u8> {
        let mut c = Collect::default();
        check(&mut Ck::new(b, gen, None, Gate::Format, &mut c), ROWS);
        c.failures.iter().map(|f| f.field.start).collect()
    }

    #[test]
    fn rows_check_members_ranges_opcodes_and_generations() {
        let mut b = hdr(0x41);
        b.0[12] = 3;
        b.set_u16(14, 300);
        b.0[16] = 3;
        assert_eq!(run(&b, Gen::V3), Vec::<u8>::new());
        assert_eq!(run(&b, Gen::V4), [16]);
        b.0[12] = 2;
        b.set_u16(14, 301);
        assert_eq!(run(&b, Gen::V3), [12, 14]);
        b.0[0] = 0x42;
        assert_eq!(run(&b, Gen::V3), [12]);
        assert_eq!(ROWS[1].members(Gen::V3).len(), 255);
        assert_eq!(ROWS[0].members(Gen::V3).iter().collect::<Vec<_>>(), [1, 3]);
    }
}
