use super::*;

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let m = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            m * [1.0, 1e-3, 37.0, 0.25][(s & 3) as usize]
        })
        .collect()
}

fn bf16_grid(v: &mut [f32]) {
    for x in v {
        *x = f32::from_bits(x.to_bits() & 0xFFFF_0000);
    }
}

#[test]
fn psum_flags() {
    for (b, (st, sp, ac)) in [
        (0, (false, false, false)),
        (1, (true, false, false)),
        (2, (false, true, false)),
        (3, (true, true, false)),
        (4, (false, false, true)),
        (6, (false, true, true)),
    ] {
        let f = PsumFlags::from_wire(b).expect("legal");
        assert_eq!((f.start, f.stop, f.accumulate), (st, sp, ac), "byte {b}");
    }
    for b in [5u8, 7, 8, 0xFF] {
        assert_eq!(PsumFlags::from_wire(b), Err(PeError::BadPsumFlags(b)));
    }
    assert!(PsumFlags::from_accumulate_flag(false).overwrites());
    assert!(!PsumFlags::from_accumulate_flag(true).overwrites());
}

#[test]
fn zero_regions() {
    let r = |c| ZeroRegion::from_wire(c).expect("code");
    assert_eq!([0, 1, 2, 3].map(|c| r(c).banks(Gen::V3)), [1, 2, 4, 8]);
    assert_eq!(
        [0, 1, 2, 3].map(|c| r(c).banks(Gen::V2)),
        [2, 4, 8, 16],
        "v2 banks are 1 KiB"
    );
    assert_eq!(ZeroRegion::from_wire(4), Err(PeError::BadZeroRegion(4)));
    assert_eq!(r(0).span(2048 + 100), Ok(2048..4096));
    assert_eq!(r(1).span(2048 + 100), Ok(0..4096));
    assert_eq!(r(3).span(15000), Ok(0..16384));
    assert_eq!(
        r(0).span(16384),
        Err(PeError::ZeroRegionOutOfRange {
            start: 16384,
            len: 2048
        })
    );
    let mut row = vec![1.0f32; 4096];
    zero_region(&mut row, r(1), 5000).expect("zero");
    assert!(row[..1024].iter().all(|&v| v == 1.0));
    assert!(row[1024..2048].iter().all(|&v| v == 0.0));
    assert!(row[2048..].iter().all(|&v| v == 1.0));
    assert!(zero_region(&mut row[..100], r(0), 0).is_err());
}

#[test]
fn matmul_equals_the_sequential_loop_bit_for_bit() {
    for &(k, n, f) in &[
        (1, 1, 1),
        (3, 5, 7),
        (128, 4, 32),
        (17, 9, 70),
        (64, 128, 96),
        (128, 13, 33),
    ] {
        let s = values(k * n, 3 + k as u64);
        let m = values(k * f, 5 + f as u64);
        let mut fast = vec![0.0; n * f];
        let mut slow = vec![0.0; n * f];
        matmul(PeMode::Plain, &s, &m, k, n, f, &mut fast).expect("matmul");
        matmul_reference(&s, &m, k, n, f, &mut slow);
        for i in 0..n * f {
            assert_eq!(
                fast[i].to_bits(),
                slow[i].to_bits(),
                "k{k} n{n} f{f} at {i}"
            );
        }
        // … and close to the exact dot products.
        for nn in 0..n {
            for ff in 0..f {
                let exact: f64 = (0..k)
                    .map(|kk| s[kk * n + nn] as f64 * m[kk * f + ff] as f64)
                    .sum();
                let mag: f64 = (0..k)
                    .map(|kk| (s[kk * n + nn] as f64 * m[kk * f + ff] as f64).abs())
                    .sum();
                let got = fast[nn * f + ff] as f64;
                assert!(
                    (got - exact).abs() <= k as f64 * 2f64.powi(-23) * mag + 1e-30,
                    "{got} vs {exact}"
                );
            }
        }
    }
}

#[test]
fn portable_kernel_equals_the_sequential_loop() {
    // The non-AVX-512 path (register tiles + edges), run directly whatever the CPU.
    for &(k, n, f) in &[(5, 9, 37), (64, 8, 64), (3, 1, 16)] {
        let s = values(k * n, 41);
        let m = values(k * f, 43);
        let (mut fast, mut slow) = (vec![0.0; n * f], vec![0.0; n * f]);
        gemm_body::<1, 4, 16>(&[(&s[..], &m[..])], k, n, f, &mut fast);
        matmul_reference(&s, &m, k, n, f, &mut slow);
        assert_eq!(fast, slow, "k{k} n{n} f{f}");
    }
}

