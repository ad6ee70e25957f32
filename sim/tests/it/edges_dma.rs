//! Edges of DMA transfers and on-chip accesses: runs that leave the 32-bit on-chip address
//! space, partitions past the last, zero-length accesses at address 0, and the figures of the
//! race check's memory budget refusal.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::dma::{DmaDesc, DmaMem, DmaSide};
use tpbsim_sim::machine::{
    DmaBlockSpec, DmaEntrySpec, DmaQueue, Fault, Geometry, Kernel, Limits, Machine, OnChip,
    RunOptions, VarKind, VarSpec,
};

const X: u32 = 1;
const Y: u32 = 2;

/// A DMATRIGGER (0xC1) of block 0 of queue `io`.
fn trigger() -> Bundle {
    let mut b = Bundle::ZERO;
    b.set_u8(0, 0xC1);
    b.set_u8(1, 0x10);
    b.0[12..16].copy_from_slice(b"io\0\0");
    b.set_u32(48, 0);
    b
}

fn side(mem: DmaMem, addr: u64, dims: Vec<(i64, u32)>) -> DmaSide {
    DmaSide {
        mem,
        addr,
        format: NumFormat::Float32,
        dims,
    }
}

/// A v3 kernel whose SP triggers one transfer `from` → `to`; DRAM variables `x` (input,
/// id 1) and `y` (output, id 2) of `bytes` bytes each.
fn one_transfer(from: DmaSide, to: DmaSide, bytes: u64) -> Kernel {
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![bytes as usize / 4],
        size: bytes,
        init: None,
    };
    let mut k = Kernel {
        gen: Some(Gen::V3),
        vars: vec![var(X, "x", VarKind::Input), var(Y, "y", VarKind::Output)],
        world: 1,
        ..Default::default()
    };
    k.streams[Engine::Sp as usize] = vec![trigger()];
    k.queues[Engine::Sp as usize] = vec![DmaQueue {
        name: "io".into(),
        semaphore: None,
        blocks: vec![DmaBlockSpec {
            id: 0,
            entries: vec![DmaEntrySpec {
                desc: Ok(DmaDesc { from, to }),
                sem: None,
                event: None,
            }],
        }],
    }];
    k
}

fn run_fault(k: &Kernel) -> Fault {
    let mut m = Machine::new(k, Gen::V3).unwrap();
    let data: Vec<u8> = (0..m.var("x").unwrap().len())
        .map(|i| i as u8 | 1)
        .collect();
    m.set_var("x", &data).unwrap();
    m.run(&RunOptions::default(), &mut |_| {}).unwrap_err()
}

#[test]
fn an_onchip_run_past_the_32_bit_address_space_faults_instead_of_wrapping() {
    // Two copies of each element (step 0), then an outer step of 2^32: the third run starts
    // at on-chip address 2^32, which is no address. It must not land on partition 0 again.
    let far = vec![(0, 2), (1 << 32, 2)];
    let cases = [
        (
            side(DmaMem::OnChip, 0, far.clone()),
            side(DmaMem::Dram(Y), 0, vec![(4, 4)]),
            "io[0].desc[0].from",
        ),
        (
            side(DmaMem::Dram(X), 0, vec![(4, 4)]),
            side(DmaMem::OnChip, 0, far),
            "io[0].desc[0].to",
        ),
    ];
    for (from, to, operand) in cases {
        let f = run_fault(&one_transfer(from, to, 16));
        assert_eq!(f.kind(), "out-of-bounds", "{operand}: {f}");
        let t = f.to_string();
        assert!(t.contains(&format!("operand `{operand}`")), "{t}");
        assert!(t.contains("address outside 32 bits"), "{t}");
    }
}

#[test]
fn a_dram_read_from_offset_0_with_a_negative_step_faults_cleanly() {
    // The second row would start 16 bytes before the variable.
    let k = one_transfer(
        side(DmaMem::Dram(X), 0, vec![(4, 4), (-16, 2)]),
        side(DmaMem::Dram(Y), 0, vec![(4, 8)]),
        32,
    );
    let f = run_fault(&k);
    assert_eq!(f.kind(), "out-of-bounds", "{f}");
    let t = f.to_string();
    assert!(t.contains("operand `io[0].desc[0].from`"), "{t}");
    assert!(t.contains("DRAM variable `x`"), "{t}");
}

#[test]
fn a_transfer_to_a_partition_past_the_last_names_that_partition() {
    // On v3, SBUF address 0x0240_0000 (just above the PSUM window) is partition 144.
    let g = Geometry::of(Gen::V3);
    let addr = g.sbuf_address(144, 0);
    assert_eq!(g.locate(addr).partition, 144);
    let k = one_transfer(
        side(DmaMem::Dram(X), 0, vec![(4, 4)]),
        side(DmaMem::OnChip, u64::from(addr), vec![(4, 4)]),
        16,
    );
    let f = run_fault(&k);
    assert_eq!(f.kind(), "out-of-bounds", "{f}");
    let t = f.to_string();
    assert!(
        t.contains(&format!(
            "access at 0x{addr:08x}: partitions 144..145 exceed the 128 partitions"
        )),
        "{t}"
    );
}

