//! Writing a run's outputs (refusing targets that are inputs of the run) and comparing them
//! with the references.

use super::*;

/// Check that an output variable's name is a plain file-name component, so that its `.npy`
/// file lands inside the output directory.
pub(super) fn check_output_name(name: &str) -> Result<(), CliError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("it is `.` or `..`")
    } else if name.contains('/') || name.contains('\\') {
        Some("it holds a path separator")
    } else if name.contains('\0') {
        Some("it holds a NUL byte")
    } else if name.len() > 250 {
        Some("it is longer than 250 bytes")
    } else {
        None
    };
    match why {
        Some(why) => Err(usage(format!(
            "output variable `{}`: its name cannot be an output file name ({why}); outputs are written as NAME.npy inside the output directory",
            name.escape_debug()
        ))),
        None => Ok(()),
    }
}

/// Check every file the run will write before the simulation starts: each output directory
/// (a directory, or absent) and each target (absent or a regular file), and the trace; none of
/// them may be a file the run reads (`read`: the kernel, inputs, references, tolerances).
pub(super) fn check_targets(
    a: &Args,
    program: &Program,
    out_dirs: Option<&[PathBuf]>,
    read: &[PathBuf],
) -> Result<(), CliError> {
    let io = |p: &Path, e: std::io::Error| CliError::Io(format!("{}: {e}", p.display()));
    let not_read = |target: &Path, what: &str| -> Result<(), CliError> {
        match read.iter().find(|r| same_file(target, r)) {
            Some(r) => Err(usage(format!(
                "{}: the {what} would overwrite {}, which this run reads; choose another path",
                target.display(),
                r.display()
            ))),
            None => Ok(()),
        }
    };
    for dir in out_dirs.unwrap_or_default() {
        match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(CliError::Io(format!(
                    "{}: the output directory is not a directory",
                    dir.display()
                )))
            }
            _ => {}
        }
        for v in program.outputs() {
            let p = dir.join(format!("{}.npy", v.name));
            tpbsim_isa::fsio::check_target(&p).map_err(|e| io(&p, e))?;
            not_read(&p, &format!("output `{}`", v.name))?;
        }
    }
    if let Some(t) = &a.trace {
        tpbsim_isa::fsio::check_target(t).map_err(|e| io(t, e))?;
        not_read(t, "trace")?;
        for dir in out_dirs.unwrap_or_default() {
            for v in program.outputs() {
                let p = dir.join(format!("{}.npy", v.name));
                if same_path(t, &p) {
                    return Err(usage(format!(
                        "--trace {}: the trace would overwrite output `{}`; choose another path",
                        t.display(),
                        v.name
                    )));
                }
            }
        }
        if let Some(parent) = t.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(CliError::Io(format!(
                    "{}: the trace's directory {} does not exist",
                    t.display(),
                    parent.display()
                )));
            }
        }
    }
    Ok(())
}

/// Whether two paths name the same existing file (same device and inode).
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Whether two paths name the same file, existing or not: the same file, or the same name in
/// the same (existing) directory.
pub(super) fn same_path(a: &Path, b: &Path) -> bool {
    if same_file(a, b) {
        return true;
    }
    let parent = |p: &Path| -> PathBuf {
        match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        }
    };
    a.file_name().is_some()
        && a.file_name() == b.file_name()
        && (parent(a) == parent(b) || same_file(&parent(a), &parent(b)))
}

/// Write the Chrome/Perfetto trace of the cores' timelines to `path` (one process per core).
pub(super) fn write_trace(path: &Path, cores: &[(String, &Timeline)]) -> Result<(), CliError> {
    let text = serde_json::to_vec(&Timeline::cores_to_chrome(cores))
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    neff::write_atomic(path, &text).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// Write the outputs of the ranks run here and compare them with their references: every
/// output is encoded and every reference checked first, so that a bad reference or output
/// leaves the directory untouched; then each file is written through a temporary file and
/// renamed, and a failed write removes the outputs this run already wrote. The report's part
/// of these ranks and the files written.
pub(crate) fn write_and_compare(
    a: &Args,
    prep: &Prepared,
    ran: &Ran,
) -> Result<(Part, Vec<PathBuf>), CliError> {
    let c = &a.common;
    let program = &prep.program;
    let mut pending: Vec<(usize, String, PathBuf, Vec<u8>)> = Vec::new();
    let mut compared: Vec<Vec<Compared>> = vec![Vec::new(); ran.base.len()];
    for (i, (&r, out)) in prep.here.iter().zip(&ran.base).enumerate() {
        for v in program.outputs() {
            let data = out.outputs.get(&v.name).map_or(&[][..], |d| &d[..]);
            let dtype = dtype_of(v.format)
                .ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
            let shape: Vec<u64> = v.shape.iter().map(|&d| d as u64).collect();
            let bytes = neff::npy::encode_npy(dtype, &shape, data)
                .map_err(|e| CliError::Io(format!("output `{}`: {e}", v.name)))?;
            let path = prep.out_dirs[r].join(format!("{}.npy", v.name));
            pending.push((i, v.name.clone(), path, bytes));
            if let Some(rp) = prep.refs[r].files.get(&v.name) {
                let rarr = read_npy(rp, c.max_memory)?;
                let (rdata, rshape) = checked_reference(v, &rarr, rp, r, prep.ranks)?;
                let cmp = compare(
                    &v.name,
                    v.format,
                    &v.shape,
                    data,
                    &rshape,
                    rdata,
                    tolerance_for(c, &prep.refs[r], &v.name),
                )
                .map_err(|e| usage(format!("{}: {e}", rp.display())))?;
                compared[i].push(Compared {
                    json: json!(cmp),
                    text: cmp.render(),
                    passed: cmp.passed(),
                });
            }
        }
    }
    if prep.write_outputs {
        for &r in &prep.here {
            let d = &prep.out_dirs[r];
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::Io(format!("{}: {e}", d.display())))?;
        }
    } else {
        pending.clear();
    }
    let mut written: Vec<PathBuf> = Vec::new();
    let mut names: Vec<Vec<(String, String)>> = vec![Vec::new(); ran.base.len()];
    for (i, name, path, bytes) in pending {
        if let Err(e) = neff::write_atomic(&path, &bytes) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(CliError::Io(format!("{}: {e}", path.display())));
        }
        names[i].push((name, path.display().to_string()));
        written.push(path);
    }
    let reports = prep
        .here
        .iter()
        .zip(&ran.base)
        .zip(compared.into_iter().zip(names))
        .map(|((&rank, o), (compared, written))| RankReport {
            rank,
            stats: o.stats,
            cores: o
                .cores
                .iter()
                .map(|cr| (cr.subgraph.clone(), cr.stats))
                .collect(),
            threads: o.threads,
            compared,
            written,
            findings: o
                .findings
                .iter()
                .map(|f| Noted {
                    json: json!(f),
                    text: f.to_string(),
                    core_race: f.kind_name() == "core-race",
                })
                .collect(),
            notes: o.project_defined.iter().map(|n| n.to_string()).collect(),
        })
        .collect();
    Ok((
        Part {
            reports,
            diffs: ran.diffs.clone(),
            changed: ran.changed.clone(),
        },
        written,
    ))
}
