//! Batch validation of a stream: bounded chunks of 10,000 bundles (the compiler's
//! `flushISAChecks` batch size) checked in parallel with rayon, results collected in stream
//! order so the output — and the first error — is the same for any number of threads.
//!
//! Each bundle first goes through the silent gate (no allocation); only a failing bundle is
//! re-run through the collecting twin to name its failures. Rules that apply but cannot be
//! decided are summarised once per (rule, opcode) with a count and their first occurrence.

use rayon::prelude::*;
use tpbsim_isa::{Bundle, Engine, Gen, BUNDLE_SIZE};

use super::cascade::{check_collect, check_silent};
use super::report::{to_diagnostic, BundleLoc};
use super::rule::{Failure, Outcome, Rule};
use crate::diag::{Diagnostic, Mode};

/// Bundles per parallel work item (`enqueueISAChecks` flushes every 10,000 records).
pub const CHUNK: usize = 10_000;

/// What stream is being validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// File name for diagnostics.
    pub file: Option<String>,
    /// Target generation (v2, v3 or v4).
    pub gen: Gen,
    /// Engine whose stream this is.
    pub engine: Engine,
}

/// The result of validating one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamReport {
    /// Diagnostics in stream order, then rule order (not-checked summaries sit at their
    /// first occurrence, after that bundle's errors).
    pub diagnostics: Vec<Diagnostic>,
    /// Bundles examined (all of them unless fail-fast stopped early).
    pub bundles: u64,
    /// Bundles with at least one error.
    pub invalid: u64,
    /// Bundles with at least one applicable rule not checked.
    pub unchecked: u64,
}

impl StreamReport {
    /// True when some bundle is invalid.
    pub fn has_errors(&self) -> bool {
        self.invalid > 0
    }
}

#[derive(Clone, Copy)]
struct NotChecked {
    rule: &'static Rule,
    opcode: u8,
    first: u64,
    count: u64,
}

#[derive(Default)]
struct ChunkOut {
    failing: Vec<(u64, Vec<Failure>)>,
    not_checked: Vec<NotChecked>,
    unchecked_bundles: u64,
}

fn note(nc: &mut Vec<NotChecked>, rule: &'static Rule, opcode: u8, index: u64) {
    match nc
        .iter_mut()
        .find(|n| std::ptr::eq(n.rule, rule) && n.opcode == opcode)
    {
        Some(n) => n.count += 1,
        None => nc.push(NotChecked {
            rule,
            opcode,
            first: index,
            count: 1,
        }),
    }
}

fn check_chunk(gen: Gen, engine: Engine, base: u64, chunk: &[Bundle]) -> ChunkOut {
    let mut out = ChunkOut::default();
    for (i, b) in chunk.iter().enumerate() {
        let s = check_silent(gen, engine, b);
        if !s.failed && !s.unchecked {
            continue;
        }
        let index = base + i as u64;
        if s.unchecked {
            out.unchecked_bundles += 1;
        }
        if s.failed {
            let all = check_collect(gen, engine, b);
            let mut fails = Vec::new();
            for f in all {
                match f.outcome {
                    Outcome::Fail => fails.push(f),
                    Outcome::NotChecked => note(&mut out.not_checked, f.rule, b.opcode(), index),
                }
            }
            out.failing.push((index, fails));
        } else {
            for r in s.not_checked_rules() {
                note(&mut out.not_checked, r, b.opcode(), index);
            }
        }
    }
    out
}

