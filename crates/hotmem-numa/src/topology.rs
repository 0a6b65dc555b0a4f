//! [`Topology`]: the machine's NUMA nodes, detected by hwloc or described
//! synthetically.

use crate::error::{InvalidDescription, LocateError, TopologyError};
use crate::{CpuSet, NodeId, NodeInfo};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use std::fmt;
use std::sync::Arc;

/// Where a [`Topology`] came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologySource {
    /// Discovered on this machine: threads really bind to its CPUs.
    Detected,
    /// Built from an hwloc synthetic description: a model of some machine,
    /// not this one. Pools on it record the bindings they would make.
    Synthetic {
        /// The description, as given.
        description: String,
    },
}

/// The NUMA nodes of a machine, their CPUs and memory.
///
/// Cheap to clone (shared), `Send + Sync`. Built once; nodes are numbered
/// densely by [`NodeId`] in hwloc's logical order.
#[derive(Clone)]
pub struct Topology {
    inner: Arc<Inner>,
}

struct Inner {
    hwloc: hwlocality::Topology,
    source: TopologySource,
    nodes: Vec<NodeInfo>,
    cpus: CpuSet,
    /// `cpu_node[cpu]`: the node holding CPU `cpu` (OS index).
    cpu_node: Vec<Option<NodeId>>,
}

impl Topology {
    /// The topology of this machine, discovered by hwloc.
    ///
    /// # Errors
    /// [`TopologyError::Detect`] if hwloc cannot discover the machine;
    /// [`TopologyError::NoNumaNodes`] if it reports no NUMA node.
    pub fn detect() -> Result<Topology, TopologyError> {
        let hwloc = hwlocality::Topology::new().map_err(|e| TopologyError::Detect {
            message: e.to_string(),
        })?;
        Topology::from_hwloc(hwloc, TopologySource::Detected)
    }

    /// A model topology from an hwloc synthetic description, such as
    /// `"pack:2 numa:1 core:4 pu:1"` (two packages, one node each, four cores
    /// of one PU per node) or `"numa:4 core:2 pu:2"`. See hwloc's
    /// documentation of synthetic topologies for the grammar.
    ///
    /// # Errors
    /// [`TopologyError::InvalidDescription`] if hwloc rejects the description;
    /// [`TopologyError::NoNumaNodes`] if it describes no NUMA node.
    pub fn synthetic(description: &str) -> Result<Topology, TopologyError> {
        use hwlocality::topology::builder::StringInputError;
        let invalid = |reason| TopologyError::InvalidDescription {
            description: description.to_owned(),
            reason,
        };
        let size = described_size(description);
        if size.leaves > MAX_SYNTHETIC_PUS || size.widest_arity > MAX_SYNTHETIC_ARITY {
            return Err(invalid(InvalidDescription::TooLarge));
        }
        let builder = hwlocality::Topology::builder()
            .from_synthetic(description)
            .map_err(|e| {
                invalid(match e {
                    StringInputError::ContainsNul => InvalidDescription::ContainsNul,
                    StringInputError::Invalid => InvalidDescription::Rejected,
                })
            })?;
        let hwloc = builder
            .build()
            .map_err(|_| invalid(InvalidDescription::Unbuildable))?;
        Topology::from_hwloc(
            hwloc,
            TopologySource::Synthetic {
                description: description.to_owned(),
            },
        )
    }

