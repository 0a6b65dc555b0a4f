//! The relocation-set selection of every collector that moves objects:
//! which pages a collection evacuates.
//!
//! Pages of one size are sorted by live bytes, fewest first, and the set
//! grows along that order for as long as each step pays: the pages added
//! since the last accepted step, once their live bytes are packed into
//! fresh pages, must give back more than the fragmentation limit of
//! themselves. This is how ZGC selects (pages, not objects, are the unit,
//! and a page is worth moving only if moving it frees memory): a page that
//! is all live but half full is not moved on its own, since its objects
//! would fill half of another page; two such pages are, into one.

use super::collection::Collection;
use super::meta::{ForwardingTables, Overlap, PageGc};
use crate::GcError;
use crate::vm::{Binding, ObjectReference};
use hotmem_os::Address;
use hotmem_page::{PageState, PageType};
use std::sync::atomic::Ordering;

/// A page that may be evacuated: its index, live bytes, and the bytes
/// below its top (what its objects, live or dead, take).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Candidate {
    pub(crate) page: usize,
    pub(crate) live_bytes: usize,
    pub(crate) used_bytes: usize,
}

/// The pages of `candidates` (all of `page_size` bytes) to evacuate, given
/// the fragmentation limit (a fraction in `(0, 1)`).
pub(crate) fn select(mut candidates: Vec<Candidate>, page_size: usize, limit: f64) -> Vec<usize> {
    candidates.sort_unstable_by_key(|c| c.live_bytes);
    let (mut live, mut selected_from, mut selected_to) = (0usize, 0usize, 0usize);
    for (i, c) in candidates.iter().enumerate() {
        live += c.live_bytes;
        let from = i + 1;
        let to = live.div_ceil(page_size);
        let (diff_from, diff_to) = (from - selected_from, to.saturating_sub(selected_to));
        let reclaimed = (diff_from as f64 - diff_to as f64) / diff_from as f64;
        if reclaimed > limit {
            selected_from = from;
            selected_to = to;
        }
    }
    candidates[..selected_from].iter().map(|c| c.page).collect()
}

/// The young pages of `candidates` to evacuate: each whose garbage (the
/// bytes below its top that no live object takes) is more than `limit` of
/// its used part. Their survivors go to the old target pages that stay
/// installed from one collection to the next (not to fresh pages of their
/// own, as [`select`] counts), so that even a lone young page with a few
/// survivors is worth evacuating: kept where it is, it would become an old
/// page full of garbage until a full collection. A young page whose
/// objects all live stays (promoted where it is), however little of it
/// they fill.
pub(crate) fn select_young(candidates: &[Candidate], limit: f64) -> Vec<usize> {
    candidates
        .iter()
        .filter(|c| {
            let garbage = c.used_bytes.saturating_sub(c.live_bytes);
            garbage as f64 > limit * c.used_bytes as f64
        })
        .map(|c| c.page)
        .collect()
}

impl<B: Binding> Collection<'_, B> {
    /// Chooses the relocation set: among the small and the medium pages
    /// without a pinned object (and not of the non-moving space), the old ones whose objects pack into fewer
    /// pages (see [`select`]) and the young ones mostly garbage (see
    /// [`select_young`]); gives each a forwarding table.
    /// Notes the empty pages (freed next) and the pages relocation visits.
    pub(crate) fn select_relocation_set(&mut self) {
        let groups = self.candidates();
        let limit = self.heap.fragmentation_limit;
        let mut live_objects = vec![None; self.map.pages.len()];
        for (group, (page_size, candidates)) in groups.into_iter().enumerate() {
            let young = group % 2 == 1;
            let selected = if young {
                select_young(&candidates, limit)
            } else {
                select(candidates, page_size, limit)
            };
            for pi in selected {
                live_objects[pi] = Some(self.map.pages[pi].live.live_objects());
            }
        }
        self.forwarding = ForwardingTables::new(&self.heap.memory, &live_objects);
    }

    /// Walks the marked pages: counts live bytes, notes the empty pages and
    /// the pages relocation visits, and returns the candidates in four
    /// groups (small and medium pages, young and old), each with its page
    /// size. Young pages are selected apart from old ones, so that
    /// evacuating young pages never drags in an old page (which would make
    /// the update visit every live object instead of the remembered slots).
    fn candidates(&mut self) -> [(usize, Vec<Candidate>); 4] {
        let mut groups: [(usize, Vec<Candidate>); 4] = Default::default();
        for (pi, p) in self.map.pages.iter().enumerate() {
            if self.young_only() && !p.young {
                // Not marked: its objects are taken as live, it stays.
                continue;
            }
            let bytes = p.live.live_bytes();
            self.stats.live_bytes += bytes as u64;
            if p.live.live_objects() == 0 {
                if self.unused(p) {
                    self.empty.push(p.page.clone());
                }
                continue;
            }
            if p.large {
                continue;
            }
            self.relocation_work.push((p.page.node(), pi));
            if !p.pinned.load(Ordering::Relaxed) {
                let medium = p.page.page_type() == PageType::Medium;
                let group = &mut groups[usize::from(medium) * 2 + usize::from(p.young)];
                group.0 = group.0.max(p.page.size());
                group.1.push(Candidate {
                    page: pi,
                    live_bytes: bytes.min(p.page.size()),
                    used_bytes: p.top - p.start,
                });
            }
        }
        groups
    }
}