/// Validate `bundles` (the whole stream) in chunks of [`CHUNK`] on the current rayon pool.
/// Use a local `rayon::ThreadPool` and `install` to choose the thread count; the output is
/// identical for any count. In [`Mode::FailFast`] only the earliest error is reported.
pub fn validate_stream(bundles: &[Bundle], spec: &StreamSpec, mode: Mode) -> StreamReport {
    let gen = spec.gen;
    let engine = spec.engine;
    let chunks: Vec<(u64, &[Bundle])> = bundles
        .chunks(CHUNK)
        .enumerate()
        .map(|(k, c)| ((k * CHUNK) as u64, c))
        .collect();
    let wave = match mode {
        Mode::CollectAll => chunks.len().max(1),
        Mode::FailFast => (rayon::current_num_threads() * 2).max(1),
    };
    let mut outs: Vec<ChunkOut> = Vec::with_capacity(chunks.len());
    let mut examined = 0u64;
    for w in chunks.chunks(wave) {
        let got: Vec<ChunkOut> = w
            .par_iter()
            .map(|(base, c)| check_chunk(gen, engine, *base, c))
            .collect();
        examined += w.iter().map(|(_, c)| c.len() as u64).sum::<u64>();
        let stop = mode == Mode::FailFast && got.iter().any(|o| !o.failing.is_empty());
        outs.extend(got);
        if stop {
            break;
        }
    }
    let loc = |index: u64| BundleLoc {
        file: spec.file.clone(),
        engine: Some(engine),
        index,
        offset: index * BUNDLE_SIZE as u64,
    };
    let mut report = StreamReport {
        bundles: examined,
        ..Default::default()
    };
    if mode == Mode::FailFast {
        if let Some((index, fails)) = outs.iter().flat_map(|o| o.failing.iter()).next() {
            let b = &bundles[*index as usize];
            report.invalid = 1;
            report.bundles = index + 1;
            if let Some(f) = fails.first() {
                report
                    .diagnostics
                    .push(to_diagnostic(gen, b, f, &loc(*index)));
            }
            return report;
        }
    }
    // Errors in stream order; not-checked summaries merged across chunks.
    let mut nc: Vec<NotChecked> = Vec::new();
    let mut diags: Vec<(u64, u8, Diagnostic)> = Vec::new();
    for o in &outs {
        report.unchecked += o.unchecked_bundles;
        for (index, fails) in &o.failing {
            report.invalid += 1;
            let b = &bundles[*index as usize];
            for f in fails {
                diags.push((*index, 0, to_diagnostic(gen, b, f, &loc(*index))));
            }
        }
        for n in &o.not_checked {
            match nc
                .iter_mut()
                .find(|m| std::ptr::eq(m.rule, n.rule) && m.opcode == n.opcode)
            {
                Some(m) => m.count += n.count,
                None => nc.push(*n),
            }
        }
    }
    for n in &nc {
        let b = &bundles[n.first as usize];
        let f = Failure {
            rule: n.rule,
            field: super::header::OPCODE,
            found: n.opcode as u64,
            allowed: super::rule::Allowed::Text(""),
            outcome: Outcome::NotChecked,
            gate: n.rule.gate,
        };
        // Re-derive the precise failure (field, allowed) from the first occurrence.
        let precise = check_collect(gen, engine, b)
            .into_iter()
            .find(|g| g.outcome == Outcome::NotChecked && std::ptr::eq(g.rule, n.rule))
            .unwrap_or(f);
        let mut d = to_diagnostic(gen, b, &precise, &loc(n.first));
        d.message.push_str(&format!(
            "; {} bundle(s) with opcode {:#04x} in this stream, first shown",
            n.count, n.opcode
        ));
        diags.push((n.first, 1, d));
    }
    diags.sort_by_key(|(i, k, _)| (*i, *k));
    report.diagnostics = diags.into_iter().map(|(_, _, d)| d).collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Severity;

    /// EventSemaphore: legal on every engine, with a format gate.
    fn nop() -> Bundle {
        let mut b = Bundle::ZERO;
        b.0[0] = 0xA0;
        b.0[1] = 0x10;
        b
    }

    fn stream(n: usize, bad: &[usize]) -> Vec<Bundle> {
        let mut v = vec![nop(); n];
        for &i in bad {
            v[i].0[1] = 0x00;
            v[i].0[4] = 0x09;
        }
        // An opcode with no public gate, twice.
        v[5].0[0] = 0x68;
        v[n - 1].0[0] = 0x68;
        v
    }

    fn run(v: &[Bundle], threads: usize, mode: Mode) -> StreamReport {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let spec = StreamSpec {
            file: Some("Pool.bin".into()),
            gen: Gen::V3,
            engine: Engine::Pool,
        };
        pool.install(|| validate_stream(v, &spec, mode))
    }

    #[test]
    fn deterministic_across_threads_and_ordered() {
        let v = stream(35_000, &[12_345, 7, 29_999]);
        let a = run(&v, 1, Mode::CollectAll);
        let b = run(&v, 4, Mode::CollectAll);
        assert_eq!(a, b);
        assert_eq!(a.invalid, 3);
        assert_eq!(a.bundles, 35_000);
        let idx: Vec<u64> = a
            .diagnostics
            .iter()
            .map(|d| d.location.index.unwrap())
            .collect();
        let mut sorted = idx.clone();
        sorted.sort();
        assert_eq!(idx, sorted);
        // Bundle 7 has two failures (inst_word_len, wait mode), in rule order.
        let d7: Vec<_> = a
            .diagnostics
            .iter()
            .filter(|d| d.location.index == Some(7))
            .collect();
        assert_eq!(d7.len(), 2);
        assert_eq!(d7[0].rule, "has_valid_inst_len");
        assert_eq!(d7[0].location.offset, Some(7 * 64));
        assert_eq!(d7[0].code, Some(1000));
        // One not-checked summary for the two GATHER bundles, at the first one.
        let nc: Vec<_> = a
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::NotChecked)
            .collect();
        assert_eq!(nc.len(), 1);
        assert_eq!(nc[0].location.index, Some(5));
        assert!(nc[0].message.contains("2 bundle(s)"), "{}", nc[0].message);
    }

    #[test]
    fn fail_fast_reports_the_earliest_error() {
        let v = stream(35_000, &[29_999, 12_345]);
        for t in [1, 3] {
            let r = run(&v, t, Mode::FailFast);
            assert_eq!(r.diagnostics.len(), 1);
            assert_eq!(r.diagnostics[0].location.index, Some(12_345));
            assert_eq!(r.diagnostics[0].rule, "has_valid_inst_len");
        }
    }

    #[test]
    fn valid_stream_has_no_errors() {
        let v = vec![nop(); 20_001];
        let r = run(&v, 2, Mode::CollectAll);
        assert!(!r.has_errors() && r.diagnostics.is_empty());
    }
}
