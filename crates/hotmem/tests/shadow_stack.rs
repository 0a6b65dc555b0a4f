//! A shadow stack is scanned and updated in place: objects only it refers
//! to survive collections, its words follow them when they move, null
//! words stay null, and words past its length are not roots.

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::os::MemTag;
use hotmem::{
    Binding, GcError, Generations, ObjectReference, ShadowStackError, SimpleSlot, SlotVisitor,
};
use std::sync::Arc;

mod common;

#[test]
fn a_shadow_stack_keeps_its_objects_and_follows_them() {
    for generations in [Generations::Single, Generations::YoungAndOld] {
        let objects = SimpleObjects::new();
        let rt = common::builder(64 << 20, Some(2))
            .generations(generations)
            .binding(objects.clone())
            .build()
            .unwrap();
        let mut me = rt.attach_mutator().unwrap();
        let stack = me.new_shadow_stack(100).unwrap();
        assert!(stack.capacity() >= 100);
        let scratch = objects.root_table();
        let mut ids = Ids::from(1);
        let base = stack.as_ptr();
        // Words: obj, null, obj, ... for ten objects; then a word past the
        // length that refers to an object (not a root).
        for i in 0..10u64 {
            let obj = build::object(&mut me, &scratch, 0, 4, 100 + i).unwrap();
            scratch.pop();
            // SAFETY: within the capacity; each word holds a live object or
            // 0 before the length covers it, and nothing collects between
            // the allocation and the length's update.
            unsafe {
                base.add(2 * i as usize).write(obj.get() as u64);
                base.add(2 * i as usize + 1).write(0);
                stack.set_len(2 * i as usize + 2);
            }
            build::garbage(&mut me, &scratch, 512, &mut ids).unwrap();
        }
        let outside = build::object(&mut me, &scratch, 0, 4, 999).unwrap();
        scratch.pop();
        // SAFETY: word 20 is within the capacity and past the length.
        unsafe { base.add(20).write(outside.get() as u64) };
        let before: Vec<u64> = (0..20).map(|i| stack.get(i).unwrap()).collect();
        let stats = me.collect().unwrap();
        assert_eq!(
            stats.objects_marked, 10,
            "{generations:?}: exactly the stack's objects"
        );
        let mut moved = 0;
        for i in 0..10 {
            assert_eq!(stack.get(2 * i + 1), Some(0), "null stays null");
            let obj = stack.get_ref(2 * i).expect("a reference");
            // SAFETY: a live object; nothing collects during the check.
            unsafe { SimpleObjects::check(obj) }.expect("intact");
            // SAFETY: as above.
            assert_eq!(unsafe { SimpleObjects::header(obj) }[1], 100 + i as u64);
            moved += usize::from(obj.get() as u64 != before[2 * i]);
        }
        assert!(
            moved > 0,
            "{generations:?}: the stack follows moved objects"
        );
        assert_eq!(stack.get(20), None, "past the length");
        // SAFETY: shrinking keeps the words valid.
        unsafe { stack.set_len(0) };
        assert_eq!(me.collect().unwrap().objects_marked, 0);
        drop(stack);
        assert_eq!(
            me.collect().unwrap().objects_marked,
            0,
            "a dropped stack is no root"
        );
    }
}

/// A growing stack commits its first page only, and more as it grows (NMT
/// counts each step), up to what it reserved; the words it grows into are
/// roots like the first ones.
#[test]
fn a_growing_shadow_stack_commits_as_it_grows() {
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(2))
        .generations(Generations::YoungAndOld)
        .binding(objects.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let committed = || rt.nmt().totals(MemTag::THREAD_STACK).committed;
    // The GC workers (their stacks count as Thread Stack too) start with
    // the first collection.
    me.collect().unwrap();
    let before = committed();
    let stack = me.new_growing_shadow_stack(1 << 16).unwrap();
    let page = hotmem::os::page_size() / 8;
    assert_eq!(stack.capacity(), page);
    assert_eq!(stack.max_capacity(), 1 << 16);
    assert_eq!(committed() - before, page * 8);
    // Past the reservation: refused, nothing changes.
    assert!(matches!(
        stack.grow((1 << 16) + 1),
        Err(ShadowStackError::Full { words, max }) if words == (1 << 16) + 1 && max == 1 << 16
    ));
    assert_eq!(stack.capacity(), page);
    // Within it: at least the words asked for, at least twice as many as
    // before, committed and counted.
    let words = stack.grow(3 * page).unwrap();
    assert!(words >= 3 * page && words == stack.capacity(), "{words}");
    assert_eq!(committed() - before, words * 8);
    assert_eq!(stack.grow(page).unwrap(), words, "nothing to do");
    // An object in the last word grown into, and one in the first: both
    // kept, both followed.
    let scratch = objects.root_table();
    let base = stack.as_ptr();
    for (i, word) in [0, words - 1].into_iter().enumerate() {
        let obj = build::object(&mut me, &scratch, 0, 4, 50 + i as u64).unwrap();
        scratch.pop();
        // SAFETY: within the capacity; the words below the new length are
        // 0 or a live object, and nothing collects before they are set.
        unsafe {
            for w in stack.len()..word {
                base.add(w).write(0);
            }
            base.add(word).write(obj.get() as u64);
            stack.set_len(word + 1);
        }
    }
    let mut ids = Ids::from(1);
    build::garbage(&mut me, &scratch, 512, &mut ids).unwrap();
    assert_eq!(me.collect().unwrap().objects_marked, 2);
    for (i, word) in [0, words - 1].into_iter().enumerate() {
        let obj = stack.get_ref(word).expect("a reference");
        // SAFETY: a live object; nothing collects during the check.
        assert_eq!(unsafe { SimpleObjects::header(obj) }[1], 50 + i as u64);
    }
    drop(stack);
    assert_eq!(committed(), before, "released with the stack");
}

/// A binding that cannot rebuild slots from addresses.
struct NoSlotAt(Arc<SimpleObjects>);

impl Binding for NoSlotAt {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.0.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        self.0.scan_object(obj, v)
    }
}

#[test]
fn a_shadow_stack_needs_a_binding_that_decodes_its_words() {
    let objects = SimpleObjects::new();
    let rt = common::builder(32 << 20, Some(1))
        .binding(Arc::new(NoSlotAt(objects.clone())))
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let stack = me.new_shadow_stack(8).unwrap();
    // SAFETY: a null word within the capacity.
    unsafe {
        stack.as_ptr().write(0);
        stack.set_len(1);
    }
    assert_eq!(me.collect().unwrap_err(), GcError::ShadowStackWithoutSlotAt);
    // SAFETY: shrinking.
    unsafe { stack.set_len(0) };
    me.collect().expect("works again without words in use");
}
