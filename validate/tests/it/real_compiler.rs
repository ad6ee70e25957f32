//! The real compiler's output must pass: the engine streams of the neuronx-cc 2.23 Trn2 NEFF
//! (`shared/real/nkipy/matmul_small.neff`, target v3 "cayman", subgraphs sg00 and sg01) and
//! the instruction forms its larger kernel uses (shared/real-neff-trn2.md §2–§7), built from
//! the real bundles with fields changed through the spec's locators, draw no L2 or L1 error.
//!
//! The members are read from the NEFF here (header, one gzip member, a tar) with flate2 and
//! tar; the file is never copied or repacked.

use std::collections::BTreeMap;
use std::io::Read;

use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{Bundle, Dtype, Engine, Gen};
use tpbsim_validate::bir::InstClass;
use tpbsim_validate::diag::Mode;
use tpbsim_validate::l2::{self, check_collect, Outcome, StreamSpec};
use tpbsim_validate::lift::StreamInput;
use tpbsim_validate::registry::{PropertySet, Registry};
use tpbsim_validate::verify::verify_streams;

const NEFF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/real/nkipy/matmul_small.neff"
);

/// The engine streams of the NEFF: subgraph directory → engine → bundles.
type Streams = BTreeMap<String, BTreeMap<Engine, Vec<Bundle>>>;

fn engine_of(file: &str) -> Option<Engine> {
    Some(match file {
        "PE.bin" => Engine::Pe,
        "Activation.bin" => Engine::Act,
        "Pool.bin" => Engine::Pool,
        "DVE.bin" => Engine::Dve,
        "SP.bin" => Engine::Sp,
        _ => return None,
    })
}

fn streams() -> Streams {
    let bytes = std::fs::read(NEFF).unwrap_or_else(|e| panic!("{NEFF}: {e}"));
    assert!(bytes.len() > 0x400, "{NEFF}: shorter than its header");
    // One gzip member after the 1 KiB header; the zero padding after it is not read.
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(&bytes[0x400..])
        .read_to_end(&mut tar_bytes)
        .expect("the payload's gzip member");
    let mut out = Streams::new();
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        let path = entry
            .path()
            .expect("member path")
            .to_string_lossy()
            .into_owned();
        let path = path.trim_start_matches("./").to_string();
        let Some((dir, file)) = path.split_once('/') else {
            continue;
        };
        let Some(engine) = engine_of(file) else {
            continue;
        };
        let mut data = Vec::new();
        entry.read_to_end(&mut data).expect("member bytes");
        assert_eq!(data.len() % 64, 0, "{path}: not whole bundles");
        let bundles = data
            .chunks_exact(64)
            .map(|c| Bundle(c.try_into().expect("64 bytes")))
            .collect();
        out.entry(dir.to_string())
            .or_default()
            .insert(engine, bundles);
    }
    assert_eq!(
        out.keys().cloned().collect::<Vec<_>>(),
        ["sg00", "sg01"],
        "the NEFF's subgraphs"
    );
    for (sg, s) in &out {
        assert_eq!(s.len(), 5, "{sg}: five engine streams");
    }
    out
}

/// The bundle of `engine`'s stream in sg00 at `index`, checked to have `opcode`.
fn real(s: &Streams, engine: Engine, index: usize, opcode: u8) -> Bundle {
    let b = s["sg00"][&engine][index];
    assert_eq!(b.0[0], opcode, "sg00 {engine} #{index}");
    b
}

/// Names of the failing rules (errors only) of `b` on `engine`'s stream at `gen`.
fn errors(gen: Gen, engine: Engine, b: &Bundle) -> Vec<&'static str> {
    check_collect(gen, engine, b)
        .iter()
        .filter(|f| f.outcome == Outcome::Fail)
        .map(|f| f.rule.name)
        .collect()
}

/// Write `v` little-endian into the field `f` locates at `gen`.
fn put(b: &mut Bundle, f: FieldLoc, gen: Gen, v: u64) {
    let at = f.at(gen).expect("field present") as usize;
    let w = f.width(gen).expect("field present") as usize;
    for i in 0..w.min(8) {
        b.0[at + i] = (v >> (8 * i)) as u8;
    }
}

/// Write `v` at byte `k` of the field `f` locates at `gen` (a part of a descriptor).
fn put_at(b: &mut Bundle, f: FieldLoc, gen: Gen, k: usize, bytes: &[u8]) {
    let at = f.at(gen).expect("field present") as usize + k;
    b.0[at..at + bytes.len()].copy_from_slice(bytes);
}

