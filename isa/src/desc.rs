//! Address words and access-pattern descriptors: ADDR4, TENSORnD / MEM_PATTERNnD,
//! MXMEM_PATTERN1D, MXINDIRECT16B and ADDR8.

use crate::formats::{Addr4Marker, Addr8Marker, Addr8PseudoMarker};
use crate::geometry::Geometry;
use crate::wire::Wire;
use crate::Gen;

/// A 4-byte address word: bits 0..28 address (partition-folded), byte 3 marker bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Addr4(pub u32);

/// How an ADDR4 is to be read, from its byte-3 marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Addr4Kind {
    /// Immediate address (marker bits 0).
    Imm,
    /// Address from register (`0x80`).
    AddrReg,
    /// Shape from register (`0x40`).
    ShapeReg,
    /// Address and shape from registers (`0xC0`).
    AddrShapeReg,
    /// Indirect through an index tensor (`0x20`).
    Indirect,
    /// Register-held indirect (`0xA0`).
    RegIndirect,
    /// Any other combination of the marker bits 5..7 (`0x60`, `0xE0`): unused.
    Unused(u8),
}

impl Addr4 {
    /// Address bits 0..28.
    pub const ADDR_MASK: u32 = 0x1FFF_FFFF;
    /// Region / partition-high bits 25..28.
    pub const REGION_MASK: u32 = 0x1E00_0000;

    /// Immediate address.
    pub const fn imm(addr: u32) -> Addr4 {
        Addr4(addr & Self::ADDR_MASK)
    }
    /// Register form `0x80000000 | regid`.
    pub const fn reg(regid: u8) -> Addr4 {
        Addr4(0x8000_0000 | regid as u32)
    }
    /// Byte 3.
    pub const fn byte3(self) -> u8 {
        (self.0 >> 24) as u8
    }
    /// Address bits 0..28.
    pub const fn address(self) -> u32 {
        self.0 & Self::ADDR_MASK
    }
    /// Marker bits 5..7 of byte 3 as the header enum (`0x00`, `0x20`, ... `0xC0`).
    pub const fn marker(self) -> Addr4Marker {
        Addr4Marker(self.byte3() & 0xE0)
    }
    /// Reading of the marker bits.
    pub const fn kind(self) -> Addr4Kind {
        match self.byte3() & 0xE0 {
            0x00 => Addr4Kind::Imm,
            0x80 => Addr4Kind::AddrReg,
            0x40 => Addr4Kind::ShapeReg,
            0xC0 => Addr4Kind::AddrShapeReg,
            0x20 => Addr4Kind::Indirect,
            0xA0 => Addr4Kind::RegIndirect,
            m => Addr4Kind::Unused(m),
        }
    }
    /// Validator predicate `(b3 & 0xA0) == 0x80`: the address comes from a register.
    pub const fn is_register(self) -> bool {
        self.byte3() & 0xA0 == 0x80
    }
    /// Validator predicate `(b3 & 0x60) == 0x20`: indirect.
    pub const fn is_indirect(self) -> bool {
        self.byte3() & 0x60 == 0x20
    }
    /// Register id of the register form (low byte), when the word is a register form.
    pub const fn register_id(self) -> Option<u8> {
        if self.is_register() {
            Some(self.0 as u8)
        } else {
            None
        }
    }
    /// v5 MXTENSOR_V2 union-arm marker (byte-3 bit 0, generation v5 only).
    pub const fn is_mxtensor_v2(self, gen: Gen) -> bool {
        matches!(gen, Gen::V5) && self.byte3() & 0x01 != 0
    }
    /// PSUM iff `(addr - psum_base) <= 0x3FFFFF` (register forms are never PSUM by address).
    pub fn is_psum(self, gen: Gen) -> bool {
        !self.is_register() && Geometry::of(gen).is_psum(self.address())
    }
    /// `(partition, offset)` of an immediate SBUF or PSUM address in `gen`.
    pub fn split(self, gen: Gen) -> (u32, u32) {
        let g = Geometry::of(gen);
        if self.is_psum(gen) {
            g.psum_split(self.address())
        } else {
            g.sbuf_split(self.address())
        }
    }
}

impl core::fmt::Debug for Addr4 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Addr4({:#010x})", self.0)
    }
}

impl Wire for Addr4 {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        Addr4(u32::read(b, off))
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.0.write(b, off)
    }
}

/// TENSORnD: ADDR4, `N` signed strides (elements), `N` unsigned counts. 4 + 4N bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tensor<const N: usize> {
    /// Start address (partition folded in).
    pub addr: Addr4,
    /// Strides in elements.
    pub step: [i16; N],
    /// Counts (0 is illegal; unused trailing dims are 1).
    pub num: [u16; N],
}

