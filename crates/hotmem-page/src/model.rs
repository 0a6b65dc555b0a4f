//! A reference model of the page allocator that the property test and the
//! fuzz target drive real allocations against.

use crate::{
    Age, AllocPageError, CacheMode, FreeError, HeapConfig, NodeId, OwnedPage, Page, PageAllocator,
    PageRequest, PageSizes, PageState,
};
use hotmem_os::Memory;
use std::time::Instant;

/// One operation on a heap of two partitions of 16 MiB (medium pages of 4 MiB).
#[derive(Copy, Clone, Debug)]
pub enum Op {
    /// Allocate a small page preferring `node` (0, 1 or an unknown one).
    Small {
        /// Preferred node.
        node: u8,
    },
    /// Allocate a medium page.
    Medium {
        /// Preferred node.
        node: u8,
    },
    /// Allocate a large page of `granules` granules (0 is rejected).
    Large {
        /// Preferred node.
        node: u8,
        /// Size in granules.
        granules: u8,
    },
    /// Free the `index`-th live page (modulo), or free it twice.
    Free {
        /// Which page.
        index: u8,
        /// Free it a second time, which must fail and change nothing.
        twice: bool,
    },
    /// Undo the allocation of the `index`-th live page.
    Undo {
        /// Which page.
        index: u8,
    },
    /// Free a page of another heap (must fail, change nothing).
    FreeForeign,
    /// Uncommit every cached page.
    Uncommit,
}

const PART: usize = 16 << 20;
const MEDIUM: usize = 4 << 20;

fn node(n: u8) -> NodeId {
    NodeId::new(usize::from(n % 3))
}

/// Runs `ops` on a heap whose partitions cache free memory as `mode` says,
/// checking after each that the allocator agrees with the model: which
/// allocations succeed, used bytes per partition, live pages disjoint and
/// intact (each keeps the marks written into it, through merges, splits,
/// harvests and defragmentation), every rejected operation changed
/// nothing, committed bytes as the kernel counts, and the cache's own
/// invariants (in the mapped cache: ranges disjoint and maximal).
///
/// # Panics
/// When the allocator and the model disagree.
pub fn check_ops(mode: CacheMode, ops: &[Op]) {
    let memory = Memory::new();
    let config = HeapConfig::new(2 * PART)
        .partitions(&[NodeId::ZERO, NodeId::new(1)])
        .medium_page_size(MEDIUM)
        .cache_mode(mode);
    let heap = PageAllocator::new(&memory, config).expect("heap");
    let foreign_heap = PageAllocator::new(&memory, HeapConfig::new(8 << 20)).expect("heap");
    let sizes: PageSizes = heap.page_sizes();
    let mut live: Vec<OwnedPage> = Vec::new();
    let mut used = [0usize; 2];
    for op in ops {
        let before = heap.usage();
        match *op {
            Op::Small { node: n } | Op::Medium { node: n } | Op::Large { node: n, .. } => {
                let req = match *op {
                    Op::Small { .. } => PageRequest::small(&sizes, Age::EDEN, node(n)),
                    Op::Medium { .. } => PageRequest::medium(&sizes, Age::OLD, node(n)),
                    Op::Large { granules, .. } => PageRequest {
                        page_type: crate::PageType::Large,
                        size: usize::from(granules % 10) * sizes.granule(),
                        age: Age::EDEN,
                        node: node(n),
                    },
                    _ => unreachable!(),
                };
                let result = heap.alloc_page(req);
                let p = n % 3;
                if p == 2 {
                    assert_eq!(
                        result.unwrap_err(),
                        AllocPageError::UnknownNode(NodeId::new(2))
                    );
                } else if req.size == 0 || req.size > PART {
                    // Zero, or more than a partition can ever hold.
                    assert!(matches!(result, Err(AllocPageError::BadSize { .. })));
                } else {
                    let p = usize::from(p);
                    let fits = |i: usize| used[i] + req.size <= PART;
                    let expect = if fits(p) {
                        Some(p)
                    } else if fits(1 - p) {
                        Some(1 - p)
                    } else {
                        None
                    };
                    match (expect, result) {
                        (Some(i), Ok(page)) => {
                            assert_eq!(page.node(), NodeId::new(i));
                            assert_eq!(page.size(), req.size);
                            used[i] += req.size;
                            mark(&page);
                            live.push(page);
                        }
                        (None, Err(AllocPageError::HeapExhausted { .. })) => {}
                        (e, r) => panic!("{op:?}: expected {e:?}, got {r:?}"),
                    }
                }
                if !matches!(heap.usage().used, u if u == used[0] + used[1]) {
                    panic!("used drifted after {op:?}");
                }
            }
            Op::Free { index, .. } | Op::Undo { index } if !live.is_empty() => {
                let twice = matches!(op, Op::Free { twice: true, .. });
                let page = live.swap_remove(usize::from(index) % live.len());
                let i = page.node().index();
                let view = page.view();
                if matches!(op, Op::Free { .. }) {
                    heap.free_page(page).expect("free");
                } else {
                    heap.undo_alloc_page(page).expect("undo");
                }
                used[i] -= view.size();
                assert_eq!(view.state(), PageState::Freed);
                if twice {
                    // The handle is gone; a view of the freed page is refused.
                    let mid = heap.usage();
                    // SAFETY: the page is already freed (the call must be
                    // refused) and nobody uses its memory.
                    let again = unsafe { heap.free_pages(std::slice::from_ref(&view)) };
                    assert_eq!(again, Err(FreeError::AlreadyFreed));
                    assert_eq!(heap.usage(), mid, "a rejected free changed the heap");
                }
            }
            Op::Free { .. } | Op::Undo { .. } => {}
            Op::FreeForeign => {
                let req = PageRequest::small(&foreign_heap.page_sizes(), Age::EDEN, NodeId::ZERO);
                let other = foreign_heap.alloc_page(req).expect("foreign page");
                let rejected = heap.free_page(other).expect_err("a foreign page");
                assert_eq!(rejected.error(), FreeError::ForeignPage);
                assert_eq!(heap.usage(), before, "a rejected free changed the heap");
                foreign_heap
                    .free_page(rejected.into_page())
                    .expect("own page");
            }
            Op::Uncommit => {
                heap.uncommit_older_than(Instant::now()).expect("uncommit");
                let u = heap.usage();
                assert_eq!(u.cached, 0);
                assert_eq!(u.capacity, u.used);
            }
        }
        heap.check_invariants();
        for page in &live {
            check_mark(page);
        }
        assert_eq!(heap.pages().len(), live.len());
        assert_eq!(
            heap.physical_committed_bytes().expect("fstat"),
            heap.committed_bytes()
        );
    }
}

