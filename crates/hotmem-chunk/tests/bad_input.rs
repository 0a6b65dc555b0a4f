//! Bad input: every misuse is a typed error and changes nothing.

use hotmem_chunk::{
    Arena, ArenaKind, ChunkError, ChunkLevel, ChunkManager, Coalescing, CommitChunkError,
    ConfigError, DeallocError, EnlargeError, GetChunkError, MetadataType, ReturnChunkError,
    SpaceConfig, SpaceError,
};
use hotmem_os::{Address, Memory};

fn space(coalescing: Coalescing) -> ChunkManager {
    let config = SpaceConfig::with_size(8 << 20).coalescing(coalescing);
    ChunkManager::new(&Memory::new(), MetadataType::Class, config).unwrap()
}

/// Runs `f`, which must be refused, and checks nothing changed.
fn unchanged<T: std::fmt::Debug>(s: &ChunkManager, f: impl FnOnce() -> T) -> T {
    let before = (s.statistics(), s.map_with_cell(1024));
    let r = f();
    assert!(
        before == (s.statistics(), s.map_with_cell(1024)),
        "{r:?} changed the space"
    );
    s.verify().unwrap();
    r
}

/// Double returns, stale handles and handles at the wrong level no longer
/// compile (the handle is owned and consumed; see the compile_fail doctests
/// on `Chunk` and `ChunkView`). What is left to refuse at run time is a chunk
/// of another space: refused, handed back, and nothing changes.
#[test]
fn foreign_returns_are_refused_and_handed_back() {
    let s = space(Coalescing::Buddy);
    let l4k = s.geometry().level_of_size(4096).unwrap();
    let keep = s.get_chunk(l4k, l4k, 0).unwrap();
    let other = space(Coalescing::Buddy);
    let f = other.get_chunk(l4k, l4k, 0).unwrap();
    let view = f.view();
    let r = unchanged(&s, || s.return_chunk(f));
    let e: ReturnChunkError = r.unwrap_err();
    assert!(
        matches!(e.reason(), ChunkError::Foreign { chunk } if *chunk == view),
        "{e}"
    );
    assert!(e.to_string().contains("another space"), "{e}");
    let f = e.into_chunk();
    assert_eq!(f.view(), view);
    other.return_chunk(f).unwrap();
    other.verify().unwrap();
    s.return_chunk(keep).unwrap();
    s.verify().unwrap();
    assert_eq!(s.statistics().in_use_chunks, 0);
}

#[test]
fn bad_requests_are_refused() {
    let s = space(Coalescing::Buddy);
    let r = unchanged(&s, || {
        s.get_chunk(ChunkLevel::new(13), ChunkLevel::new(13), 0)
    });
    assert!(matches!(r, Err(GetChunkError::BadLevel { .. })), "{r:?}");
    let r = unchanged(&s, || {
        s.get_chunk(ChunkLevel::new(5), ChunkLevel::new(4), 0)
    });
    assert!(matches!(r, Err(GetChunkError::BadRequest { .. })), "{r:?}");
    let r = unchanged(&s, || {
        s.get_chunk(ChunkLevel::new(12), ChunkLevel::new(12), 2048)
    });
    assert!(matches!(r, Err(GetChunkError::BadRequest { .. })), "{r:?}");
    // Exhaustion: two root chunks, then nothing.
    let a = s.get_chunk(ChunkLevel::ROOT, ChunkLevel::ROOT, 0).unwrap();
    let b = s.get_chunk(ChunkLevel::ROOT, ChunkLevel::ROOT, 0).unwrap();
    let r = unchanged(&s, || {
        s.get_chunk(ChunkLevel::new(12), ChunkLevel::new(12), 0)
    });
    assert!(
        matches!(
            r,
            Err(GetChunkError::Exhausted {
                space: MetadataType::Class,
                ..
            })
        ),
        "{r:?}"
    );
    let r = unchanged(&s, || s.commit_chunk(&a, a.size() + 1));
    assert!(
        matches!(r, Err(CommitChunkError::BeyondChunk { .. })),
        "{r:?}"
    );
    s.return_chunk(a).unwrap();
    s.return_chunk(b).unwrap();
}

#[test]
fn enlargement_refusals() {
    let s = space(Coalescing::Buddy);
    let l4k = s.geometry().level_of_size(4096).unwrap();
    let mut root = s.get_chunk(ChunkLevel::ROOT, ChunkLevel::ROOT, 0).unwrap();
    let r = unchanged(&s, || s.enlarge_chunk(&mut root));
    assert_eq!(r, Err(EnlargeError::Root));
    let mut lower = s.get_chunk(l4k, l4k, 0).unwrap();
    let mut upper = s.get_chunk(l4k, l4k, 0).unwrap();
    assert_eq!(upper.start(), lower.end());
    let r = unchanged(&s, || s.enlarge_chunk(&mut upper));
    assert_eq!(r, Err(EnlargeError::NotLeader));
    let before = lower.view();
    let r = unchanged(&s, || s.enlarge_chunk(&mut lower));
    assert_eq!(r, Err(EnlargeError::BuddyNotFree));
    assert_eq!(
        lower.view(),
        before,
        "a refused enlargement keeps the handle"
    );
    s.return_chunk(upper).unwrap();
    s.enlarge_chunk(&mut lower).unwrap();
    assert_eq!((lower.start(), lower.size()), (before.start(), 8192));
    assert_eq!(s.statistics().counters.enlargements, 1);
    s.return_chunk(lower).unwrap();
    s.return_chunk(root).unwrap();

    let base = space(Coalescing::None);
    let mut c = base.get_chunk(l4k, l4k, 0).unwrap();
    let r = unchanged(&base, || base.enlarge_chunk(&mut c));
    assert_eq!(r, Err(EnlargeError::Disabled));
}

