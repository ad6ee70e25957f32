//! Half-open byte ranges merged on demand: what the race check's DRAM logs and the lint's
//! write sets record.

/// Half-open byte ranges, kept sorted and merged on demand.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    v: Vec<(u64, u64)>,
    /// Length of `v` after the last merge (a merge runs when `v` doubles).
    merged: usize,
}

impl Ranges {
    /// Add `lo..hi`.
    pub fn add(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        if let Some(last) = self.v.last_mut() {
            if last.1 == lo {
                last.1 = hi;
                return;
            }
            if last.0 <= lo && hi <= last.1 {
                return;
            }
        }
        self.v.push((lo, hi));
        if self.v.len() >= 2 * self.merged.max(256) {
            self.merge();
        }
    }

    fn merge(&mut self) {
        self.v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.v.len());
        for &(lo, hi) in &self.v {
            match out.last_mut() {
                Some(m) if lo <= m.1 => m.1 = m.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        self.v = out;
        self.merged = self.v.len();
    }

    /// The ranges, sorted, disjoint and not touching.
    pub fn ranges(&mut self) -> &[(u64, u64)] {
        if self.merged != self.v.len() {
            self.merge();
        }
        &self.v
    }

    /// Ranges held (an upper bound before a merge), for the memory budget.
    pub fn len(&self) -> usize {
        self.v.len()
    }

    /// Whether no range was added.
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// Whether `sorted` (from [`Ranges::ranges`]) covers byte `a`: a binary search.
    pub fn covers(sorted: &[(u64, u64)], a: u64) -> bool {
        let i = sorted.partition_point(|&(lo, _)| lo <= a);
        i > 0 && a < sorted[i - 1].1
    }

    /// The ranges both sorted, disjoint lists cover.
    pub fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < a.len() && j < b.len() {
            let lo = a[i].0.max(b[j].0);
            let hi = a[i].1.min(b[j].1);
            if lo < hi {
                out.push((lo, hi));
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_intersect() {
        let mut r = Ranges::default();
        for (lo, hi) in [(10, 20), (20, 30), (50, 60), (0, 5), (55, 70), (4, 6)] {
            r.add(lo, hi);
        }
        assert_eq!(r.ranges(), &[(0, 6), (10, 30), (50, 70)]);
        let b = [(5u64, 11u64), (30, 50), (69, 80)];
        assert_eq!(
            Ranges::intersect(r.ranges(), &b),
            vec![(5, 6), (10, 11), (69, 70)]
        );
        // Touching is not overlapping.
        assert!(Ranges::intersect(&[(0, 10)], &[(10, 20)]).is_empty());
        for (a, want) in [
            (0, true),
            (5, true),
            (6, false),
            (9, false),
            (10, true),
            (29, true),
            (30, false),
            (69, true),
            (70, false),
        ] {
            assert_eq!(Ranges::covers(r.ranges(), a), want, "{a}");
        }
    }
}
