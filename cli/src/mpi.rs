//! Runs over the processes of an MPI job (feature `mpi`; docs/mpi.md).
//!
//! `mpirun -np P sim run kernel.neff --mpi` spreads the world's ranks over the P processes
//! (`--mpi-placement`). Every process loads the kernel and reads the inputs and references of
//! its own ranks; process 0 holds the world's one meeting point and the others forward their
//! ranks' collectives to it as frames (`tpbsim_sim::machine::remote`), so the collectives fold,
//! mismatch and deadlock exactly as in one process. Each process writes its ranks' outputs and
//! compares them; process 0 prints the merged report and every process exits with the world's
//! code.
//!
//! Every MPI call is made on the thread that initialised MPI (`MPI_THREAD_FUNNELED`): the
//! ranks run on threads of their own while that thread moves the frames.

use std::cell::Cell;
use std::collections::VecDeque;

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde_json::{json, Value};
use tpbsim_sim::api::{self, RunError, RunOutput};
use tpbsim_sim::machine::remote::{self, Link};
use tpbsim_sim::machine::SchedStats;

use crate::cmd::run::{self, Args, Part, Share};
use crate::exit::{CliError, Outcome};

/// The tag of the frames of the collectives.
const TAG_FRAMES: i32 = 11;
/// The tag of what the processes send process 0 at the end of a step.
const TAG_GATHER: i32 = 12;

/// This process's place in the MPI job.
pub struct Mpi {
    world: SimpleCommunicator,
    // Dropped last: finalises MPI.
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// Initialise MPI for calls from this thread only while other threads run.
    pub fn init() -> Result<Mpi, CliError> {
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| CliError::Usage("MPI is already initialised in this process".into()))?;
        if level == mpi::Threading::Single {
            return Err(CliError::Usage(
                "the MPI library offers no thread support (MPI_THREAD_SINGLE); --mpi needs MPI_THREAD_FUNNELED".into(),
            ));
        }
        Ok(Mpi {
            world: universe.world(),
            _universe: universe,
        })
    }

    /// This process's number (0 = the one that reports).
    pub fn process(&self) -> usize {
        self.world.rank() as usize
    }

    /// Processes of the job.
    pub fn processes(&self) -> usize {
        self.world.size() as usize
    }

    /// Every process's `mine`, in process order, on process 0; `None` elsewhere.
    pub fn gather(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        if self.process() == 0 {
            let mut all = vec![mine.to_vec()];
            for p in 1..self.processes() {
                let (v, _) = self
                    .world
                    .process_at_rank(p as i32)
                    .receive_vec_with_tag::<u8>(TAG_GATHER);
                all.push(v);
            }
            Some(all)
        } else {
            self.world
                .process_at_rank(0)
                .send_with_tag(mine, TAG_GATHER);
            None
        }
    }

    /// Process 0's `v`, on every process.
    pub fn broadcast(&self, v: u8) -> u8 {
        let mut b = v;
        self.world.process_at_rank(0).broadcast_into(&mut b);
        b
    }

    /// Whether `ok` holds on every process.
    pub fn all(&self, ok: bool) -> bool {
        let mine = ok as u8;
        let mut all = 0u8;
        self.world
            .all_reduce_into(&mine, &mut all, SystemOperation::min());
        all == 1
    }

    /// Wait until every process is here.
    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// The link of the collectives' frames.
    fn link(&self) -> MpiLink<'_> {
        MpiLink {
            world: &self.world,
            inbox: VecDeque::new(),
        }
    }
}

/// Frames between the processes as MPI messages of bytes.
struct MpiLink<'w> {
    world: &'w SimpleCommunicator,
    /// Frames taken in while a send was under way.
    inbox: VecDeque<(usize, Vec<u8>)>,
}

/// A frame that has arrived, with its sender.
fn take(world: &SimpleCommunicator) -> Option<(usize, Vec<u8>)> {
    let probed = world
        .any_process()
        .immediate_matched_probe_with_tag(TAG_FRAMES)?;
    let (data, status) = probed.matched_receive_vec::<u8>();
    Some((status.source_rank() as usize, data))
}

impl Link for MpiLink<'_> {
    fn send(&mut self, to: usize, frame: &[u8]) -> Result<(), String> {
        if i32::try_from(frame.len()).is_err() {
            return Err(format!(
                "a frame of {} bytes: an MPI message holds at most 2^31 - 1 (docs/mpi.md, limits)",
                frame.len()
            ));
        }
        let to = i32::try_from(to).map_err(|_| format!("process {to} is not an MPI rank"))?;
        let (world, inbox) = (self.world, &mut self.inbox);
        // A non-blocking send, taking in what arrives meanwhile: two processes sending each
        // other large frames never wait on each other.
        mpi::request::scope(|sc| {
            let mut req = world
                .process_at_rank(to)
                .immediate_send_with_tag(sc, frame, TAG_FRAMES);
            loop {
                match req.test() {
                    Ok(_) => return,
                    Err(r) => req = r,
                }
                match take(world) {
                    Some(m) => inbox.push_back(m),
                    None => std::thread::yield_now(),
                }
            }
        });
        Ok(())
    }

    fn try_recv(&mut self) -> Result<Option<(usize, Vec<u8>)>, String> {
        Ok(self.inbox.pop_front().or_else(|| take(self.world)))
    }
}

