//! Schema tests: parsing, the consistency checks and their JSON paths.

use super::check::pattern_span;
use super::*;

fn def() -> DefJson {
    let mut a = Variable::new(0, "a", VarKind::Input);
    a.size = Some(64);
    a.dtype = Some(NumFormat::Bfloat16);
    a.shape = Some(vec![4, 8]);
    let mut b = Variable::new(1, "b", VarKind::Output);
    b.size = Some(128);
    b.dtype = Some(NumFormat::Float32);
    b.shape = Some(vec![4, 8]);
    let mut q = DmaQueue::new("data");
    q.semaphore = Some(3);
    DefJson {
        var: vec![a, b],
        dma_queue: vec![q],
        ..Default::default()
    }
}

#[test]
fn dtype_names() {
    for d in NumFormat::NEFF {
        assert_eq!(NumFormat::from_neff_name(d.name()).unwrap(), d);
    }
    assert_eq!(
        NumFormat::from_neff_name("float8e4").unwrap(),
        NumFormat::Float8E4m3
    );
    assert!(NumFormat::from_neff_name("float8").is_err());
}

#[test]
fn def_json_lenient_and_typed() {
    let text = r#"{"definition": {"pe": {"_instr": "PE.bin", "_dbg": "x"}, "name": "mod"},
        "var": [{"var_id": 0, "name": "w", "type": "file", "file_name": "w.npy", "pointer": 7}],
        "dma_queue": [{"name": "in", "owner": "in", "semaphore": 2}],
        "replica_groups": [[0, 1]]}"#;
    let d: DefJson = parse_json("sg00/def.json", text.as_bytes()).unwrap();
    assert_eq!(d.instr_file(Engine::Pe), Some("PE.bin"));
    assert_eq!(d.var[0].kind, VarKind::File);
    assert_eq!(d.var[0].extra.get("pointer"), Some(&Value::from(7)));
    assert!(d.extra.contains_key("replica_groups"));
    d.validate("sg00/def.json").unwrap();
    // Round trip keeps unknown keys.
    let back: DefJson = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
    assert_eq!(back, d);
}

#[test]
fn json_errors_name_member_and_path() {
    let text = r#"{"var": [{"var_id": 0, "name": "w", "type": "input", "size": "big"}]}"#;
    let e = parse_json::<DefJson>("sg00/def.json", text.as_bytes()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("sg00/def.json") && msg.contains("var[0].size"),
        "{msg}"
    );
    let e = parse_json::<DefJson>("m", b"{").unwrap_err();
    assert!(matches!(e, NeffError::Json { .. }));
    let e =
        parse_json::<DefJson>("m", br#"{"var": [{"name": "x", "type": "input"}]}"#).unwrap_err();
    assert!(e.to_string().contains("var_id"), "{e}");
}

#[test]
fn def_validation() {
    def().validate("d").unwrap();
    let mut d = def();
    d.var[1].var_id = 0;
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("var[1].var_id"));
    let mut d = def();
    d.var[0].size = Some(63);
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("var[0].size"));
    let mut d = def();
    d.var[0].size = None;
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("needs a size"));
    let mut d = def();
    d.var.push(Variable::new(5, "c", VarKind::File));
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("file_name"));
    let mut d = def();
    d.var[0].name = "b".into();
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("duplicate variable"));
    let mut d = def();
    d.dma_queue.push(DmaQueue::new("data"));
    assert!(d
        .validate("d")
        .unwrap_err()
        .to_string()
        .contains("duplicate queue"));
}

fn block(e: DmaEntry) -> Vec<DmaBlock> {
    vec![DmaBlock {
        queue: Some("data".into()),
        instance_name: None,
        id: None,
        desc: vec![e],
        extra: Map::new(),
    }]
}

