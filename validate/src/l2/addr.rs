//! ADDR4 placement and access-pattern geometry: `tensor_start_addr_valid`,
//! `addr_aligned_dtype`, `tensor{1,2,3,4}d_valid`, `addresses_in_same_sbuf_quadrant`,
//! `tt_valid_partitions`, `start_addr_active_channels` and `mxmem1d_valid`.
//!
//! Sources: C isa/addr4.md (decoder bodies of `tensor_start_addr_valid` /
//! `addr_aligned_dtype`, v2/v3/v4), G dma/sbuf-psum-banks.md (header validity pseudo-code),
//! C isa/tensor-descriptors.md (`tensor2d_valid` / `tensor3d_valid` bodies),
//! C isa/pe-matmul-encoding.md (`mxmem1d_valid`).

use tpbsim_isa::{Gen, Geometry};

use super::dtype;
use super::enums::NUM_ADDR_REGISTERS;
use super::rule::{rule, Allowed, Ck, Field, Sink};

/// The geometry of the generations with an L2 validator (v2..v4 share the address map).
const L2_GEOMETRY: Geometry = Geometry::at(Gen::V4);

/// Partition address mask (`TPB_PARTITION_ADDR_MASK`).
pub const ADDR_MASK: u32 = L2_GEOMETRY.partition_addr_mask;
/// PSUM window base (`PSUM_BUF_OFFSET`).
pub const PSUM_BASE: u32 = L2_GEOMETRY.psum_base;
/// PSUM window span minus one (`PSUM_BUF_SZ - 1`).
pub const PSUM_SPAN: u32 = L2_GEOMETRY.psum_buf_size - 1;

/// ADDR4 byte-3 marker: address from a register.
pub const MARKER_ADDR_REG: u8 = 0x80;
/// ADDR4 byte-3 marker bits for an indirect (index-tensor) pattern: `(b3 & 0x60) == 0x20`.
pub const MARKER_INDIRECT: u8 = 0x20;

/// True when the address word names a register (bit 31).
#[inline]
pub const fn is_register(word: u32) -> bool {
    word & 0x8000_0000 != 0
}

/// True when the address word is the indirect arm (`(b3 & 0x60) == 0x20`).
#[inline]
pub const fn is_indirect(word: u32) -> bool {
    (word >> 24) as u8 & 0x60 == MARKER_INDIRECT
}

/// PSUM iff `(addr - 0x2000000) <= 0x3FFFFF` (unsigned) on the 29-bit address.
#[inline]
pub const fn in_psum(word: u32) -> bool {
    (word & ADDR_MASK).wrapping_sub(PSUM_BASE) <= PSUM_SPAN
}

/// SBUF iff the region bits 25..28 of the 29-bit address are clear.
#[inline]
pub const fn in_sbuf(word: u32) -> bool {
    word & 0x1E00_0000 == 0
}

/// SBUF partition stride as an address shift (256 KiB on v2–v4, 1 MiB on v5).
#[inline]
pub const fn sbuf_partition_shift(gen: Gen) -> u32 {
    SBUF_PARTITION_SHIFT[gen.index()]
}

/// [`sbuf_partition_shift`] per generation, evaluated once from the spec geometry.
const SBUF_PARTITION_SHIFT: [u32; 4] = [
    Geometry::at(Gen::V2).sbuf_partition_shift(),
    Geometry::at(Gen::V3).sbuf_partition_shift(),
    Geometry::at(Gen::V4).sbuf_partition_shift(),
    Geometry::at(Gen::V5).sbuf_partition_shift(),
];

/// PSUM partition stride as an address shift (32 KiB).
pub const PSUM_PARTITION_SHIFT: u32 = L2_GEOMETRY.psum_partition_shift();

/// Start partition of an immediate address (SBUF or PSUM).
#[inline]
pub const fn partition(gen: Gen, word: u32) -> u32 {
    let a = word & ADDR_MASK;
    if in_psum(word) {
        (a - PSUM_BASE) >> PSUM_PARTITION_SHIFT
    } else {
        a >> sbuf_partition_shift(gen)
    }
}

/// `addr_aligned_dtype`: the start address must be aligned to the element size of the wire
/// tag: {2,3,13,14,15} (v4 adds 16) → 1 B, {4..7} → 2 B, {8..11} → 4 B, {1,12} → 8 B; any
/// other tag has no defined alignment and fails.
pub const fn addr_aligned_dtype(gen: Gen, addr: u32, tag: u8) -> bool {
    match tag {
        0x02 | 0x03 | 0x0D | 0x0E | 0x0F => true,
        0x10 => !matches!(gen, Gen::V2 | Gen::V3),
        0x04..=0x07 => addr & 1 == 0,
        0x08..=0x0B => addr & 3 == 0,
        0x01 | 0x0C => addr & 7 == 0,
        _ => false,
    }
}

