//! `Points`: the sorted map from address to state id behind the
//! [`VmaTree`](crate::VmaTree), as sorted leaves under a flat index. Each
//! leaf is a sorted array of up to [`LEAF`] points (12 bytes each); the
//! index is the sorted array of the leaves' lower fences (one per 32 to 64
//! points), with a summary of every 16th fence. A lookup is three binary
//! searches (O(log n)): the summary (a few KiB at 100k regions, in L1),
//! one stride of the index (two cache lines), then the leaf. Inserting or removing a
//! point moves at most [`LEAF`] elements of its leaf; a leaf is allocated
//! only when one splits (after at least `LEAF / 2` inserts into it) and
//! freed only when one empties, and only then does the index move entries
//! (a memmove of one word per leaf, amortized over those inserts).
//!
//! Callgrind showed std's `BTreeMap` of single points spending most of an
//! operation in node searches (several descents per operation, a linear
//! search of up to 11 keys per node) and in node allocation and freeing.
//!
//! Invariants: every leaf holds at least one point and at most [`LEAF`];
//! the first leaf's fence is 0; a leaf's points lie in
//! `[its fence, the next leaf's fence)`.

use crate::state_table::StateId;
use std::cell::Cell;
use std::ops::ControlFlow;

/// Points per leaf at most.
pub(crate) const LEAF: usize = 64;

/// Fences per entry of the index's summary.
const STRIDE: usize = 16;

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

/// Asks the CPU to bring all of `leaf` into its cache at once. The
/// operation that found the leaf goes on to binary search its keys and
/// usually to shift its tail (an insert or a removal), touching every one
/// of its cache lines; without this, in a tree larger than the cache those
/// lines arrive one miss after another (the search's loads depend on each
/// other), which made an operation at 100k regions cost 1.6-1.8x one at 1k.
#[inline]
fn prefetch_leaf(leaf: &Leaf) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let base = std::ptr::from_ref(leaf).cast::<i8>();
        for line in (0..size_of::<Leaf>()).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults nor changes
            // memory, and the address is inside `leaf`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(line)) };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = leaf;
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Points {
    /// The lower fence of each leaf, ascending.
    fences: Vec<usize>,
    /// Every [`STRIDE`]th fence: a search reads this (small enough to stay
    /// in L1 at 100k regions) and then one stride of `fences`, two cache
    /// lines, instead of binary searching all of `fences`. Rebuilt when
    /// `fences` changes (a leaf split or emptied).
    summary: Vec<usize>,
    /// Boxed so that a split or an emptied leaf moves 8-byte pointers in
    /// the index, not whole leaves.
    #[allow(clippy::vec_box)]
    leaves: Vec<Box<Leaf>>,
    len: usize,
    /// The leaf found by the last lookup: an operation looks up the same
    /// leaf several times (the state before its range, the points in it,
    /// each point it changes), and all but the first find it here in O(1).
    /// Only a hint, checked against the fences before use.
    finger: Cell<usize>,
}

impl Points {
    /// Points held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The index of the leaf that holds (or would hold) key `k`.
    #[inline]
    fn leaf_of(&self, k: usize) -> Option<usize> {
        let c = self.finger.get();
        let hit = self.fences.get(c).is_some_and(|&f| f <= k)
            && self.fences.get(c + 1).is_none_or(|&next| k < next);
        if hit {
            return Some(c);
        }
        let group = self.summary.partition_point(|&f| f <= k).checked_sub(1)?;
        let from = group * STRIDE;
        let to = (from + STRIDE).min(self.fences.len());
        // The group's first fence is <= k, so the result is at least `from`.
        let at = from + self.fences[from..to].partition_point(|&f| f <= k) - 1;
        self.finger.set(at);
        prefetch_leaf(&self.leaves[at]);
        Some(at)
    }

    /// Rebuilds the summary of the index after `fences` changed.
    fn index_changed(&mut self) {
        self.summary.clear();
        self.summary
            .extend(self.fences.iter().step_by(STRIDE).copied());
    }

