//! `Extent`: one range of the mapped cache, the physical segments mapped at
//! its consecutive addresses and when each part of it was last used.

use crate::block::{Block, Segment, coalesce, split_segments};
use hotmem_os::{Address, MemRange};
use std::time::Instant;

/// A part of an extent freed at one moment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct AgeRun {
    pub(crate) len: usize,
    pub(crate) last_used: Instant,
}

/// Cached memory mapped at one contiguous range (the range's start is the
/// key it is kept under). Merging two neighbours keeps when each part was
/// last used, so that uncommit still takes exactly the memory unused for
/// the delay, however the ranges merged meanwhile.
#[derive(Clone, Debug)]
pub(crate) struct Extent {
    len: usize,
    /// Physical memory, in address order, coalesced.
    segments: Vec<Segment>,
    /// When each part was last used, in address order; lengths sum to `len`.
    ages: Vec<AgeRun>,
}

impl Extent {
    /// A freed block as an extent, and where it lies.
    pub(crate) fn from_block(block: Block) -> (MemRange, Extent) {
        let len = block.len();
        let extent = Extent {
            len,
            segments: block.segments,
            ages: vec![AgeRun {
                len,
                last_used: block.last_used,
            }],
        };
        (block.range, extent)
    }

    /// The extent as a block at `start`, last used when its newest part was.
    pub(crate) fn into_block(self, start: usize) -> Block {
        let last_used = self
            .ages
            .iter()
            .map(|a| a.last_used)
            .max()
            .expect("an extent is never empty");
        Block {
            range: MemRange::new(Address::new(start), self.len).expect("inside the heap"),
            segments: self.segments,
            last_used,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[cfg(all(test, not(hotmem_loom)))]
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segments
    }

    pub(crate) fn ages(&self) -> &[AgeRun] {
        &self.ages
    }

    /// Splits the extent at `at` bytes (`0 < at < len`): `self` keeps the
    /// head, the tail is returned.
    pub(crate) fn split_off(&mut self, at: usize) -> Extent {
        debug_assert!(at > 0 && at < self.len);
        let head_segments = split_segments(&mut self.segments, at);
        let tail_segments = std::mem::replace(&mut self.segments, head_segments);
        let mut seen = 0;
        let cut = self
            .ages
            .iter()
            .position(|run| {
                seen += run.len;
                seen > at
            })
            .expect("inside the extent");
        let inside = self.ages[cut].len - (seen - at);
        let mut tail_ages = self.ages.split_off(cut);
        if inside > 0 {
            self.ages.push(AgeRun {
                len: inside,
                last_used: tail_ages[0].last_used,
            });
            tail_ages[0].len -= inside;
        }
        let tail = Extent {
            len: self.len - at,
            segments: tail_segments,
            ages: tail_ages,
        };
        self.len = at;
        tail
    }

    /// Appends the extent that follows this one in the address space.
    pub(crate) fn append(&mut self, tail: Extent) {
        self.len += tail.len;
        self.segments.extend(tail.segments);
        coalesce(&mut self.segments);
        let mut ages = tail.ages.into_iter();
        if let (Some(last), Some(first)) = (self.ages.last_mut(), ages.as_slice().first()) {
            if last.last_used == first.last_used {
                last.len += first.len;
                ages.next();
            }
        }
        self.ages.extend(ages);
    }

    /// Cuts the extent where its parts change from last used at or before
    /// `cutoff` to after it (or back): the pieces in address order, each
    /// with its offset and whether it is unused since `cutoff`.
    pub(crate) fn split_by_age(mut self, cutoff: Instant) -> Vec<(usize, Extent, bool)> {
        let mut cuts = Vec::new();
        let mut offset = 0;
        let mut previous: Option<bool> = None;
        for run in &self.ages {
            let unused = run.last_used <= cutoff;
            if previous.is_some_and(|p| p != unused) {
                cuts.push((offset, previous == Some(true)));
            }
            previous = Some(unused);
            offset += run.len;
        }
        let mut pieces = Vec::with_capacity(cuts.len() + 1);
        let last_unused = previous == Some(true);
        // From the tail down, so that each cut is inside what is left.
        let mut unused = last_unused;
        for &(at, before) in cuts.iter().rev() {
            pieces.push((at, self.split_off(at), unused));
            unused = before;
        }
        pieces.push((0, self, unused));
        pieces.reverse();
        pieces
    }

    /// Checks the extent's own bookkeeping.
    ///
    /// # Panics
    /// When the segments or the ages do not add up to its length.
    pub(crate) fn check(&self) {
        assert_eq!(
            self.segments.iter().map(|s| s.len).sum::<usize>(),
            self.len,
            "extent segments"
        );
        assert_eq!(
            self.ages.iter().map(|a| a.len).sum::<usize>(),
            self.len,
            "extent ages"
        );
        assert!(self.ages.iter().all(|a| a.len > 0));
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    const G: usize = 2 << 20;

    fn extent(offset: usize, len: usize, t: Instant) -> Extent {
        let block = Block {
            range: MemRange::new(Address::new(0x4000_0000 + offset), len).unwrap(),
            segments: vec![Segment { offset, len }],
            last_used: t,
        };
        Extent::from_block(block).1
    }

    #[test]
    fn append_split_and_ages() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let mut e = extent(0, 2 * G, t0);
        e.append(extent(2 * G, G, t1));
        e.append(extent(8 * G, G, t1));
        assert_eq!(e.len(), 4 * G);
        assert_eq!(
            e.segments(),
            &[
                Segment {
                    offset: 0,
                    len: 3 * G
                },
                Segment {
                    offset: 8 * G,
                    len: G
                }
            ]
        );
        assert_eq!(e.ages().len(), 2, "equal times merge");
        let tail = e.split_off(G);
        assert_eq!((e.len(), tail.len()), (G, 3 * G));
        assert_eq!(tail.ages()[0].len, G);
        assert_eq!(tail.segments()[0].offset, G);
        e.check();
        tail.check();
        let pieces = tail.split_by_age(t0);
        let shape: Vec<_> = pieces.iter().map(|(o, e, u)| (*o, e.len(), *u)).collect();
        assert_eq!(shape, vec![(0, G, true), (G, 2 * G, false)]);
        let b = pieces.into_iter().nth(1).unwrap().1.into_block(0x1000_0000);
        assert_eq!(b.last_used, t1);
    }
}
