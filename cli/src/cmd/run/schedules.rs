//! Preparing a run (program, world of ranks, inputs) and running it under each schedule; what a
//! run that stops (fault, deadlock, error) reports.

use super::*;

/// The part of a world one process runs (a run over MPI; docs/mpi.md).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Share {
    /// This process.
    pub process: usize,
    /// Processes of the job.
    pub processes: usize,
    /// How the ranks are spread over them.
    pub placement: Placement,
}

/// A kernel ready to run: loaded, with the inputs and references of the ranks this process
/// runs, its output targets checked.
pub(crate) struct Prepared {
    pub program: Program,
    pub gen: Gen,
    /// Ranks of the world.
    pub ranks: usize,
    /// The ranks this process runs, in rank order.
    pub here: Vec<usize>,
    /// The output directory of each rank of the world.
    pub(super) out_dirs: Vec<PathBuf>,
    /// The inputs given for each rank of the world (none for the ranks run elsewhere).
    pub given: Vec<BTreeMap<String, SharedBytes>>,
    /// The references of each rank of the world (none for the ranks run elsewhere).
    pub(super) refs: Vec<Refs>,
    pub cfg: RunConfig,
    pub(super) write_outputs: bool,
}

impl Prepared {
    /// The inputs of the ranks this process runs, with their ranks.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn inputs_here(&self) -> Vec<(usize, &BTreeMap<String, SharedBytes>)> {
        self.here.iter().map(|&r| (r, &self.given[r])).collect()
    }

    /// `Some(rank)` in a world of several ranks (to label what belongs to one).
    pub(super) fn rank_label(&self, r: usize) -> Option<usize> {
        (self.ranks > 1).then_some(r)
    }
}

/// Load the kernel, read the inputs and find the references of the ranks this process runs
/// (every rank, or those `share` gives it), check every file the run will write.
pub(crate) fn prepare(
    a: &Args,
    write_outputs: bool,
    share: Option<&Share>,
) -> Result<Prepared, CliError> {
    let c = &a.common;
    let write_outputs = write_outputs || c.out_dir.is_some();
    let n = Neff::read(&c.kernel, &c.read.options())
        .map_err(|e| usage(crate::cmd::neff::error_text(&c.kernel, &e)))?;
    let program =
        api::load_program(&n).map_err(|e| usage(format!("{}: {e}", c.kernel.display())))?;
    let gen = c.arch.or(program.gen).ok_or_else(|| {
        usage(format!(
            "{}: the NEFF names {}; pass --arch v2|v3|v4|v5",
            c.kernel.display(),
            load::target_source(&n)
        ))
    })?;
    // The program holds what the run needs: the archive's members are not kept through it.
    drop(n);
    let world = program.world();
    let ranks = c.ranks.map_or(world, |r| r as usize);
    if ranks < world {
        return Err(usage(format!(
            "{}: --ranks {ranks}: the NEFF's collectives span {world} ranks (its replica groups, src_target_pairs or #rank_world_size); pass --ranks {world} or more",
            c.kernel.display()
        )));
    }
    let here: Vec<usize> = match share {
        Some(s) => s.placement.ranks_of(s.process, s.processes, ranks),
        None => (0..ranks).collect(),
    };
    for v in program.outputs() {
        check_output_name(&v.name)?;
    }
    let out_dir = c
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.out", stem(&c.kernel))));
    let out_dirs = per_rank_dirs(&out_dir, ranks);

    // Inputs: --input first, else the NEFF's own data. Each is read once and shared by every
    // core and every schedule (and by every rank, when one file serves them all).
    let mut read_files: Vec<PathBuf> = vec![c.kernel.clone()];
    let mut given: Vec<BTreeMap<String, SharedBytes>> = vec![BTreeMap::new(); ranks];
    for s in &c.inputs {
        let (name, file) = split_kv("input", s)?;
        if c.pass_over_absent && program.var(name).is_none() {
            continue;
        }
        let var = program.var(name).ok_or_else(|| {
            usage(format!(
                "--input {name}: the kernel has no variable `{name}`"
            ))
        })?;
        if var.kind != VarKind::Input {
            return Err(usage(format!(
                "--input {name}: `{name}` is not an input variable"
            )));
        }
        let (data, files) = rank_input_data(var, file, ranks, &here)?;
        read_files.extend(files);
        for (r, d) in data {
            given[r].insert(name.to_string(), d);
        }
    }
    let refs = find_refs(c, &program, ranks, &here)?;
    for r in &refs {
        read_files.extend(r.files.values().cloned());
        read_files.extend(r.tolerance_file.clone());
    }
    if let Some(&first) = here.first() {
        for v in program.inputs() {
            if !given[first].contains_key(&v.name) && v.init.is_none() {
                return Err(usage(format!(
                    "input `{}` has no data in the NEFF: pass --input {}=FILE.npy",
                    v.name, v.name
                )));
            }
        }
    }
    // Every output is written as .npy: a shape numpy cannot hold is refused before the run.
    for v in program.outputs() {
        if v.shape.len() > neff::npy::MAX_NPY_DIMS {
            return Err(usage(format!(
                "output `{}` has a shape of {} dimensions: an .npy array has at most {} (numpy's limit)",
                v.name,
                v.shape.len(),
                neff::npy::MAX_NPY_DIMS
            )));
        }
    }
    let dirs_here: Vec<PathBuf> = here.iter().map(|&r| out_dirs[r].clone()).collect();
    check_targets(
        a,
        &program,
        write_outputs.then_some(dirs_here.as_slice()),
        &read_files,
    )?;
    let cfg = a.config(gen);
    Ok(Prepared {
        program,
        gen,
        ranks,
        here,
        out_dirs,
        given,
        refs,
        cfg,
        write_outputs,
    })
}

