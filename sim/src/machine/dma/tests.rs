//! Tests of the DMA transfers.

use super::*;
use crate::machine::geometry::{Space, PARTITIONS, PSUM_BYTES_PER_PARTITION};
use crate::machine::memory::{DramVar, VarKind};
use tpbsim_isa::Gen;

fn setup() -> (Geometry, Dram, OnChip) {
    let g = Geometry::of(Gen::V3);
    let mut d = Dram::default();
    let bytes: Vec<u8> = (0..64u8).collect();
    d.insert(
        1,
        DramVar {
            name: "in".into(),
            kind: VarKind::Input,
            bytes: bytes.into(),
        },
    );
    d.insert(
        2,
        DramVar {
            name: "out".into(),
            kind: VarKind::Output,
            bytes: vec![0; 64].into(),
        },
    );
    (g, d, OnChip::new(g).unwrap())
}

#[test]
fn dram_to_sbuf_rows_and_back() {
    let (g, mut d, mut c) = setup();
    let from = DmaSide {
        mem: DmaMem::Dram(1),
        addr: 0,
        format: NumFormat::Float32,
        dims: vec![(4, 4), (16, 4)],
    };
    let to = onchip_rows(&g, g.sbuf_address(2, 32), NumFormat::Float32, 4, 4);
    let mut buf = Vec::new();
    let n = transfer(
        &DmaDesc {
            from: from.clone(),
            to: to.clone(),
        },
        &mut d,
        &mut c,
        &mut buf,
    )
    .unwrap();
    assert_eq!(n, 64);
    assert_eq!(
        &c.partition(Space::Sbuf, 3)[32..48],
        &(16..32).collect::<Vec<u8>>()[..]
    );
    let back = DmaSide {
        mem: DmaMem::Dram(2),
        ..from
    };
    transfer(&DmaDesc { from: to, to: back }, &mut d, &mut c, &mut buf).unwrap();
    assert_eq!(d.get(2).unwrap().bytes, (0..64).collect::<Vec<u8>>());
}

#[test]
fn transposing_steps() {
    let (_, mut d, mut c) = setup();
    // Read 4x4 u8 column-major into out (row-major).
    let from = DmaSide {
        mem: DmaMem::Dram(1),
        addr: 0,
        format: NumFormat::Uint8,
        dims: vec![(4, 4), (1, 4)],
    };
    let to = DmaSide {
        mem: DmaMem::Dram(2),
        addr: 0,
        format: NumFormat::Uint8,
        dims: vec![(1, 16)],
    };
    transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap();
    assert_eq!(&d.get(2).unwrap().bytes[..8], &[0, 4, 8, 12, 1, 5, 9, 13]);
}

