use super::*;

/// Every fp16 code, at every offset of an unaligned run with a tail: the vector conversion
/// gives the scalar decode's bits (NaN payloads included).
#[test]
fn every_fp16_code_decodes_identically_on_every_path() {
    let codes: Vec<u16> = (0..=u16::MAX).collect();
    let mut bytes = vec![0u8];
    bytes.extend(codes.iter().flat_map(|c| c.to_le_bytes()));
    for skip in [0usize, 1, 3] {
        let src = &bytes[1 + 2 * skip..];
        let n = src.len() / 2;
        let mut fast = vec![0f32; n];
        let mut slow = vec![0f32; n];
        decode_f16(src, &mut fast);
        decode_f16_scalar(src, &mut slow);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&slow), "offset {skip}");
        for (i, &c) in codes[skip..].iter().enumerate() {
            assert_eq!(fast[i].to_bits(), f16_decode(c), "code {c:#06x}");
        }
    }
    // A signalling NaN keeps its payload (quiet bit clear) next to ordinary values.
    let mut mixed: Vec<u8> = [0x3C00u16, 0x7C01, 0x0001, 0xFC00, 0x7E00, 0x8000, 1, 2]
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .collect();
    mixed.extend_from_slice(&mixed.clone());
    let mut out = vec![0f32; 16];
    decode_f16(&mixed, &mut out);
    assert_eq!(out[1].to_bits(), 0x7F80_2000);
    assert_eq!(out[9].to_bits(), 0x7F80_2000);
}

const SAT: CastPolicy = CastPolicy::DEVICE;
const NOSAT: CastPolicy = CastPolicy {
    saturate_fp8: false,
    fp8_nan_selector: false,
    float_to_int: FloatToInt::DeviceTruncate,
};
const NOSAT_SEL: CastPolicy = CastPolicy {
    saturate_fp8: false,
    fp8_nan_selector: true,
    float_to_int: FloatToInt::DeviceTruncate,
};

fn enc(f: NumFormat, x: f32, p: &CastPolicy) -> u64 {
    from_f32(f, x, p)
}

fn nf(bits: u32) -> f32 {
    f32::from_bits(bits)
}

#[test]
fn config_word_round_trips() {
    assert_eq!(CastPolicy::DEVICE.fp8_config(), 0x0001);
    for w in [0x0000u16, 0x0001, 0x0100, 0x0101] {
        assert_eq!(
            CastPolicy::from_fp8_config(w, FloatToInt::ReferenceRne).fp8_config(),
            w
        );
    }
    assert!(CastPolicy::from_fp8_config(0x0200, FloatToInt::ReferenceRne).fp8_nan_selector);
    assert_eq!(CastPolicy::default(), CastPolicy::DEVICE);
}

#[test]
fn e4m3fn_boundaries() {
    let f = NumFormat::Float8E4m3fn;
    // Ties to even in the normal range: 1.0625 is halfway 1.0 (even) / 1.125.
    assert_eq!(enc(f, 1.0625, &SAT), 0x38);
    assert_eq!(enc(f, nf(1.0625f32.to_bits() + 1), &SAT), 0x39);
    assert_eq!(enc(f, nf(1.0625f32.to_bits() - 1), &SAT), 0x38);
    // 1.1875 is halfway 1.125 (odd) / 1.25 (even).
    assert_eq!(enc(f, 1.1875, &SAT), 0x3A);
    assert_eq!(enc(f, 1.7, &SAT), 0x3E, "1.75");
    // Largest finite and the overflow threshold: 464 ties to 448 (even), above overflows.
    assert_eq!(enc(f, 448.0, &NOSAT), 0x7E);
    assert_eq!(enc(f, 464.0, &NOSAT), 0x7E);
    assert_eq!(enc(f, nf(464f32.to_bits() + 1), &NOSAT), 0x7F);
    assert_eq!(
        enc(f, -nf(464f32.to_bits() + 1), &NOSAT),
        0x7F,
        "overflow NaN drops the sign"
    );
    assert_eq!(enc(f, -500.0, &NOSAT_SEL), 0x80, "selector: signed zero");
    assert_eq!(enc(f, 500.0, &NOSAT_SEL), 0x00);
    assert_eq!(enc(f, nf(464f32.to_bits() + 1), &SAT), 0x7E);
    assert_eq!(enc(f, -1e30, &SAT), 0xFE);
    assert_eq!(enc(f, f32::INFINITY, &SAT), 0x7E);
    assert_eq!(enc(f, f32::NEG_INFINITY, &SAT), 0xFE);
    assert_eq!(enc(f, f32::INFINITY, &NOSAT), 0x7F);
    // Subnormals: step 2^-9; min subnormal/2 ties to zero, just above rounds up.
    let min_sub = 2f32.powi(-9);
    assert_eq!(enc(f, min_sub, &SAT), 0x01);
    assert_eq!(enc(f, min_sub / 2.0, &SAT), 0x00);
    assert_eq!(enc(f, -min_sub / 2.0, &SAT), 0x80);
    assert_eq!(enc(f, nf((min_sub / 2.0).to_bits() + 1), &SAT), 0x01);
    assert_eq!(
        enc(f, 1.5 * min_sub, &SAT),
        0x02,
        "1.5 steps ties to even (2)"
    );
    assert_eq!(enc(f, 2.5 * min_sub, &SAT), 0x02);
    // Largest subnormal to smallest normal (2^-6 = 0x08).
    assert_eq!(enc(f, 7.5 * min_sub, &SAT), 0x08);
    assert_eq!(enc(f, 2f32.powi(-6), &SAT), 0x08);
    assert_eq!(enc(f, 1e-30, &SAT), 0x00);
    assert_eq!(enc(f, f32::from_bits(1), &SAT), 0x00);
    assert_eq!(enc(f, -0.0, &SAT), 0x80);
    // NaN payloads and signs.
    for nan in [0x7FC0_0000, 0x7F80_0001, 0x7FBF_FFFF, 0x7FFF_FFFF] {
        assert_eq!(enc(f, nf(nan), &SAT), 0x7F);
        assert_eq!(enc(f, nf(nan | 0x8000_0000), &SAT), 0xFF);
        assert_eq!(enc(f, nf(nan), &NOSAT_SEL), 0x7F);
    }
}

