//! Semaphores, event bits and the wait/update semantics of the events block.
//!
//! Every bundle carries an events block at bytes 4..11: one wait (mode, index, value) and one
//! update (mode, index, sharing the value). EventSemaphore (0xA0) adds a second wait and its own
//! update in the extended block at +0x20..+0x2B. The model:
//!
//! * A bundle issues only when all of its waits hold; otherwise its engine is blocked on it.
//! * `*_THEN_CLEAR` / `*_THEN_SET` event waits flip the bit when the wait is satisfied, at issue.
//! * `_READ` updates apply at issue, before the bundle's effects; `_COMPLETE` updates apply after
//!   its effects are visible in memory (for a DMA: after the transfer).
//! * `REG` forms (mode | 0x80) take the compare or update value from the issuing engine's
//!   register named by the value field instead of the immediate.
//! * Semaphores are 32-bit and wrap on overflow/underflow.

use std::fmt;

/// Number of semaphores per NeuronCore.
pub const NUM_SEMAPHORES: usize = 256;
/// Number of event bits per NeuronCore.
pub const NUM_EVENTS: usize = 256;

/// Semaphores and event bits shared by all engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncState {
    /// Semaphore values.
    pub sems: [u32; NUM_SEMAPHORES],
    events: [u64; NUM_EVENTS / 64],
}

impl Default for SyncState {
    fn default() -> Self {
        SyncState {
            sems: [0; NUM_SEMAPHORES],
            events: [0; NUM_EVENTS / 64],
        }
    }
}

impl SyncState {
    /// Event bit `i`.
    #[inline]
    pub fn event(&self, i: u8) -> bool {
        self.events[i as usize >> 6] >> (i & 63) & 1 == 1
    }

    /// Set or clear event bit `i`.
    #[inline]
    pub fn set_event(&mut self, i: u8, v: bool) {
        let w = &mut self.events[i as usize >> 6];
        if v {
            *w |= 1 << (i & 63);
        } else {
            *w &= !(1 << (i & 63));
        }
    }
}

/// Semaphore comparison of a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `sem == v`.
    Eq,
    /// `sem < v`.
    Lt,
    /// `sem <= v`.
    Le,
    /// `sem > v`.
    Gt,
    /// `sem >= v`.
    Ge,
}

impl Cmp {
    fn holds(self, a: u32, b: u32) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// An immediate or a register of the issuing engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// Immediate value.
    Imm(u32),
    /// Register id.
    Reg(u8),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Imm(v) => write!(f, "{v}"),
            Operand::Reg(r) => write!(f, "r{r}"),
        }
    }
}

/// One wait condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Wait until `sem[idx] <cmp> rhs`.
    Sem {
        /// Semaphore index.
        idx: u8,
        /// Comparison.
        cmp: Cmp,
        /// Right-hand side.
        rhs: Operand,
    },
    /// Wait until event `idx` equals `until`; then, when `flip`, invert it.
    Event {
        /// Event index.
        idx: u8,
        /// The state waited for (true = set).
        until: bool,
        /// Invert the bit once the wait is satisfied (`SET_THEN_CLEAR`, `CLEAR_THEN_SET`).
        flip: bool,
    },
}

/// What an update does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOp {
    /// Set event `idx`.
    EventSet,
    /// Clear event `idx`.
    EventClear,
    /// `sem[idx] += 1`.
    SemInc,
    /// `sem[idx] -= 1`.
    SemDec,
    /// `sem[idx] += value`.
    SemAdd(Operand),
    /// `sem[idx] -= value`.
    SemSub(Operand),
    /// `sem[idx] = value`.
    SemWrite(Operand),
}

/// When an update takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// At issue (`_READ`).
    Read,
    /// After the bundle's effects (`_COMPLETE`).
    Complete,
}

/// One update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Update {
    /// Semaphore or event index.
    pub idx: u8,
    /// Operation.
    pub op: UpdateOp,
    /// When it applies.
    pub when: When,
}

/// An events-block mode byte with no defined meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// Unknown WAIT_MODE value.
    #[error("unknown wait mode 0x{0:02x}")]
    WaitMode(u8),
    /// Unknown UPDATE_MODE value.
    #[error("unknown update mode 0x{0:02x}")]
    UpdateMode(u8),
}

