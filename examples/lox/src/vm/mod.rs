//! The Lox VM on the hotmem heap.
//!
//! Every Lox object lives in the heap of a hotmem [`Runtime`] and is moved
//! by its collector (the module `object` has the layouts, `gc` the binding:
//! what the collector is told and the VM's allocation, barriers and roots);
//! code and line tables live in metaspace (`meta`); values are NaN-boxed
//! words (`value`). The crate's README argues the design and walks through
//! the binding ("Writing a binding").
//!
//! ```
//! use hotmem_lox::vm::{Vm, VmOptions};
//! use std::sync::{Arc, Mutex};
//!
//! #[derive(Clone, Default)]
//! struct Output(Arc<Mutex<Vec<u8>>>);
//! impl std::io::Write for Output {
//!     fn write(&mut self, b: &[u8]) -> std::io::Result<usize> { self.0.lock().unwrap().write(b) }
//!     fn flush(&mut self) -> std::io::Result<()> { Ok(()) }
//! }
//!
//! let out = Output::default();
//! let mut vm = Vm::new(VmOptions::default(), Box::new(out.clone()))?;
//! let script = hotmem_lox::compile("var a = \"hot\"; print a + \"mem\";").unwrap();
//! vm.interpret(&script)?;
//! let error = vm.interpret(&hotmem_lox::compile("print b;").unwrap()).unwrap_err();
//! assert_eq!(error.to_string(), "Undefined variable 'b'.\n[line 1] in script");
//! vm.flush();
//! assert_eq!(String::from_utf8(out.0.lock().unwrap().clone())?, "hotmem\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The rule the interpreter lives by
//! Anything that allocates may collect, and a collection moves objects.
//! So before every call that may collect (an allocation, a poll), the VM
//! publishes the value stack's height, and afterwards it reads every object
//! address again from a root (the stack, the root block, a frame's closure):
//! no object address is kept in a Rust local across such a call. A store of
//! a reference into an object goes through the store barrier unless the
//! object was allocated since the last call that may collect; every read
//! of a reference out of an object goes through `Heap::load`.

#![allow(unsafe_code)] // The VM's object model and interpreter: raw heap words, see each `SAFETY`.

mod bytes;
mod error;
mod gc;
mod home;
mod interp;
mod loader;
mod meta;
mod natives;
mod object;
mod print;
mod strings;
mod table;
mod value;
mod verify;

use std::io::Write;
use std::sync::Arc;

use hotmem::{
    ArenaKind, BarrierKind, BarrierSet, ClassLoader, CollectorMode, ConcurrentBarrierSet,
    Generations, Runtime, StopTheWorldBarriers, WeakSet,
};

pub use error::{HeapError, RuntimeError, TraceFrame, VmError};
pub use verify::VerifyError;

use crate::bytecode::FunctionProto;
use crate::cli::GcMode;
use gc::roots::{self, FRAMES_MAX};
use gc::{Heap, LoxBinding, Roots, Stack};

/// How to make a [`Vm`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct VmOptions {
    /// How collections are driven (`--gc-stress`: at every allocation).
    pub gc: GcMode,
    /// The heap's maximum in bytes; the runtime's default if `None`.
    pub heap_max: Option<usize>,
    /// The runtime's log (`HOTMEM_LOG`, the `--report` recorder).
    pub log: hotmem::log::LogConfig,
    /// When collections run, if not the mode's sizing
    /// ([`hotmem::HeapSizing::Balanced`] for the stop-the-world and the
    /// paced concurrent modes, the runtime's default otherwise): a test
    /// that counts what one collection finds pins it.
    pub heap_sizing: Option<hotmem::HeapSizing>,
}

impl VmOptions {
    /// The defaults with `gc`.
    pub fn new(gc: GcMode) -> VmOptions {
        VmOptions {
            gc,
            ..VmOptions::default()
        }
    }

    /// With a heap of at most `bytes`.
    pub fn heap_max(mut self, bytes: usize) -> VmOptions {
        self.heap_max = Some(bytes);
        self
    }

    /// With `log` as the runtime's log.
    pub fn log(mut self, log: hotmem::log::LogConfig) -> VmOptions {
        self.log = log;
        self
    }

    /// With `sizing` instead of the mode's heap sizing.
    pub fn heap_sizing(mut self, sizing: hotmem::HeapSizing) -> VmOptions {
        self.heap_sizing = Some(sizing);
        self
    }
}

/// A call frame: where its code is and where its stack window starts. Its
/// closure is in the root block (word [`roots::FRAMES`] + its index).
#[derive(Copy, Clone, Debug)]
struct Frame {
    /// The next instruction (in metaspace: it never moves); up to date for
    /// every frame but the running one.
    ip: *const u8,
    /// Slot 0 of the frame on the value stack.
    base: *mut u64,
}

/// A Lox virtual machine: one runtime, one mutator (the calling thread),
/// its roots and its globals. Not `Send`: it belongs to the thread that
/// made it.
///
/// The interpreter is compiled once per barrier set ([`BarrierSet`]): a
/// `Vm` holds the copy its runtime's collector needs, chosen when it is
/// made, so the stop-the-world copy has no load barrier in it and the
/// concurrent copy its load barrier's fast path inlined.
pub struct Vm(Flavor);