#[test]
fn casting_copy() {
    let (g, mut d, mut c) = setup();
    let vals = [1.0f32, -2.5, 3.0e9, 0.333];
    d.bytes_mut(1).unwrap()[..16].copy_from_slice(
        &vals
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let from = DmaSide {
        mem: DmaMem::Dram(1),
        addr: 0,
        format: NumFormat::Float32,
        dims: vec![(4, 4)],
    };
    let to = onchip_rows(&g, 0, NumFormat::Bfloat16, 1, 4);
    transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap();
    let got: Vec<u16> = c.partition(Space::Sbuf, 0)[..8]
        .chunks(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    // RNE to bf16: 1.0 = 0x3F80, -2.5 = 0xC020, 3e9 ≈ 0x4F33, 0.333 → 0x3EAA.
    assert_eq!(got, vec![0x3F80, 0xC020, 0x4F33, 0x3EAA]);
}

/// The bytes of a side's runs, as a set.
fn covered(side: &DmaSide, covered_runs: bool) -> std::collections::BTreeSet<i128> {
    let mut set = std::collections::BTreeSet::new();
    let mut add = |at: i128, len: usize| set.extend(at..at + len as i128);
    if covered_runs {
        side.for_each_covered_run(&mut add);
    } else {
        side.for_each_run(|at, len| {
            add(at, len);
            Ok(())
        })
        .unwrap();
    }
    set
}

#[test]
fn covered_runs_cover_the_same_bytes() {
    let side = |dims: Vec<(i64, u32)>, format| DmaSide {
        mem: DmaMem::Dram(1),
        addr: 4096,
        format,
        dims,
    };
    let cases = [
        // transposing: inner step 64, outer step 1 (bytes of u8)
        (vec![(64, 16), (1, 64)], NumFormat::Uint8, 1),
        (vec![(-64, 16), (2, 32)], NumFormat::Bfloat16, 1),
        (vec![(4, 8), (64, 3), (0, 5)], NumFormat::Float32, 3),
        (vec![(2, 4), (1, 4)], NumFormat::Uint8, 1), // overlapping copies
        (vec![(2, 4), (3, 4)], NumFormat::Uint8, 16), // neither abuts the element
        (vec![(256, 4), (1, 16)], NumFormat::Uint8, 4), // gaps stay gaps
        (vec![(4, 0), (8, 2)], NumFormat::Float32, 0),
    ];
    for (dims, format, runs) in cases {
        let s = side(dims.clone(), format);
        assert_eq!(covered(&s, true), covered(&s, false), "{dims:?}");
        let mut n = 0;
        s.for_each_covered_run(|_, _| n += 1);
        assert_eq!(n, runs, "{dims:?}");
    }
}

#[test]
fn a_dimension_of_size_zero_moves_nothing() {
    let (g, mut d, mut c) = setup();
    let before = (
        d.get(1).unwrap().bytes.clone(),
        c.partition(Space::Sbuf, 0)[..64].to_vec(),
    );
    let empty = |mem| DmaSide {
        mem,
        addr: 0,
        format: NumFormat::Float32,
        dims: vec![(4, 4), (16, 0)],
    };
    let desc = DmaDesc {
        from: empty(DmaMem::Dram(1)),
        to: DmaSide {
            addr: u64::from(g.sbuf_address(0, 0)),
            ..empty(DmaMem::OnChip)
        },
    };
    assert_eq!(transfer(&desc, &mut d, &mut c, &mut Vec::new()).unwrap(), 0);
    let mut runs = 0;
    desc.from
        .for_each_run(|_, _| {
            runs += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(runs, 0);
    assert_eq!(d.get(1).unwrap().bytes, before.0);
    assert_eq!(c.partition(Space::Sbuf, 0)[..64], before.1[..]);
    // An empty side against a non-empty one is a count mismatch.
    let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 4);
    let e = transfer(
        &DmaDesc {
            from: empty(DmaMem::Dram(1)),
            to,
        },
        &mut d,
        &mut c,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(e, DmaError::Count { from: 0, to: 4 });
}

#[test]
fn errors_name_the_side() {
    let (g, mut d, mut c) = setup();
    let from = DmaSide {
        mem: DmaMem::Dram(1),
        addr: 8,
        format: NumFormat::Float32,
        dims: vec![(4, 15)],
    };
    let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 15);
    let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`from` side: DRAM variable `in`: bytes 8..68 are outside its 64 bytes"
    );
    let from = DmaSide {
        mem: DmaMem::Dram(1),
        addr: 0,
        format: NumFormat::Float32,
        dims: vec![(4, 4)],
    };
    let to = onchip_rows(
        &g,
        g.sbuf_address(0, g.sbuf_bytes_per_partition - 8),
        NumFormat::Float32,
        1,
        4,
    );
    let e = transfer(
        &DmaDesc {
            from: from.clone(),
            to,
        },
        &mut d,
        &mut c,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(e, DmaError::Access { side: Side::To, .. }), "{e}");
    let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 3);
    let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
    assert_eq!(e, DmaError::Count { from: 4, to: 3 });
    let from = DmaSide {
        mem: DmaMem::Dram(9),
        addr: 0,
        format: NumFormat::Uint8,
        dims: vec![],
    };
    let to = DmaSide {
        mem: DmaMem::Dram(2),
        addr: 0,
        format: NumFormat::Uint8,
        dims: vec![],
    };
    let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("variable id 9"), "{e}");
}

