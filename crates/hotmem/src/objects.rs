//! A small, complete object model: objects that carry a checksum of their
//! contents, and root tables, one per thread. It is what the demo and the
//! tests run on, and an example of an [`ObjectModel`] to start from.
//!
//! Each object is `[size: u64][id: u64][checksum: u64][payload...]`; the
//! payload is a pseudo-random pattern derived from the id, and the checksum
//! covers it, so [`SimpleObjects::verify`] proves that every live object
//! survived every relocation intact.

use crate::{Address, Forwarding, ObjectModel};
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

/// Header bytes of every object: size, id, checksum.
pub const HEADER: usize = 24;

/// A reference to a live object, with what it must still contain.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// Where the object is now (updated by collections).
    pub addr: Address,
    /// Its id.
    pub id: u64,
    /// Its size in bytes, header included.
    pub size: usize,
    /// The checksum of its payload.
    pub checksum: u64,
}

/// An object whose contents are not what was written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// The root that found it.
    pub root: Root,
    /// What the header or payload says instead: (size, id, checksum).
    pub found: (u64, u64, u64),
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object {} at {} ({} bytes, checksum {:#x}) reads size {}, id {}, checksum {:#x}",
            self.root.id,
            self.root.addr,
            self.root.size,
            self.root.checksum,
            self.found.0,
            self.found.1,
            self.found.2
        )
    }
}

impl std::error::Error for Corruption {}

/// The roots of one thread. Lock it only briefly and never while polling
/// or allocating (see the crate docs).
#[derive(Debug, Default)]
pub struct RootTable {
    roots: Mutex<Vec<Root>>,
}

impl RootTable {
    /// Keeps an object alive.
    pub fn push(&self, root: Root) {
        self.roots.lock().push(root);
    }

    /// Drops the root at `index` (in any order; the last one takes its place).
    pub fn swap_remove(&self, index: usize) -> Option<Root> {
        let mut roots = self.roots.lock();
        (index < roots.len()).then(|| roots.swap_remove(index))
    }

    /// The root at `index`.
    pub fn get(&self, index: usize) -> Option<Root> {
        self.roots.lock().get(index).copied()
    }

    /// How many roots.
    pub fn len(&self) -> usize {
        self.roots.lock().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.roots.lock().is_empty()
    }

    /// Drops every root.
    pub fn clear(&self) {
        self.roots.lock().clear();
    }

    /// Bytes of the objects this table keeps alive.
    pub fn live_bytes(&self) -> usize {
        self.roots.lock().iter().map(|r| r.size).sum()
    }
}

/// The object model: every registered [`RootTable`]'s roots are the live
/// objects (objects hold no references to each other).
#[derive(Debug, Default)]
pub struct SimpleObjects {
    tables: Mutex<Vec<Arc<RootTable>>>,
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: a cheap pattern that differs per id and per word.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn seed(id: u64) -> u64 {
    id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

fn mix(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(0x0000_0100_0000_01b3)
}

impl SimpleObjects {
    /// An empty model.
    pub fn new() -> Arc<SimpleObjects> {
        Arc::new(SimpleObjects::default())
    }

    /// A new root table, included in marking from now on.
    pub fn root_table(&self) -> Arc<RootTable> {
        let t = Arc::new(RootTable::default());
        self.tables.lock().push(t.clone());
        t
    }

    /// Writes object `id` of `size` bytes at `addr` and returns its root.
    ///
    /// # Safety
    /// `addr` must be a fresh allocation of at least `size` bytes, 8-byte
    /// aligned, that nothing else uses.
    ///
    /// # Panics
    /// If `size` is below [`HEADER`] or not a multiple of 8.
    pub unsafe fn init(addr: Address, size: usize, id: u64) -> Root {
        assert!(size >= HEADER && size % 8 == 0, "object size {size}");
        let words = addr.as_ptr::<u64>();
        let mut state = seed(id);
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for i in HEADER / 8..size / 8 {
            let w = next(&mut state);
            hash = mix(hash, w);
            // SAFETY: word `i` lies inside the `size` bytes the caller owns.
            unsafe { words.add(i).write(w) };
        }
        // SAFETY: the three header words lie inside the allocation.
        unsafe {
            words.write(size as u64);
            words.add(1).write(id);
            words.add(2).write(hash);
        }
        Root {
            addr,
            id,
            size,
            checksum: hash,
        }
    }

    /// Re-reads one object and checks it against its root.
    ///
    /// # Safety
    /// `root` must be a root of this model, and no collection may run
    /// meanwhile (call it from an attached mutator thread, which a
    /// collection waits for, or when no collection can start).
    ///
    /// # Errors
    /// [`Corruption`] if the header or payload differs.
    pub unsafe fn check(root: &Root) -> Result<(), Corruption> {
        let words = root.addr.as_ptr::<u64>();
        // SAFETY: a live root points at its whole object.
        let (size, id, stored) =
            unsafe { (words.read(), words.add(1).read(), words.add(2).read()) };
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for i in HEADER / 8..root.size / 8 {
            // SAFETY: as above.
            hash = mix(hash, unsafe { words.add(i).read() });
        }
        if size as usize == root.size
            && id == root.id
            && stored == root.checksum
            && hash == root.checksum
        {
            Ok(())
        } else {
            Err(Corruption {
                root: *root,
                found: (size, id, hash),
            })
        }
    }

    /// Checks every live object; returns how many.
    ///
    /// # Safety
    /// No collection may run meanwhile (see [`SimpleObjects::check`]).
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify(&self) -> Result<usize, Corruption> {
        let mut n = 0;
        for t in self.tables.lock().iter() {
            for r in t.roots.lock().iter() {
                // SAFETY: passed on from the caller.
                unsafe { SimpleObjects::check(r)? };
                n += 1;
            }
        }
        Ok(n)
    }

    /// Live objects and their bytes.
    pub fn live(&self) -> (usize, usize) {
        self.tables
            .lock()
            .iter()
            .map(|t| {
                let r = t.roots.lock();
                (r.len(), r.iter().map(|r| r.size).sum::<usize>())
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

impl ObjectModel for SimpleObjects {
    fn mark(&self, live: &mut dyn FnMut(Address)) {
        for t in self.tables.lock().iter() {
            for r in t.roots.lock().iter() {
                live(r.addr);
            }
        }
    }

    fn object_size(&self, obj: Address) -> usize {
        // SAFETY: the runtime asks only about objects `mark` reported, whose
        // first word is their size.
        unsafe { obj.as_ptr::<u64>().read() as usize }
    }

    fn update_references(&self, forwarding: &Forwarding) {
        for t in self.tables.lock().iter() {
            for r in t.roots.lock().iter_mut() {
                r.addr = forwarding.forward(r.addr);
            }
        }
    }
}
