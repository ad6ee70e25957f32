//! The header's `feature_bits` (0x220) by name, the runtime's refusal of bits it does not know,
//! and the logical-core (LNC) size a NEFF asks for.
//!
//! Sources:
//! - **C-features**: `neuronx-cc/wiki/src/formats/neff-feature-flags.md` (commit 618ac057): the
//!   compiler's `writeNEFFFeatures`, one fixed bit per feature; eleven of them also push a name
//!   into `def.json` `neff_features`, the others carry the `ModuleAttribute` name of `libBIR`,
//!   and two bits have no name at all.
//! - **R-container**: `neuronx-runtime/wiki/src/neff/container.md` (commit 30e34537): with
//!   `neff_version_major == 2` the runtime refuses `feature_bits & 0x7FFFFFFFF8000000`.
//! - **R-load**: `neuronx-runtime/wiki/src/neff/load-pipeline.md` (commit b6b0bee2): bit 0x400
//!   selects the configured virtual-core size, and `dlr_kelf_stage` asserts that the number of
//!   subgraphs is 1 or that size.
//!
//! The page places the mask at `neff_header+192`; the runtime's DWARF layout (R-container) and
//! the compiler's own NEFFs put it at 0x220, which is what tpbsim reads.

use super::{Header, Neff, NeffError, Subgraph};

/// One named bit of `feature_bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureFlag {
    /// The bit (a single set bit).
    pub bit: u64,
    /// Its name: the `def.json` `neff_features` name, else the compiler's attribute name, else
    /// a **project-defined** label (marked in `source`).
    pub name: &'static str,
    /// Whether the compiler also writes `name` into `def.json` `neff_features`.
    pub in_def_json: bool,
    /// What it means.
    pub meaning: &'static str,
    /// The page (and how sure it is).
    pub source: &'static str,
}

macro_rules! flags {
    ($($bit:literal $name:literal $def:literal $meaning:literal $source:literal;)*) => {
        /// Every bit C-features names, in bit order.
        pub const FEATURE_FLAGS: &[FeatureFlag] = &[
            $(FeatureFlag { bit: $bit, name: $name, in_def_json: $def, meaning: $meaning, source: $source },)*
        ];
    };
}

flags! {
    0x2 "collective_has_offset" true "collective ops carry a CC-group offset" "C-features (ordinal 2, CERTAIN)";
    0x4 "neff_feature_custom_ops" true "GPSIMD custom-op (ucode library) kernels" "C-features (ordinal 3, CERTAIN)";
    0x8 "neff_coalesced_ccops" true "collective-compute ops coalesced across channels" "C-features (ordinal 4, CERTAIN)";
    0x10 "neff_queue_set_instances" true "DMA queue-set instances" "C-features (ordinal 5, CERTAIN)";
    0x20 "neff_has_functions" true "callable functions (a call table)" "C-features (ordinal 6, CERTAIN)";
    0x40 "neff_feature_dynamic_pwp" true "runtime-programmed Pool-window program" "C-features (ordinal 7, CERTAIN)";
    0x80 "neff_feature_indirect_memcpy_32b_sem_wait" true "indirect DMA waits on a 32-bit semaphore value" "C-features (ordinal 8, CERTAIN)";
    0x100 "neff_feature_indirect_memcpy_bound_check" true "indirect DMA bounds-checks its index" "C-features (ordinal 9, CERTAIN)";
    0x200 "neff_feature_DMA_desc_higher_dim" true "3D/4D DMA descriptors" "C-features (ordinal 10, CERTAIN)";
    0x400 "neff_feature_vnc" true "logical NeuronCore of more than one physical core (vnc_nc_count > 1)" "C-features (procedural, CERTAIN)";
    0x800 "dve_perf_mode" false "DVE perf mode (arch level above 20); the page gives no name, the label is project-defined" "C-features (arch gate, CERTAIN)";
    0x1000 "neff_feature_DGE" false "dynamic DMA (descriptor generation engine)" "C-features (ordinal 11, CERTAIN)";
    0x2000 "neff_feature_POOL_RSQRT" false "Pool reciprocal square root" "C-features (ordinal 12, CERTAIN)";
    0x4000 "neff_feature_remote_sem" true "DMA blocks update another core's semaphore" "C-features (procedural, CERTAIN)";
    0x8000 "neff_feature_DGE_cast" false "dynamic DMA with a fused dtype cast" "C-features (ordinal 13, CERTAIN)";
    0x1_0000 "neff_feature_vector_DGE" false "vector dynamic DMA" "C-features (ordinal 14, CERTAIN)";
    0x2_0000 "neff_feature_embedding_stride32" false "indirect save-accumulate with stride 32" "C-features (ordinal 15, CERTAIN)";
    0x10_0000 "neff_feature_SQI_no_rearm" false "queue-instance switch without re-arm" "C-features (ordinal 20, CERTAIN)";
    0x20_0000 "neff_feature_hardware_DGE" false "hardware dynamic DMA queues" "C-features (ordinal 17, CERTAIN)";
    0x40_0000 "neff_feature_partial_sb2sb_ccop" false "partial SB-to-SB collective op" "C-features (ordinal 21, CERTAIN)";
    0x100_0000 "arch_above_39" false "set for arch levels above 39; the page gives no name, the label is project-defined" "C-features (arch gate, CERTAIN)";
    0x200_0000 "neff_feature_large_tensor_support" false "64-bit tensor addresses" "C-features (ordinal 22, CERTAIN)";
}