/// The error of exit code `code` with message `m`, as process 0 reports another process's.
fn error_of(code: u8, m: String) -> CliError {
    if code == crate::exit::FAULT {
        CliError::Fault(m)
    } else {
        CliError::Usage(m)
    }
}

/// One step of every process as one: when any failed, process 0 returns the first failure
/// (in process order) and the others an error it has reported; otherwise each its own value.
fn agree<T>(mpi: &Mpi, mine: Result<T, CliError>) -> Result<T, CliError> {
    let status = match &mine {
        Ok(_) => Value::Null,
        Err(e) => json!({"code": e.exit_code(), "message": e.to_string()}),
    };
    let first = mpi.gather(status.to_string().as_bytes()).and_then(|all| {
        all.iter()
            .enumerate()
            .find_map(|(p, b)| match serde_json::from_slice::<Value>(b) {
                Ok(Value::Null) => None,
                Ok(v) => Some((
                    v["code"].as_u64().unwrap_or(2) as u8,
                    v["message"].as_str().unwrap_or_default().to_string(),
                )),
                Err(e) => Some((
                    crate::exit::USAGE,
                    format!("MPI process {p} sent an unreadable status: {e}"),
                )),
            })
    });
    let code = mpi.broadcast(first.as_ref().map_or(0, |(c, _)| *c));
    match (code, first) {
        (0, _) => mine,
        (_, Some((c, m))) => Err(error_of(c, m)),
        (c, None) => Err(CliError::Reported(c)),
    }
}

/// What a process's run ends with, as sent to process 0.
#[derive(serde::Serialize, serde::Deserialize)]
enum Ending {
    /// The report of its ranks.
    Part(Part),
    /// Its error: its exit code and message, the object `--json` prints, the rank that
    /// faulted, and whether it only stopped because another process's ranks did.
    Error {
        code: u8,
        message: String,
        json: Option<Value>,
        rank: Option<usize>,
        echo: bool,
    },
}

/// The error process 0 reports among every process's: a fault of the lowest rank (the fault
/// a run in one process reports), else the first other error in process order.
fn pick(endings: &[Ending]) -> Option<&Ending> {
    let errors = endings
        .iter()
        .filter(|e| matches!(e, Ending::Error { echo: false, .. }));
    let ranked = errors.clone().filter_map(|e| match e {
        Ending::Error {
            rank: Some(r),
            code,
            ..
        } if *code == crate::exit::FAULT => Some((*r, e)),
        _ => None,
    });
    ranked
        .min_by_key(|(r, _)| *r)
        .map(|(_, e)| e)
        .or_else(|| errors.clone().next())
        .or_else(|| endings.iter().find(|e| matches!(e, Ending::Error { .. })))
}

/// `sim run --mpi`.
pub fn run(a: &Args, write_outputs: bool) -> Result<Outcome, CliError> {
    let mpi = Mpi::init()?;
    let (me, processes) = (mpi.process(), mpi.processes());
    let refused = if a.trace.is_some() || a.profile || a.timeline_json.is_some() {
        Err(CliError::Usage(
            "--mpi: traces and profiles come from runs in one process; run without --mpi for them"
                .into(),
        ))
    } else {
        Ok(())
    };
    agree(&mpi, refused)?;
    let share = Share {
        process: me,
        processes,
        placement: a.mpi_placement.into(),
    };
    let prep = agree(&mpi, run::prepare(a, write_outputs, Some(&share)))?;
    let inputs = prep.inputs_here();
    let echo = Cell::new(false);
    let runner = |schedule: u32,
                  progress: &(dyn Fn(usize, usize, &SchedStats) + Sync)|
     -> Result<Vec<RunOutput>, RunError> {
        // The frames of one schedule's run never meet another's.
        mpi.barrier();
        let mut link = mpi.link();
        let r = remote::session(
            &mut link,
            me,
            processes,
            || api::world_comm(&prep.program, prep.ranks, prep.cfg.collective_order),
            |m| {
                api::run_ranks_schedule(
                    &prep.program,
                    prep.gen,
                    prep.ranks,
                    &inputs,
                    Some(m),
                    &prep.cfg,
                    schedule,
                    progress,
                )
            },
        )
        .unwrap_or_else(|e| Err(RunError::Usage(format!("MPI: {e}"))));
        // A world stops as a whole: when another process's ranks stopped, so does this one.
        if mpi.all(r.is_ok()) || r.is_err() {
            return r;
        }
        echo.set(true);
        Err(RunError::Usage(format!(
            "schedule {schedule}: the ranks of another MPI process stopped the run"
        )))
    };
    let ending = match run::run_schedules(a, &prep, &runner, false) {
        Ok(ran) => match run::write_and_compare(a, &prep, &ran) {
            Ok((part, _)) => Ending::Part(part),
            Err(e) => Ending::Error {
                code: e.exit_code(),
                message: e.to_string(),
                json: None,
                rank: None,
                echo: false,
            },
        },
        Err(s) => {
            let rank = s.rank();
            let (e, json) = run::stop_report(a, &prep, s);
            Ending::Error {
                code: e.exit_code(),
                message: e.to_string(),
                json,
                rank,
                echo: echo.get(),
            }
        }
    };
    conclude(
        &mpi,
        &ending,
        |p, e| Ending::Error {
            code: crate::exit::USAGE,
            message: format!("MPI process {p} sent an unreadable report: {e}"),
            json: None,
            rank: None,
            echo: false,
        },
        |endings| report_run(a, &prep, endings, (processes, share.placement)),
    )
}