#[test]
fn summation_order_is_observable_and_fixed() {
    // 1 + 2^-24 + 2^-24 in order k = 0, 1, 2 gives 1.0 (each tiny add rounds away); any other
    // order could give 1 + 2^-23.
    let s = [1.0f32, 1.0, 1.0];
    let m = [1.0f32, 2f32.powi(-24), 2f32.powi(-24)];
    let mut out = [0.0f32];
    matmul(PeMode::Plain, &s, &m, 3, 1, 1, &mut out).expect("matmul");
    assert_eq!(out[0], 1.0);
    let m = [2f32.powi(-24), 2f32.powi(-24), 1.0];
    matmul(PeMode::Plain, &s, &m, 3, 1, 1, &mut out).expect("matmul");
    assert_eq!(out[0], 1.0 + 2f32.powi(-23));
    assert!(matmul(PeMode::Plain, &s, &m, 3, 1, 2, &mut out).is_err());
}

/// fp32r rounding written out on the bits (test-side reference): RNE to 11 explicit bits.
fn round_fp32r(x: f32) -> f32 {
    let b = x.to_bits();
    if (b >> 23) & 0xFF == 0xFF {
        return x;
    }
    f32::from_bits((b + 0x7FF + ((b >> 12) & 1)) & !0xFFF)
}

#[test]
fn fp32r_reference_rounding() {
    assert_eq!(round_fp32r(1.0), 1.0);
    let one_ulp11 = 2f32.powi(-11);
    assert_eq!(round_fp32r(1.0 + 2f32.powi(-12)), 1.0, "tie to even");
    assert_eq!(
        round_fp32r(1.0 + one_ulp11 + 2f32.powi(-12)),
        1.0 + 2.0 * one_ulp11,
        "tie to even, up"
    );
    assert_eq!(
        round_fp32r(1.0 + 2f32.powi(-12) + 2f32.powi(-20)),
        1.0 + one_ulp11
    );
    assert_eq!(round_fp32r(-3.0000002), -3.0);
    assert_eq!(round_fp32r(f32::MAX), f32::INFINITY);
    for v in values(1000, 9) {
        let r = round_fp32r(v);
        assert_eq!(r, fp32r(v), "the cast engine's fp32r");
        assert_eq!(r.to_bits() & 0xFFF, 0);
        assert!((r - v).abs() <= v.abs() * 2f32.powi(-12));
    }
}

#[test]
fn fp32_passes() {
    let (k, n, f) = (64, 8, 40);
    let s = values(k * n, 21);
    let m = values(k * f, 23);
    let run = |mode| {
        let mut o = vec![0.0; n * f];
        matmul(mode, &s, &m, k, n, f, &mut o).expect("matmul");
        o
    };
    let high = run(PeMode::Fp32(Fp32Mode::High));
    let low = run(PeMode::Fp32(Fp32Mode::Low));
    let both = run(PeMode::Fp32(Fp32Mode::LowHigh));
    // High is exactly the plain product of fp32r-rounded operands.
    let sr: Vec<f32> = s.iter().map(|&v| round_fp32r(v)).collect();
    let mr: Vec<f32> = m.iter().map(|&v| round_fp32r(v)).collect();
    let mut expect = vec![0.0; n * f];
    matmul_reference(&sr, &mr, k, n, f, &mut expect);
    assert_eq!(high, expect);
    // Low is the sum of the two cross terms, in order.
    let sl: Vec<f32> = s.iter().zip(&sr).map(|(a, b)| a - b).collect();
    let ml: Vec<f32> = m.iter().zip(&mr).map(|(a, b)| a - b).collect();
    for nn in 0..n {
        for ff in 0..f {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc += sr[kk * n + nn] * ml[kk * f + ff];
                acc += sl[kk * n + nn] * mr[kk * f + ff];
            }
            assert_eq!(low[nn * f + ff].to_bits(), acc.to_bits());
        }
    }
    // Low_High is near-fp32 accurate; High alone is not.
    let (mut err_high, mut err_both) = (0.0f64, 0.0f64);
    for nn in 0..n {
        for ff in 0..f {
            let exact: f64 = (0..k)
                .map(|kk| s[kk * n + nn] as f64 * m[kk * f + ff] as f64)
                .sum();
            err_high = err_high.max((high[nn * f + ff] as f64 - exact).abs());
            err_both = err_both.max((both[nn * f + ff] as f64 - exact).abs());
        }
    }
    assert!(
        err_both * 50.0 < err_high,
        "low+high {err_both:e} vs high {err_high:e}"
    );
    assert_eq!(run(PeMode::Fp32(Fp32Mode::None)), run(PeMode::Plain));
    assert_eq!(Fp32Mode::from_wire(3), Ok(Fp32Mode::LowHigh));
    assert_eq!(Fp32Mode::from_wire(4), Err(PeError::BadFp32Mode(4)));
}

