//! The vector loops the value models choose from at run time, and which of them the host runs.

/// A family of loops: the portable loop, then AVX2 with FMA, then AVX-512F with FMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loop {
    /// Any CPU.
    Portable = 0,
    /// AVX2 with FMA.
    Avx2 = 1,
    /// AVX-512F with FMA.
    Avx512 = 2,
}

impl Loop {
    /// Whether this CPU runs the loop.
    pub fn host_has(self) -> bool {
        match self {
            Loop::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Loop::Avx2 => {
                std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("avx2")
            }
            #[cfg(target_arch = "x86_64")]
            Loop::Avx512 => {
                std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The loops this CPU runs, widest first (always ending with `Portable`).
    pub fn available() -> Vec<Loop> {
        [Loop::Avx512, Loop::Avx2, Loop::Portable]
            .into_iter()
            .filter(|l| l.host_has())
            .collect()
    }
}
