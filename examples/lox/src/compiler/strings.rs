//! One shared `Rc<str>` per distinct string the compiler stores (names and
//! literals), so that a name used a thousand times is allocated once. This
//! shares storage only: every use still gets its own constant slot.

use std::collections::HashSet;
use std::rc::Rc;

#[derive(Default)]
pub(super) struct Strings {
    known: HashSet<Rc<str>>,
}

impl Strings {
    /// The shared copy of `text`.
    pub(super) fn intern(&mut self, text: &str) -> Rc<str> {
        if let Some(known) = self.known.get(text) {
            return Rc::clone(known);
        }
        let shared: Rc<str> = Rc::from(text);
        self.known.insert(Rc::clone(&shared));
        shared
    }
}
