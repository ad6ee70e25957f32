//! Builds large kernels for measuring simulation at scale (they are not kept in testdata:
//! a straight-line stream of 10^6 bundles is 64 MB before compression).
//!
//! ```sh
//! cargo run -p tpbsim-sim --example build_big_kernels -- adds N OUT.neff
//! ```
//!
//! `adds N`: one DVE stream of `N` one-partition one-element fp32 adds, `acc += one`, with
//! `acc` and `one` in SBUF partition 0 (no DRAM variables, no DMA): `N` bundle positions that
//! all hold the same bytes.

use std::path::PathBuf;

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Addr4, AluOp, Dtype, DtypePair, Engine, Gen, Tensor, TensorTensor};
use tpbsim_sim::machine::pack::Package;
use tpbsim_sim::machine::Geometry;

const GEN: Gen = Gen::V3;

fn adds(n: usize) -> Package {
    let g = Geometry::of(GEN);
    let f32t = Dtype(
        NumFormat::Float32
            .wire_tag(GEN)
            .expect("fp32 has a wire tag"),
    );
    let t = |off: u32| Tensor::<3>::new(Addr4::imm(g.sbuf_address(0, off)), [1; 3], [1; 3]);
    let add = TensorTensor {
        in_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        op: AluOp(0x04),
        num_active_partitions: 1,
        src0: t(0),
        src1: t(4),
        dst: t(0),
        ..Default::default()
    }
    .to_bundle();
    let mut p = Package::new(format!("adds_{n}"), GEN);
    p.streams[Engine::Dve as usize] = vec![add; n];
    p
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: build_big_kernels adds N OUT.neff";
    let (kind, n, out) = match args.as_slice() {
        [k, n, out] => (k.as_str(), n.parse::<usize>().ok(), PathBuf::from(out)),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let p = match (kind, n) {
        ("adds", Some(n)) => adds(n),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    match p
        .to_neff()
        .and_then(|neff| neff.write_to(&out).map_err(Into::into))
    {
        Ok(()) => println!("wrote {}", out.display()),
        Err(e) => {
            eprintln!("{}: {e}", out.display());
            std::process::exit(1);
        }
    }
}