#[test]
fn dma_entry_validation() {
    let d = def();
    let ok = DmaEntry::copy(VarRef::Name("a".into()), VarRef::Id(1), vec![4, 8]);
    validate_blocks("PE.json", "dma", &block(ok.clone()), &d).unwrap();
    let check = |e: DmaEntry, needle: &str| {
        let err = validate_blocks("PE.json", "dma", &block(e), &d)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err} lacks {needle}");
    };
    let mut e = ok.clone();
    e.to = VarRef::Name("nope".into());
    check(e, "dma[0].desc[0].to");
    let mut e = ok.clone();
    e.from_offset = 2;
    check(e, "reaches byte 66");
    let mut e = ok.clone();
    e.to_sizes = vec![4, 4];
    check(e, "source moves 32 elements, destination 16");
    let mut e = ok.clone();
    e.from_sizes = vec![1, 1, 1, 1, 1, 1, 1, 1, 32];
    e.to_sizes = vec![32];
    check(e, "at most 8");
    let mut e = ok.clone();
    e.from_steps = Some(vec![1]);
    check(e, "1 steps for 2 sizes");
    let mut e = ok.clone();
    e.op = Some(DmaOp::from("scatter"));
    check(e, "unknown operation");
    let mut e = ok.clone();
    e.sem_op = Some(SemOp::Add);
    check(e, "without sem");
    let mut e = ok.clone();
    e.sem = Some(1);
    e.sem_op = Some(SemOp::Write);
    check(e, "need a sem_value");
    let mut e = ok.clone();
    e.from = None;
    check(e, "no source");
    // Strided source inside bounds: 4 rows of 4 from a 4x8 bf16 tensor, step 8.
    let mut e = ok.clone();
    e.from_sizes = vec![4, 4];
    e.from_steps = Some(vec![8, 1]);
    e.to_sizes = vec![16];
    validate_blocks("PE.json", "dma", &block(e), &d).unwrap();
    let mut bad_queue = block(ok);
    bad_queue[0].queue = Some("other".into());
    assert!(validate_blocks("PE.json", "dma", &bad_queue, &d).is_err());
}

#[test]
fn steps() {
    assert_eq!(contiguous_steps(&[2, 3, 4]), vec![12, 4, 1]);
    assert_eq!(pattern_span(0, &[2, 3], &[3, 1], 2), Some((0, 12)));
    assert_eq!(pattern_span(8, &[2, 3], &[-3, 1], 2), Some((2, 14)));
    assert_eq!(pattern_span(0, &[u64::MAX, 2], &[i64::MAX, 1], 2), None);
}

/// The `DefError` a `def.json` breaks, with its path.
fn def_error(d: &DefJson) -> (String, DefError) {
    match d.validate("d").unwrap_err() {
        NeffError::Def { path, error, .. } => (path, error),
        other => panic!("{other}"),
    }
}

/// `def()` with a queue set of `num_queues` and `semaphores`.
fn with_queue_set(num_queues: Option<u64>, semaphores: std::ops::Range<u32>) -> DefJson {
    let mut d = def();
    let mut q = DmaQueue::new("qPoolDynamic");
    q.owner = Some("pool".into());
    q.role_type = Some("dynamic".into());
    q.num_queues = num_queues;
    q.semaphore_set = Some(semaphores.collect());
    d.dma_queue.push(q);
    d
}

#[test]
fn queue_sets() {
    with_queue_set(Some(16), 24..40).validate("d").unwrap();
    with_queue_set(Some(1), 255..256).validate("d").unwrap();
    // Without num_queues the set's length is not checked (the NEFF-doc default is 1).
    with_queue_set(None, 24..26).validate("d").unwrap();
    for n in [0, 17] {
        assert_eq!(
            def_error(&with_queue_set(Some(n), 24..40)),
            ("dma_queue[1].num_queues".into(), DefError::NumQueues(n))
        );
    }
    assert_eq!(
        def_error(&with_queue_set(Some(16), 24..39)),
        (
            "dma_queue[1].semaphore_set".into(),
            DefError::SemaphoreSetLength {
                set: 15,
                num_queues: 16
            }
        )
    );
    assert_eq!(
        def_error(&with_queue_set(Some(2), 255..257)),
        (
            "dma_queue[1].semaphore_set[1]".into(),
            DefError::SemaphoreRange(256)
        )
    );
    let mut d = def();
    d.dma_queue[0].semaphore = Some(256);
    assert_eq!(
        def_error(&d),
        (
            "dma_queue[0].semaphore".into(),
            DefError::SemaphoreRange(256)
        )
    );
    d.dma_queue[0].semaphore = Some(255);
    d.validate("d").unwrap();
}