/// The machine, compiled for one barrier set.
enum Flavor {
    StopTheWorld(Machine<StopTheWorldBarriers>),
    Concurrent(Machine<ConcurrentBarrierSet>),
}

/// `$body` with `$m` bound to the VM's machine, whichever its set.
macro_rules! each {
    ($vm:expr, $m:ident => $body:expr) => {
        match $vm {
            Flavor::StopTheWorld($m) => $body,
            Flavor::Concurrent($m) => $body,
        }
    };
}

/// The VM, with the barrier set `B`: everything but the choice of set.
pub(crate) struct Machine<B: BarrierSet> {
    heap: Heap<B>,
    roots: Roots,
    stack: Stack,
    frames: Box<[Frame; FRAMES_MAX]>,
    frame_count: usize,
    /// Where code and line tables go.
    loader: ClassLoader,
    /// The intern table: the runtime's weak set of strings, by bytes.
    strings: WeakSet,
    /// Keys in the global-name table.
    global_names: u32,
    /// Global slots handed out.
    global_slots: u32,
    out: std::io::BufWriter<Box<dyn Write>>,
    /// The runtime, with the VM's [`LoxBinding`] (reached through
    /// [`Runtime::binding`]: the one the collector calls).
    runtime: Runtime,
    /// `--gc-concurrent` and `--gc-concurrent-generational`: the thread
    /// that keeps a cycle running.
    cycles: Option<BackToBack>,
}

/// A thread that asks for concurrent cycles back to back until stopped:
/// full ones, or (`generational`) three young ones for each full one.
struct BackToBack {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl BackToBack {
    fn start(runtime: &Runtime, generational: bool) -> BackToBack {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (runtime, stop) = (runtime.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut cycles = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // A failed cycle is the program's error to see (its
                    // next allocation fails); the thread goes on.
                    let _ = match generational && cycles % 4 != 3 {
                        true => runtime.collect_young(),
                        false => runtime.collect(),
                    };
                    cycles += 1;
                }
            })
        };
        BackToBack { stop, thread }
    }

    /// Stops the thread after its cycle; the caller is no mutator in
    /// managed code (the cycle's pauses would wait for it).
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

impl Vm {
    /// A VM on a new runtime with this VM's binding (generational and
    /// stop-the-world, or the concurrent collector for
    /// [`GcMode::Concurrent`], single-generation, and
    /// [`GcMode::ConcurrentGenerational`]), printing to `out`.
    ///
    /// # Errors
    /// [`VmError`] if the runtime cannot be built or the first objects do
    /// not fit.
    pub fn new(options: VmOptions, out: Box<dyn Write>) -> Result<Vm, VmError> {
        let mut builder = Runtime::builder()
            .log(options.log)
            .binding(Arc::new(LoxBinding));
        builder = match options.gc {
            GcMode::Concurrent => builder
                .collector(CollectorMode::Concurrent)
                .generations(Generations::Single),
            // A young cycle also inside each round of a full one's marking:
            // the full marking's hand-offs meet every program too.
            GcMode::ConcurrentGenerational => builder
                .collector(CollectorMode::Concurrent)
                .generations(Generations::YoungAndOld)
                .young_in_full(hotmem::YoungInFull::EachRound),
            // The same sizing as the default mode's, so that the two
            // compare.
            GcMode::ConcurrentGenerationalPaced => builder
                .collector(CollectorMode::Concurrent)
                .generations(Generations::YoungAndOld)
                .heap_sizing(hotmem::HeapSizing::Balanced(
                    hotmem::BalancedSizing::default(),
                )),
            // The stop-the-world generational collector (named: the
            // runtime's default is the concurrent one), on the runtime's
            // MemBalancer sizing: as fast as the VM's own policy was, in
            // less memory (see README, "When to collect").
            _ => builder
                .collector(CollectorMode::StopTheWorld)
                .generations(Generations::YoungAndOld)
                .heap_sizing(hotmem::HeapSizing::Balanced(
                    hotmem::BalancedSizing::default(),
                )),
        };
        if let Some(bytes) = options.heap_max {
            builder = builder.heap_max(bytes);
        }
        if let Some(sizing) = options.heap_sizing {
            builder = builder.heap_sizing(sizing);
        }
        let runtime = builder.build()?;
        let cycles = match options.gc {
            GcMode::Concurrent => Some(BackToBack::start(&runtime, false)),
            GcMode::ConcurrentGenerational => Some(BackToBack::start(&runtime, true)),
            _ => None,
        };
        let flavor = match runtime.barrier_kind() {
            BarrierKind::StopTheWorld => {
                let barriers = runtime.barrier_set::<StopTheWorldBarriers>()?;
                Flavor::StopTheWorld(Machine::new(runtime, cycles, options.gc, out, barriers)?)
            }
            // The concurrent collectors, and any this VM does not know
            // yet: every barrier (a missing one is a use-after-free, an
            // extra one only takes time).
            _ => {
                let barriers = runtime.barrier_set::<ConcurrentBarrierSet>()?;
                Flavor::Concurrent(Machine::new(runtime, cycles, options.gc, out, barriers)?)
            }
        };
        Ok(Vm(flavor))
    }

