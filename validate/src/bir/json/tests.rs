//! BIR JSON import and export tests: round trips, canonical spellings, schema errors with
//! their paths, hostile depth and duplicates.

use super::*;
use serde_json::{json, Value};

fn sample() -> Value {
    json!({
        "name": "k",
        "arch": "core_v4",
        "functions": [{
            "name": "main",
            "attrs": {"skip_engine_check": false, "note": "x"},
            "blocks": [{
                "name": "bb0",
                "dynamic_cfg": false,
                "instructions": [
                    {"op": "MatmultMx", "name": "mm", "engine": "PE",
                     "args": [{"mem": "SB", "buffer": "a", "dtype": "float8_e4m3fn_x4",
                               "start_partition": 0, "partitions": 128, "pattern": [[1, 32]], "offset": 0}],
                     "outs": [{"mem": "PSUM", "buffer": "o", "dtype": "float32", "partitions": 32,
                               "pattern": [[1, 32]]}],
                     "replication_shift": 0,
                     "tiles": {"row_pos": 0, "col_pos": [-1], "row_size": [128], "col_size": [-1]}},
                    {"op": "NKIKernel", "engine": "Unassigned", "func": "main",
                     "sb_num_partitions": 128, "sb_per_partition_size": 64, "psum_bank_count": 2,
                     "psum_num_partitions": 128, "num_sb_buffers": 1, "num_psum_buffers": 1},
                    {"op": "CollectiveCompute", "kind": "AllGather", "replica_groups_shape": [1, 4]},
                    {"op": "AllToAllV"},
                    {"op": "GPSIMDSB2SB", "engine": "Pool", "ctx": 2},
                    {"op": "DynamicForLoop", "engine": "ALL", "blocks": [
                        {"name": "body", "instructions": [
                            {"op": "TensorTensor", "engine": "DVE", "attrs": {"alu": "add"}}
                        ]}
                    ]}
                ]
            }]
        }]
    })
}

#[test]
fn round_trip() {
    let m = from_json_value(&sample()).unwrap();
    assert_eq!(m.arch, ArchLevel::CoreV4);
    assert_eq!(m.instruction_count(), 7);
    let back = from_json_value(&to_json_value(&m)).unwrap();
    assert_eq!(back, m);
    let text = to_json_string(&m);
    assert_eq!(from_json_str(&text).unwrap(), m);
    let mx = m.functions[0].blocks[0].instructions[0]
        .matmult_mx()
        .unwrap();
    assert_eq!(mx.tiles.as_ref().unwrap().row_pos, vec![0]);
    let aa = &m.functions[0].blocks[0].instructions[3];
    assert_eq!(aa.collective_kind(), Some(CollectiveKind::AllToAllV));
}

#[test]
fn arch_by_number() {
    let mut v = sample();
    v["arch"] = json!(20);
    assert_eq!(from_json_value(&v).unwrap().arch, ArchLevel::Sunda);
    v["arch"] = json!(21);
    let e = from_json_value(&v).unwrap_err().to_string();
    assert!(e.starts_with("arch: unknown arch 21"), "{e}");
}

fn err_of(v: &Value) -> String {
    from_json_value(v).unwrap_err().to_string()
}

#[test]
fn errors_name_the_path() {
    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["dtype"] = json!("float9");
    assert_eq!(
        err_of(&v),
        "functions[0].blocks[0].instructions[0].args[0].dtype: unknown dtype \"float9\""
    );

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][1]["psum_bank_cnt"] = json!(1);
    assert_eq!(
        err_of(&v),
        "functions[0].blocks[0].instructions[1].psum_bank_cnt: unknown key \"psum_bank_cnt\""
    );

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["pattern"][0] = json!([1]);
    assert_eq!(
        err_of(&v),
        "functions[0].blocks[0].instructions[0].args[0].pattern[0]: expected [step, num], found 1 entries"
    );

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][2]
        .as_object_mut()
        .unwrap()
        .remove("kind");
    assert!(err_of(&v)
        .starts_with("functions[0].blocks[0].instructions[2]: missing required key \"kind\""));

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][3]["kind"] = json!("AllGather");
    assert!(err_of(&v).contains("contradicts the class AllToAllV"));

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][0]["tiles"]["col_size"] = json!([1, 2]);
    assert!(
        err_of(&v).starts_with("functions[0].blocks[0].instructions[0].tiles: row_pos, col_pos")
    );

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][5]["blocks"][0]["instructions"][0]["engine"] =
        json!("GPU");
    assert!(err_of(&v).starts_with(
        "functions[0].blocks[0].instructions[5].blocks[0].instructions[0].engine: unknown engine \"GPU\""
    ));

    let mut v = sample();
    v["functions"][0]["attrs"]["skip_engine_check"] = json!(1);
    assert_eq!(
        err_of(&v),
        "functions[0].attrs.skip_engine_check: expected a boolean, found a number"
    );

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["partitions"] = json!(-1);
    assert!(err_of(&v).contains("args[0].partitions: expected a non-negative integer"));

    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][0]["op"] = json!("Matmul");
    assert_eq!(
        err_of(&v),
        "functions[0].blocks[0].instructions[0].op: unknown instruction class \"Matmul\""
    );

    assert_eq!(err_of(&json!([])), "$: expected an object, found an array");
    assert_eq!(
        err_of(&json!({"arch": 40})),
        "$: missing required key \"functions\""
    );
}

