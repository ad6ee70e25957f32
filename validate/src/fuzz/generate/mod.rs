//! Generators of valid and deliberately broken bundles, driven by the ISA spec.
//!
//! Everything here is deterministic for a given entropy source: the proptest strategies of
//! [`crate::strategies`] (feature `proptest`) feed it proptest's RNG, and `sim fuzz` feeds it a
//! seeded [`SplitMix64`], so a run is reproducible from its seed.
//!
//! * [`valid_bundle`] builds a bundle of one typed layout in one generation. Every field is
//!   drawn from the spec metadata: enum fields from their enum's members in that generation,
//!   dtypes from the `DTYPE` enum, access patterns as SBUF/PSUM addresses of the generation's
//!   geometry with non-zero counts, bitfields with their reserved bits clear, reserved bytes
//!   zero, header `inst_word_len` 0x10 and events from the header-listed wait/update modes.
//!   For the formats that have an L2 format gate, every rule row of the gate gets a legal
//!   value and a [`recipes::Recipe`] then applies the cross-field constraints that gate
//!   documents (docs/l2.md): dtype sets, group/column bounds, quadrant placement, element-count
//!   agreement, the v4 dual-FP8 selector rules. A gated format without an entry in
//!   [`recipes::RECIPES`] gets the default recipe (no cross-field fill). Gated opcodes listed
//!   in [`recipes::EXCLUDED`] are never generated.
//! * [`mutate`] breaks one documented rule of a valid bundle and returns the mutated bundle
//!   with the name of the L2 rule it must now fail ([`Mutation::rule`]).

pub mod mutate;
pub mod recipes;

pub use mutate::{mutate, mutate_kind, Mutation, MutationKind};
pub use recipes::{recipe_for, Recipe, EXCLUDED};

use tpbsim_isa::formats::LAYOUT_META;
use tpbsim_isa::spec::{self, FieldType};
use tpbsim_isa::Geometry;
use tpbsim_isa::LayoutMeta;
use tpbsim_isa::{Bundle, Engine, FormatGate, Gen, INST_WORD_LEN};

use crate::l2::formats::table;
use crate::l2::rule::Field;
use crate::l2::table::{DtypeRule, FieldRule, Values};
use crate::l2::{self};

/// A source of random 64-bit words. Implemented by [`SplitMix64`] and, with the `proptest`
/// feature, by proptest's RNG.
pub trait Entropy {
    /// The next random word.
    fn next_u64(&mut self) -> u64;

    /// Uniform in `0..n` (`n > 0`; 0 when `n == 0`).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            // Multiply-shift: unbiased enough for test-case generation, no loop.
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// One element of a non-empty slice.
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T
    where
        Self: Sized,
    {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// SplitMix64: a tiny, fast, seedable generator (Steele, Lea, Flood 2014).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl Entropy for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A generated bundle with the engine whose stream it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The bundle.
    pub bundle: Bundle,
    /// The engine stream that holds it.
    pub engine: Engine,
}

/// Layouts (with the generations they apply to) of every typed format.
pub fn layouts() -> impl Iterator<Item = (&'static LayoutMeta, Gen)> {
    LAYOUT_META
        .iter()
        .filter(|l| l.format.is_some())
        .flat_map(|l| {
            Gen::ALL
                .into_iter()
                .filter(move |g| l.gens[g.index()])
                .map(move |g| (l, g))
        })
}

/// The layout of spec format `name` in `gen`.
pub fn layout_of(name: &str, gen: Gen) -> Option<&'static LayoutMeta> {
    LAYOUT_META
        .iter()
        .find(|l| l.gens[gen.index()] && l.format.is_some_and(|f| f.name == name))
}

/// Opcodes that decode to `layout` in `gen` ([`LayoutMeta::opcodes`]).
pub fn layout_opcodes(layout: &'static LayoutMeta, gen: Gen) -> Vec<(u8, Option<(u8, u8)>)> {
    layout.opcodes(gen)
}

