//! Decode throughput over a 64 MiB mixed stream of valid bundles in a memory map, against a
//! raw checksum pass over the same map in the same criterion group (the baseline).
//!
//! With `TPBSIM_BENCH_LARGE=1` a second group, `decode_1gib`, runs the same passes over a
//! 1 GiB stream: larger than the last-level cache of current server parts, so both passes
//! stream from DRAM instead of reading a cache-resident map.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::io::Write;
use tpbsim_isa::{decode, Bundle, Gen, Inst};

/// Opcodes of the mix: typed formats of every engine plus raw-form opcodes.
const MIX: &[u8] = &[
    0x01, 0x02, 0x01, 0x02, 0x09, 0x0A, 0x08, 0x07, 0x21, 0x25, 0x24, 0x22, 0x41, 0x51, 0x42, 0x43,
    0x53, 0x46, 0x47, 0x45, 0x49, 0x7E, 0x72, 0x99, 0x9D, 0xEA, 0xE8, 0xE3, 0x7B, 0xBC, 0xA0, 0xA2,
    0xA4, 0xA8, 0xA9, 0xD4, 0xC1, 0xDF, 0xF0, 0x61, 0x68, 0xB8,
];

const GEN: Gen = Gen::V4;

/// A stream of `len` bytes: random field bytes, opcode from the mix, canonical header and
/// zeroed reserved bytes (the shape a compiler emits).
fn mixed_stream(len: usize) -> Vec<u8> {
    let mut data = tpbsim_benches::pseudo_random_bytes(len, 11);
    for (i, chunk) in data.chunks_exact_mut(64).enumerate() {
        let mut b = Bundle::ZERO;
        b.0.copy_from_slice(chunk);
        b.0[0] = MIX[i % MIX.len()];
        b.0[1] = 0x10;
        if b.0[0] == 0xF0 {
            b.0[12] = [2u8, 8, 1][i % 3];
        }
        match decode(&b, GEN) {
            Ok(inst) => {
                for &(s, e) in inst.meta().reserved {
                    b.0[s as usize..e as usize].fill(0);
                }
            }
            Err(e) => panic!("mix opcode does not decode: {e}"),
        }
        chunk.copy_from_slice(&b.0);
    }
    data
}

fn decode_bench(c: &mut Criterion) {
    decode_group(c, "decode", 64 << 20);
    if std::env::var_os("TPBSIM_BENCH_LARGE").is_some() {
        decode_group(c, "decode_1gib", 1 << 30);
    }
}

fn decode_group(c: &mut Criterion, name: &str, len: usize) {
    let data = mixed_stream(len);
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    f.write_all(&data).expect("write");
    f.flush().expect("flush");
    drop(data);
    // SAFETY: the temporary file is private to this process and not modified while mapped.
    let map = unsafe { memmap2::Mmap::map(f.as_file()).expect("mmap") };
    let bundles: &[Bundle] =
        bytemuck::try_cast_slice(&map).expect("page-aligned map of whole bundles");
    let words: &[u64] = bytemuck::try_cast_slice(&map).expect("aligned");
    // Every bundle of the mix decodes.
    assert!(bundles.iter().all(|b| decode(b, GEN).is_ok()));

    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(len as u64));
    g.sample_size(10);
    g.bench_function("raw_checksum_u64", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for w in words {
                acc = acc.wrapping_add(*w);
            }
            black_box(acc)
        })
    });
    g.bench_function("decode_v4", |b| {
        b.iter(|| {
            let mut typed = 0u64;
            for bundle in bundles {
                match decode(bundle, GEN) {
                    Ok(Inst::Raw(_)) => {}
                    Ok(i) => {
                        black_box(&i);
                        typed += 1;
                    }
                    Err(_) => typed += 1 << 32,
                }
            }
            black_box(typed)
        })
    });
    g.finish();
}

criterion_group!(benches, decode_bench);
criterion_main!(benches);
