//! `Forwarding`: where the objects of one evacuated page went (ZGC's
//! `ZForwarding`).
//!
//! An open-addressing table from an object's word offset in its page to its
//! new address, sized for the page's live objects when the page is selected.
//! Entries are claimed with a compare-and-swap on the key, so workers may
//! fill it concurrently; with concurrent relocation a mutator's load barrier
//! will race a worker for the same object through [`Forwarding::insert`],
//! and the loser takes the winner's copy.

use super::side_table::{SideTable, Words};
use crate::sync::{AtomicU64, Ordering, spin_loop};
use hotmem_os::{Address, Memory};

/// The forwarding table of one page: entries of two words in a side table,
/// the key (word offset + 1; 0 when free) and the new address (0 until
/// published).
pub(crate) struct Forwarding {
    words: Words,
    mask: usize,
}

#[inline]
fn hash(key: usize) -> usize {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
}

impl Forwarding {
    fn entries_for(objects: usize) -> usize {
        (objects.max(1) * 2).next_power_of_two()
    }

    /// Side-table words a table for `objects` live objects takes.
    pub(crate) fn words_for(objects: usize) -> usize {
        2 * Self::entries_for(objects)
    }

    /// A table for `objects` live objects, in words carved from `table`.
    pub(crate) fn new(table: &mut SideTable, objects: usize) -> Forwarding {
        let size = Self::entries_for(objects);
        Forwarding {
            words: table.carve(2 * size),
            mask: size - 1,
        }
    }

    #[inline]
    fn entry(&self, i: usize) -> (&AtomicU64, &AtomicU64) {
        let w = self.words.get();
        (&w[2 * i], &w[2 * i + 1])
    }

    fn len(&self) -> usize {
        self.mask + 1
    }

    /// Records that the object at word `offset` moved to `to`, unless
    /// another thread recorded it first: returns the address that won.
    /// `None` if the table is full (more objects than it was sized for).
    pub(crate) fn insert(&self, offset: usize, to: Address) -> Option<Address> {
        let key = offset as u64 + 1;
        let mut i = hash(offset + 1) & self.mask;
        for _ in 0..self.len() {
            let (k, t) = self.entry(i);
            match k.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    t.store(to.get() as u64, Ordering::Release);
                    return Some(to);
                }
                Err(other) if other == key => {
                    // Another thread claimed it: wait for its address.
                    loop {
                        let a = t.load(Ordering::Acquire);
                        if a != 0 {
                            return Some(Address::new(a as usize));
                        }
                        spin_loop();
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
        let key = offset as u64 + 1;
        let mut i = hash(offset + 1) & self.mask;
        for _ in 0..self.len() {
            let (k, t) = self.entry(i);
            match k.load(Ordering::Acquire) {
                0 => return None,
                found if found == key => {
                    let a = t.load(Ordering::Acquire);
                    return (a != 0).then(|| Address::new(a as usize));
                }
                _ => i = (i + 1) & self.mask,
            }
        }
        None
    }
}

/// One collection's forwarding tables: one per page selected for
/// evacuation, none for the others, all in one side table.
pub(crate) struct ForwardingTables {
    tables: Vec<Option<Forwarding>>,
    /// The tables' words: dropped after `tables`, which point into it.
    _words: Option<SideTable>,
}

impl ForwardingTables {
    /// No table: nothing is evacuated.
    pub(crate) fn empty() -> ForwardingTables {
        ForwardingTables {
            tables: Vec::new(),
            _words: None,
        }
    }

    /// A table for each page `i` with `live_objects[i]` given (the page's
    /// live objects), none for the pages without.
    pub(crate) fn new(memory: &Memory, live_objects: &[Option<usize>]) -> ForwardingTables {
        let words = live_objects
            .iter()
            .flatten()
            .map(|&n| Forwarding::words_for(n))
            .sum();
        let mut side = SideTable::new(memory, words);
        let tables = live_objects
            .iter()
            .map(|n| n.map(|n| Forwarding::new(&mut side, n)))
            .collect();
        ForwardingTables {
            tables,
            _words: Some(side),
        }
    }

    /// Page `page`'s table, if it was selected.
    #[inline]
    pub(crate) fn get(&self, page: usize) -> Option<&Forwarding> {
        self.tables.get(page)?.as_ref()
    }

    /// Takes page `page` out of the selection (its table's words stay
    /// unused until the tables are dropped).
    pub(crate) fn remove(&mut self, page: usize) {
        if let Some(t) = self.tables.get_mut(page) {
            *t = None;
        }
    }

    /// Whether any page was selected.
    pub(crate) fn any(&self) -> bool {
        self.tables.iter().any(Option::is_some)
    }

    /// The selected pages' indices.
    pub(crate) fn pages(&self) -> impl Iterator<Item = usize> + '_ {
        self.tables
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|_| i))
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    fn table(objects: usize) -> (SideTable, Forwarding) {
        let mut t = SideTable::new(&hotmem_os::Memory::new(), Forwarding::words_for(objects));
        let f = Forwarding::new(&mut t, objects);
        (t, f)
    }

    #[test]
    fn moved_objects_are_found_others_not() {
        let (_t, f) = table(100);
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
        let (_t, f) = table(64);
        let winners: Vec<Vec<Address>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4usize)
                .map(|t| {
                    let f = &f;
                    s.spawn(move || {
                        (0..64)
                            .map(|k| {
                                f.insert(k, Address::new(((t + 1) << 20) | (k * 8)))
                                    .unwrap()
                            })
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
