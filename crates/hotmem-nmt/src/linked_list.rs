//! The baseline the tree is measured against: HotSpot's virtual memory
//! tracker before the tree (JDK 8 to 21): a sorted singly linked list of
//! reserved regions, each holding a sorted linked list of its committed
//! regions. Every operation walks the list from its head: O(n).
//!
//! Used only for comparison (benchmark, model tests); it behaves exactly
//! like the tree (same splits and merges), behind the same [`Tracker`] API.

use crate::error::TrackError;
use crate::region_state::RegionState;
use crate::stack_id::StackId;
use crate::store::{Change, check, sealed::StoreImpl};
use crate::tracker::Tracker;
use hotmem_os::{Address, MemRange, MemTag};

/// [`Tracker`] over the sorted-linked-list baseline.
pub type LinkedListTracker = Tracker<LinkedList>;

/// A committed region, in its reserved region's sorted list.
struct CNode {
    start: usize,
    end: usize,
    stack: StackId,
    next: Option<Box<CNode>>,
}

/// A reserved region, in the sorted list of all of them.
struct RNode {
    start: usize,
    end: usize,
    tag: MemTag,
    stack: StackId,
    committed: Option<Box<CNode>>,
    next: Option<Box<RNode>>,
}

// Iterative drops: the default recursive one overflows the stack on long lists.
impl Drop for CNode {
    fn drop(&mut self) {
        let mut next = self.next.take();
        while let Some(mut n) = next {
            next = n.next.take();
        }
    }
}

impl Drop for RNode {
    fn drop(&mut self) {
        let mut next = self.next.take();
        while let Some(mut n) = next {
            next = n.next.take();
        }
    }
}

/// The sorted-linked-list region store (see the module docs).
#[derive(Default)]
pub struct LinkedList {
    head: Option<Box<RNode>>,
}

impl std::fmt::Debug for LinkedList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkedList")
            .field("nodes", &self.node_count())
            .finish()
    }
}

impl RNode {
    fn reserved(&self) -> RegionState {
        RegionState::reserved(self.tag, self.stack)
    }

    /// Calls `f(start, end, state)` for the committed regions and the gaps
    /// between them, in order.
    fn pieces(&self, mut f: impl FnMut(usize, usize, RegionState)) {
        let mut at = self.start;
        let mut c = self.committed.as_deref();
        while let Some(n) = c {
            if n.start > at {
                f(at, n.start, self.reserved());
            }
            f(
                n.start,
                n.end,
                RegionState::committed(self.tag, self.stack, n.stack),
            );
            at = n.end;
            c = n.next.as_deref();
        }
        if at < self.end {
            f(at, self.end, self.reserved());
        }
    }

    /// Splits the node at `a` (strictly inside it) into two.
    fn split_at(&mut self, a: usize) {
        let right = Box::new(RNode {
            start: a,
            end: self.end,
            tag: self.tag,
            stack: self.stack,
            committed: split_clist(&mut self.committed, a),
            next: self.next.take(),
        });
        self.end = a;
        self.next = Some(right);
    }
}

/// Cuts a committed list at `a`, returning the part at and above it.
fn split_clist(list: &mut Option<Box<CNode>>, a: usize) -> Option<Box<CNode>> {
    let mut link = list;
    while link.as_ref().is_some_and(|c| c.end <= a) {
        link = &mut link.as_mut().expect("checked").next;
    }
    let c = link.as_mut()?;
    if c.start >= a {
        return link.take();
    }
    let right = Box::new(CNode {
        start: a,
        end: c.end,
        stack: c.stack,
        next: c.next.take(),
    });
    c.end = a;
    Some(right)
}

/// Appends `tail` (all above `list`) to `list`, merging at the junction.
fn append_clist(list: &mut Option<Box<CNode>>, tail: Option<Box<CNode>>) {
    let mut link = list;
    while link.as_ref().is_some_and(|c| c.next.is_some()) {
        link = &mut link.as_mut().expect("checked").next;
    }
    match link {
        None => *link = tail,
        Some(last) => {
            if let Some(mut t) = tail {
                if last.end == t.start && last.stack == t.stack {
                    last.end = t.end;
                    last.next = t.next.take();
                } else {
                    last.next = Some(t);
                }
            }
        }
    }
}

impl LinkedList {
    fn iter(&self) -> impl Iterator<Item = &RNode> {
        let mut next = self.head.as_deref();
        std::iter::from_fn(move || {
            let n = next?;
            next = n.next.as_deref();
            Some(n)
        })
    }

    /// Calls `f` for every piece (reserved or not) of `range`, until it
    /// returns true; returns whether it did.
    fn find_piece(&self, range: MemRange, mut f: impl FnMut(usize, usize, bool) -> bool) -> bool {
        let (s, e) = (range.start().get(), range.end().get());
        let mut at = s;
        for n in self.iter() {
            if n.end <= s {
                continue;
            }
            if n.start >= e {
                break;
            }
            if n.start > at && f(at, n.start, false) {
                return true;
            }
            if f(n.start.max(s), n.end.min(e), true) {
                return true;
            }
            at = n.end;
        }
        at < e && f(at, e, false)
    }

