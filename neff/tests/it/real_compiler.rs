//! The NEFF neuronx-cc 2.23 wrote for Trn2 (`shared/real/nkipy/matmul_small.neff`: x f16
//! [128,256] @ y f16 [256,128] → output0 f16 [128,128], LNC2 = subgraphs sg00 and sg01), read
//! in place: the header, both subgraphs with the typed `def.json` and engine-JSON keys, the
//! host tensors, the logical core, and what is listed as not modelled.

use std::path::PathBuf;

use tpbsim_isa::Engine;
use tpbsim_neff::{features, DigestStatus, DveTableSet, Neff, NeffError, ReadOptions, VarKind};

fn path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/real/nkipy/matmul_small.neff"
    ))
}

fn read(verify_hash: bool) -> Result<Neff, NeffError> {
    Neff::read(
        path(),
        &ReadOptions {
            verify_hash,
            ..ReadOptions::default()
        },
    )
}

#[test]
fn the_header_reads_without_a_hash_check() {
    let n = read(false).unwrap();
    let h = &n.header;
    assert_eq!(n.digest, DigestStatus::NotChecked);
    assert_eq!(
        (h.pkg_version, h.header_size, h.data_size),
        (2, 0x400, 0xF000)
    );
    assert_eq!((h.neff_version_major, h.neff_version_minor), (2, 0));
    assert_eq!((h.lnc_size, h.lnc()), (2, 2));
    assert_eq!((h.num_tpb, h.requested_tpb_count), (1, 1));
    assert_eq!(h.tpb_per_node[..2], [1, 0]);
    assert_eq!(h.feature_bits, 0x20_9c00);
    let names = h.feature_names();
    assert_eq!(
        names,
        [
            "neff_feature_vnc",
            "dve_perf_mode",
            "neff_feature_DGE",
            "neff_feature_DGE_cast",
            "neff_feature_hardware_DGE"
        ]
    );
    assert!(h.vnc_feature());
    assert_eq!(features::refused_bits(2, h.feature_bits), 0);
    assert_eq!(h.name_str(), "file.neff");
    // 72 members, up to the tar's end-of-archive marker (neff.json is the last).
    assert_eq!(n.members.len(), 72);
    assert!(n.members.contains_key("neff.json"));
}

