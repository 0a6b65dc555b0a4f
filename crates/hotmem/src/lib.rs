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
//! You bring the object model (an [`ObjectModel`]: which objects are live,
//! how big they are, how to update references); the runtime brings
//! allocation, collection (stop the mutators, evacuate sparse pages on the
//! workers, free them) and the report.
//!
//! ```
//! use hotmem::{Address, Forwarding, NumaConfig, ObjectModel, Runtime};
//! use std::sync::{Arc, Mutex};
//!
//! /// Objects start with their size (one word); the roots are a list.
//! #[derive(Default)]
//! struct Objects {
//!     roots: Mutex<Vec<Address>>,
//! }
//!
//! impl ObjectModel for Objects {
//!     fn mark(&self, live: &mut dyn FnMut(Address)) {
//!         self.roots.lock().unwrap().iter().for_each(|&r| live(r));
//!     }
//!     fn object_size(&self, obj: Address) -> usize {
//!         // SAFETY: the runtime asks only about live objects, whose first
//!         // word is their size.
//!         unsafe { obj.as_ptr::<u64>().read() as usize }
//!     }
//!     fn update_references(&self, forwarding: &Forwarding) {
//!         for r in self.roots.lock().unwrap().iter_mut() {
//!             *r = forwarding.forward(*r);
//!         }
//!     }
//! }
//!
//! let objects = Arc::new(Objects::default());
//! let runtime = Runtime::builder()
//!     .heap_max(64 << 20)
//!     .numa(NumaConfig::Off)
//!     .object_model(objects.clone())
//!     .build()?;
//!
//! let mut me = runtime.attach_mutator()?;
//! for i in 0..1000u64 {
//!     let obj = me.alloc(64)?;
//!     // SAFETY: a fresh 64-byte object; we write its two first words.
//!     unsafe {
//!         obj.as_ptr::<u64>().write(64);
//!         obj.as_ptr::<u64>().add(1).write(i);
//!     }
//!     if i % 10 == 0 {
//!         objects.roots.lock().unwrap().push(obj); // keep every tenth
//!     }
//!     me.poll();
//! }
//!
//! let stats = me.collect()?;
//! assert_eq!(stats.live_objects, 100);
//! for (k, &obj) in objects.roots.lock().unwrap().iter().enumerate() {
//!     // SAFETY: roots are live objects, updated if they moved.
//!     assert_eq!(unsafe { obj.as_ptr::<u64>().add(1).read() }, 10 * k as u64);
//! }
//! let heap = hotmem::os::MemTag::JAVA_HEAP;
//! assert_eq!(runtime.nmt().totals(heap).committed, runtime.heap().committed_bytes());
//! println!("{}", runtime.report());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Threads and safepoints
//! A thread that allocates attaches with [`Runtime::attach_mutator`] and
//! polls ([`Mutator::poll`]) in its loops; around blocking or native code it
//! holds a [`Mutator::enter_native`] guard. A collection stops every
//! attached thread at its next poll. Never hold a lock that
//! [`ObjectModel::mark`] or [`ObjectModel::update_references`] takes while
//! polling or allocating: the collection would wait for it forever.
//!
//! ## Without hwloc
//! With `default-features = false` the crate builds without `hotmem-numa`
//! (and so without hwloc): one heap partition, unbound GC workers.

/// The repository README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[allow(dead_code)] // used by the collector (step 2)
mod binding;
mod class_loader;
mod collector;
mod config;
mod error;
mod gc;
#[allow(dead_code)] // used by the collector (step 2)
mod handles;
mod model;
mod mutator;
pub mod objects;
mod reentry;
mod report;
mod runtime;
mod stacks;
mod views;
mod workers;

pub use binding::{Binding, ObjectReference, SimpleSlot, Slot, SlotVisitor};
pub use class_loader::ClassLoader;
pub use config::{MIN_HEAP, NumaConfig, RuntimeBuilder, RuntimeConfig};
pub use error::{AllocError, AttachError, BuildError, GcError, NumaError};
pub use gc::{CollectStats, GcCause, GcTotals};
pub use handles::{Handle, PinGuard};
pub use model::{Forwarding, ObjectModel};
pub use mutator::Mutator;
pub use report::{Report, Section};
pub use runtime::{NumaSummary, Runtime};
pub use views::{HeapView, MetaspaceView, NmtView, SpaceView};
pub use workers::{PhaseSummary, WorkerBinding};

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
pub use hotmem_numa as numa;
pub use hotmem_os as os;
pub use hotmem_page as page;
pub use hotmem_safepoint as safepoint;