/// `addresses_in_same_sbuf_quadrant`: both immediate SBUF addresses in the same 32-partition
/// quadrant.
pub const fn addresses_in_same_sbuf_quadrant(gen: Gen, a: u32, b: u32) -> bool {
    let sh = sbuf_partition_shift(gen) + 5;
    in_sbuf(a) && in_sbuf(b) && ((a & ADDR_MASK) >> sh) == ((b & ADDR_MASK) >> sh)
}

/// Where an operand may live and whether the op writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// `AllowedInPSUM`.
    pub psum: bool,
    /// `AllowedInSBUF`.
    pub sbuf: bool,
    /// `WriteTensor`: a PSUM write must use a 4-byte dtype.
    pub write: bool,
}

impl Placement {
    /// Read from SBUF or PSUM.
    pub const READ_ANY: Placement = Placement {
        psum: true,
        sbuf: true,
        write: false,
    };
    /// Read from SBUF only.
    pub const READ_SBUF: Placement = Placement {
        psum: false,
        sbuf: true,
        write: false,
    };
    /// Write to SBUF or PSUM.
    pub const WRITE_ANY: Placement = Placement {
        psum: true,
        sbuf: true,
        write: true,
    };
    /// Write to PSUM only.
    pub const WRITE_PSUM: Placement = Placement {
        psum: true,
        sbuf: false,
        write: true,
    };
    /// Write to SBUF only.
    pub const WRITE_SBUF: Placement = Placement {
        psum: false,
        sbuf: true,
        write: true,
    };
}

rule!(TENSOR_START_ADDR_VALID, "tensor_start_addr_valid", Format,
    public "C isa/addr4.md (decoder v2/v3/v4); G dma/sbuf-psum-banks.md §2.2",
    "an ADDR4 is either a register word (bit 31, bits 8..23 zero, regid < 0x40) or an immediate inside SBUF [0, 0x2000000) or the PSUM window [0x2000000, 0x2400000)");
rule!(ADDR_ALIGNED_DTYPE, "addr_aligned_dtype", Format,
    public "C isa/addr4.md §Alignment",
    "the start address is aligned to the element size of the operand's wire dtype");
rule!(ALLOWED_IN_PSUM, "tensor_start_addr_valid.allowed_in_psum", Format,
    public "G dma/sbuf-psum-banks.md §2.2 (AllowedInPSUM)",
    "the operand may not live in PSUM");
rule!(ALLOWED_IN_SBUF, "tensor_start_addr_valid.allowed_in_sbuf", Format,
    public "G dma/sbuf-psum-banks.md §2.2 (AllowedInSBUF)",
    "the operand may not live in SBUF");
rule!(PSUM_WRITE_DTYPE, "tensor_start_addr_valid.psum_write_dtype", Format,
    public "C isa/addr4.md (PSUM-dtype helper {8,9,10,11}); G dma/sbuf-psum-banks.md §2.2",
    "a PSUM write uses a 4-byte dtype (INT32, UINT32, FP32, FP32R)");

/// `tensor_start_addr_valid` for the ADDR4 word in `f` with the operand's wire `tag`.
/// Register words bypass placement. Returns true when it held.
pub fn tensor_start_addr_valid<S: Sink>(ck: &mut Ck<S>, f: Field, tag: u8, p: Placement) -> bool {
    let word = if f.len == 4 {
        ck.u32_at(f.start as usize)
    } else {
        ck.get(f) as u32
    };
    if is_register(word) {
        let ok = word & 0x00FF_FF00 == 0 && (word & 0xFF) < NUM_ADDR_REGISTERS;
        ck.check(
            ok,
            &TENSOR_START_ADDR_VALID,
            f,
            Allowed::Text("register form 0x80000000 | regid, regid < 0x40, bits 8..23 zero"),
        );
        return ok;
    }
    let a = word & ADDR_MASK;
    let mut ok = addr_aligned_dtype(ck.gen, a, tag);
    // A tag without a defined alignment is reported once, by the dtype rule of the gate.
    if !ok && addr_aligned_dtype(ck.gen, 0, tag) {
        ck.fail(
            &ADDR_ALIGNED_DTYPE,
            f,
            a as u64,
            Allowed::Text(align_text(ck.gen, tag)),
        );
    }
    let psum = in_psum(word);
    let sbuf = in_sbuf(word);
    if !psum && !sbuf {
        ck.fail(
            &TENSOR_START_ADDR_VALID,
            f,
            a as u64,
            Allowed::Text("SBUF [0, 0x2000000) or PSUM [0x2000000, 0x2400000)"),
        );
        return false;
    }
    if psum && !p.psum {
        ck.fail(
            &ALLOWED_IN_PSUM,
            f,
            a as u64,
            Allowed::Text("an SBUF address (below 0x2000000)"),
        );
        ok = false;
    }
    if sbuf && !p.sbuf {
        ck.fail(
            &ALLOWED_IN_SBUF,
            f,
            a as u64,
            Allowed::Text("a PSUM address [0x2000000, 0x2400000)"),
        );
        ok = false;
    }
    if psum && p.write && !dtype::is_4byte(tag) {
        ck.fail(
            &PSUM_WRITE_DTYPE,
            f,
            a as u64,
            Allowed::Text(psum_write_text(tag)),
        );
        ok = false;
    }
    ok
}