#[test]
fn bf16_inputs_multiply_exactly() {
    let (k, n, f) = (32, 4, 16);
    let mut s = values(k * n, 31);
    let mut m = values(k * f, 37);
    bf16_grid(&mut s);
    bf16_grid(&mut m);
    let mut out = vec![0.0; n * f];
    matmul(PeMode::Plain, &s, &m, k, n, f, &mut out).expect("matmul");
    for nn in 0..n {
        for ff in 0..f {
            let mut acc = 0.0f32;
            for kk in 0..k {
                let p = s[kk * n + nn] as f64 * m[kk * f + ff] as f64;
                assert_eq!(p as f32 as f64, p, "bf16 × bf16 is exact in fp32");
                acc += p as f32;
            }
            assert_eq!(out[nn * f + ff], acc);
        }
    }
}

#[test]
fn psum_writes() {
    let sum = [1.5f32, -2.0, 1e-8];
    let mut p = [10.0f32, 10.0, 1.0];
    psum_write_f32(PsumFlags::from_wire(0).expect("mid"), &sum, &mut p).expect("acc");
    assert_eq!(p, [11.5, 8.0, 1.0], "accumulate; 1 + 1e-8 rounds to 1");
    psum_write_f32(PsumFlags::from_wire(3).expect("single"), &sum, &mut p).expect("overwrite");
    assert_eq!(p, sum);
    psum_write_f32(PsumFlags::from_wire(4).expect("begin accum"), &sum, &mut p).expect("acc");
    assert_eq!(p, [3.0, -4.0, 2e-8]);
    assert!(psum_write_f32(PsumFlags::from_wire(0).expect("mid"), &sum, &mut p[..2]).is_err());

    let mut b = [0x3F80u16, 0x3F80, 0x7F7F, 0x0000];
    // 1 + 2^-9 (a quarter ulp) rounds down, 1 + 3·2^-9 rounds up, max + max → inf, NaN → 0x7FC0.
    let s2 = [2f32.powi(-9), 3.0 * 2f32.powi(-9), f32::MAX, f32::NAN];
    psum_write_bf16(PsumFlags::from_wire(2).expect("end"), &s2, &mut b).expect("bf16");
    assert_eq!(b, [0x3F80, 0x3F81, 0x7F80, 0x7FC0]);
    psum_write_bf16(
        PsumFlags::from_wire(1).expect("start"),
        &[1.0 + 2f32.powi(-8), -0.0, 3.0, 1.0],
        &mut b,
    )
    .expect("bf16");
    assert_eq!(b, [0x3F80, 0x8000, 0x4040, 0x3F80]);
}

#[test]
fn transpose_is_bit_exact() {
    let src: Vec<u32> = (0..12).map(|i| 0x7FC0_0000 | i).collect();
    let mut dst = vec![0u32; 12];
    transpose(&src, 3, 4, &mut dst).expect("transpose");
    for r in 0..3 {
        for c in 0..4 {
            assert_eq!(dst[c * 3 + r], src[r * 4 + c]);
        }
    }
    assert!(transpose(&src, 3, 5, &mut dst).is_err());
}

