//! MEMSET (0x49) on POOL and DVE: every element of the destination tile takes the
//! low bytes of the fill value; the bytes around the tile stay as they were.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Addr4, Dtype, Engine, Gen, Memset, Tensor};
use tpbsim_sim::machine::{Geometry, Kernel, Machine, RunOptions};

const G: Gen = Gen::V3;

/// Fill `partitions` × 3 `format` elements at byte 8 of partition 0 onwards.
fn memset(format: NumFormat, partitions: u8, fill: u32) -> tpbsim_isa::Bundle {
    let dst = Tensor::new(
        Addr4::imm(Geometry::of(G).sbuf_address(0, 8)),
        [1, 3, 3, 3],
        [3, 1, 1, 1],
    );
    Memset {
        dtype: Dtype(format.wire_tag(G).expect("wire tag")),
        num_active_channels: partitions,
        fill_value: fill,
        dst,
        ..Default::default()
    }
    .to_bundle()
}

#[test]
fn memset_fills_the_tile_with_the_low_bytes_of_the_fill_value() {
    let g = Geometry::of(G);
    for engine in [Engine::Pool, Engine::Dve] {
        for (format, fill) in [
            (NumFormat::Bfloat16, 0xDEAD_3FC0u32),
            (NumFormat::Float32, 0x4049_0FDB),
            (NumFormat::Int8, 0x1234_56F9),
        ] {
            let mut k = Kernel {
                gen: Some(G),
                ..Default::default()
            };
            k.streams[engine as usize] = vec![memset(format, 2, fill)];
            let mut m = Machine::new(&k, G).unwrap();
            m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
            m.run(&RunOptions::default(), &mut |_| {})
                .unwrap_or_else(|f| panic!("{engine:?} {}: {f}", format.name()));
            let n = format.container_bytes();
            let one = &fill.to_le_bytes()[..n];
            for p in 0..3 {
                let row = m
                    .chip
                    .read_flat(g.sbuf_address(p, 0), 8 + 3 * n + 8)
                    .unwrap();
                let want: Vec<u8> = if p < 2 {
                    [&[0u8; 8][..], &one.repeat(3), &[0u8; 8][..]].concat()
                } else {
                    vec![0; 8 + 3 * n + 8]
                };
                assert_eq!(row, &want[..], "{engine:?} {} partition {p}", format.name());
            }
        }
    }
}