#[test]
fn schema_errors_name_the_path_at_every_level() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "/functions/0/blocks/0/instructions/4/ctx",
            json!("2"),
            "functions[0].blocks[0].instructions[4].ctx: expected a non-negative integer, found a string",
        ),
        (
            "/functions/0/blocks/0/instructions/0/args/0",
            json!(["SB", "a", "int8"]),
            "functions[0].blocks[0].instructions[0].args[0]: expected an object, found an array",
        ),
        (
            "/functions/0/blocks/0/instructions/0/args/0/mem",
            json!("HBM"),
            "functions[0].blocks[0].instructions[0].args[0].mem: unknown memory type \"HBM\" (expected SB|PSUM|DRAM|Input|Output|Unallocated|RNGSTATE|REG)",
        ),
        (
            "/functions/0/blocks/0/instructions/0/outs/0/dtype",
            json!(20),
            "functions[0].blocks[0].instructions[0].outs[0].dtype: unknown dtype ordinal 20 (expected 0..=19)",
        ),
        (
            "/functions/0/blocks/0/instructions/0/args/0/pattern/0/1",
            json!(-3),
            "functions[0].blocks[0].instructions[0].args[0].pattern[0][1]: expected a non-negative integer, found -3",
        ),
        (
            "/functions/0/blocks/0/instructions/0/tiles/row_size",
            json!("x"),
            "functions[0].blocks[0].instructions[0].tiles.row_size: expected an integer or an array of integers, found a string",
        ),
        (
            "/functions/0/blocks/0/instructions/2/kind",
            json!("Gather"),
            "functions[0].blocks[0].instructions[2].kind: unknown collective kind \"Gather\"",
        ),
        (
            "/functions/0/blocks/0/instructions/5/blocks/0/name",
            json!("a/b"),
            "functions[0].blocks[0].instructions[5].blocks[0].name: block name \"a/b\" must be non-empty and contain no '/'",
        ),
        (
            "/functions/0/blocks/0/instructions/5/blocks/0/instructions/0/args",
            json!(7),
            "functions[0].blocks[0].instructions[5].blocks[0].instructions[0].args: expected an array, found a number",
        ),
        (
            "/functions/0/blocks/0/dynamic_cfg",
            json!("yes"),
            "functions[0].blocks[0].dynamic_cfg: expected a boolean, found a string",
        ),
        (
            "/functions/0/name",
            json!(null),
            "functions[0].name: expected a string, found null",
        ),
        (
            "/arch",
            json!(true),
            "arch: expected an arch name or level number, found a boolean",
        ),
    ];
    for (pointer, value, want) in cases {
        let mut v = sample();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        match v.pointer_mut(parent).unwrap() {
            Value::Object(o) => {
                o.insert(key.to_string(), value.clone());
            }
            other => other[key.parse::<usize>().unwrap()] = value.clone(),
        }
        assert_eq!(&err_of(&v), want, "{pointer}");
    }
}

#[test]
fn class_fields_only_on_their_class() {
    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][5]["blocks"][0]["instructions"][0]["ctx"] =
        json!(2);
    assert_eq!(
        err_of(&v),
        "functions[0].blocks[0].instructions[5].blocks[0].instructions[0]: unknown key \"ctx\" (not a field of TensorTensor)"
    );
    // `null` counts as absent, for class fields too.
    let mut v = sample();
    v["functions"][0]["blocks"][0]["instructions"][3]["ctx"] = Value::Null;
    from_json_value(&v).unwrap();
}

#[test]
fn region_depth_error_names_the_deep_region() {
    let e = from_json_str(&nested(MAX_REGION_DEPTH + 1)).unwrap_err();
    let want = format!(
        "functions[0].blocks[0].instructions[0]{}: regions nested deeper than 64",
        ".blocks[0].instructions[0]".repeat(MAX_REGION_DEPTH)
    );
    assert_eq!(e.to_string(), want);
}

