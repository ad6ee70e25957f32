//! Write an LNC2 matmul NEFF of the compiler's shape (`tpbsim_benches::lnc2_matmul`) and,
//! optionally, its inputs:
//!
//! ```sh
//! cargo run --release -p tpbsim-benches --example lnc2_matmul_neff -- K N DIR [ints|random]
//! ```
//!
//! writes `DIR/matmul_KxN.neff` and with `ints` (values in -2..=2, every partial sum exact) or
//! `random` (uniform in [-1, 1), rounded to fp16) `DIR/x.npy` and `DIR/y.npy`, streamed to disk
//! row by row so that the large kernel's 4 GiB `y` needs no memory of that size. K = 32768,
//! N = 65536 is the compiler's `matmul_large`.

use std::io::Write;

use half::f16;
use tpbsim_benches::lnc2_matmul::{Lnc2Matmul, ROWS};

fn main() {
    if let Err(e) = run() {
        eprintln!("lnc2_matmul_neff: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 || args.len() > 4 {
        return Err("usage: lnc2_matmul_neff K N DIR [ints|random]".into());
    }
    let num = |s: &str| s.parse::<usize>().map_err(|e| format!("`{s}`: {e}"));
    let g = Lnc2Matmul::new(num(&args[0])?, num(&args[1])?).map_err(|e| e.to_string())?;
    let dir = std::path::Path::new(&args[2]);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("matmul_{}x{}.neff", g.k, g.n));
    g.neff()
        .and_then(|n| n.write_to(&path))
        .map_err(|e| e.to_string())?;
    let c = g.counts();
    println!(
        "{}: per core SP {} ACT {} PE {} DVE {} Pool {} bundles",
        path.display(),
        c.sp,
        c.act,
        c.pe,
        c.dve,
        c.pool
    );
    if let Some(kind) = args.get(3) {
        let ints = match kind.as_str() {
            "ints" => true,
            "random" => false,
            k => return Err(format!("`{k}`: expected ints or random")),
        };
        write_input(&dir.join("x.npy"), ROWS, g.k, ints, 1)?;
        write_input(&dir.join("y.npy"), g.k, g.n, ints, 2)?;
    }
    Ok(())
}

fn write_input(
    path: &std::path::Path,
    rows: usize,
    cols: usize,
    ints: bool,
    seed: u64,
) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f =
        std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(path).map_err(err)?);
    let dict = format!("{{'descr': '<f2', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let total = 10 + dict.len() + 1;
    let pad = total.div_ceil(64) * 64 - total;
    let header_len = (dict.len() + pad + 1) as u16;
    f.write_all(b"\x93NUMPY\x01\x00").map_err(err)?;
    f.write_all(&header_len.to_le_bytes()).map_err(err)?;
    f.write_all(dict.as_bytes()).map_err(err)?;
    f.write_all(&vec![b' '; pad]).map_err(err)?;
    f.write_all(b"\n").map_err(err)?;
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut row = vec![0u8; cols * 2];
    for _ in 0..rows {
        for e in row.chunks_exact_mut(2) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = if ints {
                (s % 5) as f32 - 2.0
            } else {
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            };
            e.copy_from_slice(&f16::from_f32(v).to_le_bytes());
        }
        f.write_all(&row).map_err(err)?;
    }
    f.flush().map_err(err)
}