/// Opcodes of `layout` in `gen` that [`valid_bundle`] generates: every opcode but the
/// [`EXCLUDED`] ones (a gated opcode is built with its format's recipe, the default one when
/// [`recipes::RECIPES`] has none).
pub fn generated_opcodes(layout: &'static LayoutMeta, gen: Gen) -> Vec<(u8, Option<(u8, u8)>)> {
    layout_opcodes(layout, gen)
        .into_iter()
        .filter(|(op, _)| !recipes::is_excluded(gen, *op))
        .collect()
}

/// The opcodes (with their generation) that `r` builds: the L2 generations where the spec binds
/// an opcode of its format to a gate.
pub fn recipe_opcodes(r: &recipes::Recipe) -> Vec<(Gen, u8)> {
    l2::GENS
        .iter()
        .flat_map(|&g| {
            spec::opcodes()
                .iter()
                .filter(move |o| o.format == r.format && recipe_for(g, o.code).is_some())
                .map(move |o| (g, o.code))
        })
        .collect()
}

/// The L2 rule rows of `opcode`'s format gate that apply on `gen` (none off the L2
/// generations): what the generator draws legal values from and the mutations break.
pub fn rule_rows(gen: Gen, opcode: u8) -> Vec<&'static FieldRule> {
    match FormatGate::of(gen, opcode) {
        Some(g) if l2::GENS.contains(&gen) => {
            table(g).rows().filter(|r| r.applies(gen, opcode)).collect()
        }
        _ => Vec::new(),
    }
}

/// The L2 dtype rows of `opcode`'s format gate on `gen`.
pub fn dtype_rows(gen: Gen, opcode: u8) -> Vec<&'static DtypeRule> {
    match FormatGate::of(gen, opcode) {
        Some(g) if l2::GENS.contains(&gen) => table(g)
            .dtype_rows()
            .filter(|r| r.ops.has(opcode))
            .collect(),
        _ => Vec::new(),
    }
}

/// The largest value a field of `len` bytes holds.
pub fn field_max(len: u8) -> u64 {
    if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    }
}

/// Write `v` into `f` of `b` (little-endian, the field's width).
pub fn write_field(b: &mut Bundle, f: Field, v: u64) {
    for i in 0..f.len as usize {
        b.0[f.start as usize + i] = (v >> (8 * i)) as u8;
    }
}

/// Give every rule row of the bundle's gate a legal value: a member of its set (drawn from the
/// set's members in ascending order, so the order the set was written in does not matter) or a
/// value of its range. A row on a byte that selects the layout (EXTENDED_INST's sub-opcode)
/// keeps the selector the layout needs.
fn apply_rows(rng: &mut impl Entropy, gen: Gen, b: &mut Bundle) {
    let layout = |b: &Bundle| tpbsim_isa::decode(b, gen).map(|i| i.meta().rust_name).ok();
    let want = layout(b);
    for r in rule_rows(gen, b.0[0]) {
        let before = *b;
        let v = match r.values {
            Values::Range(lo, hi) => rng.range(lo, hi.min(field_max(r.field.len))),
            Values::Set(_) | Values::PerGen(_) => {
                let m: Vec<u8> = r.members(gen).iter().collect();
                if m.is_empty() {
                    continue;
                }
                rng.pick(&m) as u64
            }
        };
        write_field(b, r.field, v);
        if layout(b) != want {
            *b = before;
        }
    }
}

/// Engines whose stream may hold `opcode` on `gen` (the spec's engine classes plus its
/// per-generation engine legality rows, `OpcodeRow::legal_on`).
pub fn engines_for(gen: Gen, opcode: u8) -> Vec<Engine> {
    match spec::opcode(opcode) {
        Some(row) => Engine::ALL
            .into_iter()
            .filter(|e| row.legal_on(*e, gen))
            .collect(),
        None => Vec::new(),
    }
}

/// Element size in bytes of a DTYPE code (the spec's `bits`, at least 1); `None` for codes
/// without a storage width.
pub fn dtype_bytes(tag: u8) -> Option<u32> {
    let v = spec::enum_def("DTYPE")?.value(tag)?;
    (v.bits > 0).then(|| (v.bits as u32).div_ceil(8))
}

/// Members of spec enum `name` in `gen`, without the members the spec marks as inferred
/// (`project-defined` provenance): generators stay on the header-listed values.
pub fn enum_members(name: &str, gen: Gen) -> Vec<u8> {
    match spec::enum_def(name) {
        Some(e) => e
            .values_in(gen)
            .filter(|v| v.prov != "project-defined")
            .map(|v| v.value)
            .collect(),
        None => Vec::new(),
    }
}

