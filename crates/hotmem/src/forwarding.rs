//! `Forwarding`: where the objects of one evacuated page went (ZGC's
//! `ZForwarding`).
//!
//! An open-addressing table from an object's word offset in its page to its
//! new address, sized for the page's live objects when the page is selected.
//! Entries are claimed with a compare-and-swap on the key, so workers may
//! fill it concurrently; with concurrent relocation a mutator's load barrier
//! will race a worker for the same object through [`Forwarding::insert`],
//! and the loser takes the winner's copy.

use hotmem_os::Address;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Entry {
    /// Word offset + 1; 0 when free.
    key: AtomicUsize,
    /// The new address; 0 until published.
    to: AtomicUsize,
}

/// The forwarding table of one page.
pub(crate) struct Forwarding {
    entries: Box<[Entry]>,
    mask: usize,
}

#[inline]
fn hash(key: usize) -> usize {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
}

impl Forwarding {
    /// A table for `objects` live objects.
    pub(crate) fn new(objects: usize) -> Forwarding {
        let size = (objects.max(1) * 2).next_power_of_two();
        Forwarding {
            entries: (0..size)
                .map(|_| Entry {
                    key: AtomicUsize::new(0),
                    to: AtomicUsize::new(0),
                })
                .collect(),
            mask: size - 1,
        }
    }

    /// Records that the object at word `offset` moved to `to`, unless
    /// another thread recorded it first: returns the address that won.
    /// `None` if the table is full (more objects than it was sized for).
    pub(crate) fn insert(&self, offset: usize, to: Address) -> Option<Address> {
        let key = offset + 1;
        let mut i = hash(key) & self.mask;
        for _ in 0..self.entries.len() {
            let e = &self.entries[i];
            match e
                .key
                .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    e.to.store(to.get(), Ordering::Release);
                    return Some(to);
                }
                Err(k) if k == key => {
                    // Another thread claimed it: wait for its address.
                    loop {
                        let t = e.to.load(Ordering::Acquire);
                        if t != 0 {
                            return Some(Address::new(t));
                        }
                        std::hint::spin_loop();
                    }
                }
                Err(_) => i = (i + 1) & self.mask,
            }
        }
        None
    }

    /// Where the object at word `offset` went, if it moved.
    #[inline]
    pub(crate) fn lookup(&self, offset: usize) -> Option<Address> {
        let key = offset + 1;
        let mut i = hash(key) & self.mask;
        for _ in 0..self.entries.len() {
            let e = &self.entries[i];
            match e.key.load(Ordering::Acquire) {
                0 => return None,
                k if k == key => {
                    let t = e.to.load(Ordering::Acquire);
                    return (t != 0).then(|| Address::new(t));
                }
                _ => i = (i + 1) & self.mask,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moved_objects_are_found_others_not() {
        let f = Forwarding::new(100);
        for k in 0..100 {
            assert_eq!(
                f.insert(k * 3, Address::new(0x10_0000 + k * 64)),
                Some(Address::new(0x10_0000 + k * 64))
            );
        }
        assert_eq!(
            f.insert(6, Address::new(0x9999_0000)),
            Some(Address::new(0x10_0000 + 2 * 64)),
            "the first copy wins"
        );
        for k in 0..100 {
            assert_eq!(f.lookup(k * 3), Some(Address::new(0x10_0000 + k * 64)));
        }
        assert_eq!(f.lookup(1), None);
    }

    #[test]
    fn concurrent_inserts_agree_on_one_winner() {
        let f = Forwarding::new(64);
        let winners: Vec<Vec<Address>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4usize)
                .map(|t| {
                    let f = &f;
                    s.spawn(move || {
                        (0..64)
                            .map(|k| f.insert(k, Address::new((t + 1) << 20 | k * 8)).unwrap())
                            .collect()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for k in 0..64 {
            let w = winners[0][k];
            assert!(winners.iter().all(|v| v[k] == w));
            assert_eq!(f.lookup(k), Some(w));
        }
    }
}
