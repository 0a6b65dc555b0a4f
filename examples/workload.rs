//! The workload the demo and the soak test run: mutator threads that build
//! object graphs (checksummed objects of small, medium and large sizes,
//! linked lists, binary trees, arrays of shared references, cycles and
//! self-loops), keep a few alive within a budget, spot-check them, and
//! create and drop class loaders. Each thread knows the digest of the
//! graphs it keeps, so the whole reachable graph can be checked against
//! what was built, at safepoints and at the end.

use hotmem::objects::{GraphError, GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{AllocError, ArenaKind, ClassLoader, Mutator, NumaConfig, Runtime};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Counters the threads share with the progress line.
#[derive(Default)]
pub struct Counters {
    /// Set to end the run.
    pub stop: AtomicBool,
    /// Objects allocated.
    pub objects: AtomicU64,
    /// Bytes allocated.
    pub bytes: AtomicU64,
    /// Allocations that found the heap full and recovered.
    pub out_of_memory: AtomicU64,
    /// Class loaders created.
    pub loaders: AtomicU64,
    /// Kept graphs checked during the run.
    pub checks: AtomicU64,
    /// Handshake operations run.
    pub handshakes: AtomicU64,
    /// Class loaders that found metaspace full.
    pub metaspace_full: AtomicU64,
    /// Every thread's kept graphs.
    pub graphs: Mutex<Vec<Arc<ThreadGraphs>>>,
}

/// The graphs one thread keeps: the first `kept.len()` entries of its root
/// table, and what each must contain. Both change together, with no
/// safepoint poll in between, so they agree at every safepoint.
pub struct ThreadGraphs {
    table: Arc<RootTable>,
    kept: Mutex<Vec<GraphSummary>>,
}

/// What the threads keep now, from their own records (no heap access).
pub fn kept_summary(c: &Counters) -> GraphSummary {
    let mut sum = GraphSummary::default();
    for g in c.graphs.lock().unwrap().iter() {
        for k in g.kept.lock().unwrap().iter() {
            sum.objects += k.objects;
            sum.bytes += k.bytes;
        }
    }
    sum
}

/// Checks every kept graph of every thread against what was built: every
/// object's payload checksum, every reference (the digest), objects and
/// bytes. Returns the total.
///
/// # Safety
/// Call it inside `rt.run_at_safepoint` (no collection runs then; with the
/// concurrent collector each reference is taken where
/// `Runtime::forwarded` says its object is).
pub unsafe fn check_graphs(rt: &hotmem::Runtime, c: &Counters) -> Result<GraphSummary, String> {
    let graphs = c.graphs.lock().unwrap().clone();
    let mut roots = Vec::new();
    let mut expected = GraphSummary::default();
    for g in &graphs {
        let kept = g.kept.lock().unwrap();
        let table = g.table.roots();
        roots.extend(table[..kept.len()].iter().flatten().copied());
        for k in kept.iter() {
            expected.objects += k.objects;
            expected.bytes += k.bytes;
            expected.digest = expected.digest.wrapping_add(k.digest);
        }
    }
    // SAFETY: the caller's promise; kept roots are live objects.
    let found = unsafe { SimpleObjects::verify_from_at_safepoint(rt, roots) }
        .map_err(|e| format!("object corrupted: {e}"))?;
    if found != expected {
        return Err(format!(
            "the reachable graph differs from what was built: found {found:?}, expected {expected:?}"
        ));
    }
    Ok(found)
}
/// A small deterministic generator, one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range8(&mut self, lo: usize, hi: usize) -> usize {
        (lo + self.below((hi - lo) as u64 + 1) as usize) & !7
    }
}

/// Object sizes: mostly small, some medium, a few large (by page type).
fn pick_size(rng: &mut Rng, sizes: &hotmem::page::PageSizes) -> usize {
    let roll = rng.below(1000);
    if roll < 970 {
        rng.range8(32, 2048)
    } else if roll < 997 {
        rng.range8(sizes.small_object_max() + 8, sizes.medium_object_max())
    } else {
        rng.range8(sizes.medium_object_max() + 8, 3 * sizes.medium_object_max())
    }
}