/// Whether `raw` is any member of spec enum `name` in any generation (inferred ones included).
pub fn enum_knows(name: &str, raw: u8) -> bool {
    spec::enum_def(name).is_some_and(|e| e.value(raw).is_some())
}

/// Where an address is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The state buffer.
    Sbuf,
    /// The PSUM window.
    Psum,
}

/// An immediate address in `region` of `gen`, aligned to `align` bytes, whose start partition
/// lies in `parts` (clamped to the region's partitions).
pub fn address(
    rng: &mut impl Entropy,
    gen: Gen,
    region: Region,
    align: u32,
    parts: std::ops::Range<u32>,
) -> u32 {
    let g = Geometry::of(gen);
    let align = align.max(1);
    let lo = parts.start.min(g.sbuf_partitions - 1);
    let hi = parts.end.clamp(lo + 1, g.sbuf_partitions);
    let p = rng.range(lo as u64, hi as u64 - 1) as u32;
    // Keep the offset in the first 4 KiB of the partition: every generation has that much.
    let off = rng.below((0x1000 / align) as u64) as u32 * align;
    match region {
        Region::Sbuf => p * g.sbuf_partition_stride + off,
        Region::Psum => g.psum_base + p * g.psum_partition_stride + off,
    }
}

/// Start partition of an immediate address of `gen`.
pub fn partition_of(gen: Gen, addr: u32) -> u32 {
    let g = Geometry::of(gen);
    let a = addr & g.partition_addr_mask;
    if a >= g.psum_base && a - g.psum_base < g.psum_partition_stride * g.sbuf_partitions {
        (a - g.psum_base) / g.psum_partition_stride
    } else {
        a / g.sbuf_partition_stride
    }
}

/// Write an `n`-dim access pattern (TENSORnD / MEM_PATTERNnD) at `off`.
pub fn write_pattern(b: &mut Bundle, off: usize, n: usize, addr: u32, steps: &[i16], nums: &[u16]) {
    b.set_u32(off, addr);
    for i in 0..n {
        b.set_u16(off + 4 + 2 * i, steps[i] as u16);
        b.set_u16(off + 4 + 2 * n + 2 * i, nums[i]);
    }
}

/// Random element counts (1..=8 each) for an `n`-dim pattern.
pub fn random_nums(rng: &mut impl Entropy, n: usize) -> [u16; 4] {
    let mut v = [1u16; 4];
    for x in v.iter_mut().take(n) {
        *x = rng.range(1, 8) as u16;
    }
    v
}

/// Random strides for an `n`-dim pattern.
pub fn random_steps(rng: &mut impl Entropy, n: usize) -> [i16; 4] {
    let mut v = [0i16; 4];
    for x in v.iter_mut().take(n) {
        *x = rng.range(0, 256) as i16 - 64;
    }
    v
}

/// A finite f32 bit pattern (never NaN or Inf).
pub fn finite_f32(rng: &mut impl Entropy) -> u32 {
    let x = rng.next_u64() as u32;
    if x & 0x7F80_0000 == 0x7F80_0000 {
        x & !0x0080_0000
    } else {
        x
    }
}

