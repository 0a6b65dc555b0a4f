//! The arena chunk cache (`ArenaCache::Sharded`): a dropped loader's small
//! chunks serve the next loader on the same thread; cached memory still
//! serves large requests (the space flushes before it reports exhaustion),
//! still goes back to the OS on purge, and the space's invariants hold with
//! chunks cached, also when many threads create and drop loaders at once
//! while another flushes, purges and takes root chunks.

use hotmem_chunk::{
    Arena, ArenaCache, ArenaKind, ChunkLevel, ChunkManager, MetadataType, SpaceConfig,
};
use hotmem_os::Memory;

fn space(size: usize, cache: ArenaCache) -> ChunkManager {
    let config = SpaceConfig::with_size(size).arena_cache(cache);
    ChunkManager::new(&Memory::new(), MetadataType::NonClass, config).unwrap()
}

/// One short-lived loader: `blocks` small allocations, each filled with
/// `mark` and checked, then dropped.
fn loader(s: &ChunkManager, blocks: usize, mark: u8) {
    let mut a = Arena::new(s, ArenaKind::Standard);
    let mut got = Vec::with_capacity(blocks);
    for i in 0..blocks {
        let size = 16 + (i % 31) * 8;
        let p = a.allocate(size).unwrap();
        // SAFETY: the arena handed out `size` committed, writable bytes at
        // `p`, and they are this loader's alone until it drops.
        unsafe { std::ptr::write_bytes(p.get() as *mut u8, mark, size) };
        got.push((p, size));
    }
    for (p, size) in got {
        // SAFETY: as above; nothing else wrote them meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts(p.get() as *const u8, size) };
        assert!(bytes.iter().all(|&b| b == mark), "a block was overwritten");
    }
    a.verify().unwrap();
}

#[test]
fn a_dropped_loaders_chunk_serves_the_next_loader_on_the_thread() {
    let s = space(8 << 20, ArenaCache::Sharded);
    let mut a = Arena::new(&s, ArenaKind::Standard);
    a.allocate(64).unwrap();
    let first = a.chunks().next().unwrap();
    drop(a);
    let st = s.statistics();
    assert_eq!((st.cached_chunks, st.cached_bytes), (1, first.size()));
    // A cached chunk counts as in use, with nothing used.
    assert_eq!((st.in_use_chunks, st.used), (1, 0));
    s.verify().unwrap();
    let splits = st.counters.splits;

    let mut b = Arena::new(&s, ArenaKind::Standard);
    b.allocate(64).unwrap();
    assert_eq!(b.chunks().next().unwrap(), first, "b reuses a's chunk");
    let st = s.statistics();
    assert_eq!(st.cached_chunks, 0);
    assert_eq!(st.counters.splits, splits, "no new chunk was cut");
    assert_eq!(st.used, 64);
    b.verify().unwrap();
    s.verify().unwrap();
}

#[test]
fn without_the_cache_a_dropped_loader_merges_at_once() {
    let s = space(8 << 20, ArenaCache::Off);
    let mut a = Arena::new(&s, ArenaKind::Standard);
    a.allocate(64).unwrap();
    drop(a);
    let st = s.statistics();
    assert_eq!((st.in_use_chunks, st.cached_chunks), (0, 0));
    assert_eq!(s.flush_cache(), 0);
}

#[test]
fn cached_chunks_serve_a_root_chunk_request_when_the_space_is_full() {
    // One root chunk of space, cut into many loaders' chunks; after they
    // drop, some sit in the cache and keep the root from merging. Asking for
    // the root must flush them and succeed.
    let root = SpaceConfig::DEFAULT_ROOT_CHUNK;
    let s = space(root, ArenaCache::Sharded);
    let loaders: Vec<Arena> = (0..64)
        .map(|_| {
            let mut a = Arena::new(&s, ArenaKind::Standard);
            a.allocate(100).unwrap();
            a
        })
        .collect();
    drop(loaders);
    assert!(s.statistics().cached_chunks > 0);
    let chunk = s.get_chunk(ChunkLevel::ROOT, ChunkLevel::ROOT, 0).unwrap();
    assert_eq!(chunk.size(), root);
    let st = s.statistics();
    assert_eq!(
        (st.cached_chunks, st.in_use_chunks, st.free_chunks),
        (0, 1, 0)
    );
    s.return_chunk(chunk).unwrap();
    s.verify().unwrap();
}

#[test]
fn purge_returns_cached_memory_to_the_os() {
    let s = space(8 << 20, ArenaCache::Sharded);
    for mark in 0..4 {
        loader(&s, 32, mark);
    }
    assert!(s.statistics().cached_chunks > 0);
    let report = s.purge().unwrap();
    let st = s.statistics();
    assert_eq!((st.cached_chunks, st.in_use_chunks), (0, 0));
    assert!(report.bytes > 0, "{report:?}");
    assert_eq!(st.in_use_committed + st.free_committed, 0, "{st:?}");
    s.verify().unwrap();
}

#[test]
fn many_threads_create_and_drop_loaders() {
    const THREADS: usize = 4;
    const LOADERS: usize = 2000;
    let s = space(32 << 20, ArenaCache::Sharded);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let s = &s;
            scope.spawn(move || {
                for i in 0..LOADERS {
                    loader(s, 1 + i % 64, (t * 64 + i % 64) as u8);
                }
            });
        }
    });
    s.verify().unwrap();
    let cached = s.statistics().cached_chunks;
    assert!(cached > 0 && cached <= s.statistics().in_use_chunks);
    assert_eq!(s.flush_cache(), cached);
    let st = s.statistics();
    assert_eq!((st.in_use_chunks, st.cached_chunks, st.used), (0, 0, 0));
    // Everything merged back: the space is whole root chunks again.
    assert!(st.levels[1..].iter().all(|l| l.free_chunks == 0), "{st:?}");
    s.verify().unwrap();
}

#[test]
fn flushes_purges_and_root_requests_race_with_loaders() {
    // An adversarial mix: loaders come and go on three threads while a
    // fourth flushes the cache, purges, and takes and returns root chunks
    // (each of which may flush). Every loader checks its blocks; the space
    // must stay consistent throughout and merge back whole at the end.
    const LOADERS: usize = 1500;
    let s = space(8 << 20, ArenaCache::Sharded);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..3 {
            let (s, done) = (&s, &done);
            scope.spawn(move || {
                for i in 0..LOADERS {
                    loader(s, 1 + i % 48, (t * 48 + i % 48) as u8);
                }
                done.fetch_add(1, std::sync::atomic::Ordering::Release);
            });
        }
        let (s, done) = (&s, &done);
        scope.spawn(move || {
            let mut round = 0usize;
            while done.load(std::sync::atomic::Ordering::Acquire) < 3 {
                match round % 3 {
                    0 => {
                        s.flush_cache();
                    }
                    1 => {
                        s.purge().unwrap();
                    }
                    _ => {
                        if let Ok(root) = s.get_chunk(ChunkLevel::ROOT, ChunkLevel::ROOT, 0) {
                            s.return_chunk(root).unwrap();
                        }
                    }
                }
                s.verify().unwrap();
                round += 1;
            }
        });
    });
    s.flush_cache();
    let st = s.statistics();
    assert_eq!((st.in_use_chunks, st.cached_chunks, st.used), (0, 0, 0));
    assert!(st.levels[1..].iter().all(|l| l.free_chunks == 0), "{st:?}");
    s.verify().unwrap();
}
