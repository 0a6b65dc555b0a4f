//! Two class loaders on two threads share one tiny space under loom: each
//! arena takes a chunk, fills it, grows it (in place into its buddy with
//! coalescing, or by a second chunk without), checks that it still owns
//! every chunk it holds, and dies, returning them.
//!
//! Checked in every interleaving (up to the preemption bound):
//! * no chunk is handed to two owners: each arena's chunks are the live
//!   entries it was handed (`Arena::verify`, under the lock) and the bytes
//!   it wrote are still there when it dies;
//! * afterwards the space passes `verify()` (tiling, free lists hold
//!   exactly the free chunks, no two free buddies, capacity conserved) and,
//!   with coalescing, everything merged back into root chunks;
//! * with the arena cache, a third loader died first and left its chunks in
//!   the cache, where both loaders may reach for them: still no chunk with
//!   two owners, and after a flush everything merges back.

use crate::{Arena, ArenaCache, ArenaKind, ChunkManager, Coalescing, MetadataType, SpaceConfig};
use hotmem_os::{Memory, page_size};
use loom::thread;

/// Two 16 KiB root chunks, 1 KiB smallest chunks, a page per granule.
fn tiny(coalescing: Coalescing) -> SpaceConfig {
    SpaceConfig {
        size: 32 << 10,
        root_chunk_size: 16 << 10,
        min_chunk_size: 1 << 10,
        commit_granule: page_size(),
        coalescing,
        arena_cache: ArenaCache::Off,
    }
}

/// One loader's life: two 1000-byte classes (a reflection loader's class
/// space chunks are 1 KiB, so the second one needs more room).
fn loader(space: &ChunkManager, mark: u8) {
    let mut arena = Arena::new(space, ArenaKind::Reflection);
    let blocks: Vec<_> = (0..2)
        .map(|_| {
            let p = arena.allocate(1000).expect("the tiny space has room");
            // SAFETY: the arena handed out 1000 committed bytes at `p`, used
            // by nobody else.
            unsafe { p.as_ptr::<u8>().write_bytes(mark, 1000) };
            p
        })
        .collect();
    arena.verify().expect("every chunk held is ours alone");
    for p in blocks {
        // SAFETY: as above; the block is still allocated.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr::<u8>(), 1000) };
        assert!(bytes.iter().all(|&b| b == mark), "another owner wrote here");
    }
}

fn model(coalescing: Coalescing, cache: ArenaCache) {
    loom::model(move || {
        let config = tiny(coalescing).arena_cache(cache);
        let space =
            ChunkManager::new(&Memory::new(), MetadataType::Class, config).expect("tiny space");
        if cache == ArenaCache::Sharded {
            // A loader that died before: its chunks wait in the cache, and
            // the two loaders below may both reach for them.
            loader(&space, 0xC);
        }
        let other = {
            let space = space.clone();
            thread::spawn(move || loader(&space, 0xB))
        };
        loader(&space, 0xA);
        other.join().expect("the other loader");
        space.verify().expect("space consistent");
        space.flush_cache();
        let st = space.statistics();
        assert_eq!(st.in_use_chunks, 0);
        if coalescing.merges() {
            assert_eq!(
                st.free_chunks,
                st.carved / space.geometry().root_chunk_size(),
                "not fully coalesced:\n{st}"
            );
        }
    });
}

#[test]
fn loom_two_arenas_buddy() {
    model(Coalescing::Buddy, ArenaCache::Off);
}

#[test]
fn loom_two_arenas_baseline() {
    model(Coalescing::None, ArenaCache::Off);
}

#[test]
fn loom_two_arenas_buddy_cached() {
    model(Coalescing::Buddy, ArenaCache::Sharded);
}