    /// Loads and runs a compiled script. Globals stay defined for the next
    /// script (the REPL runs each line this way).
    ///
    /// # Errors
    /// The [`RuntimeError`] that stopped it, with clox's message and stack
    /// trace; the VM is ready for the next script.
    pub fn interpret(&mut self, script: &FunctionProto) -> Result<(), RuntimeError> {
        each!(&mut self.0, m => m.interpret(script))
    }

    /// Writes out what the program printed so far.
    pub fn flush(&mut self) {
        each!(&mut self.0, m => m.flush())
    }

    /// The runtime the VM's objects live in.
    pub fn runtime(&self) -> &Runtime {
        each!(&self.0, m => &m.runtime)
    }

    /// Runs a full collection now (the VM stands between statements).
    ///
    /// # Errors
    /// The collector's error.
    pub fn collect(&mut self) -> Result<hotmem::CollectStats, hotmem::GcError> {
        each!(&mut self.0, m => m.collect())
    }

    /// How many strings the intern table holds (live ones: the collector
    /// removes those nothing else refers to).
    pub fn interned_strings(&self) -> usize {
        each!(&self.0, m => m.count_interned())
    }

    /// Bytes of metaspace the loaded code takes (code, line tables,
    /// names, global-slot arrays): the VM's class loader's non-class use.
    pub fn code_bytes(&self) -> usize {
        each!(&self.0, m => m.loader.used_bytes().1)
    }
}

impl<B: BarrierSet> Machine<B> {
    /// The machine on `runtime`, attaching the calling thread, with
    /// `barriers`, the runtime's set.
    fn new(
        runtime: Runtime,
        cycles: Option<BackToBack>,
        gc: GcMode,
        out: Box<dyn Write>,
        barriers: B,
    ) -> Result<Machine<B>, VmError> {
        let heap = Heap::new(runtime.attach_mutator()?, gc, barriers);
        let roots = Roots::new(heap.mutator())?;
        let stack = Stack::new(heap.mutator())?;
        let base = stack.base();
        let mut vm = Machine {
            frames: Box::new(
                [Frame {
                    ip: std::ptr::null(),
                    base,
                }; FRAMES_MAX],
            ),
            frame_count: 0,
            loader: runtime.class_loader(ArenaKind::Standard),
            strings: runtime.weak_set(),
            global_names: 0,
            global_slots: 0,
            out: std::io::BufWriter::with_capacity(1 << 16, out),
            heap,
            roots,
            stack,
            runtime,
            cycles,
        };
        vm.init()?;
        Ok(vm)
    }

    /// The first objects: the `init` string and the `clock` native.
    fn init(&mut self) -> Result<(), HeapError> {
        let init = self.intern(b"init")?;
        self.roots.set(roots::INIT, init);
        self.define_natives()
    }

    /// Loads and runs a compiled script. Globals stay defined for the next
    /// script (the REPL runs each line this way).
    ///
    /// # Errors
    /// The [`RuntimeError`] that stopped it, with clox's message and stack
    /// trace; the VM is ready for the next script.
    fn interpret(&mut self, script: &FunctionProto) -> Result<(), RuntimeError> {
        let result = self.load_and_run(script);
        if result.is_err() {
            self.reset();
        }
        let _ = self.out.flush();
        result
    }

    /// Writes out what the program printed so far.
    fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Runs a full collection now (the VM stands between statements).
    ///
    /// # Errors
    /// The collector's error.
    fn collect(&mut self) -> Result<hotmem::CollectStats, hotmem::GcError> {
        // SAFETY: between scripts the stack is empty.
        unsafe { self.stack.publish(self.stack.base()) };
        self.heap.collect()
    }

    /// Empties the stack and the frames after an error. Upvalues still
    /// open are closed first: a closure that escaped (into a global) keeps
    /// the value its variable had, instead of a stack word the next script
    /// reuses.
    fn reset(&mut self) {
        // SAFETY: every open upvalue captures a word below the published
        // top (the error published it), still holding its value.
        unsafe { self.close_upvalues(self.stack.base()) };
        for i in 0..self.frame_count {
            self.roots.set(roots::FRAMES + i, value::Value::NIL);
        }
        self.frame_count = 0;
        // SAFETY: an empty stack.
        unsafe { self.stack.publish(self.stack.base()) };
    }
}

impl<B: BarrierSet> Drop for Machine<B> {
    fn drop(&mut self) {
        let _ = self.out.flush();
        if let Some(cycles) = self.cycles.take() {
            // Native meanwhile: the last cycle's pauses do not wait for
            // this thread.
            let _native = self.heap.mutator_mut().enter_native();
            cycles.stop();
        }
    }
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        each!(&self.0, m => f.debug_struct("Vm")
            .field("barriers", &m.heap.barrier_kind())
            .field("frames", &m.frame_count)
            .field("globals", &m.global_slots)
            .finish_non_exhaustive())
    }
}
