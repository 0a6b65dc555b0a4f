//! Where a table lives ([`TableHome`]) and growing it: the one allocation
//! a table needs, done with its owner rooted and read again afterwards.

use super::Machine;
use super::error::HeapError;
use super::gc::roots::GLOBAL_NAMES;
use super::object::{Obj, class, instance};
use super::table::{self, Birth, Pairs, entries_size, fill_grown, grown_capacity};
use super::value::Value;
use hotmem::BarrierSet;

/// A table's owner.
#[derive(Copy, Clone, Debug)]
pub(crate) enum TableHome {
    /// The global-name table (root word, count in the VM).
    GlobalNames,
    /// The fields of the instance in the stack word `holder`.
    Fields {
        /// A word of the published value stack holding the instance.
        holder: *const u64,
    },
    /// The methods of the class in the stack word `holder`.
    Methods {
        /// A word of the published value stack holding the class.
        holder: *const u64,
    },
}

impl TableHome {
    /// The owner object and the word of its entries, for object homes.
    ///
    /// # Safety
    /// `holder` is a word of the published value stack holding an object
    /// of the home's kind.
    unsafe fn owner(self) -> Option<(Obj, usize)> {
        match self {
            TableHome::GlobalNames => None,
            // SAFETY: the caller's stack word, read now.
            TableHome::Fields { holder } => Some((
                unsafe { Obj::new(Value::from_bits(holder.read())) },
                instance::FIELDS,
            )),
            // SAFETY: as above.
            TableHome::Methods { holder } => Some((
                unsafe { Obj::new(Value::from_bits(holder.read())) },
                class::METHODS,
            )),
        }
    }
}

impl<B: BarrierSet> Machine<B> {
    /// The table's pairs (`None` for none yet) and key count.
    ///
    /// # Safety
    /// As [`TableHome::owner`].
    pub(crate) unsafe fn table(&self, home: TableHome) -> (Option<Pairs>, u32) {
        // SAFETY: the caller's home: an instance's pairs, or the entries in
        // a word of the live owner, or in the root.
        unsafe {
            match (home, home.owner()) {
                (TableHome::Fields { .. }, Some((owner, _))) => {
                    let count = owner.count() & !instance::OUTGROWN;
                    (Pairs::of_instance(&self.heap, owner), count)
                }
                (_, Some((owner, word))) => (
                    Pairs::of_entries(self.heap.load(owner.word(word))),
                    owner.count(),
                ),
                (_, None) => (
                    Pairs::of_entries(self.roots.get(GLOBAL_NAMES)),
                    self.global_names,
                ),
            }
        }
    }

    /// Doubles the table's capacity (or gives it its first entries), in a
    /// new `Entries` object; an instance's outgrown inline pairs are
    /// cleared. **May collect**; the value stack must be published.
    ///
    /// # Safety
    /// As [`TableHome::owner`].
    ///
    /// # Errors
    /// [`HeapError`] if the new entries do not fit.
    pub(crate) unsafe fn grow_table(&mut self, home: TableHome) -> Result<(), HeapError> {
        // SAFETY: the caller's home (an instance's class is a class).
        let capacity = unsafe {
            let (entries, count) = self.table(home);
            let expected = match (home, home.owner()) {
                (TableHome::Fields { .. }, Some((instance, _))) => {
                    // The class learns how many fields its instances need:
                    // the next ones get room for them at once.
                    let class = Obj::new(self.heap.peek(instance.word(instance::CLASS)));
                    let hint = class.raw(class::FIELDS_HINT).max(u64::from(count) + 1);
                    class.set_raw(class::FIELDS_HINT, hint);
                    hint as u32
                }
                _ => 0,
            };
            grown_capacity(entries, expected)
        };
        // A class's methods never move, so that a method call reads them
        // without the load barrier (`Heap::peek`).
        let (addr, birth) = match home {
            TableHome::Methods { .. } => (
                self.heap.alloc_non_moving(entries_size(capacity))?,
                Birth::NonMoving,
            ),
            _ => (self.heap.alloc(entries_size(capacity))?, Birth::Young),
        };
        // SAFETY: the home read again after the allocation; `addr` is fresh
        // with room for `capacity` pairs, at least twice the old count.
        unsafe {
            let (old, _) = self.table(home);
            let new = fill_grown(&self.heap, addr, capacity, old, birth).value();
            match home.owner() {
                Some((owner, word)) => {
                    if let TableHome::Fields { .. } = home
                        && owner.count() & instance::OUTGROWN == 0
                    {
                        if let Some(old) = old {
                            table::clear(&self.heap, old);
                        }
                        owner.set_count(owner.count() | instance::OUTGROWN);
                    }
                    self.heap.store(owner.word(word), new);
                }
                None => self.roots.set(GLOBAL_NAMES, new),
            }
        }
        Ok(())
    }

    /// Counts one more key in the table.
    ///
    /// # Safety
    /// As [`TableHome::owner`].
    pub(crate) unsafe fn count_key(&mut self, home: TableHome) {
        // SAFETY: the caller's home.
        match unsafe { home.owner() } {
            Some((owner, _)) => owner.set_count(owner.count() + 1),
            None => self.global_names += 1,
        }
    }
}
