//! `Block`: mapped heap memory and the physical segments behind it.

use hotmem_os::MemRange;
use std::time::Instant;

/// A page-aligned run of one partition's physical memory (its memfd).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// Granules of physical memory mapped, in order, at a range of the heap:
/// the backing of a page, or a cached page.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) range: MemRange,
    pub(crate) segments: Vec<Segment>,
    pub(crate) last_used: Instant,
}

impl Block {
    pub(crate) fn len(&self) -> usize {
        self.range.len()
    }

    /// Splits off the first `len` bytes (a multiple of the granule, less
    /// than the block) and returns them; `self` keeps the rest.
    pub(crate) fn split_head(&mut self, len: usize) -> Block {
        debug_assert!(len > 0 && len < self.len());
        let head = split_segments(&mut self.segments, len);
        let start = self.range.start();
        let tail = MemRange::from_bounds(start + len, self.range.end()).expect("inside");
        self.range = tail;
        Block {
            range: MemRange::new(start, len).expect("inside"),
            segments: head,
            last_used: self.last_used,
        }
    }
}

/// Splits the first `len` bytes off a run of segments (at most their total)
/// and returns them, in order; `segments` keeps the rest.
pub(crate) fn split_segments(segments: &mut Vec<Segment>, len: usize) -> Vec<Segment> {
    // The first segment that reaches past `len`, and how much of it is in
    // the head.
    let mut seen = 0;
    let cut = segments.iter().position(|seg| {
        seen += seg.len;
        seen > len
    });
    let Some(i) = cut else {
        debug_assert_eq!(seen, len, "split beyond the segments");
        return std::mem::take(segments);
    };
    let inside = segments[i].len - (seen - len);
    let mut rest = segments.split_off(i);
    if inside > 0 {
        segments.push(Segment {
            offset: rest[0].offset,
            len: inside,
        });
        rest[0].offset += inside;
        rest[0].len -= inside;
    }
    std::mem::replace(segments, rest)
}

/// Merges adjacent segments.
pub(crate) fn coalesce(segments: &mut Vec<Segment>) {
    let mut out: Vec<Segment> = Vec::with_capacity(segments.len());
    for s in segments.drain(..) {
        match out.last_mut() {
            Some(last) if last.offset + last.len == s.offset => last.len += s.len,
            _ => out.push(s),
        }
    }
    *segments = out;
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use hotmem_os::Address;

    #[test]
    fn split_keeps_segments_in_order() {
        let range = MemRange::new(Address::new(0x1000_0000), 0x5000).unwrap();
        let mut b = Block {
            range,
            segments: vec![
                Segment {
                    offset: 0x3000,
                    len: 0x2000,
                },
                Segment {
                    offset: 0,
                    len: 0x3000,
                },
            ],
            last_used: Instant::now(),
        };
        let head = b.split_head(0x3000);
        assert_eq!(
            head.segments,
            vec![
                Segment {
                    offset: 0x3000,
                    len: 0x2000
                },
                Segment {
                    offset: 0,
                    len: 0x1000
                }
            ]
        );
        assert_eq!(
            b.segments,
            vec![Segment {
                offset: 0x1000,
                len: 0x2000
            }]
        );
        assert_eq!(head.range.end(), b.range.start());
        let mut segs = vec![
            Segment { offset: 0, len: 4 },
            Segment { offset: 4, len: 4 },
            Segment { offset: 12, len: 4 },
        ];
        coalesce(&mut segs);
        assert_eq!(
            segs,
            vec![
                Segment { offset: 0, len: 8 },
                Segment { offset: 12, len: 4 }
            ]
        );
    }
}
