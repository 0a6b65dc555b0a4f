//! The embedder's side of a collection: the object model.

use hotmem_os::Address;

/// What the runtime needs to know about the embedder's objects to collect
/// them. Kept minimal: the runtime never interprets object contents, it
/// only copies bytes.
///
/// A collection runs at a safepoint (every mutator stopped or in native
/// code), in this order:
/// 1. [`mark`](ObjectModel::mark): the embedder reports every live object,
///    e.g. by tracing from its roots;
/// 2. the runtime evacuates sparse pages: it copies each live object on
///    them ([`object_size`](ObjectModel::object_size) bytes) to a new place
///    on the GC workers, and frees the pages;
/// 3. [`update_references`](ObjectModel::update_references): the embedder
///    rewrites every reference it holds (roots, and fields of live objects)
///    through the [`Forwarding`] table.
///
/// Methods are called from the collecting thread and, for `object_size`,
/// from GC worker threads concurrently.
pub trait ObjectModel: Send + Sync {
    /// Calls `live` once for the address of every live object in the heap.
    fn mark(&self, live: &mut dyn FnMut(Address));

    /// The size in bytes, header included, of the live object at `obj`.
    fn object_size(&self, obj: Address) -> usize;

    /// Rewrites every reference to a moved object. `forwarding` maps each
    /// moved object's old address to its new one; objects that did not move
    /// are not in it ([`Forwarding::forward`] returns them unchanged).
    fn update_references(&self, forwarding: &Forwarding);
}

/// Old address to new address of every object moved by one collection.
#[derive(Debug, Default, Clone)]
pub struct Forwarding {
    /// Sorted by old address.
    entries: Vec<(Address, Address)>,
}

impl Forwarding {
    pub(crate) fn from_unsorted(mut entries: Vec<(Address, Address)>) -> Forwarding {
        entries.sort_unstable_by_key(|&(from, _)| from);
        Forwarding { entries }
    }

    /// Where the object that was at `old` is now, `None` if it did not move.
    pub fn lookup(&self, old: Address) -> Option<Address> {
        self.entries
            .binary_search_by_key(&old, |&(from, _)| from)
            .ok()
            .map(|i| self.entries[i].1)
    }

    /// The current address of the object that was at `old` (unchanged if it
    /// did not move).
    pub fn forward(&self, old: Address) -> Address {
        self.lookup(old).unwrap_or(old)
    }

    /// How many objects moved.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing moved.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every (old, new) pair, by old address.
    pub fn iter(&self) -> impl Iterator<Item = (Address, Address)> + '_ {
        self.entries.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::Forwarding;
    use hotmem_os::Address;

    fn a(n: usize) -> Address {
        Address::new(n)
    }

    #[test]
    fn forwarding_finds_moved_objects_and_leaves_others() {
        let f = Forwarding::from_unsorted(vec![
            (a(0x3000), a(0x9000)),
            (a(0x1000), a(0x8000)),
            (a(0x2000), a(0x8800)),
        ]);
        assert_eq!(f.len(), 3);
        assert_eq!(f.lookup(a(0x1000)), Some(a(0x8000)));
        assert_eq!(f.lookup(a(0x3000)), Some(a(0x9000)));
        assert_eq!(
            f.lookup(a(0x1008)),
            None,
            "an interior address is not an object"
        );
        assert_eq!(f.forward(a(0x4000)), a(0x4000), "unmoved objects stay");
        let pairs: Vec<_> = f.iter().collect();
        assert!(
            pairs.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted by old address"
        );
        assert!(Forwarding::default().is_empty());
    }
}
