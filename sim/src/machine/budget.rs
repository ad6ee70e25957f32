//! The resource budget of a run: steps, memory and DMA bytes.
//!
//! Every allocation the machine makes for a kernel (DRAM variables, the on-chip memories, the
//! race check's snapshot, the timeline's slices) and every DMA or engine operation is charged
//! against one [`Budget`] *before* it happens. A charge that does not fit is refused with an
//! [`Exceeded`] naming the resource, what asked and how much, and the run stops with a
//! `budget` fault (exit 3 from the CLI) instead of aborting on an allocation failure or running
//! for hours. The model and its defaults are documented in `docs/robustness.md`.

use std::fmt;

/// Default memory budget: 3 GiB, so that a run stays inside a 4 GiB address space together
/// with the program's own mappings.
pub const DEFAULT_MAX_MEMORY: u64 = 3 << 30;

/// Default DMA budget: 16 GiB moved by all transfers of a run.
pub const DEFAULT_MAX_DMA_BYTES: u64 = 16 << 30;

/// DMA bytes charged as one step of the step budget.
pub const DMA_BYTES_PER_STEP: u64 = 64;

/// Bytes of working memory an engine operation may use per operand byte (the operand's
/// values widened to 32-bit lanes, and the result).
pub const OPERAND_EXPANSION: u64 = 8;

/// Bytes charged per recorded timeline slice or flow (the slice, its strings, and its
/// trace-event JSON when the trace is written).
pub const TIMELINE_ENTRY_BYTES: u64 = 512;

/// Bytes charged per record the race check keeps for its reports (a release description or
/// an operand origin, with its string).
pub const RACE_RECORD_BYTES: u64 = 128;

/// Bytes charged per segment of the race check's shadow memory (an interval of bytes with its
/// last write and the last read of each agent, in its map's B-tree node): charged as an update
/// creates segments, credited back as a later write merges them.
pub const SHADOW_SEGMENT_BYTES: u64 = 160;

/// A budgeted resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    /// Bytes of memory held by the run.
    Memory,
    /// Bytes moved by DMA transfers.
    DmaBytes,
}

impl Resource {
    /// The command-line flag that raises the limit.
    pub fn flag(self) -> &'static str {
        match self {
            Resource::Memory => "--max-memory",
            Resource::DmaBytes => "--max-dma-bytes",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::DmaBytes => "DMA",
        }
    }
}

/// A charge that does not fit its budget.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Exceeded {
    /// The resource.
    pub resource: Resource,
    /// What asked (`variable \`x\``, `operand \`dst\``, `timeline`, ...).
    pub what: String,
    /// Bytes asked for.
    pub needed: u64,
    /// Bytes already charged.
    pub used: u64,
    /// The limit.
    pub limit: u64,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} budget exceeded: {} needs {} bytes, {} of the {}-byte budget already in use (raise {})",
            self.resource.name(),
            self.what,
            self.needed,
            self.used,
            self.limit,
            self.resource.flag()
        )
    }
}

/// The limits of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of memory the run may hold.
    pub max_memory: u64,
    /// Bytes all DMA transfers together may move.
    pub max_dma_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: DEFAULT_MAX_MEMORY,
            max_dma_bytes: DEFAULT_MAX_DMA_BYTES,
        }
    }
}

/// What a run has charged so far against its [`Limits`].
#[derive(Clone, Debug, Default)]
pub struct Budget {
    /// The limits.
    pub limits: Limits,
    memory: u64,
    dma_bytes: u64,
}

