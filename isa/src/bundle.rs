//! The 64-byte instruction bundle.

/// Size of one bundle in bytes. Streams always step by this, whatever `inst_word_len` says.
pub const BUNDLE_SIZE: usize = 64;

/// One fixed-width 64-byte NeuronCore engine instruction, exactly as it sits in a stream.
///
/// Multi-byte fields are little-endian. The type is `Pod` and 64-byte aligned so a
/// page-aligned memory map of a stream can be viewed as `&[Bundle]` without copying.
#[derive(Clone, Copy, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub struct Bundle(pub [u8; BUNDLE_SIZE]);

impl Default for Bundle {
    fn default() -> Self {
        Bundle([0; BUNDLE_SIZE])
    }
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bundle(")?;
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 && i % 4 == 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

impl Bundle {
    /// A zero bundle.
    pub const ZERO: Bundle = Bundle([0; BUNDLE_SIZE]);

    /// Bundle from a byte slice of exactly 64 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Bundle> {
        let arr: [u8; BUNDLE_SIZE] = bytes.try_into().ok()?;
        Some(Bundle(arr))
    }

    /// The opcode byte (byte 0).
    #[inline]
    pub const fn opcode(&self) -> u8 {
        self.0[0]
    }

    /// Byte at `off`.
    #[inline]
    pub const fn u8_at(&self, off: usize) -> u8 {
        self.0[off]
    }

    /// Little-endian u16 at `off`.
    #[inline]
    pub fn u16_at(&self, off: usize) -> u16 {
        u16::from_le_bytes([self.0[off], self.0[off + 1]])
    }

    /// Little-endian i16 at `off`.
    #[inline]
    pub fn i16_at(&self, off: usize) -> i16 {
        self.u16_at(off) as i16
    }

    /// Little-endian u32 at `off`.
    #[inline]
    pub fn u32_at(&self, off: usize) -> u32 {
        u32::from_le_bytes([
            self.0[off],
            self.0[off + 1],
            self.0[off + 2],
            self.0[off + 3],
        ])
    }

    /// Little-endian i32 at `off`.
    #[inline]
    pub fn i32_at(&self, off: usize) -> i32 {
        self.u32_at(off) as i32
    }

    /// Little-endian u64 at `off`.
    #[inline]
    pub fn u64_at(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[off..off + 8]);
        u64::from_le_bytes(b)
    }

    /// Write a byte at `off`.
    #[inline]
    pub fn set_u8(&mut self, off: usize, v: u8) {
        self.0[off] = v;
    }

    /// Write a little-endian u16 at `off`.
    #[inline]
    pub fn set_u16(&mut self, off: usize, v: u16) {
        self.0[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }

    /// Write a little-endian u32 at `off`.
    #[inline]
    pub fn set_u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// Write a little-endian u64 at `off`.
    #[inline]
    pub fn set_u64(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// Lower-case hex of the 64 bytes, no separators.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(128);
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// Parse 128 hex digits (whitespace ignored).
    pub fn from_hex(s: &str) -> Option<Bundle> {
        let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
        if digits.len() != 2 * BUNDLE_SIZE {
            return None;
        }
        let mut out = [0u8; BUNDLE_SIZE];
        for (i, pair) in digits.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Bundle(out))
    }
}

/// View a byte slice whose length is a multiple of 64 and whose start is 64-byte aligned as
/// bundles, without copying. Returns `None` when either condition fails.
pub fn bundles_from_bytes(bytes: &[u8]) -> Option<&[Bundle]> {
    bytemuck::try_cast_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<Bundle>(), 64);
        assert_eq!(std::mem::align_of::<Bundle>(), 64);
    }

    #[test]
    fn accessors_little_endian() {
        let mut b = Bundle::ZERO;
        b.set_u32(8, 0x1234_5678);
        assert_eq!(b.0[8..12], [0x78, 0x56, 0x34, 0x12]);
        assert_eq!(b.u32_at(8), 0x1234_5678);
        b.set_u16(4, 0xFFFE);
        assert_eq!(b.i16_at(4), -2);
        let h = b.to_hex();
        assert_eq!(Bundle::from_hex(&h), Some(b));
        assert_eq!(Bundle::from_hex("00"), None);
    }
}
