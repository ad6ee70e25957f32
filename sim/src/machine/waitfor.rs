//! Deadlock diagnosis: the wait-for graph.
//!
//! Each blocked engine waits on one semaphore or event. Its possible producers are the
//! unfinished engines whose remaining bundles (the whole stream when it can branch) update that
//! semaphore or event, directly or through the DMA blocks they trigger. The graph has an edge
//! from a blocked engine to each of its producers. A blocked engine without producers waits for
//! a missing producer; a cycle of blocked engines is a circular wait. Both are named in the
//! deadlock report.

use std::fmt;

use tpbsim_isa::Engine;

use super::sync::{UpdateOp, Wait};

/// A semaphore or an event (with the state a wait needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SyncRef {
    /// Semaphore `index`.
    Semaphore {
        /// Index.
        index: u8,
    },
    /// Event `index`; `set` is the state waited for (or written).
    Event {
        /// Index.
        index: u8,
        /// Set (true) or clear (false).
        set: bool,
    },
}

impl fmt::Display for SyncRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncRef::Semaphore { index } => write!(f, "semaphore {index}"),
            SyncRef::Event { index, set } => {
                write!(f, "event {index} ({})", if *set { "set" } else { "clear" })
            }
        }
    }
}

impl SyncRef {
    /// What wait `w` waits on.
    pub fn of_wait(w: &Wait) -> SyncRef {
        match *w {
            Wait::Sem { idx, .. } => SyncRef::Semaphore { index: idx },
            Wait::Event { idx, until, .. } => SyncRef::Event {
                index: idx,
                set: until,
            },
        }
    }

    /// What an update with `op` on index `idx` changes.
    pub fn of_update(idx: u8, op: UpdateOp) -> SyncRef {
        match op {
            UpdateOp::EventSet => SyncRef::Event {
                index: idx,
                set: true,
            },
            UpdateOp::EventClear => SyncRef::Event {
                index: idx,
                set: false,
            },
            _ => SyncRef::Semaphore { index: idx },
        }
    }
}

/// An update a bundle can still make.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PendingUpdate {
    /// The semaphore or event.
    pub target: SyncRef,
    /// Bundle index (for a DMA: the trigger).
    pub index: usize,
    /// How (`semaphore 5 += 1 at completion`, `DMA queue in[0].desc[1] completion`).
    pub via: String,
}

/// A possible producer of what a blocked engine waits for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Producer {
    /// Engine whose stream holds the update (or its DMA trigger).
    pub engine: Engine,
    /// Bundle index.
    pub index: usize,
    /// How it updates.
    pub via: String,
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bundle #{} ({})", self.engine, self.index, self.via)
    }
}

/// One edge of a circular wait: `engine` waits on `on`, which the next engine would update.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CycleEdge {
    /// The waiting engine.
    pub engine: Engine,
    /// What it waits on.
    pub on: SyncRef,
}

/// Find the first cycle of the graph `edges[e] = engines e waits for`, in wire order.
pub fn find_cycle(edges: &[Vec<Engine>; Engine::COUNT]) -> Option<Vec<Engine>> {
    for start in Engine::ALL {
        // Depth-first search with an explicit path.
        let mut path: Vec<(Engine, usize)> = vec![(start, 0)];
        let mut on_path = [false; Engine::COUNT];
        let mut done = [false; Engine::COUNT];
        on_path[start as usize] = true;
        while let Some(&mut (e, ref mut next)) = path.last_mut() {
            let out = &edges[e as usize];
            if *next >= out.len() {
                on_path[e as usize] = false;
                done[e as usize] = true;
                path.pop();
                continue;
            }
            let f = out[*next];
            *next += 1;
            if f == start {
                return Some(path.iter().map(|(x, _)| *x).collect());
            }
            if !on_path[f as usize] && !done[f as usize] {
                on_path[f as usize] = true;
                path.push((f, 0));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Engine::*;

    #[test]
    fn cycles_and_self_loops() {
        let mut g: [Vec<Engine>; Engine::COUNT] = Default::default();
        g[Act as usize] = vec![Dve];
        g[Dve as usize] = vec![Act];
        g[Sp as usize] = vec![Dve];
        assert_eq!(find_cycle(&g), Some(vec![Act, Dve]));
        let mut g: [Vec<Engine>; Engine::COUNT] = Default::default();
        g[Pool as usize] = vec![Pool];
        assert_eq!(find_cycle(&g), Some(vec![Pool]));
        let mut g: [Vec<Engine>; Engine::COUNT] = Default::default();
        g[Sp as usize] = vec![Dve];
        assert_eq!(find_cycle(&g), None);
        // A longer cycle reached through a tail.
        let mut g: [Vec<Engine>; Engine::COUNT] = Default::default();
        g[Pe as usize] = vec![Act];
        g[Act as usize] = vec![Pool];
        g[Pool as usize] = vec![Dve];
        g[Dve as usize] = vec![Act];
        assert_eq!(find_cycle(&g), Some(vec![Act, Pool, Dve]));
    }
}
