//! `Points`: the sorted map from address to state id behind the
//! [`VmaTree`](crate::VmaTree), as a B-tree of leaves. Each leaf is a
//! sorted array of up to [`LEAF`] points (12 bytes each, searched by
//! binary search in one or two cache lines' worth of keys), found through
//! std's B-tree keyed by the leaf's lower fence. One lookup is one descent
//! of a tree with `LEAF / 2` to `LEAF` times fewer entries than points,
//! and inserting or removing a point moves array elements instead of
//! allocating or freeing tree nodes (a leaf is allocated only when one
//! splits, freed only when one empties).
//!
//! Invariants: every leaf holds at least one point and at most [`LEAF`];
//! the first leaf's fence is 0; a leaf's points lie in
//! `[its fence, the next leaf's fence)`.

use crate::states::StateId;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// Points per leaf at most.
pub(crate) const LEAF: usize = 64;

#[derive(Debug)]
struct Leaf {
    len: usize,
    keys: [usize; LEAF],
    ids: [StateId; LEAF],
}

impl Leaf {
    fn new() -> Box<Leaf> {
        Box::new(Leaf {
            len: 0,
            keys: [0; LEAF],
            ids: [StateId::RELEASED; LEAF],
        })
    }

    #[inline]
    fn keys(&self) -> &[usize] {
        &self.keys[..self.len]
    }

    /// The index of the first key `>= k`.
    #[inline]
    fn lower(&self, k: usize) -> usize {
        self.keys().partition_point(|&x| x < k)
    }

    /// The index of the first key `> k`.
    #[inline]
    fn upper(&self, k: usize) -> usize {
        self.keys().partition_point(|&x| x <= k)
    }
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Points {
    leaves: BTreeMap<usize, Box<Leaf>>,
    len: usize,
}

impl Points {
    /// Points held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The fence of the leaf that holds (or would hold) key `k`.
    #[inline]
    fn leaf_of(&self, k: usize) -> Option<(usize, &Leaf)> {
        self.leaves.range(..=k).next_back().map(|(&f, l)| (f, &**l))
    }

    #[inline]
    fn leaf_of_mut(&mut self, k: usize) -> Option<(usize, &mut Leaf)> {
        self.leaves
            .range_mut(..=k)
            .next_back()
            .map(|(&f, l)| (f, &mut **l))
    }

    /// The last point with a key `< k` (`<= k` with `inclusive`).
    #[inline]
    pub(crate) fn before(&self, k: usize, inclusive: bool) -> Option<(usize, StateId)> {
        let (fence, leaf) = self.leaf_of(k)?;
        let i = if inclusive { leaf.upper(k) } else { leaf.lower(k) };
        if i > 0 {
            return Some((leaf.keys[i - 1], leaf.ids[i - 1]));
        }
        // Every point of this leaf is at or after `k`: the previous leaf's
        // last one (leaves are never empty).
        let (_, prev) = self.leaves.range(..fence).next_back()?;
        Some((prev.keys[prev.len - 1], prev.ids[prev.len - 1]))
    }

    /// Calls `f` for the points with keys in `[lo, hi]` (`(lo, hi)` with
    /// `exclusive`), in order, until it breaks.
    #[inline]
    pub(crate) fn each_in(
        &self,
        lo: usize,
        hi: usize,
        exclusive: bool,
        mut f: impl FnMut(usize, StateId) -> ControlFlow<()>,
    ) {
        let Some((fence, _)) = self.leaf_of(lo) else {
            return;
        };
        for leaf in self.leaves.range(fence..).map(|(_, l)| &**l) {
            let from = if exclusive { leaf.upper(lo) } else { leaf.lower(lo) };
            for i in from..leaf.len {
                let k = leaf.keys[i];
                if k > hi || (exclusive && k == hi) {
                    return;
                }
                if f(k, leaf.ids[i]).is_break() {
                    return;
                }
            }
        }
    }

    /// Every point in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, StateId)> + '_ {
        self.leaves
            .values()
            .flat_map(|l| l.keys().iter().copied().zip(l.ids[..l.len].iter().copied()))
    }

    /// Sets the state of the existing point `k`.
    ///
    /// # Panics
    /// If there is no point `k`.
    #[inline]
    pub(crate) fn set(&mut self, k: usize, id: StateId) {
        let (_, leaf) = self.leaf_of_mut(k).expect("existing point");
        let i = leaf.lower(k);
        assert!(i < leaf.len && leaf.keys[i] == k, "existing point");
        leaf.ids[i] = id;
    }