#[test]
fn deep_values_are_refused_before_they_are_read() {
    let mut v = json!(1);
    for _ in 0..(MAX_JSON_DEPTH + 5) {
        v = json!([v]);
    }
    let v = json!({"arch": 40, "functions": [], "name": v});
    assert_eq!(
        err_of(&v),
        format!("$: nested deeper than {MAX_JSON_DEPTH} levels")
    );
}

#[test]
fn export_writes_canonical_spellings_and_defaults() {
    let text = r#"{"arch": "trn2", "functions": [{"name": "f", "blocks": [{"name": "b",
        "instructions": [{"op": "InstAllGather", "engine": "gpsimd",
          "args": [{"mem": "sbuf", "buffer": "x", "dtype": "bf16"}]}]}]}]}"#;
    let m = from_json_str(text).unwrap();
    assert_eq!(
        to_json_value(&m),
        json!({"arch": "gen3", "functions": [{"name": "f", "blocks": [{"name": "b",
            "dynamic_cfg": false, "instructions": [{"op": "AllGather", "engine": "Pool",
            "args": [{"mem": "SB", "buffer": "x", "dtype": "bfloat16", "start_partition": 0,
                      "partitions": 1, "pattern": [], "offset": 0}],
            "outs": [], "kind": "AllGather", "sb_scratchpad": false, "is_local": false}]}]}]})
    );
    assert!(to_json_string(&m).ends_with("}\n"));
}

#[test]
fn duplicates_rejected() {
    let mut v = sample();
    let f = v["functions"][0].clone();
    v["functions"].as_array_mut().unwrap().push(f);
    assert_eq!(
        err_of(&v),
        "functions[1].name: duplicate function name \"main\""
    );
}

#[test]
fn syntax_error_has_position() {
    let e = from_json_str("{\n  \"arch\": 40,\n  oops }").unwrap_err();
    assert!(matches!(e, BirJsonError::Syntax { line: 3, .. }), "{e}");
}

fn nested(regions: usize) -> String {
    let mut inner = json!({"op": "Loop", "blocks": []});
    for _ in 1..regions {
        inner = json!({"op": "Loop", "blocks": [{"name": "b", "instructions": [inner]}]});
    }
    let v = json!({"arch": 40, "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [inner]}]}]});
    v.to_string()
}

#[test]
fn the_documented_region_depth_is_the_real_one() {
    // Serde's default recursion limit (128 levels) would stop at about 29 regions.
    from_json_str(&nested(MAX_REGION_DEPTH)).unwrap();
    let e = from_json_str(&nested(MAX_REGION_DEPTH + 1)).unwrap_err();
    assert!(
        e.to_string().contains("regions nested deeper than 64"),
        "{e}"
    );
    let e = from_json_str(&"[".repeat(100_000)).unwrap_err();
    assert!(e.to_string().contains("nested deeper than"), "{e}");
}

#[test]
fn duplicate_keys_are_refused() {
    let e = from_json_str(r#"{"arch": 40, "arch": 30, "functions": []}"#).unwrap_err();
    assert!(e.to_string().contains("duplicate key \"arch\""), "{e}");
    assert!(from_json_str(r#"{"arch": 40, "functions": []} x"#).is_err());
}

#[test]
fn deep_regions_rejected_not_overflowed() {
    let mut inner = json!({"op": "Loop", "blocks": []});
    for _ in 0..(MAX_REGION_DEPTH + 2) {
        inner = json!({"op": "Loop", "blocks": [{"name": "b", "instructions": [inner]}]});
    }
    let v = json!({"arch": 40, "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [inner]}]}]});
    assert!(err_of(&v).contains("regions nested deeper than"));
}

/// The streamed export is exactly the pretty-printed value, for a module with regions, class
/// fields, attributes and names, for an empty module and for a function without blocks.
#[test]
fn streamed_export_is_the_pretty_printed_value() {
    let pretty = |m: &crate::bir::Module| {
        let mut s = serde_json::to_string_pretty(&to_json_value(m)).unwrap();
        s.push('\n');
        s
    };
    let mut m = from_json_value(&sample()).unwrap();
    assert_eq!(to_json_string(&m), pretty(&m));
    m.name = Some("named".into());
    m.functions.push(crate::bir::Function {
        name: "empty".into(),
        ..Default::default()
    });
    assert_eq!(to_json_string(&m), pretty(&m));
    let mut bytes = Vec::new();
    super::write_json(&m, &mut bytes).unwrap();
    assert_eq!(String::from_utf8(bytes).unwrap(), pretty(&m));
    let empty = crate::bir::Module::new(ArchLevel::CoreV4);
    assert_eq!(to_json_string(&empty), pretty(&empty));
}
