//! What the kernel says about this process's memory: `/proc/self/smaps` (every
//! mapping with its resident size) and `/proc/self/pagemap` (which pages of a
//! range are resident). Used by tests to check real effects and by trackers
//! to annotate the OS memory map.

use crate::{Address, MemRange, page_size};
use std::io::{self, BufRead, Read, Seek, SeekFrom};

/// One mapping of `/proc/self/smaps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The mapped range.
    pub range: MemRange,
    /// Permissions as the kernel prints them, e.g. `rw-p`.
    pub perms: String,
    /// Offset into the mapped file.
    pub offset: u64,
    /// The file or pseudo-file (`[heap]`, `/memfd:hotmem (deleted)`), empty
    /// for anonymous memory.
    pub path: String,
    /// Resident bytes.
    pub rss: usize,
    /// Anonymous resident bytes.
    pub anonymous: usize,
    /// Swapped-out bytes.
    pub swap: usize,
}

impl Mapping {
    /// Whether any access is permitted (a `---p` mapping is a bare reservation).
    pub fn is_accessible(&self) -> bool {
        self.perms.bytes().take(3).any(|b| b != b'-')
    }
}

fn parse_header(line: &str) -> Option<Mapping> {
    let mut parts = line.split_ascii_whitespace();
    let span = parts.next()?;
    let perms = parts.next()?;
    let offset = u64::from_str_radix(parts.next()?, 16).ok()?;
    let _dev = parts.next()?;
    let _inode = parts.next()?;
    let path = parts.collect::<Vec<_>>().join(" ");
    let (s, e) = span.split_once('-')?;
    let start = usize::from_str_radix(s, 16).ok()?;
    let end = usize::from_str_radix(e, 16).ok()?;
    Some(Mapping {
        range: MemRange::from_bounds(Address::new(start), Address::new(end))?,
        perms: perms.to_string(),
        offset,
        path,
        rss: 0,
        anonymous: 0,
        swap: 0,
    })
}

fn parse_kb(rest: &str) -> usize {
    rest.split_ascii_whitespace()
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0)
        * 1024
}

/// Every mapping of this process, from `/proc/self/smaps`, in address order.
///
/// # Errors
/// If the file cannot be read.
pub fn smaps() -> io::Result<Vec<Mapping>> {
    let file = std::fs::File::open("/proc/self/smaps")?;
    let mut out: Vec<Mapping> = Vec::new();
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        if let Some((key, rest)) = line.split_once(':') {
            if !key.contains(' ') && !key.contains('-') {
                if let Some(m) = out.last_mut() {
                    match key {
                        "Rss" => m.rss = parse_kb(rest),
                        "Anonymous" => m.anonymous = parse_kb(rest),
                        "Swap" => m.swap = parse_kb(rest),
                        _ => {}
                    }
                }
                continue;
            }
        }
        if let Some(m) = parse_header(&line) {
            out.push(m);
        }
    }
    Ok(out)
}

/// The mapping that holds `addr`, from `/proc/self/maps` (the header lines
/// of smaps without their statistics: `rss`, `anonymous` and `swap` are 0),
/// read only up to it. Much cheaper than [`smaps`] for one address, e.g. to
/// find the calling thread's stack.
///
/// # Errors
/// If the file cannot be read.
pub fn mapping_containing(addr: Address) -> io::Result<Option<Mapping>> {
    let file = std::fs::File::open("/proc/self/maps")?;
    for line in io::BufReader::new(file).lines() {
        if let Some(m) = parse_header(&line?) {
            if m.range.contains(addr) {
                return Ok(Some(m));
            }
            if m.range.start() > addr {
                return Ok(None);
            }
        }
    }
    Ok(None)
}

/// The mappings that share at least one byte with `range`.
///
/// # Errors
/// If `/proc/self/smaps` cannot be read.
pub fn mappings_overlapping(range: MemRange) -> io::Result<Vec<Mapping>> {
    Ok(smaps()?
        .into_iter()
        .filter(|m| m.range.overlaps(range))
        .collect())
}

/// The part of one mapping that lies inside a range: what
/// [`mappings_within`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clipped {
    /// The part of the mapping inside the range asked about.
    pub range: MemRange,
    /// Permissions as the kernel prints them, e.g. `rw-p`.
    pub perms: String,
    /// Offset into the mapped file of `range`'s first byte.
    pub offset: u64,
    /// The file or pseudo-file, empty for anonymous memory.
    pub path: String,
}

impl Clipped {
    /// Whether any access is permitted (a `---p` piece is a bare reservation).
    pub fn is_accessible(&self) -> bool {
        self.perms.bytes().take(3).any(|b| b != b'-')
    }
}

/// What the kernel maps inside `range`, and nothing outside it: every
/// mapping that shares a byte with `range`, clipped to it, in address order.
///
/// Unlike [`mappings_overlapping`], the answer depends only on `range`: a
/// neighbour's mapping that the kernel merged into the same VMA (another
/// reservation made right next to this one by another thread) does not
/// show. Compare these, not whole mappings, to check a range you own. For
/// resident bytes use [`resident_bytes`], which is exact per page.
///
/// # Errors
/// If `/proc/self/smaps` cannot be read.
pub fn mappings_within(range: MemRange) -> io::Result<Vec<Clipped>> {
    Ok(smaps()?
        .into_iter()
        .filter_map(|m| {
            let inside = m.range.intersection(range)?;
            let skipped = inside.start().offset_from(m.range.start());
            // A file offset past u64::MAX cannot be mapped; saturate rather
            // than wrap in the report.
            let offset = m.offset.saturating_add(skipped as u64);
            Some(Clipped {
                range: inside,
                perms: m.perms,
                offset,
                path: m.path,
            })
        })
        .collect())
}

/// Bytes of `range` that are resident in memory right now, page by page from
/// `/proc/self/pagemap` (the "present" bit, which unprivileged processes may
/// read). Exact, unlike smaps, which counts whole mappings.
///
/// # Errors
/// If `/proc/self/pagemap` cannot be read.
pub fn resident_bytes(range: MemRange) -> io::Result<usize> {
    let page = page_size();
    let first = range.start().get() / page;
    let last = range.end().get().div_ceil(page);
    if last <= first {
        return Ok(0);
    }
    let mut file = std::fs::File::open("/proc/self/pagemap")?;
    file.seek(SeekFrom::Start(first as u64 * 8))?;
    // A bounded buffer, whatever the size of the range: the entries are
    // read and counted 512 pages (one 4 KiB buffer) at a time. The runtime
    // asks this of every attached thread's stack, on every embedder's
    // start path: a 32 KiB buffer stayed resident in the malloc arena.
    const BATCH: usize = 512;
    let mut buf = vec![0u8; BATCH.min(last - first) * 8];
    let mut present = 0usize;
    let mut left = last - first;
    while left > 0 {
        let n = left.min(BATCH);
        let chunk = &mut buf[..n * 8];
        file.read_exact(chunk)?;
        present += chunk
            .chunks_exact(8)
            .filter(|e| {
                let v = u64::from_ne_bytes((*e).try_into().expect("8 bytes"));
                v >> 63 & 1 == 1
            })
            .count();
        left -= n;
    }
    // At most every page of the range, which fits in the address space
    // except for the one page that would end at 2^64.
    Ok(present.saturating_mul(page))
}
