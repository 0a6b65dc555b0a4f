//! Arenas: growth by kind, in-place enlargement, free-block reuse, many
//! loaders on many threads sharing one space, the two-space metaspace.

use hotmem_chunk::{
    Arena, ArenaKind, ChunkManager, Coalescing, MetadataType, Metaspace, MetaspaceConfig,
    SpaceConfig, SpaceStatistics,
};
use hotmem_os::Memory;

fn space(ty: MetadataType, coalescing: Coalescing) -> ChunkManager {
    let config = SpaceConfig::with_size(16 << 20).coalescing(coalescing);
    ChunkManager::new(&Memory::new(), ty, config).unwrap()
}

#[test]
fn first_chunk_follows_the_growth_policy() {
    for ty in MetadataType::ALL {
        let s = space(ty, Coalescing::Buddy);
        for kind in ArenaKind::ALL {
            let mut a = Arena::new(&s, kind);
            a.allocate(16).unwrap();
            let c = a.chunks().next().unwrap();
            assert_eq!(c.size(), kind.chunk_size(ty, 0), "{kind} {ty}");
            a.verify().unwrap();
            s.verify().unwrap();
        }
    }
}

#[test]
fn standard_loader_grows_and_enlarges_in_place() {
    let s = space(MetadataType::Class, Coalescing::Buddy);
    let mut a = Arena::new(&s, ArenaKind::Standard);
    for _ in 0..2000 {
        a.allocate(56).unwrap();
        s.verify().unwrap();
    }
    let st = a.statistics();
    assert_eq!(st.live, 2000 * 56);
    assert!(st.enlargements > 0, "{st:?}");
    assert!(st.used <= st.committed && st.committed <= st.capacity);
    // Chunks never more than double and reach the policy's last size.
    assert!(st.levels.windows(2).all(|w| w[1].raw() + 1 >= w[0].raw()));
    assert_eq!(s.statistics().counters.enlargements, st.enlargements);
    let space_stats = s.statistics();
    assert_eq!(space_stats.used, st.used);
    assert_eq!(space_stats.in_use_capacity, st.capacity);
}

#[test]
fn baseline_never_enlarges_splits_or_merges() {
    let s = space(MetadataType::Class, Coalescing::None);
    let mut loaders: Vec<Arena> = (0..50)
        .map(|_| Arena::new(&s, ArenaKind::Standard))
        .collect();
    for a in &mut loaders {
        for _ in 0..100 {
            a.allocate(72).unwrap();
        }
    }
    drop(loaders);
    s.verify().unwrap();
    let c = s.statistics().counters;
    assert_eq!((c.splits, c.merges, c.enlargements), (0, 0, 0));
    assert!(c.carved > 0);
}

#[test]
fn deallocated_blocks_are_reused_before_the_arena_grows() {
    let s = space(MetadataType::Class, Coalescing::Buddy);
    // A reflection loader's class-space chunks are 1 KiB: easy to fill.
    let mut a = Arena::new(&s, ArenaKind::Reflection);
    let blocks: Vec<_> = (0..9).map(|_| a.allocate(104).unwrap()).collect();
    assert_eq!(a.statistics().chunks, 1);
    for &b in &blocks[2..5] {
        a.deallocate(b, 100).unwrap();
    }
    assert_eq!(a.statistics().free_blocks, 3);
    // 1024 - 9 * 104 = 88 bytes left in the chunk: a 40-byte block bumps.
    let bumped = a.allocate(40).unwrap();
    assert_eq!(bumped.get(), blocks[8].get() + 104);
    // A 96-byte block no longer fits: it takes the smallest fitting free
    // block instead of growing the arena.
    let reused = a.allocate(96).unwrap();
    assert_eq!(reused, blocks[2]);
    let st = a.statistics();
    assert_eq!(st.chunks, 1);
    assert_eq!(st.free_block_bytes, 2 * 104 + 8);
    assert_eq!(st.live, 6 * 104 + 40 + 96);
    s.verify().unwrap();
}

#[test]
fn many_loaders_on_many_threads_share_one_space() {
    let s = space(MetadataType::NonClass, Coalescing::Buddy);
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                for round in 0..30 {
                    let kind = ArenaKind::ALL[(t + round) % 4];
                    let mut a = Arena::new(
                        &s,
                        if kind == ArenaKind::Boot {
                            ArenaKind::Standard
                        } else {
                            kind
                        },
                    );
                    for i in 0..200 {
                        let p = a.allocate(8 + (i * 13 + t * 7) % 500).unwrap();
                        // SAFETY: at least 8 committed bytes handed out to us.
                        unsafe { p.as_ptr::<u64>().write(t as u64) };
                    }
                    drop(a);
                }
            });
        }
    });
    s.verify().unwrap();
    let st = s.statistics();
    assert_eq!(st.in_use_chunks, 0);
    assert_eq!(st.free_chunks, st.carved / s.geometry().root_chunk_size());
}

#[test]
fn metaspace_serves_both_types_and_reports() {
    let m = Metaspace::new(&Memory::new(), MetaspaceConfig::default()).unwrap();
    let mut boot = m.loader(ArenaKind::Boot);
    let mut app = m.loader(ArenaKind::Standard);
    for i in 0..300 {
        let k = boot.allocate(MetadataType::Class, 500 + i).unwrap();
        assert!(m.space(MetadataType::Class).contains(k));
        let n = app.allocate(MetadataType::NonClass, 64 + i).unwrap();
        assert!(m.space(MetadataType::NonClass).contains(n));
    }
    m.verify().unwrap();
    boot.verify().unwrap();
    app.verify().unwrap();
    let stats = m.statistics();
    let text = stats.to_string();
    assert!(
        text.contains("Class space") && text.contains("Non-class space"),
        "{text}"
    );
    assert!(text.contains("Chunk freelists"), "{text}");
    let json = serde_json::to_string(&stats).unwrap();
    let back: hotmem_chunk::MetaspaceStatistics = serde_json::from_str(&json).unwrap();
    assert_eq!(back, stats);
    let [c, n] = boot.statistics();
    assert_eq!(c.metadata_type, MetadataType::Class);
    assert_eq!(n.chunks, 0);
    drop((boot, app));
    m.purge().unwrap();
    let after = m.statistics();
    assert_eq!(after.class.committed + after.non_class.committed, 0);
    let s: &SpaceStatistics = &after.class;
    assert_eq!(s.in_use_chunks, 0);
    let map = m.space(MetadataType::Class).map().to_string();
    assert!(map.contains("UPPER in use"), "{map}");
}
