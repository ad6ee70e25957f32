//! `sim neff info` on the NEFF neuronx-cc 2.23 wrote for Trn2
//! (`shared/real/nkipy/matmul_small.neff`, LNC2: subgraphs sg00 and sg01), read in place: its
//! header hash is not checked unless asked (it does not cover the payload), the zero padding
//! after the gzip member is read past, and the header fields, the logical core and the typed
//! `def.json` keys are shown.

use crate::common::{sim, text};
use serde_json::{json, Value};

fn neff() -> &'static str {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/real/nkipy/matmul_small.neff"
    )
}

#[test]
fn info_reads_the_file_unmodified() {
    let o = sim(&["neff", "info", neff()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "header + archive",
        "data_size            61440",
        "hash                 bcb3e9ef77301698cd8b4cb9471ff5ac (MD5, not checked; --verify-hash checks it)",
        "num_tpb              1",
        "requested_tpb_count  1",
        "tpb_per_node         [1]",
        "feature_bits         0x209c00 (neff_feature_vnc, dve_perf_mode, neff_feature_DGE, neff_feature_DGE_cast, neff_feature_hardware_DGE)",
        "lnc_size             2",
        "target: cayman (kelf-0.json target)",
        "members: 72",
        "subgraph sg00:",
        "subgraph sg01:",
        "neff_features: neff_feature_vnc",
        "fp8_conversion_config: emax_fp8_e4m3 8, emax_fp8_e5m2 15, fp8_range_extension true, fp8_sis false, fp8_sns false, ocp_sat true",
        "DGETable0                dge-table    list [1, 2, 3]",
        "qPoolDynamic owner pool type dynamic num_queues 16 semaphores [24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39] SB scratch 0+16384 per partition",
        "qSPDynamicHW owner sp type dynamic num_queues 16 semaphores [8, 9,",
        "reader: runtime",
        "logical core: 2 physical core(s) (lnc_size), vnc feature set, 2 subgraph(s)",
        ", 0 that change results",
        "sg00/exp_and_others_bkt.bin (no effect on results; sg00/act_info.json act_func_sets[0].bkt_bin",
        "info.json (no effect on results; compiler metadata",
    ] {
        assert!(t.contains(needle), "`{needle}` missing from:\n{t}");
    }
    assert!(!t.contains("member no manifest names"), "{t}");
}

#[test]
fn info_json_reports_the_header_the_logical_core_and_the_typed_keys() {
    let o = sim(&["neff", "info", neff(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let h = &doc["header"];
    assert_eq!(h["hash_status"], "not checked");
    assert_eq!(h["hash_algorithm"], "MD5");
    assert_eq!(h["lnc_size"], 2);
    assert_eq!(h["num_tpb"], 1);
    assert_eq!(h["requested_tpb_count"], 1);
    assert_eq!(h["tpb_per_node"], json!([1]));
    assert_eq!(h["feature_bits"], "0x209c00");
    let names = h["feature_names"].as_array().unwrap();
    assert!(names.contains(&json!("neff_feature_vnc")), "{names:?}");
    assert_eq!(names.len(), 5);
    assert_eq!(
        doc["logical_core"],
        json!({"size": 2, "vnc_feature": true, "subgraphs": 2})
    );
    assert_eq!(doc["target_arch"], "cayman");
    assert!(doc["unmodelled"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| u["affects_results"] == false));
    let sgs = doc["subgraphs"].as_array().unwrap();
    assert_eq!(sgs.len(), 2);
    for (sg, dir) in sgs.iter().zip(["sg00", "sg01"]) {
        assert_eq!(sg["dir"], dir);
        assert_eq!(sg["neff_features"], json!(["neff_feature_vnc"]));
        assert_eq!(
            sg["fp8_conversion_config"],
            json!({"emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15, "fp8_range_extension": true,
                   "fp8_sis": false, "fp8_sns": false, "ocp_sat": true})
        );
        assert_eq!(
            (&sg["runtime_semaphore_count"], &sg["runtime_event_count"]),
            (&json!(3), &json!(12))
        );
        let var = |name: &str| {
            sg["variables"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == name)
                .unwrap_or_else(|| panic!("{dir}: no variable {name}"))
                .clone()
        };
        let table = var("DGETable0");
        assert_eq!(
            (&table["type"], &table["var_id"], &table["list"]),
            (&json!("dge-table"), &json!(5), &json!([1, 2, 3]))
        );
        assert_eq!(var("output0")["size"], 32768);
        let q = sg["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == "qPoolDynamic")
            .unwrap();
        assert_eq!(q["owner"], "pool");
        assert_eq!(q["type"], "dynamic");
        assert_eq!(q["num_queues"], 16);
        assert_eq!(q["semaphores"], json!((24..40).collect::<Vec<u32>>()));
        assert_eq!(q["fabric_path"], "main");
        assert_eq!(
            q["dynamic_dma"],
            json!({"SB_scratch_partition_offset": 0, "SB_scratch_partition_size": 16384})
        );
        let engines: Vec<&str> = sg["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["engine"].as_str().unwrap())
            .collect();
        assert_eq!(engines.len(), 5, "{engines:?}");
    }
}

#[test]
fn verify_hash_refuses_the_file_with_the_named_mismatch() {
    for args in [
        vec!["neff", "info", neff(), "--verify-hash"],
        vec!["neff", "info", neff(), "--json", "--verify-hash"],
    ] {
        let o = sim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("MD5 mismatch: header has bcb3e9ef77301698cd8b4cb9471ff5ac"),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "nothing printed for a refused file");
    }
}
