//! The tree of address points: the state change at each boundary, in a
//! B-tree, so that every operation is O(log n + k) for n live boundaries and
//! k boundaries inside the operation's range.

use crate::error::TrackError;
use crate::points::Points;
use crate::region_state::RegionState;
use crate::state_table::{StateId, StateTable};
use crate::store::{Change, sealed::StoreImpl};
use hotmem_os::{Address, MemRange};
use std::ops::ControlFlow;

/// The region store of [`Tracker`](crate::Tracker): an ordered map from
/// address to the state of the interval that starts there and runs to the
/// next point. Below the first point everything is released.
///
/// A point is a `usize` key and a 4-byte id of an interned
/// [`RegionState`], kept in sorted leaves of up to 64 points found through
/// a flat index of the leaves' fences (both binary searched): 12 bytes of
/// payload, and what the `nmt` bench measures with the leaves' slack and
/// the index.
///
/// Invariants (checked by the model tests after every step): two
/// consecutive points never have equal states (adjacent equal intervals are
/// merged), the first point is not released and the last one is.
///
/// One operation searches about four times: once for the state left of
/// the range, once to walk the points inside it, and once per point it
/// inserts, updates or removes; the first is a binary search of the index
/// (one fence per leaf, with a summary of every 16th fence that stays in
/// L1) and one of the leaf, the later ones find the same leaf through a
/// finger in O(1). A leaf split or emptied moves the index's entries after
/// it (one word per leaf), at most once per `LEAF / 2` inserts into a leaf.
#[derive(Default, Debug)]
pub struct VmaTree {
    points: Points,
    states: StateTable,
    /// Reused between operations: (address, old state, new state) of the
    /// pieces of the range being changed.
    scratch: Vec<(usize, StateId, StateId)>,
}

impl VmaTree {
    /// Calls `f(start, end, state)` for the pieces of `range` in order.
    fn pieces(
        &self,
        range: MemRange,
        mut f: impl FnMut(usize, usize, RegionState) -> ControlFlow<()>,
    ) {
        let (start, end) = (range.start().get(), range.end().get());
        let mut at = start;
        let mut state = self
            .points
            .before(start, true)
            .map_or(StateId::RELEASED, |(_, s)| s);
        let mut stopped = false;
        self.points.each_in(start, end, true, |k, s| {
            if f(at, k, self.states.get(state)).is_break() {
                stopped = true;
                return ControlFlow::Break(());
            }
            at = k;
            state = s;
            ControlFlow::Continue(())
        });
        if !stopped {
            let _ = f(at, end, self.states.get(state));
        }
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
        self.points
            .iter()
            .map(|(k, s)| (Address::new(k), self.states.get(s)))
    }

    /// Distinct states interned so far.
    pub fn distinct_states(&self) -> usize {
        self.states.len()
    }

    /// Checks the invariants.
    ///
    /// # Panics
    /// If one does not hold.
    pub fn assert_invariants(&self) {
        let mut prev = StateId::RELEASED;
        self.points.assert_invariants();
        for (k, s) in self.points.iter() {
            assert_ne!(s, prev, "point at {k:#x} repeats the state before it");
            prev = s;
        }
        assert_eq!(prev, StateId::RELEASED, "the last point is not released");
    }
}

#[inline]
fn piece(a: usize, b: usize) -> MemRange {
    MemRange::from_bounds(Address::new(a), Address::new(b)).expect("pieces are ordered")
}

/// The first maximal run of `pieces` (ending at `end`) whose old state is
/// `bad`.
fn first_bad(
    pieces: &[(usize, StateId, StateId)],
    end: usize,
    bad: impl Fn(StateId) -> bool,
) -> Option<MemRange> {
    let first = pieces.iter().position(|p| bad(p.1))?;
    let stop = pieces[first..]
        .iter()
        .position(|p| !bad(p.1))
        .map_or(end, |i| pieces[first + i].0);
    Some(piece(pieces[first].0, stop))
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
    ) -> Result<(), TrackError> {
        let (start, end) = (range.start().get(), range.end().get());
        // The state left of `start`, then one walk over the points in
        // [start, end]: the pieces of the range with their old states.
        let before = self
            .points
            .before(start, false)
            .map_or(StateId::RELEASED, |(_, s)| s);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.push((start, before, before));
        let mut start_is_point = false;
        let mut end_point = None;
        self.points.each_in(start, end, false, |k, s| {
            if k == start {
                scratch[0] = (k, s, s);
                start_is_point = true;
            } else if k == end {
                end_point = Some(s);
            } else {
                scratch.push((k, s, s));
            }
            ControlFlow::Continue(())
        });
        // The state at `end`, which the operation must not change.
        let after = end_point.unwrap_or(scratch[scratch.len() - 1].1);

        // Validate before touching anything.
        let states = &self.states;
        let rejected = match change {
            Change::Reserve(_) => first_bad(&scratch, end, |s| states.get(s).is_reserved())
                .map(|reserved| TrackError::Overlap { range, reserved }),
            _ => first_bad(&scratch, end, |s| !states.get(s).is_reserved()).map(|gap| {
                TrackError::NotReserved {
                    op: change.operation(),
                    range,
                    gap,
                }
            }),
        };
        if let Some(e) = rejected {
            self.scratch = scratch;
            return Err(e);
        }

        // The new state of every piece.
        for i in 0..scratch.len() {
            let (a, old_id, _) = scratch[i];
            let b = scratch.get(i + 1).map_or(end, |p| p.0);
            let old = self.states.get(old_id);
            let new = change.apply(old);
            if new != old {
                on_change(old, new, b - a);
                scratch[i].2 = self.states.intern(new);
            }
        }

        // Rewrite the points: keep a point only where the state changes.
        let mut prev = before;
        for (i, &(k, old, new)) in scratch.iter().enumerate() {
            let existed = i > 0 || start_is_point;
            let keep = new != prev;
            match (existed, keep) {
                (true, true) if new != old => {
                    self.points.set(k, new);
                }
                (true, false) => {
                    self.points.remove(k);
                }
                (false, true) => {
                    self.points.insert(k, new);
                }
                _ => {}
            }
            if keep {
                prev = new;
            }
        }
        match (end_point.is_some(), after != prev) {
            (true, false) => {
                self.points.remove(end);
            }
            (false, true) => {
                self.points.insert(end, after);
            }
            _ => {}
        }
        self.scratch = scratch;
        Ok(())
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