/// The bit `neff_feature_vnc`: a NEFF for a logical core of several physical cores.
pub const FEATURE_VNC: u64 = 0x400;

/// The `def.json` `neff_features` name of [`FEATURE_VNC`].
pub const NEFF_FEATURE_VNC: &str = "neff_feature_vnc";

/// Feature bits the runtime understands (`0x7FFFFFF`, R-container).
pub const FEATURE_SUPPORTED: u64 = 0x7FF_FFFF;

/// The runtime's reject mask for `neff_version_major == 2` (R-container): a set bit here means
/// the NEFF was written by a compiler newer than the runtime, and the load is refused. Bit 63
/// is outside the mask.
pub const FEATURE_REJECT_MASK: u64 = 0x7FFF_FFFF_F800_0000;

/// The flag of a single bit, if the table names it.
pub fn flag(bit: u64) -> Option<&'static FeatureFlag> {
    FEATURE_FLAGS.iter().find(|f| f.bit == bit)
}

/// The name of every set bit of `bits`, lowest first; a bit the table does not name is shown
/// in hex (`0x40000`).
pub fn feature_names(bits: u64) -> Vec<String> {
    (0..64)
        .map(|i| 1u64 << i)
        .filter(|b| bits & b != 0)
        .map(|b| flag(b).map_or_else(|| format!("{b:#x}"), |f| f.name.to_string()))
        .collect()
}

/// The bits of `bits` the runtime refuses for this major version (none unless major is 2).
pub fn refused_bits(neff_version_major: u64, bits: u64) -> u64 {
    if neff_version_major == 2 {
        bits & FEATURE_REJECT_MASK
    } else {
        0
    }
}

/// The logical NeuronCore a NEFF's subgraphs run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogicalCore {
    /// Physical cores per logical core: the header's `lnc_size`, 0 read as 1.
    pub size: u32,
    /// Whether the NEFF marks itself multi-core: header bit 0x400, or `neff_feature_vnc` in
    /// a subgraph's `def.json` `neff_features`.
    pub vnc_feature: bool,
    /// Subgraphs, 1 or `size`: each runs on its own physical core, subgraph `i` on core `i`
    /// (R-load: one model per subgraph on `tpbs[i]`, NEFF-doc: "each subgraph declared in
    /// the NEFF will be loaded onto its own TPB").
    pub subgraphs: usize,
}

