//! The mapped cache against a plain model: a map from each cached granule's
//! address to its physical offset and the moment it was freed. After every
//! operation the cache's ranges are exactly the maximal runs of the model
//! (disjoint, merged), its bytes are what was inserted less what was taken,
//! and every range and every block handed out carries the physical memory
//! the model says.

use super::CacheHit;
use super::mapped::MappedCache;
use crate::PageType;
use crate::block::{Block, Segment};
use hotmem_os::{Address, MemRange};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const G: usize = 2 << 20;
/// Medium pages of four granules.
const MEDIUM: usize = 4 * G;
const BASE: usize = 0x4000_0000;
const SLOTS: usize = 48;

#[derive(Copy, Clone, Debug)]
enum Op {
    /// Free `len` granules at granule `at` (skipped where any is cached),
    /// their physical memory in reverse order when `reversed`.
    Insert {
        at: usize,
        len: usize,
        reversed: bool,
    },
    /// Take a page of `granules` (small: 1; medium: 4; large: any).
    Alloc {
        page_type: PageType,
        granules: usize,
    },
    /// Harvest `granules`.
    Harvest { granules: usize },
    /// Take everything freed at or before logical second `cutoff`.
    TakeUnused { cutoff: u64 },
}

/// Granule address -> (physical offset, second it was freed).
type Model = BTreeMap<usize, (usize, u64)>;

/// The maximal runs of cached granules: (start, len).
fn runs(model: &Model) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &a in model.keys() {
        match out.last_mut() {
            Some((s, l)) if *s + *l == a => *l += G,
            _ => out.push((a, G)),
        }
    }
    out
}

/// The physical offset of each granule of a run of segments.
fn granules_of(segments: &[Segment]) -> Vec<usize> {
    segments
        .iter()
        .flat_map(|s| (s.offset..s.offset + s.len).step_by(G))
        .collect()
}

/// Checks that `block` is cached memory of the model, takes it out of the
/// model and returns its granules' times.
fn take(model: &mut Model, block: &Block) -> Vec<u64> {
    let offsets = granules_of(&block.segments);
    assert_eq!(offsets.len() * G, block.len(), "segments cover the block");
    let mut times = Vec::new();
    for (i, offset) in offsets.into_iter().enumerate() {
        let a = block.range.start().get() + i * G;
        let (phys, t) = model.remove(&a).expect("a cached granule");
        assert_eq!(phys, offset, "granule {a:#x} lost its memory");
        times.push(t);
    }
    times
}

fn check(cache: &MappedCache, model: &Model) {
    cache.check();
    let ranges: Vec<(usize, usize)> = cache.ranges().map(|r| (r.start().get(), r.len())).collect();
    assert_eq!(ranges, runs(model), "ranges are the model's maximal runs");
    assert_eq!(cache.bytes(), model.len() * G);
    for (start, _) in ranges {
        let segments = cache.segments_at(start).expect("listed");
        for (i, offset) in granules_of(segments).into_iter().enumerate() {
            assert_eq!(model[&(start + i * G)].0, offset);
        }
    }
}