    /// The first maximal run of `range` that is (or is not) reserved.
    fn first_where(&self, range: MemRange, reserved: bool) -> Option<MemRange> {
        let mut found: Option<(usize, usize)> = None;
        self.find_piece(range, |a, b, r| match (found, r == reserved) {
            (None, false) => false,
            (None, true) => {
                found = Some((a, b));
                false
            }
            (Some((start, end)), true) if end == a => {
                found = Some((start, b));
                false
            }
            (Some(_), _) => true,
        });
        found.and_then(|(a, b)| MemRange::from_bounds(Address::new(a), Address::new(b)))
    }

    /// Merges touching regions with the same tag and stack from the region
    /// that ends at or after `s` up to the first that starts after `e`.
    fn merge_around(&mut self, s: usize, e: usize) {
        let mut link = &mut self.head;
        while link.as_ref().is_some_and(|n| n.end < s) {
            link = &mut link.as_mut().expect("checked").next;
        }
        while let Some(node) = link.as_mut() {
            if node.start > e {
                break;
            }
            let mergeable = node
                .next
                .as_ref()
                .is_some_and(|m| m.start == node.end && m.tag == node.tag && m.stack == node.stack);
            if mergeable {
                let mut m = node.next.take().expect("checked");
                node.end = m.end;
                node.next = m.next.take();
                append_clist(&mut node.committed, m.committed.take());
                continue;
            }
            link = &mut link.as_mut().expect("checked").next;
        }
    }
}

impl StoreImpl for LinkedList {
    fn first_reserved(&self, range: MemRange) -> Option<MemRange> {
        self.first_where(range, true)
    }

    fn first_gap(&self, range: MemRange) -> Option<MemRange> {
        self.first_where(range, false)
    }

    fn apply(
        &mut self,
        range: MemRange,
        change: Change,
        on_change: &mut dyn FnMut(RegionState, RegionState, usize),
    ) -> Result<(), TrackError> {
        check(self, range, change)?;
        let (s, e) = (range.start().get(), range.end().get());
        let mut link = &mut self.head;
        if let Change::Reserve(state) = change {
            // Sorted insert: walk to the first region above the range.
            while link.as_ref().is_some_and(|n| n.start < s) {
                link = &mut link.as_mut().expect("checked").next;
            }
            let next = link.take();
            *link = Some(Box::new(RNode {
                start: s,
                end: e,
                tag: state.tag(),
                stack: state.reserved_by(),
                committed: None,
                next,
            }));
            on_change(RegionState::RELEASED, state, e - s);
            self.merge_around(s, e);
            return Ok(());
        }
        while link.as_ref().is_some_and(|n| n.end <= s) {
            link = &mut link.as_mut().expect("checked").next;
        }
        while link.as_ref().is_some_and(|n| n.start < e) {
            let node = link.as_mut().expect("checked");
            if node.start < s {
                node.split_at(s);
                link = &mut link.as_mut().expect("checked").next;
                continue;
            }
            if node.end > e {
                node.split_at(e);
            }
            // The node lies inside the range now.
            node.pieces(|a, b, old| {
                let new = change.apply(old);
                if new != old {
                    on_change(old, new, b - a);
                }
            });
            match change {
                Change::Release => {
                    let mut gone = link.take().expect("checked");
                    *link = gone.next.take();
                    continue;
                }
                Change::Commit(stack) => {
                    node.committed = Some(Box::new(CNode {
                        start: node.start,
                        end: node.end,
                        stack,
                        next: None,
                    }));
                }
                Change::Uncommit => node.committed = None,
                Change::SetTag(tag) => node.tag = tag,
                Change::Reserve(_) => unreachable!("handled above"),
            }
            link = &mut link.as_mut().expect("checked").next;
        }
        self.merge_around(s, e);
        Ok(())
    }

    fn for_each(&self, range: MemRange, f: &mut dyn FnMut(MemRange, RegionState)) {
        let (s, e) = (range.start().get(), range.end().get());
        for n in self.iter() {
            if n.end <= s {
                continue;
            }
            if n.start >= e {
                break;
            }
            n.pieces(|a, b, st| {
                let (a, b) = (a.max(s), b.min(e));
                if a < b {
                    f(
                        MemRange::from_bounds(Address::new(a), Address::new(b)).expect("ordered"),
                        st,
                    );
                }
            });
        }
    }

    fn node_count(&self) -> usize {
        self.iter()
            .map(|n| {
                let mut c = n.committed.as_deref();
                let mut k = 1;
                while let Some(x) = c {
                    k += 1;
                    c = x.next.as_deref();
                }
                k
            })
            .sum()
    }

    fn check_invariants(&self) {
        let mut prev: Option<&RNode> = None;
        for n in self.iter() {
            assert!(n.start < n.end, "empty region");
            if let Some(p) = prev {
                assert!(p.end <= n.start, "regions overlap or are unsorted");
                assert!(
                    !(p.end == n.start && p.tag == n.tag && p.stack == n.stack),
                    "touching equal regions not merged"
                );
            }
            let mut at = n.start;
            let mut last: Option<&CNode> = None;
            let mut c = n.committed.as_deref();
            while let Some(x) = c {
                assert!(
                    at <= x.start && x.start < x.end && x.end <= n.end,
                    "bad committed region"
                );
                if let Some(l) = last {
                    assert!(
                        !(l.end == x.start && l.stack == x.stack),
                        "committed not merged"
                    );
                }
                at = x.end;
                last = Some(x);
                c = x.next.as_deref();
            }
            prev = Some(n);
        }
    }
}
