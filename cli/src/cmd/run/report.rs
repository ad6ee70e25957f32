//! The report of a run: per-rank results, findings, schedules and profile, as text or JSON.

use std::fmt::Write as _;

use super::*;

/// Append `format!(...)` to a report.
macro_rules! out {
    ($w:expr, $($t:tt)*) => {{
        let _ = write!($w, $($t)*);
    }};
}

/// Append `format!(...)` and a new line to a report.
macro_rules! outln {
    ($w:expr, $($t:tt)*) => {{
        let _ = writeln!($w, $($t)*);
    }};
}

pub(super) fn summary_json(stats: &RunStats) -> Value {
    let per: serde_json::Map<String, Value> = Engine::ALL
        .iter()
        .map(|e| {
            (
                e.short().to_string(),
                stats.sched.per_engine[*e as usize].into(),
            )
        })
        .collect();
    let secs = stats.wall.as_secs_f64();
    json!({
        "bundles": per,
        "steps": stats.sched.steps,
        "dma_bytes": stats.dma_bytes,
        "dma_transfers": stats.dma_transfers,
        "wall_seconds": secs,
        "bundles_per_second": if secs > 0.0 { stats.sched.steps as f64 / secs } else { 0.0 },
    })
}

pub(super) fn print_summary(w: &mut String, stats: &RunStats) {
    let per: Vec<String> = Engine::ALL
        .iter()
        .map(|e| format!("{} {}", e.short(), stats.sched.per_engine[*e as usize]))
        .collect();
    let secs = stats.wall.as_secs_f64();
    let rate = if secs > 0.0 {
        stats.sched.steps as f64 / secs
    } else {
        0.0
    };
    outln!(
        w,
        "ran {} bundles ({}), DMA {} bytes in {} transfers, {:.3} ms, {:.0} bundles/s",
        stats.sched.steps,
        per.join(", "),
        stats.dma_bytes,
        stats.dma_transfers,
        secs * 1e3,
        rate
    );
}

/// One comparison of an output with its reference, as printed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Compared {
    pub(super) json: Value,
    pub(super) text: String,
    pub(super) passed: bool,
}

/// One race finding, as printed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Noted {
    pub(super) json: Value,
    pub(super) text: String,
    pub(super) core_race: bool,
}

/// What one rank's run gives the report.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RankReport {
    pub(super) rank: usize,
    pub(super) stats: RunStats,
    /// Per core: its subgraph and counters.
    pub(super) cores: Vec<(String, RunStats)>,
    pub(super) threads: usize,
    pub(super) compared: Vec<Compared>,
    /// The outputs written: name and path.
    pub(super) written: Vec<(String, String)>,
    pub(super) findings: Vec<Noted>,
    pub(super) notes: Vec<String>,
}

/// What the report says of the ranks of one process, or of the world's merged.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Part {
    pub(super) reports: Vec<RankReport>,
    pub(super) diffs: Vec<ScheduleDiff>,
    pub(super) changed: Vec<u32>,
}

impl Part {
    /// The parts of every process as one, in rank (and schedule) order.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn merge(parts: Vec<Part>) -> Part {
        let mut all = Part::default();
        for p in parts {
            all.reports.extend(p.reports);
            all.diffs.extend(p.diffs);
            for i in p.changed {
                if !all.changed.contains(&i) {
                    all.changed.push(i);
                }
            }
        }
        all.reports.sort_by_key(|r| r.rank);
        all.diffs.sort_by_key(|d| (d.schedule, d.rank));
        all.changed.sort_unstable();
        all
    }

    pub(super) fn matched(&self) -> bool {
        self.reports
            .iter()
            .all(|r| r.compared.iter().all(|c| c.passed))
    }

    pub(super) fn clean(&self) -> bool {
        self.reports.iter().all(|r| r.findings.is_empty())
            && self.diffs.is_empty()
            && self.changed.is_empty()
    }

    /// Ok when every output matched and nothing was found.
    pub fn outcome(&self) -> Outcome {
        if self.matched() && self.clean() {
            Outcome::Ok
        } else {
            Outcome::Invalid
        }
    }
}

/// What a run prints on stdout: the text report, or the JSON object (`--json`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum Printed {
    Text(String),
    Json(Value),
}

impl Printed {
    /// Print it on stdout, as a run of one kernel does.
    pub(crate) fn print(&self) {
        match self {
            Printed::Text(t) => print!("{t}"),
            Printed::Json(v) => println!("{v}"),
        }
    }
}

