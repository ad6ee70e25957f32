//! TensorDequantize's NF4 codebook follows the NormalFloat construction (codes 0..6 the
//! negative quantiles in increasing order, 7 zero, 8..15 the positive ones, ends at ±1), and a
//! destination of the wrong size is refused with its own word count.

use tpbsim_isa::NumFormat;
use tpbsim_sim::numerics::dequant::{dequantize_partition, DequantError, DequantFmt};
use tpbsim_sim::numerics::{to_f32, CastPolicy};

const NF4: DequantFmt = DequantFmt::Nf4ToE4m3;

#[test]
fn nf4_codes_are_ordered_normal_quantiles() {
    let v: Vec<f32> = (0..16).map(|c| NF4.value(c)).collect();
    assert!(v.windows(2).all(|w| w[0] < w[1]), "not increasing: {v:?}");
    assert_eq!((v[0], v[7], v[15]), (-1.0, 0.0, 1.0), "{v:?}");
    assert!(v[..7].iter().all(|&x| x < 0.0), "{v:?}");
    assert!(v[8..].iter().all(|&x| x > 0.0), "{v:?}");
}

#[test]
fn nf4_dequantizes_in_code_order_with_the_codes_signs() {
    // Codes 0..15, least-significant nibble first.
    let src = [0x7654_3210u32, 0xFEDC_BA98];
    let mut out = [0u8; 16];
    dequantize_partition(NF4, 0, &src, &mut out, &CastPolicy::DEVICE).unwrap();
    let got: Vec<f32> = out
        .iter()
        .map(|&b| to_f32(NumFormat::Float8E4m3fn, u64::from(b)))
        .collect();
    // E4M3 rounding may merge neighbours, never reorder them.
    assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
    assert!(got[..7].iter().all(|&x| x < 0.0), "{got:?}");
    assert_eq!(got[7], 0.0);
    assert!(got[8..].iter().all(|&x| x > 0.0), "{got:?}");
    assert_eq!((got[0], got[15]), (-1.0, 1.0));
}

#[test]
fn a_destination_of_the_wrong_size_is_refused_with_its_word_count() {
    // 5 words of 4-bit codes expand to 10 words; the destination holds 8.
    let src = [0u32; 5];
    let mut out = [0u8; 32];
    let e = dequantize_partition(
        DequantFmt::E2m1ToE5m2,
        0,
        &src,
        &mut out,
        &CastPolicy::DEVICE,
    )
    .unwrap_err();
    assert_eq!(
        e,
        DequantError::Ratio {
            src: 5,
            dst: 8,
            want: 10,
            ratio: "2:1",
        }
    );
    assert_eq!(
        e.to_string(),
        "5 source words per partition need 10 destination words (2:1), the destination has 8"
    );
}
