//! The instruction forms of the compiler's Trn2 streams, taken from the real NEFF's bundles
//! (`../shared/real/nkipy/matmul_small.neff`, read in place) and changed one field or one
//! def.json fact at a time: each neighbouring form whose meaning is not public, and each bad
//! input, is a named fault on the core and bundle that meets it, never a wrong answer.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tpbsim_isa::Engine;
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::kernel::DgeTable;
use tpbsim_sim::machine::{Fault, Program};

fn program() -> Program {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/real/nkipy/matmul_small.neff");
    api::load_program(&Neff::read(&p, &ReadOptions::default()).unwrap()).unwrap()
}

fn inputs(p: &Program) -> BTreeMap<String, Vec<u8>> {
    p.inputs()
        .into_iter()
        .map(|v| (v.name.clone(), vec![0u8; v.size as usize]))
        .collect()
}

/// Run `p`; the fault's core, its kind and its message.
fn fault(p: &Program, validate: bool) -> (usize, Fault, String) {
    let cfg = if validate {
        crate::checked()
    } else {
        RunConfig::default()
    };
    match api::run_program(p, &inputs(p), &cfg) {
        Err(RunError::Fault { fault, .. }) => {
            let msg = fault.to_string();
            (fault.core, fault.fault, msg)
        }
        Ok(_) => panic!("the run succeeded"),
        Err(e) => panic!("not a fault: {e}"),
    }
}

/// The bundle index of the first `opcode` in `e`'s stream of core `c`.
fn find(p: &Program, c: usize, e: Engine, opcode: u8) -> usize {
    p.cores[c]
        .stream(e)
        .iter()
        .position(|b| b.opcode() == opcode)
        .unwrap()
}

#[test]
fn the_unchanged_program_runs() {
    let p = program();
    let out = api::run_program(&p, &inputs(&p), &crate::checked()).unwrap();
    assert_eq!(out.cores.len(), 2);
    assert!(out.findings.is_empty());
}

#[test]
fn a_dge_entry_outside_its_table_is_a_fault_naming_the_table() {
    let mut p = program();
    // The output DMA names entry 2 (output0); a table of two entries has no entry 2.
    p.cores[1].dge_tables[0].entries.truncate(2);
    let (core, f, msg) = fault(&p, true);
    assert_eq!(core, 1);
    assert!(matches!(f, Fault::Exec { .. }), "{msg}");
    assert!(
        msg.contains("entry 2, outside `DGETable0` (2 entries)") && msg.contains("core 1 (sg01)"),
        "{msg}"
    );
}

#[test]
fn a_dge_entry_without_a_table_or_with_two_tables_is_refused() {
    let mut p = program();
    p.cores[0].dge_tables.clear();
    let (_, _, msg) = fault(&p, true);
    assert!(msg.contains("no dge-table variable"), "{msg}");
    let mut p = program();
    let extra = DgeTable {
        name: "DGETable1".into(),
        entries: vec![1],
    };
    p.cores[0].dge_tables.push(extra);
    let (_, f, msg) = fault(&p, true);
    assert!(matches!(f, Fault::NotSimulated { .. }), "{msg}");
    assert!(msg.contains("2 dge-table variables"), "{msg}");
}

#[test]
fn a_dma_semaphore_outside_its_queue_set_is_a_fault() {
    let mut p = program();
    let q = p.cores[0]
        .queue_sets
        .iter_mut()
        .find(|q| q.owner == Engine::Pool)
        .unwrap();
    q.semaphores.retain(|&s| s != 24);
    let (core, _, msg) = fault(&p, true);
    assert_eq!(core, 0);
    assert!(
        msg.contains("DMA semaphore 24 is outside the pool engine's queue set `qPoolDynamic`"),
        "{msg}"
    );
    // An increment above the set's queue count.
    let mut p = program();
    for q in &mut p.cores[0].queue_sets {
        q.num_queues = 8;
    }
    let (_, _, msg) = fault(&p, true);
    assert!(
        msg.contains("sem_increment 16 exceeds the 8 queues"),
        "{msg}"
    );
}

#[test]
fn the_register_forms_of_addr8_are_not_simulated() {
    let mut p = program();
    let i = find(&p, 0, Engine::Pool, 0xD4);
    // The x load's source: DGE-table entry form 0x20 → offset-register form 0x28.
    let b = &mut p.cores[0].streams[Engine::Pool as usize][i];
    assert_eq!(b.0[16 + 7], 0x20);
    b.0[16 + 7] = 0x28;
    let (_, f, msg) = fault(&p, true);
    assert!(matches!(f, Fault::NotSimulated { .. }), "{msg}");
    assert!(msg.contains("ADDR8 form 0x28"), "{msg}");
}

