//! hotmem-os: the cost of the system calls everything else is built on.

#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_os::{MemTag, Memory, page_size};
use std::hint::black_box;

fn reserve_release(c: &mut Criterion) {
    let memory = Memory::new();
    let mut g = c.benchmark_group("os/reserve_release");
    for mib in [2usize, 64, 1024] {
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{mib}MiB")),
            &mib,
            |b, &mib| {
                b.iter(|| {
                    let r = memory
                        .reserve_aligned(mib << 20, 2 << 20, MemTag::TEST)
                        .unwrap();
                    black_box(r.start());
                })
            },
        );
    }
    g.finish();
}

fn commit_uncommit(c: &mut Criterion) {
    let memory = Memory::new();
    let r = memory.reserve(64 << 20, MemTag::TEST).unwrap();
    let mut g = c.benchmark_group("os/commit_touch_uncommit");
    for pages in [1usize, 16, 512] {
        let range = r.subrange(0, pages * page_size()).unwrap();
        g.throughput(Throughput::Bytes(range.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(pages), &range, |b, &range| {
            b.iter(|| {
                r.commit(range).unwrap();
                let mut p = range.start();
                while p < range.end() {
                    // SAFETY: the range was committed just above.
                    unsafe { p.as_ptr::<u8>().write(1) };
                    p = p + page_size();
                }
                r.uncommit(range).unwrap();
            })
        });
    }
    g.finish();
}

fn map_unmap(c: &mut Criterion) {
    let memory = Memory::new();
    let r = memory.reserve(64 << 20, MemTag::TEST).unwrap();
    let phys = memory.physical(2 << 20).unwrap();
    phys.commit(0, 2 << 20).unwrap();
    let mut g = c.benchmark_group("os/map_unmap_2MiB");
    g.throughput(Throughput::Elements(1));
    g.bench_function("memfd", |b| {
        b.iter(|| {
            let m = r.map(r.start(), &phys, 0, 2 << 20).unwrap();
            r.unmap(m).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, reserve_release, commit_uncommit, map_unmap);
criterion_main!(benches);