fn mark(page: &Page) {
    let words = [
        page.range().start(),
        hotmem_os::Address::new(page.range().end().get() - 8),
    ];
    for w in words {
        // SAFETY: the page was just allocated: its range is mapped and
        // committed, and nothing else uses it.
        unsafe { w.as_ptr::<u64>().write(page.id()) };
    }
}

fn check_mark(page: &Page) {
    let last = hotmem_os::Address::new(page.range().end().get() - 8);
    for w in [page.range().start(), last] {
        // SAFETY: the page is live (mapped and committed).
        let v = unsafe { w.as_ptr::<u64>().read() };
        assert_eq!(v, page.id(), "page {:?} lost its contents", page.range());
    }
}

/// Decodes fuzzer bytes into a cache mode (the first byte) and operations,
/// and runs [`check_ops`].
pub fn fuzz(data: &[u8]) {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let mode = if first & 1 == 0 {
        CacheMode::Mapped
    } else {
        CacheMode::PageCache
    };
    let ops: Vec<Op> = data
        .chunks_exact(2)
        .map(|c| match c[0] % 8 {
            0 | 1 => Op::Small { node: c[1] },
            2 => Op::Medium { node: c[1] },
            3 => Op::Large {
                node: c[1] >> 4,
                granules: c[1],
            },
            4 => Op::Free {
                index: c[1] >> 1,
                twice: c[1] & 1 == 1,
            },
            5 => Op::Undo { index: c[1] },
            6 if c[1] < 32 => Op::FreeForeign,
            _ => Op::Uncommit,
        })
        .take(200)
        .collect();
    check_ops(mode, &ops);
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u8>().prop_map(|node| Op::Small { node }),
            3 => any::<u8>().prop_map(|node| Op::Medium { node }),
            1 => (any::<u8>(), 0u8..10).prop_map(|(node, granules)| Op::Large { node, granules }),
            4 => (any::<u8>(), any::<bool>()).prop_map(|(index, twice)| Op::Free { index, twice }),
            1 => any::<u8>().prop_map(|index| Op::Undo { index }),
            1 => Just(Op::FreeForeign),
            1 => Just(Op::Uncommit),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        #[cfg_attr(miri, ignore = "memfd and real mappings: not supported by Miri")]
        fn page_allocator_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
            check_ops(CacheMode::Mapped, &ops);
            check_ops(CacheMode::PageCache, &ops);
        }
    }
}
