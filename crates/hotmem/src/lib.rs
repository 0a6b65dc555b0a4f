//! # hotmem: the memory system of a managed runtime, in one `Runtime`
//!
//! [`Runtime`] composes the hotmem components and wires them together:
//!
//! - one [`hotmem_os::Memory`] whose observer is the NMT [`Tracker`](hotmem_nmt::Tracker),
//!   through which the heap, both metaspaces and the embedder reserve, so
//!   that native memory tracking accounts for every byte (attached
//!   threads' stacks are recorded too);
//! - a ZGC-style heap ([`hotmem_page`]) with one partition per NUMA node,
//!   each partition's memory bound to its node;
//! - class and non-class metaspaces ([`hotmem_chunk`]) and a
//!   [`ClassLoader`] per loader;
//! - a safepoint coordinator ([`hotmem_safepoint`]) that [`Mutator`]s
//!   attach to;
//! - GC workers ([`hotmem_numa`], feature `numa`) that relocate each page on
//!   a worker bound to the page's node.
//!
//! You bring a [`Binding`]: how big your objects are, which of their words
//! hold references, where your roots are. The runtime brings allocation and
//! collection: each mutator bumps its small objects out of a thread-local
//! buffer; a collection marks the live objects in parallel on the GC
//! workers, evacuates the pages whose objects pack into fewer pages on
//! workers bound to their NUMA node, gets every reference to a moved object
//! to its new address, frees the garbage, and reports all of it. By default
//! ([`CollectorMode::Concurrent`], [`Generations::YoungAndOld`]) young and
//! full cycles do that while the mutators run, between pauses of a few
//! hundred microseconds, and ask every load to go through the load barrier;
//! [`CollectorMode::StopTheWorld`] stops the mutators for each collection
//! and asks nothing of loads (the example below).
//!
//! ```
//! use hotmem::{
//!     Binding, CollectorMode, NumaConfig, ObjectReference, Runtime, SimpleSlot, SlotVisitor,
//! };
//! use std::sync::Arc;
//!
//! /// Objects are `[size][next]`: one reference slot, in word 1.
//! struct Cells;
//!
//! impl Binding for Cells {
//!     type Slot = SimpleSlot;
//!     fn object_size(&self, obj: ObjectReference) -> usize {
//!         // SAFETY: the runtime asks only about live objects; word 0 is the size.
//!         unsafe { obj.to_address().as_ptr::<usize>().read() }
//!     }
//!     fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
//!         // SAFETY: word 1 of a live object is its reference slot.
//!         v.visit_slot(unsafe { SimpleSlot::new(obj.to_address() + 8) });
//!     }
//! }
//!
//! let runtime = Runtime::builder()
//!     .heap_max(64 << 20)
//!     .numa(NumaConfig::Off)
//!     // Cells are read plainly below: the collector that asks nothing of
//!     // loads. The default, the concurrent one, needs the load barrier
//!     // (`Mutator::load_ref`) on every load.
//!     .collector(CollectorMode::StopTheWorld)
//!     .binding(Arc::new(Cells))
//!     .build()?;
//! let mut me = runtime.attach_mutator()?;
//! // A list of 1000 cells, its head in a handle (a root the runtime updates).
//! let mut head: Option<hotmem::Handle> = None;
//! for _ in 0..1000 {
//!     let cell = me.alloc(16)?; // may collect: re-read `head` afterwards
//!     let next = head.as_ref().map_or(0, |h| h.get().get());
//!     // SAFETY: a fresh 16-byte object.
//!     unsafe { cell.as_ptr::<usize>().write(16); cell.as_ptr::<usize>().add(1).write(next) };
//!     let cell = ObjectReference::from_address(cell).unwrap();
//!     match &head { Some(h) => h.set(cell), None => head = Some(me.handle(cell)) }
//!     let _garbage = me.alloc(64)?; // unreachable at once
//! }
//! let stats = me.collect()?;
//! assert_eq!(stats.objects_marked, 1000);
//! // The list survived, wherever it is now.
//! let (mut n, mut p) = (0, head.unwrap().get().get());
//! while p != 0 {
//!     // SAFETY: a live cell (no collection since the one above).
//!     p = unsafe { (p as *const usize).add(1).read() };
//!     n += 1;
//! }
//! assert_eq!(n, 1000);
//! let heap = hotmem::os::MemTag::JAVA_HEAP;
//! assert_eq!(runtime.nmt().totals(heap).committed, runtime.heap().committed_bytes());
//! println!("{}", runtime.report());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Weak references, ephemerons, finalization
//! A VM's string intern table belongs in a [`WeakSet`]
//! ([`Runtime::weak_set`]): objects found by hash and equality, each held
//! weakly, which the runtime sweeps and forwards outside its pauses (a
//! concurrent cycle's pauses only flip the set's state; see its docs).
//!
//! A binding with weak references a set cannot express clears them in
//! [`Binding::process_weak_refs`], after marking, and gives the
//! survivors their new addresses in [`Binding::forward_weak_refs`], after
//! relocation; both hooks run in a pause, so they cost pause time in
//! proportion to the binding's references. Here, a weak intern table of
//! boxed numbers by value:
//!
//! ```
//! use hotmem::{
//!     Binding, CollectorMode, NumaConfig, ObjectReference, Runtime, SimpleSlot, SlotVisitor,
//! };
//! use hotmem::{WeakForwarding, WeakPass, WeakRefs};
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//!
//! /// Objects are `[size][value]`, no reference slots.
//! #[derive(Default)]
//! struct Boxes {
//!     interned: Mutex<HashMap<u64, ObjectReference>>,
//! }
//!
//! impl Binding for Boxes {
//!     type Slot = SimpleSlot;
//!     fn object_size(&self, _: ObjectReference) -> usize {
//!         16
//!     }
//!     fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, _: ObjectReference, _: &mut V) {}
//!     fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
//!         // Dead boxes leave the table; the others stay where they are.
//!         self.interned.lock().unwrap().retain(|_, obj| refs.is_live(*obj));
//!         WeakPass::Done
//!     }
//!     fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
//!         for obj in self.interned.lock().unwrap().values_mut() {
//!             *obj = refs.forwarded(*obj);
//!         }
//!     }
//! }
//!
//! let vm = Arc::new(Boxes::default());
//! let runtime = Runtime::builder().numa(NumaConfig::Off).binding(vm.clone()).build()?;
//! let mut me = runtime.attach_mutator()?;
//! let mut kept = Vec::new();
//! for value in 0..10_000u64 {
//!     let obj = ObjectReference::from_address(me.alloc(16)?).unwrap();
//!     // SAFETY: a fresh 16-byte object.
//!     unsafe { obj.to_address().as_ptr::<u64>().add(1).write(value) };
//!     vm.interned.lock().unwrap().insert(value, obj);
//!     if value % 100 == 0 {
//!         kept.push(me.handle(obj)); // a strong root: every hundredth box
//!     }
//! }
//! let stats = me.collect()?;
//! assert_eq!(stats.objects_marked, 100);
//! let table = vm.interned.lock().unwrap();
//! assert_eq!(table.len(), 100, "only the live boxes are found by value");
//! assert!(kept.iter().all(|h| table.values().any(|&obj| obj == h.get())));
//! # drop(table);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Without a binding of its own, an embedder uses the runtime's
//! [`WeakHandle`]s ([`Runtime::weak_handle`]), [`Ephemeron`]s
//! ([`Runtime::ephemeron`]) and finalizers
//! ([`Runtime::register_finalizer`], [`Mutator::take_finalizable`]). Each
//! collection's [`CollectStats::refs`] counts what they found, cleared,
//! retained and queued; the `gc,ref` log line prints it.
//!
//! ## Objects that never move
//! [`Mutator::alloc_non_moving`] allocates in pages that no collector
//! evacuates, for what lives long and is read often: a VM's functions,
//! constants and interned names. A reference to such an object is never
//! stale, so a slot that holds only those may be read without the
//! concurrent collectors' load barrier. [`Mutator::pin`] keeps an object of
//! the moving heap where it is instead (and its page with it);
//! [`Runtime::is_non_moving`] tells the two apart.
//!
//! ## Threads and safepoints
//! A thread that allocates attaches with [`Runtime::attach_mutator`] and
//! polls ([`Mutator::poll`]) in its loops; around blocking or native code it
//! holds a [`Mutator::enter_native`] guard. A collection stops every
//! attached thread at its next poll, allocation or collection: after any
//! of those, a reference that is not in a root (a [`Handle`], a root the
//! binding reports, a pinned object) or reachable from one is stale. Never
//! hold a lock that a [`Binding`] callback takes while polling or
//! allocating: the collection would wait for it forever.
//!
//! ## Soundness: what the runtime guarantees, and what your `unsafe` promises
//! No sequence of safe calls, from any threads, with any guard leaked
//! (`mem::forget`) and any binding callback panicking, reaches undefined
//! behaviour, frees memory that a root or a live object still refers to,
//! hangs, or panics inside the runtime: a misuse is a typed error, in
//! bounded time. The rules that make it so:
//!
//! 1. **Managed code.** A [`Mutator`] runs managed code except inside a
//!    native or blocked region, and no pause runs until every mutator in
//!    managed code has stopped. A region leaked with `mem::forget` lasts
//!    until the mutator's next call that needs managed code: allocation,
//!    [`Mutator::poll`], a collection, a new region, [`Mutator::handle`],
//!    [`Mutator::pin`], [`Mutator::take_finalizable`], and the barriers'
//!    slow paths (which read the collector's relocation set) leave it
//!    first, and may stop for a pause then.
//! 2. **Current references.** An [`ObjectReference`] is *current* on a
//!    mutator in managed code from when it was read (allocated, or read
//!    from a root, a handle or through the load barrier) until the
//!    mutator's next safepoint opportunity (a poll, an allocation, a
//!    collection, a region entered or leaked). On any other thread (one
//!    that is no mutator, or a mutator in a region) a reference is current
//!    only inside [`Runtime::run_at_safepoint`]. What the runtime hands out
//!    is current where it is read: a weak read never returns an object
//!    that a pause in progress has found dead.
//! 3. **Atomic root operations, from any thread.** [`Handle::clone`],
//!    [`Handle::get`], [`WeakHandle::get`], [`WeakHandle::upgrade`] (a
//!    weak handle made strong), [`Ephemeron::get`] and dropping any of
//!    them each happen wholly before or wholly after a collection's pause
//!    (one lock acquisition that the update takes too; the pause gate).
//!    What takes a reference from you ([`Handle::set`],
//!    [`Runtime::global_handle`], [`Runtime::weak_handle`],
//!    [`Runtime::ephemeron`], [`Runtime::register_finalizer`],
//!    [`Mutator::handle`], [`Mutator::pin`]) trusts it to be current: a
//!    stale one leaves the root dangling, which the next collection
//!    reports as a [`GcError`] (nothing is corrupted), and
//!    `runtime.global_handle(weak.get()?)` on a thread that is no mutator
//!    is two steps a collection may fall between (use `upgrade`).
//! 4. **Panicking callbacks.** A collection whose binding callback panics
//!    returns [`GcError::ObjectModelPanicked`] (or `WorkerPanicked`).
//!    Before anything moved the heap is as it was; once references began
//!    to be rewritten, every kind of root is still updated and the runtime
//!    is poisoned: no collection runs again and no page is freed, every
//!    collection returns [`GcError::Poisoned`], an allocation that needs
//!    one [`AllocError::Collection`].
//! 5. **No wait closes a deadlock.** A wait for a collection first checks
//!    that the caller is not a mutator of the runtime in managed code,
//!    does not run managed code on another runtime, owns no safepoint
//!    whose threads the collection needs, and runs no handshake
//!    operation: [`GcError::Safepoint`] otherwise.
//! 6. **Bounded phases.** Concurrent marking leaves for its last pause
//!    after at most 64 rounds, whatever the mutators do.
//!
//! What your `unsafe` promises in return: a [`Slot`] you implement keeps
//! its contract (it is an `unsafe trait`: the collector frees memory on
//! its word); a [`SimpleSlot`] you make names a word valid while the
//! runtime uses it; object memory you read or write through a raw pointer
//! belongs to a current reference; a [`ShadowStack`]'s words in use hold
//! what the binding decodes. `tests/soundness.rs` has a test per rule's
//! misuse, and the hostile-embedder suite (`examples/hostile/`) drives
//! random mixes of all of them in every collector.
//!
//! ## Without hwloc
//! With `default-features = false` the crate builds without `hotmem-numa`
//! (and so without hwloc): one heap partition, unbound GC workers.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// What the embedder implements.
mod vm;
// The runtime: built from a configuration, handing out mutators, loaders,
// views and reports.
mod runtime;
// A thread attached to the runtime: allocation, polls, barriers.
mod mutator;
// Roots: the runtime's own (handles, pins, shadow stacks, the attached
// mutators, the root tables a binding reports); the binding's hooks are in
// vm/binding.rs, the phase that marks from and updates all of them is
// gc/core/root_scan.rs (gc/core/root_tables.rs for the tables a concurrent
// cycle visits after its pauses).
mod roots;
// Weak references: the runtime's own (weak handles, ephemerons,
// finalizers); the binding's hooks and views are in vm/weak.rs, the phase
// that processes all of them is gc/core/weak_processing.rs.
mod weak;
// The collector: a shared core (gc/core/), the barriers (gc/barriers/),
// and one folder per collector over them (gc/stop_the_world/,
// gc/concurrent/).
mod gc;
// The errors of every operation.
mod error;
// Threads' stacks in native memory tracking (mutators and GC workers).
mod thread_stack;
// What orders the operations any thread may call on the runtime's
// references against a collection's pauses.
mod pause_gate;
// The table of entries behind strong handles, weak handles and ephemerons.
mod slot_table;
// The synchronization primitives the loom models replace.
mod sync;

