//! Malformed inputs of every class through every file-reading subcommand: each ends with a
//! named error and exit code 1 (checked, invalid) or 2 (unusable input), never a panic (101)
//! and never a hang. With `--nocapture` the test prints the table of docs/robustness.md.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tpbsim_isa::{spec, Bundle, Gen};

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
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
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

fn check(rows: &mut Vec<Row>, class: &'static str, args: &[&str], want: &[i32], needle: &str) {
    let (code, out, err) = sim(args);
    assert_ne!(code, 101, "{class}: sim {args:?} panicked: {err}");
    assert!(
        want.contains(&code),
        "{class}: sim {args:?} exited {code}, wanted {want:?}\n{out}\n{err}"
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
    for cmd in ["decode", "disasm", "validate", "lift", "verify"] {
        check(
            &mut rows,
            "empty stream",
            &[cmd, &empty, "--arch", "v3"],
            &[0, 1, 2],
            "",
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
            &[2],
            "64",
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
            &[1, 2],
            "opcode",
        );
        if gen != Gen::V5 {
            check(
                &mut rows,
                "unknown opcode",
                &["validate", &f, "--arch", g],
                &[1],
                "is_valid_enum(OPCODE)",
            );
        }
        if gen == Gen::V5 {
            // No L2 on v5: the spec's v5 opcode set still makes an undefined opcode an error.
            check(
                &mut rows,
                "unknown opcode (v5, no L2)",
                &["verify", &f, "--arch", g],
                &[1],
                "error [L2 decode]: opcode 0x00 is not defined on v5",
            );
        } else {
            check(
                &mut rows,
                "unknown opcode",
                &["verify", &f, "--arch", g],
                &[1],
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
        &[1],
        "reserved_zero",
    );
    check(
        &mut rows,
        "reserved byte set",
        &["verify", &rsv, "--arch", "v3"],
        &[1],
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
        for cmd in ["decode", "disasm", "lift", "verify"] {
            check(
                &mut rows,
                "random bytes",
                &[cmd, &jf, "--arch", g],
                &[0, 1, 2],
                "",
            );
        }
    }
    check(
        &mut rows,
        "random bytes",
        &["validate", &jf, "--arch", "v4"],
        &[1],
        "error",
    );
    check(
        &mut rows,
        "no L2 for v5",
        &["validate", &jf, "--arch", "v5"],
        &[2],
        "v5",
    );
    check(
        &mut rows,
        "unknown engine file name",
        &["validate", &write(d, "x.bin", &lw.0), "--arch", "v3"],
        &[2],
        "engine",
    );
    check(
        &mut rows,
        "missing file",
        &["decode", "/nonexistent/PE.bin", "--arch", "v3"],
        &[2],
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
        &[2],
        "",
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
        ("BIR JSON not UTF-8", &b"\xff\xfe{}"[..], ""),
        ("BIR JSON empty", &b""[..], ""),
    ] {
        let f = write(d, "m.bir.json", text);
        check(&mut rows, class, &["verify", &f], &[2], needle);
    }

    // NEFF containers.
    let neffs = [
        ("NEFF: not a NEFF", vec![0x42u8; 3000], ""),
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
            check(&mut rows, class, cmd, &[2], needle);
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
        &["neff", "info", &bad_hash],
        &[2],
        "mismatch",
    );
    check(
        &mut rows,
        "NEFF: bad hash",
        &["run", &bad_hash],
        &[2],
        "mismatch",
    );
    let good = std::fs::read(&kernel).unwrap();
    let cut = write(d, "cut.neff", &good[..good.len() - 77]);
    check(
        &mut rows,
        "NEFF: truncated payload",
        &["neff", "info", &cut],
        &[2],
        "",
    );
    check(
        &mut rows,
        "NEFF: truncated payload",
        &["run", &cut],
        &[2],
        "",
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
