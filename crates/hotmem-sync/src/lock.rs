//! `Mutex`, `Condvar` and `RwLock` with parking_lot's signatures:
//! parking_lot's own normally, loom's behind those signatures under
//! `cfg(hotmem_loom)`.
//!
//! Neither build poisons: loom's poisoned lock is taken as it is, as
//! parking_lot would (a panic inside a model already fails it, or is what
//! the model checks).

#[cfg(not(hotmem_loom))]
pub use parking_lot::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(hotmem_loom)]
pub use self::loom_locks::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(hotmem_loom)]
mod loom_locks {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;

    /// loom's mutex with parking_lot's signature.
    #[derive(Debug, Default)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`]. It holds loom's guard in an
    /// `Option` so that [`Condvar::wait`] can take it by `&mut`.
    #[derive(Debug)]
    pub struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        /// An unlocked mutex holding `value`.
        pub fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        /// Locks it, waiting as long as another thread holds it.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)))
        }

        /// The value, the mutex consumed.
        pub fn into_inner(self) -> T {
            self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            self.0.as_ref().expect("a guard holds its lock")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("a guard holds its lock")
        }
    }

    /// loom's condition variable with parking_lot's signature.
    #[derive(Debug, Default)]
    pub struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A condition variable nobody waits on.
        pub fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        /// Releases `guard`'s lock, waits for a notification (or wakes
        /// spuriously), and locks again.
        pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("a guard holds its lock");
            guard.0 = Some(self.0.wait(inner).unwrap_or_else(PoisonError::into_inner));
        }

        /// Wakes one waiter.
        pub fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter. (parking_lot's returns how many it woke;
        /// loom cannot tell, so a caller that needs the count does not
        /// build under loom.)
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// loom's reader-writer lock with parking_lot's signature.
    #[derive(Debug, Default)]
    pub struct RwLock<T>(loom::sync::RwLock<T>);

    /// A shared lock on a [`RwLock`].
    pub type RwLockReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;

    /// The exclusive lock on a [`RwLock`].
    pub type RwLockWriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        /// An unlocked lock holding `value`.
        pub fn new(value: T) -> Self {
            RwLock(loom::sync::RwLock::new(value))
        }

        /// Takes it shared, waiting while a writer holds it.
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(PoisonError::into_inner)
        }

        /// Takes it exclusively, waiting while anyone holds it.
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(PoisonError::into_inner)
        }
    }
}