    /// Adds the point `k`, which must not exist.
    #[inline]
    pub(crate) fn insert(&mut self, k: usize, id: StateId) {
        self.len += 1;
        let Some((_, leaf)) = self.leaf_of_mut(k) else {
            // Empty, or every leaf starts above `k` (only possible when
            // empty: the first fence is 0).
            let mut leaf = Leaf::new();
            leaf.keys[0] = k;
            leaf.ids[0] = id;
            leaf.len = 1;
            self.leaves.insert(0, leaf);
            return;
        };
        let i = leaf.lower(k);
        debug_assert!(i == leaf.len || leaf.keys[i] != k, "point exists");
        if leaf.len < LEAF {
            leaf.keys.copy_within(i..leaf.len, i + 1);
            leaf.ids.copy_within(i..leaf.len, i + 1);
            leaf.keys[i] = k;
            leaf.ids[i] = id;
            leaf.len += 1;
            return;
        }
        // Full: move the upper half to a new leaf, then insert.
        let half = LEAF / 2;
        let mut right = Leaf::new();
        right.keys[..LEAF - half].copy_from_slice(&leaf.keys[half..]);
        right.ids[..LEAF - half].copy_from_slice(&leaf.ids[half..]);
        right.len = LEAF - half;
        leaf.len = half;
        let target = if i <= half { leaf } else { &mut *right };
        let j = target.lower(k);
        target.keys.copy_within(j..target.len, j + 1);
        target.ids.copy_within(j..target.len, j + 1);
        target.keys[j] = k;
        target.ids[j] = id;
        target.len += 1;
        let right_fence = right.keys[0];
        self.leaves.insert(right_fence, right);
    }

    /// Removes the point `k`, which must exist.
    #[inline]
    pub(crate) fn remove(&mut self, k: usize) {
        self.len -= 1;
        let (fence, leaf) = self.leaf_of_mut(k).expect("existing point");
        let i = leaf.lower(k);
        assert!(i < leaf.len && leaf.keys[i] == k, "existing point");
        leaf.keys.copy_within(i + 1..leaf.len, i);
        leaf.ids.copy_within(i + 1..leaf.len, i);
        leaf.len -= 1;
        if leaf.len > 0 {
            return;
        }
        self.leaves.remove(&fence);
        if fence == 0 {
            // The first leaf went: the next one becomes first, fence 0.
            if let Some((_, next)) = self.leaves.pop_first() {
                self.leaves.insert(0, next);
            }
        }
    }

    /// Checks the invariants.
    ///
    /// # Panics
    /// If one does not hold.
    pub(crate) fn assert_invariants(&self) {
        let mut count = 0;
        let fences: Vec<usize> = self.leaves.keys().copied().collect();
        assert!(fences.first().is_none_or(|&f| f == 0), "first fence not 0");
        for (n, (fence, leaf)) in self.leaves.iter().enumerate() {
            assert!(leaf.len > 0 && leaf.len <= LEAF, "leaf size {}", leaf.len);
            assert!(leaf.keys().is_sorted_by(|a, b| a < b), "leaf not sorted");
            assert!(leaf.keys[0] >= *fence, "point below its fence");
            if let Some(&next) = fences.get(n + 1) {
                assert!(leaf.keys[leaf.len - 1] < next, "point beyond the next fence");
            }
            count += leaf.len;
        }
        assert_eq!(count, self.len, "point count");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap as Model;

    fn id(n: u32) -> StateId {
        StateId::from_raw(n)
    }

    #[test]
    fn matches_a_btreemap_through_splits_and_empty_leaves() {
        let mut p = Points::default();
        let mut m = Model::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % 700) as usize * 16;
            if m.contains_key(&k) {
                if step % 3 == 0 {
                    p.set(k, id(step));
                    m.insert(k, id(step));
                } else {
                    p.remove(k);
                    m.remove(&k);
                }
            } else {
                p.insert(k, id(step));
                m.insert(k, id(step));
            }
            if step % 97 == 0 {
                p.assert_invariants();
                assert!(p.iter().eq(m.iter().map(|(&k, &v)| (k, v))));
                let probe = (x >> 20) as usize % (700 * 16);
                for inclusive in [false, true] {
                    let want = if inclusive {
                        m.range(..=probe).next_back()
                    } else {
                        m.range(..probe).next_back()
                    };
                    assert_eq!(p.before(probe, inclusive), want.map(|(&k, &v)| (k, v)));
                }
                let hi = probe + 1000;
                let mut got = Vec::new();
                p.each_in(probe, hi, false, |k, v| {
                    got.push((k, v));
                    ControlFlow::Continue(())
                });
                assert!(got.into_iter().eq(m.range(probe..=hi).map(|(&k, &v)| (k, v))));
            }
        }
        for k in m.keys() {
            p.remove(*k);
        }
        p.assert_invariants();
        assert_eq!(p.len(), 0);
    }
}