/// Process 0's report of every process's ending of `sim run --mpi`.
fn report_run(
    a: &Args,
    prep: &run::Prepared,
    endings: Vec<Ending>,
    mpi: (usize, remote::Placement),
) -> Result<Outcome, CliError> {
    match pick(&endings) {
        Some(Ending::Error {
            code,
            message,
            json,
            ..
        }) => {
            if let Some(obj) = json {
                println!("{obj}");
            }
            Err(error_of(*code, message.clone()))
        }
        _ => {
            let parts = endings
                .into_iter()
                .filter_map(|e| match e {
                    Ending::Part(p) => Some(p),
                    Ending::Error { .. } => None,
                })
                .collect();
            let part = Part::merge(parts);
            let (outcome, printed) = run::render_report(a, prep, &part, &[], Some(mpi));
            printed.print();
            Ok(outcome)
        }
    }
}

/// End a step that every process reports on: each sends `mine` to process 0, which reads
/// them (`unreadable` standing in for one it cannot read) and gives `report` them all, in
/// process order; every process returns the verdict of process 0's report (the others an
/// error it has printed, or the outcome).
fn conclude<T: serde::Serialize + serde::de::DeserializeOwned>(
    mpi: &Mpi,
    mine: &T,
    unreadable: impl Fn(usize, String) -> T,
    report: impl FnOnce(Vec<T>) -> Result<Outcome, CliError>,
) -> Result<Outcome, CliError> {
    let sent = serde_json::to_vec(mine).unwrap_or_default();
    let Some(all) = mpi.gather(&sent) else {
        return match mpi.broadcast(0) {
            0 => Ok(Outcome::Ok),
            1 => Ok(Outcome::Invalid),
            c => Err(CliError::Reported(c)),
        };
    };
    let decoded = all
        .iter()
        .enumerate()
        .map(|(p, b)| serde_json::from_slice(b).unwrap_or_else(|e| unreadable(p, e.to_string())))
        .collect();
    let result = report(decoded);
    let code = match &result {
        Ok(o) => o.code(),
        Err(e) => e.exit_code(),
    };
    mpi.broadcast(code);
    result
}

/// Shard `items` items (files, kernels) over the processes by `placement`: this process
/// does `work` on its own, given their indices in order, and the shards end as one step
/// ([`conclude`]): process 0 gives `report` every process's shard, in process order.
fn shard<T: serde::Serialize + serde::de::DeserializeOwned>(
    mpi: &Mpi,
    items: usize,
    placement: remote::Placement,
    work: impl FnOnce(&[usize]) -> T,
    unreadable: impl Fn(usize, String) -> T,
    report: impl FnOnce(Vec<T>) -> Result<Outcome, CliError>,
) -> Result<Outcome, CliError> {
    let mine = placement.ranks_of(mpi.process(), mpi.processes(), items);
    let done = work(&mine);
    conclude(mpi, &done, unreadable, report)
}

