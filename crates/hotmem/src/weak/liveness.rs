//! [`Liveness`]: a concurrent cycle's verdict on which objects live, lent
//! to the weak tables it processes after its pauses (the weak sets and the
//! weak handles), for exactly as long as the cycle's marking lives.

use crate::vm::ObjectReference;
use std::collections::HashSet;

/// A marking's verdict, borrowed with its lifetime erased: whoever stores
/// one in a table's state takes it out again (under the table's lock)
/// before the marking it borrows from ends (see
/// [`Sweeps`](super::Sweeps) and [`SetMarking`](super::SetMarking), the
/// guards that do).
#[derive(Copy, Clone)]
pub(crate) struct Liveness(&'static (dyn Fn(ObjectReference) -> bool + Sync));

impl Liveness {
    /// `f`, its lifetime erased.
    ///
    /// # Safety
    /// Every copy is dropped, or no longer called, before `f`'s borrow
    /// ends.
    pub(crate) unsafe fn erase<'a>(
        f: &'a (dyn Fn(ObjectReference) -> bool + Sync + 'a),
    ) -> Liveness {
        // SAFETY: the same fat reference with a longer lifetime; the
        // caller promises it is not used past the real one.
        Liveness(unsafe {
            std::mem::transmute::<
                &'a (dyn Fn(ObjectReference) -> bool + Sync + 'a),
                &'static (dyn Fn(ObjectReference) -> bool + Sync + 'static),
            >(f)
        })
    }

    /// A verdict that is `'static` already (the unit tests').
    #[cfg(test)]
    pub(crate) fn of(f: &'static (dyn Fn(ObjectReference) -> bool + Sync)) -> Liveness {
        Liveness(f)
    }

    /// Whether `r` lives by this verdict.
    #[inline]
    pub(crate) fn says_live(&self, r: ObjectReference) -> bool {
        (self.0)(r)
    }
}

/// A sweep's judgement of a table's entries after a pause (the weak
/// handles', the ephemerons'): the marking's verdict, but for the entries
/// added since the sweep began, which hold current references (an object
/// allocated after the pause lies in no page the marking mapped, and the
/// verdict would call it dead).
pub(crate) struct SweepVerdict {
    live: Liveness,
    fresh: HashSet<usize>,
}

impl SweepVerdict {
    /// `live`, no entry added yet.
    pub(crate) fn new(live: Liveness) -> SweepVerdict {
        SweepVerdict {
            live,
            fresh: HashSet::new(),
        }
    }

    /// Entry `index` was added during the sweep.
    pub(crate) fn added(&mut self, index: usize) {
        self.fresh.insert(index);
    }

    /// Whether entry `index` was added during the sweep.
    #[inline]
    pub(crate) fn is_fresh(&self, index: usize) -> bool {
        self.fresh.contains(&index)
    }

    /// Whether entry `index`, holding `r` (a key, for an ephemeron), is
    /// one the sweep clears.
    #[inline]
    pub(crate) fn dead(&self, index: usize, r: ObjectReference) -> bool {
        !self.is_fresh(index) && !self.live.says_live(r)
    }
}
