//! binary-trees on the hotmem `Runtime` (placeholder until the binding lands).

use crate::trees::Trees;
use serde_json::Value;

pub(crate) struct RuntimeTrees;

impl RuntimeTrees {
    pub(crate) fn new(_heap: usize) -> Result<RuntimeTrees, String> {
        Err("the runtime variant needs the binding".into())
    }
    pub(crate) fn figures(&self) -> Value {
        Value::Null
    }
}

pub(crate) fn describe(_gc: &Value) -> String {
    String::new()
}

impl Trees for RuntimeTrees {
    type Thread = ();
    type Kept = ();
    fn thread(&self) {}
    fn temporary(&self, _: &mut (), _: u32) -> u64 {
        0
    }
    fn keep(&self, _: &mut (), _: u32) {}
    fn check_kept(&self, _: &mut (), _: &()) -> u64 {
        0
    }
    fn release(&self, _: &mut (), _: ()) {}
}