/// Runs schedule `schedule` of the ranks a process runs (their outputs in rank order),
/// telling `progress` each core's counters.
pub(crate) type Runner<'r> = dyn Fn(u32, &(dyn Fn(usize, usize, &SchedStats) + Sync)) -> Result<Vec<api::RunOutput>, RunError>
    + 'r;

/// Every schedule's run of the ranks a process runs.
pub(crate) struct Ran {
    /// The round-robin run's outputs, one per rank run here, in rank order.
    pub(super) base: Vec<api::RunOutput>,
    /// The outputs of those ranks that differ in another schedule.
    pub(super) diffs: Vec<ScheduleDiff>,
    /// The schedules whose race findings differ from the round-robin run's on those ranks.
    pub(super) changed: Vec<u32>,
}

/// Why a run stopped short.
pub(crate) enum Stopped {
    /// A fault of schedule `schedule` on `rank`, with the timelines up to it.
    Fault {
        fault: Box<CoreFault>,
        rank: Option<usize>,
        schedule: u32,
        timelines: Vec<Timeline>,
    },
    /// Another error.
    Error(CliError),
}

impl Stopped {
    /// The rank a fault stopped, if any.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn rank(&self) -> Option<usize> {
        match self {
            Stopped::Fault { rank, .. } => *rank,
            Stopped::Error(_) => None,
        }
    }
}

/// Run every schedule of `a` with `runner`; the first run with a progress bar when
/// `progress`.
pub(crate) fn run_schedules(
    a: &Args,
    prep: &Prepared,
    runner: &Runner<'_>,
    progress: bool,
) -> Result<Ran, Stopped> {
    let cores = prep.program.cores.len();
    let stop = |schedule: u32, e: RunError| match e {
        RunError::Fault {
            fault,
            rank,
            timelines,
            ..
        } => Stopped::Fault {
            fault,
            rank,
            schedule,
            timelines,
        },
        e => Stopped::Error(run_error(&a.common, e)),
    };
    let bar = Progress::new(progress, cores * prep.ranks);
    let first = runner(0, &|r, core, st| bar.update(r * cores + core, st));
    bar.finish();
    let base = first.map_err(|e| stop(0, e))?;
    let mut diffs: Vec<ScheduleDiff> = Vec::new();
    let mut changed: Vec<u32> = Vec::new();
    for i in 1..a.sched.schedules {
        let order = api::order_of(a.sched.seed, i);
        let other = runner(i, &|_, _, _| {}).map_err(|e| stop(i, e))?;
        for ((r, b), o) in prep.here.iter().zip(&base).zip(&other) {
            diffs.extend(
                api::diff_outputs(&b.outputs, &o.outputs)
                    .into_iter()
                    .map(|d| ScheduleDiff {
                        rank: prep.rank_label(*r),
                        output: d.output,
                        schedule: i,
                        order: describe_order(order),
                        first_byte: d.first_byte,
                        bytes_differing: d.bytes_differing,
                    }),
            );
            if o.findings != b.findings && !changed.contains(&i) {
                changed.push(i);
            }
        }
    }
    Ok(Ran {
        base,
        diffs,
        changed,
    })
}