#[test]
fn ldweights_column_rule_puts_element_j_in_column_n_minus_1_minus_j() {
    // The rule itself: the first element read ends in the farthest column.
    assert_eq!(
        (0..4).map(|j| stationary_column(j, 4)).collect::<Vec<_>>(),
        [3, 2, 1, 0]
    );
    assert_eq!(stationary_column(0, 1), 0);
    assert_eq!(stationary_column(127, 128), 0);
    // Rows of n = 3 elements, one item each: every row reversed, rows kept in place.
    let loaded = [10, 11, 12, 20, 21, 22];
    assert_eq!(
        stationary_from_load(&loaded, 3, 1),
        Ok(vec![12, 11, 10, 22, 21, 20])
    );
    // Elements of 2 items (bytes of an fp16, a container): whole elements move, their items
    // keep their order.
    let bytes = [0xA0, 0xA1, 0xB0, 0xB1, 0xC0, 0xC1];
    assert_eq!(
        stationary_from_load(&bytes, 3, 2),
        Ok(vec![0xC0, 0xC1, 0xB0, 0xB1, 0xA0, 0xA1])
    );
    // A reversed read (step −1 from the last element) undoes the rule: column c = element c.
    let row: Vec<u16> = (0..128).collect();
    let reversed: Vec<u16> = row.iter().rev().copied().collect();
    assert_eq!(stationary_from_load(&reversed, 128, 1), Ok(row));
    // Not a whole number of rows.
    assert!(matches!(
        stationary_from_load(&loaded[..5], 3, 1),
        Err(PeError::Shape { .. })
    ));
    assert!(stationary_from_load(&loaded, 0, 1).is_err());
    assert_eq!(stationary_from_load::<u8>(&[], 4, 2), Ok(vec![]));
}

/// Element bits as little-endian bytes of `width` bytes each.
fn elem_bytes(bits: &[u32], width: usize) -> Vec<u8> {
    bits.iter()
        .flat_map(|b| b.to_le_bytes()[..width].to_vec())
        .collect()
}

#[test]
fn transpose_pass_moves_fp16_bf16_fp32_bits_unchanged() {
    // Special values of each width: −0.0, NaNs with payloads (quiet and signalling), the
    // smallest and largest subnormals, ±inf, ordinary values.
    let fp16: [u32; 8] = [
        0x8000, 0x7E01, 0x7C01, 0x0001, 0x83FF, 0xFC00, 0x3C00, 0xC500,
    ];
    let bf16: [u32; 8] = [
        0x8000, 0x7FC1, 0x7F81, 0x0001, 0x807F, 0xFF80, 0x3F80, 0xC0A0,
    ];
    let fp32: [u32; 8] = [
        0x8000_0000,
        0x7FC0_1234,
        0x7F80_0001,
        0x0000_0001,
        0x807F_FFFF,
        0xFF80_0000,
        0x3F80_0000,
        0xC0A0_0000,
    ];
    // k = 4 rows, n = 2 columns: W[p][c] = specials[2p + c].
    let (k, n) = (4, 2);
    // Moving [k, f = 5]: column f selects row perm[f] (a selection, not the identity; −0.0
    // counts as 0).
    let perm = [2usize, 0, 3, 1, 2];
    let f = perm.len();
    let moving: Vec<f32> = (0..k * f)
        .map(|i| {
            let (p, ff) = (i / f, i % f);
            if perm[ff] == p {
                1.0
            } else if (p + ff) % 2 == 0 {
                -0.0
            } else {
                0.0
            }
        })
        .collect();
    for (width, specials) in [(2usize, fp16), (2, bf16), (4, fp32)] {
        let w = elem_bytes(&specials, width);
        let mut out = vec![0u8; n * f * width];
        transpose_pass(&w, width, &moving, k, n, f, &mut out).expect("a selection");
        for c in 0..n {
            for (ff, &p) in perm.iter().enumerate() {
                let got = &out[(c * f + ff) * width..][..width];
                let want = &specials[p * n + c].to_le_bytes()[..width];
                assert_eq!(got, want, "width {width}: psum[{c}][{ff}] = W[{p}][{c}]");
            }
        }
    }
    // The identity moving tensor gives the plain transpose.
    let ident: Vec<f32> = (0..k * k)
        .map(|i| if i / k == i % k { 1.0 } else { 0.0 })
        .collect();
    let w = elem_bytes(&fp16, 2);
    let mut out = vec![0u8; n * k * 2];
    transpose_pass(&w, 2, &ident, k, n, k, &mut out).expect("identity");
    let mut want = vec![0u16; n * k];
    let src: Vec<u16> = fp16.iter().map(|&b| b as u16).collect();
    transpose(&src, k, n, &mut want).expect("transpose");
    let want: Vec<u32> = want.iter().map(|&v| u32::from(v)).collect();
    assert_eq!(out, elem_bytes(&want, 2));
}

