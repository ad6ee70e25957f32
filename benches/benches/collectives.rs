//! A world of ranks meeting at an all-reduce, as `sim run --ranks N` runs it: 8 ranks, 64 MiB of
//! fp32 per rank (the program loaded once; each iteration allocates every rank's DRAM, posts
//! the contributions, folds them in replica order and writes every rank's output), and the
//! 4-rank tensor-parallel matmul kernel of `testdata/collectives/` widened to 8 ranks.
//!
//! Baseline in the same run: `memcpy` of the bytes the all-reduce delivers (64 MiB to each of
//! the 8 ranks), on one thread and on as many threads as the host has. The ratio printed is
//! `all-reduce bytes delivered per second / memcpy bytes per second`. The members of an
//! all-reduce whose result fills their output variable share one result buffer;
//! `sim_owned_outputs` adds the copy of every rank's output into a buffer of its own.
//!
//! `TPBSIM_ALLREDUCE_BENCH=RANKS,MIB` changes the shape (default 8,64).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tpbsim_benches::best_of;
use tpbsim_isa::{AluOp, Engine, Events, Gen, NumFormat, UpdateMode, WaitMode};
use tpbsim_neff::VarKind;
use tpbsim_sim::api::{self, RunConfig};
use tpbsim_sim::machine::cluster::SharedBytes;
use tpbsim_sim::machine::pack::{Collective, Package};

fn shape() -> (usize, usize) {
    std::env::var("TPBSIM_ALLREDUCE_BENCH")
        .ok()
        .and_then(|s| {
            let (r, m) = s.split_once(',')?;
            Some((r.trim().parse().ok()?, m.trim().parse().ok()?))
        })
        .unwrap_or((8, 64))
}

/// `y = all-reduce(x)` (fp32 sum) over one group of `ranks`, `n` elements, and a wait for it.
fn all_reduce(ranks: u32, n: u64) -> Package {
    let mut p = Package::new("allreduce", Gen::V3);
    p.def.extra.insert(
        "replica_groups".into(),
        serde_json::json!([(0..ranks).collect::<Vec<_>>()]),
    );
    let x = p
        .var("x", VarKind::Input, NumFormat::Float32, &[n], None)
        .unwrap();
    let y = p
        .var("y", VarKind::Output, NumFormat::Float32, &[n], None)
        .unwrap();
    let done = Events {
        update_mode: UpdateMode::SEM_INC_COMPLETE,
        update_idx: 5,
        ..Default::default()
    };
    let wait = Events {
        wait_mode: WaitMode::SEM_GE_IMM,
        wait_idx: 5,
        semaphore_value: 1,
        ..Default::default()
    };
    let c = Collective {
        ctype: 1,
        op: AluOp::ADD,
        format: NumFormat::Float32,
        group: 0,
        input: x,
        output: y,
        elements: n,
    };
    p.streams[Engine::Pool as usize] = vec![
        c.to_bundle(Gen::V3, done).unwrap(),
        tpbsim_isa::Control {
            header: tpbsim_isa::Header::new(tpbsim_isa::Opcode::NOP),
            events: wait,
            ..Default::default()
        }
        .to_bundle(),
    ];
    p
}

/// Copy every `src` buffer into its `dst` on `threads` threads.
fn memcpy(src: &[Vec<u8>], dst: &mut [Vec<u8>], threads: usize) {
    let per = src.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        for (sc, dc) in src.chunks(per).zip(dst.chunks_mut(per)) {
            s.spawn(move || {
                for (a, b) in sc.iter().zip(dc.iter_mut()) {
                    b.copy_from_slice(a);
                }
            });
        }
    });
}