/// The error of a run that stopped short and, with `--json`, the object to print; the
/// trace up to a fault of the round-robin run is written first (with `--trace`).
pub(crate) fn stop_report(a: &Args, prep: &Prepared, s: Stopped) -> (CliError, Option<Value>) {
    let (cf, rank, schedule, timelines) = match s {
        Stopped::Error(e) => return (e, None),
        Stopped::Fault {
            fault,
            rank,
            schedule,
            timelines,
        } => (fault, rank, schedule, timelines),
    };
    let f = if schedule == 0 {
        *cf
    } else {
        let order = api::order_of(a.sched.seed, schedule);
        annotate(
            *cf,
            &format!("schedule {schedule} ({})", describe_order(order)),
        )
    };
    let (err, obj) = fault(a, prep.gen, &f, rank);
    // The trace up to the fault.
    if let (Some(path), false, 0) = (&a.trace, timelines.is_empty(), schedule) {
        let named = core_names(&prep.program, rank, &timelines);
        if let Err(e) = write_trace(path, &named) {
            return (
                CliError::Fault(format!("{err}; the trace was not written: {e}")),
                obj,
            );
        }
        eprintln!("trace up to the fault -> {}", path.display());
    }
    (err, obj)
}

/// `f` with `what` prepended to its message (for faults of later schedules).
pub(super) fn annotate(mut f: CoreFault, what: &str) -> CoreFault {
    if let Fault::Exec { site, message } = f.fault {
        f.fault = Fault::Exec {
            site,
            message: format!("{what}: {message}"),
        };
    }
    f
}

/// A set-up error is a usage error, a refused budget charge a fault.
pub(super) fn run_error(c: &KernelArgs, e: RunError) -> CliError {
    match e {
        RunError::Setup(e @ SetupError::Budget(_)) => {
            CliError::Fault(format!("{}: budget fault: {e}", c.kernel.display()))
        }
        RunError::Fault { fault, .. } => CliError::Fault(format!(
            "{}: {} fault: {fault}",
            c.kernel.display(),
            fault.fault.kind()
        )),
        e => usage(format!("{}: {e}", c.kernel.display())),
    }
}

/// The error of fault `cf` on `rank` and, with `--json`, the object that reports it.
pub(super) fn fault(
    a: &Args,
    gen: Gen,
    cf: &CoreFault,
    rank: Option<usize>,
) -> (CliError, Option<Value>) {
    let f = &cf.fault;
    let at = rank.map(|r| format!("rank {r}: ")).unwrap_or_default();
    let obj = a.json.then(|| {
        let mut obj = json!({
            "kernel": a.common.kernel.display().to_string(),
            "arch": gen.short(),
            "status": "fault",
            "fault": { "kind": f.kind(), "message": format!("{at}{cf}") },
        });
        if let Some(r) = rank {
            obj["fault"]["rank"] = json!(r);
        }
        if cf.cores > 1 {
            obj["fault"]["core"] = json!(cf.core);
            obj["fault"]["subgraph"] = json!(cf.subgraph);
        }
        if let Fault::Deadlock(r) = f {
            obj["fault"]["deadlock"] = json!(r);
        }
        obj
    });
    let err = CliError::Fault(format!(
        "{}: {at}{} fault: {cf}",
        a.common.kernel.display(),
        f.kind()
    ));
    (err, obj)
}
