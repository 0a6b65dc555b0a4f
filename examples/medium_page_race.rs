//! The medium page race (JDK-8339387), measured: N threads (16 by default)
//! allocate objects for a few seconds with the shared medium page installed
//! `Racy` (the old compare-and-swap race with undo) and `Synchronized`, each
//! on a fresh heap, with a stop-the-world "GC" that frees everything
//! whenever the heap is exhausted.
//!
//! Two workloads, each run as alternating pairs (Racy first, then
//! Synchronized first, and so on) so that the machine's drift falls on both
//! modes alike:
//!
//! - **medium**: objects of 256 KiB - 1 MiB only. Prints the throughput of
//!   every pair, the median Synchronized / Racy ratio and its range, and the
//!   counters per mode.
//! - **mixed**: three small objects (64 B - 32 KiB) for every medium one:
//!   the footprint side. Small pages are cut from cached medium pages that
//!   lost races, so the racy mode flushes the cache and defragments; prints
//!   peak committed bytes, page cache flush, defragment and undo per mode.
//!
//! The gc,stats blocks of the last medium run of each mode close the output.
//!
//! `cargo run --release -p hotmem-examples --example medium_page_race -- [--pairs N] [--secs N] [--heap-mib N] [--threads N]`

#![allow(missing_docs)]

use hotmem_os::Memory;
use hotmem_page::{
    Age, CounterSnapshot, HeapConfig, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout,
    PageAllocator, StatSampler, StatsReport,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "stand_in_safepoint.rs"]
mod stand_in_safepoint;
use stand_in_safepoint::{StandInSafepoint, Step};

struct Args {
    pairs: usize,
    secs: u64,
    heap_mib: usize,
    threads: usize,
}

fn args() -> Args {
    let mut a = Args {
        pairs: 10,
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
            "--pairs" => a.pairs = value as usize,
            "--secs" => a.secs = value,
            "--heap-mib" => a.heap_mib = value as usize,
            "--threads" => a.threads = value as usize,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        a.pairs > 0 && a.threads > 0 && a.secs > 0,
        "counts must be positive"
    );
    a
}

/// What the threads allocate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Workload {
    /// Medium objects only.
    Medium,
    /// Three small objects for every medium one.
    Mixed,
}

struct RunResult {
    report: StatsReport,
    counters: CounterSnapshot,
    object_bytes: u64,
    objects: u64,
    gcs: u64,
    peak_committed: usize,
    elapsed: Duration,
    /// CPU time the process used during the run (all threads).
    cpu: Duration,
}

impl RunResult {
    fn mbps(&self) -> f64 {
        self.object_bytes as f64 / (1 << 20) as f64 / self.elapsed.as_secs_f64()
    }

    /// Throughput per CPU second: what the run got done with the CPU time it
    /// got, which the other load on a shared machine disturbs less than the
    /// wall-clock throughput.
    fn mb_per_cpu_s(&self) -> f64 {
        self.object_bytes as f64 / (1 << 20) as f64 / self.cpu.as_secs_f64().max(1e-3)
    }
}

/// User plus system CPU time of this process so far (`/proc/self/stat`,
/// in clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name may hold spaces: the fields we want follow its ')'.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// A per-thread xorshift step.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Medium: above 256 KiB (the largest small object) up to 1 MiB, in steps
/// of 8 KiB. Small (mixed workload only): 64 B to 32 KiB, in steps of 64 B.
fn next_size(x: &mut u64, workload: Workload) -> usize {
    let r = next(x) as usize;
    match workload {
        Workload::Mixed if !r.is_multiple_of(4) => 64 * (1 + (r >> 2) % 512),
        _ => (256 << 10) + (1 + (r >> 2) % 96) * (8 << 10),
    }
}

