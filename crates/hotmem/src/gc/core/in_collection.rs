//! Which heaps the current thread is collecting (or holding at a
//! safepoint through `run_at_safepoint`): the guard against a binding
//! callback that asks its own runtime for a collection.
//!
//! A [`Binding`](crate::Binding) callback runs on the collecting thread
//! (which holds the runtime's collection lock and its safepoint) or on a GC
//! worker that the collecting thread waits for; both are marked. A callback that asks the same runtime for another collection,
//! a safepoint, or a new mutator would wait for itself forever; the entry
//! points check this mark first and return a typed error instead.

use std::cell::RefCell;

thread_local! {
    /// Keys ([`Collected`]) of the runtimes this thread is inside
    /// a collection of, innermost last. Nested only when one runtime's
    /// callback collects another runtime.
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// What names one runtime's collections: the heap, and the parts that
/// live beside it without it (its [`PauseGate`](crate::pause_gate::PauseGate)).
pub(crate) trait Collected {
    /// The same number for every part of one runtime, for as long as it
    /// lives.
    fn collection_key(&self) -> usize;
}

/// Whether the current thread is inside a collection (or safepoint
/// operation) of `runtime`.
pub(crate) fn inside(runtime: &impl Collected) -> bool {
    let k = runtime.collection_key();
    INSIDE.with(|v| v.borrow().contains(&k))
}

/// Marks the current thread as inside a collection of `runtime` until the
/// returned scope is dropped (also when a callback unwinds).
pub(crate) fn enter(runtime: &impl Collected) -> Scope {
    let k = runtime.collection_key();
    INSIDE.with(|v| v.borrow_mut().push(k));
    Scope { key: k }
}

/// The mark, removed on drop.
pub(crate) struct Scope {
    key: usize,
}

impl Drop for Scope {
    fn drop(&mut self) {
        INSIDE.with(|v| {
            let mut v = v.borrow_mut();
            if let Some(i) = v.iter().rposition(|&k| k == self.key) {
                v.remove(i);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    struct Key(usize);

    impl super::Collected for Key {
        fn collection_key(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn scopes_nest_and_unwind() {
        let (a, b) = (Key(1), Key(2));
        assert!(!super::inside(&a));
        {
            let _sa = super::enter(&a);
            assert!(super::inside(&a) && !super::inside(&b));
            {
                let _sb = super::enter(&b);
                assert!(super::inside(&a) && super::inside(&b));
            }
            assert!(!super::inside(&b));
        }
        assert!(!super::inside(&a));
        let r = std::panic::catch_unwind(|| {
            let _sa = super::enter(&a);
            panic!("callback panicked");
        });
        assert!(r.is_err());
        assert!(
            !super::inside(&a),
            "the mark goes away when a callback unwinds"
        );
    }
}
