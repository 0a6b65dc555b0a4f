//! What a tracker needs from the structure that holds its regions, so that
//! the tree and the linked-list baseline sit behind the same [`Tracker`]
//! API and are measured by the same benchmark and checked by the same model.
//!
//! [`Tracker`]: crate::Tracker

use crate::error::{Operation, TrackError};
use crate::region_state::RegionState;
use crate::stack_id::StackId;
use hotmem_os::{MemRange, MemTag};

/// A structure that maps address ranges to [`RegionState`]s: the
/// [`VmaTree`](crate::VmaTree) (O(log n)) or the
/// [`LinkedList`](crate::linked_list::LinkedList) baseline (O(n)). Sealed: its
/// methods are this crate's business.
pub trait RegionStore: sealed::StoreImpl {}

impl<T: sealed::StoreImpl> RegionStore for T {}

pub(crate) use sealed::Change;

pub(crate) mod sealed {
    use super::*;

    /// What one operation does to every piece of its range.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    #[allow(unreachable_pub)]
    pub enum Change {
        /// Released → reserved in this state.
        Reserve(RegionState),
        /// Reserved → committed by the stack (re-committing takes the new stack).
        Commit(StackId),
        /// Committed → reserved.
        Uncommit,
        /// Reserved → released.
        Release,
        /// Any reserved piece gets the tag.
        SetTag(MemTag),
    }

    impl Change {
        pub(crate) fn operation(self) -> Operation {
            match self {
                Change::Reserve(_) => Operation::Reserve,
                Change::Commit(_) => Operation::Commit,
                Change::Uncommit => Operation::Uncommit,
                Change::Release => Operation::Release,
                Change::SetTag(_) => Operation::SetTag,
            }
        }

        /// The new state of a piece that was `old`.
        #[inline]
        pub(crate) fn apply(self, old: RegionState) -> RegionState {
            match self {
                Change::Reserve(new) => new,
                Change::Commit(stack) => old.committed_now(stack),
                Change::Uncommit => old.uncommitted(),
                Change::Release => RegionState::RELEASED,
                Change::SetTag(tag) => old.with_tag(tag),
            }
        }
    }

    /// The methods behind [`RegionStore`]. Public only so that the public
    /// trait can name it; the module is private, so nobody outside can.
    #[allow(unreachable_pub)]
    pub trait StoreImpl: Default + Send + 'static {
        /// The first reserved piece of `range`.
        fn first_reserved(&self, range: MemRange) -> Option<MemRange>;

        /// The first piece of `range` that is not reserved.
        fn first_gap(&self, range: MemRange) -> Option<MemRange>;

        /// Checks that `change` may be applied to the non-empty `range` (as
        /// [`check`] does) and applies it to every piece, calling
        /// `on_change(old, new, bytes)` for each piece whose state changes.
        /// A rejected change leaves the store as it was.
        fn apply(
            &mut self,
            range: MemRange,
            change: Change,
            on_change: &mut dyn FnMut(RegionState, RegionState, usize),
        ) -> Result<(), TrackError>;

        /// Calls `f` for the reserved pieces that overlap `range`, clipped to
        /// it, in address order. Adjacent pieces may have equal states.
        fn for_each(&self, range: MemRange, f: &mut dyn FnMut(MemRange, RegionState));

        /// The number of nodes the structure holds (boundary points for the
        /// tree, region and committed-region nodes for the list).
        fn node_count(&self) -> usize;

        /// Checks the structure's invariants (sorted, merged, consistent).
        ///
        /// # Panics
        /// If one does not hold.
        fn check_invariants(&self);
    }
}

/// Checks that `change` may be applied to the non-empty `range`: free for
/// a reservation, entirely reserved for everything else.
pub(crate) fn check<S: RegionStore>(
    store: &S,
    range: MemRange,
    change: Change,
) -> Result<(), TrackError> {
    let op = change.operation();
    if let Change::Reserve(_) = change {
        return match store.first_reserved(range) {
            Some(reserved) => Err(TrackError::Overlap { range, reserved }),
            None => Ok(()),
        };
    }
    match store.first_gap(range) {
        Some(gap) => Err(TrackError::NotReserved { op, range, gap }),
        None => Ok(()),
    }
}