#[test]
fn a_dge_operation_other_than_direct2d_is_not_simulated() {
    let mut p = program();
    let i = find(&p, 0, Engine::Sp, 0xD4);
    p.cores[0].streams[Engine::Sp as usize][i].0[15] = 2;
    let (_, f, msg) = fault(&p, false);
    assert!(matches!(f, Fault::NotSimulated { .. }), "{msg}");
    assert!(msg.contains("dge_op 2"), "{msg}");
}

#[test]
fn a_non_default_ordering_mode_is_not_simulated() {
    let mut p = program();
    let i = find(&p, 1, Engine::Dve, 0xB1);
    p.cores[1].streams[Engine::Dve as usize][i].0[12] = 1;
    let (core, f, msg) = fault(&p, true);
    assert_eq!(core, 1);
    assert!(matches!(f, Fault::NotSimulated { .. }), "{msg}");
    assert!(msg.contains("SET_ORDERING_MODE mode 1"), "{msg}");
}

#[test]
fn an_act_table_set_the_sidecar_does_not_list_is_a_fault() {
    let mut p = program();
    assert_eq!(p.cores[0].act_table_sets, Some(1));
    p.cores[0].act_table_sets = Some(0);
    let (_, _, msg) = fault(&p, true);
    assert!(
        msg.contains("selects table set 0, the ACT sidecar lists 0"),
        "{msg}"
    );
}

#[test]
fn an_fp8_configuration_matters_only_to_fp8_operands() {
    let mut p = program();
    assert_eq!(
        p.cores[0].fp8_refusal, None,
        "the compiler's default configuration"
    );
    for k in &mut p.cores {
        k.fp8_refusal = Some("fp8_conversion_config ocp_sat false".into());
    }
    // The matmul has no FP8 operand: it runs.
    api::run_program(&p, &inputs(&p), &crate::checked()).unwrap();
}

#[test]
fn fp8_operands_under_another_fp8_configuration_are_not_simulated() {
    let mut p = program();
    // The output DMA (FP32 → FP16, 64 values a row) made FP32 → FP8 E4M3.
    let pool = Engine::Pool as usize;
    let i = p.cores[0].streams[pool]
        .iter()
        .rposition(|b| b.opcode() == 0xD4)
        .unwrap();
    let b = &mut p.cores[0].streams[pool][i];
    b.0[63] = 0x0E;
    b.0[60..62].copy_from_slice(&64u16.to_le_bytes());
    // Under the compiler's configuration it runs.
    api::run_program(&p, &inputs(&p), &crate::checked()).unwrap();
    p.cores[0].fp8_refusal = Some("fp8_conversion_config ocp_sat false".into());
    let (core, f, msg) = fault(&p, false);
    assert_eq!(core, 0);
    assert!(matches!(f, Fault::NotSimulated { .. }), "{msg}");
    assert!(msg.contains("ocp_sat false"), "{msg}");
}

#[test]
fn two_cores_writing_the_same_output_bytes_is_a_core_race() {
    let mut p = program();
    // sg01 writes output0 at sg00's columns (the +0x80 byte offset of its half removed).
    let pool = Engine::Pool as usize;
    let i = p.cores[1].streams[pool]
        .iter()
        .rposition(|b| b.opcode() == 0xD4)
        .unwrap();
    let dst = &mut p.cores[1].streams[pool][i].0[40..44];
    let off = u32::from_le_bytes(dst.try_into().unwrap());
    assert_eq!(off, 0x80);
    dst.copy_from_slice(&0u32.to_le_bytes());
    let out = api::run_program(&p, &inputs(&p), &crate::checked()).unwrap();
    let races: Vec<String> = out
        .findings
        .iter()
        .filter(|f| f.kind_name() == "core-race")
        .map(|f| f.to_string())
        .collect();
    assert_eq!(races.len(), 1, "{races:?}");
    assert!(
        races[0].contains("write by core 0 (sg00) and write by core 1 (sg01)")
            && races[0].contains("DRAM `output0`"),
        "{}",
        races[0]
    );
    // The same with one worker thread: the same outputs and findings.
    let one = RunConfig {
        threads: 1,
        ..crate::checked()
    };
    let again = api::run_program(&p, &inputs(&p), &one).unwrap();
    assert_eq!(again.outputs, out.outputs);
    assert_eq!(again.findings, out.findings);
}
