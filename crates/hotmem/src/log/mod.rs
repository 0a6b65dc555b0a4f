//! The GC log: HotSpot's unified-logging lines, and the same events as data.
//!
//! ```text
//! [0.412s][info][gc,phases] GC(3) Mark 1.204ms (41234 objects, 2 workers)
//! [0.412s][info][gc,heap] GC(3) Heap: used 160M->58M, committed 200M, max 256M; pages 40: 10 freed empty, 5 evacuated, 0 incomplete; relocated 1234 objects 1M
//! [0.412s][info][gc,metaspace] GC(3) Metaspace: 1234K(2048K) NonClass: 1000K(1536K) Class: 234K(512K)
//! [0.412s][info][gc] GC(3) Pause Full (Allocation Failure) 160M->58M(200M) 4.784ms
//! [0.413s][info][safepoint] GC(3) Safepoint "GC", Time since last: 80211 ns, Reaching safepoint: 41022 ns, At safepoint: 4790112 ns, Leaving safepoint: 30121 ns, Total: 4861255 ns
//! ```
//!
//! The embedder picks tag sets and levels per output with a [`LogConfig`]
//! given to [`RuntimeBuilder::log`](crate::RuntimeBuilder::log), parsed
//! from `-Xlog`-style selectors ([`LogConfig::parse`]) or built from a
//! [`LogSelection`] and a [`LogOutput`]: standard output or error, a file,
//! or a callback that receives each [`LogRecord`] as data (it serializes
//! with serde, so a tool can consume a run as JSON lines without parsing
//! text).
//!
//! ## Tag sets
//! | tag set | level | lines |
//! |---|---|---|
//! | `gc` | info / warning / error | one per collection: cause, heap used before -> after (committed), pause (a concurrent cycle: the whole cycle); at warning, a collection that failed (and left the heap as it was); at error, an allocation that ran out of memory |
//! | `gc,phases` | info / trace | one per phase the collection ran, named and ordered as the runtime declares its phases ([`GcPhase::of`]): mark, relocate: time, objects, workers; update references: time, which slots (remembered or all live objects), workers; a concurrent cycle: Pause Mark Start, Concurrent Mark, Pause Mark End, Concurrent Select Relocation Set, Pause Relocate Start, Concurrent Relocate and their times (after a full cycle's Concurrent Mark, the young cycles that ran inside it, by number); at trace, the relocation phase's workers: pages, node locality, binds |
//! | `gc,heap` | info | used, committed, max; pages examined, freed, evacuated; bytes relocated |
//! | `gc,metaspace` | info | used (committed) of both metaspaces |
//! | `gc,ref` | info | reference processing: weak handles, ephemerons and finalizers found, cleared, retained, queued; the binding's hook passes; time |
//! | `gc,age` | info | a concurrent young cycle that evacuates: young bytes live of those allocated, its tenuring threshold, young pages promoted in place and aged |
//! | `gc,stats` | info / debug | the page allocator's statistics table (allocation rate, page cache flush, medium page undo, ...): at info at most every 10 s, at debug at every collection |
//! | `safepoint` | info / debug | one per safepoint (ttsp, at, leaving); at debug, a count of safepoints that ended unseen |
//!
//! A safepoint's line is complete only once its threads run again, so it is
//! written when the runtime next looks: when it ends the safepoint (if the
//! threads already run), when it begins its next one (a collection or
//! [`Runtime::run_at_safepoint`](crate::Runtime::run_at_safepoint)), at
//! [`Runtime::flush_log`](crate::Runtime::flush_log), or when the runtime
//! is dropped. Safepoints the embedder begins itself on
//! [`Runtime::safepoints`](crate::Runtime::safepoints) are logged when seen
//! last before one of those moments; the others are counted at debug. The
//! line of a collection's safepoint carries its `GC(n)`.
//!
//! ## Grammar
//! Selectors ([`LogSelection::parse`], [`LogConfig::parse`]):
//!
//! ```text
//! spec      := selectors [ ":" output ]
//! output    := "stdout" | "stderr" | "file=" PATH          (default stdout)
//! selectors := selector { "," selector }                   (applied left to right)
//! selector  := what [ "=" level ]                          (default level info)
//! what      := "all" | tag { "+" tag } [ "*" ]
//! tag       := "gc" | "phases" | "heap" | "stats" | "metaspace" | "ref" | "safepoint"
//! level     := "off" | "error" | "warning" | "info" | "debug" | "trace"
//! ```
//!
//! `gc` selects the tag set `gc` alone, `gc+phases` exactly `gc,phases`,
//! `gc*` every tag set with the tag `gc`, `all` every tag set. A selector
//! that matches no tag set is an error, as is an unknown tag or level.
//!
//! Lines ([`LogRecord`]'s `Display`):
//!
//! ```text
//! line    := "[" uptime "s]" "[" level "]" "[" tags "]" " " [ "GC(" id ") " ] message
//! uptime  := digits "." 3 digits                            (seconds since the runtime was built)
//! tags    := tag { "," tag }
//! message := pause | cycle | failed | oom | phase | cphase | workers | update | heap | metaspace
//!            | refs | stats | safepoint | unseen
//! pause   := "Pause " ("Young" | "Full") " (" cause ") " M "->" M "(" M ") " ms
//! cycle   := ("Garbage Collection" | "Minor Collection" | "Major Collection")
//!            " (" cause ") " M "->" M "(" M ") " ms      (minor, major: young, full, with generations)
//! cause   := "Explicit" | "Allocation Failure" | "Allocation Rate" | "Allocation Stall"
//! cphase  := ["Y: " | "O: "] ("Pause Mark Start" | "Concurrent Mark" | "Pause Mark End"
//!            | "Concurrent Process Non-Strong References"
//!            | "Concurrent Select Relocation Set" | "Pause Relocate Start"
//!            | "Concurrent Relocate") " " ms
//! failed  := "Pause " ("Young" | "Full") " (" cause ") failed: " text   (warning; no GC id)
//! oom     := "Out Of Memory: " n " bytes could not be allocated, used " M ", max " M
//!                                                                        (error; no GC id)
//! phase   := ("Mark" | "Relocate") " " ms " (" n " objects, " n " workers)"
//! workers := "Relocate Workers: " n " pages on " n " workers, node-local " locality ", " n
//!            " binds, " ms " binding"                                    (trace)
//! locality := "n/a (workers unbound)" | pct " (simulated)" | pct " (real)"
//!            | pct " (real; " pct " on the node's CPUs per the kernel)"
//! update  := "Update References " ms " (" scope ", " n " workers)"
//! scope   := "nothing moved" | "remembered: " n " slots" | "all live objects"
//! heap    := "Heap: used " M "->" M ", committed " M ", max " M "; pages " n ": " n " freed empty, "
//!            n " evacuated, " n " incomplete; relocated " n " objects " M
//! metaspace := "Metaspace: " K "(" K ") NonClass: " K "(" K ") Class: " K "(" K ")"
//! refs    := "Reference Processing " ms ": weak " n " found, " n " cleared; ephemeron " n
//!            " found, " n " retained, " n " cleared; finalizable " n " found, " n " enqueued, "
//!            n " retained; binding " n " pass(es), " n " retained; weak set " n " found, "
//!            n " cleared"
//! safepoint := "Safepoint \"" name "\", Time since last: " n " ns, Reaching safepoint: " n
//!            " ns, At safepoint: " n " ns, Leaving safepoint: " n " ns, Total: " n " ns"
//! unseen  := n " safepoint(s) ended unseen (their times are in the safepoint statistics)"
//! stats   := a line of the statistics table (free text)
//! text    := the error's message (free text)
//! M := digits "M" (whole MiB)   K := digits "K" (whole KiB)   ms := digits "." 3 digits "ms"
//! pct := digits "%"
//! ```
//!
//! ## Why an own sink, not `log` or `tracing`
//! A runtime's GC log is configured by whoever runs the runtime, per tag set
//! and output, the way `-Xlog` is, and it must not depend on (or fight
//! with) the logger the application installs: the `log` and `tracing`
//! facades have one process-wide logger or subscriber, targets and levels
//! instead of tag sets, and two runtimes in one process (or a test) could
//! not log to two files. So the runtime owns its sink and its selection;
//! an application that wants its GC lines in `log` or `tracing` forwards
//! them from a [`LogOutput::Callback`] in one line. When nothing is
//! selected, each place that logs costs one compare of a byte in the
//! runtime against a constant, and allocates nothing; records are made
//! only for a tag set some output selects.

mod event;
mod level;
mod logger;
mod output;
mod selection;
mod tags;

pub use crate::gc::core::phases::{GcPhase, PhaseMode};
pub use event::{LogEvent, LogRecord, SpaceUse};
pub use level::{LogLevel, UnknownLevel};
pub(crate) use logger::{Logger, Parts};
pub use output::{LogCallback, LogConfig, LogFile, LogOutput, LogSpecError};
pub use selection::{LogSelection, SelectorError};
pub use tags::TagSet;
