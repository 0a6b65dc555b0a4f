//! A reference model of synthetic topology descriptions that the fuzz
//! target (`fuzz/fuzz_targets/numa.rs`) and the tests drive the real
//! topology against. Two kinds of input, chosen by the first byte:
//! - structured: a description built from the bytes (levels in hierarchy
//!   order, arities 1..=4) against a reference model of what it describes:
//!   node count, CPU count, CPUs per node, disjoint node cpusets, and the
//!   heuristics' "never fewer workers than nodes";
//! - free text: any string must give a topology or a typed error, never a
//!   panic, and a topology must be consistent.

use crate::heuristics::{WorkerKind, worker_count};
use crate::{AffinityPolicy, CpuSet, Topology, TopologyError};

const LEVELS: [&str; 5] = ["pack", "numa", "l3", "core", "pu"];

/// Runs one fuzz input.
///
/// # Panics
/// When the crate disagrees with the model: that is the finding.
pub fn fuzz(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        structured(rest);
    } else {
        free_text(rest);
    }
}

fn structured(bytes: &[u8]) {
    // Each of the first four levels is present if its byte says so; `pu` always is.
    let mut description = Vec::new();
    let (mut nodes, mut cpus) = (1u64, 1u64);
    let mut numa_seen = false;
    for (i, level) in LEVELS.iter().enumerate() {
        let b = bytes.get(i).copied().unwrap_or(0);
        let present = *level == "pu" || b & 0x80 != 0;
        if !present {
            continue;
        }
        let arity = u64::from(b % 4 + 1);
        description.push(format!("{level}:{arity}"));
        cpus *= arity;
        if !numa_seen {
            nodes *= arity;
        }
        if *level == "numa" {
            numa_seen = true;
        }
    }
    if !numa_seen {
        // hwloc adds one node for the whole machine.
        nodes = 1;
    }
    let description = description.join(" ");
    let t = Topology::synthetic(&description)
        .unwrap_or_else(|e| panic!("{description:?} should be valid: {e}"));
    assert_eq!(t.node_count() as u64, nodes, "{description}");
    assert_eq!(t.cpu_count() as u64, cpus, "{description}");
    check_consistent(&t);
    for node in t.nodes() {
        assert_eq!(node.cpuset().len() as u64, cpus / nodes, "{description}");
    }
    for kind in [WorkerKind::Concurrent, WorkerKind::Parallel] {
        let bound = worker_count(
            kind,
            t.cpu_count(),
            t.node_count(),
            AffinityPolicy::BindDuringPhases,
        );
        assert!(bound >= t.node_count() && bound >= 1);
    }
}

fn free_text(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    match Topology::synthetic(&text) {
        Ok(t) => check_consistent(&t),
        Err(TopologyError::InvalidDescription { description, .. }) => {
            assert_eq!(description, text);
        }
        Err(TopologyError::NoNumaNodes) => {}
        Err(e @ TopologyError::Detect { .. }) => panic!("synthetic gave {e}"),
    }
}

fn check_consistent(t: &Topology) {
    assert!(t.node_count() >= 1);
    assert!(t.cpu_count() as u64 <= crate::MAX_SYNTHETIC_PUS);
    let mut union = CpuSet::new();
    for (i, n) in t.nodes().iter().enumerate() {
        assert_eq!(n.id().index(), i);
        assert!(!union.intersects(n.cpuset()), "node cpusets overlap");
        for c in n.cpuset().iter() {
            union.insert(c);
            assert_eq!(t.node_of_cpu(c), Some(n.id()));
        }
    }
    assert!(union.is_subset(t.cpuset()));
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn fuzz_inputs_run() {
        for input in [
            &[0u8, 0x81, 0x82, 0x03, 0x80, 0x01][..],
            &[2, 0x83, 0x83, 0x83, 0x83, 0x83],
            &[2],
            &[
                1, b'p', b'a', b'c', b'k', b':', b'2', b' ', b'p', b'u', b':', b'2',
            ],
            &[3, 0xff, 0xfe, b'(', b':'],
            &[
                5, b'n', b'u', b'm', b'a', b':', b'9', b'9', b'9', b'9', b'9', b'9',
            ],
        ] {
            super::fuzz(input);
        }
    }
}
