//! How long a `Runtime` takes to start: building it (NUMA detected, and
//! off), attaching the first mutator, the first allocation, and dropping
//! it, medians over `--runs` (default 21) fresh runtimes in this process.
//! A script runner starts thousands of times a day; this is its floor.
//!
//! ```sh
//! cargo run --release -p hotmem-examples --example startup -- --runs 21
//! ```

use hotmem::{NumaConfig, Runtime};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut runs = 21;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            other => {
                eprintln!("usage: startup [--runs N] (not {other})");
                std::process::exit(2);
            }
        }
    }
    for (name, numa) in [
        ("detect", NumaConfig::Detect),
        (
            "synth",
            NumaConfig::Synthetic("pack:1 numa:1 core:2 pu:1".into()),
        ),
        ("off", NumaConfig::Off),
    ] {
        let (mut build, mut attach, mut alloc, mut drop_) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            let t = Instant::now();
            let rt = Runtime::builder()
                .numa(numa.clone())
                .build()
                .expect("a runtime");
            build.push(t.elapsed());
            let t = Instant::now();
            let mut me = rt.attach_mutator().expect("attach");
            attach.push(t.elapsed());
            let t = Instant::now();
            me.alloc(64).expect("an object");
            alloc.push(t.elapsed());
            let t = Instant::now();
            drop(me);
            drop(rt);
            drop_.push(t.elapsed());
        }
        // A small collection's pause: phases on the workers dominate it.
        let objects = hotmem::objects::SimpleObjects::new();
        let rt = Runtime::builder()
            .numa(numa.clone())
            .binding(objects.clone())
            .build()
            .expect("a runtime");
        let mut me = rt.attach_mutator().expect("attach");
        let roots = objects.root_table();
        let mut ids = hotmem::objects::Ids::from(1);
        let mut pauses = Vec::new();
        for _ in 0..runs {
            let _ = hotmem::objects::build::list(&mut me, &roots, 100, 2, false, &mut ids);
            pauses.push(Duration::from_nanos(
                me.collect().expect("a collection").pause_ns,
            ));
        }
        drop(me);
        println!(
            "numa {name:6}: small collection's pause {:>8.3} ms",
            median(pauses).as_secs_f64() * 1e3
        );
        println!(
            "numa {name:6}: build {:>8.3} ms, attach {:>8.3} ms, first alloc {:>8.3} ms, drop {:>8.3} ms (medians of {runs})",
            median(build).as_secs_f64() * 1e3,
            median(attach).as_secs_f64() * 1e3,
            median(alloc).as_secs_f64() * 1e3,
            median(drop_).as_secs_f64() * 1e3,
        );
    }
}
