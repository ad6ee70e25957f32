//! Shared helpers for the criterion benchmarks (stream synthesis, temporary files).

/// Build a pseudo-random byte buffer of `len` bytes with a fixed seed (xorshift64*).
pub fn pseudo_random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        out.extend_from_slice(&s.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}
