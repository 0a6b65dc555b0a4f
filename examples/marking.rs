//! Marking throughput: objects marked per millisecond per GC worker, on a
//! binary tree of `SimpleObjects` (`--depth D`, default 20: 2^21 - 1 nodes of
//! 48 bytes), with 1 worker (the baseline) and with `--workers N` (default:
//! the runtime's heuristic) in the same run. Each configuration builds the
//! tree, collects once (the tree's pages get compacted), then collects
//! `--runs` times more with nothing to evacuate and prints the medians of
//! the mark, relocate and update times.
//!
//! `cargo run --release -p hotmem-examples --example marking -- --depth 20`

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{NumaConfig, Runtime};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(depth: u32, workers: Option<usize>, runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let objects = SimpleObjects::new();
    // The stop-the-world collector: its pause is the marking measured.
    let mut b = Runtime::builder()
        .heap_max(512 << 20)
        .numa(NumaConfig::Off)
        .collector(hotmem::CollectorMode::StopTheWorld)
        .generations(hotmem::Generations::Single)
        .binding(objects.clone());
    if let Some(w) = workers {
        b = b.gc_workers(w);
    }
    let rt = b.build()?;
    let roots = objects.root_table();
    let mut me = rt.attach_mutator()?;
    let built = build::tree(&mut me, &roots, depth, 0, &mut Ids::from(1))?;
    me.collect()?;
    let (mut mark, mut rate, mut reloc, mut update, mut pause) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut marked = 0;
    for _ in 0..runs {
        let s = me.collect()?;
        marked = s.objects_marked;
        mark.push(s.mark_ns as f64 / 1e6);
        rate.push(s.marking_rate());
        reloc.push(s.relocation_ns as f64 / 1e6);
        update.push(s.update_ns as f64 / 1e6);
        pause.push(s.pause_ns as f64 / 1e6);
    }
    assert_eq!(marked as usize, built.objects);
    // SAFETY: the only mutator, not collecting.
    let found = unsafe { objects.verify() }?;
    assert_eq!(found, built, "the tree survived intact");
    println!(
        "{:>2} worker(s): {} objects marked; median of {runs}: mark {:.2} ms = {:.0} objects/ms/worker; relocate {:.2} ms; update {:.2} ms; pause {:.2} ms",
        rt.gc_workers(),
        marked,
        median(mark),
        median(rate),
        median(reloc),
        median(update),
        median(pause),
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut depth = 20;
    let mut runs = 5;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or("a flag needs a value")?;
        match a.as_str() {
            "--depth" => depth = v.parse()?,
            "--runs" => runs = v.parse()?,
            "--workers" => workers = Some(v.parse()?),
            _ => {
                return Err(format!(
                    "usage: marking [--depth D] [--runs N] [--workers N]; unknown {a}"
                )
                .into());
            }
        }
    }
    println!(
        "marking a binary tree of depth {depth}; load average {}",
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );
    run(depth, Some(1), runs)?;
    run(depth, workers, runs)?;
    Ok(())
}