    /// The last point with a key `< k` (`<= k` with `inclusive`).
    #[inline]
    pub(crate) fn before(&self, k: usize, inclusive: bool) -> Option<(usize, StateId)> {
        let at = self.leaf_of(k)?;
        let leaf = &self.leaves[at];
        let i = if inclusive {
            leaf.upper(k)
        } else {
            leaf.lower(k)
        };
        if i > 0 {
            return Some((leaf.keys[i - 1], leaf.ids[i - 1]));
        }
        // Every point of this leaf is at or after `k`: the previous leaf's
        // last one (leaves are never empty).
        let prev = &self.leaves[at.checked_sub(1)?];
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
        let Some(at) = self.leaf_of(lo) else {
            return;
        };
        for leaf in &self.leaves[at..] {
            let from = if exclusive {
                leaf.upper(lo)
            } else {
                leaf.lower(lo)
            };
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
            .iter()
            .flat_map(|l| l.keys().iter().copied().zip(l.ids[..l.len].iter().copied()))
    }

    /// Sets the state of the existing point `k`.
    ///
    /// # Panics
    /// If there is no point `k`.
    #[inline]
    pub(crate) fn set(&mut self, k: usize, id: StateId) {
        let at = self.leaf_of(k).expect("existing point");
        let leaf = &mut self.leaves[at];
        let i = leaf.lower(k);
        assert!(i < leaf.len && leaf.keys[i] == k, "existing point");
        leaf.ids[i] = id;
    }

    /// Adds the point `k`, which must not exist.
    #[inline]
    pub(crate) fn insert(&mut self, k: usize, id: StateId) {
        self.len += 1;
        let Some(at) = self.leaf_of(k) else {
            // Empty (otherwise the first fence, 0, is at or below `k`).
            let mut leaf = Leaf::new();
            leaf.keys[0] = k;
            leaf.ids[0] = id;
            leaf.len = 1;
            self.fences.push(0);
            self.leaves.push(leaf);
            self.index_changed();
            return;
        };
        let leaf = &mut self.leaves[at];
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
        let target = if i <= half { &mut **leaf } else { &mut *right };
        let j = target.lower(k);
        target.keys.copy_within(j..target.len, j + 1);
        target.ids.copy_within(j..target.len, j + 1);
        target.keys[j] = k;
        target.ids[j] = id;
        target.len += 1;
        self.fences.insert(at + 1, right.keys[0]);
        self.leaves.insert(at + 1, right);
        self.index_changed();
    }

    /// Removes the point `k`, which must exist.
    #[inline]
    pub(crate) fn remove(&mut self, k: usize) {
        self.len -= 1;
        let at = self.leaf_of(k).expect("existing point");
        let leaf = &mut self.leaves[at];
        let i = leaf.lower(k);
        assert!(i < leaf.len && leaf.keys[i] == k, "existing point");
        leaf.keys.copy_within(i + 1..leaf.len, i);
        leaf.ids.copy_within(i + 1..leaf.len, i);
        leaf.len -= 1;
        if leaf.len > 0 {
            return;
        }
        self.fences.remove(at);
        self.leaves.remove(at);
        if at == 0 {
            // The first leaf went: the next one becomes first, fence 0.
            if let Some(f) = self.fences.first_mut() {
                *f = 0;
            }
        }
        self.index_changed();
    }

    /// Checks the invariants.
    ///
    /// # Panics
    /// If one does not hold.
    pub(crate) fn assert_invariants(&self) {
        let mut count = 0;
        assert_eq!(self.fences.len(), self.leaves.len(), "one fence per leaf");
        assert!(
            self.summary
                .iter()
                .copied()
                .eq(self.fences.iter().step_by(STRIDE).copied()),
            "index summary out of date"
        );
        assert!(
            self.fences.first().is_none_or(|&f| f == 0),
            "first fence not 0"
        );
        for (n, (fence, leaf)) in self.fences.iter().zip(&self.leaves).enumerate() {
            assert!(leaf.len > 0 && leaf.len <= LEAF, "leaf size {}", leaf.len);
            assert!(leaf.keys().is_sorted_by(|a, b| a < b), "leaf not sorted");
            assert!(leaf.keys[0] >= *fence, "point below its fence");
            if let Some(&next) = self.fences.get(n + 1) {
                assert!(next > *fence, "fences not ascending");
                assert!(
                    leaf.keys[leaf.len - 1] < next,
                    "point beyond the next fence"
                );
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
    #[allow(clippy::map_entry)]
    fn matches_a_btreemap_through_splits_and_empty_leaves() {
        let mut p = Points::default();
        let mut m = Model::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        // Enough keys for well over STRIDE leaves (several index groups).
        let (steps, keys) = if cfg!(miri) {
            (3_000, 700)
        } else {
            (60_000, 6_000)
        };
        for step in 0..steps {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % keys) as usize * 16;
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
                assert!(cfg!(miri) || step < 30_000 || p.leaves.len() > 3 * STRIDE);
                p.assert_invariants();
                assert!(p.iter().eq(m.iter().map(|(&k, &v)| (k, v))));
                let probe = (x >> 20) as usize % (keys as usize * 16);
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
                assert!(
                    got.into_iter()
                        .eq(m.range(probe..=hi).map(|(&k, &v)| (k, v)))
                );
            }
        }
        for k in m.keys() {
            p.remove(*k);
        }
        p.assert_invariants();
        assert_eq!(p.len(), 0);
    }
}
