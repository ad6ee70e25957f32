//! Times the library call behind `tpbsim.run` (python/bench/bench_run.py): read the NEFF from
//! bytes, load the kernel, run it with inputs given as bytes and collect the outputs
//! (`sim::api::run_kernel`). Prints the median and the best of the iterations.
//!
//! ```sh
//! cargo run -p tpbsim-sim --example api_run -- testdata/kernels/vadd.neff [ITERATIONS]
//! ```

use std::collections::BTreeMap;
use std::time::Instant;

use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::api::{self, RunConfig};
use tpbsim_sim::machine::VarKind;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: api_run KERNEL.neff [ITERATIONS]");
    let iters: usize = args.next().map_or(200, |s| s.parse().expect("iterations"));
    let bytes = std::fs::read(&path).expect("read the kernel");
    // Every input given, as the Python benchmark gives them (a byte pattern of each size).
    let n = Neff::from_bytes(&bytes, &ReadOptions::default()).expect("NEFF");
    let k = api::load_kernel(&n).expect("kernel");
    let inputs: BTreeMap<String, Vec<u8>> = k
        .vars
        .iter()
        .filter(|v| v.kind == VarKind::Input)
        .map(|v| (v.name.clone(), vec![0x3c; v.size as usize]))
        .collect();
    let cfg = RunConfig {
        validator: Some(std::sync::Arc::new(tpbsim_validate::l2::L2Check)),
        ..RunConfig::default()
    };
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        let n = Neff::from_bytes(&bytes, &ReadOptions::default()).expect("NEFF");
        let k = api::load_kernel(&n).expect("kernel");
        let out = api::run_kernel(&k, &inputs, &cfg).expect("run");
        std::hint::black_box(&out.outputs);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{path}: library call median {:.1} us, best {:.1} us over {iters} iterations",
        times[iters / 2] * 1e6,
        times[0] * 1e6
    );
}
