//! Interval arithmetic for the oracle, deliberately naive: sort, merge, two-pointer intersect.
//!
//! This is the test oracle's own code (the analyzer's `model::intervals` is not used), kept
//! small enough to check by eye. Intervals are half-open `[s, e)` in ns; empty ones are dropped.

use crate::synth::timeline::Ns;

pub type Iv = (Ns, Ns);

/// The union of `v` as sorted, disjoint, non-touching intervals.
pub fn union(mut v: Vec<Iv>) -> Vec<Iv> {
    v.retain(|&(s, e)| e > s);
    v.sort_unstable();
    let mut out: Vec<Iv> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Whether `at` lies in `v` (a [`union`]), by bisection: the answers of a scaled run stay
/// linear in its kernels.
pub fn covers(v: &[Iv], at: Ns) -> bool {
    let after = v.partition_point(|&(s, _)| s <= at);
    after > 0 && at < v[after - 1].1
}

/// Intersection of two sorted disjoint lists.
pub fn intersect(a: &[Iv], b: &[Iv]) -> Vec<Iv> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            out.push((s, e));
        }
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    out
}

/// `a` minus `b`, both sorted and disjoint: the parts of `a` no interval of `b` covers.
pub fn subtract(a: &[Iv], b: &[Iv]) -> Vec<Iv> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

/// Total length.
pub fn measure(v: &[Iv]) -> Ns {
    v.iter().map(|&(s, e)| e - s).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_touching_and_overlapping() {
        assert_eq!(
            union(vec![(5, 7), (0, 2), (2, 3), (6, 9), (4, 4)]),
            vec![(0, 3), (5, 9)]
        );
    }

    #[test]
    fn subtract_cuts_holes() {
        let a = vec![(0, 10), (20, 30), (40, 50)];
        let b = vec![(2, 4), (8, 22), (25, 26), (45, 60)];
        assert_eq!(
            subtract(&a, &b),
            vec![(0, 2), (4, 8), (22, 25), (26, 30), (40, 45)]
        );
        assert_eq!(subtract(&a, &[]), a);
        assert_eq!(subtract(&[], &b), vec![]);
        assert_eq!(subtract(&[(0, 10)], &[(0, 10)]), vec![]);
    }

    #[test]
    fn intersect_and_measure() {
        let a = vec![(0, 10), (20, 30)];
        let b = vec![(5, 25)];
        assert_eq!(intersect(&a, &b), vec![(5, 10), (20, 25)]);
        assert_eq!(measure(&intersect(&a, &b)), 10);
    }
}