/// `sim run --mpi` of several kernels: the kernels are sharded over the processes
/// (`--mpi-placement`), each process runs its own in-process, one after the other, and
/// process 0 prints the merged report of a run in one process, in argument order; every
/// process exits with its code.
pub fn run_corpus(a: &Args, write_outputs: bool) -> Result<Outcome, CliError> {
    type Done = Result<Vec<(usize, run::corpus::Ending)>, (u8, String)>;
    let mpi = Mpi::init()?;
    let plans = agree(&mpi, run::corpus::plan(a))?;
    shard(
        &mpi,
        plans.len(),
        a.mpi_placement.into(),
        |mine| -> Done {
            Ok(mine
                .iter()
                .map(|&i| (i, run::corpus::run_one(&plans[i], write_outputs, false)))
                .collect())
        },
        |p, e| -> Done {
            Err((
                crate::exit::USAGE,
                format!("MPI process {p} sent an unreadable report: {e}"),
            ))
        },
        |shards| {
            let mut all = Vec::with_capacity(plans.len());
            for s in shards {
                all.extend(s.map_err(|(code, m)| error_of(code, m))?);
            }
            all.sort_by_key(|(i, _)| *i);
            let endings: Vec<run::corpus::Ending> = all.into_iter().map(|(_, e)| e).collect();
            run::corpus::report(a, &endings)
        },
    )
}

/// What one process's shard of `sim validate --mpi` printed and found.
#[derive(serde::Serialize, serde::Deserialize)]
struct Shard {
    /// Its error (exit code and message), if it stopped on one.
    error: Option<(u8, String)>,
    /// The diagnostics (stdout).
    out: String,
    /// The streams' summaries (stderr).
    err: String,
    /// The lint findings (stderr, after every stream).
    lint: String,
    invalid: bool,
    lint_denied: bool,
}

/// `sim validate --mpi`: process p checks the p-th of P consecutive blocks of the files, so
/// that the shards in process order are the files in order; process 0 prints them as one
/// report (the first error in file order instead, as a run in one process would), and
/// every process exits with the world's code.
pub fn validate(a: &crate::cmd::validate::Args) -> Result<Outcome, CliError> {
    let mpi = Mpi::init()?;
    let check = |mine: &[usize]| {
        let files: Vec<std::path::PathBuf> = mine.iter().map(|&i| a.files[i].clone()).collect();
        let (mut out, mut err, mut lint) = (Vec::new(), Vec::new(), Vec::new());
        let r = if files.is_empty() {
            Ok(Default::default())
        } else {
            crate::cmd::validate::validate(a, &files, &mut out, &mut err, &mut lint)
        };
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        let v = r.as_ref().copied().unwrap_or_default();
        Shard {
            error: r.err().map(|e| (e.exit_code(), e.to_string())),
            out: text(out),
            err: text(err),
            lint: text(lint),
            invalid: v.invalid,
            lint_denied: v.lint_denied,
        }
    };
    shard(
        &mpi,
        a.files.len(),
        remote::Placement::Blocks,
        check,
        |p, e| Shard {
            error: Some((
                crate::exit::USAGE,
                format!("MPI process {p} sent an unreadable report: {e}"),
            )),
            out: String::new(),
            err: String::new(),
            lint: String::new(),
            invalid: false,
            lint_denied: false,
        },
        |shards| report_validate(a, &shards),
    )
}

/// Process 0's report of every process's shard of `sim validate --mpi`.
fn report_validate(a: &crate::cmd::validate::Args, shards: &[Shard]) -> Result<Outcome, CliError> {
    match shards.iter().find_map(|s| s.error.clone()) {
        Some((code, m)) => Err(error_of(code, m)),
        None => {
            let mut invalid = false;
            for s in shards {
                print!("{}", s.out);
                eprint!("{}", s.err);
                invalid |= s.invalid;
                // --fail-fast: the report ends at the first invalid stream in file order.
                if invalid && a.report.fail_fast {
                    break;
                }
            }
            let mut denied = false;
            for s in shards {
                eprint!("{}", s.lint);
                denied |= s.lint_denied;
            }
            Ok(if invalid || denied {
                Outcome::Invalid
            } else {
                Outcome::Ok
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: u8, message: &str, rank: Option<usize>, echo: bool) -> Ending {
        Ending::Error {
            code,
            message: message.into(),
            json: None,
            rank,
            echo,
        }
    }

    fn message(e: Option<&Ending>) -> &str {
        match e {
            Some(Ending::Error { message, .. }) => message,
            _ => "",
        }
    }

    #[test]
    fn the_fault_of_the_lowest_rank_is_reported_and_echoes_never() {
        let endings = vec![
            error(crate::exit::USAGE, "stopped by another", None, true),
            error(crate::exit::FAULT, "rank 3 fault", Some(3), false),
            error(crate::exit::FAULT, "rank 1 fault", Some(1), false),
        ];
        assert_eq!(message(pick(&endings)), "rank 1 fault");
        // Without faults: the first error in process order that is not an echo.
        let endings = vec![
            Ending::Part(Part::default()),
            error(crate::exit::USAGE, "echo", None, true),
            error(crate::exit::USAGE, "process 2's", None, false),
            error(crate::exit::USAGE, "process 3's", None, false),
        ];
        assert_eq!(message(pick(&endings)), "process 2's");
        assert!(pick(&[Ending::Part(Part::default())]).is_none());
    }
}