fn run(ops: &[Op]) {
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let mut cache = MappedCache::default();
    let mut model = Model::new();
    let mut next_phys = 0;
    let (mut inserted, mut taken) = (0usize, 0usize);
    for (step, op) in ops.iter().enumerate() {
        let now = step as u64 + 1;
        match *op {
            Op::Insert {
                at: slot,
                len,
                reversed,
            } => {
                let len = len.min(SLOTS - slot);
                let start = BASE + slot * G;
                if (0..len).any(|i| model.contains_key(&(start + i * G))) {
                    continue;
                }
                let mut offsets: Vec<usize> = (0..len).map(|i| (next_phys + i) * G).collect();
                next_phys += len;
                if reversed {
                    offsets.reverse();
                }
                let segments = offsets
                    .iter()
                    .map(|&offset| Segment { offset, len: G })
                    .collect();
                let neighbours = usize::from(start > BASE && model.contains_key(&(start - G)))
                    + usize::from(model.contains_key(&(start + len * G)));
                for (i, &offset) in offsets.iter().enumerate() {
                    model.insert(start + i * G, (offset, now));
                }
                let block = Block {
                    range: MemRange::new(Address::new(start), len * G).unwrap(),
                    segments,
                    last_used: at(now),
                };
                assert_eq!(cache.insert(block), neighbours, "merges");
                inserted += len * G;
            }
            Op::Alloc {
                page_type,
                granules,
            } => {
                let size = granules * G;
                let fits: Vec<(usize, usize)> = runs(&model)
                    .into_iter()
                    .filter(|&(_, l)| l >= size)
                    .collect();
                match cache.alloc(page_type, size) {
                    None => assert!(fits.is_empty(), "{size:#x} fits in {fits:?}"),
                    Some((block, hit)) => {
                        assert_eq!(block.len(), size);
                        let start = block.range.start().get();
                        let (run_start, run_len) = *fits
                            .iter()
                            .find(|&&(s, l)| s <= start && start + size <= s + l)
                            .expect("cut from one cached range");
                        assert_eq!(hit == CacheHit::Exact, run_len == size);
                        // The smallest range that fits: the lowest of those,
                        // at its bottom, for a small page; the highest, at
                        // its top, for the others.
                        let best = fits.iter().map(|&(_, l)| l).min().unwrap();
                        assert_eq!(run_len, best, "best fit");
                        let mut best_fits = fits.iter().filter(|&&(_, l)| l == best);
                        match page_type {
                            PageType::Small => {
                                assert_eq!(run_start, best_fits.next().unwrap().0, "lowest");
                                assert_eq!(start, run_start, "at the bottom");
                            }
                            PageType::Medium | PageType::Large => {
                                assert_eq!(run_start, best_fits.next_back().unwrap().0, "highest");
                                assert_eq!(start + size, run_start + run_len, "at the top");
                            }
                        }
                        let times = take(&mut model, &block);
                        assert_eq!(block.last_used, at(*times.iter().max().unwrap()));
                        taken += size;
                    }
                }
            }
            Op::Harvest { granules } => {
                let want = granules * G;
                let largest = runs(&model).iter().map(|&(_, l)| l).max();
                let blocks = cache.harvest(want);
                if let (Some(first), Some(largest)) = (blocks.first(), largest) {
                    // Largest first: the first block is a largest range, or
                    // the top of one when it holds more than was asked for.
                    let start = first.range.start().get();
                    let run = runs(&model)
                        .into_iter()
                        .find(|&(s, l)| s <= start && start < s + l)
                        .expect("harvested from a cached range");
                    assert_eq!(run.1, largest, "the largest range first");
                    assert_eq!(start + first.len(), run.0 + run.1, "cut at its top");
                }
                let got: usize = blocks.iter().map(Block::len).sum();
                assert_eq!(got, want.min(model.len() * G));
                for b in &blocks {
                    take(&mut model, b);
                }
                taken += got;
            }
            Op::TakeUnused { cutoff } => {
                let expected: Vec<usize> = model
                    .iter()
                    .filter(|(_, (_, t))| *t <= cutoff)
                    .map(|(&a, _)| a)
                    .collect();
                let blocks = cache.take_unused_since(at(cutoff));
                let mut got = Vec::new();
                for b in &blocks {
                    let start = b.range.start().get();
                    let times = take(&mut model, b);
                    assert!(times.iter().all(|&t| t <= cutoff), "took newer memory");
                    got.extend((0..times.len()).map(|i| start + i * G));
                    taken += b.len();
                }
                got.sort_unstable();
                assert_eq!(got, expected, "exactly the memory unused since the cutoff");
            }
        }
        check(&cache, &model);
        assert_eq!(cache.bytes(), inserted - taken, "inserted less taken");
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..SLOTS, 1usize..6, any::<bool>())
            .prop_map(|(at, len, reversed)| Op::Insert { at, len, reversed }),
        2 => Just(Op::Alloc { page_type: PageType::Small, granules: 1 }),
        2 => Just(Op::Alloc { page_type: PageType::Medium, granules: MEDIUM / G }),
        2 => (1usize..9).prop_map(|granules| Op::Alloc { page_type: PageType::Large, granules }),
        1 => (1usize..12).prop_map(|granules| Op::Harvest { granules }),
        1 => (0u64..60).prop_map(|cutoff| Op::TakeUnused { cutoff }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn mapped_cache_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(&ops);
    }
}

#[test]
fn neighbours_merge_and_splits_keep_the_rest() {
    use Op::*;
    run(&[
        Insert {
            at: 0,
            len: 2,
            reversed: false,
        },
        Insert {
            at: 4,
            len: 2,
            reversed: true,
        },
        Insert {
            at: 2,
            len: 2,
            reversed: false,
        },
        Alloc {
            page_type: PageType::Medium,
            granules: 4,
        },
        Alloc {
            page_type: PageType::Small,
            granules: 1,
        },
        Insert {
            at: 10,
            len: 1,
            reversed: false,
        },
        Harvest { granules: 2 },
        TakeUnused { cutoff: 3 },
    ]);
}