    fn from_hwloc(
        hwloc: hwlocality::Topology,
        source: TopologySource,
    ) -> Result<Topology, TopologyError> {
        let mut nodes = Vec::new();
        for (i, obj) in hwloc.objects_with_type(ObjectType::NUMANode).enumerate() {
            let cpuset = obj
                .cpuset()
                .map(|s| CpuSet::from_hwloc(&s))
                .unwrap_or_default();
            let memory_bytes = match obj.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map(|m| m.get()),
                _ => None,
            };
            nodes.push(NodeInfo {
                id: NodeId::new(i),
                os_index: obj.os_index().map_or(i as u32, |x| x as u32),
                cpuset,
                memory_bytes,
            });
        }
        if nodes.is_empty() {
            return Err(TopologyError::NoNumaNodes);
        }
        let cpus = CpuSet::from_hwloc(&hwloc.cpuset());
        let mut cpu_node = vec![None; cpus.iter().last().map_or(0, |c| c + 1)];
        for n in &nodes {
            for c in n.cpuset.iter() {
                if let Some(slot) = cpu_node.get_mut(c) {
                    slot.get_or_insert(n.id);
                }
            }
        }
        Ok(Topology {
            inner: Arc::new(Inner {
                hwloc,
                source,
                nodes,
                cpus,
                cpu_node,
            }),
        })
    }

    /// Where this topology came from.
    pub fn source(&self) -> &TopologySource {
        &self.inner.source
    }

    /// Whether the topology describes this machine (detected, not synthetic):
    /// only then do bindings reach the operating system.
    #[inline]
    pub fn is_this_system(&self) -> bool {
        matches!(self.inner.source, TopologySource::Detected)
    }

    /// The NUMA nodes, indexed by [`NodeId::index`].
    #[inline]
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.inner.nodes
    }

    /// Number of NUMA nodes (at least one).
    #[inline]
    pub fn node_count(&self) -> usize {
        self.inner.nodes.len()
    }

    /// The node `id`, `None` if the topology has no such node.
    #[inline]
    pub fn node(&self, id: NodeId) -> Option<&NodeInfo> {
        self.inner.nodes.get(id.index())
    }

    /// The ids of all nodes.
    pub fn node_ids(&self) -> impl ExactSizeIterator<Item = NodeId> + use<> {
        (0..self.node_count()).map(NodeId::new)
    }

    /// All CPUs the topology holds (on a detected topology: those this
    /// process is allowed to use).
    #[inline]
    pub fn cpuset(&self) -> &CpuSet {
        &self.inner.cpus
    }

    /// Number of CPUs (PUs): the input of the worker-count heuristics.
    #[inline]
    pub fn cpu_count(&self) -> usize {
        self.inner.cpus.len()
    }

    /// The node holding CPU `cpu` (OS index), if any.
    #[inline]
    pub fn node_of_cpu(&self, cpu: usize) -> Option<NodeId> {
        self.inner.cpu_node.get(cpu).copied().flatten()
    }

    /// The node of the CPU the calling thread is running on right now
    /// (it may move the next instant unless it is bound to one node).
    ///
    /// # Errors
    /// [`LocateError::NotThisSystem`] on a synthetic topology;
    /// [`LocateError::UnknownCpu`] if the CPU is in no node of the topology.
    pub fn current_node(&self) -> Result<NodeId, LocateError> {
        if !self.is_this_system() {
            return Err(LocateError::NotThisSystem);
        }
        let cpu = current_cpu();
        self.node_of_cpu(cpu).ok_or(LocateError::UnknownCpu(cpu))
    }

    /// The node whose OS index is `os_index` (the kernel's node number, as
    /// [`kernel`](crate::kernel) queries answer), `None` if there is none.
    pub fn node_with_os_index(&self, os_index: u32) -> Option<NodeId> {
        self.node_by_os_index(os_index as usize)
    }

    /// The node whose hwloc object has OS index `os_index`.
    pub(crate) fn node_by_os_index(&self, os_index: usize) -> Option<NodeId> {
        self.inner
            .nodes
            .iter()
            .find(|n| n.os_index as usize == os_index)
            .map(|n| n.id)
    }

    /// The hwloc topology underneath, for callers who want hwloc itself.
    pub fn as_hwloc(&self) -> &hwlocality::Topology {
        &self.inner.hwloc
    }
}

/// The most processing units a synthetic description may describe: as many
/// as the largest machines hwloc is commonly run on, and small enough that
/// hwloc builds the topology in well under a second.
pub const MAX_SYNTHETIC_PUS: u64 = 1 << 12;

/// The most children one level of a synthetic description may give each
/// object (`core:256`). hwloc inserts each object by comparing it with its
/// siblings' cpusets, so building one level costs about
/// objects x arity x (PUs / 64) word operations: a flat `"4096"` takes
/// seconds where `"16 256"`, the same PUs, takes a tenth of one.
pub const MAX_SYNTHETIC_ARITY: u64 = 256;

/// How big a synthetic description is, read before hwloc builds anything.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct DescribedSize {
    /// The product of the arities: the number of leaves.
    leaves: u64,
    /// The largest single arity.
    widest_arity: u64,
}

/// The arities (`type:N` or bare `N`) of a synthetic description, outside
/// parenthesised attributes. Tokens without an arity count as 1 (hwloc's
/// parser judges them); an arity too long to parse counts as `u64::MAX`.
fn described_size(description: &str) -> DescribedSize {
    let mut depth = 0u32;
    let mut outside = String::with_capacity(description.len());
    for ch in description.chars() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => outside.push(ch),
            _ => {}
        }
    }
    outside
        .split_whitespace()
        .filter_map(|token| {
            // `type:N`, or a bare `N` (hwloc reads a bare number as the
            // arity of the next level: "99999" is 99999 PUs).
            let arity = match token.split_once(':') {
                Some((_, arity)) => arity,
                None if token.starts_with(|c: char| c.is_ascii_digit()) => token,
                None => return None,
            };
            let digits: String = arity.chars().take_while(char::is_ascii_digit).collect();
            Some(digits.parse::<u64>().unwrap_or(u64::MAX))
        })
        .fold(
            DescribedSize {
                leaves: 1,
                widest_arity: 1,
            },
            |size, arity| DescribedSize {
                leaves: size.leaves.saturating_mul(arity),
                widest_arity: size.widest_arity.max(arity),
            },
        )
}