#[test]
fn dge_tables_and_virtual_variables() {
    let table = |list: Vec<u64>| {
        let mut d = def();
        let mut t = Variable::new(5, "DGETable0", VarKind::DgeTable);
        t.list = Some(list);
        d.var.push(t);
        d
    };
    table(vec![0, 1, 0]).validate("d").unwrap();
    table(vec![]).validate("d").unwrap();
    assert_eq!(
        def_error(&table(vec![1, 7])),
        (
            "var[2].list[1]".into(),
            DefError::DgeTableEntry {
                entry: 1,
                var_id: 7
            }
        )
    );
    // `list` on an input.
    let mut d = def();
    d.var[0].list = Some(vec![1]);
    assert!(matches!(
        def_error(&d),
        (p, DefError::KeyOnKind { key: "list", .. }) if p == "var[0].list"
    ));
    let spill = |size: Option<u64>, off: Option<u64>| {
        let mut d = def();
        let mut v = Variable::new(5, "spill", VarKind::Virtual);
        v.size = size;
        v.backing_variable_off = off;
        d.var.push(v);
        d
    };
    spill(Some(524288), Some(7864320)).validate("d").unwrap();
    spill(Some(1), Some(u64::MAX - 1)).validate("d").unwrap();
    assert_eq!(
        def_error(&spill(None, Some(0))),
        ("var[2].size".into(), DefError::VirtualWithout("size"))
    );
    assert_eq!(
        def_error(&spill(Some(8), None)),
        (
            "var[2].backing_variable_off".into(),
            DefError::VirtualWithout("backing_variable_off")
        )
    );
    assert_eq!(
        def_error(&spill(Some(2), Some(u64::MAX - 1))),
        (
            "var[2].backing_variable_off".into(),
            DefError::VirtualOverflow {
                off: u64::MAX - 1,
                size: 2
            }
        )
    );
    // Backing keys on a variable that is not virtual.
    let mut d = def();
    d.var[1].backing_variable_off = Some(0);
    assert!(matches!(
        def_error(&d),
        (
            _,
            DefError::KeyOnKind {
                key: "backing_variable_off",
                applies_to: "virtual",
                ..
            }
        )
    ));
    let mut d = def();
    d.var[1].backing_buf = Some(BackingBuf::Name("local".into()));
    assert!(matches!(
        def_error(&d),
        (
            _,
            DefError::KeyOnKind {
                key: "backing_buf",
                ..
            }
        )
    ));
}

#[test]
fn typed_keys_of_the_compilers_def_json() {
    let text = r#"{
        "var": {
            "t": {"type": "dge-table", "var_id": 2, "list": [0, 1]},
            "x": {"type": "input", "var_id": 0, "size": 4},
            "v": {"type": "virtual", "var_id": 1, "size": 4, "backing_variable_off": 8, "backing_buf": 1, "ops": []}
        },
        "dma_queue": {"q": {"owner": "pool", "type": "dynamic", "num_queues": 2,
            "semaphore_set": [3, 4], "fabric_path": "main",
            "dynamic_dma": {"SB_scratch_partition_offset": 0, "SB_scratch_partition_size": 16384, "more": 1}}},
        "fp8_conversion_config": {"emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15, "fp8_range_extension": 1,
            "fp8_sis": false, "fp8_sns": false, "ocp_sat": true},
        "neff_features": ["neff_feature_vnc"],
        "runtime_semaphore_count": 3, "runtime_event_count": 12
    }"#;
    let d: DefJson = parse_json("sg00/def.json", text.as_bytes()).unwrap();
    d.validate("sg00/def.json").unwrap();
    let v = d.variable("v").unwrap();
    assert_eq!(
        (v.backing_variable_off, v.backing_buf.clone()),
        (Some(8), Some(BackingBuf::Code(1)))
    );
    assert_eq!(v.extra.keys().collect::<Vec<_>>(), ["ops"]);
    assert_eq!(d.variable("t").unwrap().list.as_deref(), Some(&[0, 1][..]));
    let q = d.queue("q").unwrap();
    assert_eq!((q.num_queues, q.queue_count()), (Some(2), 2));
    let dd = q.dynamic_dma.as_ref().unwrap();
    assert_eq!(
        (dd.sb_scratch_partition_offset, dd.sb_scratch_partition_size),
        (Some(0), Some(16384))
    );
    assert!(dd.extra.contains_key("more"));
    assert_eq!(q.fabric_path.as_deref(), Some("main"));
    let fp8 = d.fp8_conversion_config.as_ref().unwrap();
    assert_eq!(fp8.fp8_range_extension, Some(true), "1 reads as true");
    assert!(d.vnc_feature());
    assert_eq!(
        (d.runtime_semaphore_count, d.runtime_event_count),
        (Some(3), Some(12))
    );
    assert!(d.extra.is_empty(), "{:?}", d.extra);
    // Written back, the typed keys keep their names.
    let back = serde_json::to_value(&d).unwrap();
    assert_eq!(
        back["dma_queue"][0]["dynamic_dma"]["SB_scratch_partition_size"],
        16384
    );
    assert_eq!(back["fp8_conversion_config"]["emax_fp8_e4m3"], 8);
    let again: DefJson = serde_json::from_value(back).unwrap();
    assert_eq!(again.var, d.var);
    // A range-extension flag that is neither a bool nor 0/1 is an error with its path.
    let bad = r#"{"var": [], "fp8_conversion_config": {"fp8_range_extension": 2}}"#;
    let e = parse_json::<DefJson>("d", bad.as_bytes()).unwrap_err();
    assert!(
        e.to_string()
            .contains("fp8_conversion_config.fp8_range_extension"),
        "{e}"
    );
}