impl<const N: usize> Default for Tensor<N> {
    fn default() -> Self {
        Tensor {
            addr: Addr4(0),
            step: [0; N],
            num: [0; N],
        }
    }
}

impl<const N: usize> Tensor<N> {
    /// Wire size in bytes.
    pub const SIZE: usize = 4 + 4 * N;
    /// A descriptor.
    pub const fn new(addr: Addr4, step: [i16; N], num: [u16; N]) -> Self {
        Tensor { addr, step, num }
    }
    /// Product of the counts.
    pub fn elements(&self) -> u64 {
        self.num.iter().map(|&n| n as u64).product()
    }
}

impl<const N: usize> Wire for Tensor<N> {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        Tensor {
            addr: Addr4::read(b, off),
            step: core::array::from_fn(|i| i16::read(b, off + 4 + 2 * i)),
            num: core::array::from_fn(|i| u16::read(b, off + 4 + 2 * N + 2 * i)),
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.addr.write(b, off);
        for i in 0..N {
            self.step[i].write(b, off + 4 + 2 * i);
            self.num[i].write(b, off + 4 + 2 * N + 2 * i);
        }
    }
}

/// MEM_PATTERNnD: the same bytes as TENSORnD, a union whose indirect arm (INDIRECTxB, and on v5
/// MXTENSOR_V2) is selected by the ADDR4 marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct MemPattern<const N: usize>(pub Tensor<N>);

impl<const N: usize> MemPattern<N> {
    /// The direct (TENSORnD) arm.
    pub const fn tensor(&self) -> &Tensor<N> {
        &self.0
    }
    /// Whether the indirect arm is selected (`(b3 & 0x60) == 0x20`).
    pub const fn is_indirect(&self) -> bool {
        self.0.addr.is_indirect()
    }
}

impl<const N: usize> Wire for MemPattern<N> {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        MemPattern(Tensor::read(b, off))
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.0.write(b, off)
    }
}

/// MXMEM_PATTERN1D (16 bytes): data and scale addresses of a microscaled operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MxMemPattern1d {
    /// Data ADDR4 (+0x0).
    pub data: Addr4,
    /// Scale ADDR4 (+0x4), SBUF only.
    pub scale: Addr4,
    /// K in elements (+0x8).
    pub k: u16,
    /// Step sign (+0xA): 0x01 or 0xFF.
    pub step_sign: u8,
    /// Scale partition (+0xB).
    pub scale_partition: u8,
    /// Reserved (+0xC..+0x10), must be zero.
    pub reserved: [u8; 4],
}

impl Wire for MxMemPattern1d {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        MxMemPattern1d {
            data: Addr4::read(b, off),
            scale: Addr4::read(b, off + 4),
            k: u16::read(b, off + 8),
            step_sign: b[off + 10],
            scale_partition: b[off + 11],
            reserved: <[u8; 4]>::read(b, off + 12),
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.data.write(b, off);
        self.scale.write(b, off + 4);
        self.k.write(b, off + 8);
        b[off + 10] = self.step_sign;
        b[off + 11] = self.scale_partition;
        self.reserved.write(b, off + 12);
    }
}

/// MXINDIRECT16B (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MxIndirect16b {
    /// Index tensor ADDR4 (+0x0, marker 0x20).
    pub indices: Addr4,
    /// Data ADDR4 (+0x4).
    pub data: Addr4,
    /// Scale ADDR4 (+0x8).
    pub scale: Addr4,
    /// K (+0xC).
    pub k: u16,
    /// Byte +0xE (meaning not published).
    pub byte_0e: u8,
    /// Scale partition (+0xF).
    pub scale_partition: u8,
}

impl Wire for MxIndirect16b {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        MxIndirect16b {
            indices: Addr4::read(b, off),
            data: Addr4::read(b, off + 4),
            scale: Addr4::read(b, off + 8),
            k: u16::read(b, off + 12),
            byte_0e: b[off + 14],
            scale_partition: b[off + 15],
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.indices.write(b, off);
        self.data.write(b, off + 4);
        self.scale.write(b, off + 8);
        self.k.write(b, off + 12);
        b[off + 14] = self.byte_0e;
        b[off + 15] = self.scale_partition;
    }
}

/// An 8-byte DMA address; byte 7 is a marker with two readings (header records vs the
/// compiler's pseudo form, conflict D32).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Addr8(pub u64);