#[test]
fn the_header_hash_does_not_cover_the_payload() {
    match read(true).unwrap_err() {
        NeffError::HashMismatch {
            algorithm,
            expected,
            ..
        } => {
            assert_eq!(algorithm, "MD5");
            assert_eq!(expected, "bcb3e9ef77301698cd8b4cb9471ff5ac");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn both_subgraphs_with_their_typed_keys() {
    let n = read(false).unwrap();
    let plan = n.plan().unwrap();
    assert_eq!(plan.kelf.as_deref(), Some("kelf-0.json"));
    let sgs = n.subgraphs().unwrap();
    n.check_reachable(&sgs).unwrap();
    assert_eq!(
        sgs.iter().map(|s| s.dir.as_str()).collect::<Vec<_>>(),
        ["sg00", "sg01"]
    );
    let core = n.logical_core(&sgs).unwrap();
    assert_eq!((core.size, core.vnc_feature, core.subgraphs), (2, true, 2));
    for sg in &sgs {
        let d = &sg.def;
        assert_eq!(d.neff_features, ["neff_feature_vnc"]);
        assert!(d.vnc_feature());
        assert_eq!(
            (d.runtime_semaphore_count, d.runtime_event_count),
            (Some(3), Some(12))
        );
        let fp8 = d.fp8_conversion_config.as_ref().unwrap();
        assert_eq!(
            (
                fp8.emax_fp8_e4m3,
                fp8.emax_fp8_e5m2,
                fp8.fp8_range_extension,
                fp8.fp8_sis,
                fp8.fp8_sns,
                fp8.ocp_sat
            ),
            (
                Some(8),
                Some(15),
                Some(true),
                Some(false),
                Some(false),
                Some(true)
            )
        );
        assert!(fp8.extra.is_empty());
        // Variables.
        let table = d.variable("DGETable0").unwrap();
        assert_eq!(table.kind, VarKind::DgeTable);
        assert_eq!(table.var_id, 5);
        assert_eq!(table.list.as_deref(), Some(&[1, 2, 3][..]));
        assert!(table.extra.is_empty(), "{:?}", table.extra);
        let ids: Vec<(&str, u64, &VarKind)> = table
            .list
            .iter()
            .flatten()
            .map(|&id| {
                let v = d.variable_by_id(id).unwrap();
                (v.name.as_str(), v.size.unwrap(), &v.kind)
            })
            .collect();
        assert_eq!(
            ids,
            [
                ("x", 65536, &VarKind::Input),
                ("y", 65536, &VarKind::Input),
                ("output0", 32768, &VarKind::Output)
            ]
        );
        let identity = d.variable("identity_82_sg0000").unwrap();
        assert_eq!(
            (identity.kind.clone(), identity.var_id, identity.size),
            (VarKind::File, 4, Some(32768))
        );
        assert!(identity.backing_variable_off.is_none() && identity.list.is_none());
        assert_eq!(d.variable("SB").unwrap().kind, VarKind::StateBuffer);
        // Queues.
        let pool = d.queue("qPoolDynamic").unwrap();
        assert_eq!(pool.num_queues, Some(16));
        assert_eq!(pool.queue_count(), 16);
        assert_eq!(
            pool.semaphore_set.as_deref(),
            Some(&(24..40).collect::<Vec<u32>>()[..])
        );
        assert_eq!(pool.semaphore, None);
        assert_eq!(
            (pool.owner.as_deref(), pool.role_type.as_deref()),
            (Some("pool"), Some("dynamic"))
        );
        assert_eq!(pool.role(), Some("dynamic"));
        assert_eq!(pool.fabric_path.as_deref(), Some("main"));
        let dynamic = pool.dynamic_dma.as_ref().unwrap();
        assert_eq!(
            (
                dynamic.sb_scratch_partition_offset,
                dynamic.sb_scratch_partition_size
            ),
            (Some(0), Some(16384))
        );
        assert!(pool.extra.is_empty(), "{:?}", pool.extra);
        let sp = d.queue("qSPDynamicHW").unwrap();
        assert_eq!(
            (sp.num_queues, sp.owner.as_deref(), sp.dynamic_dma.is_none()),
            (Some(16), Some("sp"), true)
        );
        assert_eq!(
            sp.semaphore_set.as_deref(),
            Some(&(8..24).collect::<Vec<u32>>()[..])
        );
        // Engine JSONs.
        let act = sg.sidecar(Engine::Act).unwrap();
        assert_eq!(
            act.activation_function_sets.as_deref(),
            Some(&["exp_and_others".to_string()][..])
        );
        assert_eq!(act.act_semaphore, Some(12));
        assert_eq!(act.act_info.as_deref(), Some("act_info.json"));
        let dve = sg.sidecar(Engine::Dve).unwrap();
        let sets = dve.dve_tables.as_deref().unwrap();
        assert_eq!(
            sets,
            [DveTableSet {
                opcode_table: Some("default_opcode_table.bin".into()),
                control_fast_table: Some("default_control_fast_table.bin".into()),
                control_slow_table: Some("default_control_slow_table.bin".into()),
                control_table: None,
                datapath_table: Some("default_datapath_table.bin".into()),
                extra: Default::default(),
            }]
        );
        assert!(dve.dve_tables_default());
        // Every engine's stream, through its engine JSON.
        for e in Engine::ALL {
            assert!(sg.stream(e).is_some(), "{} {e}", sg.dir);
        }
        assert_eq!(sg.stream(Engine::Pe).unwrap().len(), 12);
        // The named table images are kept with the subgraph.
        for m in [
            "act_info.json",
            "exp_and_others_bkt.bin",
            "exp_and_others_ctrl.bin",
            "exp_and_others.json",
            "default_opcode_table.bin",
            "debug_info_asm_PE.dbg",
        ] {
            let m = sg.member_path(m);
            assert!(sg.named.contains_key(&m) && sg.used.contains(&m), "{m}");
        }
    }
    // sg00 and sg01 differ only in the Pool stream.
    assert_ne!(
        sgs[0].stream(Engine::Pool).unwrap().bundles(),
        sgs[1].stream(Engine::Pool).unwrap().bundles()
    );
    assert_eq!(
        sgs[0].stream(Engine::Pe).unwrap().bundles(),
        sgs[1].stream(Engine::Pe).unwrap().bundles()
    );
}

#[test]
fn host_tensors_from_the_kelf_nodes_output_names() {
    let n = read(false).unwrap();
    let host = n.host_tensors();
    let f16 = |s: &[u64]| ("float16".to_string(), s.to_vec());
    assert_eq!(host.len(), 3, "{host:?}");
    assert_eq!(host["x"], f16(&[128, 256]));
    assert_eq!(host["y"], f16(&[256, 128]));
    assert_eq!(host["output0"], f16(&[128, 128]));
}

#[test]
fn nothing_that_changes_results_is_left_unmodelled() {
    let n = read(false).unwrap();
    let sgs = n.subgraphs().unwrap();
    let mut all: Vec<_> = sgs.iter().flat_map(|s| s.unmodelled.clone()).collect();
    all.extend(n.unmodelled_members(&sgs).unwrap());
    let affecting: Vec<String> = all
        .iter()
        .filter(|u| u.affects_results)
        .map(ToString::to_string)
        .collect();
    assert!(affecting.is_empty(), "{affecting:#?}");
    let note = |member: &str, path: &str| {
        all.iter()
            .find(|u| u.member == member && u.path == path)
            .map(|u| u.note.clone())
            .unwrap_or_else(|| panic!("{member} {path} not listed"))
    };
    assert!(note("sg00/def.json", "runtime_semaphore_count")
        .contains("C formats/neff-feature-flags.md"));
    assert!(note("sg01/def.json", "cc_streams").contains("num_streams 0"));
    assert!(note("sg00/def.json", "pe_asm_dbg").contains("debug"));
    assert!(note("sg00/def.json", "act_instr").contains("instr"));
    assert!(note("sg00/def.json", "dma_queue.qPoolDynamic.fabric_path")
        .contains("work-with-neff-files.rst"));
    assert!(note("info.json", "").contains("C formats/neff-json-sidecars.md"));
    assert!(note("hlo_stats.json", "").contains("R neff/container.md"));
    assert!(note("sg00/tensor_map.json", "").contains("alias"));
    assert!(note("debug_info/debug_info_hlo.dbg_sg000000", "").contains("debug"));
    assert!(note("sg01/exp_and_others_bkt.bin", "").contains("act_func_sets[0].bkt_bin"));
    assert!(note("sg00/default_datapath_table.bin", "").contains("dve_tables[0].datapath_table"));
    // Modelled keys are not listed.
    for (member, path) in [
        ("sg00/def.json", "fp8_conversion_config"),
        ("sg00/def.json", "neff_features"),
        ("sg00/def.json", "var.DGETable0.list"),
        ("sg00/def.json", "dma_queue.qPoolDynamic.num_queues"),
        ("sg00/def.json", "dma_queue.qPoolDynamic.dynamic_dma"),
        ("sg00/Activation.json", "act_semaphore"),
        ("sg00/DVE.json", "dve_tables"),
    ] {
        assert!(
            !all.iter().any(|u| u.member == member && u.path == path),
            "{member} {path} listed"
        );
    }
    // No member is left unexplained.
    let unexplained: Vec<&str> = all
        .iter()
        .filter(|u| u.note == "member no manifest names")
        .map(|u| u.member.as_str())
        .collect();
    assert!(unexplained.is_empty(), "{unexplained:?}");
}

#[test]
fn repacking_keeps_the_members_the_engine_jsons_name() {
    let n = read(false).unwrap();
    let r = tpbsim_neff::to_runtime_layout(&n).unwrap();
    // What no manifest names is left out, and only that.
    let mut ignored = r.ignored.clone();
    ignored.sort();
    assert_eq!(
        ignored,
        [
            "debug_info/debug_info_hlo.dbg_sg000000",
            "debug_info/debug_info_penguin.dbg_sg000000",
            "debug_info/debug_info_pttf.dbg_sg000000",
            "debug_info/debug_info_stack_frame_index.dbg",
            "hlo_stats.json",
            "info.json",
            "sg00/tensor_map.json",
            "sg01/tensor_map.json"
        ]
    );
    for (m, d) in &r.neff.members {
        assert_eq!(Some(d), n.members.get(m), "{m} kept verbatim");
    }
    let back = Neff::from_bytes(&r.neff.to_bytes().unwrap(), &ReadOptions::default()).unwrap();
    let sgs = back.subgraphs().unwrap();
    assert_eq!(back.logical_core(&sgs).unwrap().subgraphs, 2);
    assert!(back.members.contains_key("sg01/exp_and_others_ctrl.bin"));
}
