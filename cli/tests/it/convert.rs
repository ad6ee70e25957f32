//! `sim convert` end to end: standard input, exit codes, `--value`.

use std::io::Write;
use std::process::{Command, Stdio};

fn sim(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sim");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn converts_stdin_codes() {
    let (code, out, _) = sim(
        &["convert", "--from", "float32", "--to", "float8_e4m3fn"],
        "0x3fd9999a\n\n0x7f800000\n",
    );
    assert_eq!((code, out.as_str()), (0, "0x3e\n0x7e\n"));
    let (code, out, _) = sim(
        &[
            "convert",
            "--from",
            "float32",
            "--to",
            "float8_e4m3fn",
            "--no-saturate",
        ],
        "0x7f800000\nff800000\n",
    );
    assert_eq!((code, out.as_str()), (0, "0x7f\n0x7f\n"));
    let (code, out, _) = sim(
        &[
            "convert",
            "--from",
            "bfloat16",
            "--to",
            "int8",
            "--float-to-int",
            "rne",
        ],
        "0x4020\n",
    );
    assert_eq!((code, out.as_str()), (0, "0x02\n"), "2.5 ties to even");
    let (_, out, _) = sim(
        &["convert", "--from", "bfloat16", "--to", "int8"],
        "0x4060\n",
    );
    assert_eq!(out, "0x03\n", "3.5 truncates on the device path");
}

#[test]
fn bad_input_is_exit_2_naming_the_line_with_no_output() {
    let (code, out, err) = sim(
        &["convert", "--from", "float32", "--to", "bfloat16"],
        "0x3f800000\nnot-hex\n",
    );
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(err.contains("line 2"), "{err}");
    let (code, _, err) = sim(&["convert", "--from", "float9", "--to", "bfloat16"], "");
    assert_eq!(code, 2);
    assert!(
        err.contains("float8_e4m3fn"),
        "lists the known names: {err}"
    );
}

#[test]
fn converts_one_value() {
    let (code, out, _) = sim(
        &[
            "convert",
            "--from",
            "float32",
            "--to",
            "float8_e4m3fn",
            "--value",
            "1.7",
        ],
        "",
    );
    assert_eq!((code, out.as_str()), (0, "0x3e 1.75\n"));
    let (_, out, _) = sim(
        &[
            "convert", "--from", "float32", "--to", "float16", "--value", "-65520",
        ],
        "",
    );
    assert_eq!(out, "0xfc00 -inf\n");
}
