//! Little-endian wire primitives shared by every format: the [`Wire`] trait, header, events and
//! small value types.

use crate::formats::{DebugCmd, Dtype, Opcode, UpdateMode, WaitMode};

/// `inst_word_len` the compiler writes: 16 dwords = 64 bytes.
pub const INST_WORD_LEN: u8 = 0x10;

/// A value with a fixed little-endian wire form inside a 64-byte bundle.
pub trait Wire: Sized {
    /// Read the value at byte `off`. Offsets come from the spec and are in range.
    fn read(b: &[u8; 64], off: usize) -> Self;
    /// Write the value at byte `off`.
    fn write(&self, b: &mut [u8; 64], off: usize);
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            #[inline(always)]
            fn read(b: &[u8; 64], off: usize) -> Self {
                const N: usize = core::mem::size_of::<$t>();
                let mut a = [0u8; N];
                a.copy_from_slice(&b[off..off + N]);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn write(&self, b: &mut [u8; 64], off: usize) {
                const N: usize = core::mem::size_of::<$t>();
                b[off..off + N].copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
wire_int!(u8, u16, u32, u64, i16, i32);

macro_rules! wire_array {
    ($($t:ty),*) => {$(
        impl<const N: usize> Wire for [$t; N] {
            #[inline(always)]
            fn read(b: &[u8; 64], off: usize) -> Self {
                let w = core::mem::size_of::<$t>();
                core::array::from_fn(|i| <$t as Wire>::read(b, off + i * w))
            }
            #[inline(always)]
            fn write(&self, b: &mut [u8; 64], off: usize) {
                let w = core::mem::size_of::<$t>();
                for (i, v) in self.iter().enumerate() {
                    v.write(b, off + i * w);
                }
            }
        }
    )*};
}
wire_array!(u16, i32);

impl<const N: usize> Wire for [u8; N] {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        let mut a = [0u8; N];
        a.copy_from_slice(&b[off..off + N]);
        a
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        b[off..off + N].copy_from_slice(self);
    }
}

/// An IEEE binary32 kept as its raw bits, so every payload (NaNs included) round-trips and
/// equality is bitwise.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[repr(transparent)]
pub struct F32Bits(pub u32);

impl F32Bits {
    /// From a float.
    pub fn from_f32(v: f32) -> F32Bits {
        F32Bits(v.to_bits())
    }
    /// As a float.
    pub fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }
}

impl core::fmt::Debug for F32Bits {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}({:#010x})", self.to_f32(), self.0)
    }
}

impl Wire for F32Bits {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        F32Bits(u32::read(b, off))
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        self.0.write(b, off)
    }
}

/// A byte holding two 4-bit DTYPE codes (low nibble, high nibble).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct DtypePair(pub u8);

impl DtypePair {
    /// Pack two codes (only the low 4 bits of each are kept).
    pub const fn new(lo: Dtype, hi: Dtype) -> DtypePair {
        DtypePair((lo.0 & 0xF) | (hi.0 << 4))
    }
    /// Low-nibble dtype.
    pub const fn lo(self) -> Dtype {
        Dtype(self.0 & 0xF)
    }
    /// High-nibble dtype.
    pub const fn hi(self) -> Dtype {
        Dtype(self.0 >> 4)
    }
}

impl core::fmt::Debug for DtypePair {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DtypePair({}, {})", self.lo(), self.hi())
    }
}

impl Wire for DtypePair {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        DtypePair(b[off])
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        b[off] = self.0;
    }
}

/// Bundle header (bytes 0..4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Header {
    /// Opcode byte.
    pub opcode: Opcode,
    /// 0x10 (16 dwords). Kept raw: QuantizeMx may set bit 0.
    pub inst_word_len: u8,
    /// Debug command.
    pub debug_cmd: DebugCmd,
    /// Debug hint (compiler writes 0, runtime branch builders 2).
    pub debug_hint: u8,
}

impl Header {
    /// Canonical header of `opcode`: `{opcode, 0x10, 0, 0}`.
    pub const fn new(opcode: Opcode) -> Header {
        Header {
            opcode,
            inst_word_len: INST_WORD_LEN,
            debug_cmd: DebugCmd(0),
            debug_hint: 0,
        }
    }
}

