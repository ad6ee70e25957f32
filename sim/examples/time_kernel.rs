//! Times whole-kernel simulation of one testdata kernel (machine set-up, L2 validation, run),
//! the same iteration as the `kernel` criterion group, for quick profiling without a release
//! build of the benches.
//!
//! ```sh
//! cargo run -p tpbsim-sim --example time_kernel -- testdata/kernels/vadd.neff [ITERATIONS] [races]
//! valgrind --tool=callgrind target/debug/examples/time_kernel testdata/kernels/vadd.neff 1
//! ```

use std::time::Instant;

use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::{Machine, RunOptions};

fn main() {
    // As `sim` does.
    tpbsim_sim::process::retain_freed_memory();
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: time_kernel KERNEL.neff [ITERATIONS]");
    let iters: u32 = args.next().map_or(20, |s| s.parse().expect("iterations"));
    // `races`: with the happens-before race detector, as `sim run --check-races`.
    let races = args.next().is_some_and(|s| s == "races");
    let t = Instant::now();
    let n = Neff::read(&path, &ReadOptions::default()).expect("read the kernel");
    let k = kernel_from_neff(&n).expect("load the kernel");
    let load = t.elapsed();
    let gen = k.gen.expect("target generation");
    let mut best = f64::INFINITY;
    for _ in 0..iters {
        let t = Instant::now();
        let mut m = Machine::new(&k, gen).expect("machine");
        m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
        if races {
            m.enable_race_check();
        }
        m.run(&RunOptions::default(), &mut |_| {}).expect("run");
        drop(m);
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{path}: load {:.3} ms, run best of {iters} {:.3} ms",
        load.as_secs_f64() * 1e3,
        best * 1e3
    );
}
