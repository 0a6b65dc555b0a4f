//! The tree of address points: the state changes at each boundary, in a
//! B-tree, so that every operation is O(log n + k) for n live boundaries and
//! k boundaries inside the operation's range.

use crate::state::RegionState;
use crate::store::{Change, sealed::StoreImpl};
use hotmem_os::{Address, MemRange};
use std::collections::BTreeMap;
use std::ops::Bound::Excluded;
use std::ops::ControlFlow;

/// The region store of [`Tracker`](crate::Tracker): an ordered map from
/// address to the [`RegionState`] of the interval that starts there and runs
/// to the next point. Below the first point everything is released.
///
/// Invariants (checked by the model tests after every step): two
/// consecutive points never have equal states (adjacent equal intervals are
/// merged), the first point is not released and the last one is.
///
/// A point is a `usize` key and an 8-byte state in `std`'s B-tree, whose
/// nodes hold up to 11 of them: 16 bytes of payload per point, about 24–32
/// bytes with the node overhead (the `nmt` bench measures it).
#[derive(Default, Debug)]
pub struct VmaTree {
    points: BTreeMap<usize, RegionState>,
    /// Reused between operations so that `apply` does not allocate.
    scratch: Vec<(usize, RegionState)>,
}

impl VmaTree {
    /// The state of the interval that contains `addr`.
    #[inline]
    fn state_at(&self, addr: usize) -> RegionState {
        self.points
            .range(..=addr)
            .next_back()
            .map_or(RegionState::RELEASED, |(_, s)| *s)
    }

    /// Calls `f(start, end, state)` for the pieces of `range` in order.
    fn pieces(
        &self,
        range: MemRange,
        mut f: impl FnMut(usize, usize, RegionState) -> ControlFlow<()>,
    ) {
        let (start, end) = (range.start().get(), range.end().get());
        let mut at = start;
        let mut state = self.state_at(start);
        for (&k, &s) in self.points.range((Excluded(start), Excluded(end))) {
            if f(at, k, state).is_break() {
                return;
            }
            at = k;
            state = s;
        }
        let _ = f(at, end, state);
    }

    /// The first maximal run of pieces of `range` whose state satisfies `want`.
    fn first_where(&self, range: MemRange, want: impl Fn(RegionState) -> bool) -> Option<MemRange> {
        let mut found: Option<(usize, usize)> = None;
        self.pieces(range, |a, b, s| match (found, want(s)) {
            (None, false) => ControlFlow::Continue(()),
            (None, true) => {
                found = Some((a, b));
                ControlFlow::Continue(())
            }
            (Some((start, _)), true) => {
                found = Some((start, b));
                ControlFlow::Continue(())
            }
            (Some(_), false) => ControlFlow::Break(()),
        });
        found.map(|(a, b)| piece(a, b))
    }

    /// Every point, in order (for tests and reports).
    pub fn points(&self) -> impl Iterator<Item = (Address, RegionState)> + '_ {
        self.points.iter().map(|(&k, &s)| (Address::new(k), s))
    }

    /// Checks the invariants.
    ///
    /// # Panics
    /// If one does not hold.
    pub fn assert_invariants(&self) {
        let mut prev = RegionState::RELEASED;
        for (&k, &s) in &self.points {
            assert_ne!(s, prev, "point at {k:#x} repeats the state before it");
            prev = s;
        }
        assert_eq!(
            prev,
            RegionState::RELEASED,
            "the last point is not released"
        );
    }
}

#[inline]
fn piece(a: usize, b: usize) -> MemRange {
    MemRange::from_bounds(Address::new(a), Address::new(b)).expect("pieces are ordered")
}

impl StoreImpl for VmaTree {
    fn first_reserved(&self, range: MemRange) -> Option<MemRange> {
        self.first_where(range, RegionState::is_reserved)
    }

    fn first_gap(&self, range: MemRange) -> Option<MemRange> {
        self.first_where(range, |s| !s.is_reserved())
    }

    fn apply(
        &mut self,
        range: MemRange,
        change: Change,
        on_change: &mut dyn FnMut(RegionState, RegionState, usize),
    ) {
        let (start, end) = (range.start().get(), range.end().get());
        // The interval left of `start`, and the one that contains `end`
        // (which the operation must not change).
        let before = self
            .points
            .range(..start)
            .next_back()
            .map_or(RegionState::RELEASED, |(_, s)| *s);
        let after = self.state_at(end);

        // The pieces of the range with their new states.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.push((start, self.state_at(start)));
        scratch.extend(
            self.points
                .range((Excluded(start), Excluded(end)))
                .map(|(&k, &s)| (k, s)),
        );
        for i in 0..scratch.len() {
            let (a, old) = scratch[i];
            let b = scratch.get(i + 1).map_or(end, |p| p.0);
            let new = change.apply(old);
            if new != old {
                on_change(old, new, b - a);
            }
            scratch[i].1 = new;
        }

        // Remove what is there now: `start`, the inner points and `end`.
        for &(k, _) in &scratch[1..] {
            self.points.remove(&k);
        }
        self.points.remove(&start);
        self.points.remove(&end);
        // Put back the new states, merging equal neighbours.
        let mut prev = before;
        let mut keep = 0;
        for i in 0..scratch.len() {
            let (k, s) = scratch[i];
            if s != prev {
                scratch[keep] = (k, s);
                keep += 1;
                prev = s;
            }
        }
        for &(k, s) in &scratch[..keep] {
            self.points.insert(k, s);
        }
        if after != prev {
            self.points.insert(end, after);
        }
        // The point after `end` (if any) still differs from `after`, and
        // the point before `start` still differs from its own predecessor.
        self.scratch = scratch;
    }

    fn for_each(&self, range: MemRange, f: &mut dyn FnMut(MemRange, RegionState)) {
        self.pieces(range, |a, b, s| {
            if s.is_reserved() {
                f(piece(a, b), s);
            }
            ControlFlow::Continue(())
        });
    }

    fn node_count(&self) -> usize {
        self.points.len()
    }

    fn check_invariants(&self) {
        self.assert_invariants();
    }
}
