//! Process-wide settings for programs that run simulations.

/// Largest allocation glibc serves from its heap instead of a fresh mapping, once set.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 32 << 20;

/// Free bytes glibc keeps at the top of its heap instead of returning them, once set.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: i32 = 256 << 20;

/// Let the C allocator keep freed memory for reuse instead of handing it back to the OS at
/// once. Call it once, at the start of a program that simulates kernels.
///
/// A simulation allocates and frees buffers of hundreds of KiB (DRAM variables, operand
/// tiles, DMA staging). With glibc's default settings each of them is a fresh mapping or
/// lies at a heap top that is trimmed when it is freed, so every run pays one page fault per
/// 4 KiB it touches again; these faults were most of the time of the small testdata kernels.
/// With the settings below (allocations up to 32 MiB come from the heap, up to 256 MiB of free
/// heap top is kept) freed memory is reused without faults. Results do not change.
///
/// Returns whether the settings were applied (only with glibc on Linux; elsewhere it does
/// nothing).
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes glibc malloc's tunables; it may be called at any
        // time, from any thread.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn applies_on_glibc() {
        assert_eq!(
            super::retain_freed_memory(),
            cfg!(all(target_os = "linux", target_env = "gnu"))
        );
    }
}
