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

/// Bytes from which a fresh buffer is worth backing by huge pages.
const HUGE_FROM: usize = 4 << 20;

/// Ask the kernel to back the untouched buffer `[p, p + len)` by transparent huge pages (where
/// the system allows them on request), so that touching it costs one fault per 2 MiB instead
/// of one per 4 KiB. Only advice: the contents and the results do not change, and where it is
/// not available nothing happens.
pub(crate) fn advise_huge_pages(p: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const HUGE: usize = 2 << 20;
        if len < HUGE_FROM {
            return;
        }
        let start = (p as usize).next_multiple_of(HUGE);
        let end = (p as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: [start, end) lies inside the caller's allocation; MADV_HUGEPAGE changes
            // how pages are backed, never their contents. A failure (no THP) is ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (p, len);
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