/// Fill one field of a typed layout with a spec-derived value (see the module docs).
fn fill_field(
    rng: &mut impl Entropy,
    gen: Gen,
    b: &mut Bundle,
    name: &str,
    off: usize,
    ty: FieldType,
) {
    let _ = name;
    match ty {
        FieldType::U8 => b.0[off] = rng.next_u64() as u8,
        FieldType::U16 | FieldType::I16 => b.set_u16(off, rng.next_u64() as u16),
        FieldType::U32 | FieldType::I32 => b.set_u32(off, rng.next_u64() as u32),
        FieldType::U64 => b.set_u64(off, rng.next_u64()),
        FieldType::F32 => b.set_u32(off, finite_f32(rng)),
        FieldType::Enum(e) => {
            let m = enum_members(e, gen);
            b.0[off] = if m.is_empty() { 0 } else { rng.pick(&m) };
        }
        FieldType::DtypePair => {
            let m: Vec<u8> = enum_members("DTYPE", gen)
                .into_iter()
                .filter(|&d| d != 0 && d <= 0xF)
                .collect();
            b.0[off] = rng.pick(&m) | rng.pick(&m) << 4;
        }
        FieldType::Bits(bf) => b.0[off] = bitfield_value(rng, gen, bf),
        FieldType::Addr4 => b.set_u32(off, address(rng, gen, Region::Sbuf, 8, 0..128)),
        FieldType::Tensor(n) | FieldType::MemPattern(n) => {
            let n = n as usize;
            let addr = address(rng, gen, Region::Sbuf, 8, 0..128);
            write_pattern(b, off, n, addr, &random_steps(rng, n), &random_nums(rng, n));
        }
        FieldType::EventsExt => {
            let (w, u, wv, uv) = events(rng, gen);
            b.0[off] = w;
            b.0[off + 1] = rng.next_u64() as u8;
            b.0[off + 2] = u;
            b.0[off + 3] = rng.next_u64() as u8;
            b.set_u32(off + 4, wv);
            b.set_u32(off + 8, uv);
        }
        // Composite descriptors without placement rules of their own in this generator, and
        // plain arrays: arbitrary bytes.
        FieldType::MxMemPattern1d
        | FieldType::MxIndirect16b
        | FieldType::Addr8
        | FieldType::I32Array(_)
        | FieldType::U16Array(_)
        | FieldType::Str(_)
        | FieldType::Opaque(_) => {
            for i in 0..ty.width() as usize {
                b.0[off + i] = rng.next_u64() as u8;
            }
        }
    }
}

/// A bitfield byte: each sub-field drawn from the enum its note names (`PE_SEED_MODE`) or
/// arbitrary within its width; bits no sub-field covers stay clear.
pub fn bitfield_value(rng: &mut impl Entropy, gen: Gen, name: &str) -> u8 {
    let Some(def) = spec::bitfield(name) else {
        return 0;
    };
    let mut v = 0u8;
    for bit in def.bits {
        let mask = ((1u16 << bit.width) - 1) as u8;
        let m = enum_members(bit.note, gen);
        let x = if m.is_empty() {
            rng.next_u64() as u8 & mask
        } else {
            rng.pick(&m) & mask
        };
        v |= x << bit.lsb;
    }
    v
}

/// Wait mode, update mode and the value words they read: header-listed modes; a
/// register-family mode names a register id below the generation's register count.
fn events(rng: &mut impl Entropy, gen: Gen) -> (u8, u8, u32, u32) {
    let w = rng.pick(&enum_members("WAIT_MODE", gen));
    let u = rng.pick(&enum_members("UPDATE_MODE", gen));
    let regs = Geometry::of(gen).address_registers as u64;
    let mut val = || {
        if rng.chance(1, 2) {
            rng.below(regs) as u32
        } else {
            rng.next_u64() as u32
        }
    };
    let (mut wv, mut uv) = (val(), val());
    if w & 0x80 != 0 {
        wv = rng.below(regs) as u32;
    }
    if u & 0x80 != 0 {
        uv = rng.below(regs) as u32;
    }
    (w, u, wv, uv)
}

/// A bundle of `layout` in `gen` with every field spec-derived and every reserved byte zero,
/// before any L2 recipe; the opcode is drawn from `opcodes`.
fn base_bundle(
    rng: &mut impl Entropy,
    layout: &'static LayoutMeta,
    gen: Gen,
    opcodes: &[(u8, Option<(u8, u8)>)],
) -> Bundle {
    let (op, sub) = rng.pick(opcodes);
    let mut b = Bundle::ZERO;
    for f in layout.fields.iter().filter(|f| f.offset >= 12) {
        fill_field(rng, gen, &mut b, f.name, f.offset as usize, f.ty);
    }
    b.0[0] = op;
    b.0[1] = INST_WORD_LEN;
    let (w, u, wv, _) = events(rng, gen);
    b.0[4] = w;
    b.0[5] = rng.next_u64() as u8;
    b.0[6] = u;
    b.0[7] = rng.next_u64() as u8;
    // One shared value word: a register id when either mode is a register form.
    b.set_u32(
        8,
        if u & 0x80 != 0 {
            rng.below(Geometry::of(gen).address_registers as u64) as u32
        } else {
            wv
        },
    );
    if let Some((off, v)) = sub {
        b.0[off as usize] = v;
    }
    for &(s, e) in layout.reserved {
        b.0[s as usize..e as usize].fill(0);
    }
    b
}