impl Wait {
    /// The wait encoded by (mode, idx, value) bytes; `None` for WAIT_MODE NONE.
    pub fn from_wire(mode: u8, idx: u8, value: u32) -> Result<Option<Wait>, SyncError> {
        let reg = mode & 0x80 != 0;
        let rhs = if reg {
            Operand::Reg(value as u8)
        } else {
            Operand::Imm(value)
        };
        let sem = |cmp| Ok(Some(Wait::Sem { idx, cmp, rhs }));
        let evt = |until, flip| Ok(Some(Wait::Event { idx, until, flip }));
        use tpbsim_isa::WaitMode as W;
        match W(mode) {
            W::NONE => Ok(None),
            W::SEM_EQ_IMM | W::SEM_EQ_REG => sem(Cmp::Eq),
            W::SEM_LT | W::SEM_LT_REG => sem(Cmp::Lt),
            W::SEM_LE | W::SEM_LE_REG => sem(Cmp::Le),
            W::SEM_GT | W::SEM_GT_REG => sem(Cmp::Gt),
            W::SEM_GE_IMM | W::SEM_GE_REG => sem(Cmp::Ge),
            W::EVT_SET => evt(true, false),
            W::EVT_SET_THEN_CLEAR => evt(true, true),
            W::EVT_CLEAR => evt(false, false),
            W::EVT_CLEAR_THEN_SET => evt(false, true),
            _ => Err(SyncError::WaitMode(mode)),
        }
    }

    /// True when the wait holds; `regs` are the issuing engine's registers.
    pub fn holds(&self, s: &SyncState, regs: &[u32]) -> bool {
        match *self {
            Wait::Sem { idx, cmp, rhs } => cmp.holds(s.sems[idx as usize], operand(rhs, regs)),
            Wait::Event { idx, until, .. } => s.event(idx) == until,
        }
    }

    /// Side effect of a satisfied wait (event flip).
    pub fn on_satisfied(&self, s: &mut SyncState) {
        if let Wait::Event {
            idx,
            until,
            flip: true,
        } = *self
        {
            s.set_event(idx, !until);
        }
    }

    /// A sentence naming what is waited for and the current value.
    pub fn describe(&self, s: &SyncState, regs: &[u32]) -> String {
        match *self {
            Wait::Sem { idx, cmp, rhs } => {
                let cur = s.sems[idx as usize];
                match rhs {
                    Operand::Imm(v) => {
                        format!("semaphore {idx} {} {v} (current value {cur})", cmp.symbol())
                    }
                    Operand::Reg(r) => format!(
                        "semaphore {idx} {} r{r} = {} (current value {cur})",
                        cmp.symbol(),
                        operand(rhs, regs)
                    ),
                }
            }
            Wait::Event { idx, until, .. } => format!(
                "event {idx} {} (currently {})",
                if until { "set" } else { "clear" },
                if s.event(idx) { "set" } else { "clear" }
            ),
        }
    }
}

/// The value of `o` for an engine with registers `regs`.
pub(crate) fn operand(o: Operand, regs: &[u32]) -> u32 {
    match o {
        Operand::Imm(v) => v,
        Operand::Reg(r) => regs.get(r as usize).copied().unwrap_or(0),
    }
}

impl Update {
    /// The update encoded by (mode, idx, value) bytes; `None` for UPDATE_MODE NONE.
    pub fn from_wire(mode: u8, idx: u8, value: u32) -> Result<Option<Update>, SyncError> {
        let reg = mode & 0x80 != 0;
        let v = if reg {
            Operand::Reg(value as u8)
        } else {
            Operand::Imm(value)
        };
        use tpbsim_isa::UpdateMode as U;
        use UpdateOp::*;
        use When::{Complete, Read};
        let (op, when) = match U(mode) {
            U::NONE => return Ok(None),
            U::EVT_SET_READ => (EventSet, Read),
            U::EVT_SET_COMPLETE => (EventSet, Complete),
            U::EVT_CLR_READ => (EventClear, Read),
            U::EVT_CLR_COMPLETE => (EventClear, Complete),
            U::SEM_INC_READ => (SemInc, Read),
            U::SEM_INC_COMPLETE => (SemInc, Complete),
            U::SEM_DEC_READ => (SemDec, Read),
            U::SEM_DEC_COMPLETE => (SemDec, Complete),
            U::SEM_ADD_IMM_READ | U::SEM_ADD_REG_READ => (SemAdd(v), Read),
            U::SEM_ADD_IMM_COMPLETE | U::SEM_ADD_REG_COMPLETE => (SemAdd(v), Complete),
            U::SEM_SUB_IMM_READ | U::SEM_SUB_REG_READ => (SemSub(v), Read),
            U::SEM_SUB_IMM_COMPLETE | U::SEM_SUB_REG_COMPLETE => (SemSub(v), Complete),
            U::SEM_WR_IMM_READ | U::SEM_WR_REG_READ => (SemWrite(v), Read),
            U::SEM_WR_IMM_COMPLETE | U::SEM_WR_REG_COMPLETE => (SemWrite(v), Complete),
            _ => return Err(SyncError::UpdateMode(mode)),
        };
        Ok(Some(Update { idx, op, when }))
    }