impl Budget {
    /// A fresh budget.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            memory: 0,
            dma_bytes: 0,
        }
    }

    /// Memory charged so far.
    pub fn memory(&self) -> u64 {
        self.memory
    }

    /// DMA bytes charged so far.
    pub fn dma_bytes(&self) -> u64 {
        self.dma_bytes
    }

    /// Check that `bytes` more of memory would fit, without charging them (working memory
    /// released when the operation ends).
    pub fn check_memory(&self, what: impl FnOnce() -> String, bytes: u64) -> Result<(), Exceeded> {
        if self
            .memory
            .checked_add(bytes)
            .is_some_and(|t| t <= self.limits.max_memory)
        {
            return Ok(());
        }
        Err(Exceeded {
            resource: Resource::Memory,
            what: what(),
            needed: bytes,
            used: self.memory,
            limit: self.limits.max_memory,
        })
    }

    /// Charge `bytes` of memory held until the run ends.
    pub fn charge_memory(
        &mut self,
        what: impl FnOnce() -> String,
        bytes: u64,
    ) -> Result<(), Exceeded> {
        self.check_memory(what, bytes)?;
        self.memory += bytes;
        Ok(())
    }

    /// Charge a collection that has grown to `count` entries of `per_entry` bytes, of which
    /// `charged` were charged before (updated on success).
    pub fn charge_growth(
        &mut self,
        what: impl FnOnce() -> String,
        count: u64,
        charged: &mut u64,
        per_entry: u64,
    ) -> Result<(), Exceeded> {
        if count > *charged {
            self.charge_memory(what, (count - *charged).saturating_mul(per_entry))?;
            *charged = count;
        }
        Ok(())
    }

    /// Return `bytes` of memory charged earlier.
    pub fn release_memory(&mut self, bytes: u64) {
        self.memory = self.memory.saturating_sub(bytes);
    }

    /// Charge a DMA transfer of `bytes`.
    pub fn charge_dma(
        &mut self,
        what: impl FnOnce() -> String,
        bytes: u64,
    ) -> Result<(), Exceeded> {
        match self.dma_bytes.checked_add(bytes) {
            Some(t) if t <= self.limits.max_dma_bytes => {
                self.dma_bytes = t;
                Ok(())
            }
            _ => Err(Exceeded {
                resource: Resource::DmaBytes,
                what: what(),
                needed: bytes,
                used: self.dma_bytes,
                limit: self.limits.max_dma_bytes,
            }),
        }
    }
}

/// Steps a DMA transfer of `bytes` costs against the step budget.
pub fn dma_steps(bytes: u64) -> u64 {
    bytes.div_ceil(DMA_BYTES_PER_STEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_refuse_what_does_not_fit() {
        let mut b = Budget::new(Limits {
            max_memory: 100,
            max_dma_bytes: 10,
        });
        b.charge_memory(|| "a".into(), 60).unwrap();
        assert!(b.check_memory(|| "t".into(), 40).is_ok());
        let e = b.charge_memory(|| "variable `b`".into(), 41).unwrap_err();
        assert_eq!(
            e.to_string(),
            "memory budget exceeded: variable `b` needs 41 bytes, 60 of the 100-byte budget already in use (raise --max-memory)"
        );
        assert_eq!(b.memory(), 60);
        assert!(b.charge_memory(|| "huge".into(), u64::MAX).is_err());
        b.release_memory(60);
        assert_eq!(b.memory(), 0);
        b.charge_dma(|| "d".into(), 10).unwrap();
        let e = b.charge_dma(|| "d".into(), 1).unwrap_err();
        assert_eq!(e.resource, Resource::DmaBytes);
        assert_eq!(dma_steps(0), 0);
        assert_eq!(dma_steps(65), 2);
    }

    #[test]
    fn growth_charges_only_the_new_entries_and_refuses_what_does_not_fit() {
        let mut b = Budget::new(Limits {
            max_memory: 100,
            max_dma_bytes: 0,
        });
        let mut charged = 0;
        // 3 entries of 10 bytes, then 5: only the 2 new ones are charged the second time.
        b.charge_growth(|| "r".into(), 3, &mut charged, 10).unwrap();
        assert_eq!((b.memory(), charged), (30, 3));
        b.charge_growth(|| "r".into(), 5, &mut charged, 10).unwrap();
        assert_eq!((b.memory(), charged), (50, 5));
        // No growth (or fewer entries): nothing charged.
        b.charge_growth(|| "r".into(), 5, &mut charged, 10).unwrap();
        b.charge_growth(|| "r".into(), 4, &mut charged, 10).unwrap();
        assert_eq!((b.memory(), charged), (50, 5));
        // Growth to exactly the limit fits; one entry more does not, and changes nothing.
        b.charge_growth(|| "r".into(), 10, &mut charged, 10)
            .unwrap();
        assert_eq!((b.memory(), charged), (100, 10));
        let e = b
            .charge_growth(|| "the records".into(), 11, &mut charged, 10)
            .unwrap_err();
        assert_eq!((e.needed, e.used, e.limit), (10, 100, 100));
        assert!(e.what.contains("the records"), "{e}");
        assert_eq!((b.memory(), charged), (100, 10));
        // A count whose bytes overflow is refused, not wrapped.
        assert!(b
            .charge_growth(|| "r".into(), u64::MAX, &mut charged, 10)
            .is_err());
    }
}
