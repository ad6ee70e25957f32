//! Write the small/big-tile benchmark's kernels for `benches/numpy_baseline.py`: for each of
//! `mixed` and `big`, the engine streams (`dve.bin`, `act.bin`, `pool.bin`, empty streams
//! omitted), the SBUF inputs (`inputs.f32`: `[128 × words]` little-endian fp32, per-partition
//! bytes `0 .. 4 × words`), and the simulator's SBUF after the run (`result.f32`: `[128 ×
//! words]` from byte 0, every region the kernel writes); and `mixed/mixed.neff`, the mixed kernel
//! as `sim run` reads it (`small_tiles::mixed_neff`), for the whole-process timing.
//!
//! `cargo run -p tpbsim-benches --example small_tiles_streams -- OUT_DIR [MIXED_BUNDLES]
//! [BIG_ADDS]` (defaults 30000 and 400, as in the benchmark).

use std::path::Path;

use tpbsim_benches::small_tiles::{
    big_adds, inputs, mixed, mixed_neff, region, run, sbuf_words, BIG, BIG_C, BIG_INPUT_WORDS,
    MIXED_INPUT_WORDS,
};
use tpbsim_isa::Engine;
use tpbsim_sim::machine::Kernel;

fn write_f32(path: &Path, v: &[f32]) -> std::io::Result<()> {
    std::fs::write(
        path,
        v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
    )
}

fn dump(dir: &Path, k: &Kernel, input_words: usize, result_words: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for e in [Engine::Dve, Engine::Act, Engine::Pool] {
        let s = &k.streams[e as usize];
        if !s.is_empty() {
            let bytes: Vec<u8> = s.iter().flat_map(|b| b.0).collect();
            std::fs::write(dir.join(format!("{}.bin", e.short())), bytes)?;
        }
    }
    write_f32(&dir.join("inputs.f32"), &inputs(input_words))?;
    let m = run(k, input_words);
    write_f32(&dir.join("result.f32"), &sbuf_words(&m, 0, result_words))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: small_tiles_streams OUT_DIR [MIXED_BUNDLES] [BIG_ADDS]");
        std::process::exit(2);
    };
    let num = |i: usize, d: usize| -> usize {
        args.get(i).map_or(d, |s| {
            s.parse().unwrap_or_else(|_| {
                eprintln!("`{s}` is not a count");
                std::process::exit(2)
            })
        })
    };
    let out = Path::new(out);
    let r = dump(
        &out.join("mixed"),
        &mixed(num(1, 30_000)),
        MIXED_INPUT_WORDS,
        region::END as usize / 4,
    )
    .and_then(|()| {
        dump(
            &out.join("big"),
            &big_adds(num(2, 400)),
            BIG_INPUT_WORDS,
            (BIG_C / 4 + BIG) as usize,
        )
    });
    if let Err(e) = r {
        eprintln!("writing {}: {e}", out.display());
        std::process::exit(1);
    }
    let neff = out.join("mixed").join("mixed.neff");
    let written = mixed_neff(num(1, 30_000))
        .map_err(|e| e.to_string())
        .and_then(|n| n.write_to(&neff).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!("writing {}: {e}", neff.display());
        std::process::exit(1);
    }
}