#[test]
fn streamed_chunks_give_the_whole_transfer() {
    let (g, _, _) = setup();
    let mut d = Dram::default();
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let kind = VarKind::Input;
    d.insert(
        1,
        DramVar {
            name: "in".into(),
            kind,
            bytes: bytes.into(),
        },
    );
    let out = || DramVar {
        name: "out".into(),
        kind: VarKind::Output,
        bytes: vec![0; 8192].into(),
    };
    d.insert(2, out());
    let stride = g.sbuf_partition_stride() as i64;
    let chip_side = |format, dims| DmaSide {
        mem: DmaMem::OnChip,
        addr: u64::from(g.sbuf_address(0, 0)),
        format,
        dims,
    };
    let dram_side = |format, dims| DmaSide {
        mem: DmaMem::Dram(2),
        addr: 0,
        format,
        dims,
    };
    let cases = [
        // transposing u8 into bf16 (a cast), chunks splitting runs
        (
            vec![(64, 16), (1, 64)],
            NumFormat::Uint8,
            dram_side(NumFormat::Bfloat16, vec![(2, 1024)]),
        ),
        // f32 rows with a zero step (the same row again)
        (
            vec![(4, 8), (0, 3), (32, 4)],
            NumFormat::Float32,
            dram_side(NumFormat::Float32, vec![(4, 96)]),
        ),
        (
            vec![(4, 256)],
            NumFormat::Float32,
            chip_side(NumFormat::Float32, vec![(4, 8), (stride, 32)]),
        ),
    ];
    for (fdims, ff, to) in cases {
        let desc = DmaDesc {
            from: DmaSide {
                mem: DmaMem::Dram(1),
                addr: 0,
                format: ff,
                dims: fdims,
            },
            to,
        };
        let (mut d1, mut c1) = (d.clone(), OnChip::new(g).unwrap());
        let (mut d2, mut c2) = (d.clone(), OnChip::new(g).unwrap());
        let n1 = transfer(&desc, &mut d1, &mut c1, &mut Vec::new()).unwrap();
        for chunk in [2, 6, 64] {
            let n2 = streamed(&desc, &mut d2, &mut c2, &mut Vec::new(), chunk).unwrap();
            assert_eq!(n1, n2);
            assert_eq!(d1.get(2).unwrap().bytes, d2.get(2).unwrap().bytes);
            assert_eq!(
                c1.partition(Space::Sbuf, 0)[..1024],
                c2.partition(Space::Sbuf, 0)[..1024]
            );
        }
    }
    // A source leaving its variable fails before anything is written.
    let desc = DmaDesc {
        from: DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![(1, 4097)],
        },
        to: DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![(1, 4097)],
        },
    };
    let e = streamed(
        &desc,
        &mut d,
        &mut OnChip::new(g).unwrap(),
        &mut Vec::new(),
        2,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            DmaError::Access {
                side: Side::From,
                ..
            }
        ),
        "{e}"
    );
    assert!(d.get(2).unwrap().bytes.iter().all(|&b| b == 0));
}

mod fast_path {
    use super::*;
    use proptest::prelude::*;

    const EDGE: u32 = 4096;

    /// DRAM variables 1 (4 KiB) and 2 (300 bytes), seeded contents; variable 9 is unknown.
    fn memories(g: Geometry) -> (Dram, OnChip) {
        let mut d = Dram::default();
        for (id, len) in [(1u32, 4096usize), (2, 300)] {
            let bytes = (0..len)
                .map(|i| (i * 7 + id as usize) as u8)
                .collect::<Vec<u8>>()
                .into();
            let name = format!("v{id}");
            let kind = VarKind::Input;
            d.insert(id, DramVar { name, kind, bytes });
        }
        let mut c = OnChip::new(g).unwrap();
        for space in [Space::Sbuf, Space::Psum] {
            let per = g.bytes_per_partition(space) as usize;
            for p in 0..PARTITIONS {
                let part = c.partition_mut(space, p);
                for (i, b) in part[..EDGE as usize].iter_mut().enumerate() {
                    *b = (i as u32 * 13 + p) as u8;
                }
                part[per - EDGE as usize..].fill(p as u8 ^ 0x5A);
            }
        }
        (d, c)
    }

