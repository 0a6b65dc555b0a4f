//! The class-space experiment: the buddy allocator fills the space whether
//! or not small loaders ran first; the baseline collapses.

use hotmem_chunk::experiment::ClassSpaceExperiment;
use hotmem_chunk::{AllocError, Coalescing, GetChunkError};
use hotmem_os::Memory;

#[test]
fn buddy_fills_the_space_baseline_collapses() {
    let memory = Memory::new();
    let buddy = ClassSpaceExperiment::review(Coalescing::Buddy);
    let base = ClassSpaceExperiment::review(Coalescing::None);
    let b_small = buddy.run(&memory).unwrap();
    let b_clean = buddy.without_small_loaders().run(&memory).unwrap();
    let n_small = base.run(&memory).unwrap();
    let n_clean = base.without_small_loaders().run(&memory).unwrap();
    for o in [&b_small, &b_clean, &n_small, &n_clean] {
        assert!(
            matches!(o.oom, AllocError::Chunk(GetChunkError::Exhausted { .. })),
            "{:?}",
            o.oom
        );
    }
    // 10 MiB of 4 KiB chunks.
    assert_eq!(b_clean.large_classes, 2560);
    assert_eq!(b_small.large_classes, b_clean.large_classes);
    assert!(b_small.use_ratio() > 0.95, "{}", b_small.use_ratio());
    assert_eq!(n_clean.large_classes, 2560);
    // The small loaders' 2 KiB chunks are stuck on the free list.
    assert!(n_small.large_classes < b_small.large_classes / 2);
    assert!(n_small.use_ratio() < 0.5);
    assert_eq!(
        n_small.stats.levels[11].free_chunks, 3000,
        "{}",
        n_small.stats
    );
    assert_eq!(b_small.stats.free_chunks, 0, "{}", b_small.stats);
    // The maps show it: all in-use 4 KiB chunks vs a band of free 2 KiB ones.
    assert_eq!(b_small.map.count(|c| c == 'K'), b_small.map.count(|_| true));
    assert!(n_small.map.count(|c| c == 'l') > 300);
}

#[test]
fn bad_parameters_are_typed_errors() {
    use hotmem_chunk::experiment::ExperimentError;
    use hotmem_chunk::{ConfigError, SpaceError};
    let memory = Memory::new();
    let mut e = ClassSpaceExperiment::review(Coalescing::Buddy);
    e.small_loaders = 3;
    for small_class in [0, usize::MAX, (4 << 20) + 1] {
        e.small_class = small_class;
        let r = e.run(&memory);
        assert!(matches!(r, Err(ExperimentError::SmallClass(_))), "{r:?}");
    }
    e.small_class = 512;
    e.space.size = usize::MAX;
    let r = e.run(&memory);
    assert!(
        matches!(
            r,
            Err(ExperimentError::Space(SpaceError::Config(
                ConfigError::SpaceSize { .. }
            )))
        ),
        "{r:?}"
    );
}