fn align_text(gen: Gen, tag: u8) -> &'static str {
    match dtype::size(tag) {
        Some(2) => "2-byte aligned for a 2-byte dtype",
        Some(4) => "4-byte aligned for a 4-byte dtype",
        Some(8) => "8-byte aligned for an 8-byte dtype",
        _ if tag == dtype::FP4_EXP2 && matches!(gen, Gen::V2 | Gen::V3) => {
            "no alignment is defined for FP4_EXP2 before v4"
        }
        _ => "a dtype with a defined element size",
    }
}

fn psum_write_text(tag: u8) -> &'static str {
    match dtype::size(tag) {
        Some(2) => "a 4-byte dtype; this PSUM write uses a 2-byte dtype",
        Some(1) => "a 4-byte dtype; this PSUM write uses a 1-byte dtype",
        Some(8) => "a 4-byte dtype; this PSUM write uses an 8-byte dtype",
        _ => "a 4-byte dtype (INT32, UINT32, FP32, FP32R)",
    }
}

/// An access-pattern operand: its name and bundle offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// Operand name (`src`, `dst`, `src0`).
    pub name: &'static str,
    /// Byte offset of the descriptor in the bundle.
    pub off: u8,
}

impl Operand {
    /// Operand `name` at `off`.
    pub const fn new(name: &'static str, off: u8) -> Operand {
        Operand { name, off }
    }
    /// The descriptor operand a spec locator names, at its offset in the L2 generations.
    pub const fn at(loc: tpbsim_isa::spec::FieldLoc) -> Operand {
        Operand {
            name: loc.name,
            off: loc.l2_offset(),
        }
    }
    /// The descriptor's ADDR4 start word.
    pub const fn addr(&self) -> Field {
        Field::sub(self.name, "start_addr", self.off, 4)
    }
    /// Marker byte (byte 3 of the ADDR4).
    pub const fn marker(&self) -> Field {
        Field::sub(self.name, "start_addr.marker", self.off + 3, 1)
    }
    /// Stride word `i` of an `n`-dim descriptor.
    pub const fn stride(&self, i: u8) -> Field {
        Field::sub(self.name, STRIDE_NAMES[i as usize], self.off + 4 + 2 * i, 2)
    }
    /// Count word `i` of an `n`-dim descriptor.
    pub const fn num(&self, n: u8, i: u8) -> Field {
        Field::sub(
            self.name,
            NUM_NAMES[i as usize],
            self.off + 4 + 2 * n + 2 * i,
            2,
        )
    }
}

const STRIDE_NAMES: [&str; 4] = [
    "step_elem[0]",
    "step_elem[1]",
    "step_elem[2]",
    "step_elem[3]",
];
const NUM_NAMES: [&str; 4] = ["num_elem[0]", "num_elem[1]", "num_elem[2]", "num_elem[3]"];

rule!(TENSOR_VALID_NUM, "tensorNd_valid.num_elem", Format,
    public "C isa/tensor-descriptors.md (tensor2d_valid / tensor3d_valid setne chain)",
    "every count word of an access pattern is non-zero (spare dims are {1, 1})");
rule!(TENSOR_VALID_SB_MARKER, "tensorNd_valid.sb_marker", Format,
    public "C isa/tensor-descriptors.md (tensor3d_valid: (b3 & 0x70) == 0x40 rejected in the SB path)",
    "the SBUF path rejects the SHAPE_REG marker combination (b3 & 0x70) == 0x40");