/// TENSOR4D start address and counts of the TensorReduce-family operand `f`.
fn tensor4d(b: &mut Bundle, f: FieldLoc, gen: Gen, addr: u32, num: [u16; 4]) {
    put_at(b, f, gen, 0, &addr.to_le_bytes());
    for (i, n) in num.iter().enumerate() {
        put_at(b, f, gen, 4 + 8 + 2 * i, &n.to_le_bytes());
    }
}

/// A pseudo ADDR8 in the physical var-id form (0x10): `var` (0 = SBUF) and the imm32.
fn addr8_var(var: u32, imm: u32) -> u64 {
    0x10 << 56 | (var as u64 & 0xFF_FFFF) << 32 | imm as u64
}

#[test]
fn every_real_stream_passes_l2_and_l1_on_v3() {
    let s = streams();
    let registry = Registry::l1();
    for (sg, engines) in &s {
        for (engine, bundles) in engines {
            let spec = StreamSpec {
                file: Some(format!("{sg}/{engine}")),
                gen: Gen::V3,
                engine: *engine,
            };
            let report = l2::validate_stream(bundles, &spec, Mode::CollectAll);
            let errs: Vec<String> = report
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.to_string())
                .collect();
            assert!(errs.is_empty(), "{sg}/{engine}: {errs:#?}");
            assert_eq!(report.invalid, 0, "{sg}/{engine}");
        }
        // Lift the subgraph's five streams into one module: L1 and L2 together, as `sim verify`.
        let inputs: Vec<StreamInput<'_>> = engines
            .iter()
            .map(|(e, b)| StreamInput {
                function: format!("{sg}.{e}"),
                file: Some(format!("{sg}/{e}")),
                engine: *e,
                bundles: b,
            })
            .collect();
        let v = verify_streams(
            &inputs,
            Gen::V3,
            Some(sg.clone()),
            sg,
            Mode::CollectAll,
            &registry,
            PropertySet::default_l1(),
        );
        let errs: Vec<String> = v
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.to_string())
            .collect();
        assert!(errs.is_empty(), "{sg}: {errs:#?}");
        assert!(!v.invalid());
        // The PE transposes (LDWEIGHTS with negative steps and transpose_mode) and the ACT
        // copies lift to typed instructions; only the preamble pair (SET_ORDERING_MODE,
        // PSEUDO_BRANCH_LABEL) and the DMA pseudo instructions stay Generic.
        let classes: Vec<InstClass> = v
            .lifted
            .module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
            .map(|i| i.class)
            .collect();
        let count = |c: InstClass| classes.iter().filter(|x| **x == c).count();
        assert_eq!(count(InstClass::TensorCopy), 2, "{sg}");
        // Each LDWEIGHTS lifts with its MATMUL into one instruction: the two transposes
        // (transpose_mode 1) and the two accumulating matmuls.
        assert_eq!(count(InstClass::Transpose), 2, "{sg}: {classes:?}");
        assert_eq!(count(InstClass::Matmult), 2, "{sg}: {classes:?}");
        assert_eq!(count(InstClass::Generic), 2 * 5 + 5, "{sg}");
    }
}

#[test]
fn the_act_copy_is_the_reason_the_bitmap_changed() {
    // The real ACT COPY (PSUM → SBUF, INT32 raw bits) and a CAST made from it.
    let s = streams();
    let copy = real(&s, Engine::Act, 3, 0x46);
    let mut cast = real(&s, Engine::Act, 4, 0x46);
    put(&mut cast, loc::header::OPCODE, Gen::V3, 0x47);
    put(
        &mut cast,
        loc::tensor_reduce::OUT_DTYPE,
        Gen::V3,
        Dtype::FP16.0 as u64,
    );
    tensor4d(
        &mut cast,
        loc::tensor_reduce::DST,
        Gen::V3,
        0x4200,
        [64, 1, 1, 1],
    );
    for b in [copy, cast] {
        let op = b.0[0];
        for gen in [Gen::V3, Gen::V4] {
            assert!(
                errors(gen, Engine::Act, &b).is_empty(),
                "{op:#x} on ACT {gen}: {:?}",
                errors(gen, Engine::Act, &b)
            );
            assert!(
                errors(gen, Engine::Dve, &b).is_empty(),
                "{op:#x} on DVE {gen}"
            );
            // Not a PE opcode on any generation.
            assert_eq!(
                errors(gen, Engine::Pe, &b),
                ["neuron_isa_check_opcode_on_engine"],
                "{op:#x} on PE {gen}"
            );
        }
        // v2: COPY / CAST are not legal on ACT (NKI: "NeuronCore v2: Vector, GpSimd").
        assert_eq!(
            errors(Gen::V2, Engine::Act, &b),
            ["instruction_engine_check"],
            "{op:#x} on ACT v2"
        );
        assert!(
            errors(Gen::V2, Engine::Dve, &b).is_empty(),
            "{op:#x} on DVE v2"
        );
    }
}