#[test]
fn e5m2_boundaries() {
    let f = NumFormat::Float8E5m2;
    assert_eq!(enc(f, 57344.0, &NOSAT), 0x7B);
    // 61440 ties 57344 (mantissa 11, odd) with 65536 (even, beyond range): overflow.
    assert_eq!(enc(f, 61440.0, &NOSAT), 0x7C);
    assert_eq!(enc(f, 61440.0, &SAT), 0x7B);
    assert_eq!(enc(f, nf(61440f32.to_bits() - 1), &NOSAT), 0x7B);
    assert_eq!(enc(f, -1e6, &NOSAT), 0xFC);
    assert_eq!(enc(f, -1e6, &SAT), 0xFB);
    assert_eq!(enc(f, f32::INFINITY, &NOSAT), 0x7C);
    assert_eq!(enc(f, f32::NEG_INFINITY, &SAT), 0xFB);
    assert_eq!(enc(f, f32::NAN, &SAT), 0x7E);
    assert_eq!(enc(f, -f32::NAN, &SAT), 0x7E, "selector off: unsigned NaN");
    assert_eq!(enc(f, -f32::NAN, &NOSAT_SEL), 0xFE);
    let min_sub = 2f32.powi(-16);
    assert_eq!(enc(f, min_sub, &SAT), 0x01);
    assert_eq!(enc(f, min_sub / 2.0, &SAT), 0x00);
    assert_eq!(enc(f, nf((min_sub / 2.0).to_bits() + 1), &SAT), 0x01);
    assert_eq!(
        enc(f, 3.5 * min_sub, &SAT),
        0x04,
        "largest subnormal + half step → min normal"
    );
}

#[test]
fn ieee_like_fp8_saturate() {
    assert_eq!(enc(NumFormat::Float8E4m3, 240.0, &NOSAT), 0x77);
    assert_eq!(enc(NumFormat::Float8E4m3, 1000.0, &NOSAT), 0x78);
    assert_eq!(enc(NumFormat::Float8E4m3, -1000.0, &SAT), 0xF7);
    assert_eq!(enc(NumFormat::Float8E4m3, f32::NAN, &SAT), 0x7C);
    assert_eq!(enc(NumFormat::Float8E3m4, 15.5, &NOSAT), 0x6F);
    assert_eq!(enc(NumFormat::Float8E3m4, 16.0, &NOSAT), 0x70);
    assert_eq!(enc(NumFormat::Float8E3m4, 16.0, &SAT), 0x6F);
    assert_eq!(enc(NumFormat::Float8E3m4, f32::NAN, &SAT), 0x78);
}