/// The report of `part` (every rank of the world) and the verdict. `mpi` names the
/// processes and the placement of a run over MPI.
pub(crate) fn render_report(
    a: &Args,
    prep: &Prepared,
    part: &Part,
    profiles: &[(String, Profile)],
    mpi: Option<(usize, Placement)>,
) -> (Outcome, Printed) {
    let mut text = String::new();
    let w = &mut text;
    let c = &a.common;
    let ranks = prep.ranks;
    let cores = prep.program.cores.len();
    let several_ranks = ranks > 1;
    let several = cores > 1;
    let reports = &part.reports;
    let core_races: usize = reports
        .iter()
        .map(|r| r.findings.iter().filter(|f| f.core_race).count())
        .sum();
    let matched = part.matched();
    let clean = part.clean();
    let stats = world_stats(reports.iter().map(|r| &r.stats));
    let mut notes: Vec<&str> = Vec::new();
    for n in reports.iter().flat_map(|r| r.notes.iter()) {
        if !notes.contains(&n.as_str()) {
            notes.push(n);
        }
    }
    let changes: Vec<(u32, String)> = part
        .changed
        .iter()
        .map(|&i| (i, describe_order(api::order_of(a.sched.seed, i))))
        .collect();
    let order_name = match c.collective_order {
        crate::cmd::kernel_args::CollectiveOrder::Replica => "replica",
        crate::cmd::kernel_args::CollectiveOrder::Ring => "ring",
    };
    let placement_name = |p: Placement| match p {
        Placement::Blocks => "blocks",
        Placement::RoundRobin => "round-robin",
    };
    if a.json {
        let outputs_json = |r: &RankReport| {
            r.written
                .iter()
                .map(|(n, p)| json!({"name": n, "path": p}))
                .collect::<Vec<_>>()
        };
        let comparisons_json = |r: &RankReport| {
            r.compared
                .iter()
                .map(|c| c.json.clone())
                .collect::<Vec<_>>()
        };
        let findings_json = |r: &RankReport| {
            json!(r
                .findings
                .iter()
                .map(|f| f.json.clone())
                .collect::<Vec<_>>())
        };
        let cores_json = |r: &RankReport| {
            json!(r
                .cores
                .iter()
                .map(|(sg, st)| json!({"subgraph": sg, "summary": summary_json(st)}))
                .collect::<Vec<_>>())
        };
        let mut obj = json!({
            "kernel": c.kernel.display().to_string(),
            "arch": prep.gen.short(),
            "status": if !matched { "mismatch" } else if !clean { "findings" } else { "ok" },
            "summary": summary_json(&stats),
            "project_defined": notes,
        });
        if several_ranks {
            obj["ranks"] = json!(reports
                .iter()
                .map(|r| {
                    let mut e = json!({
                        "rank": r.rank,
                        "summary": summary_json(&r.stats),
                        "outputs": outputs_json(r),
                        "comparisons": comparisons_json(r),
                    });
                    if several {
                        e["cores"] = cores_json(r);
                    }
                    if a.check_races || core_races > 0 {
                        e["findings"] = findings_json(r);
                    }
                    e
                })
                .collect::<Vec<_>>());
            obj["collective_order"] = json!(order_name);
        } else if let Some(r) = reports.first() {
            obj["outputs"] = json!(outputs_json(r));
            obj["comparisons"] = json!(comparisons_json(r));
            if several {
                obj["cores"] = cores_json(r);
                obj["threads"] = json!(r.threads);
            }
            if a.check_races || core_races > 0 {
                obj["findings"] = findings_json(r);
            }
        }
        if let Some((processes, placement)) = mpi {
            obj["mpi"] = json!({"processes": processes, "placement": placement_name(placement)});
        }
        match profiles {
            [] => {}
            [(_, p)] if !several && !several_ranks => obj["profile"] = json!(p),
            ps => {
                obj["profile"] = json!(ps
                    .iter()
                    .enumerate()
                    .map(|(i, (n, p))| json!({"core": i, "subgraph": n, "profile": p}))
                    .collect::<Vec<_>>())
            }
        }
        if a.sched.schedules > 1 {
            obj["schedules"] = json!({
                "count": a.sched.schedules,
                "seed": a.sched.seed,
                "output_differences": part.diffs,
                "findings_differ": changes.iter().map(|(i, o)| json!({"schedule": i, "order": o})).collect::<Vec<_>>(),
            });
        }
        return (part.outcome(), Printed::Json(obj));
    } else {
        let label = |r: usize| {
            if several_ranks {
                format!("rank {r}: ")
            } else {
                String::new()
            }
        };
        for r in reports {
            for cmp in &r.compared {
                out!(w, "{}{}", label(r.rank), cmp.text);
            }
            for (n, p) in &r.written {
                outln!(w, "{}wrote {n} -> {p}", label(r.rank));
            }
        }
        print_summary(w, &stats);
        for r in reports {
            if several_ranks {
                out!(w, "  rank {}: ", r.rank);
                print_summary(w, &r.stats);
            }
            if several {
                for (i, (sg, st)) in r.cores.iter().enumerate() {
                    out!(
                        w,
                        "  {}core {i} ({sg}): ",
                        if several_ranks { "  " } else { "" }
                    );
                    print_summary(w, st);
                }
            }
        }
        if several_ranks {
            outln!(w,
                "  {ranks} ranks of {cores} core{} each, one thread per core; collectives folded in {order_name} order",
                if cores == 1 { "" } else { "s" },
            );
        } else if let (true, Some(r)) = (several, reports.first()) {
            outln!(
                w,
                "  {} cores on {} worker thread{}",
                cores,
                r.threads,
                if r.threads == 1 { "" } else { "s" }
            );
        }
        if let Some((processes, placement)) = mpi {
            outln!(
                w,
                "  ranks spread over {processes} MPI process{} ({})",
                if processes == 1 { "" } else { "es" },
                placement_name(placement)
            );
        }
        for n in &notes {
            outln!(w, "note: {n}");
        }
        for (n, p) in profiles {
            if several || several_ranks {
                outln!(w, "{n}:");
            }
            print_profile(w, p);
        }
        if let Some(path) = &a.trace {
            outln!(w, "trace -> {}", path.display());
        }
        for r in reports {
            print_findings(w, a, &label(r.rank), &r.findings);
        }
        print_schedules(w, a, &part.diffs, &changes);
    }
    (part.outcome(), Printed::Text(text))
}

