//! The annotated map finds memory reserved and committed through
//! `hotmem-os`, tagged, with its resident size.

use hotmem_nmt::{Level, Scale, Tracker};
use hotmem_os::{MemTag, Memory, page_size};
use std::sync::Arc;

#[test]
fn map_shows_tracked_memory_with_tags_and_residency() {
    // ThreadSanitizer's runtime places its own anonymous mappings next to
    // ours and the kernel merges them, so our mappings' exact boundaries,
    // which this test checks, do not hold under it; `cargo xtask sanitize`
    // sets HOTMEM_SANITIZER.
    if std::env::var_os("HOTMEM_SANITIZER").is_some_and(|s| s == "thread") {
        eprintln!(
            "skipped under ThreadSanitizer: its mappings merge with ours in /proc/self/smaps"
        );
        return;
    }
    let nmt = Arc::new(Tracker::new(Level::Summary));
    let memory = Memory::with_observer(nmt.clone());
    let page = page_size();
    let code = memory.reserve(64 * page, MemTag::CODE).unwrap();
    let hot = code.subrange(0, 8 * page).unwrap();
    code.commit(hot).unwrap();
    // Touch half of the committed pages: committed 8, resident 4.
    for p in 0..4 {
        // SAFETY: page `p` of `hot` was committed just above.
        unsafe { (hot.start() + p * page).as_ptr::<u8>().write(1) };
    }
    let arena_tag = nmt.register_tag("Map test arena").unwrap();
    let arena = memory.reserve(16 * page, arena_tag).unwrap();

    let map = nmt.annotated_map(Scale::Kilo).unwrap();
    let text = map.to_string();
    let start = format!("{:#018x}", code.start().get());
    let line = text
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no mapping at {start} in\n{text}"));
    assert!(line.contains("Code"), "{line}");
    assert!(
        line.contains("rw-p"),
        "the committed part is its own mapping: {line}"
    );
    let arena_start = format!("{:#018x}", arena.start().get());
    assert!(
        text.lines()
            .any(|l| l.contains(&arena_start) || l.contains("Map test arena")),
        "{text}"
    );
    // Something in the process is not tracked (the test binary itself).
    assert!(map.entries().iter().any(|e| e.tags.is_empty()));
    let residency = map
        .residency()
        .iter()
        .find(|(t, _)| *t == MemTag::CODE)
        .map(|(_, r)| *r)
        .unwrap();
    assert_eq!(residency.committed, 8 * page);
    assert_eq!(residency.resident, 4 * page);
    let totals = map.totals();
    assert!(totals.tracked >= 80 * page);
    assert!(totals.untracked_resident > 0);

    let json = serde_json::to_value(&map).unwrap();
    let entry = json["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["start"].as_u64() == Some(code.start().get() as u64))
        .unwrap();
    assert_eq!(entry["tags"][0]["name"], "Code");
    assert_eq!(
        entry["tags"][0]["committed"].as_u64(),
        Some(8 * page as u64)
    );

    // The writer form returns the same totals.
    let mut out = String::new();
    let written = nmt.write_annotated_map(&mut out, Scale::Kilo).unwrap();
    assert_eq!(written.tracked, totals.tracked);
    drop(arena);
    drop(code);
    assert_eq!(nmt.summary().total().reserved, 0);
}
