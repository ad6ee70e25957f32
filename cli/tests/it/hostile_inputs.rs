//! Malformed inputs of every class through every file-reading subcommand: each ends with its
//! exact exit code and a named error, never a panic (101) and never a hang. With `--nocapture`
//! the first test prints the table of docs/robustness.md.
//!
//! `hostile_corpus` runs every case of `testdata/hostile/*/cases.json` (written by
//! `testdata/hostile/make_cases.py`) under a 4 GiB address-space limit.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tpbsim_isa::{spec, Bundle, Gen};

/// Read a child's pipe to its end on a thread, so a large report never blocks the child.
fn drain(mut r: Box<dyn Read + Send>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    })
}

/// Run `sim` with a deadline; returns (exit code, stdout, stderr). The pipes are drained by
/// threads so a large report never blocks the child.
fn sim(args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("sim {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (
        status.code().unwrap_or(-1),
        out.join().unwrap(),
        err.join().unwrap(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

/// A present-in-no-generation opcode, or one absent in `gen`.
fn absent_opcode(gen: Gen) -> u8 {
    (0..=255u8)
        .find(|&o| !spec::opcode(o).is_some_and(|r| r.is_present(gen)))
        .unwrap()
}

struct Row {
    class: &'static str,
    cmd: String,
    code: i32,
    message: String,
}

fn check(rows: &mut Vec<Row>, class: &'static str, args: &[&str], want: i32, needle: &str) {
    let (code, out, err) = sim(args);
    assert_ne!(code, 101, "{class}: sim {args:?} panicked: {err}");
    assert_eq!(
        code, want,
        "{class}: sim {args:?} exited {code}, wanted {want}\n{out}\n{err}"
    );
    // Every failure names its error; only a success may print nothing (decode of 0 bundles).
    assert!(
        want == 0 || !needle.is_empty(),
        "{class}: a failing row needs a named error"
    );
    let text = format!("{out}{err}");
    assert!(
        text.contains(needle),
        "{class}: sim {args:?}: {needle:?} not in\n{text}"
    );
    let message = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_default()
        .trim()
        .chars()
        .take(140)
        .collect();
    rows.push(Row {
        class,
        cmd: args[0].to_string(),
        code,
        message,
    });
}

#[test]
fn every_malformed_class_gets_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rows = Vec::new();

    // Engine streams.
    let empty = write(d, "PE.bin", &[]);
    for (cmd, needle) in [
        ("decode", ""),
        ("disasm", "0 bundles"),
        ("validate", "0 bundle(s)"),
        ("lift", "0 bundle(s)"),
        ("verify", "valid for v3: 0 bundle(s)"),
    ] {
        check(
            &mut rows,
            "empty stream",
            &[cmd, &empty, "--arch", "v3"],
            0,
            needle,
        );
    }
    let odd_dir = d.join("odd");
    std::fs::create_dir(&odd_dir).unwrap();
    let odd = write(&odd_dir, "PE.bin", &[0x01; 100]);
    for cmd in ["decode", "disasm", "validate", "lift", "verify"] {
        check(
            &mut rows,
            "odd-length stream (100 bytes)",
            &[cmd, &odd, "--arch", "v3"],
            2,
            "100 bytes is not a multiple of 64",
        );
    }
    for gen in [Gen::V2, Gen::V3, Gen::V4, Gen::V5] {
        let mut b = Bundle::ZERO;
        b.0[0] = absent_opcode(gen);
        b.0[1] = 0x10;
        let sub = d.join(format!("op-{gen}"));
        std::fs::create_dir(&sub).unwrap();
        let f = write(&sub, "DVE.bin", &b.0);
        let g = gen.short();
        check(
            &mut rows,
            "unknown opcode",
            &["decode", &f, "--arch", g],
            1,
            "do not decode on",
        );
        if gen != Gen::V5 {
            check(
                &mut rows,
                "unknown opcode",
                &["validate", &f, "--arch", g],
                1,
                "is_valid_enum(OPCODE)",
            );
        }
        if gen == Gen::V5 {
            // No L2 on v5: the spec's v5 opcode set still makes an undefined opcode an error.
            check(
                &mut rows,
                "unknown opcode (v5, no L2)",
                &["verify", &f, "--arch", g],
                1,
                "error [L2 decode]: opcode 0x00 is not defined on v5",
            );
        } else {
            check(
                &mut rows,
                "unknown opcode",
                &["verify", &f, "--arch", g],
                1,
                "is_valid_enum(OPCODE)",
            );
        }
    }
    // A reserved byte set in an otherwise legal v3 LdWeights.
    let mut lw = Bundle::from_hex("01100000000000000000000000000000000100000100010001000100010080000600000000008080000000000f0f000000000000000000000000000000000000").unwrap();
    lw.0[41] = 0x5A;
    let rsv_dir = d.join("rsv");
    std::fs::create_dir(&rsv_dir).unwrap();
    let rsv = write(&rsv_dir, "PE.bin", &lw.0);
    check(
        &mut rows,
        "reserved byte set",
        &["validate", &rsv, "--arch", "v3"],
        1,
        "reserved_zero",
    );
    check(
        &mut rows,
        "reserved byte set",
        &["verify", &rsv, "--arch", "v3"],
        1,
        "reserved_zero",
    );
    // Arbitrary bytes (a fixed xorshift stream), every generation.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let junk: Vec<u8> = (0..64 * 32)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let junk_dir = d.join("junk");
    std::fs::create_dir(&junk_dir).unwrap();
    let jf = write(&junk_dir, "Pool.bin", &junk);
    for g in ["v2", "v3", "v4", "v5"] {
        for (cmd, code, needle) in [
            ("decode", 1, "do not decode on"),
            ("disasm", 1, "do not decode on"),
            ("lift", 0, "not-checked [L1 lift]"),
            ("verify", 1, "INVALID for"),
        ] {
            check(
                &mut rows,
                "random bytes",
                &[cmd, &jf, "--arch", g],
                code,
                needle,
            );
        }
    }
    check(
        &mut rows,
        "random bytes",
        &["validate", &jf, "--arch", "v4"],
        1,
        "error",
    );
    check(
        &mut rows,
        "no L2 for v5",
        &["validate", &jf, "--arch", "v5"],
        2,
        "v5",
    );
    check(
        &mut rows,
        "unknown engine file name",
        &["validate", &write(d, "x.bin", &lw.0), "--arch", "v3"],
        2,
        "engine",
    );
    check(
        &mut rows,
        "missing file",
        &["decode", "/nonexistent/PE.bin", "--arch", "v3"],
        2,
        "nonexistent",
    );

    // Text form.
    let asm_bad = write(d, "bad.s", b"MATMUL src=banana\n\x00\xff garbage\n");
    check(
        &mut rows,
        "malformed assembly text",
        &[
            "asm",
            &asm_bad,
            "--arch",
            "v3",
            "-o",
            &d.join("o.bin").display().to_string(),
        ],
        2,
        "bad.s: stream did not contain valid UTF-8",
    );
    assert!(!d.join("o.bin").exists(), "no half-written output");

    // BIR JSON.
    for (class, text, needle) in [
        ("BIR JSON syntax error", &b"{\"functions\": [ "[..], "line"),
        (
            "BIR JSON missing key",
            &b"{\"functions\": 7}"[..],
            "missing required key",
        ),
        (
            "BIR JSON wrong type",
            &b"{\"arch\": \"gen3\", \"functions\": 7}"[..],
            "functions",
        ),
        (
            "BIR JSON not UTF-8",
            &b"\xff\xfe{}"[..],
            "stream did not contain valid UTF-8",
        ),
        ("BIR JSON empty", &b""[..], "EOF while parsing a value"),
    ] {
        let f = write(d, "m.bir.json", text);
        check(&mut rows, class, &["verify", &f], 2, needle);
    }

    // NEFF containers.
    let neffs = [
        (
            "NEFF: not a NEFF",
            vec![0x42u8; 3000],
            "unsupported NEFF package version",
        ),
        (
            "NEFF: truncated header",
            vec![0u8; 100],
            "truncated NEFF header",
        ),
    ];
    for (class, bytes, needle) in neffs {
        let f = write(d, "k.neff", &bytes);
        for cmd in [
            &["neff", "info", &f][..],
            &["validate", &f, "--arch", "v3"],
            &["lift", &f],
            &["run", &f],
        ] {
            check(&mut rows, class, cmd, 2, needle);
            // Every reader error names the file.
            let (_, _, err) = sim(cmd);
            assert!(err.contains("k.neff"), "{cmd:?}: {err}");
        }
    }
    let kernel = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/kernels/vadd.neff");
    let mut good = std::fs::read(&kernel).unwrap();
    good[0xAC] ^= 0xFF;
    let bad_hash = write(d, "hash.neff", &good);
    check(
        &mut rows,
        "NEFF: bad hash",
        &["neff", "info", &bad_hash, "--verify-hash"],
        2,
        "mismatch",
    );
    check(
        &mut rows,
        "NEFF: bad hash",
        &["run", &bad_hash, "--verify-hash"],
        2,
        "mismatch",
    );
    let good = std::fs::read(&kernel).unwrap();
    let cut = write(d, "cut.neff", &good[..good.len() - 77]);
    check(
        &mut rows,
        "NEFF: truncated payload",
        &["neff", "info", &cut],
        2,
        &format!(
            "data_size {} but {} bytes follow the 1024-byte header",
            good.len() - 1024,
            good.len() - 1024 - 77
        ),
    );
    check(
        &mut rows,
        "NEFF: truncated payload",
        &["run", &cut],
        2,
        &format!(
            "data_size {} but {} bytes follow the 1024-byte header",
            good.len() - 1024,
            good.len() - 1024 - 77
        ),
    );

    // The table.
    println!("| class | command | exit | message |\n|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | `sim {}` | {} | {} |",
            r.class,
            r.cmd,
            r.code,
            r.message.replace('|', "\\|")
        );
    }
}

/// Address-space limit of every corpus run: an allocation the budgets failed to stop aborts
/// (exit 134) instead of succeeding on a large machine.
const ADDRESS_SPACE: u64 = 4 << 30;

/// Wall-clock limit of one corpus case.
const CASE_SECONDS: u64 = 30;

fn expand(s: &str, case: &Path, out: &Path, scratch: &Path) -> String {
    s.replace("{case}", &case.display().to_string())
        .replace("{out}", &out.display().to_string())
        .replace("{scratch}", &scratch.display().to_string())
}

/// Every file and directory under `dir`, relative.
fn listing(dir: &Path) -> std::collections::BTreeSet<String> {
    let mut set = std::collections::BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            set.insert(p.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    set
}

fn setup(op: &serde_json::Value, x: &dyn Fn(&str) -> String) {
    let path = x(op["path"].as_str().unwrap());
    let path = Path::new(&path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    match op["op"].as_str().unwrap() {
        "symlink" => std::os::unix::fs::symlink(x(op["to"].as_str().unwrap()), path).unwrap(),
        "fifo" => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        "sparse" => std::fs::File::create(path)
            .unwrap()
            .set_len(op["size"].as_u64().unwrap())
            .unwrap(),
        "mkdir" => std::fs::create_dir_all(path).unwrap(),
        "file" => std::fs::write(path, b"x").unwrap(),
        // A large text made at test time: "text" repeated "count" times.
        "repeat" => std::fs::write(
            path,
            op["text"]
                .as_str()
                .unwrap()
                .repeat(op["count"].as_u64().unwrap() as usize),
        )
        .unwrap(),
        // A stream assembled from a text of the group (what the assembler itself accepts).
        "asm" => {
            let o = Command::new(env!("CARGO_BIN_EXE_sim"))
                .args(["asm", &x(op["from"].as_str().unwrap()), "--arch"])
                .arg(op["arch"].as_str().unwrap())
                .arg("-o")
                .arg(path)
                .output()
                .unwrap();
            assert!(o.status.success(), "set-up asm: {o:?}");
        }
        other => panic!("unknown set-up op {other}"),
    }
}

/// Run one corpus case; returns what went wrong (empty: the case holds) and the wall time.
fn run_case(group: &Path, c: &serde_json::Value) -> (Vec<String>, Duration) {
    use std::os::unix::process::CommandExt;
    let name = c["name"].as_str().unwrap_or("?");
    let tmp = tempfile::tempdir().unwrap();
    let (out, scratch, cwd) = (
        tmp.path().join("out"),
        tmp.path().join("scratch"),
        tmp.path().join("cwd"),
    );
    for d in [&out, &scratch, &cwd] {
        std::fs::create_dir(d).unwrap();
    }
    let x = |s: &str| expand(s, group, &out, &scratch);
    for op in c["setup"].as_array().into_iter().flatten() {
        setup(op, &x);
    }
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| x(a.as_str().unwrap()))
        .collect();
    let before = listing(group);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
    for (k, v) in c["env"].as_object().into_iter().flatten() {
        cmd.env(k, x(v.as_str().unwrap()));
    }
    cmd.args(&args)
        .current_dir(&cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A regular file given as stdin is fed through a pipe (as `cat f | sim ...`); a device
    // such as /dev/zero is given as it is.
    let piped = match c["stdin"].as_str() {
        Some(f) => {
            let p = group.join(f);
            if p.is_file() {
                cmd.stdin(Stdio::piped());
                Some(std::fs::read(p).unwrap())
            } else {
                cmd.stdin(std::fs::File::open(p).unwrap());
                None
            }
        }
        None => {
            cmd.stdin(Stdio::null());
            None
        }
    };
    // SAFETY: setrlimit is async-signal-safe and touches no state of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    if let (Some(bytes), Some(mut w)) = (piped, child.stdin.take()) {
        std::thread::spawn(move || {
            use std::io::Write;
            // The child may stop reading early: a broken pipe is not an error here.
            let _ = w.write_all(&bytes);
        });
    }
    let so = drain(Box::new(child.stdout.take().unwrap()));
    let se = drain(Box::new(child.stderr.take().unwrap()));
    let mut problems = Vec::new();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(CASE_SECONDS) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let (stdout, stderr) = (so.join().unwrap(), se.join().unwrap());
    let code = match status {
        None => {
            problems.push(format!("did not finish within {CASE_SECONDS} s"));
            -1
        }
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().unwrap_or(128 + s.signal().unwrap_or(0))
        }
    };
    let want = c["exit"].as_i64().unwrap() as i32;
    if code == 101 {
        problems.push("panicked (exit 101)".into());
    }
    if code == 134 {
        problems.push("aborted (exit 134)".into());
    }
    if code != want {
        problems.push(format!("exit {code}, wanted {want}"));
    }
    let needle = x(c["stderr"].as_str().unwrap());
    if !stderr.contains(&needle) {
        problems.push(format!("stderr lacks {needle:?}"));
    }
    // Nothing outside the output and scratch directories, no temporary file anywhere.
    let left = listing(tmp.path());
    for p in &left {
        let top = p.split('/').next().unwrap_or("");
        if !["out", "scratch", "cwd"].contains(&top) || top == "cwd" && p != "cwd" {
            problems.push(format!("file outside the output directory: {p}"));
        }
        let base = p.rsplit('/').next().unwrap_or("");
        if base.starts_with(".tpbsim-") && base.ends_with(".tmp") {
            problems.push(format!("temporary file left: {p}"));
        }
    }
    if listing(group) != before {
        problems.push("the case directory changed".into());
    }
    for p in c["exists"].as_array().into_iter().flatten() {
        let p = x(p.as_str().unwrap());
        if !Path::new(&p).exists() {
            problems.push(format!("{p} was not written"));
        }
    }
    for p in c["absent"].as_array().into_iter().flatten() {
        let p = x(p.as_str().unwrap());
        if std::fs::symlink_metadata(&p).is_ok() {
            problems.push(format!("{p} exists"));
        }
    }
    if !problems.is_empty() {
        problems.insert(
            0,
            format!(
                "{}: {name}: sim {}\n  stdout: {}\n  stderr: {}",
                group.file_name().unwrap().to_string_lossy(),
                args.join(" "),
                stdout.trim(),
                stderr.trim()
            ),
        );
    }
    (problems, took)
}

/// Every case of every `testdata/hostile/*/cases.json` (docs/robustness.md).
#[test]
fn hostile_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/hostile");
    let mut groups: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("cases.json").is_file())
        .collect();
    groups.sort();
    assert!(
        !groups.is_empty(),
        "no case groups under {}",
        root.display()
    );
    let mut failures = Vec::new();
    let mut count = 0;
    for g in &groups {
        let group = g.canonicalize().unwrap();
        let text = std::fs::read_to_string(group.join("cases.json")).unwrap();
        let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        for c in &cases {
            let (problems, took) = run_case(&group, c);
            count += 1;
            println!(
                "{:>6.2} s  {}  {}",
                took.as_secs_f64(),
                if problems.is_empty() { "ok  " } else { "FAIL" },
                c["name"].as_str().unwrap_or("?")
            );
            if !problems.is_empty() {
                failures.push(problems.join("\n  "));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} hostile cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
