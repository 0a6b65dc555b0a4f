//! A shadow stack is scanned and updated in place: objects only it refers
//! to survive collections, its words follow them when they move, null
//! words stay null, and words past its length are not roots.

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{Binding, GcError, Generations, ObjectReference, SimpleSlot, SlotVisitor};
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
