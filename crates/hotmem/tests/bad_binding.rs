//! Bad input through the binding is a typed error naming the object and the
//! slot, found before anything moves; the heap is left as it was and the
//! runtime collects normally once the input is fixed.

use hotmem::{BadReference, Binding, GcError, ObjectReference, Runtime, SimpleSlot, SlotVisitor};
use std::sync::{Arc, Mutex};

mod common;

/// Objects are `[size][slot][payload]`; one root.
#[derive(Default)]
struct Cells {
    root: Mutex<usize>,
    /// When set to (object, size), `object_size` answers `size` for it.
    lie: Mutex<Option<(usize, usize)>>,
}

impl Binding for Cells {
    type Slot = SimpleSlot;

    fn object_size(&self, obj: ObjectReference) -> usize {
        match *self.lie.lock().unwrap() {
            Some((o, size)) if o == obj.get() => size,
            // SAFETY: marked objects start with their size.
            _ => unsafe { obj.to_address().as_ptr::<usize>().read() },
        }
    }

    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        // SAFETY: word 1 of a marked object is its slot.
        v.visit_slot(unsafe { SimpleSlot::new(obj.to_address() + 8) });
    }

    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, v: &mut V) {
        let mut root = self.root.lock().unwrap();
        // SAFETY: the root is locked for the visit.
        v.visit_slot(unsafe { SimpleSlot::from_ref(&mut root) });
    }
}

struct Setup {
    rt: Runtime,
    cells: Arc<Cells>,
    /// A two-object chain: root -> a -> b.
    a: usize,
    b: usize,
}

fn setup(b_size: usize) -> Setup {
    let cells = Arc::new(Cells::default());
    let rt = common::builder(64 << 20, Some(2))
        .binding(cells.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let a = me.alloc(64).unwrap();
    let b = me.alloc(b_size).unwrap();
    // SAFETY: fresh allocations.
    unsafe {
        a.as_ptr::<usize>().write(64);
        a.as_ptr::<usize>().add(1).write(b.get());
        a.as_ptr::<usize>().add(2).write(0xA);
        b.as_ptr::<usize>().write(b_size);
        b.as_ptr::<usize>().add(1).write(0);
        b.as_ptr::<usize>().add(2).write(0xB);
    }
    *cells.root.lock().unwrap() = a.get();
    drop(me);
    Setup {
        rt,
        cells,
        a: a.get(),
        b: b.get(),
    }
}

fn set_slot(obj: usize, value: usize) {
    // SAFETY: `obj` is a live object of the test (no collection running).
    unsafe { (obj as *mut usize).add(1).write(value) }
}

/// Collects expecting `want`; checks that nothing was freed and that the
/// graph is intact; then repairs with `fix` and collects normally.
fn expect_error(s: &Setup, check: impl FnOnce(&GcError), fix: impl FnOnce()) {
    let used = s.rt.heap().usage().used;
    let err =
        s.rt.collect()
            .expect_err("bad input must fail the collection");
    check(&err);
    assert!(!err.to_string().is_empty());
    // Nothing was freed. Use may have grown: a worker can take a target
    // page for another page before the bad reference is found (which worker
    // gets there first is scheduling); the next collection frees it.
    let after = s.rt.heap().usage().used;
    assert!(
        after >= used,
        "nothing was freed ({used} -> {after}): {err}"
    );
    s.rt.heap().check_invariants();
    // Nothing moved: the root and the objects are where they were.
    assert_eq!(*s.cells.root.lock().unwrap(), s.a);
    // SAFETY: nothing was moved or freed (checked above).
    assert_eq!(unsafe { (s.a as *const usize).add(2).read() }, 0xA);
    fix();
    let stats =
        s.rt.collect()
            .expect("the runtime recovers once the input is fixed");
    assert!(stats.objects_marked >= 1);
}

#[test]
fn a_garbage_slot_value_names_the_object_and_the_slot() {
    for case in 0..3 {
        // A fresh runtime each time: the recovery collection moves objects.
        let s = setup(64);
        let heap = s.rt.heap().reserved();
        let (value, reason) = [
            (0x1234 + 3, BadReference::Misaligned),
            (0x10, BadReference::OutsideHeap),
            (heap.end().get() - 64, BadReference::FreeMemory),
        ][case];
        set_slot(s.a, value);
        expect_error(
            &s,
            |e| {
                assert_eq!(
                    *e,
                    GcError::InvalidReference {
                        value,
                        slot: Some(hotmem::Address::new(s.a + 8)),
                        holder: ObjectReference::from_address(hotmem::Address::new(s.a)),
                        reason,
                    }
                );
                let text = e.to_string();
                assert!(text.contains(&format!("{:#x}", s.a)), "{text}");
                assert!(text.contains(&format!("{value:#x}")), "{text}");
            },
            || set_slot(s.a, s.b),
        );
    }
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the page stays, and release builds walk only evacuated pages' live maps for overlaps"
)]
fn a_reference_into_the_middle_of_a_live_object_is_an_overlap() {
    let s = setup(64);
    // `b` refers into the middle of `a` (which is live through the root).
    set_slot(s.b, s.a + 16);
    expect_error(
        &s,
        |e| match e {
            GcError::OverlappingObjects { first, second, .. } => {
                assert_eq!(first.get(), s.a);
                assert_eq!(second.get(), s.a + 16);
            }
            other => panic!("expected an overlap, got {other:?}"),
        },
        || set_slot(s.b, 0),
    );
}

