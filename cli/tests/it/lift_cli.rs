//! `sim lift` and `sim verify` on engine streams and NEFFs, end to end.

use std::path::{Path, PathBuf};

use crate::common::{sim, text};
use tpbsim_isa::{
    Addr4, AluOp, Bundle, Dtype, DtypePair, Header, Memset, NumFormat, Opcode, Tensor,
    TensorScalar, TensorTensor,
};
use tpbsim_validate::bir::{self, InstClass};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn sb(p: u32, off: u32) -> Addr4 {
    Addr4::imm((p << 18) | off)
}

fn tt(start: u32, parts: u8) -> Bundle {
    let t = TensorTensor {
        header: Header::new(Opcode(0x41)),
        in_dtypes: DtypePair::new(Dtype::BF16, Dtype::BF16),
        out_dtype: Dtype::BF16,
        op: AluOp::ADD,
        num_active_partitions: parts,
        src0: Tensor::new(sb(start, 0), [1, 1, 1], [64, 1, 1]),
        src1: Tensor::new(sb(start, 0x100), [1, 1, 1], [64, 1, 1]),
        dst: Tensor::new(sb(start, 0x200), [1, 1, 1], [64, 1, 1]),
        ..Default::default()
    };
    t.to_bundle()
}

/// A DVE stream for v3: a clean add; a memset over partitions 96..160 (an L1 partition-access
/// error, which the L2 Memset gate also rejects through its active-channel window); a plain
/// TensorScalar with an accumulate command (an L2 error, legal BIR); an add over partitions
/// 96..160 (both layers on one bundle).
fn dve_stream(dir: &Path) -> PathBuf {
    let m = Memset {
        dtype: Dtype::FP32,
        num_active_channels: 64,
        count: 16,
        dst: Tensor::new(sb(96, 0), [1, 1, 1, 1], [16, 1, 1, 1]),
        ..Default::default()
    };
    let t = TensorScalar {
        header: Header::new(Opcode(0x43)),
        accumulator_cmd: tpbsim_isa::AccumCmd(2),
        src: Tensor::new(sb(0, 0), [1, 1, 1], [64, 1, 1]),
        in_dtype: Dtype::BF16,
        out_dtype: Dtype::BF16,
        num_active_partitions: 32,
        op0: AluOp::MULT,
        dst: Tensor::new(sb(0, 0x400), [1, 1, 1], [64, 1, 1]),
        ..Default::default()
    };
    let bundles = [tt(0, 32), m.to_bundle(), t.to_bundle(), tt(96, 64)];
    let path = dir.join("DVE.bin");
    std::fs::write(&path, bundles.iter().flat_map(|b| b.0).collect::<Vec<u8>>())
        .expect("write stream");
    path
}

