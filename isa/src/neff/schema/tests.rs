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