rule!(TENSOR_VALID_INDIRECT, "tensorNd_valid.indirect", Format,
    public "C isa/tensor-descriptors.md (tensor3d_valid 0x20 arm); ADDR4 0x20 = INDIRECT per G header (isa-facts §10 #6)",
    "the indirect arm (marker 0x20): the word at +4 has no marker bits (byte 7 & 0xE0 == 0) and the word at +8 is non-zero");
rule!(TENSOR4D_INDIRECT, "tensor4d_valid.indirect", Format,
    project "the INDIRECT20B arm layout is not public; reported as not checked",
    "the 4D indirect arm (marker 0x20) is not checked");

/// `tensor{1,2,3,4}d_valid` for an `n`-dim descriptor at `op` with wire `tag` and placement.
/// Returns the element count (product of the counts; 0 when any count is zero).
pub fn tensor_valid<S: Sink>(ck: &mut Ck<S>, op: Operand, n: u8, tag: u8, p: Placement) -> u64 {
    let word = ck.u32_at(op.off as usize);
    if is_indirect(word) && !is_register(word) {
        if n == 4 {
            ck.not_checked(
                &TENSOR4D_INDIRECT,
                op.addr(),
                Allowed::Text("INDIRECT20B arm"),
            );
            return 0;
        }
        tensor_start_addr_valid(ck, op.addr(), tag, p);
        if n == 3 {
            let f = op.stride(2);
            ck.check(
                ck.get(f) != 0,
                &TENSOR_VALID_INDIRECT,
                f,
                Allowed::Text("non-zero"),
            );
        }
        let data = Field::sub(op.name, "indirect.data_addr", op.off + 4, 4);
        let hi = ck.u8(op.off as usize + 7);
        ck.check(
            hi & 0xE0 == 0,
            &TENSOR_VALID_INDIRECT,
            Field::sub(op.name, "indirect.data_addr.marker", op.off + 7, 1),
            Allowed::Text("no marker bits (byte & 0xE0 == 0)"),
        );
        tensor_start_addr_valid(ck, data, tag, p);
        return 0;
    }
    tensor_start_addr_valid(ck, op.addr(), tag, p);
    if !is_register(word) {
        let b3 = (word >> 24) as u8;
        ck.check(
            b3 & 0x70 != 0x40,
            &TENSOR_VALID_SB_MARKER,
            op.marker(),
            Allowed::Text("(marker & 0x70) != 0x40"),
        );
    }
    let mut count = 1u64;
    let counts = op.off as usize + 4 + 2 * n as usize;
    for i in 0..n {
        let v = ck.u16_at(counts + 2 * i as usize) as u64;
        if v == 0 {
            ck.fail(&TENSOR_VALID_NUM, op.num(n, i), 0, Allowed::Min(1));
        }
        count *= v;
    }
    count
}

rule!(START_ADDR_ACTIVE_CHANNELS, "start_addr_active_channels", Format,
    project "the active-channel window body is not public; tpbsim checks 1 <= num_active_partitions and start partition + num_active_partitions <= 128",
    "the active partitions fit the 128-partition array from the operand's start partition");

/// `start_addr_active_channels`: `num` partitions starting at the operand's partition fit
/// in 128. Register addresses are not checked.
pub fn start_addr_active_channels<S: Sink>(ck: &mut Ck<S>, op: Operand, num: Field) {
    let n = ck.get(num) as u32;
    let word = ck.u32_at(op.off as usize);
    if n == 0 || n > 128 {
        ck.fail(
            &START_ADDR_ACTIVE_CHANNELS,
            num,
            n as u64,
            Allowed::Text("1..=128 partitions"),
        );
        return;
    }
    if is_register(word) || !(in_sbuf(word) || in_psum(word)) {
        return;
    }
    let p = partition(ck.gen, word);
    if p + n > 128 {
        ck.fail(
            &START_ADDR_ACTIVE_CHANNELS,
            num,
            n as u64,
            Allowed::Max((128 - p.min(128)) as u64),
        );
    }
}

rule!(TT_VALID_PARTITIONS, "tt_valid_partitions", Format,
    public "G dma/sbuf-psum-banks.md §2.2; isa-facts §3.1",
    "two source operands: {PSUM, SBUF}, {SBUF, PSUM} or two SBUF operands in the same quadrant; register operands bypass");