    /// The update as a phrase (`semaphore 5 += 1 at completion`).
    pub fn describe(&self) -> String {
        let i = self.idx;
        let what = match self.op {
            UpdateOp::EventSet => format!("event {i} set"),
            UpdateOp::EventClear => format!("event {i} clear"),
            UpdateOp::SemInc => format!("semaphore {i} += 1"),
            UpdateOp::SemDec => format!("semaphore {i} -= 1"),
            UpdateOp::SemAdd(v) => format!("semaphore {i} += {v}"),
            UpdateOp::SemSub(v) => format!("semaphore {i} -= {v}"),
            UpdateOp::SemWrite(v) => format!("semaphore {i} = {v}"),
        };
        match self.when {
            When::Read => format!("{what} at issue"),
            When::Complete => format!("{what} at completion"),
        }
    }

    /// Apply the update.
    pub fn apply(&self, s: &mut SyncState, regs: &[u32]) {
        let i = self.idx as usize;
        match self.op {
            UpdateOp::EventSet => s.set_event(self.idx, true),
            UpdateOp::EventClear => s.set_event(self.idx, false),
            UpdateOp::SemInc => s.sems[i] = s.sems[i].wrapping_add(1),
            UpdateOp::SemDec => s.sems[i] = s.sems[i].wrapping_sub(1),
            UpdateOp::SemAdd(v) => s.sems[i] = s.sems[i].wrapping_add(operand(v, regs)),
            UpdateOp::SemSub(v) => s.sems[i] = s.sems[i].wrapping_sub(operand(v, regs)),
            UpdateOp::SemWrite(v) => s.sems[i] = operand(v, regs),
        }
    }
}

/// The synchronisation of one bundle: up to two waits and up to two updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Waits; all must hold.
    pub waits: [Option<Wait>; 2],
    /// Updates, applied in order at their point.
    pub updates: [Option<Update>; 2],
}

impl Events {
    /// Events of a decoded bundle: its events block, plus the extended block of EventSemaphore.
    pub fn from_isa(
        ev: &tpbsim_isa::Events,
        ext: Option<&tpbsim_isa::EventsExt>,
    ) -> Result<Events, SyncError> {
        Ok(Events {
            waits: [
                Wait::from_wire(ev.wait_mode.0, ev.wait_idx, ev.semaphore_value)?,
                ext.map(|x| Wait::from_wire(x.wait_mode.0, x.wait_idx, x.sem_wait_value))
                    .transpose()?
                    .flatten(),
            ],
            updates: [
                Update::from_wire(ev.update_mode.0, ev.update_idx, ev.semaphore_value)?,
                ext.map(|x| Update::from_wire(x.update_mode.0, x.update_idx, x.sem_update_value))
                    .transpose()?
                    .flatten(),
            ],
        })
    }

    /// Events of a decoded bundle: its events block, plus the extended block an
    /// EventSemaphore (0xA0) carries at +0x20..+0x2B.
    pub fn of_inst(inst: &tpbsim_isa::Inst) -> Result<Events, SyncError> {
        let ext = match inst {
            tpbsim_isa::Inst::EventSemaphore(x) => Some(&x.events_ext),
            _ => None,
        };
        Events::from_isa(&inst.events(), ext)
    }

