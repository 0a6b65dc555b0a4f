//! A reference model of a small space that the proptest and the fuzz target
//! drive the real allocator against: chunk get/return/enlarge/commit/purge,
//! bad handles, and arenas that allocate, deallocate and die. After every
//! step `verify()` must pass, the model's live chunks must be disjoint and
//! match the statistics, every byte pattern written must still be there, and
//! a rejected operation must leave statistics and map exactly as they were.

use crate::{
    AllocError, Arena, ArenaKind, Chunk, ChunkError, ChunkLevel, ChunkManager, Coalescing,
    CommitChunkError, DeallocError, EnlargeError, GetChunkError, MetadataType, SpaceConfig,
    SpaceMap, SpaceStatistics,
};
use hotmem_os::{Address, Memory, page_size};

/// One operation. Indices pick among live things modulo their count.
#[derive(Copy, Clone, Debug)]
pub enum Op {
    /// Get a chunk: level `preferred` (may not exist), accepting `smaller`
    /// levels below it, committing `commit` bytes.
    Get {
        /// Preferred level (out of range sometimes).
        preferred: u8,
        /// How many smaller levels are acceptable.
        smaller: u8,
        /// Bytes to commit.
        commit: u32,
    },
    /// Return a live chunk.
    Return {
        /// Which.
        pick: u8,
    },
    /// Return a forged copy of a handle returned before (double return or
    /// stale; the public API cannot express it): refused.
    ReturnAgain {
        /// Which.
        pick: u8,
    },
    /// Return a forged copy of a live chunk's handle with another level:
    /// refused.
    ReturnWrongLevel {
        /// Which.
        pick: u8,
        /// The level.
        level: u8,
    },
    /// Return a chunk of another space: refused.
    ReturnForeign,
    /// Enlarge a live chunk in place.
    Enlarge {
        /// Which.
        pick: u8,
    },
    /// Commit a prefix of a live chunk.
    Commit {
        /// Which.
        pick: u8,
        /// Bytes (may exceed the chunk: refused).
        bytes: u32,
    },
    /// Write a byte at both ends of a live chunk's committed prefix.
    Write {
        /// Which.
        pick: u8,
        /// The byte.
        value: u8,
    },
    /// Uncommit free chunks.
    Purge,
    /// Create an arena.
    ArenaNew {
        /// Kind, modulo 4.
        kind: u8,
    },
    /// Allocate from an arena and fill the block.
    ArenaAlloc {
        /// Which arena.
        pick: u8,
        /// Bytes.
        bytes: u32,
    },
    /// Deallocate a live block of an arena.
    ArenaDealloc {
        /// Which arena.
        pick: u8,
        /// Which block.
        block: u8,
    },
    /// Deallocate a block twice, or one the arena does not own: refused.
    ArenaBadDealloc {
        /// Which arena.
        pick: u8,
        /// Which freed block.
        block: u8,
    },
    /// Drop an arena (its loader died).
    ArenaDrop {
        /// Which.
        pick: u8,
    },
}

/// The modelled space: 64 KiB root chunks, 1 KiB smallest, commit granule a
/// page, three and a half root chunks.
pub fn small_config(coalescing: Coalescing) -> SpaceConfig {
    let granule = page_size().max(4096);
    SpaceConfig {
        size: (3 * 64 + 32) << 10,
        root_chunk_size: 64 << 10,
        min_chunk_size: 1 << 10,
        commit_granule: granule,
        coalescing,
        arena_cache: crate::ArenaCache::Off,
    }
    .commit_granule(granule.min(64 << 10))
}

struct LiveChunk {
    chunk: Chunk,
    /// Committed bytes from the start, as last reported.
    committed: usize,
    /// The byte written at the chunk's start and at `.1` bytes from it.
    pattern: Option<(u8, usize)>,
}

struct ArenaModel {
    arena: Arena,
    blocks: Vec<(Address, usize, u8)>,
    freed: Vec<(Address, usize)>,
}

fn snapshot(m: &ChunkManager) -> (SpaceStatistics, SpaceMap) {
    (
        m.statistics(),
        m.map_with_cell(m.geometry().min_chunk_size()),
    )
}