    /// The bytes a generated side can reach: the first and last 4 KiB of each partition.
    fn edges(c: &OnChip, g: Geometry) -> Vec<u8> {
        let mut v = Vec::new();
        for space in [Space::Sbuf, Space::Psum] {
            let per = g.bytes_per_partition(space) as usize;
            for p in 0..PARTITIONS {
                let part = c.partition(space, p);
                v.extend_from_slice(&part[..EDGE as usize]);
                v.extend_from_slice(&part[per - EDGE as usize..]);
            }
        }
        v
    }

    fn format() -> impl Strategy<Value = NumFormat> {
        prop_oneof![
            Just(NumFormat::Float32),
            Just(NumFormat::Bfloat16),
            Just(NumFormat::Float8E4m3fn),
            Just(NumFormat::Int32),
        ]
    }

    /// A side with the given counts: DRAM (known or unknown variable) or on-chip (SBUF or
    /// PSUM, near either end of a partition), steps of either sign, partition steps.
    fn side(counts: Vec<u32>) -> impl Strategy<Value = DmaSide> {
        let n = counts.len();
        let g = Geometry::of(Gen::V3);
        (
            prop_oneof![Just(1u32), Just(2), Just(9), Just(0)],
            0u32..128,
            any::<bool>(),
            any::<bool>(),
            0u32..EDGE,
            format(),
            proptest::collection::vec(
                prop_oneof![
                    -8i64..9,
                    Just(g.sbuf_partition_stride() as i64),
                    Just(-(g.sbuf_partition_stride() as i64)),
                    Just(g.psum_address(1, 0) as i64 - g.psum_address(0, 0) as i64),
                ],
                n,
            ),
            any::<bool>(),
        )
            .prop_map(move |(mem, p, psum, high, off, format, steps, dense)| {
                let eb = format.container_bytes() as i64;
                let mut run = eb;
                let dims = counts
                    .iter()
                    .zip(steps)
                    .map(|(&c, s)| {
                        // Dense dimensions exercise run merging.
                        let step = if dense {
                            run
                        } else if s.abs() < 9 {
                            s * eb
                        } else {
                            s
                        };
                        run *= c.max(1) as i64;
                        (step, c)
                    })
                    .collect();
                let addr = match mem {
                    0 => {
                        let per = if psum {
                            PSUM_BYTES_PER_PARTITION
                        } else {
                            g.sbuf_bytes_per_partition
                        };
                        let off = if high { per - EDGE + off } else { off };
                        if psum {
                            g.psum_address(p, off)
                        } else {
                            g.sbuf_address(p, off)
                        }
                    }
                    _ => off,
                } as u64;
                DmaSide {
                    mem: if mem == 0 {
                        DmaMem::OnChip
                    } else {
                        DmaMem::Dram(mem)
                    },
                    addr,
                    format,
                    dims,
                }
            })
    }

    fn desc() -> impl Strategy<Value = DmaDesc> {
        proptest::collection::vec(0u32..6, 0..6).prop_flat_map(|counts| {
            let mut to_counts = counts.clone();
            to_counts.reverse();
            (side(counts), side(to_counts)).prop_map(|(from, to)| DmaDesc { from, to })
        })
    }

    fn cases() -> u32 {
        std::env::var("TPBSIM_PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        /// The resolved copy loops give the bytes, counts and errors of the per-run
        /// checked path.
        #[test]
        fn same_as_checked_path(d in desc()) {
            let g = Geometry::of(Gen::V3);
            let (mut d1, mut c1) = memories(g);
            let (mut d2, mut c2) = memories(g);
            let (mut b1, mut b2) = (Vec::new(), Vec::new());
            let fast = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                transfer_with(&d, &mut d1, &mut c1, &mut b1, true)
            }));
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                transfer_with(&d, &mut d2, &mut c2, &mut b2, false)
            }));
            prop_assert_eq!(fast.is_ok(), checked.is_ok());
            if let (Ok(a), Ok(b)) = (fast, checked) {
                prop_assert_eq!(a, b);
                for id in [1, 2] {
                    prop_assert_eq!(&d1.get(id).unwrap().bytes, &d2.get(id).unwrap().bytes);
                }
                prop_assert!(edges(&c1, g) == edges(&c2, g));
            }
        }
    }
}