impl Addr8 {
    /// Byte 7.
    pub const fn marker_byte(self) -> u8 {
        (self.0 >> 56) as u8
    }
    /// Bytes 0..7 (the address or, in register forms, reg_lo at byte 0 and reg_hi at byte 1).
    pub const fn value(self) -> u64 {
        self.0 & 0x00FF_FFFF_FFFF_FFFF
    }
    /// Header reading: base marker `b7 & 0xE0`.
    pub const fn header_marker(self) -> Addr8Marker {
        Addr8Marker(self.marker_byte() & 0xE0)
    }
    /// Header reading: table offset taken from a register (`+0x08`).
    pub const fn tbl_offset_reg(self) -> bool {
        self.marker_byte() & 0x08 != 0
    }
    /// Header reading: wide (64-bit) table offset (`+0x04`).
    pub const fn wide_tbl_offset(self) -> bool {
        self.marker_byte() & 0x04 != 0
    }
    /// Header reading: register pair of the ADDR_REG forms (reg_lo, reg_hi).
    pub const fn regs(self) -> (u8, u8) {
        (self.0 as u8, (self.0 >> 8) as u8)
    }
    /// Pseudo reading: base marker `b7 & 0x38` (0x10 var id, 0x20 DGE immediate, 0x28 DGE register).
    pub const fn pseudo_marker(self) -> Addr8PseudoMarker {
        Addr8PseudoMarker(self.marker_byte() & 0x38)
    }
    /// Pseudo reading: the runtime's var-id test `(b7 & 0xFC) == 0x10`.
    pub const fn is_var_id(self) -> bool {
        self.marker_byte() & 0xFC == 0x10
    }
    /// Pseudo reading: two-register pair modifier (`+0x04`).
    pub const fn pseudo_pair(self) -> bool {
        self.marker_byte() & 0x04 != 0
    }
    /// Pseudo reading: move/transpose modifier (`+0x40`).
    pub const fn pseudo_move(self) -> bool {
        self.marker_byte() & 0x40 != 0
    }
}

impl core::fmt::Debug for Addr8 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Addr8({:#018x})", self.0)
    }
}

impl Wire for Addr8 {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        Addr8(u64::read(b, off))
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.0.write(b, off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addr4_markers() {
        assert_eq!(Addr4(0x8000_0005).kind(), Addr4Kind::AddrReg);
        assert_eq!(Addr4(0x8000_0005).register_id(), Some(5));
        // The validators' predicates: 0xA0 (REG + INDIRECT) reads as indirect, not as a register form.
        assert!(!Addr4(0xA000_0000).is_register() && Addr4(0xA000_0000).is_indirect());
        assert_eq!(Addr4(0x4000_0000).kind(), Addr4Kind::ShapeReg);
        assert_eq!(Addr4(0xC000_0000).marker(), Addr4Marker::ADDR_SHAPE_REG);
        assert_eq!(Addr4(0x6000_0000).kind(), Addr4Kind::Unused(0x60));
        assert!(Addr4(0x2000_0000).is_indirect());
        assert!(!Addr4(0x0200_0000).is_indirect());
        assert!(Addr4(0x0200_0000).is_psum(Gen::V2));
        assert!(!Addr4(0x8200_0000).is_psum(Gen::V2));
        assert_eq!(Addr4((7 << 18) | 0x10).split(Gen::V3), (7, 0x10));
        assert!(Addr4(0x0100_0000).is_mxtensor_v2(Gen::V5));
        assert!(!Addr4(0x0100_0000).is_mxtensor_v2(Gen::V4));
    }

    #[test]
    fn tensor_wire_layout() {
        let mut b = [0u8; 64];
        let t = Tensor::<3>::new(Addr4(0x0102_0304), [1, -2, 3], [4, 5, 6]);
        t.write(&mut b, 16);
        assert_eq!(
            &b[16..32],
            &[4, 3, 2, 1, 1, 0, 0xFE, 0xFF, 3, 0, 4, 0, 5, 0, 6, 0]
        );
        assert_eq!(Tensor::<3>::read(&b, 16), t);
        assert_eq!(t.elements(), 120);
    }

    #[test]
    fn addr8_readings() {
        let a = Addr8(0x2800_0000_0000_1234);
        assert_eq!(a.pseudo_marker(), Addr8PseudoMarker::DGE_REG);
        assert_eq!(a.header_marker(), Addr8Marker::ADDR_TBL_SHAPE_IMM);
        assert!(a.tbl_offset_reg());
        assert!(Addr8(0x1300_0000_0000_0000).is_var_id());
        assert_eq!(Addr8(0x8000_0000_0000_0201).regs(), (1, 2));
    }
}
