//! The medium page race (JDK-8339387), measured: 16 threads allocate
//! 256 KiB - 1 MiB objects for a few seconds with the shared medium page
//! installed `Racy` (the old compare-and-swap race with undo) and then
//! `Synchronized`, each on a fresh heap, with a stop-the-world "GC" that
//! frees everything whenever the heap is exhausted. Prints both gc,stats
//! blocks and the comparison.
//!
//! `cargo run --release -p hotmem-examples --example medium_page_race -- [--secs N] [--heap-mib N] [--threads N]`

#![allow(missing_docs)]

use hotmem_os::Memory;
use hotmem_page::{
    Age, CounterSnapshot, HeapConfig, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout,
    PageAllocator, StatSampler, StatsReport,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, RwLock};
use std::time::{Duration, Instant};

struct Args {
    secs: u64,
    heap_mib: usize,
    threads: usize,
}

fn args() -> Args {
    let mut a = Args {
        secs: 3,
        heap_mib: 1024,
        threads: 16,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .expect("flag needs a number");
        match flag.as_str() {
            "--secs" => a.secs = value,
            "--heap-mib" => a.heap_mib = value as usize,
            "--threads" => a.threads = value as usize,
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

struct RunResult {
    mode: MediumPageMode,
    report: StatsReport,
    counters: CounterSnapshot,
    object_bytes: u64,
    objects: u64,
    gcs: u64,
    elapsed: Duration,
}

/// The sizes: above 256 KiB (the largest small object) up to 1 MiB, in
/// steps of 8 KiB, from a per-thread xorshift: all of them medium objects.
fn next_size(x: &mut u64) -> usize {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    (256 << 10) + (1 + *x as usize % 96) * (8 << 10)
}

fn run(mode: MediumPageMode, a: &Args) -> RunResult {
    let heap = Arc::new(
        PageAllocator::new(&Memory::new(), HeapConfig::new(a.heap_mib << 20)).expect("heap"),
    );
    let objects = Arc::new(ObjectAllocator::new(heap.clone(), mode));
    // Mutators allocate holding the read side; the GC takes the write side:
    // that is the safepoint that makes retiring the allocation pages sound.
    let safepoint = Arc::new(RwLock::new(()));
    let gc_epoch = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(a.threads + 1));
    let workers: Vec<_> = (0..a.threads)
        .map(|t| {
            let (heap, objects, safepoint, gc_epoch, stop, start) = (
                heap.clone(),
                objects.clone(),
                safepoint.clone(),
                gc_epoch.clone(),
                stop.clone(),
                start.clone(),
            );
            std::thread::spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ ((t as u64 + 1) * 0x9E37_79B9_7F4A_7C15);
                let (mut bytes, mut count, mut gcs) = (0u64, 0u64, 0u64);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let epoch = gc_epoch.load(Ordering::Acquire);
                    let mut exhausted = false;
                    {
                        let _mutator = safepoint.read().expect("lock");
                        for _ in 0..16 {
                            let layout = ObjectLayout::new(next_size(&mut x)).expect("layout");
                            match objects.alloc_object(layout, Age::EDEN, NodeId::ZERO) {
                                Ok(addr) => {
                                    // SAFETY: a fresh object in a mapped page; this thread owns it.
                                    // Initialize it, as a mutator does.
                                    unsafe { addr.as_ptr::<u8>().write_bytes(0, layout.size()) };
                                    bytes += layout.size() as u64;
                                    count += 1;
                                }
                                Err(e) if e.is_heap_exhausted() => {
                                    exhausted = true;
                                    break;
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                    if exhausted {
                        let _gc = safepoint.write().expect("lock");
                        // Another thread may have collected already.
                        if gc_epoch.load(Ordering::Acquire) == epoch {
                            // SAFETY: holding the write side, no mutator is
                            // allocating, and no object is used any more (this
                            // "GC" frees everything): the pages can be retired
                            // and freed.
                            unsafe {
                                objects.retire_pages();
                                heap.free_pages(&heap.pages()).expect("free");
                            }
                            gc_epoch.fetch_add(1, Ordering::Release);
                            gcs += 1;
                        }
                    }
                }
                (bytes, count, gcs)
            })
        })
        .collect();
    let mut sampler = StatSampler::new(heap.counters(), Instant::now());
    start.wait();
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(a.secs);
    let mut next = t0 + Duration::from_secs(1);
    while next <= end {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        sampler.sample(heap.counters(), Instant::now());
        next += Duration::from_secs(1);
    }
    stop.store(true, Ordering::Relaxed);
    let (mut object_bytes, mut count, mut gcs) = (0, 0, 0);
    for w in workers {
        let (b, c, g) = w.join().expect("worker");
        object_bytes += b;
        count += c;
        gcs += g;
    }
    let elapsed = t0.elapsed();
    heap.check_invariants();
    RunResult {
        mode,
        report: sampler.report(),
        counters: heap.counters(),
        object_bytes,
        objects: count,
        gcs,
        elapsed,
    }
}

fn main() {
    let a = args();
    println!(
        "medium_page_race: {} threads, objects 256 KiB - 1 MiB, {} MiB heap (medium pages of {} MiB), {} s per mode\n",
        a.threads,
        a.heap_mib,
        HeapConfig::new(a.heap_mib << 20)
            .page_sizes()
            .expect("sizes")
            .medium_page()
            >> 20,
        a.secs
    );
    let results: Vec<RunResult> = [MediumPageMode::Racy, MediumPageMode::Synchronized]
        .iter()
        .map(|&m| run(m, &a))
        .collect();
    for r in &results {
        println!("== {} ==", r.mode);
        print!("{}", r.report);
        println!();
    }
    let (racy, sync) = (&results[0], &results[1]);
    let mbps = |r: &RunResult| r.object_bytes as f64 / (1 << 20) as f64 / r.elapsed.as_secs_f64();
    let row = |name: &str, f: &dyn Fn(&RunResult) -> String| {
        println!("{name:<44}{:>18}{:>18}", f(racy), f(sync));
    };
    println!("{:<44}{:>18}{:>18}", "side by side", "Racy", "Synchronized");
    let stat = |name: &'static str| {
        move |r: &RunResult| {
            let s = r.report.row(name).expect("row").total;
            format!("{:.0} / {:.0}", s.avg, s.max)
        }
    };
    row(
        "Allocation Rate avg / max (MB/s)",
        &stat("Memory: Allocation Rate"),
    );
    row(
        "Undo Page Allocation avg / max (ops/s)",
        &stat("Memory: Undo Page Allocation"),
    );
    row(
        "Medium Page Undo avg / max (ops/s)",
        &stat("Memory: Medium Page Undo"),
    );
    row(
        "Page Cache Flush avg / max (MB/s)",
        &stat("Memory: Page Cache Flush"),
    );
    row("Defragment avg / max (ops/s)", &stat("Memory: Defragment"));
    row("medium pages allocated", &|r| {
        r.counters.pages_allocated.medium.to_string()
    });
    row("medium pages installed", &|r| {
        r.counters.pages_installed.medium.to_string()
    });
    row("medium undo (total)", &|r| {
        r.counters.undo_ops.medium.to_string()
    });
    row("page cache flush (MiB total)", &|r| {
        (r.counters.cache_flush_bytes >> 20).to_string()
    });
    row("defragment (total)", &|r| {
        r.counters.defragment_ops.to_string()
    });
    row("GCs (heap exhausted)", &|r| r.gcs.to_string());
    row("objects allocated", &|r| r.objects.to_string());
    row("object throughput (MB/s)", &|r| format!("{:.0}", mbps(r)));
    println!(
        "\nthroughput Synchronized / Racy = {:.3}",
        mbps(sync) / mbps(racy)
    );
}
