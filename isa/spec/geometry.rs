// Per-generation geometry constants.

const BANKS: &str = "G dma/sbuf-psum-banks.md";
const KEYS: &str = "G orientation/keystone-facts.md";

/// Every geometry row.
pub const GEOMETRY: &[GeomRow] = &[
    GeomRow { name: "sbuf_partitions", v: [128, 128, 128, 128], unit: "partitions", prov: BANKS, note: "" },
    GeomRow { name: "sbuf_partition_stride", v: [0x40000, 0x40000, 0x40000, 0x100000], unit: "bytes (address step per partition)", prov: BANKS, note: "" },
    GeomRow { name: "sbuf_partition_bytes", v: [192 << 10, 224 << 10, 256 << 10, 512 << 10], unit: "active bytes per partition", prov: BANKS, note: "" },
    GeomRow { name: "state_buf_size", v: [0x2000000, 0x2000000, 0x2000000, 0x8000000], unit: "bytes (STATE_BUF_SZ aperture)", prov: BANKS, note: "" },
    GeomRow { name: "psum_base", v: [0x2000000; 4], unit: "address (PSUM_BUF_OFFSET)", prov: BANKS, note: "" },
    GeomRow { name: "psum_partition_stride", v: [0x8000; 4], unit: "bytes", prov: BANKS, note: "" },
    GeomRow { name: "psum_banks", v: [16, 8, 8, 8], unit: "banks per partition", prov: BANKS, note: "v2: header 16 x 1024 over compiler 8 x 2048 (conflict D3)" },
    GeomRow { name: "psum_bank_bytes", v: [1024, 2048, 2048, 2048], unit: "bytes per bank", prov: BANKS, note: "conflict D3" },
    GeomRow { name: "psum_partition_bytes", v: [16 << 10; 4], unit: "active bytes per partition", prov: BANKS, note: "" },
    GeomRow { name: "psum_buf_size", v: [0x400000, 0x400000, 0x400000, 0], unit: "bytes (PSUM_BUF_SZ)", prov: BANKS, note: "v5 ships 0" },
    GeomRow { name: "state_buf_word", v: [8; 4], unit: "bytes", prov: BANKS, note: "" },
    GeomRow { name: "quadrants", v: [4; 4], unit: "quadrants of 32 partitions", prov: KEYS, note: "" },
    GeomRow { name: "quadrant_partitions", v: [32; 4], unit: "partitions per quadrant", prov: KEYS, note: "" },
    GeomRow { name: "pe_rows", v: [128; 4], unit: "PE array rows", prov: KEYS, note: "" },
    GeomRow { name: "pe_cols", v: [128, 128, 128, 256], unit: "PE array columns", prov: KEYS, note: "" },
    GeomRow { name: "pe_row_groups", v: [4, 4, 4, 2], unit: "row groups", prov: KEYS, note: "" },
    GeomRow { name: "pe_col_groups", v: [4; 4], unit: "column groups", prov: KEYS, note: "" },
    GeomRow { name: "dma_width", v: [32, 32, 32, 256], unit: "bytes", prov: KEYS, note: "" },
    GeomRow { name: "dma_engines", v: [16, 16, 16, 8], unit: "DMA engines per TPB", prov: KEYS, note: "" },
    GeomRow { name: "partition_addr_mask", v: [0x1FFF_FFFF; 4], unit: "mask", prov: "C isa/addr4.md", note: "" },
    GeomRow { name: "semaphores", v: [256; 4], unit: "semaphores per NeuronCore", prov: "C arch/sbuf-psum-geometry.md", note: "" },
    GeomRow { name: "events", v: [256; 4], unit: "event bits", prov: "C arch/sbuf-psum-geometry.md", note: "" },
    GeomRow { name: "address_registers", v: [64; 4], unit: "address registers (regid < 0x40)", prov: "C isa/addr4.md", note: "" },
];