#[test]
fn lift_writes_bir_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = dve_stream(dir.path());
    let out = dir.path().join("out.bir.json");
    let o = sim(&["lift", s(&stream), "--arch", "v3", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = bir::from_json_str(&std::fs::read_to_string(&out).expect("output")).expect("BIR JSON");
    assert_eq!(m.arch, bir::ArchLevel::Gen3);
    assert_eq!(m.functions.len(), 1);
    assert_eq!(m.functions[0].name, "dve");
    let insts = &m.functions[0].blocks[0].instructions;
    let classes: Vec<InstClass> = insts.iter().map(|i| i.class).collect();
    assert_eq!(
        classes,
        [
            InstClass::TensorTensor,
            InstClass::Memset,
            InstClass::TensorScalar,
            InstClass::TensorTensor
        ]
    );
    assert_eq!(insts[0].args[0].dtype, NumFormat::Bfloat16);
    assert_eq!(insts[3].outs[0].start_partition, 96);
    // Only the output file is left in the directory (written through a temporary and a rename).
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Verifying the lifted module locates its findings at the stream's bundles.
    let o = sim(&["verify", s(&out), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let e = lines
        .iter()
        .find(|v| v["rule"] == "checkLegalPartitionAccess")
        .expect("partition error");
    assert_eq!(
        (
            e["index"].as_u64(),
            e["offset"].as_u64(),
            e["file"].as_str()
        ),
        (Some(1), Some(64), Some(s(&stream)))
    );
    // Without -o the module goes to stdout.
    let o = sim(&["lift", s(&stream), "--arch", "v3"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(bir::from_json_str(&String::from_utf8_lossy(&o.stdout)).is_ok());
}

#[test]
fn lift_usage_and_io_errors_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = dve_stream(dir.path());
    let out = dir.path().join("x.bir.json");
    // .bin needs --arch.
    let o = sim(&["lift", s(&stream), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--arch"));
    // A length that is not a whole number of bundles.
    let bad = dir.path().join("PE.bin");
    std::fs::write(&bad, [0u8; 100]).unwrap();
    let o = sim(&["lift", s(&bad), "--arch", "v3", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a multiple of 64"), "{}", text(&o));
    // Missing file, unknown engine.
    assert_eq!(
        sim(&["lift", s(&dir.path().join("none.bin")), "--arch", "v3"])
            .status
            .code(),
        Some(2)
    );
    let anon = dir.path().join("stream.bin");
    std::fs::write(&anon, [0u8; 64]).unwrap();
    assert_eq!(
        sim(&["lift", s(&anon), "--arch", "v3"]).status.code(),
        Some(2)
    );
    assert!(!out.exists(), "no half-written output");
}

#[test]
fn verify_stream_reports_both_layers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = dve_stream(dir.path());
    let o = sim(&["verify", s(&stream), "--arch", "gen3", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let errors: Vec<&serde_json::Value> =
        lines.iter().filter(|v| v["severity"] == "error").collect();
    // Bundle 1: partition access on both layers (L1 checkLegalPartitionAccess, L2
    // start_addr_active_channels), located at the bundle and at the instruction.
    let at = |i: u64, layer: &str| {
        errors
            .iter()
            .filter(|v| v["index"] == i && v["layer"] == layer)
            .count()
    };
    assert!(at(1, "L1") > 0 && at(1, "L2") > 0, "{errors:?}");
    assert!(errors.iter().any(|v| v["index"] == 1
        && v["layer"] == "L2"
        && v["rule"] == "start_addr_active_channels"));
    let l1 = errors
        .iter()
        .find(|v| v["index"] == 1 && v["layer"] == "L1")
        .unwrap();
    assert_eq!(l1["rule"], "checkLegalPartitionAccess");
    assert_eq!(
        (l1["offset"].as_u64(), l1["engine"].as_str()),
        (Some(64), Some("dve"))
    );
    assert_eq!(
        (
            l1["function"].as_str(),
            l1["block"].as_str(),
            l1["instruction"].as_str()
        ),
        (Some("dve"), Some("bb0"), Some("1:Memset"))
    );
    assert_eq!(l1["file"], s(&stream));
    // Bundle 2: L2 only.
    assert!(at(2, "L2") > 0 && at(2, "L1") == 0, "{errors:?}");
    assert!(errors.iter().any(|v| v["index"] == 2
        && v["rule"]
            .as_str()
            .is_some_and(|r| r.contains("accumulator_cmd"))));
    // Bundle 3: both layers, L2 first; and stream order overall.
    assert!(at(3, "L1") > 0 && at(3, "L2") > 0);
    let order: Vec<(u64, String)> = errors
        .iter()
        .map(|v| {
            (
                v["index"].as_u64().unwrap_or(u64::MAX),
                v["layer"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    assert_eq!(order, sorted, "stream order, L2 before L1 within a bundle");
    // The text report says both verdicts.
    let o = sim(&["verify", s(&stream), "--arch", "v3"]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(t.contains("INVALID for v3"), "{t}");
    assert!(
        t.contains("error [L1 checkLegalPartitionAccess]") && t.contains("error [L2 "),
        "{t}"
    );
    assert!(t.contains("DVE.bin:dve:#1@0x40:dve/bb0/1:Memset"), "{t}");
}

#[test]
fn verify_clean_stream_exits_0_and_bad_arch_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("DVE.bin");
    std::fs::write(&path, tt(0, 32).0).unwrap();
    let o = sim(&["verify", s(&path), "--arch", "v3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains(": valid for v3"), "{}", text(&o));
    // v5 has no L2 validator: said once per stream, not an error.
    let o = sim(&["verify", s(&path), "--arch", "v5", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no L2 wire validator exists for v5"));
    assert_eq!(
        sim(&["verify", s(&path), "--arch", "inferentia"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(sim(&["verify", s(&path)]).status.code(), Some(2));
}

#[test]
fn lift_and_verify_a_neff() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kernel = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/kernel");
    let neff = dir.path().join("k.neff");
    assert_eq!(
        sim(&[
            "neff",
            "pack",
            s(&kernel),
            "-o",
            s(&neff),
            "--name",
            "kern",
            "--keep-layout"
        ])
        .status
        .code(),
        Some(0)
    );
    let out = dir.path().join("k.bir.json");
    let o = sim(&["lift", s(&neff), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = bir::from_json_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // neff.json names cayman; every engine stream of sg00 is a function.
    assert_eq!(m.arch, bir::ArchLevel::Gen3);
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["sg00.pe", "sg00.act"]);
    // The fixture's streams are filler bytes: nothing lifts, everything is reported.
    assert!(text(&o).contains("kept as Generic"));
    let o = sim(&["verify", s(&neff), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"layer\":\"L2\"") && out.contains("\"rule\":\"lift\""),
        "{out}"
    );
    assert!(out.contains("k.neff:sg00/PE.bin"), "{out}");
}
