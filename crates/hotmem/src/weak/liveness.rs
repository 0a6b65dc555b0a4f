//! [`Liveness`]: a concurrent cycle's verdict on which objects live, lent
//! to the weak tables it processes after its pauses (the weak sets and the
//! weak handles), for exactly as long as the cycle's marking lives.

use crate::vm::ObjectReference;

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