pub mod log;
pub mod objects;

pub use error::{
    AllocError, AttachError, BadReference, BarrierSetError, BuildError, FinalizerError, GcError,
    NumaError, SafepointRequestError, ShadowStackError, WeakSetError,
};
pub use gc::{
    AdaptiveSizing, BalancedSizing, CollectStats, CollectionKind, CollectorMode, ConcurrentPhases,
    GcCause, GcTotals, Generations, HeapSizing, HeapTarget, PhaseSummary, RefStats, RootTableVisit,
    StallTotal, StallsByCycle, StrengthCounts, TlabStats, Tlabs, UpdateScope, WorkerBinding,
    YoungInFull, YoungSurvival,
};
pub use mutator::{
    BarrierKind, BarrierSet, ConcurrentBarrierSet, Mutator, StopTheWorldBarriers, WithBarriers,
};
pub use roots::{Handle, PinGuard, RootTable, ShadowStack};
pub use runtime::Runtime;
pub use runtime::builder::RuntimeBuilder;
pub use runtime::class_loader::ClassLoader;
pub use runtime::config::{MIN_HEAP, NumaConfig, RuntimeConfig};
pub use runtime::numa::NumaSummary;
pub use runtime::part_views::{HeapView, MetaspaceView, NmtView, SpaceView};
pub use runtime::report::{Report, Section};
pub use runtime::safepoints::Safepoints;
pub use vm::{
    Binding, ObjectReference, SimpleSlot, Slot, SlotVisitor, WeakForwarding, WeakPass, WeakRefs,
};
pub use weak::{Ephemeron, WeakHandle, WeakSet};

pub use hotmem_chunk::{ArenaKind, MetadataType};
pub use hotmem_nmt::Level as NmtLevel;
pub use hotmem_os::Address;
pub use hotmem_page::{Age, MediumPageMode};
pub use hotmem_safepoint::MutatorId;
pub use hotmem_safepoint::Strategy as SafepointStrategy;

/// The components, for what the runtime does not wrap.
pub use hotmem_chunk as chunk;
pub use hotmem_nmt as nmt;
#[cfg(feature = "numa")]
#[cfg_attr(docsrs, doc(cfg(feature = "numa")))]
pub use hotmem_numa as numa;
pub use hotmem_os as os;
pub use hotmem_page as page;
pub use hotmem_safepoint as safepoint;
