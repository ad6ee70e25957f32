//! `sim fuzz`: generate valid, mutated and random bundles for a generation, run decode → L2 →
//! lift → L1 on each, and report the verdicts per format and every disagreement between the
//! layers as a reduced reproducer (hex bundle and both verdicts). Deterministic per seed.
//!
//! Exit 0 when the run completed (disagreements are findings, not failures), 1 with
//! `--fail-on-disagreement` when any was found, 2 on usage or I/O errors.

use std::path::PathBuf;

use serde_json::json;
use tpbsim_isa::{Engine, Gen};
use tpbsim_validate::fuzz::{self, Config, Disagreement, Report};

use crate::exit::{CliError, Outcome};

/// Arguments of `sim fuzz`.
#[derive(clap::Args)]
pub struct Args {
    /// Generation (v2, v3, v4, v5).
    #[arg(long)]
    pub arch: Gen,
    /// Only bundles of this engine's stream (pe, act, pool, dve, sp).
    #[arg(long)]
    pub engine: Option<Engine>,
    /// Number of cases.
    #[arg(long, default_value_t = 1000)]
    pub cases: u64,
    /// Seed (decimal or 0x-hex); the same seed gives the same report.
    #[arg(long, default_value = "0", value_parser = parse_seed)]
    pub seed: u64,
    /// Only this spec format (`LdWeights`, `Matmul`, ...; the format names of docs/isa.md).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,
    /// Print one JSON object (summary and disagreements) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write each reported disagreement as a 64-byte `.bin` stream into DIR.
    #[arg(long, value_name = "DIR")]
    pub write_repro: Option<PathBuf>,
    /// Reproducers kept per (format, class, rule sets) group.
    #[arg(long, default_value_t = 3)]
    pub keep: usize,
    /// Exit 1 when any disagreement was found.
    #[arg(long)]
    pub fail_on_disagreement: bool,
}

fn parse_seed(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("seed {s:?}: {e}"))
}

/// File name of a reproducer.
fn repro_name(i: usize, d: &Disagreement, gen: Gen) -> String {
    format!(
        "{i:04}-{gen}-{}-{}-{}.bin",
        d.format,
        d.engine.short(),
        d.class.slug()
    )
}

fn verdict_json(v: &fuzz::Verdict) -> serde_json::Value {
    json!({ "verdict": v.label(), "rules": v.rules() })
}

fn to_json(args: &Args, r: &Report, files: &[Option<String>]) -> serde_json::Value {
    let formats: serde_json::Map<String, serde_json::Value> = r
        .per_format
        .iter()
        .map(|(f, c)| {
            (
                f.to_string(),
                json!({
                    "cases": c.cases, "decode_errors": c.decode_errors, "both_pass": c.both_pass,
                    "both_fail": c.both_fail, "l2_only": c.l2_only, "l1_only": c.l1_only,
                    "not_checked": c.not_checked,
                }),
            )
        })
        .collect();
    let ds: Vec<serde_json::Value> = r
        .disagreements
        .iter()
        .zip(files)
        .map(|(d, f)| {
            json!({
                "class": d.class.label(), "format": d.format, "engine": d.engine.short(),
                "origin": d.origin.label(), "case": d.case, "hex": d.bundle.to_hex(),
                "original_hex": d.original.to_hex(), "l2": verdict_json(&d.l2), "l1": verdict_json(&d.l1),
                "file": f,
            })
        })
        .collect();
    json!({
        "arch": args.arch.short(), "engine": args.engine.map(|e| e.short()), "seed": args.seed,
        "cases": r.cases, "format": args.format, "per_format": formats,
        "disagreements_total": r.disagreements_total, "disagreements": ds,
    })
}

/// Run `sim fuzz`.
pub fn run(args: Args) -> Result<Outcome, CliError> {
    let cfg = Config {
        gen: args.arch,
        engine: args.engine,
        cases: args.cases,
        seed: args.seed,
        format: args.format.clone(),
        keep_per_group: args.keep.max(1),
    };
    let report = fuzz::run(&cfg).map_err(|e| CliError::Usage(e.to_string()))?;
    let mut files = vec![None; report.disagreements.len()];
    if let Some(dir) = &args.write_repro {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Io(format!("{}: {e}", dir.display())))?;
        for (i, d) in report.disagreements.iter().enumerate() {
            let p = dir.join(repro_name(i, d, args.arch));
            tpbsim_neff::write_atomic(&p, &d.bundle.0)
                .map_err(|e| CliError::Io(format!("{}: {e}", p.display())))?;
            files[i] = Some(p.display().to_string());
        }
    }
    if args.json {
        println!("{}", to_json(&args, &report, &files));
    } else {
        print_text(&args, &report, &files);
    }
    Ok(
        if args.fail_on_disagreement && report.disagreements_total > 0 {
            Outcome::Invalid
        } else {
            Outcome::Ok
        },
    )
}

fn print_text(args: &Args, r: &Report, files: &[Option<String>]) {
    println!(
        "sim fuzz: {} cases on {}{}{}, seed {:#x}",
        r.cases,
        args.arch,
        args.engine
            .map(|e| format!(", engine {}", e.short()))
            .unwrap_or_default(),
        args.format
            .as_deref()
            .map(|f| format!(", format {f}"))
            .unwrap_or_default(),
        args.seed
    );
    println!(
        "{:<24} {:>7} {:>7} {:>9} {:>9} {:>13} {:>13} {:>11}",
        "format",
        "cases",
        "undec.",
        "both pass",
        "both fail",
        "L1 ok, L2 no",
        "L2 ok, L1 no",
        "not checked"
    );
    for (f, c) in &r.per_format {
        println!(
            "{:<24} {:>7} {:>7} {:>9} {:>9} {:>13} {:>13} {:>11}",
            f,
            c.cases,
            c.decode_errors,
            c.both_pass,
            c.both_fail,
            c.l2_only,
            c.l1_only,
            c.not_checked
        );
    }
    println!(
        "disagreements: {} ({} reported)",
        r.disagreements_total,
        r.disagreements.len()
    );
    for (d, f) in r.disagreements.iter().zip(files) {
        println!(
            "{}: {} on {} (case {}, {}): L2 {}{}; L1 {}{}",
            d.class.label(),
            d.format,
            d.engine.short(),
            d.case,
            d.origin.label(),
            d.l2.label(),
            rules_text(&d.l2),
            d.l1.label(),
            rules_text(&d.l1)
        );
        println!("  {}", d.bundle.to_hex());
        if let Some(f) = f {
            println!("  written to {f}");
        }
    }
}

fn rules_text(v: &fuzz::Verdict) -> String {
    if v.rules().is_empty() {
        String::new()
    } else {
        format!(" [{}]", v.rules().join(", "))
    }
}