fn collectives(c: &mut Criterion) {
    tpbsim_sim::process::retain_freed_memory();
    let (ranks, mib) = shape();
    let n = (mib << 20) / 4;
    let neff = all_reduce(ranks as u32, n as u64).to_neff().expect("pack");
    let prog = api::load_program(&neff).expect("load");
    let inputs: Vec<BTreeMap<String, SharedBytes>> = (0..ranks)
        .map(|r| {
            let v: Vec<u8> = (0..n)
                .flat_map(|i| (((i * 7 + r * 13) % 101) as f32 * 0.25).to_le_bytes())
                .collect();
            BTreeMap::from([("x".to_string(), Arc::new(v) as SharedBytes)])
        })
        .collect();
    let cfg = RunConfig {
        limits: tpbsim_sim::machine::Limits {
            max_memory: u64::MAX,
            max_dma_bytes: u64::MAX,
        },
        ..RunConfig::default()
    };
    let gen = api::generation(&prog, None).expect("generation");
    let sim = || {
        let out =
            api::run_world_schedule(&prog, gen, &inputs, &cfg, 0, &|_, _, _| {}).expect("run");
        black_box(out[ranks - 1].outputs["y"][0]);
    };
    // The same run with every rank's output then copied into a buffer of its own (what a
    // caller that needs one writable array per rank, such as Python, pays).
    let sim_owned = || {
        let out =
            api::run_world_schedule(&prog, gen, &inputs, &cfg, 0, &|_, _, _| {}).expect("run");
        for o in out {
            for (_, v) in o.outputs {
                black_box(v.into_vec());
            }
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let src: Vec<Vec<u8>> = (0..ranks).map(|_| vec![1u8; n * 4]).collect();
    let mut dst: Vec<Vec<u8>> = (0..ranks).map(|_| vec![0u8; n * 4]).collect();
    let bytes = (ranks * n * 4) as u64;

    let mut grp = c.benchmark_group(format!("allreduce_{ranks}x{mib}MiB"));
    grp.sample_size(10);
    grp.throughput(Throughput::Bytes(bytes));
    grp.bench_function("sim", |b| b.iter(sim));
    grp.bench_function("sim_owned_outputs", |b| b.iter(sim_owned));
    grp.bench_function("memcpy_1thread", |b| b.iter(|| memcpy(&src, &mut dst, 1)));
    grp.bench_function(format!("memcpy_{threads}threads"), |b| {
        b.iter(|| memcpy(&src, &mut dst, threads))
    });
    grp.finish();

    let t_sim = best_of(3, sim).as_secs_f64();
    let t_owned = best_of(3, sim_owned).as_secs_f64();
    let t_1 = best_of(3, || memcpy(&src, &mut dst, 1)).as_secs_f64();
    let t_n = best_of(3, || memcpy(&src, &mut dst, threads)).as_secs_f64();
    let gb = |t: f64| bytes as f64 / t / 1e9;
    println!(
        "allreduce {ranks} ranks x {mib} MiB: sim {:.2} GB/s delivered ({:.2} GB/s with every output copied to its own buffer), memcpy 1 thread {:.2} GB/s, {threads} threads {:.2} GB/s; ratio sim/memcpy(1) {:.2} ({:.2} owned), sim/memcpy({threads}) {:.2}",
        gb(t_sim),
        gb(t_owned),
        gb(t_1),
        gb(t_n),
        t_1 / t_sim,
        t_1 / t_owned,
        t_n / t_sim
    );

    // The tensor-parallel matmul kernel, its replica group widened to 8 ranks.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/collectives/tp_matmul_allreduce.neff");
    let tp = tpbsim_neff::Neff::read(&path, &Default::default()).expect("read");
    let mut tprog = api::load_program(&tp).expect("load");
    for k in &mut tprog.cores {
        k.replica_groups = vec![(0..8).collect()];
        k.world = 8;
    }
    let tin: Vec<BTreeMap<String, SharedBytes>> = (0..8u8)
        .map(|r| {
            ["w", "x"]
                .into_iter()
                .map(|v| {
                    let bytes: Vec<u8> = (0..128 * 128)
                        .flat_map(|i: u32| {
                            ((((i * 5 + u32::from(r)) % 29) as u16) << 7 | 0x3c00).to_le_bytes()
                        })
                        .collect();
                    (v.to_string(), Arc::new(bytes) as SharedBytes)
                })
                .collect()
        })
        .collect();
    let tgen = api::generation(&tprog, None).expect("generation");
    let mut grp = c.benchmark_group("tp_matmul_allreduce_8ranks");
    grp.sample_size(20);
    grp.bench_function("sim", |b| {
        b.iter(|| {
            let out = api::run_world_schedule(
                &tprog,
                tgen,
                &tin,
                &RunConfig::default(),
                0,
                &|_, _, _| {},
            )
            .expect("run");
            black_box(out[7].outputs["y"][0])
        })
    });
    grp.finish();
}

criterion_group!(benches, collectives);
criterion_main!(benches);
