//! DMA: the direct 2-D transfer (PSEUDO_DMA_DIRECT2D 0xD4) and the queue trigger
//! (PSEUDO_DMATRIGGER 0xC1). The transfer and queue machinery lives in [`crate::machine::dma`].

use tpbsim_isa::{Addr8, DmaDirect2d, DmaTrigger, Dtype};

use crate::machine::core::{queue_name, Machine};
use crate::machine::dma::{DmaDesc, DmaMem, DmaSide};
use crate::machine::fault::{Fault, Site};
use crate::machine::sync::SyncState;

impl Machine<'_> {
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
        if !a.is_var_id() {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "DMA `{what}` ADDR8 mode 0x{:02x} (C isa/dma-encoding.md gives the DGE forms 0x20/0x28, not the DGE queue they use)",
                    a.marker_byte()
                ),
                engine: site.engine,
            });
        }
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
        let var = ((a.value() >> 32) & 0x00FF_FFFF) as u32;
        Ok(DmaSide {
            mem: if var == 0 {
                DmaMem::OnChip
            } else {
                DmaMem::Dram(var)
            },
            addr: a.value() & 0xFFFF_FFFF,
            format,
            dims: vec![
                (eb as i64, chunk / eb),
                (steps[0] as i64, nums[0] as u32),
                (steps[1] as i64, nums[1] as u32),
            ],
        })
    }

    /// PSEUDO_DMA_DIRECT2D: one descriptor from the bundle's two ADDR8 sides.
    pub(crate) fn dma_direct2d(
        &mut self,
        site: Site,
        x: &DmaDirect2d,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
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