fn drop_random(g: &ThreadGraphs, rng: &mut Rng, live: &mut usize) {
    let mut kept = g.kept.lock().unwrap();
    if kept.is_empty() {
        return;
    }
    let i = rng.below(kept.len() as u64) as usize;
    let last = kept.len() - 1;
    // Swap-remove in the table's kept prefix and in `kept` alike (in-progress
    // entries above the prefix stay where they are: there are none between
    // two builds).
    let root_last = g.table.get(last);
    g.table.set(i, root_last);
    g.table.truncate(last);
    *live -= kept.swap_remove(i).bytes;
}

/// Builds one random graph, its root left last on the table.
fn build_one(
    me: &mut Mutator,
    roots: &RootTable,
    rng: &mut Rng,
    sizes: &hotmem::page::PageSizes,
    ids: &mut Ids,
) -> Result<GraphSummary, GraphError> {
    let small_payload = rng.below(12) as usize;
    match rng.below(100) {
        0..=59 => {
            // One object of a random size, sometimes medium or large.
            let slots = rng.below(3) as usize;
            let size = pick_size(rng, sizes).max(SimpleObjects::size_for(slots, 1));
            let payload = (size - hotmem::objects::HEADER) / 8 - slots;
            let id = ids.next();
            build::object(me, roots, slots, payload, id)?;
            let mut s = GraphSummary::default();
            s.add(id, SimpleObjects::size_for(slots, payload), &vec![0; slots]);
            Ok(s)
        }
        60..=74 => build::list(
            me,
            roots,
            1 + rng.below(40) as usize,
            small_payload,
            false,
            ids,
        ),
        75..=84 => build::tree(me, roots, rng.below(7) as u32, small_payload, ids),
        85..=94 => {
            let len = 1 + rng.below(64) as usize;
            let distinct = 1 + rng.below(len as u64) as usize;
            build::array(me, roots, len, distinct, small_payload, ids)
        }
        _ => build::list(
            me,
            roots,
            1 + rng.below(20) as usize,
            small_payload,
            true,
            ids,
        ),
    }
}

/// A mutator thread's loop; returns the class loaders still alive at the end.
fn mutator(
    rt: Runtime,
    objects: Arc<SimpleObjects>,
    c: Arc<Counters>,
    seed: u64,
    budget: usize,
) -> Result<VecDeque<ClassLoader>, String> {
    let mut me = rt.attach_mutator().map_err(|e| e.to_string())?;
    let graphs = Arc::new(ThreadGraphs {
        table: objects.root_table(),
        kept: Mutex::new(Vec::new()),
    });
    c.graphs.lock().unwrap().push(graphs.clone());
    let roots = &*graphs.table;
    let sizes = rt.heap().page_sizes();
    let mut rng = Rng(seed | 1);
    let mut ids = Ids::from((seed & 0xffff) << 40 | 1);
    let mut live = 0usize;
    let mut loaders: VecDeque<ClassLoader> = VecDeque::new();
    let mut i = 0u64;
    while !c.stop.load(Relaxed) {
        i += 1;
        match build_one(&mut me, roots, &mut rng, &sizes, &mut ids) {
            Ok(sum) => {
                c.objects.fetch_add(sum.objects as u64, Relaxed);
                c.bytes.fetch_add(sum.bytes as u64, Relaxed);
                if rng.below(1000) < 60 {
                    // Kept: the root stays where the builder left it, at the
                    // end of the kept prefix.
                    graphs.kept.lock().unwrap().push(sum);
                    live += sum.bytes;
                } else {
                    roots.pop(); // garbage from now on
                }
            }
            Err(GraphError::Alloc(AllocError::OutOfMemory { .. })) => {
                // The live set outgrew the heap: let half of it die.
                c.out_of_memory.fetch_add(1, Relaxed);
                let n = graphs.kept.lock().unwrap().len();
                for _ in 0..n / 2 {
                    drop_random(&graphs, &mut rng, &mut live);
                }
            }
            Err(e) => return Err(e.to_string()),
        }
        while live > budget {
            drop_random(&graphs, &mut rng, &mut live);
        }
        let spot = rng.below(roots.len().max(1) as u64) as usize;
        if i.is_multiple_of(64)
            && let Some(root) = roots.get(spot)
        {
            // SAFETY: this thread is attached and has not polled since it
            // read the root: no collection can move objects meanwhile.
            unsafe { SimpleObjects::check(root) }.map_err(|e| e.to_string())?;
            c.checks.fetch_add(1, Relaxed);
        }
        if i.is_multiple_of(512) {
            // Application loaders mostly, some reflection accessors (there is
            // one boot loader, created by the caller, not here).
            let kind = if rng.below(4) == 0 {
                ArenaKind::Reflection
            } else {
                ArenaKind::Standard
            };
            let mut loader = rt.class_loader(kind);
            let mut loaded: Result<_, hotmem::chunk::AllocError> = Ok(hotmem::Address::NULL);
            for _ in 0..1 + rng.below(6) {
                loaded = loader
                    .alloc_class(rng.range8(256, 4096))
                    .and_then(|_| loader.alloc_metadata(rng.range8(64, 16 << 10)));
                if loaded.is_err() {
                    break;
                }
            }
            if loaded.is_err() {
                // Metaspace is full (OutOfMemoryError: Metaspace in a JVM):
                // the oldest loaders die and their chunks come back.
                c.metaspace_full.fetch_add(1, Relaxed);
                drop(loader);
                let keep = loaders.len() / 2;
                while loaders.len() > keep {
                    loaders.pop_front();
                }
                continue;
            }
            loaders.push_back(loader);
            c.loaders.fetch_add(1, Relaxed);
            if loaders.len() > 16 {
                loaders.pop_front(); // the loader dies: its chunks go back
            }
        }
        me.poll();
    }
    Ok(loaders)
}

