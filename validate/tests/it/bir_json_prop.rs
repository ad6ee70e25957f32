//! Property: BIR JSON import never panics, whatever the input; valid modules round-trip.

use proptest::prelude::*;
use serde_json::{json, Value};
use tpbsim_validate::bir::{from_json_str, from_json_value, to_json_value};

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop_oneof![
            Just("SB".to_string()),
            Just("PSUM".to_string()),
            Just("MatmultMx".to_string()),
            Just("float8_e4m3fn_x4".to_string()),
            Just("core_v4".to_string()),
            Just("PE".to_string()),
            "[a-zA-Z_]{0,12}",
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 96, 8, |inner| {
        let keys = prop_oneof![
            Just("arch".to_string()),
            Just("functions".to_string()),
            Just("name".to_string()),
            Just("blocks".to_string()),
            Just("instructions".to_string()),
            Just("op".to_string()),
            Just("engine".to_string()),
            Just("args".to_string()),
            Just("outs".to_string()),
            Just("mem".to_string()),
            Just("buffer".to_string()),
            Just("dtype".to_string()),
            Just("pattern".to_string()),
            Just("tiles".to_string()),
            Just("kind".to_string()),
            "[a-z_]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid document with one leaf replaced by an arbitrary value.
fn mutated_valid() -> impl Strategy<Value = Value> {
    let base = json!({
        "arch": "core_v4",
        "functions": [{"name": "main", "blocks": [{"name": "bb0", "instructions": [
            {"op": "MatmultMx", "engine": "PE",
             "args": [{"mem": "SB", "buffer": "a", "dtype": "float8_e4m3fn_x4", "partitions": 128, "pattern": [[1, 32]]}],
             "outs": [{"mem": "PSUM", "buffer": "o", "dtype": "float32", "partitions": 32, "pattern": [[1, 32]]}],
             "tiles": {"row_pos": [0], "col_pos": [0], "row_size": [128], "col_size": [128]}},
            {"op": "Loop", "blocks": [{"name": "b", "instructions": [{"op": "AllGather", "replica_groups_shape": [1, 4]}]}]}
        ]}]}]
    });
    let paths: Vec<Vec<Value>> = vec![
        vec![json!("arch")],
        vec![json!("functions"), json!(0), json!("name")],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(0),
            json!("engine"),
        ],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(0),
            json!("args"),
            json!(0),
            json!("dtype"),
        ],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(0),
            json!("args"),
            json!(0),
            json!("pattern"),
        ],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(0),
            json!("tiles"),
        ],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(1),
            json!("blocks"),
        ],
        vec![
            json!("functions"),
            json!(0),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(1),
            json!("blocks"),
            json!(0),
            json!("instructions"),
            json!(0),
            json!("replica_groups_shape"),
        ],
    ];
    (0..paths.len(), arb_json()).prop_map(move |(i, leaf)| {
        let mut v = base.clone();
        let mut cur = &mut v;
        for seg in &paths[i] {
            cur = match seg {
                Value::String(k) => &mut cur[k.as_str()],
                Value::Number(n) => &mut cur[n.as_u64().unwrap_or(0) as usize],
                _ => cur,
            };
        }
        *cur = leaf;
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn import_value_never_panics(v in arb_json()) {
        let _ = from_json_value(&v);
    }

    #[test]
    fn import_text_never_panics(s in ".{0,200}") {
        let _ = from_json_str(&s);
    }

    #[test]
    fn mutated_documents_never_panic_and_round_trip(v in mutated_valid()) {
        if let Ok(m) = from_json_value(&v) {
            let back = from_json_value(&to_json_value(&m));
            prop_assert_eq!(back.as_ref(), Ok(&m));
        }
    }
}
