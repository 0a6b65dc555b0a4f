//! A plain page-by-page reference model of the tracker, which the proptest
//! and the fuzz target drive both region stores against.

use crate::error::TrackError;
use crate::linked_list::LinkedList;
use crate::stack::CallStack;
use crate::stack_id::StackId;
use crate::store::RegionStore;
use crate::tracker::{Level, Tracker};
use crate::tree::VmaTree;
use crate::{Delta, MAX_TAGS};
use hotmem_os::{Address, MemRange, MemTag};

/// Pages the model covers (operations may reach a little beyond).
pub const PAGES: usize = 48;
/// Page size of the model (byte-granular tracker, page-granular model).
pub const PAGE: usize = 4096;
/// Where the modelled address space starts.
pub const BASE: usize = 0x7f00_0000_0000;

/// One tracker operation on pages of the model.
#[derive(Copy, Clone, Debug)]
pub enum Op {
    /// Reserve `len` pages at `first` with tag number `tag` (0..4) from
    /// call site `site` (0..4, 0 meaning no stack).
    Reserve {
        /// First page.
        first: usize,
        /// Pages (0 is rejected).
        len: usize,
        /// Which of the model's tags.
        tag: u8,
        /// Which call site.
        site: u8,
    },
    /// Commit from call site `site`.
    Commit {
        /// First page.
        first: usize,
        /// Pages.
        len: usize,
        /// Which call site.
        site: u8,
    },
    /// Uncommit.
    Uncommit {
        /// First page.
        first: usize,
        /// Pages.
        len: usize,
    },
    /// Release.
    Release {
        /// First page.
        first: usize,
        /// Pages.
        len: usize,
    },
    /// Change the tag.
    SetTag {
        /// First page.
        first: usize,
        /// Pages.
        len: usize,
        /// Which of the model's tags.
        tag: u8,
    },
}

/// What the model knows about one page.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Page {
    tag: MemTag,
    rsite: u8,
    csite: Option<u8>,
}

/// A region as the model sees it: pages, tag, site, committed runs.
type ModelRegion = (usize, usize, MemTag, u8, Vec<(usize, usize, u8)>);

const SLACK: usize = 16;

fn range(first: usize, len: usize) -> MemRange {
    MemRange::new(Address::new(BASE + first * PAGE), len * PAGE).expect("small")
}

fn stack_of(site: u8) -> CallStack {
    match site {
        0 => CallStack::EMPTY,
        s => CallStack::from_frames(&[0x1000 * usize::from(s), 0x42]),
    }
}

fn site_of<S: RegionStore>(t: &Tracker<S>, id: StackId) -> u8 {
    match t.stack(id) {
        None => 0,
        Some(s) => (s.frames()[0] / 0x1000) as u8,
    }
}

/// The first maximal run of pages in `first..first+len` that are
/// (`reserved`) or are not reserved.
fn first_run(pages: &[Option<Page>], first: usize, len: usize, reserved: bool) -> Option<MemRange> {
    let start = (first..first + len).find(|&p| pages[p].is_some() == reserved)?;
    let end = (start..first + len)
        .find(|&p| pages[p].is_some() != reserved)
        .unwrap_or(first + len);
    Some(range(start, end - start))
}

fn model_totals(pages: &[Option<Page>]) -> [(usize, usize); MAX_TAGS] {
    let mut t = [(0, 0); MAX_TAGS];
    for p in pages.iter().flatten() {
        let e = &mut t[usize::from(p.tag.raw())];
        e.0 += PAGE;
        if p.csite.is_some() {
            e.1 += PAGE;
        }
    }
    t
}

fn model_regions(pages: &[Option<Page>]) -> Vec<ModelRegion> {
    let mut out: Vec<ModelRegion> = Vec::new();
    for (i, p) in pages.iter().enumerate() {
        let Some(p) = p else { continue };
        match out.last_mut() {
            Some(r) if r.1 == i && r.2 == p.tag && r.3 == p.rsite => r.1 = i + 1,
            _ => out.push((i, i + 1, p.tag, p.rsite, Vec::new())),
        }
        if let Some(c) = p.csite {
            let r = out.last_mut().expect("pushed");
            match r.4.last_mut() {
                Some(run) if run.1 == i && run.2 == c => run.1 = i + 1,
                _ => r.4.push((i, i + 1, c)),
            }
        }
    }
    out
}

