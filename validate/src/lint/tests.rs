use super::*;
use tpbsim_isa::text::parse_text;
use tpbsim_neff::Neff;

fn stream(text: &str) -> Vec<Bundle> {
    parse_text(text, Gen::V3).unwrap_or_else(|(l, e)| panic!("line {l}: {e}"))
}

fn codes(text: &str) -> Vec<(u32, Severity)> {
    let b = stream(text);
    let s = [LintStream {
        file: "t.s".into(),
        engine: Some(Engine::Act),
        bundles: &b,
    }];
    lint(&s, Gen::V3, None)
        .iter()
        .map(|d| (d.code.unwrap_or(0), d.severity))
        .collect()
}

const ACT: &str = "ACTIVATE src=[0x0 step=1,1,1 num=8,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=4 activation_func=EXP dst=[0x100 step=1,1,1 num=8,1,1] bias_src_n=INSTRUCTION";

#[test]
fn act_scale_zero_trap_and_fix() {
    assert_eq!(codes(ACT), vec![(9001, Severity::Warning)]);
    assert_eq!(codes(&format!("{ACT} scale_value=1.0")), vec![]);
    // A pointer scale is not an instruction scale of zero.
    assert!(!codes(&format!("{ACT} scale_src=POINTER")).contains(&(9001, Severity::Warning)));
}

#[test]
fn wait_degenerate_trap_and_fix() {
    // `wait >= 1` and `write 0` share one value: the wait reads `>= 0`.
    let trap = "NOP wait_mode=SEM_GE_IMM wait_idx=3 update_mode=SEM_WR_IMM_COMPLETE update_idx=3";
    let c = codes(trap);
    assert!(c.contains(&(9003, Severity::Warning)), "{c:?}");
    let b = stream(trap);
    let d = lint(
        &[LintStream {
            file: "t.s".into(),
            engine: None,
            bundles: &b,
        }],
        Gen::V3,
        None,
    );
    assert!(d[0].message.contains("always true"), "{}", d[0].message);
    assert!(d[0].message.contains("writes 0"), "{}", d[0].message);
    assert!(d[0].message.contains("fix: split"), "{}", d[0].message);
    let fix = "NOP wait_mode=SEM_GE_IMM wait_idx=3 semaphore_value=1\nNOP update_mode=SEM_WR_IMM_COMPLETE update_idx=3";
    assert!(!codes(fix).contains(&(9003, Severity::Warning)));
    assert!(codes("NOP wait_mode=SEM_LT wait_idx=3").contains(&(9003, Severity::Warning)));
}

fn kernel(act: &str, dve: &str, sp: &str) -> Vec<Diagnostic> {
    let dir = tempfile::tempdir().unwrap();
    let sg = dir.path().join("sg00");
    std::fs::create_dir_all(&sg).unwrap();
    std::fs::write(dir.path().join("neff.json"), r#"{"target_arch":"cayman"}"#).unwrap();
    std::fs::write(
        sg.join("def.json"),
        r#"{"var":[{"var_id":1,"name":"state_buffer","type":"state-buffer"},
                  {"var_id":2,"name":"x","type":"input","size":32,"dtype":"float32","shape":[1,8]}],
            "dma_queue":[{"name":"in"}]}"#,
    )
    .unwrap();
    std::fs::write(
        sg.join("SP.json"),
        r#"{"dma":[{"queue":"in","id":0,"desc":[{"from":"x","to":"state_buffer","from_sizes":[1,8],"to_sizes":[1,8],"to_offset":512,"sem":1}]}]}"#,
    )
    .unwrap();
    for (name, text) in [("Activation.bin", act), ("DVE.bin", dve), ("SP.bin", sp)] {
        let bytes: Vec<u8> = stream(text).iter().flat_map(|b| b.0).collect();
        std::fs::write(sg.join(name), bytes).unwrap();
    }
    let n = Neff::from_dir(dir.path(), "k", &Default::default()).unwrap();
    let sg = n.subgraph("sg00").unwrap();
    let streams: Vec<LintStream<'_>> = sg
        .streams
        .iter()
        .map(|(e, s)| LintStream {
            file: s.member.clone(),
            engine: Some(*e),
            bundles: s.stream.bundles(),
        })
        .collect();
    lint(&streams, Gen::V3, Some(&sg))
}

fn kcodes(d: &[Diagnostic]) -> Vec<u32> {
    d.iter().filter_map(|d| d.code).collect()
}