/// `tt_valid_partitions` over two operands' start words.
pub fn tt_valid_partitions<S: Sink>(ck: &mut Ck<S>, a: Operand, b: Operand) {
    let x = ck.u32_at(a.off as usize);
    let y = ck.u32_at(b.off as usize);
    if is_register(x) || is_register(y) {
        return;
    }
    let ok = (in_psum(x) && in_sbuf(y))
        || (in_sbuf(x) && in_psum(y))
        || (in_sbuf(x) && in_sbuf(y) && addresses_in_same_sbuf_quadrant(ck.gen, x, y));
    if !ok {
        let why = if in_psum(x) && in_psum(y) {
            "at most one PSUM operand; both sources are in PSUM"
        } else {
            "two SBUF sources in the same 32-partition quadrant"
        };
        ck.fail(&TT_VALID_PARTITIONS, b.addr(), y as u64, Allowed::Text(why));
    }
}

rule!(MXMEM1D_VALID, "mxmem1d_valid", Format,
    public "C isa/pe-matmul-encoding.md (mxmem1d_valid agrees with assignAccessForMX); C isa/mxmem-pattern1d.md",
    "MXMEM_PATTERN1D: data ADDR4 valid as UINT32 (UINT16 when the dtype argument is FP4_EXP2), scale ADDR4 in SBUF valid as UINT8, K != 0, step sign 0x01 or 0xFF, scale partition with low 2 bits clear and <= 0x0F");
/// The sub-fields of an MXMEM_PATTERN1D descriptor: the direct arm (data and scale words, K,
/// step sign, scale partition) and, behind a 4-byte index word, the indirect arm. Read by
/// [`mxmem1d_valid`] and written by the fuzz generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MxPattern(pub Operand);

impl MxPattern {
    /// The descriptor a spec locator names, at its offset in the L2 generations.
    pub const fn at(loc: tpbsim_isa::spec::FieldLoc) -> MxPattern {
        MxPattern(Operand::at(loc))
    }
    const fn f(&self, sub: &'static str, off: u8, len: u8) -> Field {
        Field::sub(self.0.name, sub, self.0.off + off, len)
    }
    /// Data address word.
    pub const fn data(&self) -> Field {
        self.f("data_addr", 0, 4)
    }
    /// Scale address word.
    pub const fn scale(&self) -> Field {
        self.f("scale_addr", 4, 4)
    }
    /// K (element count).
    pub const fn k(&self) -> Field {
        self.f("k_elems", 8, 2)
    }
    /// Step sign byte (direct arm only).
    pub const fn step_sign(&self) -> Field {
        self.f("step_sign", 0xA, 1)
    }
    /// Scale partition byte.
    pub const fn scale_partition(&self) -> Field {
        self.f("scale_partition", 0xB, 1)
    }
    /// The index word of the indirect arm (where the direct arm's data word sits).
    pub const fn indices(&self) -> Field {
        self.f("indices_addr", 0, 4)
    }
    /// The indirect arm: the direct arm's fields shifted past the 4-byte index word (data +4,
    /// scale +8, K +0xC, scale partition +0xF; it has no step sign).
    pub const fn indirect(&self) -> MxPattern {
        MxPattern(Operand {
            name: self.0.name,
            off: self.0.off + 4,
        })
    }
}

/// `mxmem1d_valid` for an MX descriptor at `op` whose descriptor dtype argument is `dt`;
/// `data` is the placement of the data tensor. The MXINDIRECT16B arm (marker 0x20 on the
/// first word) is checked with the same rules at its shifted offsets (indices +0, data +4,
/// scale +8, K +0xC, scale partition +0xF); its index tensor is checked for placement only
/// (project-defined: the index dtype is not public).
pub fn mxmem1d_valid<S: Sink>(ck: &mut Ck<S>, op: Operand, dt: u8, data: Placement) {
    let word = ck.get(op.addr()) as u32;
    let data_tag = if dt == dtype::FP4_EXP2 {
        dtype::UINT16
    } else {
        dtype::UINT32
    };
    let d = MxPattern(op);
    let (data_f, scale_f, k_f, part_f, step_f) = if is_indirect(word) && !is_register(word) {
        // Index tensor: placement and register form only (alignment 1 via UINT8).
        tensor_start_addr_valid(ck, d.indices(), dtype::UINT8, Placement::READ_ANY);
        let i = d.indirect();
        (i.data(), i.scale(), i.k(), i.scale_partition(), None)
    } else {
        (
            d.data(),
            d.scale(),
            d.k(),
            d.scale_partition(),
            Some(d.step_sign()),
        )
    };
    tensor_start_addr_valid(ck, data_f, data_tag, data);
    tensor_start_addr_valid(ck, scale_f, dtype::UINT8, Placement::READ_SBUF);
    ck.check(ck.get(k_f) != 0, &MXMEM1D_VALID, k_f, Allowed::Min(1));
    if let Some(step_f) = step_f {
        let s = ck.get(step_f) as u8;
        ck.check(
            s.wrapping_add(1) & 0xFD == 0,
            &MXMEM1D_VALID,
            step_f,
            Allowed::Text("0x01 or 0xFF"),
        );
    }
    let p = ck.get(part_f);
    ck.check(
        p & 3 == 0 && p <= 0x0F,
        &MXMEM1D_VALID,
        part_f,
        Allowed::Text("a multiple of 4, at most 0x0F"),
    );
}