impl Wire for Header {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        Header {
            opcode: Opcode(b[off]),
            inst_word_len: b[off + 1],
            debug_cmd: DebugCmd(b[off + 2]),
            debug_hint: b[off + 3],
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        b[off] = self.opcode.0;
        b[off + 1] = self.inst_word_len;
        b[off + 2] = self.debug_cmd.0;
        b[off + 3] = self.debug_hint;
    }
}

/// Events block (bytes 4..12, `NEURON_ISA_TPB_EVENTS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Events {
    /// Wait mode.
    pub wait_mode: WaitMode,
    /// Semaphore / event index waited on.
    pub wait_idx: u8,
    /// Update mode.
    pub update_mode: UpdateMode,
    /// Semaphore / event index updated.
    pub update_idx: u8,
    /// Immediate or register id.
    pub semaphore_value: u32,
}

impl Events {
    /// Packed u64 view: `value<<32 | update_idx<<24 | update_mode<<16 | wait_idx<<8 | wait_mode`.
    pub const fn packed(&self) -> u64 {
        (self.semaphore_value as u64) << 32
            | (self.update_idx as u64) << 24
            | (self.update_mode.0 as u64) << 16
            | (self.wait_idx as u64) << 8
            | self.wait_mode.0 as u64
    }
    /// Whether the wait mode is of the register family (bit 7).
    pub const fn wait_is_reg(&self) -> bool {
        self.wait_mode.0 & 0x80 != 0
    }
    /// Whether the update mode is of the register family (bit 7).
    pub const fn update_is_reg(&self) -> bool {
        self.update_mode.0 & 0x80 != 0
    }
}

impl Wire for Events {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        let (wait_mode, wait_idx, update_mode, update_idx) = read_modes(b, off);
        Events {
            wait_mode,
            wait_idx,
            update_mode,
            update_idx,
            semaphore_value: u32::read(b, off + 4),
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        write_modes(
            b,
            off,
            self.wait_mode,
            self.wait_idx,
            self.update_mode,
            self.update_idx,
        );
        self.semaphore_value.write(b, off + 4);
    }
}

#[inline(always)]
fn read_modes(b: &[u8; 64], off: usize) -> (WaitMode, u8, UpdateMode, u8) {
    (
        WaitMode(b[off]),
        b[off + 1],
        UpdateMode(b[off + 2]),
        b[off + 3],
    )
}

#[inline(always)]
fn write_modes(b: &mut [u8; 64], off: usize, wm: WaitMode, wi: u8, um: UpdateMode, ui: u8) {
    b[off..off + 4].copy_from_slice(&[wm.0, wi, um.0, ui]);
}

/// `EVENTS_EXTENDED` (12 bytes; EventSemaphore at +0x20).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct EventsExt {
    /// Wait mode.
    pub wait_mode: WaitMode,
    /// Wait index.
    pub wait_idx: u8,
    /// Update mode.
    pub update_mode: UpdateMode,
    /// Update index.
    pub update_idx: u8,
    /// Value compared by the wait.
    pub sem_wait_value: u32,
    /// Value applied by the update.
    pub sem_update_value: u32,
}

impl Wire for EventsExt {
    #[inline(always)]
    fn read(b: &[u8; 64], off: usize) -> Self {
        let (wait_mode, wait_idx, update_mode, update_idx) = read_modes(b, off);
        EventsExt {
            wait_mode,
            wait_idx,
            update_mode,
            update_idx,
            sem_wait_value: u32::read(b, off + 4),
            sem_update_value: u32::read(b, off + 8),
        }
    }
    #[inline(always)]
    fn write(&self, b: &mut [u8; 64], off: usize) {
        write_modes(
            b,
            off,
            self.wait_mode,
            self.wait_idx,
            self.update_mode,
            self.update_idx,
        );
        self.sem_wait_value.write(b, off + 4);
        self.sem_update_value.write(b, off + 8);
    }
}
