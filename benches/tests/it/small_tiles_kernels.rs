//! The in-memory kernels of the small/big-tile benchmark compute what they claim: every bundle
//! passes L2 and executes, and each region holds its op of the inputs.

use tpbsim_benches::small_tiles::{
    big_adds, inputs, mixed, region, run, sbuf_words, BIG, BIG_A, BIG_B, BIG_C, BIG_INPUT_WORDS,
    MIXED_INPUT_WORDS, POOL_SCALE, SLOTS, SMALL,
};
use tpbsim_isa::Engine;
use tpbsim_sim::numerics::act::{ActFunction, ClosedForm};

#[test]
fn mixed_kernel_adds_exponentiates_and_multiplies() {
    let k = mixed(300);
    for e in [Engine::Dve, Engine::Act, Engine::Pool] {
        assert_eq!(k.streams[e as usize].len(), 100, "{e:?}");
    }
    let m = run(&k, MIXED_INPUT_WORDS);
    let x = inputs(MIXED_INPUT_WORDS);
    let w = MIXED_INPUT_WORDS;
    let (s, n) = (SMALL as usize, (SLOTS * SMALL) as usize);
    let at =
        |p: usize, base: u32, slot: usize, i: usize| x[p * w + base as usize / 4 + slot * s + i];
    let (dve, act, pool) = (
        sbuf_words(&m, region::DVE, n),
        sbuf_words(&m, region::ACT, n),
        sbuf_words(&m, region::POOL, n),
    );
    for p in 0..128 {
        for slot in 0..SLOTS as usize {
            for i in 0..s {
                let j = p * n + slot * s + i;
                let a = at(p, region::A, slot, i);
                let b3 = at(p, region::B, (slot + 3) % SLOTS as usize, i);
                assert_eq!(dve[j], a + b3, "dve p{p} slot {slot} [{i}]");
                let e = ClosedForm::value(ActFunction::Exp, a, 0.0);
                assert_eq!(act[j].to_bits(), e.to_bits(), "act p{p} slot {slot} [{i}]");
                let b = at(p, region::B, slot, i);
                assert_eq!(pool[j], b * POOL_SCALE, "pool p{p} slot {slot} [{i}]");
            }
        }
    }
}

#[test]
fn big_adds_add_the_tiles() {
    let k = big_adds(2);
    let m = run(&k, BIG_INPUT_WORDS);
    let x = inputs(BIG_INPUT_WORDS);
    let c = sbuf_words(&m, BIG_C, BIG as usize);
    let (a0, b0) = (BIG_A as usize / 4, BIG_B as usize / 4);
    for p in 0..128 {
        for i in 0..BIG as usize {
            let row = &x[p * BIG_INPUT_WORDS..];
            assert_eq!(
                c[p * BIG as usize + i],
                row[a0 + i] + row[b0 + i],
                "p{p} [{i}]"
            );
        }
    }
}

#[test]
fn the_mixed_neff_gives_the_in_process_results() {
    use tpbsim_benches::small_tiles::{mixed_neff, MIXED_OUTPUTS};
    let n = 30;
    let neff = mixed_neff(n).expect("packs");
    let bytes = neff.to_bytes().expect("serialises");
    let neff = tpbsim_neff::Neff::from_bytes(&bytes, &Default::default()).expect("reads back");
    let cfg = tpbsim_sim::api::RunConfig {
        validator: Some(std::sync::Arc::new(tpbsim_validate::l2::L2Check)),
        ..Default::default()
    };
    let program = tpbsim_sim::api::load_program(&neff).expect("loads");
    let out = tpbsim_sim::api::run_program(
        &program,
        &std::collections::BTreeMap::<String, Vec<u8>>::new(),
        &cfg,
    )
    .expect("runs");
    let k = mixed(n);
    let m = run(&k, MIXED_INPUT_WORDS);
    let words = (SLOTS * SMALL) as usize;
    for (name, at) in MIXED_OUTPUTS {
        let want: Vec<u8> = sbuf_words(&m, at, words)
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(out.outputs[name], want, "{name}");
    }
    assert_eq!(out.stats.sched.per_engine.iter().sum::<u64>(), n as u64 + 2);
    assert!(matches!(
        mixed_neff(2),
        Err(tpbsim_benches::small_tiles::MixedNeffError::Empty(2))
    ));
}