#[test]
fn fp4_grid_saturation_and_nan() {
    let f = NumFormat::Float4E2m1fn;
    let grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for (c, &v) in grid.iter().enumerate() {
        assert_eq!(to_f32(f, c as u64), v);
        assert_eq!(to_f32(f, c as u64 | 8), -v);
        assert_eq!(enc(f, v, &NOSAT), c as u64);
    }
    assert_eq!(enc(f, 0.25, &SAT), 0x0, "tie to even (0)");
    assert_eq!(enc(f, 0.75, &SAT), 0x2, "tie to even (1.0)");
    assert_eq!(enc(f, 5.0, &SAT), 0x6, "tie between 4 (even) and 6");
    assert_eq!(enc(f, 5.1, &SAT), 0x7);
    assert_eq!(enc(f, 7.0, &NOSAT), 0x7, "FP4 always saturates");
    assert_eq!(enc(f, -1e30, &NOSAT), 0xF);
    assert_eq!(enc(f, f32::INFINITY, &NOSAT), 0x7);
    assert_eq!(enc(f, f32::NAN, &SAT), 0x0);
    assert_eq!(enc(f, -f32::NAN, &SAT), 0x8);
}

#[test]
fn bf16_fp16_fp32r() {
    assert_eq!(enc(NumFormat::Bfloat16, f32::NAN, &SAT), 0x7FC0);
    assert_eq!(enc(NumFormat::Bfloat16, -f32::NAN, &SAT), 0x7FC0);
    assert_eq!(enc(NumFormat::Bfloat16, nf(0x7F80_0001), &SAT), 0x7FC0);
    assert_eq!(
        enc(NumFormat::Bfloat16, nf(0x3F80_8000), &SAT),
        0x3F80,
        "tie to even"
    );
    assert_eq!(
        enc(NumFormat::Bfloat16, nf(0x3F81_8000), &SAT),
        0x3F82,
        "tie to even (up)"
    );
    assert_eq!(enc(NumFormat::Bfloat16, nf(0x3F80_8001), &SAT), 0x3F81);
    assert_eq!(
        enc(NumFormat::Bfloat16, f32::MAX, &SAT),
        0x7F80,
        "overflow → Inf, never saturates"
    );
    assert_eq!(enc(NumFormat::Float16, f32::NAN, &SAT), 0x7E00);
    assert_eq!(enc(NumFormat::Float16, -f32::NAN, &SAT), 0xFE00);
    assert_eq!(enc(NumFormat::Float16, 65504.0, &SAT), 0x7BFF);
    assert_eq!(
        enc(NumFormat::Float16, 65520.0, &SAT),
        0x7C00,
        "tie above max → Inf"
    );
    assert_eq!(
        enc(NumFormat::Float16, nf(65520f32.to_bits() - 1), &SAT),
        0x7BFF
    );
    assert_eq!(enc(NumFormat::Float16, 2f32.powi(-25), &SAT), 0x0000);
    assert_eq!(
        enc(NumFormat::Float16, nf(2f32.powi(-25).to_bits() + 1), &SAT),
        0x0001
    );
    assert_eq!(enc(NumFormat::Float16, -1e-10, &SAT), 0x8000);
    assert_eq!(
        enc(NumFormat::Float32r, nf(0x3F80_0800), &SAT),
        0x3F80_0000,
        "tie to even"
    );
    assert_eq!(enc(NumFormat::Float32r, nf(0x3F80_1800), &SAT), 0x3F80_2000);
    assert_eq!(enc(NumFormat::Float32r, nf(0x3F80_0801), &SAT), 0x3F80_1000);
    assert_eq!(enc(NumFormat::Float32r, f32::MAX, &SAT), 0x7F80_0000);
    assert_eq!(enc(NumFormat::Float32r, nf(0xFF80_0001), &SAT), 0xFFC0_0000);
    assert_eq!(
        to_f32(NumFormat::Float32r, 0x3F80_1234),
        nf(0x3F80_1234),
        "read back as plain fp32"
    );
}

/// The `half` crate agrees with our fp16/bf16 legs wherever its NaN handling is not involved
/// (it keeps NaN signs and payloads, which the policy does not).
#[test]
fn half_crate_agrees_outside_nan() {
    for c in 0..=u16::MAX {
        let h = half::f16::from_bits(c);
        if !h.is_nan() {
            assert_eq!(
                to_f32(NumFormat::Float16, c.into()).to_bits(),
                h.to_f32().to_bits(),
                "f16 {c:#06x}"
            );
        }
        let b = half::bf16::from_bits(c);
        if !b.is_nan() {
            assert_eq!(
                to_f32(NumFormat::Bfloat16, c.into()).to_bits(),
                b.to_f32().to_bits(),
                "bf16 {c:#06x}"
            );
        }
    }
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..200_000u32 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        // Alternate uniform bit patterns with values near the fp16 range.
        let bits = if i % 2 == 0 {
            s as u32
        } else {
            (s as u32 & 0x83FF_FFFF) | (0x3000_0000 + ((s >> 40) as u32 & 0x0FFF_FFFF))
        };
        let x = f32::from_bits(bits);
        if x.is_nan() {
            continue;
        }
        assert_eq!(
            from_f32(NumFormat::Float16, x, &SAT),
            u64::from(half::f16::from_f32(x).to_bits()),
            "f16 {bits:#010x}"
        );
        assert_eq!(
            from_f32(NumFormat::Bfloat16, x, &SAT),
            u64::from(half::bf16::from_f32(x).to_bits()),
            "bf16 {bits:#010x}"
        );
    }
}

