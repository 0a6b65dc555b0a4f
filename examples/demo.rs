//! The hotmem demo: `cargo xtask demo`.
//!
//! Shows what hotmem-os does for real: reserve, commit, uncommit and release
//! address space, watched by an observer; memfd physical memory mapped at two
//! addresses; resident memory read back from the kernel at each step.

use hotmem_os::{MemRange, MemTag, Memory, MemoryEvent, MemoryObserver, procfs};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts reserved and committed bytes as the observer sees them.
#[derive(Default)]
struct Counter {
    reserved: AtomicUsize,
    committed: AtomicUsize,
    events: AtomicUsize,
}

impl MemoryObserver for Counter {
    fn observe(&self, event: &MemoryEvent) {
        self.events.fetch_add(1, Ordering::Relaxed);
        let n = event.range().len();
        match event {
            MemoryEvent::Reserve { .. } => self.reserved.fetch_add(n, Ordering::Relaxed),
            MemoryEvent::Release { .. } => self.reserved.fetch_sub(n, Ordering::Relaxed),
            MemoryEvent::Commit { .. } => self.committed.fetch_add(n, Ordering::Relaxed),
            MemoryEvent::Uncommit { .. } => self.committed.fetch_sub(n, Ordering::Relaxed),
        };
        println!("  observer: {event:?}");
    }
}

fn mib(n: usize) -> f64 {
    n as f64 / (1 << 20) as f64
}

fn show(label: &str, counter: &Counter, range: MemRange) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{label:<44} observer: reserved {:>7.2} MiB, committed {:>7.2} MiB | kernel: resident {:>7.2} MiB",
        mib(counter.reserved.load(Ordering::Relaxed)),
        mib(counter.committed.load(Ordering::Relaxed)),
        mib(procfs::resident_bytes(range)?),
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("hotmem demo: virtual memory through hotmem-os\n");
    let counter = Arc::new(Counter::default());
    let memory = Memory::with_observer(counter.clone());

    let heap = memory.reserve_aligned(64 << 20, 2 << 20, MemTag::JAVA_HEAP)?;
    let all = heap.range();
    show("reserved 64 MiB aligned to 2 MiB", &counter, all)?;

    let first = heap.subrange(0, 16 << 20)?;
    heap.commit(first)?;
    show("committed the first 16 MiB", &counter, all)?;
    // SAFETY: `first` was committed just above and nothing else uses it.
    unsafe { first.start().as_ptr::<u8>().write_bytes(0x5A, first.len()) };
    show("wrote every byte of it", &counter, all)?;

    heap.uncommit(first)?;
    show("uncommitted it", &counter, all)?;

    let phys = memory.physical(4 << 20)?;
    phys.commit(0, 4 << 20)?;
    let a = heap.map(heap.start() + (32 << 20), &phys, 0, 4 << 20)?;
    let b = heap.map(heap.start() + (48 << 20), &phys, 0, 4 << 20)?;
    // SAFETY: both ranges map the same committed 4 MiB of the memfd.
    let seen = unsafe {
        a.start().as_ptr::<u64>().write(0xC0FFEE);
        b.start().as_ptr::<u64>().read()
    };
    println!(
        "memfd mapped at {} and {}: wrote 0xC0FFEE through one, read {seen:#x} through the other",
        a.start(),
        b.start()
    );
    println!(
        "memfd holds {:.2} MiB of physical memory",
        mib(phys.committed_bytes()?)
    );

    let bad = heap.commit(MemRange::new(heap.start() + 1, 4096)?);
    println!("commit of a misaligned range: {}", bad.unwrap_err());

    let start = heap.start();
    drop(heap);
    let left = procfs::mappings_overlapping(all)?;
    println!(
        "\nreleased: {} observer events, {} mapping(s) left at {start}, observer reserved {} bytes",
        counter.events.load(Ordering::Relaxed),
        left.len(),
        counter.reserved.load(Ordering::Relaxed)
    );
    Ok(())
}