fn pick<T>(v: &[T], i: u8) -> Option<usize> {
    (!v.is_empty()).then(|| i as usize % v.len())
}

/// Runs `ops` on a fresh small space with the given policy, checking the
/// model after every step.
///
/// # Panics
/// When the allocator and the model disagree.
pub fn check_ops(coalescing: Coalescing, ops: &[Op]) {
    let memory = Memory::new();
    let m =
        ChunkManager::new(&memory, MetadataType::Class, small_config(coalescing)).expect("space");
    let other = ChunkManager::new(&memory, MetadataType::NonClass, small_config(coalescing))
        .expect("space");
    let mut foreign = Some(
        other
            .get_chunk(ChunkLevel::new(3), ChunkLevel::new(3), 0)
            .expect("chunk of the other space"),
    );
    let geo = m.geometry();
    let levels = geo.levels() as u8;
    let mut live: Vec<LiveChunk> = Vec::new();
    // Forged copies of returned handles.
    let mut returned: Vec<Chunk> = Vec::new();
    let mut arenas: Vec<ArenaModel> = Vec::new();

    for (step, op) in ops.iter().enumerate() {
        let before = snapshot(&m);
        let mut rejected = false;
        match *op {
            Op::Get {
                preferred,
                smaller,
                commit,
            } => {
                let p = ChunkLevel::new(preferred % (levels + 1));
                let max = ChunkLevel::new((p.raw() + smaller % 3).min(levels));
                let commit = commit as usize % (2 * geo.size_of(ChunkLevel::new(levels - 1)));
                match m.get_chunk(p, max, commit) {
                    Ok(chunk) => {
                        assert!(
                            p <= chunk.level() && chunk.level() <= max,
                            "{chunk} for {p}..{max}"
                        );
                        assert!(chunk.start().is_aligned(chunk.size()));
                        let committed = m.committed_prefix(&chunk).expect("live");
                        assert!(committed >= commit.min(chunk.size()));
                        live.push(LiveChunk {
                            chunk,
                            committed,
                            pattern: None,
                        });
                    }
                    Err(GetChunkError::BadLevel { .. }) => {
                        assert!(!geo.contains(p) || !geo.contains(max));
                        rejected = true;
                    }
                    Err(GetChunkError::BadRequest { .. }) => {
                        assert!(commit > geo.size_of(max));
                        rejected = true;
                    }
                    Err(GetChunkError::Exhausted { .. }) => {
                        let s = &before.0;
                        // Nothing acceptable was free...
                        let lowest = if coalescing.merges() { 0 } else { p.index() };
                        for l in &s.levels[lowest..=max.index()] {
                            assert_eq!(l.free_chunks, 0, "exhausted with a free {} chunk", l.level);
                        }
                        // ...and untouched space had no room (buddy carving
                        // is always aligned).
                        if coalescing.merges() {
                            assert!(s.reserved - s.carved < geo.size_of(max));
                        }
                        rejected = true;
                    }
                    Err(e @ GetChunkError::Commit(_)) => panic!("commit failed: {e}"),
                }
            }
            Op::Return { pick: i } => {
                if let Some(i) = pick(&live, i) {
                    let c = live.swap_remove(i);
                    let copy = c.chunk.forge();
                    m.return_chunk(c.chunk).expect("live chunk returns");
                    returned.push(copy);
                }
            }
            Op::ReturnAgain { pick: i } => {
                if let Some(i) = pick(&returned, i) {
                    let r = m.return_chunk(returned[i].forge()).map_err(|e| *e.reason());
                    assert!(
                        matches!(
                            r,
                            Err(ChunkError::NotInUse { .. }
                                | ChunkError::Stale { .. }
                                | ChunkError::NoSuchChunk { .. })
                        ),
                        "{r:?}"
                    );
                    rejected = true;
                }
            }
            Op::ReturnWrongLevel { pick: i, level } => {
                if let Some(i) = pick(&live, i) {
                    let c = &live[i].chunk;
                    let l = ChunkLevel::new(level % (levels + 2));
                    if l != c.level() {
                        let r = m.return_chunk(c.forge_with_level(l));
                        assert!(r.is_err(), "{r:?}");
                        rejected = true;
                    }
                }
            }
            Op::ReturnForeign => {
                // A real handle of another space: refused and handed back.
                let back = m
                    .return_chunk(foreign.take().expect("foreign chunk"))
                    .unwrap_err();
                assert!(matches!(back.reason(), ChunkError::Foreign { .. }));
                foreign = Some(back.into_chunk());
                if let Some(c) = live.pop() {
                    let back = other.return_chunk(c.chunk).unwrap_err();
                    assert!(matches!(back.reason(), ChunkError::Foreign { .. }));
                    live.push(LiveChunk {
                        chunk: back.into_chunk(),
                        ..c
                    });
                }
                rejected = true;
            }
            Op::Enlarge { pick: i } => {
                if let Some(i) = pick(&live, i) {
                    let old = live[i].chunk.forge();
                    match m.enlarge_chunk(&mut live[i].chunk) {
                        Ok(()) => {
                            let new = &live[i].chunk;
                            assert!(coalescing.merges());
                            assert_eq!(new.start(), old.start());
                            assert_eq!(Some(new.level()), old.level().larger());
                            live[i].committed = m.committed_prefix(new).expect("live");
                            // A copy of the old handle is not honoured.
                            assert!(m.return_chunk(old).is_err());
                        }
                        Err(EnlargeError::Chunk(e)) => panic!("live chunk refused: {e}"),
                        Err(_) => {
                            assert_eq!(
                                live[i].chunk, old,
                                "a refused enlargement changed the handle"
                            );
                            rejected = true;
                        }
                    }
                }
            }
            Op::Commit { pick: i, bytes } => {
                if let Some(i) = pick(&live, i) {
                    let c = &live[i].chunk;
                    let bytes = bytes as usize % (c.size() + c.size() / 4 + 1);
                    match m.commit_chunk(c, bytes) {
                        Ok(prefix) => {
                            assert!(prefix >= bytes && prefix >= live[i].committed);
                            live[i].committed = prefix;
                        }
                        Err(CommitChunkError::BeyondChunk { .. }) => {
                            assert!(bytes > live[i].chunk.size());
                            rejected = true;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            Op::Write { pick: i, value } => {
                if let Some(i) = pick(&live, i) {
                    let c = &mut live[i];
                    if c.committed > 0 {
                        let p = c.chunk.start().as_ptr::<u8>();
                        // SAFETY: the first `committed` bytes of this live
                        // chunk are committed and owned by the model alone.
                        unsafe {
                            p.write(value);
                            p.add(c.committed - 1).write(value);
                        }
                        c.pattern = Some((value, c.committed - 1));
                    }
                }
            }
            Op::Purge => {
                m.purge().expect("purge");
                let granule = m.config().commit_granule;
                for l in m.statistics().levels {
                    if l.chunk_size >= granule {
                        assert_eq!(
                            l.free_committed, 0,
                            "{} free chunks still committed",
                            l.level
                        );
                    }
                }
            }
            Op::ArenaNew { kind } => {
                let kind = ArenaKind::ALL[kind as usize % 4];
                arenas.push(ArenaModel {
                    arena: Arena::new(&m, kind),
                    blocks: Vec::new(),
                    freed: Vec::new(),
                });
            }
            Op::ArenaAlloc { pick: i, bytes } => {
                if let Some(i) = pick(&arenas, i) {
                    let a = &mut arenas[i];
                    let bytes = bytes as usize % (24 << 10);
                    match a.arena.allocate(bytes) {
                        Ok(addr) => {
                            assert!(bytes > 0 && a.arena.contains(addr));
                            assert!(addr.is_aligned(crate::WORD));
                            let value = (step as u8) | 1;
                            // SAFETY: the arena handed out `bytes` committed
                            // bytes at `addr`, used by nobody else.
                            unsafe { addr.as_ptr::<u8>().write_bytes(value, bytes) };
                            a.blocks.push((addr, bytes, value));
                        }
                        Err(AllocError::ZeroSize) => assert_eq!(bytes, 0),
                        Err(AllocError::Chunk(GetChunkError::Exhausted { .. })) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            Op::ArenaDealloc { pick: i, block } => {
                if let Some(i) = pick(&arenas, i) {
                    let a = &mut arenas[i];
                    if let Some(b) = pick(&a.blocks, block) {
                        let (addr, size, _) = a.blocks.swap_remove(b);
                        a.arena.deallocate(addr, size).expect("live block");
                        a.freed.push((addr, size));
                    }
                }
            }
            Op::ArenaBadDealloc { pick: i, block } => {
                if let Some(i) = pick(&arenas, i) {
                    let a = &mut arenas[i];
                    let arena_before = a.arena.statistics();
                    if let Some(b) = pick(&a.freed, block) {
                        let (addr, size) = a.freed[b];
                        let r = a.arena.deallocate(addr, size);
                        // Freed blocks may have been handed out again.
                        if !a.blocks.iter().any(|&(x, s, _)| {
                            x.get() < addr.get() + size && addr.get() < x.get() + s
                        }) {
                            assert!(matches!(r, Err(DeallocError::AlreadyFree { .. })), "{r:?}");
                        } else {
                            // Put the model back in step: the block was live.
                            assert!(r.is_ok() || r.is_err());
                            if r.is_ok() {
                                a.blocks.retain(|&(x, s, _)| {
                                    !(x.get() < addr.get() + size && addr.get() < x.get() + s)
                                });
                                continue;
                            }
                        }
                    }
                    let outside = Address::new(m.range().end().get() + 64);
                    assert!(matches!(
                        a.arena.deallocate(outside, 16),
                        Err(DeallocError::NotOwned { .. })
                    ));
                    assert_eq!(a.arena.statistics(), arena_before);
                    rejected = true;
                }
            }
            Op::ArenaDrop { pick: i } => {
                if let Some(i) = pick(&arenas, i) {
                    arenas.swap_remove(i);
                }
            }
        }
        if rejected {
            let after = snapshot(&m);
            assert_eq!(before.0, after.0, "rejected {op:?} changed the statistics");
            assert_eq!(before.1, after.1, "rejected {op:?} changed the map");
        }
        check_state(&m, &live, &arenas, step, op);
    }
    drop(arenas);
    for c in live.drain(..) {
        m.return_chunk(c.chunk).expect("live chunk");
    }
    other
        .return_chunk(foreign.take().expect("foreign chunk"))
        .expect("its own space takes it");
    other.verify().expect("verify the other space");
    m.verify().expect("verify at the end");
    let s = m.statistics();
    assert_eq!(s.in_use_chunks, 0);
    if coalescing.merges() {
        // Everything merged back: only maximal chunks are free.
        let maximal = (s.carved / geo.root_chunk_size())
            + (s.carved % geo.root_chunk_size()).count_ones() as usize;
        assert_eq!(s.free_chunks, maximal, "not fully coalesced:\n{s}");
    }
}

fn check_state(m: &ChunkManager, live: &[LiveChunk], arenas: &[ArenaModel], step: usize, op: &Op) {
    if let Err(e) = m.verify() {
        panic!("step {step} {op:?}: {e}\n{}", m.map_with_cell(1024));
    }
    let mut ranges: Vec<(usize, usize)> = live
        .iter()
        .map(|c| (c.chunk.start().get(), c.chunk.size()))
        .chain(
            arenas
                .iter()
                .flat_map(|a| a.arena.chunks().map(|c| (c.start().get(), c.size()))),
        )
        .collect();
    for a in arenas {
        if let Err(e) = a.arena.verify() {
            panic!("step {step} {op:?}: arena: {e}");
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "chunks overlap: {w:?}");
    }
    let s = m.statistics();
    assert_eq!(s.in_use_chunks, ranges.len());
    assert_eq!(s.in_use_capacity, ranges.iter().map(|r| r.1).sum::<usize>());
    assert_eq!(
        s.in_use_capacity + s.free_capacity,
        s.carved,
        "capacity conserved"
    );
    for c in live {
        if let Some((v, last)) = c.pattern {
            let p = c.chunk.start().as_ptr::<u8>();
            // SAFETY: the committed prefix of a live chunk stays committed,
            // and `last` was inside it when written.
            let (a, b) = unsafe { (p.read(), p.add(last).read()) };
            assert_eq!((a, b), (v, v), "step {step}: {} lost its contents", c.chunk);
        }
    }
    for a in arenas {
        for &(addr, size, v) in &a.blocks {
            let p = addr.as_ptr::<u8>();
            // SAFETY: a live block of a live arena: committed, ours.
            let (x, y) = unsafe { (p.read(), p.add(size - 1).read()) };
            assert_eq!(
                (x, y),
                (v, v),
                "step {step}: block {addr} of {size} bytes overwritten"
            );
        }
        let st = a.arena.statistics();
        assert!(st.used <= st.committed && st.committed <= st.capacity);
        assert_eq!(
            st.live,
            a.blocks
                .iter()
                .map(|b| b.1.next_multiple_of(crate::WORD))
                .sum::<usize>()
        );
    }
}

/// Decodes fuzzer bytes into a policy and operations and runs [`check_ops`].
pub fn fuzz(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let coalescing = if first & 1 == 0 {
        Coalescing::Buddy
    } else {
        Coalescing::None
    };
    let ops: Vec<Op> = rest
        .chunks_exact(4)
        .map(|c| {
            let (a, b) = (c[1], c[2]);
            let n = u32::from(u16::from_le_bytes([c[2], c[3]])) * 8;
            match c[0] % 15 {
                0 | 1 => Op::Get {
                    preferred: a,
                    smaller: b,
                    commit: n,
                },
                2 | 3 => Op::Return { pick: a },
                4 => Op::ReturnAgain { pick: a },
                5 => Op::ReturnWrongLevel { pick: a, level: b },
                6 => Op::ReturnForeign,
                7 => Op::Enlarge { pick: a },
                8 => Op::Commit { pick: a, bytes: n },
                9 => Op::Write { pick: a, value: b },
                10 => Op::Purge,
                11 => Op::ArenaNew { kind: a },
                12 => Op::ArenaAlloc { pick: a, bytes: n },
                13 => Op::ArenaDealloc { pick: a, block: b },
                _ => match b % 2 {
                    0 => Op::ArenaBadDealloc { pick: a, block: b },
                    _ => Op::ArenaDrop { pick: a },
                },
            }
        })
        .take(96)
        .collect();
    check_ops(coalescing, &ops);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let small = 0u8..=255;
        prop_oneof![
            4 => (0u8..9, 0u8..3, 0u32..40_000).prop_map(|(preferred, smaller, commit)| Op::Get { preferred, smaller, commit }),
            3 => small.clone().prop_map(|pick| Op::Return { pick }),
            1 => small.clone().prop_map(|pick| Op::ReturnAgain { pick }),
            1 => (small.clone(), 0u8..9).prop_map(|(pick, level)| Op::ReturnWrongLevel { pick, level }),
            1 => Just(Op::ReturnForeign),
            2 => small.clone().prop_map(|pick| Op::Enlarge { pick }),
            1 => (small.clone(), 0u32..80_000).prop_map(|(pick, bytes)| Op::Commit { pick, bytes }),
            2 => (small.clone(), any::<u8>()).prop_map(|(pick, value)| Op::Write { pick, value }),
            1 => Just(Op::Purge),
            1 => any::<u8>().prop_map(|kind| Op::ArenaNew { kind }),
            4 => (small.clone(), prop_oneof![0u32..256, 0u32..5000]).prop_map(|(pick, bytes)| Op::ArenaAlloc { pick, bytes }),
            1 => (small.clone(), any::<u8>()).prop_map(|(pick, block)| Op::ArenaDealloc { pick, block }),
            1 => (small.clone(), any::<u8>()).prop_map(|(pick, block)| Op::ArenaBadDealloc { pick, block }),
            1 => small.prop_map(|pick| Op::ArenaDrop { pick }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        #[cfg_attr(miri, ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri")]
        fn buddy_space_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
            check_ops(Coalescing::Buddy, &ops);
        }

        #[test]
        #[cfg_attr(miri, ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri")]
        fn baseline_space_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
            check_ops(Coalescing::None, &ops);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri"
    )]
    fn fuzz_decoder_runs() {
        let data: Vec<u8> = (0..400u32).map(|i| (i * 37 % 251) as u8).collect();
        fuzz(&data);
        fuzz(&data[1..]);
        fuzz(&[]);
    }
}