#[test]
fn transpose_pass_refuses_a_moving_tensor_that_is_not_a_selection() {
    let (k, n, f) = (3, 2, 2);
    let w = vec![0u8; k * n * 2];
    let mut out = vec![0u8; n * f * 2];
    // Column 1: two ones. Column 0 legal.
    let two = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0];
    assert_eq!(
        transpose_pass(&w, 2, &two, k, n, f, &mut out),
        Err(PeError::NotPermutation {
            column: 1,
            ones: 2,
            others: 0
        })
    );
    // Column 0: no one at all.
    let none = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
    assert_eq!(
        transpose_pass(&w, 2, &none, k, n, f, &mut out),
        Err(PeError::NotPermutation {
            column: 0,
            ones: 0,
            others: 0
        })
    );
    // A value other than 0 and 1 (a scaled identity, a NaN) beside the one.
    for bad in [2.0, 0.5, f32::NAN, -1.0] {
        let m = [1.0, 0.0, bad, 1.0, 0.0, 0.0];
        assert_eq!(
            transpose_pass(&w, 2, &m, k, n, f, &mut out),
            Err(PeError::NotPermutation {
                column: 0,
                ones: 1,
                others: 1
            }),
            "{bad}"
        );
    }
    let e = transpose_pass(&w, 2, &two, k, n, f, &mut out).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("transpose with a non-permutation moving tensor"),
        "{e}"
    );
    // Shapes are checked.
    assert!(matches!(
        transpose_pass(&w[..4], 2, &two, k, n, f, &mut out),
        Err(PeError::Shape { .. })
    ));
}

fn le_bytes(containers: &[u32], bytes: usize) -> Vec<u8> {
    containers
        .iter()
        .flat_map(|c| c.to_le_bytes()[..bytes].to_vec())
        .collect()
}

/// Interleave block-major scale rows (`rows × lanes`) into the scale buffer layout.
fn interleave(block_major: &[u8], lanes: usize) -> Vec<u8> {
    let rows = block_major.len() / lanes;
    let mut buf = vec![0u8; (mx::scale_slot(rows - 1) + 1) * lanes];
    for (i, row) in block_major.chunks_exact(lanes).enumerate() {
        buf[mx::scale_slot(i) * lanes..][..lanes].copy_from_slice(row);
    }
    buf
}

#[test]
fn mx_dequantize_layout_and_codes() {
    // e4m3fn: 0x38 = 1.0, 0x7E = 448, 0x01 = 2^-9, 0xFF = NaN; scale 127 = ×1, 128 = ×2.
    let data = le_bytes(&[0x38u32 | 0x7E << 8 | 0x01 << 16 | 0xFF << 24; 32], 4);
    let scales = interleave(&[127, 128, 0xFF, 127], 1);
    let op = MxOperand {
        format: NumFormat::Float8E4m3fnX4,
        partitions: 32,
        lanes: 1,
        data: &data,
        scales: &scales,
    };
    let d = mx_dequantize(&op).expect("deq");
    assert_eq!(d.len(), 128);
    assert_eq!(&d[..3], &[1.0, 448.0, 2f32.powi(-9)]);
    assert!(d[3].is_nan());
    assert_eq!(d[4 * 8], 2.0, "partition 8 is in scale block 1");
    assert!(d[4 * 16].is_nan(), "NaN scale poisons the block");
    assert_eq!(d[4 * 24 + 1], 448.0);
    // Two lanes: row k = 4p + j holds lane j of each container.
    let two = le_bytes(&[0x38u32, 0x40 << 8].repeat(32), 4);
    let op = MxOperand {
        format: NumFormat::Float8E4m3fnX4,
        partitions: 32,
        lanes: 2,
        data: &two,
        scales: &interleave(&[127; 8], 2),
    };
    let d = mx_dequantize(&op).expect("deq");
    assert_eq!(
        &d[..4],
        &[1.0, 0.0, 0.0, 2.0],
        "k0: lane0 j0, lane1 j0; k1: lane0 j1, lane1 j1"
    );
    // fp4 e2m1 in 2-byte containers: nibbles 0x1 = 0.5, 0x7 = 6, 0x9 = -0.5, 0xF = -6.
    let data4 = le_bytes(&[0x1u32 | 0x7 << 4 | 0x9 << 8 | 0xF << 12; 32], 2);
    let op = MxOperand {
        format: NumFormat::Float4E2m1fnX4,
        partitions: 32,
        lanes: 1,
        data: &data4,
        scales: &interleave(&[1, 127, 254, 127], 1),
    };
    let d = mx_dequantize(&op).expect("deq");
    assert_eq!(
        &d[..4],
        &[
            2f32.powi(-127),
            6.0 * 2f32.powi(-126),
            -(2f32.powi(-127)),
            -6.0 * 2f32.powi(-126)
        ]
    );
    assert_eq!(d[4 * 16 + 1], f32::INFINITY, "6 · 2^127 overflows fp32");
    // e5m2: 0x7C = inf.
    let data5 = le_bytes(&[0x7Cu32; 32], 4);
    let sc = interleave(&[127; 4], 1);
    let op = MxOperand {
        format: NumFormat::Float8E5m2X4,
        partitions: 32,
        lanes: 1,
        data: &data5,
        scales: &sc,
    };
    assert_eq!(mx_dequantize(&op).expect("deq")[0], f32::INFINITY);
    let bad = MxOperand {
        format: NumFormat::Bfloat16,
        ..op
    };
    assert!(matches!(mx_dequantize(&bad), Err(PeError::Mx(_))));
    let bad = MxOperand {
        partitions: 96,
        ..op
    };
    assert!(matches!(mx_dequantize(&bad), Err(PeError::Mx(_))));
    let bad = MxOperand {
        scales: &sc[..3],
        ..op
    };
    assert!(matches!(mx_dequantize(&bad), Err(PeError::Mx(_))));
    let mut out = [0.0; 1];
    let m64 = MxOperand {
        partitions: 64,
        ..op
    };
    assert!(matches!(
        mx_matmul(&op, &m64, &mut out),
        Err(PeError::Mx(_))
    ));
}

