//! The per-bundle caches (a distinct bundle decoded and validated once, TensorTensor operands
//! planned once) change no result: the same streams run with the race check on (which makes
//! and uses no plans) and off leave the same memory, and faults name the same bundle.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Addr4, AluOp, Bundle, Dtype, DtypePair, Engine, Gen, Tensor, TensorTensor};
use tpbsim_sim::machine::{Fault, Geometry, Kernel, Machine, RunOptions, Space};

const GEN: Gen = Gen::V3;

fn tt(op: u8, f: NumFormat, parts: u8, n: u16, a: u32, b: u32, d: u32) -> Bundle {
    let g = Geometry::of(GEN);
    let t = Dtype(f.wire_tag(GEN).unwrap());
    let row = |off: u32| Tensor::<3>::new(Addr4::imm(g.sbuf_address(0, off)), [1; 3], [n, 1, 1]);
    TensorTensor {
        in_dtypes: DtypePair::new(t, t),
        out_dtype: t,
        op: AluOp(op),
        num_active_partitions: parts,
        src0: row(a),
        src1: row(b),
        dst: row(d),
        ..Default::default()
    }
    .to_bundle()
}

fn kernel(engine: Engine, stream: Vec<Bundle>) -> Kernel {
    let mut k = Kernel {
        gen: Some(GEN),
        world: 1,
        ..Default::default()
    };
    k.streams[engine as usize] = stream;
    k
}

/// Run `k` with SBUF partitions 0..4 holding `init`, the race check on or off; the first
/// 4 partitions' first 256 bytes after the run, or the fault.
fn run(k: &Kernel, race: bool, init: &[u8]) -> Result<Vec<Vec<u8>>, Fault> {
    run_within(k, race, init, RunOptions::default().max_steps)
}

/// [`run`] with a step budget of `max_steps`.
fn run_within(k: &Kernel, race: bool, init: &[u8], max_steps: u64) -> Result<Vec<Vec<u8>>, Fault> {
    let mut m = Machine::new(k, GEN).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    for p in 0..4 {
        m.chip.partition_mut(Space::Sbuf, p)[..init.len()].copy_from_slice(init);
    }
    if race {
        m.enable_race_check();
    }
    m.run(
        &RunOptions {
            max_steps,
            ..Default::default()
        },
        &mut |_| {},
    )?;
    Ok((0..4)
        .map(|p| m.chip.partition(Space::Sbuf, p)[..256].to_vec())
        .collect())
}

fn init() -> Vec<u8> {
    (0..64)
        .flat_map(|i| (1.0f32 + i as f32 * 0.37).to_le_bytes())
        .collect()
}

#[test]
fn repeated_and_overlapping_bundles_give_the_same_memory() {
    let f = NumFormat::Float32;
    let i32f = NumFormat::Int32;
    // acc (bytes 0..16) += x (16..32) eight times; a multiply whose destination overlaps its
    // source; an int32 add (POOL would take the integer datapath; DVE runs it in fp32).
    let mut s = Vec::new();
    for _ in 0..8 {
        s.push(tt(0x04, f, 4, 4, 0, 16, 0));
    }
    s.push(tt(0x06, f, 2, 8, 8, 32, 4));
    s.push(tt(0x04, i32f, 3, 2, 64, 72, 80));
    s.extend_from_slice(&s.clone());
    for engine in [Engine::Dve, Engine::Pool] {
        let k = kernel(engine, s.clone());
        let plain = run(&k, false, &init()).unwrap();
        let checked = run(&k, true, &init()).unwrap();
        assert_eq!(plain, checked, "{engine}");
        assert_ne!(plain[0][..16], init()[..16], "the adds ran");
    }
}

#[test]
fn a_repeated_invalid_bundle_faults_at_its_first_position() {
    let good = tt(0x04, NumFormat::Float32, 1, 1, 0, 4, 8);
    // src0 runs past the partition's end: out of bounds at execution.
    let g = Geometry::of(GEN);
    let end = g.sbuf_partition_stride() - 4;
    let bad = tt(0x04, NumFormat::Float32, 1, 4, end, 4, 8);
    let k = kernel(Engine::Dve, vec![good, good, bad, good, bad]);
    for race in [false, true] {
        let f = run(&k, race, &init()).unwrap_err();
        assert_eq!(f.kind(), "out-of-bounds", "{f}");
        assert!(f.to_string().contains("dve bundle #2"), "{f}");
    }
}

#[test]
fn a_planned_bundle_charges_its_operands_to_the_step_budget_as_an_unplanned_one_does() {
    // Eight adds over 4 partitions of 512 fp32 values: each operand spans 8 KiB, so the
    // operands' work outweighs the bundles themselves.
    let s = vec![tt(0x04, NumFormat::Float32, 4, 512, 0, 2048, 4096); 8];
    let k = kernel(Engine::Dve, s);
    let init = init();
    // The smallest budget the run fits in, with the race check on (no plans).
    let fits = |race: bool, budget: u64| run_within(&k, race, &init, budget).is_ok();
    let need_of = |race: bool| {
        let (mut lo, mut hi) = (0u64, 1u64 << 20);
        assert!(fits(race, hi));
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(race, mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    };
    let need = need_of(true);
    assert!(
        need > 8,
        "the operands cost steps beyond the 8 bundles ({need})"
    );
    // Planned (race check off): the same budget fits and one step less does not, with the
    // same fault.
    assert_eq!(need_of(false), need);
    let planned = run_within(&k, false, &init, need - 1).unwrap_err();
    let unplanned = run_within(&k, true, &init, need - 1).unwrap_err();
    assert_eq!(planned.kind(), unplanned.kind(), "{planned}");
    assert_eq!(planned.to_string(), unplanned.to_string());
}

#[test]
fn an_engine_that_does_not_execute_an_op_refuses_it_planned_or_not() {
    // A TensorTensor add with immediate addresses (a bundle that gets a plan where it runs)
    // on engines without it, run without the L2 check that would refuse it first.
    let add = tt(0x04, NumFormat::Float32, 4, 4, 0, 16, 32);
    for engine in [Engine::Pe, Engine::Act, Engine::Sp] {
        let k = kernel(engine, vec![add, add]);
        let faults: Vec<String> = [false, true]
            .into_iter()
            .map(|race| {
                let mut m = Machine::new(&k, GEN).unwrap();
                if race {
                    m.enable_race_check();
                }
                m.run(&RunOptions::default(), &mut |_| {})
                    .expect_err("the engine does not execute the op")
                    .to_string()
            })
            .collect();
        assert_eq!(faults[0], faults[1], "{engine}");
        assert!(
            faults[0].ends_with(&format!(
                "(opcode 0x41) is not simulated on the {engine} engine"
            )),
            "{}",
            faults[0]
        );
    }
}