/// The command line both programs take.
#[derive(Clone, Debug)]
pub struct RunArgs {
    /// `--threads N`: mutator threads.
    pub threads: usize,
    /// `--secs S`: how long the mutators run.
    pub secs: f64,
    /// `--heap MIB`: the heap's maximum.
    pub heap_mib: usize,
    /// `--numa detect|off|synthetic:DESC`.
    pub numa: NumaConfig,
    /// `None`: the program has no `--json` flag.
    pub json: Option<bool>,
    /// `--report DIR`: write the page of charts there.
    pub report: Option<std::path::PathBuf>,
    /// `--generations young|single`.
    pub generations: hotmem::Generations,
    /// `--collector stw|concurrent`, with the generations of
    /// `--generations` (young and old unless `--generations single`).
    pub collector: hotmem::CollectorMode,
    /// `--page-cache mapped|page`: the heap's mapped cache (the default) or
    /// the page cache it replaced.
    pub page_cache: hotmem::page::CacheMode,
    /// `--root-tables concurrent|in-pause`: where the concurrent collector
    /// visits the root tables holding the graphs' roots (after its pauses,
    /// the default, or in them).
    pub root_tables: hotmem::RootTableVisit,
    /// `--young-in-full paced|each-round|never`: when the generational
    /// concurrent collector runs young cycles inside a full cycle's
    /// marking.
    pub young_in_full: hotmem::YoungInFull,
    /// `--full`: print the full text report (`None`: the program has no
    /// such flag).
    pub full: Option<bool>,
}