#[test]
fn float_to_int_device_and_reference() {
    let t = CastPolicy::DEVICE;
    let r = CastPolicy::REFERENCE;
    assert_eq!(enc(NumFormat::Int8, 2.5, &r), 2);
    assert_eq!(enc(NumFormat::Int8, 3.5, &r), 4);
    assert_eq!(enc(NumFormat::Int8, 2.9, &t), 2);
    assert_eq!(enc(NumFormat::Int8, -2.9, &t), (-2i8) as u8 as u64);
    assert_eq!(enc(NumFormat::Int8, -2.5, &r), (-2i8) as u8 as u64);
    assert_eq!(enc(NumFormat::Int8, 1000.0, &t), 127);
    assert_eq!(enc(NumFormat::Int8, -1000.0, &r), 0x80);
    assert_eq!(enc(NumFormat::Int8, f32::NAN, &r), 127);
    assert_eq!(enc(NumFormat::Int8, -f32::NAN, &t), 0x80);
    assert_eq!(enc(NumFormat::Uint8, -f32::NAN, &t), 0);
    assert_eq!(enc(NumFormat::Uint8, f32::NAN, &t), 255);
    assert_eq!(enc(NumFormat::Uint8, -3.0, &r), 0);
    assert_eq!(enc(NumFormat::Uint16, 65535.5, &r), 65535);
    assert_eq!(enc(NumFormat::Int32, 3e9, &r), i32::MAX as u64);
    assert_eq!(enc(NumFormat::Int32, -3e9, &r), i32::MIN as u32 as u64);
    assert_eq!(enc(NumFormat::Uint32, 5e9, &t), u32::MAX as u64);
    assert_eq!(enc(NumFormat::Int64, f32::INFINITY, &t), i64::MAX as u64);
    assert_eq!(
        enc(NumFormat::Int64, f32::NEG_INFINITY, &t),
        i64::MIN as u64
    );
    assert_eq!(enc(NumFormat::Uint64, 1e20, &t), u64::MAX);
    assert_eq!(enc(NumFormat::Uint64, -f32::NAN, &t), 0);
    assert_eq!(
        enc(NumFormat::Float8E8m0fnu, 127.5, &r),
        128,
        "e8m0 casts as uint8"
    );
    assert_eq!(to_f32(NumFormat::Float8E8m0fnu, 200), 200.0);
}

#[test]
fn integers_lose_bits_through_the_fp32_hub() {
    let p = CastPolicy::REFERENCE;
    let big = (1u32 << 24) + 1; // not representable in fp32
    assert_eq!(
        cast(NumFormat::Int32, big.into(), NumFormat::Int32, &p),
        big as u64,
        "alias: bit-exact"
    );
    assert_eq!(
        cast(NumFormat::Int32, big.into(), NumFormat::Uint32, &p),
        1 << 24
    );
    assert_eq!(
        cast(NumFormat::Uint32, 0xFFFF_FFFF, NumFormat::Int64, &p),
        1 << 32,
        "rounds up through fp32"
    );
    // uint64 → fp32 is the correctly rounded unsigned conversion.
    assert_eq!(to_f32(NumFormat::Uint64, u64::MAX), 18446744073709551616.0);
    assert_eq!(
        to_f32(NumFormat::Uint64, (1 << 63) + (1 << 39)),
        9223372036854775808.0,
        "tie to even"
    );
    assert_eq!(
        to_f32(NumFormat::Uint64, (1 << 63) + (1 << 39) + 1),
        9223373136366403584.0
    );
    assert_eq!(
        to_f32(NumFormat::Int64, i64::MIN as u64),
        -9223372036854775808.0
    );
}

