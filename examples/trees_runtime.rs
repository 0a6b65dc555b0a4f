//! binary-trees on the hotmem `Runtime`: what an embedder writes.
//!
//! A node is a heap object of two words, its left and right children (0 for
//! none); every object of this heap is a node, so the binding needs no
//! header: `object_size` is 16 and `scan_object` reports the two words.
//!
//! Roots, the two ways the runtime offers:
//! - the trees that must survive many allocations (the stretch tree while
//!   it is checked, the long-lived tree for the whole run) are held in the
//!   runtime's [`Handle`]s;
//! - while a tree is being built, the subtrees already built whose parent
//!   is not yet allocated are on the building thread's shadow stack, which
//!   the binding reports as that mutator's roots
//!   ([`Binding::scan_mutator_roots`]) - the way a VM reports its compiled
//!   frames. A tree is built bottom-up, as the benchmark's reference
//!   programs do (`Node(bottomUpTree(d - 1), bottomUpTree(d - 1))`): the
//!   left subtree is built and pushed, the right one built and pushed, then
//!   the parent is allocated and both are read back from the stack (a
//!   collection may have moved them) and written into it. Those are
//!   initializing stores into an object allocated since the last call that
//!   may collect, so they need no store barrier ([`Mutator::store_ref`]).
//!
//! A tree is checked as a compiled VM's loop would walk it: the nodes still
//! to visit are on the shadow stack, and the walk polls every
//! [`CHECK_POLL_INTERVAL`] nodes (a JIT polls at loop back edges and method
//! entries), so that a safepoint is reached within a bounded time while a
//! large tree is checked. A short-lived tree is then dropped by forgetting
//! it.