#[cfg(test)]
mod tests {
    use super::super::rule::{Collect, Gate};
    use super::*;
    use tpbsim_isa::Bundle;

    fn run(b: &Bundle, f: impl FnOnce(&mut Ck<Collect>)) -> Vec<&'static str> {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, Gen::V4, Some(0), Gate::Format, &mut c);
        f(&mut ck);
        c.failures.iter().map(|f| f.rule.name).collect()
    }

    fn t3(b: &mut Bundle, off: usize, addr: u32) {
        b.set_u32(off, addr);
        b.set_u32(off + 4, 0x0001_0001);
        b.set_u16(off + 8, 1);
        b.set_u16(off + 10, 1);
        b.set_u16(off + 12, 1);
        b.set_u16(off + 14, 1);
    }

    #[test]
    fn a_start_address_is_aligned_to_its_dtypes_element_size() {
        // The alignment is the dtype's element size; FP4_EXP2 (packed, no element size) takes
        // byte alignment from v4 on; a tag without a size has no alignment.
        let align = |gen: Gen, tag: u8| match tag {
            dtype::FP4_EXP2 => (!matches!(gen, Gen::V2 | Gen::V3)).then_some(1),
            _ => dtype::size(tag),
        };
        for gen in [Gen::V2, Gen::V3, Gen::V4] {
            for tag in 0..=0x20u8 {
                for addr in [0x1000u32, 0x1001, 0x1002, 0x1004, 0x1006, 0x1008, 0x100C] {
                    let want = align(gen, tag).is_some_and(|a| addr % a == 0);
                    assert_eq!(
                        addr_aligned_dtype(gen, addr, tag),
                        want,
                        "{gen:?} tag {tag:#x} addr {addr:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_misaligned_start_address_names_the_alignment_its_dtype_needs() {
        let f = Field::new("a", 16, 4);
        let mut b = Bundle::ZERO;
        b.set_u32(16, 0x0000_1001);
        for (tag, text) in [
            (dtype::BF16, "2-byte aligned for a 2-byte dtype"),
            (dtype::FP32, "4-byte aligned for a 4-byte dtype"),
            (dtype::INT64, "8-byte aligned for an 8-byte dtype"),
        ] {
            let mut c = Collect::default();
            let mut ck = Ck::new(&b, Gen::V4, Some(0), Gate::Format, &mut c);
            tensor_start_addr_valid(&mut ck, f, tag, Placement::READ_ANY);
            let found: Vec<_> = c
                .failures
                .iter()
                .filter(|x| x.rule.name == "addr_aligned_dtype")
                .map(|x| x.allowed)
                .collect();
            assert_eq!(found, [Allowed::Text(text)], "tag {tag:#x}");
        }
    }

    #[test]
    fn start_addr_rules() {
        let f = Field::new("a", 16, 4);
        let mut b = Bundle::ZERO;
        b.set_u32(16, 0x0000_1000);
        assert!(run(&b, |ck| {
            tensor_start_addr_valid(ck, f, dtype::FP32, Placement::READ_ANY);
        })
        .is_empty());
        b.set_u32(16, 0x0000_1002);
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::FP32, Placement::READ_ANY);
            }),
            ["addr_aligned_dtype"]
        );
        b.set_u32(16, 0x8000_0005);
        assert!(run(&b, |ck| {
            tensor_start_addr_valid(ck, f, dtype::BF16, Placement::WRITE_PSUM);
        })
        .is_empty());
        b.set_u32(16, 0x8000_0045);
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::BF16, Placement::READ_ANY);
            }),
            ["tensor_start_addr_valid"]
        );
        b.set_u32(16, 0x0240_0000);
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::FP32, Placement::READ_ANY);
            }),
            ["tensor_start_addr_valid"]
        );
        b.set_u32(16, PSUM_BASE);
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::BF16, Placement::WRITE_ANY);
            }),
            ["tensor_start_addr_valid.psum_write_dtype"]
        );
        assert!(run(&b, |ck| {
            tensor_start_addr_valid(ck, f, dtype::BF16, Placement::READ_ANY);
        })
        .is_empty());
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::FP32, Placement::READ_SBUF);
            }),
            ["tensor_start_addr_valid.allowed_in_psum"]
        );
        b.set_u32(16, 0x100);
        assert_eq!(
            run(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::FP32, Placement::WRITE_PSUM);
            }),
            ["tensor_start_addr_valid.allowed_in_sbuf"]
        );
    }

    #[test]
    fn alignment_table() {
        assert!(addr_aligned_dtype(Gen::V3, 1, dtype::FP8_EXP5));
        assert!(!addr_aligned_dtype(Gen::V3, 1, dtype::BF16));
        assert!(!addr_aligned_dtype(Gen::V3, 0, dtype::FP4_EXP2));
        assert!(addr_aligned_dtype(Gen::V4, 1, dtype::FP4_EXP2));
        assert!(!addr_aligned_dtype(Gen::V4, 4, dtype::INT64));
        assert!(!addr_aligned_dtype(Gen::V4, 0, dtype::INVALID));
    }

    #[test]
    fn tensor3d() {
        let op = Operand::new("src", 16);
        let mut b = Bundle::ZERO;
        t3(&mut b, 16, 0x100);
        assert!(run(&b, |ck| {
            tensor_valid(ck, op, 3, dtype::BF16, Placement::READ_ANY);
        })
        .is_empty());
        b.set_u16(16 + 12, 0);
        assert_eq!(
            run(&b, |ck| {
                tensor_valid(ck, op, 3, dtype::BF16, Placement::READ_ANY);
            }),
            ["tensorNd_valid.num_elem"]
        );
        t3(&mut b, 16, 0x4000_0100);
        assert_eq!(
            run(&b, |ck| {
                tensor_valid(ck, op, 3, dtype::BF16, Placement::READ_ANY);
            }),
            ["tensorNd_valid.sb_marker"]
        );
        // Indirect arm: data word at +4 with a marker bit is rejected.
        b.set_u32(16, 0x2000_0100);
        b.set_u32(20, 0x8000_0000);
        b.set_u16(24, 1);
        let r = run(&b, |ck| {
            tensor_valid(ck, op, 3, dtype::BF16, Placement::READ_ANY);
        });
        assert!(r.contains(&"tensorNd_valid.indirect"), "{r:?}");
    }

    #[test]
    fn tt_partitions() {
        let (a, c) = (Operand::new("src0", 16), Operand::new("src1", 32));
        let mut b = Bundle::ZERO;
        b.set_u32(16, 0x0000_0100);
        b.set_u32(32, 0x0010_0000); // partition 4, quadrant 0
        assert!(run(&b, |ck| tt_valid_partitions(ck, a, c)).is_empty());
        b.set_u32(32, 0x0080_0000); // partition 32, quadrant 1
        assert_eq!(
            run(&b, |ck| tt_valid_partitions(ck, a, c)),
            ["tt_valid_partitions"]
        );
        b.set_u32(32, PSUM_BASE);
        assert!(run(&b, |ck| tt_valid_partitions(ck, a, c)).is_empty());
        b.set_u32(16, PSUM_BASE + 0x8000);
        assert_eq!(
            run(&b, |ck| tt_valid_partitions(ck, a, c)),
            ["tt_valid_partitions"]
        );
        b.set_u32(16, 0x8000_0001);
        assert!(run(&b, |ck| tt_valid_partitions(ck, a, c)).is_empty());
    }

    #[test]
    fn mxmem() {
        let op = Operand::new("src", 16);
        let mut b = Bundle::ZERO;
        b.set_u32(16, 0x100);
        b.set_u32(20, 0x0080_0000);
        b.set_u16(24, 128);
        b.0[26] = 0x01;
        b.0[27] = 0x04;
        assert!(run(&b, |ck| mxmem1d_valid(
            ck,
            op,
            dtype::FP8_EXP4,
            Placement::READ_SBUF
        ))
        .is_empty());
        b.0[26] = 0x02;
        assert_eq!(
            run(&b, |ck| mxmem1d_valid(
                ck,
                op,
                dtype::FP8_EXP4,
                Placement::READ_SBUF
            )),
            ["mxmem1d_valid"]
        );
        b.0[26] = 0xFF;
        b.0[27] = 0x11;
        assert_eq!(
            run(&b, |ck| mxmem1d_valid(
                ck,
                op,
                dtype::FP8_EXP4,
                Placement::READ_SBUF
            )),
            ["mxmem1d_valid"]
        );
        b.0[27] = 0;
        b.set_u32(20, PSUM_BASE);
        assert_eq!(
            run(&b, |ck| mxmem1d_valid(
                ck,
                op,
                dtype::FP8_EXP4,
                Placement::READ_SBUF
            )),
            ["tensor_start_addr_valid.allowed_in_psum"]
        );
        b.set_u32(20, 0x100);
        b.set_u32(16, 0x102);
        // 0x102 is 2-aligned: legal as UINT16 (FP4 container) but not as UINT32.
        assert!(run(&b, |ck| mxmem1d_valid(
            ck,
            op,
            dtype::FP4_EXP2,
            Placement::READ_SBUF
        ))
        .is_empty());
        assert_eq!(
            run(&b, |ck| mxmem1d_valid(
                ck,
                op,
                dtype::FP8_EXP5,
                Placement::READ_SBUF
            )),
            ["addr_aligned_dtype"]
        );
    }
}

