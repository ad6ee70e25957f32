//! The inputs and references of a run: `.npy` files checked against the kernel's variables,
//! the reference directory and its tolerances, and the per-rank inputs of a world.

use super::*;

/// The stem of the kernel file (`softmax` for `dir/softmax.neff`).
pub(super) fn stem(p: &Path) -> String {
    p.file_stem().map_or_else(
        || "kernel".to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Read an `.npy` file of at most `max_data` data bytes (any file type: a pipe or device is read
/// up to the limit). The data is read once, straight into the buffer the run shares with every
/// core, so a large input costs its own size in memory once. It is read rather than mapped: a
/// mapped file truncated by another process while the run reads it would kill the process
/// (SIGBUS) instead of giving an error.
pub(super) fn read_npy(path: &Path, max_data: u64) -> Result<neff::NpyArray, CliError> {
    let named = |e: &dyn std::fmt::Display| usage(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| named(&e))?;
    if file.metadata().map_err(|e| named(&e))?.is_dir() {
        return Err(named(&"is a directory"));
    }
    neff::npy::read_npy_from(file, max_data).map_err(|e| match e {
        neff::npy::NpyError::Io { source, .. } => named(&source),
        e => named(&e),
    })
}

/// An `--input` array for `var`: mapped in place when its bytes are the variable's as they lie
/// (a regular little-endian C-order file), else read once ([`read_npy`]); checked against the
/// variable's dtype and shape either way.
pub(super) fn input_data(var: &VarSpec, path: &Path) -> Result<SharedBytes, CliError> {
    let what = path.display().to_string();
    match neff::npy::map_npy_file(path, var.size) {
        Ok(Some(m)) => {
            check_meta(var, &m.meta, &what)?;
            Ok(Arc::new(m))
        }
        Ok(None) => Ok(Arc::new(checked_data(
            var,
            read_npy(path, var.size)?,
            &what,
        )?)),
        Err(neff::npy::NpyError::Io { source, .. }) => Err(usage(format!("{what}: {source}"))),
        Err(e) => Err(usage(format!("{what}: {e}"))),
    }
}

/// Check an array against a variable's dtype and shape; returns its bytes.
pub(super) fn checked_data(
    var: &VarSpec,
    arr: neff::NpyArray,
    what: &str,
) -> Result<Vec<u8>, CliError> {
    check_meta(var, &arr, what)?;
    Ok(arr.data)
}

/// Check an array's dtype and shape against a variable's.
pub(super) fn check_meta(var: &VarSpec, arr: &neff::NpyArray, what: &str) -> Result<(), CliError> {
    let dtype = dtype_of(var.format)
        .ok_or_else(|| usage(format!("variable `{}` has no npy dtype", var.name)))?;
    arr.resolve(dtype).map_err(|e| {
        usage(format!(
            "{what}: {e} (variable `{}` is {})",
            var.name,
            var.format.name()
        ))
    })?;
    let shape: Vec<usize> = arr.shape.iter().map(|&d| d as usize).collect();
    if shape != var.shape {
        return Err(usage(format!(
            "{what}: shape {shape:?}, variable `{}` has shape {:?}",
            var.name, var.shape
        )));
    }
    Ok(())
}

/// Tolerances from `tolerance.json`: `{"default": {...}, "outputs": {"NAME": {...}}}`;
/// unknown keys are refused.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ToleranceFile {
    #[serde(default)]
    pub(super) default: Option<Tolerance>,
    #[serde(default)]
    pub(super) outputs: BTreeMap<String, Tolerance>,
}

#[derive(Default)]
pub(super) struct Refs {
    pub(super) files: BTreeMap<String, PathBuf>,
    pub(super) tolerances: ToleranceFile,
    /// The `tolerance.json` read, if any.
    pub(super) tolerance_file: Option<PathBuf>,
}

/// The references of each of `ranks` ranks: `--ref NAME=FILE` (FILE may name `{rank}`), else
/// the reference directory (`--ref-dir`, or `KERNEL.ref` beside the NEFF), whose `rank{r}/`
/// subdirectory holds rank r's in a run of several ranks. Only the ranks `here` (run by
/// this process) get theirs.
pub(super) fn find_refs(
    a: &KernelArgs,
    program: &Program,
    ranks: usize,
    here: &[usize],
) -> Result<Vec<Refs>, CliError> {
    if !a.refs.is_empty() {
        let mut per: Vec<Refs> = (0..ranks).map(|_| Refs::default()).collect();
        for r in &a.refs {
            let (name, file) = split_kv("ref", r)?;
            let known = program.outputs().iter().any(|v| v.name == name);
            if !known && a.pass_over_absent {
                continue;
            }
            if !known {
                return Err(usage(format!(
                    "--ref {name}: the kernel has no output `{name}`"
                )));
            }
            for (k, refs) in per.iter_mut().enumerate().filter(|(k, _)| here.contains(k)) {
                refs.files.insert(
                    name.to_string(),
                    PathBuf::from(file.replace("{rank}", &k.to_string())),
                );
            }
        }
        return Ok(per);
    }
    let dir = if let Some(d) = &a.ref_dir {
        // One of several kernels without a directory of its own in REFDIR: no references.
        if a.pass_over_absent && !d.exists() {
            return Ok((0..ranks).map(|_| Refs::default()).collect());
        }
        if !d.is_dir() {
            return Err(usage(format!("--ref-dir {}: not a directory", d.display())));
        }
        Some(d.clone())
    } else {
        let d = a.kernel.with_file_name(format!("{}.ref", stem(&a.kernel)));
        d.is_dir().then_some(d)
    };
    let Some(dir) = dir else {
        return Ok((0..ranks).map(|_| Refs::default()).collect());
    };
    per_rank_dirs(&dir, ranks)
        .iter()
        .enumerate()
        .map(|(r, d)| {
            if !here.contains(&r) {
                return Ok(Refs::default());
            }
            if !d.is_dir() {
                return Err(usage(format!(
                    "{}: no reference directory for this rank; a run of {ranks} ranks reads rank r's references from {}/rank{{r}}/",
                    d.display(),
                    dir.display()
                )));
            }
            refs_in(d, &dir, program)
        })
        .collect()
}

/// The references in `d` (one per output) and the tolerances of `d/tolerance.json`, else of
/// `top/tolerance.json`.
pub(super) fn refs_in(d: &Path, top: &Path, program: &Program) -> Result<Refs, CliError> {
    let mut refs = Refs::default();
    // A reference directory covers every output: one without the file is an error, not an
    // output silently left unchecked.
    for v in program.outputs() {
        let p = d.join(format!("{}.npy", v.name));
        if !p.exists() {
            return Err(usage(format!(
                "{}: no reference for output `{}` in the reference directory; give each output a NAME.npy there, or pass --ref NAME=FILE.npy for the outputs to compare",
                p.display(),
                v.name
            )));
        }
        refs.files.insert(v.name.clone(), p);
    }
    let t = [d.join("tolerance.json"), top.join("tolerance.json")]
        .into_iter()
        .find(|t| t.exists());
    if let Some(t) = t {
        let text = crate::cmd::read_text(&t, 1 << 20)?;
        let tf: ToleranceFile =
            serde_json::from_str(&text).map_err(|e| usage(format!("{}: {e}", t.display())))?;
        if let Some(name) = tf
            .outputs
            .keys()
            .find(|n| !program.outputs().iter().any(|v| &v.name == *n))
        {
            return Err(usage(format!(
                "{}: `outputs` names `{name}`, which is not an output of the kernel",
                t.display()
            )));
        }
        refs.tolerances = tf;
        refs.tolerance_file = Some(t);
    }
    Ok(refs)
}

pub(super) fn tolerance_for(a: &KernelArgs, refs: &Refs, name: &str) -> Tolerance {
    let mut t = refs
        .tolerances
        .outputs
        .get(name)
        .copied()
        .or(refs.tolerances.default)
        .unwrap_or_default();
    if let Some(x) = a.atol {
        t.atol = x;
    }
    if let Some(x) = a.rtol {
        t.rtol = x;
    }
    if let Some(x) = a.ulp {
        t.ulp = x;
    }
    t
}

/// `dir` for a run of one rank, `dir/rank{r}` for each rank of several.
pub(super) fn per_rank_dirs(dir: &Path, ranks: usize) -> Vec<PathBuf> {
    if ranks <= 1 {
        vec![dir.to_path_buf()]
    } else {
        (0..ranks).map(|r| dir.join(format!("rank{r}"))).collect()
    }
}

/// The data of an input for some ranks, each with its rank, and the files read.
pub(super) type RankInputs = (Vec<(usize, SharedBytes)>, Vec<PathBuf>);

/// The data of `--input NAME=FILE` for each rank of `here` (of a world of `ranks`), with its
/// rank, and the files read. `FILE` may name `{rank}` (one file per rank), hold the
/// variable's shape (the same data for every rank) or, for several ranks, one array per rank
/// along a leading axis of length `ranks` (mapped or read once; each rank sees its slice).
pub(super) fn rank_input_data(
    var: &VarSpec,
    file: &str,
    ranks: usize,
    here: &[usize],
) -> Result<RankInputs, CliError> {
    if file.contains("{rank}") {
        let mut data = Vec::with_capacity(here.len());
        let mut files = Vec::with_capacity(here.len());
        for &r in here {
            let p = PathBuf::from(file.replace("{rank}", &r.to_string()));
            data.push((r, input_data(var, &p)?));
            files.push(p);
        }
        return Ok((data, files));
    }
    let path = PathBuf::from(file);
    let one = input_data(var, &path);
    if ranks <= 1 || one.is_ok() {
        return one.map(|d| (here.iter().map(|&r| (r, d.clone())).collect(), vec![path]));
    }
    let stacked = VarSpec {
        shape: std::iter::once(ranks)
            .chain(var.shape.iter().copied())
            .collect(),
        size: var.size.saturating_mul(ranks as u64),
        id: var.id,
        name: var.name.clone(),
        kind: var.kind,
        format: var.format,
        init: None,
    };
    match input_data(&stacked, &path) {
        Ok(all) => {
            let size = var.size as usize;
            let data = here
                .iter()
                .map(|&r| {
                    let slice = Arc::new(Slice {
                        whole: all.clone(),
                        start: r * size,
                        len: size,
                    }) as SharedBytes;
                    (r, slice)
                })
                .collect();
            Ok((data, vec![path]))
        }
        Err(_) => Err(match one {
            Err(CliError::Usage(m)) => usage(format!(
                "{m} (or [{ranks}, ...] for one array per rank, or a file name with {{rank}})"
            )),
            Err(e) => e,
            Ok(_) => unreachable!("handled above"),
        }),
    }
}

/// One rank's part of an input array that holds every rank's along its leading axis.
pub(super) struct Slice {
    pub(super) whole: SharedBytes,
    pub(super) start: usize,
    pub(super) len: usize,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        let all = (*self.whole).as_ref();
        all.get(self.start..self.start + self.len).unwrap_or(&[])
    }
}

/// A reference's data and shape for rank `rank` of `ranks`: the whole array, or, when it holds
/// one array per rank along a leading axis of length `ranks`, rank `rank`'s.
pub(super) fn checked_reference<'r>(
    v: &VarSpec,
    r: &'r neff::NpyArray,
    path: &Path,
    rank: usize,
    ranks: usize,
) -> Result<(&'r [u8], Vec<usize>), CliError> {
    let dtype =
        dtype_of(v.format).ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
    r.resolve(dtype).map_err(|e| {
        usage(format!(
            "{}: {e} (output `{}` is {})",
            path.display(),
            v.name,
            v.format.name()
        ))
    })?;
    let shape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
    let stacked = ranks > 1
        && shape.len() == v.shape.len() + 1
        && shape[0] == ranks
        && shape[1..] == v.shape[..];
    if stacked {
        let per = r.data.len() / ranks;
        let data = r.data.get(rank * per..(rank + 1) * per).unwrap_or(&[]);
        return Ok((data, v.shape.clone()));
    }
    Ok((&r.data, shape))
}