fn json_f64(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::String(s) if s == "nan" => f64::NAN,
        serde_json::Value::String(s) if s == "inf" => f64::INFINITY,
        serde_json::Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => other.as_f64().expect("number"),
    }
}

#[test]
fn mx_matmul_matches_the_numpy_reference() {
    let path = format!(
        "{}/../testdata/numerics/compute/mx_reference.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("mx_reference.json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 6);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let operand = |v: &serde_json::Value| {
            let format =
                NumFormat::from_name(v["format"].as_str().expect("format")).expect("known format");
            let data: Vec<u32> = v["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|x| x.as_u64().expect("u32") as u32)
                .collect();
            let scales: Vec<u8> = v["scales"]
                .as_array()
                .expect("scales")
                .iter()
                .map(|x| x.as_u64().expect("u8") as u8)
                .collect();
            let p = v["partitions"].as_u64().expect("partitions") as usize;
            let lanes = v["lanes"].as_u64().expect("lanes") as usize;
            let bytes = le_bytes(&data, format.container_bytes());
            (format, p, lanes, bytes, interleave(&scales, lanes))
        };
        let (fs, ps, ns, ds, ss) = operand(&case["stationary"]);
        let (fm, pm, nm, dm, sm) = operand(&case["moving"]);
        let st = MxOperand {
            format: fs,
            partitions: ps,
            lanes: ns,
            data: &ds,
            scales: &ss,
        };
        let mv = MxOperand {
            format: fm,
            partitions: pm,
            lanes: nm,
            data: &dm,
            scales: &sm,
        };
        let mut out = vec![0.0f32; ns * nm];
        mx_matmul(&st, &mv, &mut out).expect("mx matmul");
        let bits = case["expected_bits"].as_array().expect("bits");
        let f64s = case["reference_f64"].as_array().expect("f64");
        let (sd, md) = (
            mx_dequantize(&st).expect("deq"),
            mx_dequantize(&mv).expect("deq"),
        );
        for i in 0..out.len() {
            let want = f32::from_bits(bits[i].as_u64().expect("bits") as u32);
            assert!(
                out[i].to_bits() == want.to_bits() || (out[i].is_nan() && want.is_nan()),
                "{name}[{i}]: {} vs numpy {}",
                out[i],
                want
            );
            let exact = json_f64(&f64s[i]);
            if exact.is_nan() {
                continue;
            }
            let (nn, ff) = (i / nm, i % nm);
            let mag: f64 = (0..4 * ps)
                .map(|k| (sd[k * ns + nn] as f64 * md[k * nm + ff] as f64).abs())
                .sum();
            assert!(
                (out[i] as f64 - exact).abs() <= 4.0 * ps as f64 * 2f64.powi(-23) * mag + 1e-37,
                "{name}[{i}]"
            );
        }
        let nan_outputs = out.iter().filter(|v| v.is_nan()).count();
        if name == "nan_poison_p32" {
            // NaN scale on stationary lane 1 poisons output row 1; the NaN code at moving lane 3
            // poisons column 3.
            assert_eq!(nan_outputs, 4 + 4 - 1, "{out:?}");
        } else {
            assert_eq!(nan_outputs, 0, "{name}");
        }
    }
}