impl<B: Binding> Collection<'_, B> {
    /// Whether `p`, a page where marking found no live object, may be
    /// freed. A page still installed in an object allocator was kept at
    /// mark start by a cycle that moves nothing (see
    /// `GcHeap::keep_mutator_allocation`): it may hold objects allocated
    /// since, and be allocated in again. A page of the non-moving space
    /// may have been allocated in since the map was made too (what lies
    /// above the map's top is new, and its current pages are not retired
    /// at mark start): the space says whether it is unused, and if so lets
    /// go of it.
    pub(crate) fn unused(&self, p: &PageGc) -> bool {
        p.page.state() != PageState::Installed
            && (!p.non_moving || self.heap.non_moving.release_if_unused(&p.page, p.top))
    }

    /// The error for two marked objects of page `pi` that overlap.
    pub(crate) fn overlap_error(&self, pi: usize, o: Overlap) -> GcError {
        let at = |word| {
            ObjectReference::from_address(Address::new(self.map.address(pi, word)))
                .expect("a page address is not null")
        };
        GcError::OverlappingObjects {
            first: at(o.first),
            first_size: (o.first_end - o.first + 1) * 8,
            second: at(o.second),
        }
    }

    /// Walks the live map of every selected page: an overlap of two marked
    /// objects fails the collection before anything moves (copying them
    /// would duplicate bytes). For a relocation that does not walk each
    /// page as it copies it (one that runs while the mutators run).
    pub(crate) fn check_selected_pages(&self) -> Result<(), GcError> {
        for pi in self.forwarding.pages() {
            if let Err(o) = self.map.pages[pi].live.for_each_object(|_, _| {}) {
                return Err(self.overlap_error(pi, o));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 1000;

    fn pages(live: &[usize]) -> Vec<Candidate> {
        live.iter()
            .enumerate()
            .map(|(page, &live_bytes)| Candidate {
                page,
                live_bytes,
                used_bytes: PAGE,
            })
            .collect()
    }

    fn sorted(mut v: Vec<usize>) -> Vec<usize> {
        v.sort_unstable();
        v
    }

    #[test]
    fn a_page_that_would_fill_a_page_of_its_own_stays() {
        assert!(select(pages(&[500]), PAGE, 0.25).is_empty());
        assert!(select(pages(&[1000, 999, 990]), PAGE, 0.25).is_empty());
    }

    #[test]
    fn pages_that_pack_into_fewer_move() {
        // Two half-live pages fit one: 50% reclaimed.
        assert_eq!(sorted(select(pages(&[500, 500]), PAGE, 0.25)), vec![0, 1]);
        // Mostly garbage pages move, dense ones stay.
        assert_eq!(
            sorted(select(pages(&[10, 1000, 20, 990, 30]), PAGE, 0.25)),
            vec![0, 2, 4]
        );
    }

    #[test]
    fn a_young_page_mostly_garbage_moves_even_alone() {
        assert_eq!(select_young(&pages(&[10]), 0.25), vec![0]);
        assert_eq!(
            sorted(select_young(&pages(&[100, 800, 740, 760]), 0.25)),
            vec![0, 2],
            "more than a quarter garbage"
        );
        let all_live_but_short = Candidate {
            page: 0,
            live_bytes: 56,
            used_bytes: 56,
        };
        assert!(
            select_young(&[all_live_but_short], 0.25).is_empty(),
            "unused room is no garbage"
        );
    }

    #[test]
    fn the_set_grows_only_while_each_step_pays() {
        // 100 + 100 + 100 live fit one page (3 -> 1); adding the 800 page
        // needs a second page for 1 page moved: not worth it.
        assert_eq!(
            sorted(select(pages(&[100, 800, 100, 100]), PAGE, 0.25)),
            vec![0, 2, 3]
        );
        // Nothing live: every page goes (the collector frees empty pages
        // before selecting, but the rule holds anyway).
        assert_eq!(select(pages(&[0, 0]), PAGE, 0.25).len(), 2);
    }
}
