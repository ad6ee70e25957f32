//! `sim run` of several kernels (a corpus): each kernel runs as it would alone, with its own
//! world of ranks, and one report covers them all, in argument order (docs/mpi.md, "Corpus
//! runs"). Over MPI (`--mpi`) the kernels are sharded over the processes (`crate::mpi`).
//!
//! Each kernel gets the options of the command line, made its own:
//! - `--out-dir D`: its outputs go to `D/<stem>/` (`D/<stem>/rank{r}/` for a world); without
//!   it, to `<stem>.out/` as when it runs alone;
//! - `--ref-dir R`: its references come from `R/<stem>/`, when it exists (a kernel without
//!   one runs uncompared, as a kernel alone without `<kernel>.ref/`); without `--ref-dir`,
//!   from `<kernel>.ref/` beside the NEFF, when it exists;
//! - `--input NAME=FILE`, `--ref NAME=FILE`, `--trace FILE` name one file for one kernel: with
//!   several, FILE must name `{kernel}`, replaced by each kernel's stem; an `--input` or
//!   `--ref` of a variable a kernel does not have is passed over for that kernel.
//!
//! Two kernels of the same stem would share those paths and are refused.

use super::*;

/// The placeholder of a kernel's stem in the file options of a run of several kernels.
const KERNEL: &str = "{kernel}";

/// How one kernel of a corpus run ended.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Ending {
    /// The kernel, as given.
    pub kernel: String,
    /// Its exit code, as a run of it alone would exit.
    pub code: u8,
    /// Its report, when it ran to the end.
    pub printed: Option<Printed>,
    /// Its error, when it stopped on one: the message and, with `--json`, the object a run of
    /// it alone prints.
    pub error: Option<(String, Option<Value>)>,
}

/// The options of each kernel of `a` (in argument order), or the reason they are refused.
pub(crate) fn plan(a: &Args) -> Result<Vec<Args>, CliError> {
    let c = &a.common;
    let per_kernel = |flag: &str, v: &str| -> Result<(), CliError> {
        if v.contains(KERNEL) {
            Ok(())
        } else {
            Err(usage(format!(
                "--{flag} {v}: a run of several kernels needs one file per kernel; name {KERNEL} in it (replaced by each kernel's file stem), or run the kernels one at a time"
            )))
        }
    };
    for s in &c.inputs {
        per_kernel("input", s)?;
    }
    for s in &c.refs {
        per_kernel("ref", s)?;
    }
    if let Some(t) = &a.trace {
        per_kernel("trace", &t.to_string_lossy())?;
    }
    if a.profile || a.timeline_json.is_some() {
        return Err(usage(
            "a profile covers one kernel: profile the kernels one at a time",
        ));
    }
    if let Some(r) = c.ref_dir.as_ref().filter(|r| !r.is_dir()) {
        return Err(usage(format!("--ref-dir {}: not a directory", r.display())));
    }
    if let Some(d) = c.out_dir.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        return Err(CliError::Io(format!(
            "{}: the output directory is not a directory",
            d.display()
        )));
    }
    let kernels: Vec<&PathBuf> = std::iter::once(&c.kernel).chain(&a.more_kernels).collect();
    let mut seen: BTreeMap<String, &PathBuf> = BTreeMap::new();
    let mut plans = Vec::with_capacity(kernels.len());
    for k in kernels {
        let s = stem(k);
        if let Some(first) = seen.insert(s.clone(), k) {
            return Err(usage(format!(
                "{} and {}: two kernels of stem `{s}` would share their outputs (OUT/{s}/) and references (REFDIR/{s}/); give each kernel of a run a file name of its own",
                first.display(),
                k.display()
            )));
        }
        let named = |v: &str| v.replace(KERNEL, &s);
        let mut one = a.clone();
        one.more_kernels = Vec::new();
        one.mpi = false;
        one.common.kernel = k.clone();
        one.common.pass_over_absent = true;
        one.common.out_dir = c.out_dir.as_ref().map(|d| d.join(&s));
        one.common.ref_dir = c.ref_dir.as_ref().map(|d| d.join(&s));
        one.common.inputs = c.inputs.iter().map(|v| named(v)).collect();
        one.common.refs = c.refs.iter().map(|v| named(v)).collect();
        one.trace = a
            .trace
            .as_ref()
            .map(|t| PathBuf::from(named(&t.to_string_lossy())));
        plans.push(one);
    }
    Ok(plans)
}

/// Run the kernel of `one` (a plan of [`plan`]) in this process.
pub(crate) fn run_one(one: &Args, write_outputs: bool, progress: bool) -> Ending {
    let kernel = one.common.kernel.display().to_string();
    match run_kernel(one, write_outputs, progress) {
        Ok((outcome, printed)) => Ending {
            kernel,
            code: outcome.code(),
            printed: Some(printed),
            error: None,
        },
        Err((e, obj)) => Ending {
            kernel,
            code: e.exit_code(),
            printed: None,
            error: Some((e.to_string(), obj)),
        },
    }
}

