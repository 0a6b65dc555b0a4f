//! Interning of region states: the tree stores a 4-byte id per boundary
//! point instead of the 8-byte state, which keeps a point at 12 bytes of
//! payload. A runtime has few distinct states (tags x call sites), so the
//! table stays small; ids are never reused, so equal ids mean equal states.

use crate::region_state::RegionState;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The id of an interned [`RegionState`]; 0 is always `RELEASED`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct StateId(u32);

impl StateId {
    pub(crate) const RELEASED: StateId = StateId(0);

    /// An id by number, for tests of the structures that hold ids.
    #[cfg(test)]
    pub(crate) fn from_raw(raw: u32) -> StateId {
        StateId(raw)
    }
}

/// A multiply-shift hasher for the one `u64` a state is: the table is
/// looked up on every operation, and SipHash would cost more than the tree.
#[derive(Default)]
pub(crate) struct StateHasher(u64);

impl Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
}

/// Every distinct state the tree has used.
#[derive(Debug)]
pub(crate) struct StateTable {
    states: Vec<RegionState>,
    ids: HashMap<RegionState, StateId, BuildHasherDefault<StateHasher>>,
}

impl Default for StateTable {
    fn default() -> Self {
        let mut ids = HashMap::default();
        ids.insert(RegionState::RELEASED, StateId::RELEASED);
        StateTable {
            states: vec![RegionState::RELEASED],
            ids,
        }
    }
}

impl StateTable {
    /// The state with id `id`.
    #[inline]
    pub(crate) fn get(&self, id: StateId) -> RegionState {
        self.states[id.0 as usize]
    }

    /// The id of `state`, adding it if new.
    ///
    /// # Panics
    /// After 2^32 distinct states (a runtime has thousands at most).
    #[inline]
    pub(crate) fn intern(&mut self, state: RegionState) -> StateId {
        if let Some(&id) = self.ids.get(&state) {
            return id;
        }
        let id = StateId(u32::try_from(self.states.len()).expect("fewer than 2^32 states"));
        self.states.push(state);
        self.ids.insert(state, id);
        id
    }

    /// Distinct states interned.
    pub(crate) fn len(&self) -> usize {
        self.states.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack_id::StackId;
    use hotmem_os::MemTag;

    #[test]
    fn interning_is_stable() {
        let mut t = StateTable::default();
        let a = RegionState::reserved(MemTag::CODE, StackId::NONE);
        let b = a.committed_now(StackId::NONE);
        let ia = t.intern(a);
        assert_eq!(t.intern(RegionState::RELEASED), StateId::RELEASED);
        assert_ne!(t.intern(b), ia);
        assert_eq!(t.intern(a), ia);
        assert_eq!(t.get(ia), a);
        assert_eq!(t.len(), 3);
    }
}
