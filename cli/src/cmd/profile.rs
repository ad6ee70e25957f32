//! `sim profile`: run a kernel on the timeline cost model (`docs/trace.md`) and print each
//! engine's and DMA queue's busy, wait and idle time and the critical path; or, with
//! `--format neuron-profile-json`, the simulated timeline in the shape of `neuron-profile view
//! --output-format json`. Outputs are written only with `--out-dir`; `--trace` also writes the
//! Chrome/Perfetto trace.

use std::path::PathBuf;

use serde_json::{json, Value};
use tpbsim_isa::text::neuron::operands_text;
use tpbsim_isa::{Engine, Gen};
use tpbsim_sim::machine::timeline::Timeline;
use tpbsim_sim::machine::Program;

use crate::cmd::kernel_args::KernelArgs;
use crate::cmd::run;
use crate::exit::{CliError, Outcome};

/// Output format of `sim profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Per-track table and the critical path.
    Text,
    /// The `sim run --json` object with a `profile` key.
    Json,
    /// `{"summary": [...], "instruction": [...], "dma": [...]}` in the shape of
    /// `neuron-profile view --output-format json` (docs/trace.md).
    NeuronProfileJson,
}

/// Arguments of `sim profile`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Also write a Chrome/Perfetto trace-event JSON of the timeline.
    #[arg(long, value_name = "OUT.json")]
    trace: Option<PathBuf>,
}

/// Run `sim profile`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let format = if a.json { Format::Json } else { a.format };
    let mut r = run::Args::with_common(a.kernel, format == Format::Json);
    r.profile = true;
    r.trace = a.trace;
    if format == Format::NeuronProfileJson {
        r.timeline_json = Some(neuron_profile_json);
    }
    run::execute(r, false)
}

/// The timeline as `neuron-profile view --output-format json` lays a device profile out:
/// a `summary` list (one object) and an `instruction` list with `timestamp` and `duration` in
/// ns, `label` (the engine), `opcode` and `operands` in the neuron dialect. DMA transfers, which
/// the real output keeps in tables of their own, go to a `dma` list. With several cores every
/// event also names its `core` and `subgraph`.
pub fn neuron_profile_json(ts: &[Timeline], program: &Program, gen: Gen) -> Value {
    let mut instructions = Vec::new();
    let mut dmas = Vec::new();
    let several = ts.len() > 1;
    let mut total_ns = 0.0f64;
    for (c, (t, kernel)) in ts.iter().zip(&program.cores).enumerate() {
        for s in &t.slices {
            let label = t.labels.get(s.agent as usize).cloned().unwrap_or_default();
            let engine = Engine::ALL
                .iter()
                .copied()
                .find(|e| *e as usize == s.agent as usize);
            let mut event = match (engine, s.bundle) {
                (Some(e), Some(i)) => {
                    let operands = kernel
                        .stream(e)
                        .get(i)
                        .map_or_else(String::new, |b| operands_text(b, gen));
                    json!({
                        "timestamp": s.start,
                        "duration": s.dur,
                        "label": label,
                        "opcode": s.name,
                        "operands": operands,
                        "pc": i,
                        "wait_time": s.waited,
                    })
                }
                _ => json!({
                    "timestamp": s.start,
                    "duration": s.dur,
                    "label": label,
                    "name": s.name,
                    "operands": s.args,
                }),
            };
            if several {
                event["core"] = json!(c);
                event["subgraph"] = json!(program.core_name(c));
            }
            if event.get("opcode").is_some() {
                instructions.push(event);
            } else {
                dmas.push(event);
            }
            total_ns = total_ns.max(s.start + s.dur);
        }
    }
    json!({
        "summary": [{
            "total_time": total_ns / 1e9,
            "event_count": instructions.len() + dmas.len(),
            "instruction_count": instructions.len(),
            "dma_count": dmas.len(),
            "arch": gen.short(),
            "cores": ts.len(),
            "source": "tpbsim timeline cost model (docs/trace.md), not a device measurement",
        }],
        "instruction": instructions,
        "dma": dmas,
    })
}
