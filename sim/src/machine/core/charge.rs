//! What a run charges to its budgets: operands, transfers, collectives, the timeline and
//! the race check's shadow memory.

use super::Machine;
use crate::machine::budget::{self, Budget, Exceeded};
use crate::machine::fault::{Fault, Site};
use crate::machine::race::ShadowFull;

impl<'k> Machine<'k> {
    /// The budget: what the run has charged against its limits.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Charge `bytes` of memory the caller holds for this run (copies of outputs, ...).
    pub fn charge_memory(&mut self, what: &str, bytes: u64) -> Result<(), Exceeded> {
        self.budget.charge_memory(|| what.to_string(), bytes)
    }

    /// Charge the timeline entries and the race check's growing records made since the last
    /// charge (at `site`).
    pub(super) fn charge_timeline(&mut self, site: Site) -> Result<(), Fault> {
        let Some(c) = self.race.as_ref() else {
            return Ok(());
        };
        let records = c.growing_records();
        let entries = c
            .timeline
            .as_ref()
            .map_or(0, |t| (t.slices.len() + t.flows.len()) as u64);
        self.budget
            .charge_growth(
                || format!("the race check's records ({records} releases and origins)"),
                records,
                &mut self.records_charged,
                budget::RACE_RECORD_BYTES,
            )
            .and_then(|()| {
                self.budget.charge_growth(
                    || format!("the timeline ({entries} slices and flows)"),
                    entries,
                    &mut self.timeline_charged,
                    budget::TIMELINE_ENTRY_BYTES,
                )
            })
            .map_err(|e| Fault::budget(site, e))
    }

    /// Check that an operand of `bytes` bytes fits the memory budget as working memory, and
    /// charge its bytes as work to the step budget (one step per 64 bytes, as a DMA's), so
    /// that the budget bounds the time a bundle takes, not only the bundles issued.
    pub(crate) fn check_operand(&self, site: Site, name: &str, bytes: u64) -> Result<(), Fault> {
        self.budget
            .check_memory(
                || format!("operand `{name}` ({bytes} bytes, working memory)"),
                bytes.saturating_mul(budget::OPERAND_EXPANSION),
            )
            .map_err(|e| Fault::budget(site, e))?;
        let work = self.work.get().saturating_add(budget::dma_steps(bytes));
        if self.bundles.saturating_add(work) > self.max_steps {
            return Err(Fault::StepBudget {
                budget: self.max_steps,
                bundles: self.bundles,
                dma_steps: work,
                positions: format!("{site}, operand `{name}` spanning {bytes} bytes"),
            });
        }
        self.work.set(work);
        Ok(())
    }

    /// The memory budget's room for the race check's shadow memory, when it tracks memory.
    pub(super) fn shadow_room(&self) -> Option<u64> {
        self.race.as_ref().filter(|c| c.tracks_memory())?;
        Some(
            self.budget
                .limits
                .max_memory
                .saturating_sub(self.budget.memory()),
        )
    }

    /// Charge the shadow segments created since the last charge and credit those merged away;
    /// an update `r` that had no room for its segments (beside `working` bytes of working
    /// memory) is a budget fault at `site`.
    pub(super) fn charge_shadow(
        &mut self,
        site: Site,
        r: Result<(), ShadowFull>,
        working: u64,
    ) -> Result<(), Fault> {
        let Some(c) = self.race.as_ref() else {
            return Ok(());
        };
        let live = c.shadow_segments();
        let per = budget::SHADOW_SEGMENT_BYTES;
        let what = |n: u64| format!("the race check's shadow memory ({n} segments of {per} bytes)");
        if live >= self.shadow_charged {
            let grown = (live - self.shadow_charged).saturating_mul(per);
            self.budget
                .charge_memory(|| what(live), grown)
                .map_err(|e| Fault::budget(site, e))?;
        } else {
            self.budget
                .release_memory((self.shadow_charged - live).saturating_mul(per));
        }
        self.shadow_charged = live;
        r.map_err(|full| {
            Fault::budget(
                site,
                Exceeded {
                    resource: budget::Resource::Memory,
                    what: what(full.segments),
                    needed: full
                        .segments
                        .saturating_sub(live)
                        .saturating_mul(per)
                        .saturating_add(working),
                    used: self.budget.memory(),
                    limit: self.budget.limits.max_memory,
                },
            )
        })
    }

    /// Charge `bytes` a transfer named `what` moves at `site`, before anything moves: the
    /// bytes against the DMA budget, their steps against the step budget.
    pub(super) fn charge_transfer(
        &mut self,
        site: Site,
        what: &str,
        bytes: u64,
    ) -> Result<(), Fault> {
        let steps = budget::dma_steps(bytes);
        if self
            .bundles
            .saturating_add(self.work.get())
            .saturating_add(steps)
            > self.max_steps
        {
            return Err(Fault::StepBudget {
                budget: self.max_steps,
                bundles: self.bundles,
                dma_steps: self.work.get().saturating_add(steps),
                positions: format!("{site}, {what} moving {bytes} bytes"),
            });
        }
        self.budget
            .charge_dma(|| what.to_string(), bytes)
            .map_err(|e| Fault::budget(site, e))?;
        self.work.set(self.work.get() + steps);
        Ok(())
    }

    /// Charge the copy of a shared variable that the last write at `site` (by `what`) made.
    pub(crate) fn charge_copied(&mut self, site: Site, what: &str) -> Result<(), Fault> {
        let copied = self.dram.take_copied();
        if copied > 0 {
            self.budget
                .charge_memory(
                    || format!("{what}: this core's copy of a shared variable it writes"),
                    copied,
                )
                .map_err(|e| Fault::budget(site, e))?;
        }
        Ok(())
    }

    /// Charge `bytes` moved by a collective at `site` ([`Machine::charge_transfer`]) and count
    /// them with the DMA counters.
    pub(crate) fn charge_collective(&mut self, site: Site, bytes: u64) -> Result<(), Fault> {
        self.charge_transfer(site, "collective", bytes)?;
        self.dma_bytes += bytes;
        self.dma_transfers += 1;
        Ok(())
    }
}