#[test]
fn slices_alias_pack_and_check_lengths() {
    let p = CastPolicy::DEVICE;
    // Identical formats copy even NaN payloads bit-exactly.
    let src = 0x7F80_0001u32.to_le_bytes();
    let mut dst = [0u8; 4];
    assert_eq!(
        cast_slice(&src, NumFormat::Float32, &mut dst, NumFormat::Float32, &p),
        Ok(1)
    );
    assert_eq!(dst, src);
    // FP4 ×4: element i in byte i/2, low nibble first.
    let vals = [0.5f32, 1.0, -6.0, 3.0, 0.0, 0.0, 2.0, -0.5];
    let mut packed = [0u8; 4];
    assert_eq!(
        from_f32_slice(&vals, &mut packed, NumFormat::Float4E2m1fnX4, &p),
        Ok(8)
    );
    assert_eq!(packed, [0x21, 0x5F, 0x00, 0x94]);
    let mut back = [0f32; 8];
    assert_eq!(
        to_f32_slice(&packed, NumFormat::Float4E2m1fnX4, &mut back),
        Ok(8)
    );
    assert_eq!(back, vals);
    // FP8 ×4 → fp32: lane k is byte k of the container.
    let mut out = [0u8; 16];
    let n = cast_slice(
        &[0x38, 0x40, 0xB8, 0x7F],
        NumFormat::Float8E4m3fnX4,
        &mut out,
        NumFormat::Float32,
        &p,
    );
    assert_eq!(n, Ok(4));
    let f: Vec<u32> = out.chunks_exact(4).map(u32::read).collect();
    assert_eq!(f, [0x3F80_0000, 0x4000_0000, 0xBF80_0000, 0x7FC0_0000]);
    // Length errors.
    assert!(matches!(
        cast_slice(
            &[0; 3],
            NumFormat::Bfloat16,
            &mut [0; 6],
            NumFormat::Float32,
            &p
        ),
        Err(CastError::SourceLength { .. })
    ));
    assert!(matches!(
        cast_slice(
            &[0; 4],
            NumFormat::Bfloat16,
            &mut [0; 4],
            NumFormat::Float32,
            &p
        ),
        Err(CastError::DestinationLength { .. })
    ));
    assert!(matches!(
        cast_slice(
            &[0; 6],
            NumFormat::Bfloat16,
            &mut [0; 4],
            NumFormat::Float8E4m3fnX4,
            &p
        ),
        Err(CastError::Lanes { .. })
    ));
}

#[test]
fn misaligned_slices_take_the_byte_path_with_the_same_result() {
    let n = CHUNK + 12;
    let p = CastPolicy::DEVICE;
    for src_f in NumFormat::DEVICE {
        let len = n / src_f.lanes() * src_f.container_bytes();
        let bytes: Vec<u8> = (0..len + 1)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        for dst_f in NumFormat::DEVICE {
            let dlen = n / dst_f.lanes() * dst_f.container_bytes();
            let mut aligned_src = vec![0u64; len.div_ceil(8)];
            let a_src = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut aligned_src)[..len];
            a_src.copy_from_slice(&bytes[1..]);
            let mut aligned_dst = vec![0u64; dlen.div_ceil(8)];
            let a_dst = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut aligned_dst)[..dlen];
            cast_slice(a_src, src_f, a_dst, dst_f, &p).unwrap();
            let mut odd_dst = vec![0u8; dlen + 1];
            cast_slice(&bytes[1..], src_f, &mut odd_dst[1..], dst_f, &p).unwrap();
            assert_eq!(&odd_dst[1..], &*a_dst, "{src_f} → {dst_f}");
        }
    }
}

#[test]
fn slices_match_scalars_across_chunks() {
    // Every format pair over a buffer longer than one chunk, against the scalar path.
    let n = CHUNK * 2 + 8;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for src_f in NumFormat::DEVICE {
        let bytes = n / src_f.lanes() * src_f.container_bytes();
        let src: Vec<u8> = (0..bytes)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let mut vals = vec![0f32; n];
        to_f32_slice(&src, src_f, &mut vals).unwrap();
        for dst_f in NumFormat::DEVICE {
            let policy = CastPolicy::REFERENCE;
            let mut dst = vec![0u8; n / dst_f.lanes() * dst_f.container_bytes()];
            assert_eq!(cast_slice(&src, src_f, &mut dst, dst_f, &policy), Ok(n));
            if src_f == dst_f {
                assert_eq!(dst, src);
                continue;
            }
            for (i, &v) in vals.iter().enumerate() {
                let want = from_f32(dst_f, v, &policy);
                let stride = dst_f.container_bytes() * 8 / dst_f.lanes();
                let mut got = 0u64;
                for b in 0..dst_f.element_bits() as usize {
                    let bit = i * stride + b;
                    got |= u64::from((dst[bit / 8] >> (bit % 8)) & 1) << b;
                }
                assert_eq!(got, want, "{src_f} → {dst_f} element {i} ({v:e})");
            }
        }
    }
}
