//! The VM's GC binding: everything between the Lox VM and the hotmem
//! runtime, in both directions.
//!
//! What the runtime calls (the embedder's side of the contract):
//! - [`binding`]: [`LoxBinding`], the runtime's [`hotmem::Binding`]:
//!   object sizes and slots, `slot_at` for the roots;
//! - [`slot`]: [`ValueSlot`], a word holding a NaN-boxed value.
//!
//! The intern table is the runtime's own weak set (`vm/strings.rs`): the
//! binding has no weak references to process.
//!
//! What the VM calls:
//! - [`heap`]: [`Heap`], the VM's mutator: allocation, polls, collections,
//!   and its load and store paths;
//! - [`barriers`]: which of the runtime's barriers those paths take,
//!   decided by the runtime's collector;
//! - [`roots`], [`stack`]: the two shadow stacks that hold every root.
//!
//! Imports run one way: the rest of the VM imports this folder; this
//! folder imports only the VM's leaf modules (`value`, `object`, `bytes`,
//! `error`) and the command line's `GcMode`, never `Vm` or the
//! interpreter. Inside it, `binding` and `heap` own their parts
//! (`slot`; `barriers`), which import no owner.

pub(crate) mod barriers;
pub(crate) mod binding;
pub(crate) mod heap;
pub(crate) mod roots;
pub(crate) mod slot;
pub(crate) mod stack;

pub(crate) use binding::LoxBinding;
pub(crate) use heap::Heap;
pub(crate) use roots::Roots;
pub(crate) use stack::Stack;