#[test]
fn dve_table_sets_and_act_semaphores() {
    let set = DveTableSet {
        opcode_table: Some("default_opcode_table.bin".into()),
        control_table: Some("default_control_table.bin".into()),
        ..Default::default()
    };
    assert!(set.is_default());
    assert_eq!(set.tables().len(), 2);
    let custom = DveTableSet {
        datapath_table: Some("saturate_datapath_table.bin".into()),
        ..set.clone()
    };
    assert!(!custom.is_default());
    let s = Sidecar {
        dve_tables: Some(vec![set, custom]),
        ..Default::default()
    };
    assert!(!s.dve_tables_default());
    assert!(Sidecar::default().dve_tables_default());
    let d = def();
    let act = |sem: u32| Sidecar {
        act_semaphore: Some(sem),
        ..Default::default()
    };
    validate_sidecar("Activation.json", &act(255), &d).unwrap();
    match validate_sidecar("Activation.json", &act(256), &d).unwrap_err() {
        NeffError::Def { path, error, .. } => {
            assert_eq!(
                (path.as_str(), error),
                ("act_semaphore", DefError::SemaphoreRange(256))
            )
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_key_given_twice_in_any_object_is_refused_at_its_path() {
    let text = br#"{"var": {"x": {"type": "input", "var_id": 1, "size": 4},
                            "x": {"type": "tmp-buf", "var_id": 1, "size": 4}}}"#;
    let e = parse_json::<DefJson>("sg00/def.json", text)
        .unwrap_err()
        .to_string();
    assert!(e.contains("duplicate key `x` in one object"), "{e}");
    assert!(e.contains("var"), "{e}");
    let e = parse_json::<serde_json::Value>("kelf-a.json", br#"{"a": [{"t": 1, "t": 2}]}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("duplicate key `t`"), "{e}");
    // The same key in sibling objects is no repeat.
    let v: serde_json::Value = parse_json(
        "kelf-a.json",
        br#"{"a": {"t": 1}, "b": {"t": 2}, "c": [{"t": 3}]}"#,
    )
    .unwrap();
    assert_eq!(v["b"]["t"], 2);
}

#[test]
fn a_keyed_entry_whose_name_is_not_its_key_is_refused() {
    // A `name` equal to the key is the same entry said twice; another is a contradiction.
    let same = r#"{"var": {"x": {"name": "x", "type": "input", "var_id": 0, "size": 4}}}"#;
    let d: DefJson = parse_json("sg00/def.json", same.as_bytes()).unwrap();
    assert_eq!(d.var[0].name, "x");
    for (text, entry) in [
        (
            r#"{"var": {"x": {"name": "y", "type": "input", "var_id": 0, "size": 4}}}"#,
            "x",
        ),
        (r#"{"dma_queue": {"q": {"name": "p", "owner": "sp"}}}"#, "q"),
    ] {
        let e = parse_json::<DefJson>("sg00/def.json", text.as_bytes()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&format!("{entry}: `name` is `")), "{msg}");
        assert!(msg.contains("not its key"), "{msg}");
    }
}

#[test]
fn a_file_variable_names_a_safe_relative_member() {
    let with_file = |f: &str| {
        let mut d = def();
        let mut v = Variable::new(5, "c", VarKind::File);
        v.size = Some(4);
        v.file_name = Some(f.into());
        d.var.push(v);
        d.validate("d")
    };
    with_file("weights/c.bin").unwrap();
    for bad in ["../c.bin", "/abs/c.bin", "a/../../c.bin"] {
        let e = with_file(bad).unwrap_err().to_string();
        assert!(e.contains("var[2].file_name"), "{bad}: {e}");
        assert!(e.contains("is not a safe relative path"), "{bad}: {e}");
    }
}
