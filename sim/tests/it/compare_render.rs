//! The rendered comparison of an output with its reference: the ulp histogram line names
//! exactly the buckets that hold elements, each with its count.

use tpbsim_isa::NumFormat;
use tpbsim_sim::machine::compare::{compare, Comparison, Tolerance};

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `x` moved `n` representable values up.
fn ulps_above(x: f32, n: u32) -> f32 {
    f32::from_bits(x.to_bits() + n)
}

fn compared(got: &[f32], want: &[f32]) -> Comparison {
    compare(
        "y",
        NumFormat::Float32,
        &[got.len()],
        &f32s(got),
        &[want.len()],
        &f32s(want),
        Tolerance::default(),
    )
    .unwrap()
}

fn histogram_line(c: &Comparison) -> String {
    let text = c.render();
    text.lines()
        .find(|l| l.starts_with("  ulp histogram:"))
        .unwrap_or_else(|| panic!("no histogram line in {text}"))
        .to_string()
}

#[test]
fn the_ulp_histogram_lists_each_non_empty_bucket_and_no_other() {
    let want = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let got = [
        1.0,
        2.0,
        ulps_above(3.0, 1),
        ulps_above(4.0, 2),
        ulps_above(5.0, 3),
        ulps_above(6.0, 4),
        ulps_above(7.0, 100),
        f32::NAN,
    ];
    let c = compared(&got, &want);
    assert_eq!(
        histogram_line(&c),
        "  ulp histogram: 0:2 1:1 2:1 3-4:2 65-128:1 >1024:1"
    );
    // Every element is counted once.
    assert_eq!(c.ulp_histogram.iter().sum::<u64>(), 8);
}

#[test]
fn a_matching_output_has_one_bucket() {
    let v = [0.5f32, -1.25, 3.0];
    let c = compared(&v, &v);
    assert!(c.passed());
    assert_eq!(histogram_line(&c), "  ulp histogram: 0:3");
}
