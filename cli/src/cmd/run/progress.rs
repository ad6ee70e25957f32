//! The progress line shown on a terminal while a long run executes.

use super::*;

/// Whether `sim run` shows a progress bar: only on a terminal (stdout and stderr) and
/// without `--json`.
pub(super) fn shows_progress(json: bool, stdout_tty: bool, stderr_tty: bool) -> bool {
    !json && stdout_tty && stderr_tty
}

/// How long a run goes before its progress bar appears.
pub(super) const PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The progress bar of a long run on stderr: bundles issued by every core, in all and per
/// engine; it appears once the run has taken [`PROGRESS_AFTER`] and is cleared at its end.
/// The cores report from their own threads.
pub(super) struct Progress {
    pub(super) enabled: bool,
    pub(super) start: std::time::Instant,
    pub(super) state: std::sync::Mutex<(Vec<SchedStats>, Option<indicatif::ProgressBar>)>,
}

impl Progress {
    pub(super) fn new(enabled: bool, cores: usize) -> Progress {
        Progress {
            enabled,
            start: std::time::Instant::now(),
            state: std::sync::Mutex::new((vec![SchedStats::default(); cores.max(1)], None)),
        }
    }

    pub(super) fn update(&self, core: usize, st: &SchedStats) {
        if !self.enabled || self.start.elapsed() < PROGRESS_AFTER {
            return;
        }
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let (per_core, bar) = &mut *guard;
        if let Some(slot) = per_core.get_mut(core) {
            *slot = *st;
        }
        let mut all = SchedStats::default();
        for c in per_core.iter() {
            all.steps += c.steps;
            for (a, b) in all.per_engine.iter_mut().zip(c.per_engine) {
                *a += b;
            }
        }
        let bar = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {pos} bundles ({msg}) [{elapsed}] {per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        bar.set_position(all.steps);
        bar.set_message(progress_message(&all));
    }

    pub(super) fn finish(self) {
        if let Ok((_, Some(b))) = self.state.into_inner() {
            b.finish_and_clear();
        }
    }
}

/// The per-engine part of the progress line: `pe N, act N, ...` for the engines that issued.
pub(super) fn progress_message(st: &SchedStats) -> String {
    Engine::ALL
        .iter()
        .filter(|e| st.per_engine[**e as usize] > 0)
        .map(|e| format!("{} {}", e.short(), st.per_engine[*e as usize]))
        .collect::<Vec<_>>()
        .join(", ")
}