fn run(mode: MediumPageMode, workload: Workload, a: &Args) -> RunResult {
    let heap = Arc::new(
        PageAllocator::new(&Memory::new(), HeapConfig::new(a.heap_mib << 20)).expect("heap"),
    );
    let objects = Arc::new(ObjectAllocator::new(heap.clone(), mode));
    // Mutators allocate holding the read side; the GC takes the write side:
    // that is the safepoint that makes retiring the allocation pages sound.
    let safepoint = Arc::new(StandInSafepoint::default());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(a.threads + 1));
    let workers: Vec<_> = (0..a.threads)
        .map(|t| {
            let (heap, objects, safepoint, stop, start) = (
                heap.clone(),
                objects.clone(),
                safepoint.clone(),
                stop.clone(),
                start.clone(),
            );
            // Named by mode, so that a profile tells the modes apart.
            let name = match mode {
                MediumPageMode::Racy => format!("racy-{t}"),
                _ => format!("sync-{t}"),
            };
            std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    let mut x =
                        0x2545_F491_4F6C_DD1D_u64 ^ ((t as u64 + 1) * 0x9E37_79B9_7F4A_7C15);
                    let (mut bytes, mut count, mut gcs) = (0u64, 0u64, 0u64);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let alloc = || {
                            let size = next_size(&mut x, workload);
                            let layout = ObjectLayout::new(size).expect("layout");
                            match objects.alloc_object(layout, Age::EDEN, NodeId::ZERO) {
                                Ok(addr) => {
                                    // SAFETY: a fresh object in a mapped page; this thread owns it.
                                    // Initialize it, as a mutator does.
                                    unsafe { addr.as_ptr::<u8>().write_bytes(0, size) };
                                    bytes += size as u64;
                                    count += 1;
                                    Step::Allocated
                                }
                                Err(e) if e.is_heap_exhausted() => Step::HeapExhausted,
                                Err(e) => panic!("{e}"),
                            }
                        };
                        gcs += safepoint.batch(16, alloc, || {
                            // SAFETY: `batch` runs this under the write side,
                            // so no mutator is allocating, and no object is
                            // used any more (this "GC" frees everything): the
                            // pages can be retired and freed.
                            unsafe {
                                objects.retire_pages();
                                heap.free_pages(&heap.pages()).expect("free");
                            }
                        });
                    }
                    (bytes, count, gcs)
                })
                .expect("spawn")
        })
        .collect();
    let mut sampler = StatSampler::new(heap.counters(), Instant::now());
    let mut peak_committed = 0;
    start.wait();
    let t0 = Instant::now();
    let cpu0 = process_cpu();
    let end = t0 + Duration::from_secs(a.secs);
    let mut next_sample = t0 + Duration::from_secs(1);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        peak_committed = peak_committed.max(heap.committed_bytes());
        if Instant::now() >= next_sample {
            sampler.sample(heap.counters(), Instant::now());
            next_sample += Duration::from_secs(1);
        }
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
    let cpu = process_cpu().saturating_sub(cpu0);
    sampler.sample(heap.counters(), Instant::now());
    heap.check_invariants();
    RunResult {
        report: sampler.report(),
        counters: heap.counters(),
        object_bytes,
        objects: count,
        gcs,
        peak_committed: peak_committed.max(heap.committed_bytes()),
        elapsed,
        cpu,
    }
}