/// A valid bundle of `layout` in `gen` (see the module docs), with an engine that executes its
/// opcode. `None` when the layout has no generated opcode in `gen`.
pub fn valid_bundle<R: Entropy>(
    rng: &mut R,
    layout: &'static LayoutMeta,
    gen: Gen,
) -> Option<Generated> {
    let ops = generated_opcodes(layout, gen);
    if ops.is_empty() {
        return None;
    }
    // A layout that shares its opcode with sub-selected formats (the selector byte is an
    // ordinary field of this one) may draw a selector value that leads elsewhere: redraw.
    for _ in 0..64 {
        let mut b = base_bundle(rng, layout, gen, &ops);
        if tpbsim_isa::decode(&b, gen).map(|i| i.meta().rust_name) != Ok(layout.rust_name) {
            continue;
        }
        let engines = recipes::engines(gen, b.0[0]);
        if engines.is_empty() {
            return None;
        }
        let engine = rng.pick(&engines);
        if let Some(r) = recipe_for(gen, b.0[0]) {
            apply_rows(rng, gen, &mut b);
            (r.fill)(&mut recipes::Ctx {
                rng: recipes::DynEntropy(rng),
                gen,
                engine,
                b: &mut b,
            });
        }
        return Some(Generated { bundle: b, engine });
    }
    None
}

/// A valid bundle of any generated layout of `gen`.
pub fn any_valid_bundle<R: Entropy>(rng: &mut R, gen: Gen) -> Option<Generated> {
    let ls: Vec<&'static LayoutMeta> = layouts()
        .filter(|(l, g)| *g == gen && !generated_opcodes(l, gen).is_empty())
        .map(|(l, _)| l)
        .collect();
    if ls.is_empty() {
        return None;
    }
    let l = rng.pick(&ls);
    valid_bundle(rng, l, gen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::decode;

    #[test]
    fn valid_bundles_decode_to_their_layout_with_reserved_zero() {
        let mut rng = SplitMix64(7);
        let mut n = 0;
        for (layout, gen) in layouts() {
            for _ in 0..8 {
                let Some(g) = valid_bundle(&mut rng, layout, gen) else {
                    continue;
                };
                n += 1;
                let i = decode(&g.bundle, gen).expect("generated opcode decodes");
                assert_eq!(
                    i.meta().rust_name,
                    layout.rust_name,
                    "{}",
                    g.bundle.to_hex()
                );
                assert!(!layout.has_nonzero_reserved(&g.bundle));
                assert_eq!(g.bundle.0[1], INST_WORD_LEN);
                assert!(recipes::engines(gen, g.bundle.0[0]).contains(&g.engine));
            }
        }
        assert!(n > 400, "{n}");
    }

    #[test]
    fn deterministic_per_seed() {
        let l = layout_of("Matmul", Gen::V4).expect("Matmul on v4");
        let a = valid_bundle(&mut SplitMix64(42), l, Gen::V4);
        let b = valid_bundle(&mut SplitMix64(42), l, Gen::V4);
        assert_eq!(a, b);
        assert_ne!(a, valid_bundle(&mut SplitMix64(43), l, Gen::V4));
    }

    #[test]
    fn addresses_stay_in_their_region_and_partition_range() {
        let mut rng = SplitMix64(1);
        for gen in [Gen::V2, Gen::V3, Gen::V4] {
            let g = Geometry::of(gen);
            for _ in 0..200 {
                let a = address(&mut rng, gen, Region::Sbuf, 4, 32..64);
                assert_eq!(a % 4, 0);
                assert!(a < g.psum_base);
                assert!((32..64).contains(&partition_of(gen, a)));
                let p = address(&mut rng, gen, Region::Psum, 4, 96..128);
                assert!(p >= g.psum_base && p - g.psum_base < 0x40_0000);
                assert!((96..128).contains(&partition_of(gen, p)));
            }
        }
    }
}