#[test]
fn a_reference_past_the_top_of_a_page_is_an_error() {
    let s = setup(64);
    // Just past the second object: the page's top (nothing allocated there).
    set_slot(s.b, s.b + 64);
    expect_error(
        &s,
        |e| {
            assert!(
                matches!(
                    e,
                    GcError::InvalidReference {
                        reason: BadReference::PastTop,
                        ..
                    }
                ),
                "{e:?}"
            )
        },
        || set_slot(s.b, 0),
    );
}

#[test]
fn a_root_to_a_freed_object_is_an_error() {
    let s = setup(64);
    // Drop the chain and collect: its page holds nothing live and is freed.
    *s.cells.root.lock().unwrap() = 0;
    let stats = s.rt.collect().unwrap();
    assert!(stats.pages_freed_empty >= 1, "{stats:?}");
    // A stale root: the old address, in a page that was freed.
    *s.cells.root.lock().unwrap() = s.a;
    let err = s.rt.collect().expect_err("a stale root");
    assert!(
        matches!(
            err,
            GcError::InvalidReference {
                value,
                slot: Some(_),
                holder: None,
                reason: BadReference::FreeMemory,
            } if value == s.a
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("(a root)"), "{err}");
    *s.cells.root.lock().unwrap() = 0;
    s.rt.collect().expect("recovers");
}

#[test]
fn an_object_size_of_zero_or_larger_than_its_page_names_the_object() {
    for lie in [64 << 20, usize::MAX, 0] {
        let s = setup(64);
        *s.cells.lie.lock().unwrap() = Some((s.a, lie));
        expect_error(
            &s,
            |e| match e {
                GcError::InvalidObjectSize { object, size, .. } => {
                    assert_eq!(object.get(), s.a);
                    assert_eq!(*size, lie);
                    assert!(e.to_string().contains(&format!("{:#x}", s.a)), "{e}");
                }
                other => panic!("expected a bad size, got {other:?}"),
            },
            || *s.cells.lie.lock().unwrap() = None,
        );
    }
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the page stays, and release builds walk only evacuated pages' live maps for overlaps"
)]
fn a_size_that_swallows_the_next_object_is_an_overlap() {
    let s = setup(64);
    // `a` claims 128 bytes: it would contain `b`, which is marked too.
    *s.cells.lie.lock().unwrap() = Some((s.a, 128));
    expect_error(
        &s,
        |e| assert!(matches!(e, GcError::OverlappingObjects { .. }), "{e:?}"),
        || *s.cells.lie.lock().unwrap() = None,
    );
}

#[test]
fn a_reference_into_a_large_object_is_not_an_object_start() {
    let cells_probe = common::builder(64 << 20, None).build().unwrap();
    let large = cells_probe.heap().page_sizes().medium_object_max() + 4096;
    drop(cells_probe);
    let s = setup(large);
    set_slot(s.a, s.b + 64);
    expect_error(
        &s,
        |e| {
            assert!(
                matches!(
                    e,
                    GcError::InvalidReference {
                        reason: BadReference::NotAnObjectStart,
                        ..
                    }
                ),
                "{e:?}"
            )
        },
        || set_slot(s.a, s.b),
    );
}

#[test]
fn a_handle_to_garbage_is_an_error_not_a_crash() {
    let s = setup(64);
    let bogus = ObjectReference::from_address(hotmem::Address::new(0x1000)).unwrap();
    let h = s.rt.global_handle(bogus);
    let err = s.rt.collect().unwrap_err();
    assert!(
        matches!(
            err,
            GcError::InvalidReference {
                slot: None,
                reason: BadReference::OutsideHeap,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("handle or pin"), "{err}");
    drop(h);
    s.rt.collect().expect("recovers once the handle is gone");
}