/// fp16 values (the grid of an fp16 operand widened to fp32).
fn f16_grid(v: &mut [f32]) {
    for x in v {
        *x = half::f16::from_f32(*x).to_f32();
    }
}

#[test]
fn every_loop_the_host_has_equals_the_sequential_loop() {
    for lp in Loop::available() {
        for &(k, n, f) in &[
            (1, 1, 1),
            (3, 5, 7),
            (128, 13, 33),
            (64, 128, 96),
            (7, 8, 512),
        ] {
            for grid in [None, Some(f16_grid as fn(&mut [f32])), Some(bf16_grid)] {
                let mut s = values(k * n, 11 + k as u64);
                let mut m = values(k * f, 13 + f as u64);
                if let Some(g) = grid {
                    g(&mut s);
                    g(&mut m);
                }
                let mut fast = vec![0.0; n * f];
                let mut slow = vec![0.0; n * f];
                matmul_with(lp, &s, &m, k, n, f, &mut fast)
                    .expect("available")
                    .expect("matmul");
                matmul_reference(&s, &m, k, n, f, &mut slow);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fast), bits(&slow), "{lp:?} k{k} n{n} f{f}");
            }
        }
    }
}

#[test]
fn exact_products_at_their_bounds() {
    let p = |v: f32| products_exact(&[v], &[1.0]);
    // Twelve significant bits pass, thirteen do not.
    assert!(p(1.0 + 2f32.powi(-11)));
    assert!(!p(1.0 + 2f32.powi(-12)));
    // Magnitudes 2^-60 and 2^60 pass; one binade beyond either does not.
    assert!(p(2f32.powi(-60)) && p(-2f32.powi(60)));
    assert!(!p(2f32.powi(-61)) && !p(2f32.powi(61)));
    assert!(p(0.0) && p(-0.0));
    assert!(!p(f32::INFINITY) && !p(f32::NAN) && !p(f32::MIN_POSITIVE / 2.0));
    // Every fp16 value is exact; a bf16 value beyond 2^60 is not.
    assert!((0..=u16::MAX)
        .map(|b| half::f16::from_bits(b).to_f32())
        .filter(|v| v.is_finite())
        .all(p));
    assert!(!p(half::bf16::from_f32(1e20).to_f32()));
}

/// A product that rounds in fp32, added onto its negation: the unfused order gives 0, a fused
/// multiply-add 2^-24. Every loop must give the sequential loop's 0 (the fast path is taken only
/// where products are exact).
#[test]
fn an_inexact_product_is_never_fused() {
    let a = 1.0 + 2f32.powi(-12);
    let s = [1.0, a];
    let m = [-(1.0 + 2f32.powi(-11)), a];
    let mut slow = [0.0f32];
    matmul_reference(&s, &m, 2, 1, 1, &mut slow);
    assert_eq!(slow[0], 0.0);
    assert_eq!(
        a.mul_add(a, m[0]),
        2f32.powi(-24),
        "the fused result differs"
    );
    for lp in Loop::available() {
        for (n, f) in [(1, 1), (8, 32), (6, 16)] {
            // Tile the 1×1 case across n × f outputs so the vector loops run it.
            let s: Vec<f32> = [1.0, a].iter().flat_map(|&v| vec![v; n]).collect();
            let m: Vec<f32> = m.iter().flat_map(|&v| vec![v; f]).collect();
            let mut out = vec![1.0f32; n * f];
            matmul_with(lp, &s, &m, 2, n, f, &mut out)
                .expect("available")
                .expect("matmul");
            assert!(out.iter().all(|&v| v.to_bits() == 0), "{lp:?} {n}x{f}");
        }
    }
}