/// The counters of every rank together (the wall time is the longest rank's).
pub(super) fn world_stats<'s>(all: impl Iterator<Item = &'s RunStats>) -> RunStats {
    let mut t = RunStats::default();
    for s in all {
        t.sched.steps += s.sched.steps;
        for (a, b) in t.sched.per_engine.iter_mut().zip(s.sched.per_engine) {
            *a += b;
        }
        t.sched.rounds = t.sched.rounds.max(s.sched.rounds);
        t.dma_bytes += s.dma_bytes;
        t.dma_transfers += s.dma_transfers;
        t.wall = t.wall.max(s.wall);
    }
    t
}

/// Each timeline with its core's name (`sg00`, or `rank1 sg00` in a run of several ranks).
pub(super) fn core_names<'t>(
    program: &Program,
    rank: Option<usize>,
    ts: &'t [Timeline],
) -> Vec<(String, &'t Timeline)> {
    ts.iter()
        .enumerate()
        .map(|(c, t)| {
            let core = program.core_name(c);
            let name = match rank {
                Some(r) => format!("rank{r} {core}"),
                None => core.to_string(),
            };
            (name, t)
        })
        .collect()
}

pub(super) fn print_profile(w: &mut String, p: &Profile) {
    outln!(
        w,
        "timeline: {:.3} µs (cost model: docs/trace.md)",
        p.makespan_ns / 1e3
    );
    outln!(
        w,
        "  {:<12} {:>7} {:>12} {:>12} {:>12}",
        "track",
        "slices",
        "busy µs",
        "wait µs",
        "idle µs"
    );
    for t in &p.tracks {
        outln!(
            w,
            "  {:<12} {:>7} {:>12.3} {:>12.3} {:>12.3}",
            t.track,
            t.slices,
            t.busy_ns / 1e3,
            t.wait_ns / 1e3,
            t.idle_ns / 1e3
        );
    }
    outln!(w, "critical path ({} slices):", p.critical_path.len());
    for c in &p.critical_path {
        outln!(
            w,
            "  {:>10.3} µs +{:>9.3} µs  {:<12} {}",
            c.start_ns / 1e3,
            c.dur_ns / 1e3,
            c.track,
            c.name
        );
    }
}

/// The race findings of one rank (`label` names it in a run of several ranks).
pub(super) fn print_findings(w: &mut String, a: &Args, label: &str, findings: &[Noted]) {
    if a.check_races {
        for f in findings {
            outln!(w, "{label}{}", f.text);
        }
        outln!(
            w,
            "{label}race check: {} finding{}",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" }
        );
    } else {
        // Races between cores are found by every run of several cores.
        for f in findings.iter().filter(|f| f.core_race) {
            outln!(w, "{label}{}", f.text);
        }
    }
}

/// The differences between the interleavings.
pub(super) fn print_schedules(
    w: &mut String,
    a: &Args,
    diffs: &[ScheduleDiff],
    changes: &[(u32, String)],
) {
    if a.sched.schedules > 1 {
        for d in diffs {
            let rank = d.rank.map(|r| format!("rank {r} ")).unwrap_or_default();
            outln!(w,
                "schedule {} ({}): {rank}output `{}` differs from the round-robin run in {} bytes, first at byte {}",
                d.schedule, d.order, d.output, d.bytes_differing, d.first_byte
            );
        }
        for (i, o) in changes {
            outln!(
                w,
                "schedule {i} ({o}): the race findings differ from the round-robin run"
            );
        }
        outln!(
            w,
            "schedules: {} interleavings, {} output difference{}",
            a.sched.schedules,
            diffs.len(),
            if diffs.len() == 1 { "" } else { "s" }
        );
    }
}