    /// The first wait that does not hold.
    pub fn blocking(&self, s: &SyncState, regs: &[u32]) -> Option<&Wait> {
        self.waits.iter().flatten().find(|w| !w.holds(s, regs))
    }

    /// Apply the side effects of the satisfied waits, then the `_READ` updates.
    pub fn issue(&self, s: &mut SyncState, regs: &[u32]) {
        for w in self.waits.iter().flatten() {
            w.on_satisfied(s);
        }
        self.apply(When::Read, s, regs);
    }

    /// Apply the `_COMPLETE` updates.
    pub fn complete(&self, s: &mut SyncState, regs: &[u32]) {
        self.apply(When::Complete, s, regs);
    }

    /// The updates of this bundle (index `pc`) and the flips of its waits, for the wait-for
    /// graph.
    pub fn pending_updates(&self, pc: usize) -> Vec<crate::machine::waitfor::PendingUpdate> {
        use crate::machine::waitfor::{PendingUpdate, SyncRef};
        let mut v = Vec::new();
        for w in self.waits.iter().flatten() {
            if let Wait::Event {
                idx,
                until,
                flip: true,
            } = *w
            {
                v.push(PendingUpdate {
                    target: SyncRef::Event {
                        index: idx,
                        set: !until,
                    },
                    index: pc,
                    via: format!("event {idx} flipped by its wait"),
                });
            }
        }
        for u in self.updates.iter().flatten() {
            v.push(PendingUpdate {
                target: SyncRef::of_update(u.idx, u.op),
                index: pc,
                via: u.describe(),
            });
        }
        v
    }