/// The CPU the calling thread runs on (`getcpu`, through the vDSO).
#[inline]
pub(crate) fn current_cpu() -> usize {
    rustix::thread::sched_getcpu()
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("source", &self.inner.source)
            .field("cpus", &self.inner.cpus)
            .field("nodes", &self.inner.nodes)
            .finish()
    }
}

/// One line for the machine, one per node.
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.source {
            TopologySource::Detected => f.write_str("detected topology")?,
            TopologySource::Synthetic { description } => {
                write!(f, "synthetic topology {description:?}")?
            }
        }
        writeln!(
            f,
            ": {} NUMA node(s), {} cpus ({})",
            self.node_count(),
            self.cpu_count(),
            self.inner.cpus
        )?;
        for n in &self.inner.nodes {
            writeln!(f, "  {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_arities_count_toward_the_size_limit() {
        // Found by the fuzzer: hwloc reads bare numbers as arities, and a
        // five-byte "99999" built 99999 PUs (minutes of work) past the limit.
        // Then "22221", under the old limit of 65536 PUs, took hwloc over a
        // minute: one level of 22221 siblings.
        for d in [
            "99999",
            "300 300",
            "pack:2 99999",
            "22221",
            "4096",
            "pack:2 pu:257",
        ] {
            assert!(
                matches!(
                    Topology::synthetic(d),
                    Err(TopologyError::InvalidDescription {
                        reason: InvalidDescription::TooLarge,
                        ..
                    })
                ),
                "{d}"
            );
        }
        assert_eq!(
            super::described_size("2 4 pu:2 core:3(memory=5000)"),
            super::DescribedSize {
                leaves: 48,
                widest_arity: 4
            }
        );
        // At both limits at once, still accepted.
        let t = Topology::synthetic("pack:16 pu:256").unwrap();
        assert_eq!(t.cpu_count(), 4096);
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn synthetic_two_nodes() {
        let t = Topology::synthetic("pack:2 numa:1 core:4 pu:1").unwrap();
        assert!(!t.is_this_system());
        assert_eq!(t.node_count(), 2);
        assert_eq!(t.cpu_count(), 8);
        assert_eq!(t.nodes()[0].cpuset(), &CpuSet::from_range(0..4));
        assert_eq!(t.nodes()[1].cpuset(), &CpuSet::from_range(4..8));
        assert_eq!(t.node_of_cpu(5), Some(NodeId::new(1)));
        assert_eq!(t.node_of_cpu(8), None);
        assert_eq!(t.current_node(), Err(LocateError::NotThisSystem));
        let ids: Vec<_> = t.node_ids().collect();
        assert_eq!(ids, [NodeId::new(0), NodeId::new(1)]);
        assert_eq!(t.node(NodeId::new(2)), None);
        assert!(t.to_string().contains("2 NUMA node(s), 8 cpus (0-7)"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn synthetic_memory_size_is_reported() {
        let t = Topology::synthetic("numa:4(memory=1GB) core:2 pu:2").unwrap();
        assert_eq!(t.node_count(), 4);
        for n in t.nodes() {
            assert_eq!(n.memory_bytes(), Some(1_000_000_000));
            assert_eq!(n.cpuset().len(), 4);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn invalid_descriptions_are_typed_errors() {
        for (bad, reason) in [
            ("pack:2 bogus:3", InvalidDescription::Rejected),
            ("pack:0 pu:1", InvalidDescription::Rejected),
            ("", InvalidDescription::Rejected),
            ("pack:2\0 pu:1", InvalidDescription::ContainsNul),
            ("pack:256 core:256 pu:2", InvalidDescription::TooLarge),
            (
                "pack:99999999999999999999999 pu:1",
                InvalidDescription::TooLarge,
            ),
        ] {
            match Topology::synthetic(bad) {
                Err(TopologyError::InvalidDescription {
                    description,
                    reason: r,
                }) => {
                    assert_eq!(description, bad);
                    assert_eq!(r, reason, "{bad:?}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn leaves_are_counted_outside_attributes() {
        let leaves = |d| described_size(d).leaves;
        assert_eq!(leaves("pack:2 numa:1 core:4 pu:1"), 8);
        assert_eq!(leaves("numa:4(memory=1GB) core:2 pu:2"), 16);
        assert_eq!(leaves("pack:2 [numa(memory=2GB)] core:3 pu:2"), 12);
        assert_eq!(leaves("gibberish"), 1);
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn detected_topology_holds_every_cpu_in_a_node() {
        let t = Topology::detect().unwrap();
        assert!(t.is_this_system());
        assert!(t.node_count() >= 1);
        assert!(t.cpu_count() >= 1);
        let mut union = CpuSet::new();
        for n in t.nodes() {
            for c in n.cpuset().iter() {
                union.insert(c);
            }
        }
        assert_eq!(&union, t.cpuset());
        let here = t.current_node().unwrap();
        assert!(here.index() < t.node_count());
    }
}
