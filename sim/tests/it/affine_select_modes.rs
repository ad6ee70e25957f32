//! AffineSelect (0x92) under each of its four comparisons of the mask with 0 (`fill_mode`
//! 0 GT, 1 GE, 2 EQ, 3 NE): lanes where the comparison holds keep the source, the others take
//! the fill from the register.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Addr4, AffineSelect, AffineSelectCmp, Dtype, DtypePair, Engine, Gen, Tensor};
use tpbsim_sim::machine::{Geometry, Kernel, Machine, RunOptions};

const G: Gen = Gen::V3;
const PARTS: u32 = 3;
const COLS: usize = 4;
const FILL: f32 = -1.0e4;

fn tile(offset: u32) -> Tensor<2> {
    Tensor::new(
        Addr4::imm(Geometry::of(G).sbuf_address(0, offset)),
        [1, COLS as i16],
        [COLS as u16, 1],
    )
}

/// The fp32 result rows of AffineSelect with mask[p][c] = c − p and `fill_mode` `mode`, on
/// source x[p][c] = 4p + c + 0.5.
fn run(mode: u8) -> Vec<Vec<f32>> {
    let g = Geometry::of(G);
    let fp32 = Dtype(NumFormat::Float32.wire_tag(G).expect("wire tag"));
    let b = AffineSelect {
        num_active_partitions: PARTS as u8,
        in_out_dtypes: DtypePair::new(fp32, fp32),
        fill_mode: AffineSelectCmp(mode),
        fill_reg: 3,
        mask_base: 0,
        mask_step: [1, 0, 0, 0],
        mask_num: [COLS as u16, 1, 1, 1],
        src: tile(0),
        dst: tile(64),
        channel_multiplier: -1,
        ..Default::default()
    }
    .to_bundle();
    let mut k = Kernel {
        gen: Some(G),
        ..Default::default()
    };
    k.streams[Engine::Pool as usize] = vec![b];
    let mut m = Machine::new(&k, G).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    for p in 0..PARTS {
        let row: Vec<u8> = (0..COLS)
            .flat_map(|c| (4.0 * p as f32 + c as f32 + 0.5).to_le_bytes())
            .collect();
        m.chip
            .write_flat(g.sbuf_address(p, 0), row.len())
            .unwrap()
            .copy_from_slice(&row);
    }
    m.regs[Engine::Pool as usize][3] = FILL.to_bits();
    m.run(&RunOptions::default(), &mut |_| {})
        .unwrap_or_else(|f| panic!("fill_mode {mode}: {f}"));
    (0..PARTS)
        .map(|p| {
            m.chip
                .read_flat(g.sbuf_address(p, 64), 4 * COLS)
                .unwrap()
                .chunks_exact(4)
                .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect()
        })
        .collect()
}

#[test]
fn each_fill_mode_keeps_the_lanes_its_comparison_admits() {
    type Keep = fn(i32) -> bool;
    let modes: [(u8, Keep); 4] = [
        (0, |m| m > 0),
        (1, |m| m >= 0),
        (2, |m| m == 0),
        (3, |m| m != 0),
    ];
    for (mode, keep) in modes {
        let got = run(mode);
        for (p, row) in got.iter().enumerate() {
            let want: Vec<f32> = (0..COLS)
                .map(|c| {
                    if keep(c as i32 - p as i32) {
                        4.0 * p as f32 + c as f32 + 0.5
                    } else {
                        FILL
                    }
                })
                .collect();
            assert_eq!(row, &want, "fill_mode {mode} partition {p}");
        }
    }
}