#[test]
fn pointer_unwritten_trap_and_fix() {
    let act = "ACTIVATE src=[0x0 step=1,1,1 num=8,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=1 activation_func=EXP scale_value=1.0 dst=[0x100 step=1,1,1 num=8,1,1]";
    // Trap: the default bias_src_n is POINTER at address 0, which nothing writes.
    let d = kernel(act, "", "");
    assert_eq!(kcodes(&d), vec![9002], "{d:?}");
    assert!(
        d[0].message.contains("bias_src_n=INSTRUCTION"),
        "{}",
        d[0].message
    );
    // Fix 1: an immediate bias.
    assert_eq!(
        kcodes(&kernel(&format!("{act} bias_src_n=INSTRUCTION"), "", "")),
        Vec::<u32>::new()
    );
    // Fix 2: a column another engine writes (DVE dst), or a DMA writes (SP.json: 512..544).
    let dve = "TENSOR_SCALAR_ARITH_OP src=[0x0 step=1,1,1 num=1,1,1] in_dtype=FP32 out_dtype=FP32 num_active_partitions=1 dst=[0x40 step=1,1,1 num=1,1,1]";
    assert_eq!(
        kcodes(&kernel(&format!("{act} bias=0x40"), dve, "")),
        Vec::<u32>::new()
    );
    assert_eq!(
        kcodes(&kernel(&format!("{act} bias=0x44"), dve, "")),
        vec![9002]
    );
    assert_eq!(
        kcodes(&kernel(&format!("{act} bias=0x204"), "", "")),
        Vec::<u32>::new()
    );
    // Stream scope: a note naming the scope for the trap, nothing for the fix.
    let c = codes(act);
    assert!(c.contains(&(9002, Severity::Note)), "{c:?}");
    let b = stream(act);
    let d = lint(
        &[LintStream {
            file: "t.s".into(),
            engine: Some(Engine::Act),
            bundles: &b,
        }],
        Gen::V3,
        None,
    );
    assert!(d[0].message.contains("stream scope"), "{}", d[0].message);
    assert!(
        d[0].message.contains("bias_src_n=INSTRUCTION"),
        "{}",
        d[0].message
    );
    assert!(!codes(&format!("{act} bias_src_n=INSTRUCTION"))
        .iter()
        .any(|c| c.0 == 9002));
    // The stream's own write of the column is seen.
    let own = format!("TENSOR_SCALAR_ARITH_OP src=[0x0 step=1,1,1 num=1,1,1] in_dtype=FP32 out_dtype=FP32 num_active_partitions=1 dst=[0x40 step=1,1,1 num=1,1,1]\n{act} bias=0x40");
    assert!(
        !codes(&own).iter().any(|c| c.0 == 9002),
        "{:?}",
        codes(&own)
    );
}

#[test]
fn update_unwaited_trap_and_fix() {
    let act = "ACTIVATE src=[0x0 step=1,1,1 num=8,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=1 activation_func=EXP scale_value=1.0 bias_src_n=INSTRUCTION dst=[0x100 step=1,1,1 num=8,1,1] update_mode=SEM_INC_COMPLETE update_idx=2";
    let d = kernel(act, "", "");
    assert_eq!(kcodes(&d), vec![9004], "{d:?}");
    let sp =
        "PSEUDO_DMATRIGGER wait_mode=SEM_GE_IMM wait_idx=2 semaphore_value=1 queue_name=\"in\"";
    assert_eq!(kcodes(&kernel(act, "", sp)), Vec::<u32>::new());
    // Stream scope: a note once per semaphore; a wait in the stream(s) given is the fix.
    let twice = format!("{act}\n{act}");
    let c = codes(&twice);
    assert_eq!(
        c.iter().filter(|c| c.0 == 9004).collect::<Vec<_>>(),
        vec![&(9004, Severity::Note)],
        "{c:?}"
    );
    let fixed = format!("{act}\nNOP wait_mode=SEM_GE_REG wait_idx=2 semaphore_value=1");
    assert!(!codes(&fixed).iter().any(|c| c.0 == 9004));
}

#[test]
fn registry_lists_every_rule_with_a_unique_code() {
    let r = crate::registry::lint_rules();
    assert_eq!(r.len(), 4);
    let mut c: Vec<u32> = r.iter().map(|r| r.code).collect();
    c.dedup();
    assert_eq!(c, vec![9001, 9002, 9003, 9004]);
}

#[test]
fn docs_asm_md_lists_every_rule_with_its_code_and_fix() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/asm.md");
    let doc = std::fs::read_to_string(path).unwrap();
    for r in RULES {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` | {} |", r.name, r.code)))
            .unwrap_or_else(|| panic!("docs/asm.md has no row for {}", r.name));
        let scope = if r.kernel { "kernel" } else { "stream" };
        assert!(row.contains(&format!("| {scope} |")), "{row}");
        // The fix as written in the row (backquotes aside) is the one the finding names.
        assert!(row.replace('`', "").contains(r.fix), "{row} / {}", r.fix);
    }
}