/// Parses `--threads N --secs S --heap MIB --numa detect|off|synthetic:DESC
/// --generations young|single --collector stw|concurrent --page-cache
/// mapped|page --root-tables concurrent|in-pause --young-in-full
/// paced|each-round|never [--json]` over `defaults`;
/// the error carries `usage`.
pub fn parse_args(usage: &str, mut a: RunArgs) -> Result<RunArgs, String> {
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--json" && a.json.is_some() {
            a.json = Some(true);
            continue;
        }
        if flag == "--full" && a.full.is_some() {
            a.full = Some(true);
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(usage.to_string());
        }
        if ![
            "--threads",
            "--secs",
            "--heap",
            "--numa",
            "--report",
            "--generations",
            "--collector",
            "--page-cache",
            "--root-tables",
            "--young-in-full",
        ]
        .contains(&flag.as_str())
        {
            return Err(format!("unknown flag {flag}\n{usage}"));
        }
        let v = it.next().ok_or(format!("{flag} needs a value\n{usage}"))?;
        let bad = || format!("bad value {v:?} for {flag}\n{usage}");
        match flag.as_str() {
            "--threads" => a.threads = v.parse().map_err(|_| bad())?,
            "--secs" => a.secs = v.parse().map_err(|_| bad())?,
            "--heap" => a.heap_mib = v.parse().map_err(|_| bad())?,
            "--report" => a.report = Some(v.into()),
            "--generations" => {
                a.generations = match v.as_str() {
                    "young" => hotmem::Generations::YoungAndOld,
                    "single" => hotmem::Generations::Single,
                    _ => return Err(bad()),
                }
            }
            "--collector" => {
                a.collector = match v.as_str() {
                    "stw" => hotmem::CollectorMode::StopTheWorld,
                    "concurrent" => hotmem::CollectorMode::Concurrent,
                    _ => return Err(bad()),
                }
            }
            "--page-cache" => {
                a.page_cache = match v.as_str() {
                    "mapped" => hotmem::page::CacheMode::Mapped,
                    "page" => hotmem::page::CacheMode::PageCache,
                    _ => return Err(bad()),
                }
            }
            "--root-tables" => {
                a.root_tables = match v.as_str() {
                    "concurrent" => hotmem::RootTableVisit::Concurrent,
                    "in-pause" => hotmem::RootTableVisit::InPause,
                    _ => return Err(bad()),
                }
            }
            "--young-in-full" => {
                a.young_in_full = match v.as_str() {
                    "paced" => hotmem::YoungInFull::Paced,
                    "each-round" => hotmem::YoungInFull::EachRound,
                    "never" => hotmem::YoungInFull::Never,
                    _ => return Err(bad()),
                }
            }
            "--numa" => {
                a.numa = match v.as_str() {
                    "detect" => NumaConfig::Detect,
                    "off" => NumaConfig::Off,
                    s => NumaConfig::Synthetic(
                        s.strip_prefix("synthetic:").ok_or_else(bad)?.to_string(),
                    ),
                }
            }
            _ => unreachable!("checked above"),
        }
    }
    if a.threads == 0 {
        return Err(format!("--threads must be at least 1\n{usage}"));
    }
    Ok(a)
}

/// The threads of a running workload: the mutators and a collector.
pub struct Workload {
    mutators: Vec<JoinHandle<Result<VecDeque<ClassLoader>, String>>>,
    collector: JoinHandle<Result<(), String>>,
}

/// Starts `threads` mutators named `name-N` (each keeping at most 30% of the
/// heap divided by the thread count alive) and a thread that collects every
/// `gc_every`, until `c.stop` is set. With young collections, three of every
/// four of that thread's collections are young ones (allocation failures
/// run young ones too, and full ones when the heap stays half full).
pub fn start(
    rt: &Runtime,
    objects: &Arc<SimpleObjects>,
    c: &Arc<Counters>,
    threads: usize,
    name: &str,
    seed: u64,
    gc_every: Duration,
) -> std::io::Result<Workload> {
    let budget = rt.heap().usage().max_capacity * 3 / 10 / threads;
    let mutators = (0..threads)
        .map(|t| {
            let (rt, objects, c) = (rt.clone(), objects.clone(), c.clone());
            std::thread::Builder::new()
                .name(format!("{name}-{t}"))
                .spawn(move || mutator(rt, objects, c, seed.wrapping_mul(t as u64 + 1), budget))
        })
        .collect::<Result<_, _>>()?;
    let (rt, c) = (rt.clone(), c.clone());
    let young = rt.config().generations() == hotmem::Generations::YoungAndOld;
    let collector = std::thread::Builder::new()
        .name(format!("{name}-gc"))
        .spawn(move || {
            let mut round = 0u64;
            while !c.stop.load(Relaxed) {
                std::thread::sleep(gc_every);
                round += 1;
                if young && !round.is_multiple_of(4) {
                    rt.collect_young()
                } else {
                    rt.collect()
                }
                .map_err(|e| e.to_string())?;
            }
            Ok(())
        })?;
    Ok(Workload {
        mutators,
        collector,
    })
}

impl Workload {
    /// Waits for every thread (set `stop` first); returns the class loaders
    /// the mutators still had.
    pub fn join(self) -> Result<Vec<ClassLoader>, String> {
        let mut loaders = Vec::new();
        for m in self.mutators {
            loaders.extend(m.join().map_err(|_| "a mutator panicked")??);
        }
        self.collector
            .join()
            .map_err(|_| "the collector panicked")??;
        Ok(loaders)
    }
}
