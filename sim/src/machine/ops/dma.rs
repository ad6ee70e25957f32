//! DMA: the direct 2-D transfer (PSEUDO_DMA_DIRECT2D 0xD4) and the queue trigger
//! (PSEUDO_DMATRIGGER 0xC1). The transfer and queue machinery lives in [`crate::machine::dma`].

use tpbsim_isa::{Addr8, DmaDirect2d, DmaTrigger, Dtype};

use crate::machine::core::{queue_name, Machine};
use crate::machine::dma::{DmaDesc, DmaMem, DmaSide};
use crate::machine::fault::{Fault, Site};
use crate::machine::sync::SyncState;

impl Machine<'_> {
    /// The memory and byte offset an ADDR8 operand of PSEUDO_DMA_DIRECT2D names (C
    /// `isa/dma-encoding.md`, `assign64bitAddr`): bytes 0..3 an offset, bytes 4..6 an id, byte
    /// 7 the form. Form 0x10: the id is a variable id — the state-buffer variable's id names
    /// SBUF/PSUM with a partition-folded offset, any other a DRAM variable. Form 0x20: bytes
    /// 4..5 are an entry of the subgraph's `dge-table` variable, whose `list` gives the
    /// variable id. The register forms (0x28, the pair modifier 0x04, the move modifier 0x40)
    /// are not simulated.
    fn addr8_mem(&self, site: Site, what: &str, a: Addr8) -> Result<(DmaMem, u64), Fault> {
        let offset = a.value() & 0xFFFF_FFFF;
        let id = ((a.value() >> 32) & 0x00FF_FFFF) as u32;
        let refuse = |why: String| Fault::NotSimulated {
            site,
            name: format!("DMA `{what}` ADDR8 form 0x{:02x} ({why})", a.marker_byte()),
            engine: site.engine,
        };
        let var = match a.marker_byte() {
            0x10 => id,
            0x20 => {
                if id >> 16 != 0 {
                    return Err(Fault::exec(
                        site,
                        format!("DMA `{what}` DGE-table entry operand has byte 6 = 0x{:02x}, not 0", id >> 16),
                    ));
                }
                let entry = id as usize;
                let tables = &self.kernel().dge_tables;
                let table = match tables.as_slice() {
                    [t] => t,
                    [] => {
                        return Err(Fault::exec(
                            site,
                            format!("DMA `{what}` names DGE-table entry {entry}, but the subgraph has no dge-table variable"),
                        ))
                    }
                    _ => {
                        return Err(refuse(format!(
                            "the subgraph has {} dge-table variables; which one an entry indexes is not public",
                            tables.len()
                        )))
                    }
                };
                *table.entries.get(entry).ok_or_else(|| {
                    Fault::exec(
                        site,
                        format!(
                            "DMA `{what}` names DGE-table entry {entry}, outside `{}` ({} entries)",
                            table.name,
                            table.entries.len()
                        ),
                    )
                })?
            }
            _ => {
                return Err(refuse(
                    "C isa/dma-encoding.md gives the register forms 0x28 and the modifiers 0x04 / 0x40 without the queue state they read".into(),
                ))
            }
        };
        let mem = if var == self.kernel().sb_var {
            DmaMem::OnChip
        } else {
            DmaMem::Dram(var)
        };
        Ok((mem, offset))
    }

    #[allow(clippy::too_many_arguments)]
    fn addr8_side(
        &self,
        site: Site,
        what: &str,
        a: Addr8,
        steps: [i32; 2],
        nums: [u16; 2],
        elem: u16,
        d: Dtype,
    ) -> Result<DmaSide, Fault> {
        let (mem, addr) = self.addr8_mem(site, what, a)?;
        let format = self.format(site, &format!("{what}_dtype"), d)?;
        let eb = format.container_bytes() as u32;
        let chunk = if elem == 0 { 0x10000 } else { elem as u32 };
        if chunk % eb != 0 {
            return Err(Fault::exec(
                site,
                format!(
                    "DMA `{what}` chunk of {chunk} bytes is not whole {} elements",
                    format.name()
                ),
            ));
        }
        Ok(DmaSide {
            mem,
            addr,
            format,
            dims: vec![
                (eb as i64, chunk / eb),
                (steps[0] as i64, nums[0] as u32),
                (steps[1] as i64, nums[1] as u32),
            ],
        })
    }

    /// The queue set of the issuing engine, checked against a transfer's completion: the
    /// semaphore is one of the set's and the increment at most its queue count (NEFF doc: "If
    /// there are multiple queues in the queue set, semaphore will be incremented by num_queues
    /// amount when the transfer is complete").
    fn check_queue_set(&self, site: Site, sem: u8, inc: u8) -> Result<(), Fault> {
        let Some(q) = self
            .kernel()
            .queue_sets
            .iter()
            .find(|q| q.owner == site.engine)
        else {
            return Ok(());
        };
        if !q.semaphores.contains(&sem) {
            return Err(Fault::exec(
                site,
                format!(
                    "DMA semaphore {sem} is outside the {} engine's queue set `{}` (semaphores {:?})",
                    site.engine, q.name, q.semaphores
                ),
            ));
        }
        if u32::from(inc) > q.num_queues {
            return Err(Fault::exec(
                site,
                format!(
                    "DMA sem_increment {inc} exceeds the {} queues of `{}`",
                    q.num_queues, q.name
                ),
            ));
        }
        Ok(())
    }

    /// PSEUDO_DMA_DIRECT2D: one descriptor from the bundle's two ADDR8 sides, completed
    /// when the bundle executes by adding `sem_increment` to `semaphore` (the runtime spreads
    /// the transfer over the queue set's queues, each adding one at its completion; every
    /// wait the compiler emits is on a multiple of the set's queue count, so one addition
    /// of the whole increment is the same to every waiter). `dge_op` 0 (DIRECT2D) only, and no
    /// bound-check registers.
    pub(crate) fn dma_direct2d(
        &mut self,
        site: Site,
        x: &DmaDirect2d,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        if x.dge_op.0 != 0 {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "PSEUDO_DMA_DIRECT2D dge_op {} (G collectives/ops/rdma-gather-pseudo-ops.md: 1 INDIRECT1D, 2 TRANSPOSE, 3 GATHER_TRANSPOSE)",
                    x.dge_op.0
                ),
                engine: site.engine,
            });
        }
        if x.src_bound_reg.into_bits() != 0 || x.dst_bound_reg.into_bits() != 0 {
            return Err(Fault::NotSimulated {
                site,
                name: "PSEUDO_DMA_DIRECT2D with bound-check registers".into(),
                engine: site.engine,
            });
        }
        self.check_queue_set(site, x.semaphore, x.sem_increment)?;
        let d = DmaDesc {
            from: self.addr8_side(
                site,
                "src",
                x.src,
                x.src_step,
                x.src_num,
                x.src_elem_size,
                x.in_dtype,
            )?,
            to: self.addr8_side(
                site,
                "dst",
                x.dst,
                x.dst_step,
                x.dst_num,
                x.dst_elem_size,
                x.out_dtype,
            )?,
        };
        self.dma_direct(site, &d, x.semaphore, x.sem_increment as u32, sync)
    }

    /// PSEUDO_DMATRIGGER: runs a block of the issuing engine's sidecar queue.
    pub(crate) fn dma_trigger(
        &mut self,
        site: Site,
        x: &DmaTrigger,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        // use_raw_count (G neff/format-reference.md §4.4; offset +0x2C inferred): a raw
        // descriptor count instead of a block id.
        if self.bundle_at(site)[0x2C] != 0 {
            return Err(Fault::NotSimulated {
                site,
                name: "DMATRIGGER with use_raw_count (G neff/format-reference.md §4.4 gives no raw-count semantics)".into(),
                engine: site.engine,
            });
        }
        let name = queue_name(&x.queue_name);
        self.trigger(site, site.engine, &name, x.block_id, sync)
    }
}