#[test]
fn a_zero_length_access_at_address_0_is_empty() {
    let g = Geometry::of(Gen::V3);
    let mut chip = OnChip::new(g).unwrap();
    // The first byte of SBUF and of PSUM: index 0 of their memories.
    for addr in [0, g.psum_address(0, 0)] {
        assert_eq!(chip.write_flat(addr, 0).unwrap().len(), 0, "{addr:#x}");
        assert_eq!(chip.read_flat(addr, 0).unwrap().len(), 0, "{addr:#x}");
    }
    // And at the end of a partition.
    let end = g.sbuf_address(127, g.sbuf_bytes_per_partition);
    assert_eq!(chip.write_flat(end, 0).unwrap().len(), 0);
}

/// 256 elements of 4 bytes from x to SBUF address 0, `from` and `to` bytes apart (4: one
/// contiguous run; 8: 256 separate runs).
fn runs_of_4_bytes(from: i64, to: i64) -> Kernel {
    one_transfer(
        side(DmaMem::Dram(X), 0, vec![(from, 256)]),
        side(DmaMem::OnChip, 0, vec![(to, 256)]),
        2048,
    )
}

/// Run `k` (whose x and y are 2048 bytes) with the race check, with `room` bytes of the
/// memory budget left beside the machine and its copies of x and y; the memory limit used.
fn race_checked_run(k: &Kernel, room: u64) -> (Result<(), Fault>, u64) {
    let base = Machine::new(k, Gen::V3).unwrap().budget().memory();
    let dram_copy = 2 * 2048;
    let limits = Limits {
        max_memory: base + dram_copy + room,
        ..Limits::default()
    };
    let mut m = Machine::with_limits(k, Gen::V3, limits).unwrap();
    m.enable_race_check();
    let r = m.run(&RunOptions::default(), &mut |_| {}).map(|_| ());
    (r, limits.max_memory)
}

#[test]
fn the_race_checks_refusal_to_record_a_transfer_gives_consistent_figures() {
    // 256 separate 4-byte runs read from x (step 8), written to one SBUF run; the memory
    // budget leaves room for fewer than 256 recorded runs of 16 bytes.
    let k = runs_of_4_bytes(8, 4);
    let (f, max_memory) = race_checked_run(&k, 2048);
    let f = f.unwrap_err();
    let Fault::Budget { at, exceeded } = &f else {
        panic!("not a budget fault: {f}")
    };
    assert!(at.contains("sp bundle #0"), "{at}");
    let prefix = "the race check's record of `io[0].desc[0].from` (more than ";
    let runs: u64 = exceeded
        .what
        .strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(" runs)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", exceeded.what));
    let room = exceeded.limit - exceeded.used;
    // The runs that fit the room, and the bytes one more needs: more than the room.
    assert_eq!(runs, room / 16, "{f}");
    assert!(runs < 256, "{f}");
    assert_eq!(exceeded.needed, (runs + 1) * 16, "{f}");
    assert!(exceeded.needed > room, "{f}");
    assert_eq!(exceeded.limit, max_memory);
    let t = f.to_string();
    assert!(
        t.contains(&format!("needs {} bytes", exceeded.needed)),
        "{t}"
    );
}

#[test]
fn the_race_checks_shadow_memory_is_charged_to_the_memory_budget() {
    // One contiguous 1 KiB read of x written as 256 separate 4-byte runs of SBUF (step 8):
    // the shadow memory keeps a segment per written run, far more than the record of the
    // transfer's runs needs.
    let k = runs_of_4_bytes(4, 8);
    let run = |room: u64| race_checked_run(&k, room).0;
    // Room for the record of the runs (256 · 16 bytes) but not for 256 shadow segments.
    let f = run(8192).unwrap_err();
    let Fault::Budget { at, exceeded } = &f else {
        panic!("not a budget fault: {f}")
    };
    assert!(at.contains("sp bundle #0"), "{at}");
    assert!(exceeded.what.contains("shadow memory"), "{f}");
    assert!(exceeded.needed > exceeded.limit - exceeded.used, "{f}");
    // The update stops at the first segment the room lacks, long before the transfer's 256:
    // the fault asks for that segment (and the record's working space), and one fewer fits.
    let per = tpbsim_sim::machine::budget::SHADOW_SEGMENT_BYTES;
    let segments: u64 = exceeded
        .what
        .strip_prefix("the race check's shadow memory (")
        .and_then(|r| r.strip_suffix(&format!(" segments of {per} bytes)")))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", exceeded.what));
    assert!(segments < 256, "{f}");
    assert!(
        exceeded.needed - per <= exceeded.limit - exceeded.used,
        "{f}"
    );
    // With room for the segments too, the same run passes.
    run(1 << 20).unwrap();
}