    fn apply(&self, when: When, s: &mut SyncState, regs: &[u32]) {
        for u in self.updates.iter().flatten().filter(|u| u.when == when) {
            u.apply(s, regs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_update_reads_as_a_phrase() {
        use UpdateOp::*;
        let cases = [
            (EventSet, When::Read, "event 5 set at issue"),
            (EventClear, When::Complete, "event 5 clear at completion"),
            (SemInc, When::Complete, "semaphore 5 += 1 at completion"),
            (SemDec, When::Read, "semaphore 5 -= 1 at issue"),
            (
                SemAdd(Operand::Imm(3)),
                When::Complete,
                "semaphore 5 += 3 at completion",
            ),
            (
                SemSub(Operand::Reg(2)),
                When::Read,
                "semaphore 5 -= r2 at issue",
            ),
            (
                SemWrite(Operand::Imm(0)),
                When::Complete,
                "semaphore 5 = 0 at completion",
            ),
        ];
        for (op, when, text) in cases {
            assert_eq!(Update { idx: 5, op, when }.describe(), text);
        }
    }

    #[test]
    fn wait_modes() {
        let mut s = SyncState::default();
        s.sems[3] = 5;
        let regs = [0u32, 7];
        let w = |m, v| Wait::from_wire(m, 3, v).unwrap().unwrap();
        assert!(w(1, 5).holds(&s, &regs));
        assert!(!w(2, 5).holds(&s, &regs));
        assert!(w(3, 5).holds(&s, &regs));
        assert!(w(4, 4).holds(&s, &regs));
        assert!(!w(4, 5).holds(&s, &regs), "5 > 5 does not hold");
        assert!(w(5, 5).holds(&s, &regs));
        assert!(!w(5, 6).holds(&s, &regs));
        // SEM_GE_REG: compare with r1 = 7.
        let r = w(0x85, 1);
        assert!(!r.holds(&s, &regs));
        assert_eq!(
            r.describe(&s, &regs),
            "semaphore 3 >= r1 = 7 (current value 5)"
        );
        assert_eq!(Wait::from_wire(0, 9, 9), Ok(None));
        assert_eq!(Wait::from_wire(8, 0, 0), Err(SyncError::WaitMode(8)));
        assert_eq!(Wait::from_wire(0x86, 0, 0), Err(SyncError::WaitMode(0x86)));
    }

    #[test]
    fn event_wait_then_clear() {
        let mut s = SyncState::default();
        let w = Wait::from_wire(7, 200, 0).unwrap().unwrap();
        assert!(!w.holds(&s, &[]));
        s.set_event(200, true);
        assert!(w.holds(&s, &[]));
        w.on_satisfied(&mut s);
        assert!(!s.event(200));
        let w = Wait::from_wire(15, 1, 0).unwrap().unwrap();
        assert!(w.holds(&s, &[]));
        w.on_satisfied(&mut s);
        assert!(s.event(1));
        assert!(!Wait::from_wire(14, 1, 0).unwrap().unwrap().holds(&s, &[]));
    }

    #[test]
    fn update_modes_and_timing() {
        let u = |m, v| Update::from_wire(m, 2, v).unwrap().unwrap();
        assert_eq!(u(0x13, 0).when, When::Complete);
        assert_eq!(u(0x03, 0).when, When::Read);
        let mut s = SyncState::default();
        let regs = [0, 0, 0, 40];
        u(0x15, 10).apply(&mut s, &regs); // add 10
        u(0x17, 3).apply(&mut s, &regs); // sub 3
        u(0x13, 0).apply(&mut s, &regs); // inc
        assert_eq!(s.sems[2], 8);
        u(0x99, 3).apply(&mut s, &regs); // write r3
        assert_eq!(s.sems[2], 40);
        u(0x97, 3).apply(&mut s, &regs); // sub r3
        assert_eq!(s.sems[2], 0);
        u(0x14, 0).apply(&mut s, &regs); // dec wraps
        assert_eq!(s.sems[2], u32::MAX);
        u(0x11, 0).apply(&mut s, &regs);
        assert!(s.event(2));
        u(0x02, 0).apply(&mut s, &regs);
        assert!(!s.event(2));
        assert_eq!(Update::from_wire(0x06, 0, 0), Err(SyncError::UpdateMode(6)));
        assert_eq!(
            Update::from_wire(0x83, 0, 0),
            Err(SyncError::UpdateMode(0x83))
        );
        assert_eq!(
            Update::from_wire(0x20, 0, 0),
            Err(SyncError::UpdateMode(0x20))
        );
    }

    #[test]
    fn events_block_read_vs_complete() {
        let mut b = [0u8; 64];
        b[0] = 0xA0;
        b[4] = 5; // SEM_GE_IMM
        b[5] = 1;
        b[8] = 1;
        b[0x20] = 5;
        b[0x21] = 2;
        b[0x24] = 2;
        b[0x22] = 0x15; // SEM_ADD_IMM_COMPLETE
        b[0x23] = 9;
        b[0x28] = 4;
        let decode = |b: &[u8; 64]| {
            tpbsim_isa::decode(&tpbsim_isa::Bundle(*b), tpbsim_isa::Gen::V3).unwrap()
        };
        let ev = Events::of_inst(&decode(&b)).unwrap();
        let mut s = SyncState::default();
        assert!(matches!(
            ev.blocking(&s, &[]),
            Some(Wait::Sem { idx: 1, .. })
        ));
        s.sems[1] = 1;
        assert!(matches!(
            ev.blocking(&s, &[]),
            Some(Wait::Sem { idx: 2, .. })
        ));
        s.sems[2] = 3;
        assert!(ev.blocking(&s, &[]).is_none());
        ev.issue(&mut s, &[]);
        assert_eq!(s.sems[9], 0, "a _COMPLETE update does not apply at issue");
        ev.complete(&mut s, &[]);
        assert_eq!(s.sems[9], 4);
        // Outside EventSemaphore the +0x20 block is not an events block.
        b[0] = 0xA4;
        let ev = Events::of_inst(&decode(&b)).unwrap();
        assert_eq!(ev.waits[1], None);
        assert_eq!(ev.updates[1], None);
    }

    /// The wait and update modes decoded are the spec's `WAIT_MODE` / `UPDATE_MODE` members,
    /// and nothing else decodes.
    #[test]
    fn modes_are_the_spec_members() {
        use tpbsim_isa::formats::members;
        use tpbsim_isa::spec::ByteSet;
        let waits = ByteSet::union_of(&members::WAIT_MODE);
        let updates = ByteSet::union_of(&members::UPDATE_MODE);
        for m in 0..=u8::MAX {
            assert_eq!(
                Wait::from_wire(m, 0, 0).is_ok(),
                waits.has(m),
                "wait mode {m:#04x}"
            );
            assert_eq!(
                Update::from_wire(m, 0, 0).is_ok(),
                updates.has(m),
                "update mode {m:#04x}"
            );
        }
    }
}
