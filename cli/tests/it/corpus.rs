//! `sim run` of several kernels in one process (docs/mpi.md, "Corpus runs"): each kernel runs
//! as it would alone, its outputs under OUT/<stem>/, its references from REFDIR/<stem>/, one
//! merged report in argument order, the exit code the worst kernel's; options naming one file
//! for one kernel are refused unless they name `{kernel}`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A bundled NEFF of `testdata/`.
pub(crate) fn testdata(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(p)
}

/// `--input NAME=testdata/collectives/{kernel}.in/NAME.npy` for the collective kernels' two
/// inputs (`x` of every one, `w` of the tensor-parallel matmul).
pub(crate) fn collective_inputs() -> Vec<String> {
    ["x", "w"]
        .iter()
        .flat_map(|v| {
            let file = testdata("collectives/{kernel}.in").join(format!("{v}.npy"));
            ["--input".to_string(), format!("{v}={}", file.display())]
        })
        .collect()
}

/// `sim ARGS` in `dir`: exit code, stdout, stderr.
pub(crate) fn sim_in(dir: &Path, args: &[String]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run` followed by the kernels (paths in `testdata/`) and `extra`.
pub(crate) fn run_args(kernels: &[&str], extra: &[String]) -> Vec<String> {
    let mut a = vec!["run".to_string()];
    a.extend(kernels.iter().map(|k| testdata(k).display().to_string()));
    a.extend(extra.iter().cloned());
    a
}

/// A report with its timing left out: the wall time and rate of the text summaries, the
/// `wall_seconds` and `bundles_per_second` of the JSON ones.
pub(crate) fn untimed(report: &str) -> String {
    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(report.trim()) {
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.remove("wall_seconds");
                    m.remove("bundles_per_second");
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut v);
        return v.to_string();
    }
    report
        .lines()
        .map(|l| match l.find(" transfers, ") {
            Some(i) if l.ends_with(" bundles/s") => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The collective kernels, out of name order; only the tensor-parallel matmul has an input
/// `w`, so `--input w=...` is passed over for the others.
pub(crate) const KERNELS: [&str; 4] = [
    "collectives/permute_ring.neff",
    "collectives/tp_matmul_allreduce.neff",
    "collectives/reduce_scatter_all_gather.neff",
    "collectives/all_to_all.neff",
];

#[test]
fn several_kernels_give_one_report_in_argument_order_and_outputs_per_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let mut extra = collective_inputs();
    extra.extend(["--out-dir".to_string(), "all".to_string()]);
    let (code, o, e) = sim_in(dir.path(), &run_args(&KERNELS, &extra));
    assert_eq!(code, 0, "{o}{e}");
    let headers: Vec<&str> = o.lines().filter(|l| l.starts_with("== kernel ")).collect();
    let want: Vec<String> = KERNELS
        .iter()
        .enumerate()
        .map(|(i, k)| format!("== kernel {}/4: {} ==", i + 1, testdata(k).display()))
        .collect();
    assert_eq!(headers, want, "{o}");
    assert!(
        o.ends_with("kernels: 4 run: 4 ok, 0 mismatched or with findings, 0 stopped on an error, 0 faulted\n"),
        "{o}"
    );
    // Each kernel's section is its report alone (outputs of a kernel alone in its own
    // directory, compared with its references beside the NEFF), with OUT/<stem>/ for OUT.
    let sections: Vec<&str> = o.split("== kernel ").skip(1).collect();
    for (k, section) in KERNELS.iter().zip(&sections) {
        let stem = Path::new(k)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let alone_dir = format!("alone/{stem}");
        // Alone, a kernel takes only the inputs it has, named without `{kernel}`.
        let mut alone: Vec<String> = ["x", "w"]
            .iter()
            .map(|v| testdata(&format!("collectives/{stem}.in/{v}.npy")))
            .filter(|f| f.is_file())
            .flat_map(|f| {
                let v = f.file_stem().unwrap().to_string_lossy().into_owned();
                ["--input".to_string(), format!("{v}={}", f.display())]
            })
            .collect();
        alone.extend(["--out-dir".to_string(), alone_dir.clone()]);
        let (code, ao, ae) = sim_in(dir.path(), &run_args(&[k], &alone));
        assert_eq!(code, 0, "{k}: {ao}{ae}");
        let body = section.split_once(" ==\n").unwrap().1;
        let body = body.split("kernels: ").next().unwrap();
        assert_eq!(
            untimed(&body.replace(&format!("all/{stem}"), &alone_dir)),
            untimed(&ao),
            "{k}"
        );
        for r in 0..4 {
            let sub = format!("/rank{r}");
            let names: Vec<PathBuf> =
                std::fs::read_dir(dir.path().join(format!("{alone_dir}{sub}")))
                    .unwrap()
                    .map(|f| f.unwrap().path())
                    .collect();
            assert!(!names.is_empty(), "{k}");
            for f in names {
                let name = f.file_name().unwrap();
                let merged = dir.path().join(format!("all/{stem}{sub}")).join(name);
                assert_eq!(
                    std::fs::read(&f).unwrap(),
                    std::fs::read(&merged).unwrap(),
                    "{k}: {f:?}"
                );
            }
        }
    }
    // The JSON report: one object per kernel, in argument order, each a run's own object.
    extra.push("--json".to_string());
    let (code, o, e) = sim_in(dir.path(), &run_args(&KERNELS, &extra));
    assert_eq!(code, 0, "{o}{e}");
    let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["exit_code"].as_u64()),
        (Some("ok"), Some(0)),
        "{v}"
    );
    for (i, k) in KERNELS.iter().enumerate() {
        let entry = &v["kernels"][i];
        assert_eq!(entry["kernel"], testdata(k).display().to_string(), "{v}");
        assert_eq!(entry["status"], "ok", "{entry}");
        assert_eq!(entry["exit_code"], 0, "{entry}");
    }
    assert_eq!(v["kernels"][1]["ranks"].as_array().map(Vec::len), Some(4));
}

/// A kernel that faults, one that mismatches its reference and one that cannot be read:
/// each is reported in its place, the others still run and write their outputs (a kernel
/// without a directory in REFDIR uncompared), and the run exits with the worst code.
#[test]
fn a_failing_kernel_fails_the_run_while_the_others_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let refs = dir.path().join("refs");
    for k in ["vadd", "softmax"] {
        let d = refs.join(k);
        std::fs::create_dir_all(&d).unwrap();
        for f in std::fs::read_dir(testdata(&format!("kernels/{k}.ref"))).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, d.join(f.file_name().unwrap())).unwrap();
        }
    }
    // softmax's reference off by one in its last element.
    let last = refs.join("softmax/out.npy");
    let mut bytes = std::fs::read(&last).unwrap();
    let at = bytes.len() - 4;
    let v = f32::from_le_bytes(bytes[at..].try_into().unwrap()) + 1.0;
    bytes[at..].copy_from_slice(&v.to_le_bytes());
    std::fs::write(&last, bytes).unwrap();
    let kernels = ["kernels/vadd.neff", "kernels/softmax.neff"];
    let extra = ["--ref-dir", "refs", "--out-dir", "out"].map(String::from);
    let (code, o, e) = sim_in(dir.path(), &run_args(&kernels, &extra));
    assert_eq!(code, 1, "{o}{e}");
    assert!(
        o.contains("MISMATCH") && o.contains("1 ok, 1 mismatched"),
        "{o}"
    );
    // `--ref` with `{kernel}`: each kernel's own file (vadd matches its reference; softmax,
    // without its tolerance.json, does not match exactly).
    let one_ref = ["--ref", "out=refs/{kernel}/out.npy", "--json"].map(String::from);
    let (code, o, e) = sim_in(dir.path(), &run_args(&kernels, &one_ref));
    assert_eq!(code, 1, "{o}{e}");
    let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    assert_eq!(v["kernels"][0]["status"], "ok", "{v}");
    assert_eq!(v["kernels"][1]["status"], "mismatch", "{v}");
    // A fault, a kernel that cannot be read and one without references: exit 3, the other
    // kernels run.
    let kernels = [
        "kernels/vadd.neff",
        "kernels/deadlock_cycle.neff",
        "kernels/missing.neff",
        "kernels/softmax.neff",
        "kernels/rmsnorm.neff",
    ];
    let (code, o, e) = sim_in(dir.path(), &run_args(&kernels, &extra));
    assert_eq!(code, 3, "{o}{e}");
    assert!(o.contains("error: ") && o.contains("deadlock fault"), "{o}");
    assert!(o.contains("missing.neff: "), "{o}");
    assert!(
        o.ends_with("2 ok, 1 mismatched or with findings, 1 stopped on an error, 1 faulted\n"),
        "{o}"
    );
    assert!(
        e.contains("2 of 5 kernels stopped on an error or a fault"),
        "{e}"
    );
    for k in ["vadd", "softmax", "rmsnorm"] {
        assert!(dir.path().join(format!("out/{k}/out.npy")).is_file(), "{k}");
    }
    assert!(
        !dir.path().join("out/missing").exists() && !dir.path().join("out/deadlock_cycle").exists()
    );
    let json: Vec<String> = extra
        .iter()
        .cloned()
        .chain(["--json".to_string()])
        .collect();
    let (code, o, _) = sim_in(dir.path(), &run_args(&kernels, &json));
    assert_eq!(code, 3, "{o}");
    let v: serde_json::Value = serde_json::from_str(o.trim()).unwrap();
    let statuses: Vec<(&str, u64)> = (0..5)
        .map(|i| {
            let k = &v["kernels"][i];
            (
                k["status"].as_str().unwrap(),
                k["exit_code"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("ok", 0),
            ("fault", 3),
            ("error", 2),
            ("mismatch", 1),
            ("ok", 0)
        ],
        "{v}"
    );
    assert_eq!(v["kernels"][1]["fault"]["kind"], "deadlock", "{v}");
    // rmsnorm has no directory in refs/: it ran uncompared.
    assert_eq!(v["kernels"][4]["comparisons"], serde_json::json!([]), "{v}");
    assert_eq!(v["exit_code"], 3, "{v}");
}

/// Options that name one file for one kernel, and two kernels of the same stem, are refused
/// before any kernel runs; with `{kernel}` the file options are each kernel's own.
#[test]
fn options_of_one_kernel_and_clashing_stems_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("vadd.neff");
    std::fs::copy(testdata("kernels/vadd.neff"), &copy).unwrap();
    let two = ["kernels/vadd.neff", "kernels/softmax.neff"];
    let cases: [(Vec<String>, &str); 5] = [
        (
            run_args(&two, &["--input".into(), "x=x.npy".into()]),
            "--input x=x.npy: a run of several kernels needs one file per kernel",
        ),
        (
            run_args(&two, &["--ref".into(), "out=o.npy".into()]),
            "--ref out=o.npy: a run of several kernels",
        ),
        (
            run_args(&two, &["--trace".into(), "t.json".into()]),
            "--trace t.json: a run of several kernels",
        ),
        (
            run_args(&["kernels/vadd.neff"], &[copy.display().to_string()]),
            "two kernels of stem `vadd`",
        ),
        (
            run_args(&two, &["--ref-dir".into(), "nowhere".into()]),
            "--ref-dir nowhere: not a directory",
        ),
    ];
    for (args, want) in cases {
        let (code, o, e) = sim_in(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {o}{e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(o.is_empty(), "{args:?}: {o}");
    }
    assert!(!dir.path().join("vadd.out").exists() && !dir.path().join("softmax.out").exists());
    // `{kernel}` makes a trace per kernel.
    let (code, o, e) = sim_in(
        dir.path(),
        &run_args(&two, &["--trace".into(), "{kernel}.trace.json".into()]),
    );
    assert_eq!(code, 0, "{o}{e}");
    for k in ["vadd", "softmax"] {
        assert!(o.contains(&format!("trace -> {k}.trace.json")), "{o}");
        let t = std::fs::read_to_string(dir.path().join(format!("{k}.trace.json"))).unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&t).is_ok(), "{k}");
        // Without --out-dir each kernel writes where it would alone.
        assert!(dir.path().join(format!("{k}.out/out.npy")).is_file(), "{k}");
    }
}