/// Runs `pairs` alternating pairs; returns the Racy and the Synchronized
/// results, in pair order.
fn pairs(workload: Workload, a: &Args) -> (Vec<RunResult>, Vec<RunResult>) {
    let (mut racy, mut sync) = (Vec::new(), Vec::new());
    for i in 0..a.pairs {
        if i % 2 == 0 {
            racy.push(run(MediumPageMode::Racy, workload, a));
            sync.push(run(MediumPageMode::Synchronized, workload, a));
        } else {
            sync.push(run(MediumPageMode::Synchronized, workload, a));
            racy.push(run(MediumPageMode::Racy, workload, a));
        }
        let (r, s) = (&racy[i], &sync[i]);
        println!(
            "  pair {:>2} ({:<12} first): Racy {:>6.0} MB/s  Synchronized {:>6.0} MB/s  ratio {:.3}  (per CPU s: {:.3})",
            i + 1,
            if i % 2 == 0 { "Racy" } else { "Synchronized" },
            r.mbps(),
            s.mbps(),
            s.mbps() / r.mbps(),
            s.mb_per_cpu_s() / r.mb_per_cpu_s()
        );
    }
    (racy, sync)
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// The 1-minute load average, to print beside the timings.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row of a side-by-side table: the median over the runs of each mode.
fn row(name: &str, racy: &[RunResult], sync: &[RunResult], f: &dyn Fn(&RunResult) -> f64) {
    let m = |rs: &[RunResult]| median(rs.iter().map(f).collect());
    println!("  {name:<42}{:>14.0}{:>14.0}", m(racy), m(sync));
}

fn table(racy: &[RunResult], sync: &[RunResult]) {
    println!(
        "  {:<42}{:>14}{:>14}",
        "median per run", "Racy", "Synchronized"
    );
    let k = |f: fn(&CounterSnapshot) -> u64| move |r: &RunResult| f(&r.counters) as f64;
    row("object throughput (MB/s)", racy, sync, &RunResult::mbps);
    row(
        "object throughput per CPU second (MB/s)",
        racy,
        sync,
        &RunResult::mb_per_cpu_s,
    );
    row("objects allocated", racy, sync, &|r| r.objects as f64);
    row("GCs (heap exhausted)", racy, sync, &|r| r.gcs as f64);
    row("peak committed (MiB)", racy, sync, &|r| {
        (r.peak_committed >> 20) as f64
    });
    row(
        "medium pages allocated",
        racy,
        sync,
        &k(|c| c.pages_allocated.medium),
    );
    row(
        "medium pages installed",
        racy,
        sync,
        &k(|c| c.pages_installed.medium),
    );
    row("medium undo", racy, sync, &k(|c| c.undo_ops.medium));
    row(
        "small pages allocated",
        racy,
        sync,
        &k(|c| c.pages_allocated.small),
    );
    row(
        "page cache flush (MiB)",
        racy,
        sync,
        &k(|c| c.cache_flush_bytes >> 20),
    );
    row(
        "page cache flush (ops)",
        racy,
        sync,
        &k(|c| c.cache_flush_ops),
    );
    row("defragment (ops)", racy, sync, &k(|c| c.defragment_ops));
    row(
        "committed over the run (MiB)",
        racy,
        sync,
        &k(|c| c.commit_bytes >> 20),
    );
}

fn main() {
    let a = args();
    let medium_page = HeapConfig::new(a.heap_mib << 20)
        .page_sizes()
        .expect("sizes")
        .medium_page();
    println!(
        "medium_page_race: {} threads on {} CPUs, {} MiB heap (medium pages of {} MiB), {} pairs of {} s runs per workload\n",
        a.threads,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        a.heap_mib,
        medium_page >> 20,
        a.pairs,
        a.secs
    );

    let load0 = loadavg();
    println!("== medium objects (256 KiB - 1 MiB) ==");
    let (racy, sync) = pairs(Workload::Medium, &a);
    let ratios: Vec<f64> = racy
        .iter()
        .zip(&sync)
        .map(|(r, s)| s.mbps() / r.mbps())
        .collect();
    let (lo, hi) = range(&ratios);
    println!();
    table(&racy, &sync);
    println!(
        "\nthroughput Synchronized / Racy: median {:.3} over {} alternating pairs (range {:.3} - {:.3})",
        median(ratios),
        a.pairs,
        lo,
        hi
    );
    let cpu_ratios: Vec<f64> = racy
        .iter()
        .zip(&sync)
        .map(|(r, s)| s.mb_per_cpu_s() / r.mb_per_cpu_s())
        .collect();
    let (clo, chi) = range(&cpu_ratios);
    println!(
        "per CPU second Synchronized / Racy: median {:.3} (range {:.3} - {:.3}); load average before / after: {} / {}\n",
        median(cpu_ratios),
        clo,
        chi,
        load0,
        loadavg()
    );

    println!("== mixed: 3 small objects (64 B - 32 KiB) per medium object (footprint) ==");
    let (mracy, msync) = pairs(Workload::Mixed, &a);
    println!();
    table(&mracy, &msync);
    let ratios: Vec<f64> = mracy
        .iter()
        .zip(&msync)
        .map(|(r, s)| s.mbps() / r.mbps())
        .collect();
    let (lo, hi) = range(&ratios);
    println!(
        "\nmixed throughput Synchronized / Racy: median {:.3} over {} alternating pairs (range {:.3} - {:.3}); load average now: {}\n",
        median(ratios),
        a.pairs,
        lo,
        hi,
        loadavg()
    );

    for (name, r) in [("Racy", racy.last()), ("Synchronized", sync.last())] {
        if let Some(r) = r {
            println!("== gc,stats, last medium run, {name} ==");
            print!("{}", r.report);
            println!();
        }
    }
}
