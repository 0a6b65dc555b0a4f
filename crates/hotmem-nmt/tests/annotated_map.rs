//! The annotated map finds memory reserved and committed through
//! `hotmem-os`, tagged, with its resident size.

use hotmem_nmt::{Level, Scale, Tracker};
use hotmem_os::{MemTag, Memory, page_size};
use std::sync::Arc;

#[test]
fn map_shows_tracked_memory_with_tags_and_residency() {
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
    // The mapping that holds the committed pages. Found by containment, not
    // by its start: the kernel may have merged a neighbour's mapping (another
    // thread's, with the same protection) into the same VMA.
    let holding = |at: hotmem_os::Address| {
        map.entries()
            .iter()
            .find(|e| e.mapping.range.contains(at))
            .unwrap_or_else(|| panic!("no mapping holds {at} in\n{text}"))
    };
    let entry = holding(hot.start());
    assert!(
        entry.tags.iter().any(|(t, _)| *t == MemTag::CODE),
        "{entry:?}"
    );
    assert_eq!(entry.mapping.perms, "rw-p", "the committed part: {entry:?}");
    let start = format!("{:#018x}", entry.mapping.range.start().get());
    let line = text
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no line for {start} in\n{text}"));
    assert!(line.contains("Code") && line.contains("rw-p"), "{line}");
    let arena_entry = holding(arena.start());
    assert!(
        arena_entry.tags.iter().any(|(t, _)| *t == arena_tag),
        "{arena_entry:?}"
    );
    assert!(text.contains("Map test arena"), "{text}");
    let residency = map
        .residency()
        .iter()
        .find(|(t, _)| *t == MemTag::CODE)
        .map(|(_, r)| *r)
        .unwrap();
    assert_eq!(residency.committed, 8 * page);
    assert_eq!(residency.resident, 4 * page);
    // The tracked totals are this tracker's alone: exactly its reservations.
    let totals = map.totals();
    assert_eq!(totals.tracked, 80 * page);
    assert_eq!(totals.tracked_committed, 8 * page);
    assert_eq!(totals.tracked_resident, 4 * page);

    let json = serde_json::to_value(&map).unwrap();
    let json_entry = json["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["start"].as_u64() == Some(entry.mapping.range.start().get() as u64))
        .unwrap();
    assert_eq!(json_entry["tags"][0]["name"], "Code");
    assert_eq!(
        json_entry["tags"][0]["committed"].as_u64(),
        Some(8 * page as u64),
        "the committed pages, and only they, are tracked in this mapping"
    );

    // The writer form returns the same totals.
    let mut out = String::new();
    let written = nmt.write_annotated_map(&mut out, Scale::Kilo).unwrap();
    assert_eq!(written.tracked, totals.tracked);
    drop(arena);
    drop(code);
    assert_eq!(nmt.summary().total().reserved, 0);
}
