//! `sim asm` / `sim disasm --syntax`, lint in `sim validate`, `sim profile --format
//! neuron-profile-json`, and the `--help` of every subcommand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .output()
        .expect("sim runs")
}

/// `sim asm SRC -o OUT --arch v3`.
fn asm(src: &Path, out: &Path) -> Output {
    let (src, out) = (src.to_str().unwrap(), out.to_str().unwrap());
    sim(&["asm", src, "-o", out, "--arch", "v3"])
}

fn kernel(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/kernels")
        .join(name)
        .display()
        .to_string()
}

fn unpack(neff: &str, dir: &Path) -> PathBuf {
    let d = dir.join("k");
    let o = sim(&["neff", "unpack", neff, "-o", d.to_str().unwrap()]);
    assert!(o.status.success());
    d
}

#[test]
fn every_subcommand_help_shows_two_examples_and_only_its_options() {
    let cmds: &[&[&str]] = &[
        &["info"],
        &["disasm"],
        &["asm"],
        &["decode"],
        &["neff"],
        &["neff", "info"],
        &["neff", "unpack"],
        &["neff", "pack"],
        &["lift"],
        &["verify"],
        &["run"],
        &["check"],
        &["profile"],
        &["validate"],
        &["convert"],
        &["fuzz"],
    ];
    for c in cmds {
        let mut args = c.to_vec();
        args.push("--help");
        let o = sim(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{c:?}");
        let ex = out
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{c:?} --help has no examples:\n{out}"));
        let prefix = format!("  sim {}", c.join(" "));
        let n = ex.lines().filter(|l| l.starts_with(&prefix)).count();
        assert!(n >= 2, "{c:?}: {n} examples:\n{out}");
    }
    let check = String::from_utf8_lossy(&sim(&["check", "--help"]).stdout).into_owned();
    assert!(!check.contains("--check-races"), "{check}");
    assert!(check.contains("--schedules"), "{check}");
    let profile = String::from_utf8_lossy(&sim(&["profile", "--help"]).stdout).into_owned();
    for gone in ["--check-races", "--schedules", "--seed"] {
        assert!(!profile.contains(gone), "{gone}: {profile}");
    }
    assert!(profile.contains("neuron-profile-json"), "{profile}");
}

#[test]
fn disasm_neuron_syntax_assembles_back_to_the_same_stream() {
    let dir = tempfile::tempdir().unwrap();
    let k = unpack(&kernel("softmax.neff"), dir.path());
    for s in ["dve", "act", "sp"] {
        let bin = k.join(format!("sg00/{s}.bin"));
        let o = sim(&[
            "disasm",
            bin.to_str().unwrap(),
            "--arch",
            "v3",
            "--syntax",
            "neuron",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.lines().skip(1).all(|l| l.trim_end().ends_with(';')),
            "{text}"
        );
        let src = dir.path().join(format!("{s}.s"));
        std::fs::write(&src, &text).unwrap();
        let out = dir.path().join(format!("{s}.bin"));
        let o = asm(&src, &out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&bin).unwrap(),
            "{s}"
        );
    }
}

#[test]
fn asm_errors_show_the_line_with_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.s");
    std::fs::write(&src, "NOP\nMATMUL wait_mode=SEM_GE in_dtype=BF16\n").unwrap();
    let out = dir.path().join("x.bin");
    let o = asm(&src, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("x.s:2:18: wait_mode: `SEM_GE` is not a WAIT_MODE value"),
        "{err}"
    );
    assert!(err.contains("SEM_GE_IMM"), "{err}");
    assert!(
        err.contains(" 2 | MATMUL wait_mode=SEM_GE in_dtype=BF16\n   |                  ^"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn validate_lints_a_kernel_and_denies_warnings_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let k = unpack(&kernel("matmul_bf16.neff"), dir.path());
    // The trap: the PSUM copy's ACTIVATE without its scale.
    let act = k.join("sg00/act.bin");
    let o = sim(&["disasm", act.to_str().unwrap(), "--arch", "v3"]);
    let text = String::from_utf8(o.stdout)
        .unwrap()
        .replace(" scale_value=1.0", "");
    let src = dir.path().join("act.s");
    std::fs::write(&src, text).unwrap();
    let o = asm(&src, &act);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("act-scale-zero #9001"));
    let neff = dir.path().join("k.neff");
    assert!(sim(&[
        "neff",
        "pack",
        k.to_str().unwrap(),
        "-o",
        neff.to_str().unwrap()
    ])
    .status
    .success());
    let o = sim(&["validate", neff.to_str().unwrap(), "--arch", "v3"]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning [Lint act-scale-zero #9001]"), "{err}");
    assert!(err.contains("fix: write scale_value=1.0"), "{err}");
    let o = sim(&[
        "validate",
        neff.to_str().unwrap(),
        "--arch",
        "v3",
        "--deny-warnings",
    ]);
    assert_eq!(o.status.code(), Some(1));
    // The untouched kernel is clean under every rule.
    let o = sim(&[
        "validate",
        &kernel("matmul_bf16.neff"),
        "--arch",
        "v3",
        "--deny-warnings",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("Lint"));
}

#[test]
fn profile_writes_the_neuron_profile_json_shape() {
    let o = sim(&[
        "profile",
        &kernel("softmax.neff"),
        "--format",
        "neuron-profile-json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let s = &v["summary"][0];
    let total = s["total_time"].as_f64().unwrap();
    assert!(total > 0.0);
    let inst = v["instruction"].as_array().unwrap();
    // softmax: SP 2, ACT 2, DVE 3 bundles.
    assert_eq!(inst.len(), 7);
    assert_eq!(
        s["event_count"],
        inst.len() + v["dma"].as_array().unwrap().len()
    );
    for i in inst {
        let end = i["timestamp"].as_f64().unwrap() + i["duration"].as_f64().unwrap();
        assert!(end <= total * 1e9 + 1e-6, "{i}");
        assert!(
            ["sp", "act", "dve"].contains(&i["label"].as_str().unwrap()),
            "{i}"
        );
    }
    let act = inst.iter().find(|i| i["opcode"] == "ACTIVATE").unwrap();
    let ops = act["operands"].as_str().unwrap();
    assert!(ops.starts_with("$S[3]>=1 "), "{ops}");
    assert!(ops.contains("activation_func=EXP"), "{ops}");
}

#[test]
fn one_bad_field_is_reported_once_per_rule() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("act.s");
    std::fs::write(
        &src,
        "ACTIVATE bias_src_n=INSTRUCTION src=[0x0 step=1,1,1 num=8,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=200 activation_func=EXP scale_value=1.0 dst=[0x100 step=1,1,1 num=8,1,1]\n",
    )
    .unwrap();
    let bin = dir.path().join("Activation.bin");
    assert!(asm(&src, &bin).status.success());
    let o = sim(&["validate", bin.to_str().unwrap(), "--arch", "v3"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let heads: Vec<&str> = out.lines().filter(|l| l.contains(": error [")).collect();
    assert!(!heads.is_empty(), "{out}");
    let mut uniq = heads.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), heads.len(), "{out}");
}