fn tracker_regions<S: RegionStore>(t: &Tracker<S>) -> Vec<ModelRegion> {
    let page = |a: Address| (a.get() - BASE) / PAGE;
    t.regions()
        .into_iter()
        .map(|r| {
            (
                page(r.range.start()),
                page(r.range.end()),
                r.tag,
                site_of(t, r.reserved_by),
                r.committed
                    .iter()
                    .map(|c| {
                        (
                            page(c.range.start()),
                            page(c.range.end()),
                            site_of(t, c.committed_by),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Runs `ops` against a tracker over store `S` at `level` and the model,
/// checking after every step: the result (the exact error for rejected
/// operations), the returned delta, every tag's totals, the region list,
/// the store's invariants, and that a rejected operation changed nothing.
///
/// # Panics
/// When the tracker and the model disagree.
pub fn check_ops<S: RegionStore>(ops: &[Op], level: Level) {
    let t: Tracker<S> = Tracker::with_level(level);
    let custom = t.register_tag("Model custom").expect("registers");
    let tags = [
        MemTag::JAVA_HEAP,
        MemTag::CODE,
        custom,
        MemTag::THREAD_STACK,
    ];
    let detail = level == Level::Detail;
    let site = |s: u8| if detail { s % 4 } else { 0 };
    let mut pages: Vec<Option<Page>> = vec![None; PAGES + SLACK];
    for (step, &op) in ops.iter().enumerate() {
        let (first, len) = match op {
            Op::Reserve { first, len, .. }
            | Op::Commit { first, len, .. }
            | Op::Uncommit { first, len }
            | Op::Release { first, len }
            | Op::SetTag { first, len, .. } => (first % (PAGES + 4), len % 12),
        };
        let r = range(first, len);
        let before_totals = model_totals(&pages);
        let (nodes, stacks) = (t.node_count(), t.stack_count());
        let expected: Result<(), TrackError> = match op {
            Op::Reserve { .. } if len == 0 => Err(TrackError::Empty {
                op: crate::Operation::Reserve,
            }),
            Op::Reserve { .. } => match first_run(&pages, first, len, true) {
                Some(reserved) => Err(TrackError::Overlap { range: r, reserved }),
                None => Ok(()),
            },
            _ => {
                let o = match op {
                    Op::Commit { .. } => crate::Operation::Commit,
                    Op::Uncommit { .. } => crate::Operation::Uncommit,
                    Op::Release { .. } => crate::Operation::Release,
                    _ => crate::Operation::SetTag,
                };
                if len == 0 {
                    Err(TrackError::Empty { op: o })
                } else {
                    match first_run(&pages, first, len, false) {
                        Some(gap) => Err(TrackError::NotReserved {
                            op: o,
                            range: r,
                            gap,
                        }),
                        None => Ok(()),
                    }
                }
            }
        };
        let result: Result<Delta, TrackError> = match op {
            Op::Reserve { tag, site: s, .. } => {
                t.reserve(r, tags[usize::from(tag % 4)], &stack_of(s % 4))
            }
            Op::Commit { site: s, .. } => t.commit(r, &stack_of(s % 4)),
            Op::Uncommit { .. } => t.uncommit(r),
            Op::Release { .. } => t.release(r),
            Op::SetTag { tag, .. } => t.set_tag(r, tags[usize::from(tag % 4)]),
        };
        assert_eq!(
            result.as_ref().map(|_| ()).map_err(|e| *e),
            expected,
            "step {step}: {op:?} on {r:?}"
        );
        if expected.is_ok() {
            for p in &mut pages[first..first + len] {
                match op {
                    Op::Reserve { tag, site: s, .. } => {
                        *p = Some(Page {
                            tag: tags[usize::from(tag % 4)],
                            rsite: site(s),
                            csite: None,
                        })
                    }
                    Op::Commit { site: s, .. } => {
                        p.as_mut().expect("reserved").csite = Some(site(s))
                    }
                    Op::Uncommit { .. } => p.as_mut().expect("reserved").csite = None,
                    Op::Release { .. } => *p = None,
                    Op::SetTag { tag, .. } => {
                        p.as_mut().expect("reserved").tag = tags[usize::from(tag % 4)]
                    }
                }
            }
        } else {
            assert_eq!(
                t.node_count(),
                nodes,
                "step {step}: rejected {op:?} changed nodes"
            );
            assert_eq!(
                t.stack_count(),
                stacks,
                "step {step}: rejected {op:?} kept a stack"
            );
        }
        let after_totals = model_totals(&pages);
        let summary = t.summary();
        for i in 0..MAX_TAGS {
            let tag = MemTag::from_raw(i as u16);
            let (r, c) = after_totals[i];
            assert_eq!(
                (t.totals(tag).reserved, t.totals(tag).committed),
                (r, c),
                "step {step}: totals of {tag:?} after {op:?}"
            );
            assert_eq!(summary.of(tag), t.totals(tag));
            let want = (
                r as isize - before_totals[i].0 as isize,
                c as isize - before_totals[i].1 as isize,
            );
            let got = result.as_ref().map_or((0, 0), |d| d.of(tag));
            assert_eq!(got, want, "step {step}: delta of {tag:?} after {op:?}");
        }
        assert_eq!(
            tracker_regions(&t),
            model_regions(&pages),
            "step {step}: regions after {op:?}"
        );
        t.lock().store.check_invariants();
    }
}

/// [`check_ops`] for both stores.
pub fn check_both(ops: &[Op], level: Level) {
    check_ops::<VmaTree>(ops, level);
    check_ops::<LinkedList>(ops, level);
}

/// Decodes fuzzer bytes into operations and runs [`check_both`].
pub fn fuzz(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let level = if head & 1 == 0 {
        Level::Summary
    } else {
        Level::Detail
    };
    let ops: Vec<Op> = rest
        .chunks_exact(4)
        .map(|c| {
            let (first, len, x) = (usize::from(c[1]), usize::from(c[2]), c[3]);
            match c[0] % 5 {
                0 => Op::Reserve {
                    first,
                    len,
                    tag: x,
                    site: x >> 2,
                },
                1 => Op::Commit {
                    first,
                    len,
                    site: x,
                },
                2 => Op::Uncommit { first, len },
                3 => Op::Release { first, len },
                _ => Op::SetTag { first, len, tag: x },
            }
        })
        .take(128)
        .collect();
    check_both(&ops, level);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let first = 0usize..PAGES + 4;
        let len = 0usize..12;
        prop_oneof![
            3 => (first.clone(), len.clone(), 0u8..4, 0u8..4)
                .prop_map(|(first, len, tag, site)| Op::Reserve { first, len, tag, site }),
            3 => (first.clone(), len.clone(), 0u8..4)
                .prop_map(|(first, len, site)| Op::Commit { first, len, site }),
            2 => (first.clone(), len.clone()).prop_map(|(first, len)| Op::Uncommit { first, len }),
            1 => (first.clone(), len.clone()).prop_map(|(first, len)| Op::Release { first, len }),
            1 => (first, len, 0u8..4).prop_map(|(first, len, tag)| Op::SetTag { first, len, tag }),
        ]
    }

    proptest! {
        // Miri interprets each case ~1000x slower: a few cases there
        // (`with_cases` overrides PROPTEST_CASES, so this is the only knob).
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 128 }))]
        #[test]
        fn tree_and_list_match_the_model(
            ops in proptest::collection::vec(op(), 1..60),
            detail in any::<bool>(),
        ) {
            let level = if detail { Level::Detail } else { Level::Summary };
            check_both(&ops, level);
        }
    }

    #[test]
    fn fuzz_decoder_runs() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        fuzz(&bytes);
        fuzz(&[]);
    }
}