/// The logical core of a NEFF with this header and these subgraphs, checked as the runtime
/// does: the number of subgraphs is 1 or the logical-core size (R-load `dlr_kelf_stage`
/// asserts `nkbin == 1 || nkbin == vnc core size`; the size is `lnc_size`, 0 read as 1).
/// The vnc feature is reported, not required: with bit 0x400 the runtime takes the size from
/// its own configuration (R-load), which a single subgraph satisfies whatever it is.
pub fn logical_core(header: &Header, subgraphs: &[Subgraph]) -> Result<LogicalCore, NeffError> {
    let size = header.lnc();
    let n = subgraphs.len();
    if n != 1 && u32::try_from(n).ok() != Some(size) {
        return Err(NeffError::SubgraphCount {
            subgraphs: n,
            lnc_size: size,
        });
    }
    Ok(LogicalCore {
        size,
        vnc_feature: header.vnc_feature() || subgraphs.iter().any(|s| s.def.vnc_feature()),
        subgraphs: n,
    })
}

impl Neff {
    /// The logical core its subgraphs run on ([`logical_core`] with this NEFF's header).
    pub fn logical_core(&self, subgraphs: &[Subgraph]) -> Result<LogicalCore, NeffError> {
        logical_core(&self.header, subgraphs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_single_bits_in_order_with_unique_names() {
        let mut names = std::collections::BTreeSet::new();
        let mut last = 0;
        for f in FEATURE_FLAGS {
            assert_eq!(f.bit.count_ones(), 1, "{}", f.name);
            assert!(f.bit > last, "{} out of order", f.name);
            assert_eq!(
                f.bit & !FEATURE_SUPPORTED,
                0,
                "{} outside the supported set",
                f.name
            );
            assert!(names.insert(f.name), "{}", f.name);
            last = f.bit;
        }
        assert_eq!(
            FEATURE_FLAGS.iter().filter(|f| f.in_def_json).count(),
            11,
            "C-features: eleven flags reach def.json"
        );
        assert_eq!(FEATURE_REJECT_MASK, !FEATURE_SUPPORTED & !(1 << 63));
    }

    #[test]
    fn docs_list_every_flag() {
        let doc = include_str!("../../docs/neff.md");
        for f in FEATURE_FLAGS {
            let row = format!(
                "| {:#x} | `{}`{} | {} |",
                f.bit,
                f.name,
                if f.source.contains("arch gate") {
                    " (**project-defined** label)"
                } else {
                    ""
                },
                if f.in_def_json { "yes" } else { "no" }
            );
            assert!(doc.contains(&row), "docs/neff.md lacks `{row}`");
        }
    }

    #[test]
    fn names_of_the_compilers_bits() {
        // neuronx-cc 2.23, matmul_small (Trn2, LNC2).
        assert_eq!(
            feature_names(0x20_9c00),
            [
                "neff_feature_vnc",
                "dve_perf_mode",
                "neff_feature_DGE",
                "neff_feature_DGE_cast",
                "neff_feature_hardware_DGE"
            ]
        );
        assert_eq!(feature_names(0), Vec::<String>::new());
        // Unnamed bits in hex, named ones by name.
        assert_eq!(
            feature_names(0x1 | 0x4_0000 | 0x8000_0000_0000_0000 | 0x4000),
            [
                "0x1",
                "neff_feature_remote_sem",
                "0x40000",
                "0x8000000000000000"
            ]
        );
    }

    #[test]
    fn the_reject_mask_at_its_edges() {
        // Bit 26 is the highest supported bit, bit 27 the lowest refused one.
        assert_eq!(refused_bits(2, 1 << 26), 0);
        assert_eq!(refused_bits(2, 1 << 27), 1 << 27);
        // Bit 62 is refused, bit 63 is outside the mask.
        assert_eq!(refused_bits(2, 1 << 62), 1 << 62);
        assert_eq!(refused_bits(2, 1 << 63), 0);
        // Only major version 2 is checked.
        assert_eq!(refused_bits(1, 1 << 27), 0);
        assert_eq!(refused_bits(3, 1 << 27), 0);
    }
}
