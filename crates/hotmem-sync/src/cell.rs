//! `UnsafeCell` with loom's pointer-returning API, so that code written
//! against it reads the same in both builds: loom's own cell (which records
//! every access and fails a model whose accesses overlap) under
//! `cfg(hotmem_loom)`, std's cell behind the same API otherwise.

#[cfg(hotmem_loom)]
pub use loom::cell::{MutPtr, UnsafeCell};

#[cfg(not(hotmem_loom))]
pub use std_cell::{MutPtr, UnsafeCell};

#[cfg(not(hotmem_loom))]
mod std_cell {
    /// std's `UnsafeCell` behind loom's API.
    #[derive(Debug)]
    pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    /// A pointer to the value of an [`UnsafeCell`] (loom's records the
    /// access for as long as it lives; this one is a plain pointer).
    #[derive(Debug)]
    pub struct MutPtr<T>(*mut T);

    impl<T> UnsafeCell<T> {
        /// A cell holding `value`.
        pub fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        /// A pointer to the value, for mutable access.
        #[inline]
        pub fn get_mut(&self) -> MutPtr<T> {
            MutPtr(self.0.get())
        }
    }

    impl<T> MutPtr<T> {
        /// The value.
        ///
        /// # Safety
        /// As for dereferencing the raw pointer: the cell is alive, and no
        /// other reference into its value is used while this one lives.
        #[inline]
        #[allow(clippy::mut_from_ref)]
        pub unsafe fn deref(&self) -> &mut T {
            // SAFETY: the pointer comes from a live cell (the caller's
            // first point) and the caller's second point makes the
            // reference unique.
            unsafe { &mut *self.0 }
        }
    }
}