#[cfg(test)]
mod register_and_partition_bounds {
    use super::super::rule::{Collect, Gate};
    use super::*;
    use tpbsim_isa::Bundle;

    fn failures(b: &Bundle, f: impl FnOnce(&mut Ck<Collect>)) -> Vec<&'static str> {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, Gen::V4, Some(0), Gate::Format, &mut c);
        f(&mut ck);
        c.failures.iter().map(|f| f.rule.name).collect()
    }

    /// A register-form start address names one of the `NUM_ADDR_REGISTERS` registers with bits
    /// 8..23 clear: register 0 and the last register pass, the next one (and 0xFF) fail, and a
    /// set bit 8 or 23 fails whatever the register.
    #[test]
    fn a_register_start_address_names_one_of_the_registers() {
        assert_eq!(NUM_ADDR_REGISTERS, 0x40);
        let f = Field::new("a", 16, 4);
        let judge = |word: u32| {
            let mut b = Bundle::ZERO;
            b.set_u32(16, word);
            failures(&b, |ck| {
                tensor_start_addr_valid(ck, f, dtype::FP32, Placement::READ_ANY);
            })
        };
        for id in [0, 1, NUM_ADDR_REGISTERS - 2, NUM_ADDR_REGISTERS - 1] {
            assert!(judge(0x8000_0000 | id).is_empty(), "register {id}");
        }
        for id in [NUM_ADDR_REGISTERS, NUM_ADDR_REGISTERS + 1, 0xFF] {
            assert_eq!(
                judge(0x8000_0000 | id),
                ["tensor_start_addr_valid"],
                "register {id}"
            );
        }
        for bits in [1 << 8, 1 << 23, 0x00FF_FF00] {
            assert_eq!(
                judge(0x8000_0000 | bits),
                ["tensor_start_addr_valid"],
                "{bits:#x}"
            );
        }
    }

    /// `start_addr_active_channels`: 1..=128 partitions, and from an immediate start
    /// partition p at most 128 − p. At each bound, one before and one past; a register start
    /// address is held to 1..=128 alone.
    #[test]
    fn active_partitions_fit_the_array_from_the_start_partition() {
        let op = Operand::new("src", 16);
        let num = Field::new("num_active_partitions", 40, 1);
        let judge = |word: u32, n: u8| {
            let mut b = Bundle::ZERO;
            b.set_u32(16, word);
            b.0[40] = n;
            failures(&b, |ck| start_addr_active_channels(ck, op, num))
        };
        let fail = ["start_addr_active_channels"];
        for reg in [0x8000_0000u32, 0x8000_003F] {
            for n in [1, 2, 127, 128] {
                assert!(judge(reg, n).is_empty(), "register, {n}");
            }
            for n in [0, 129, 130, 255] {
                assert_eq!(judge(reg, n), fail, "register, {n}");
            }
        }
        let sbuf = |p: u32| p << sbuf_partition_shift(Gen::V4);
        let psum = |p: u32| PSUM_BASE + (p << PSUM_PARTITION_SHIFT);
        for (what, at) in [("SBUF", &sbuf as &dyn Fn(u32) -> u32), ("PSUM", &psum)] {
            for p in [0u32, 1, 64, 126, 127] {
                let word = at(p);
                assert_eq!(partition(Gen::V4, word), p, "{what} {p}");
                let room = 128 - p;
                for n in [1, room - 1, room] {
                    if n > 0 {
                        assert!(judge(word, n as u8).is_empty(), "{what} {p} + {n}");
                    }
                }
                for n in [0, room + 1, room + 2] {
                    assert_eq!(judge(word, n as u8), fail, "{what} {p} + {n}");
                }
            }
        }
    }
}