/// `sim run` of several kernels in this process: each in turn, then the merged report.
pub(super) fn run(a: &Args, write_outputs: bool) -> Result<Outcome, CliError> {
    let plans = plan(a)?;
    let progress = shows_progress(
        a.json,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let endings: Vec<Ending> = plans
        .iter()
        .map(|one| run_one(one, write_outputs, progress))
        .collect();
    report(a, &endings)
}

/// The name of an exit code in the merged report.
fn status_of(code: u8) -> &'static str {
    match code {
        crate::exit::OK => "ok",
        crate::exit::INVALID => "invalid",
        crate::exit::FAULT => "fault",
        _ => "error",
    }
}

/// The merged report of every kernel's ending (in argument order), as text or JSON.
pub(crate) fn render(json: bool, endings: &[Ending]) -> String {
    let worst = endings.iter().map(|e| e.code).max().unwrap_or(0);
    if json {
        let kernels: Vec<Value> = endings
            .iter()
            .map(|e| {
                let mut obj = match (&e.printed, &e.error) {
                    (Some(Printed::Json(v)), _) => v.clone(),
                    (Some(Printed::Text(t)), _) => json!({ "kernel": e.kernel, "report": t }),
                    (None, Some((m, obj))) => {
                        let mut o = obj.clone().unwrap_or_else(
                            || json!({ "kernel": e.kernel, "status": status_of(e.code) }),
                        );
                        o["message"] = json!(m);
                        o
                    }
                    (None, None) => json!({ "kernel": e.kernel }),
                };
                obj["exit_code"] = json!(e.code);
                obj
            })
            .collect();
        let all = json!({
            "kernels": kernels,
            "status": status_of(worst),
            "exit_code": worst,
        });
        return format!("{all}\n");
    }
    let mut text = String::new();
    let n = endings.len();
    for (i, e) in endings.iter().enumerate() {
        text.push_str(&format!("== kernel {}/{n}: {} ==\n", i + 1, e.kernel));
        match (&e.printed, &e.error) {
            (Some(Printed::Text(t)), _) => text.push_str(t),
            (Some(Printed::Json(v)), _) => text.push_str(&format!("{v}\n")),
            (None, Some((m, _))) => text.push_str(&format!("error: {m}\n")),
            (None, None) => {}
        }
    }
    let count = |code: u8| endings.iter().filter(|e| e.code == code).count();
    text.push_str(&format!(
        "kernels: {n} run: {} ok, {} mismatched or with findings, {} stopped on an error, {} faulted\n",
        count(crate::exit::OK),
        count(crate::exit::INVALID),
        endings
            .iter()
            .filter(|e| e.code != crate::exit::OK
                && e.code != crate::exit::INVALID
                && e.code != crate::exit::FAULT)
            .count(),
        count(crate::exit::FAULT),
    ));
    text
}

/// Print the merged report and give the worst kernel's verdict (the exit code of the run).
pub(crate) fn report(a: &Args, endings: &[Ending]) -> Result<Outcome, CliError> {
    print!("{}", render(a.json, endings));
    let worst = endings.iter().map(|e| e.code).max().unwrap_or(0);
    match worst {
        crate::exit::OK => Ok(Outcome::Ok),
        crate::exit::INVALID => Ok(Outcome::Invalid),
        code => {
            let failed: Vec<&str> = endings
                .iter()
                .filter(|e| e.code > crate::exit::INVALID)
                .map(|e| e.kernel.as_str())
                .collect();
            eprintln!(
                "sim: error: {} of {} kernels stopped on an error or a fault (in the report): {}",
                failed.len(),
                endings.len(),
                failed.join(", ")
            );
            Err(CliError::Reported(code))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ending(kernel: &str, code: u8, text: Option<&str>, error: Option<&str>) -> Ending {
        Ending {
            kernel: kernel.into(),
            code,
            printed: text.map(|t| Printed::Text(t.into())),
            error: error.map(|m| (m.to_string(), None)),
        }
    }

    #[test]
    fn the_merged_report_keeps_argument_order_and_counts_each_ending() {
        let endings = [
            ending("b.neff", 0, Some("ran b\n"), None),
            ending("a.neff", 3, None, Some("a.neff: deadlock fault")),
            ending("c.neff", 1, Some("ran c\n"), None),
            ending("d.neff", 2, None, Some("d.neff: missing")),
        ];
        let text = render(false, &endings);
        assert_eq!(
            text,
            "== kernel 1/4: b.neff ==\nran b\n== kernel 2/4: a.neff ==\nerror: a.neff: deadlock fault\n\
             == kernel 3/4: c.neff ==\nran c\n== kernel 4/4: d.neff ==\nerror: d.neff: missing\n\
             kernels: 4 run: 1 ok, 1 mismatched or with findings, 1 stopped on an error, 1 faulted\n"
        );
        let v: Value = serde_json::from_str(&render(true, &endings)).unwrap();
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["status"], "fault");
        assert_eq!(v["kernels"][1]["kernel"], "a.neff");
        assert_eq!(v["kernels"][1]["message"], "a.neff: deadlock fault");
        assert_eq!(v["kernels"][3]["status"], "error");
        assert_eq!(v["kernels"][3]["exit_code"], 2);
    }
}
