//! Agents and their vector clocks.

use super::*;

/// Index of an agent (engine, DMA queue).
pub type Agent = u16;

/// The wait a flow ends in, as text.
pub(crate) struct SyncRefText;

impl SyncRefText {
    pub(crate) fn of(w: &Wait) -> String {
        match *w {
            Wait::Sem { idx, .. } => format!("semaphore {idx}"),
            Wait::Event { idx, .. } => format!("event {idx}"),
        }
    }
}

/// A vector clock over all agents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VClock(Vec<u32>);

impl VClock {
    pub(crate) fn zero(n: usize) -> VClock {
        VClock(vec![0; n])
    }
    /// The initial clock of agent `a` of `n`: its own component 1.
    pub(crate) fn unit(n: usize, a: Agent) -> VClock {
        let mut c = VClock::zero(n);
        c.raise(a, 1);
        c
    }
    #[cfg(test)]
    pub(crate) fn from_vec(v: Vec<u32>) -> VClock {
        VClock(v)
    }
    #[inline]
    pub(crate) fn get(&self, a: Agent) -> u32 {
        self.0.get(a as usize).copied().unwrap_or(0)
    }
    pub(crate) fn join(&mut self, o: &VClock) {
        for (x, y) in self.0.iter_mut().zip(&o.0) {
            *x = (*x).max(*y);
        }
    }
    /// Raise component `a` to at least `v`.
    pub(crate) fn raise(&mut self, a: Agent, v: u32) {
        if let Some(x) = self.0.get_mut(a as usize) {
            *x = (*x).max(v);
        }
    }
    /// Advance component `a`.
    pub(crate) fn tick(&mut self, a: Agent) {
        if let Some(x) = self.0.get_mut(a as usize) {
            *x = x.saturating_add(1);
        }
    }
}