#[test]
fn bad_deallocations_are_refused() {
    let s = space(Coalescing::Buddy);
    let mut a = Arena::new(&s, ArenaKind::Standard);
    let p = a.allocate(64).unwrap();
    let q = a.allocate(64).unwrap();
    a.deallocate(p, 64).unwrap();
    let before = a.statistics();
    assert!(matches!(
        a.deallocate(p, 64),
        Err(DeallocError::AlreadyFree { .. })
    ));
    assert!(matches!(
        a.deallocate(Address::new(p.get() + 8), 8),
        Err(DeallocError::AlreadyFree { .. })
    ));
    assert!(matches!(
        a.deallocate(Address::new(q.get() + 3), 8),
        Err(DeallocError::Misaligned { .. })
    ));
    assert!(matches!(a.deallocate(q, 0), Err(DeallocError::ZeroSize)));
    // Beyond what the arena handed out.
    assert!(matches!(
        a.deallocate(Address::new(q.get() + 64), 8),
        Err(DeallocError::NotOwned { .. })
    ));
    let mut b = Arena::new(&s, ArenaKind::Standard);
    let foreign = b.allocate(64).unwrap();
    assert!(matches!(
        a.deallocate(foreign, 64),
        Err(DeallocError::NotOwned { .. })
    ));
    assert_eq!(a.statistics(), before);
}

#[test]
fn bad_configurations_are_refused() {
    let m = Memory::new();
    let bad = [
        SpaceConfig::with_size(0),
        SpaceConfig::with_size(10_000),
        SpaceConfig::with_size(8 << 20).chunk_sizes(3 << 20, 1024),
        SpaceConfig::with_size(8 << 20).chunk_sizes(4 << 20, 32),
        SpaceConfig::with_size(8 << 20).commit_granule(1024),
        SpaceConfig::with_size(8 << 20).commit_granule(8 << 20),
    ];
    for config in bad {
        let r = ChunkManager::new(&m, MetadataType::Class, config);
        assert!(matches!(r, Err(SpaceError::Config(_))), "{config:?}");
        let e: ConfigError = config.validate().unwrap_err();
        assert!(!e.to_string().is_empty());
    }
}

/// Issue 12, finding 4: sizes near `usize::MAX` flow through checked
/// arithmetic into typed errors (or clamped views), and change nothing.
#[test]
fn extreme_sizes_are_refused_without_overflow() {
    let m = Memory::new();
    for (config, want) in [
        (SpaceConfig::with_size(usize::MAX & !0xFFFF), "TooLarge"),
        (SpaceConfig::with_size(usize::MAX), "SpaceSize"),
        (
            SpaceConfig::with_size(8 << 20).chunk_sizes(1 << 63, 1 << 10),
            "ChunkSizes",
        ),
        (
            SpaceConfig::with_size(8 << 20).commit_granule(1 << 63),
            "Granule",
        ),
        (
            SpaceConfig::with_size(8 << 20).chunk_sizes(usize::MAX, 1 << 10),
            "NotPowerOfTwo",
        ),
    ] {
        let r = ChunkManager::new(&m, MetadataType::Class, config);
        let Err(SpaceError::Config(e)) = r else {
            panic!("{config:?} accepted: {r:?}");
        };
        assert!(format!("{e:?}").starts_with(want), "{config:?}: {e:?}");
    }
    let s = space(Coalescing::Buddy);
    let l4k = s.geometry().level_of_size(4096).unwrap();
    let r = unchanged(&s, || s.get_chunk(l4k, l4k, usize::MAX));
    assert!(matches!(r, Err(GetChunkError::BadRequest { .. })), "{r:?}");
    let r = unchanged(&s, || {
        s.get_chunk(ChunkLevel::new(u8::MAX), ChunkLevel::new(u8::MAX), 0)
    });
    assert!(matches!(r, Err(GetChunkError::BadLevel { .. })), "{r:?}");
    assert_eq!(ChunkLevel::new(u8::MAX).smaller(), ChunkLevel::new(u8::MAX));
    let c = s.get_chunk(l4k, l4k, 0).unwrap();
    let r = unchanged(&s, || s.commit_chunk(&c, usize::MAX));
    assert!(
        matches!(r, Err(CommitChunkError::BeyondChunk { .. })),
        "{r:?}"
    );
    // Maps: any cell size gives a bounded picture of the whole space.
    for cell in [0, 1, usize::MAX, usize::MAX / 2 + 2] {
        let map = s.map_with_cell(cell);
        let chars = map.count(|_| true);
        assert!(
            (1..=hotmem_chunk::SpaceMap::MAX_CELLS).contains(&chars),
            "{cell}: {chars}"
        );
        assert!(map.cell_bytes.is_power_of_two());
        assert!(map.cell_bytes.saturating_mul(chars) >= s.reserved_bytes());
    }
    s.return_chunk(c).unwrap();
    s.verify().unwrap();
}