#[test]
fn the_large_kernels_forms_draw_no_error() {
    let s = streams();
    let g = Gen::V3;
    let mut cases: Vec<(&str, Engine, Bundle)> = Vec::new();

    // COPY INT32 from PSUM, 512 elements per partition, on ACT and DVE.
    let mut copy = real(&s, Engine::Act, 3, 0x46);
    tensor4d(
        &mut copy,
        loc::tensor_reduce::SRC,
        g,
        0x0200_0800,
        [512, 1, 1, 1],
    );
    tensor4d(
        &mut copy,
        loc::tensor_reduce::DST,
        g,
        0x6000,
        [512, 1, 1, 1],
    );
    cases.push(("COPY INT32 PSUM→SB on ACT", Engine::Act, copy));
    cases.push(("COPY INT32 PSUM→SB on DVE", Engine::Dve, copy));
    // CAST FP32 → FP16, SBUF → SBUF, on ACT, DVE and Pool.
    let mut cast = copy;
    put(&mut cast, loc::header::OPCODE, g, 0x47);
    put(
        &mut cast,
        loc::tensor_reduce::IN_DTYPE,
        g,
        Dtype::FP32.0 as u64,
    );
    put(
        &mut cast,
        loc::tensor_reduce::OUT_DTYPE,
        g,
        Dtype::FP16.0 as u64,
    );
    tensor4d(
        &mut cast,
        loc::tensor_reduce::SRC,
        g,
        0x7800,
        [512, 1, 1, 1],
    );
    tensor4d(
        &mut cast,
        loc::tensor_reduce::DST,
        g,
        0xC000,
        [512, 1, 1, 1],
    );
    for e in [Engine::Act, Engine::Dve, Engine::Pool] {
        cases.push(("CAST FP32→FP16 SB→SB", e, cast));
    }

    // PSEUDO_DMA_DIRECT2D from SP (0x10 forms), Pool (0x20 DGE-table forms) and ACT (the
    // large kernel's spill: SBUF 0x6000 → virtual variable 5, 128 rows of 4096 bytes).
    let sp_dma = real(&s, Engine::Sp, 2, 0xD4);
    let pool_in = real(&s, Engine::Pool, 3, 0xD4);
    let pool_out = real(&s, Engine::Pool, 5, 0xD4);
    for e in [Engine::Sp, Engine::Pool, Engine::Act] {
        cases.push(("DMA var-id → SB", e, sp_dma));
        cases.push(("DMA DGE entry → SB", e, pool_in));
        cases.push(("DMA SB → DGE entry, FP32→FP16", e, pool_out));
    }
    let mut spill = sp_dma;
    put(&mut spill, loc::dma_direct2d::SEMAPHORE, g, 40);
    put(&mut spill, loc::dma_direct2d::SRC, g, addr8_var(0, 0x6000));
    put(&mut spill, loc::dma_direct2d::SRC_STEP, g, 262144 | 1 << 32);
    put(&mut spill, loc::dma_direct2d::SRC_NUM, g, 128 | 1 << 16);
    put(&mut spill, loc::dma_direct2d::SRC_ELEM_SIZE, g, 4096);
    put(&mut spill, loc::dma_direct2d::DST, g, addr8_var(5, 0));
    put(&mut spill, loc::dma_direct2d::DST_STEP, g, 4096 | 1 << 32);
    put(&mut spill, loc::dma_direct2d::DST_NUM, g, 128 | 1 << 16);
    put(&mut spill, loc::dma_direct2d::DST_ELEM_SIZE, g, 4096);
    cases.push(("DMA spill SB → virtual variable", Engine::Act, spill));
    // The refill: virtual variable 20 → SB on SP, a full 64 KiB chunk (elem_size 0).
    let mut refill = spill;
    put(&mut refill, loc::dma_direct2d::SEMAPHORE, g, 8);
    put(&mut refill, loc::dma_direct2d::SRC, g, addr8_var(20, 0));
    put(
        &mut refill,
        loc::dma_direct2d::SRC_STEP,
        g,
        0x10000 | 1 << 32,
    );
    put(&mut refill, loc::dma_direct2d::SRC_ELEM_SIZE, g, 0);
    put(&mut refill, loc::dma_direct2d::DST, g, addr8_var(0, 0x1000));
    put(
        &mut refill,
        loc::dma_direct2d::DST_STEP,
        g,
        262144 | 1 << 32,
    );
    put(&mut refill, loc::dma_direct2d::DST_NUM, g, 128 | 1 << 16);
    put(&mut refill, loc::dma_direct2d::DST_ELEM_SIZE, g, 0);
    cases.push(("DMA refill virtual variable → SB", Engine::Sp, refill));

    // EVENT_SEMAPHORE with two waits (the second in events_ext), on Pool.
    let mut es = real(&s, Engine::Pe, 2, 0xA0);
    put(&mut es, loc::events::WAIT_IDX, g, 32);
    put(&mut es, loc::events::SEMAPHORE_VALUE, g, 0x1010);
    let ext = loc::event_semaphore::EVENTS_EXT.at(g).expect("events_ext") as usize;
    let wait_mode = es.0[loc::events::WAIT_MODE.at(g).unwrap() as usize];
    es.0[ext + loc::events_ext::WAIT_MODE.at(g).unwrap() as usize] = wait_mode;
    es.0[ext + loc::events_ext::WAIT_IDX.at(g).unwrap() as usize] = 6;
    let v = ext + loc::events_ext::SEM_WAIT_VALUE.at(g).unwrap() as usize;
    es.0[v..v + 4].copy_from_slice(&0x25Bu32.to_le_bytes());
    for e in Engine::ALL {
        cases.push(("EVENT_SEMAPHORE, two waits", e, es));
    }
    // NOP with a wait (the final Pool NOP of the large kernel: sem30 >= 0x1020).
    let mut nop = real(&s, Engine::Pool, 6, 0xA4);
    put(&mut nop, loc::events::WAIT_IDX, g, 30);
    put(&mut nop, loc::events::SEMAPHORE_VALUE, g, 0x1020);
    for e in Engine::ALL {
        cases.push(("NOP with a wait", e, nop));
    }
    // The preamble every stream starts with, on every engine; ACT's table load.
    for e in Engine::ALL {
        cases.push(("SET_ORDERING_MODE mode 0", e, real(&s, Engine::Pe, 0, 0xB1)));
        cases.push(("PSEUDO_BRANCH_LABEL", e, real(&s, Engine::Pe, 1, 0xCC)));
    }
    cases.push((
        "ACTIVATION_TABLE_LOAD set 0",
        Engine::Act,
        real(&s, Engine::Act, 2, 0x23),
    ));

    // LDWEIGHTS / MATMUL transposes: transpose_mode 1, negative steps, row/col group 15, the
    // large kernel's stationary at x base 0x21ff8 (read from 0x220f6, element 127, backwards).
    let mut ldw = real(&s, Engine::Pe, 3, 0x01);
    put_at(
        &mut ldw,
        loc::ld_weights::SRC,
        g,
        0,
        &0x0002_20F6u32.to_le_bytes(),
    );
    cases.push(("LDWEIGHTS transpose, negative steps", Engine::Pe, ldw));
    cases.push((
        "LDWEIGHTS (no transpose), negative steps",
        Engine::Pe,
        real(&s, Engine::Pe, 8, 0x01),
    ));
    cases.push((
        "MATMUL transpose",
        Engine::Pe,
        real(&s, Engine::Pe, 4, 0x02),
    ));
    cases.push((
        "MATMUL accumulate begin",
        Engine::Pe,
        real(&s, Engine::Pe, 9, 0x02),
    ));

    let mut bad = Vec::new();
    for (what, e, b) in &cases {
        let errs = errors(g, *e, b);
        if !errs.is_empty() {
            bad.push(format!("{what} on {e}: {errs:?}"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");

    // The builders change what they claim to: the same forms broken are rejected.
    let mut wrong = spill;
    put(&mut wrong, loc::dma_direct2d::DST_NUM, g, 129 | 1 << 16);
    assert_eq!(
        errors(g, Engine::Act, &wrong),
        ["is_valid_dma_direct2d.elements"]
    );
    let mut wrong = pool_in;
    put_at(&mut wrong, loc::dma_direct2d::SRC, g, 7, &[0x30]);
    assert_eq!(
        errors(g, Engine::Pool, &wrong),
        ["is_valid_dma_direct2d.addr8_mode"]
    );
    assert_eq!(
        errors(g, Engine::Pe, &cast),
        ["neuron_isa_check_opcode_on_engine"]
    );
}