use crate::trees::{Trees, nodes};
use hotmem::{
    Binding, Handle, Mutator, MutatorId, ObjectReference, Runtime, SimpleSlot, SlotVisitor,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Bytes of a node: two reference words.
const NODE: usize = 16;
/// The deepest tree the shadow stack has room for.
const MAX_DEPTH: usize = 64;
/// Nodes a check visits between two polls: about 20 microseconds of
/// walking on this project's 2-core machine.
const CHECK_POLL_INTERVAL: u32 = 4096;

/// One mutator's shadow stack: references to nodes under construction.
///
/// Only its own thread pushes and pops, and only while in managed code; the
/// collector reads and rewrites it only at a safepoint (the thread stopped
/// in `alloc` or `poll`), which orders both sides. The words are atomics
/// with relaxed ordering only so that the type is `Sync` without `unsafe`;
/// they compile to plain loads and stores.
struct ShadowStack {
    len: AtomicUsize,
    slots: Box<[AtomicUsize]>,
}

impl ShadowStack {
    fn new() -> ShadowStack {
        ShadowStack {
            len: AtomicUsize::new(0),
            slots: (0..MAX_DEPTH).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    #[inline]
    fn push(&self, obj: ObjectReference) {
        let len = self.len.load(Relaxed);
        self.slots[len].store(obj.get(), Relaxed);
        self.len.store(len + 1, Relaxed);
    }

    /// The top entry (updated by any collection since it was pushed).
    #[inline]
    fn top(&self) -> ObjectReference {
        let len = self.len.load(Relaxed);
        reference(self.slots[len - 1].load(Relaxed)).expect("a pushed node is not null")
    }

    #[inline]
    fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    #[inline]
    fn pop(&self) {
        let len = self.len.load(Relaxed);
        self.len.store(len - 1, Relaxed);
    }
}

/// A raw word as a reference.
#[inline]
fn reference(word: usize) -> Option<ObjectReference> {
    ObjectReference::from_address(hotmem::Address::new(word))
}

/// The binding: every object is a node; the roots are the mutators'
/// shadow stacks (the handles the runtime scans itself).
#[derive(Default)]
pub(crate) struct Nodes {
    stacks: Mutex<HashMap<MutatorId, Arc<ShadowStack>>>,
}

/// The slot of `obj`'s word `i` (0: left, 1: right).
#[inline]
fn field(obj: ObjectReference, i: usize) -> SimpleSlot {
    // SAFETY: `obj` is a node (every object of this heap is), 16 bytes,
    // 8-aligned, in the heap: word `i < 2` is inside it. The runtime uses
    // the slot while the object is where `obj` says (at a safepoint, or
    // from the mutator that holds `obj` between two calls that may
    // collect), and nothing else writes it meanwhile.
    unsafe { SimpleSlot::new(obj.to_address() + i * 8) }
}

impl Binding for Nodes {
    type Slot = SimpleSlot;

    #[inline]
    fn object_size(&self, _obj: ObjectReference) -> usize {
        NODE
    }

    #[inline]
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        visitor.visit_slot(field(obj, 0));
        visitor.visit_slot(field(obj, 1));
    }

    fn slot_at(&self, addr: hotmem::Address) -> Option<SimpleSlot> {
        // SAFETY: the runtime passes an aligned word inside the used part of
        // a heap page that stays allocated for the collection, with every
        // mutator stopped (`Binding::slot_at`).
        Some(unsafe { SimpleSlot::new(addr) })
    }

    fn scan_mutator_roots<V: SlotVisitor<SimpleSlot>>(&self, mutator: MutatorId, visitor: &mut V) {
        let stack = self
            .stacks
            .lock()
            .expect("the stack registry")
            .get(&mutator)
            .cloned();
        if let Some(stack) = stack {
            for word in &stack.slots[..stack.len.load(Relaxed)] {
                // SAFETY: an aligned word of the stack, alive while `stack`
                // is; the mutator is stopped, so nothing else writes it
                // while the runtime uses the slot (during this call).
                visitor.visit_slot(unsafe {
                    SimpleSlot::new(hotmem::Address::from_ptr(word.as_ptr()))
                });
            }
        }
    }
}

/// The runtime variant: a runtime whose binding is [`Nodes`].
pub(crate) struct RuntimeTrees {
    runtime: Runtime,
    nodes: Arc<Nodes>,
}

/// A thread's mutator and shadow stack.
pub(crate) struct RtThread {
    me: Mutator,
    stack: Arc<ShadowStack>,
    nodes: Arc<Nodes>,
}

impl Drop for RtThread {
    fn drop(&mut self) {
        self.nodes
            .stacks
            .lock()
            .expect("the stack registry")
            .remove(&self.me.id());
    }
}

/// What the runtime did over a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuntimeFigures {
    pub(crate) heap_bytes: usize,
    pub(crate) gc_workers: usize,
    pub(crate) collections: u64,
    pub(crate) young_collections: u64,
    pub(crate) allocation_failures: u64,
    pub(crate) pause_p50_ns: u64,
    pub(crate) pause_p99_ns: u64,
    pub(crate) pause_max_ns: u64,
    pub(crate) ttsp_p50_ns: u64,
    pub(crate) ttsp_max_ns: u64,
    pub(crate) pause_total_ns: u64,
    pub(crate) mark_ns: u64,
    pub(crate) relocate_ns: u64,
    pub(crate) update_ns: u64,
    pub(crate) objects_marked: u64,
    pub(crate) objects_relocated: u64,
    pub(crate) bytes_relocated: u64,
    pub(crate) pages_freed: u64,
    pub(crate) marking_rate: f64,
    pub(crate) remembered_updates: u64,
    pub(crate) full_updates: u64,
    pub(crate) tlab_refills: u64,
    pub(crate) at_p50_ns: u64,
    pub(crate) at_p99_ns: u64,
    pub(crate) at_max_ns: u64,
    pub(crate) concurrent_cycles: u64,
    pub(crate) stalls: u64,
    pub(crate) stall_ns: u64,
    pub(crate) relocated_by_mutators: u64,
    /// The soft maximum (0 without one) and the collections after which
    /// the time limit set it aside.
    pub(crate) soft_max: u64,
    pub(crate) over_soft_max: u64,
}

impl RuntimeTrees {
    /// A runtime with a heap of `heap` bytes, sized by `sizing` (below
    /// `soft_max` bytes if given), that logs as `log` says.
    pub(crate) fn new(
        heap: usize,
        log: hotmem::log::LogConfig,
        generations: hotmem::Generations,
        sizing: hotmem::HeapSizing,
        collector: hotmem::CollectorMode,
        soft_max: Option<usize>,
    ) -> Result<RuntimeTrees, hotmem::BuildError> {
        let nodes = Arc::new(Nodes::default());
        let mut builder = Runtime::builder()
            .heap_max(heap)
            .log(log)
            .generations(generations)
            .heap_sizing(sizing)
            .collector(collector);
        if let Some(bytes) = soft_max {
            builder = builder.soft_max_heap(bytes);
        }
        let runtime = builder.binding(nodes.clone()).build()?;
        Ok(RuntimeTrees { runtime, nodes })
    }

    /// The runtime, for reports.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The collections so far.
    pub(crate) fn figures(&self) -> RuntimeFigures {
        let t = self.runtime.gc_totals();
        let sp = self.runtime.safepoints().stats();
        RuntimeFigures {
            heap_bytes: self.runtime.config().heap_max(),
            gc_workers: self.runtime.gc_workers(),
            collections: t.cycles,
            young_collections: t.young_collections,
            allocation_failures: t.allocation_failures,
            at_p50_ns: sp.at.p50,
            at_p99_ns: sp.at.p99,
            at_max_ns: sp.at.max,
            concurrent_cycles: t.concurrent_cycles,
            stalls: t.stalls,
            stall_ns: t.stall_ns,
            relocated_by_mutators: t.relocated_by_mutators,
            soft_max: self.runtime.heap_target().soft_max.unwrap_or(0) as u64,
            over_soft_max: self.runtime.heap_target().over_soft_max,
            pause_p50_ns: sp.total.p50,
            pause_p99_ns: sp.total.p99,
            pause_max_ns: sp.total.max,
            ttsp_p50_ns: sp.reaching.p50,
            ttsp_max_ns: sp.reaching.max,
            pause_total_ns: t.pause_ns,
            mark_ns: t.mark_ns,
            relocate_ns: t.relocation_ns,
            update_ns: t.update_ns,
            objects_marked: t.objects_marked,
            objects_relocated: t.objects_relocated,
            bytes_relocated: t.bytes_relocated,
            pages_freed: t.pages_freed,
            marking_rate: t.marking_rate(),
            remembered_updates: t.remembered_updates,
            full_updates: t.full_updates,
            tlab_refills: self.runtime.tlab_stats().refills,
        }
    }

    /// A new node whose children are `children` (left, right; 0 for
    /// none). Initializing stores into an object just allocated: no
    /// barrier. `alloc` may collect, so the children are taken as words the
    /// caller read after it (see [`RuntimeTrees::build`]).
    #[inline]
    fn alloc_node(t: &mut RtThread) -> hotmem::Address {
        match t.me.alloc(NODE) {
            Ok(addr) => addr,
            Err(e) => panic!("binary-trees: allocating a node: {e}"),
        }
    }

    /// Writes a node's two children (words; 0 for none) and returns it.
    #[inline]
    fn init_node(addr: hotmem::Address, children: [usize; 2]) -> ObjectReference {
        let obj = ObjectReference::from_address(addr).expect("the heap hands out aligned objects");
        // SAFETY: a fresh 16-byte object that only this thread knows of,
        // allocated by the last call that may collect: its words are set
        // before the next one.
        unsafe { addr.as_ptr::<[usize; 2]>().write(children) };
        obj
    }

    /// Builds a tree of `depth` bottom-up; its root (unrooted: valid until
    /// the next call that may collect).
    fn build(t: &mut RtThread, depth: u32) -> ObjectReference {
        if depth == 0 {
            let addr = Self::alloc_node(t);
            return Self::init_node(addr, [0, 0]);
        }
        let left = Self::build(t, depth - 1);
        t.stack.push(left);
        let right = Self::build(t, depth - 1);
        t.stack.push(right);
        // Every reference this frame holds is on the shadow stack: a
        // collection (this allocation's, or one another thread asked for at
        // the poll) may run here.
        t.me.poll();
        let addr = Self::alloc_node(t);
        let right = t.stack.top();
        t.stack.pop();
        let left = t.stack.top();
        t.stack.pop();
        Self::init_node(addr, [left.get(), right.get()])
    }

    /// The check of the tree at `root` (unrooted: read since the last call
    /// that may collect): its node count. Depth first, the nodes still to
    /// visit on the shadow stack (a tree of depth d needs d + 1 entries),
    /// polling every [`CHECK_POLL_INTERVAL`] nodes; nothing is held in a
    /// local across a poll.
    fn check(t: &mut RtThread, root: ObjectReference) -> u64 {
        let base = t.stack.len();
        t.stack.push(root);
        let (mut count, mut until_poll) = (0u64, CHECK_POLL_INTERVAL);
        while t.stack.len() > base {
            let node = t.stack.top();
            t.stack.pop();
            count += 1;
            if let Some(left) = t.me.load_ref(field(node, 0)) {
                let right = t.me.load_ref(field(node, 1)).expect("a full tree");
                t.stack.push(right);
                t.stack.push(left);
            }
            until_poll -= 1;
            if until_poll == 0 {
                until_poll = CHECK_POLL_INTERVAL;
                t.me.poll();
            }
        }
        count
    }
}

impl Trees for RuntimeTrees {
    type Thread = RtThread;
    type Kept = Handle;

    fn thread(&self) -> RtThread {
        let me = self.runtime.attach_mutator().expect("attaching a mutator");
        let stack = Arc::new(ShadowStack::new());
        self.nodes
            .stacks
            .lock()
            .expect("the stack registry")
            .insert(me.id(), stack.clone());
        RtThread {
            me,
            stack,
            nodes: self.nodes.clone(),
        }
    }

    fn temporary(&self, t: &mut RtThread, depth: u32) -> u64 {
        let root = Self::build(t, depth);
        let check = Self::check(t, root);
        // The tree is garbage now.
        t.me.poll();
        debug_assert_eq!(check, nodes(depth));
        check
    }

    fn keep(&self, t: &mut RtThread, depth: u32) -> Handle {
        let root = Self::build(t, depth);
        let kept = t.me.handle(root);
        t.me.poll();
        kept
    }

    fn check_kept(&self, t: &mut RtThread, kept: &Handle) -> u64 {
        Self::check(t, kept.get())
    }

    fn release(&self, _t: &mut RtThread, kept: Handle) {
        drop(kept);
    }

    fn wait<R>(&self, t: &mut RtThread, f: impl FnOnce() -> R) -> R {
        let _native = t.me.enter_native();
        f()
    }
}
