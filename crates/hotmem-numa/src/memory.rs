//! Node-local memory: bind a range of address space to a node, and ask where
//! a range's pages are. Both go through hwloc's area memory binding
//! (`mbind`/`move_pages` on Linux).

use crate::error::{LocateError, MemoryBindError, MemoryUnsupported};
use crate::{NodeId, Topology};
use hotmem_os::{Address, MemRange};
use hwlocality::errors::HybridError;
use hwlocality::memory::binding::{MemoryBindingError, MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

/// How firmly a range is bound to its node.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryPolicy {
    /// New pages come from the node while it has free memory, from elsewhere
    /// when it is full (Linux `MPOL_PREFERRED`). Pages already placed stay.
    #[default]
    Preferred,
    /// Pages come only from the node (Linux `MPOL_BIND`). Pages already
    /// placed elsewhere stay there (hwlocality refuses hwloc's `MIGRATE` flag
    /// for areas), so bind before first touch.
    Strict,
}

/// Where the pages of a range are.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryLocation {
    /// No page of the range has physical memory yet.
    Unplaced,
    /// All placed pages are on this node.
    Node(NodeId),
    /// The placed pages are spread over these nodes.
    Spread(Vec<NodeId>),
}

/// A view of `range` that hwloc can take: bytes that may be changed by others
/// at any time (`UnsafeCell`) and may hold anything (`MaybeUninit`); hwloc only
/// passes its address and length to the kernel.
///
/// # Safety
/// `range` must be mapped (committed) memory that stays mapped while the
/// returned reference lives.
unsafe fn area<'a>(range: MemRange) -> &'a [UnsafeCell<MaybeUninit<u8>>] {
    // SAFETY: the caller promises the bytes are mapped for the lifetime;
    // `UnsafeCell<MaybeUninit<u8>>` has size and alignment 1, has no validity
    // requirement on its contents and allows them to change behind a shared
    // reference, so any mapped bytes form a valid slice of it.
    unsafe { std::slice::from_raw_parts(range.start().as_ptr(), range.len()) }
}

impl Topology {
    /// Binds the pages of `range` to `node`'s memory, under `policy`.
    ///
    /// The binding belongs to the mapping: a range that is later remapped
    /// (for example uncommitted and committed again by replacing the mapping,
    /// as `hotmem_os` does for anonymous memory) must be bound again, after
    /// the commit. For memfd-backed memory Linux keeps the policy with the
    /// shared file. (`tests/real_binding.rs` shows both with
    /// `get_mempolicy`, `tests/kernel_numa.rs` where the pages land on a
    /// multi-node kernel.)
    ///
    /// # Safety
    /// `range` must be mapped memory (committed, or a mapping of physical
    /// memory) of the caller's, and stay mapped during the call. Its contents
    /// are neither read nor written.
    ///
    /// # Errors
    /// [`MemoryBindError::Unsupported`] on a synthetic topology or where the
    /// OS cannot bind areas; [`MemoryBindError::UnknownNode`];
    /// [`MemoryBindError::EmptyRange`]; [`MemoryBindError::Rejected`] if the
    /// kernel refuses (for example, a node without memory). The range's
    /// policy is unchanged on error.
    pub unsafe fn bind_memory(
        &self,
        range: MemRange,
        node: NodeId,
        policy: MemoryPolicy,
    ) -> Result<(), MemoryBindError> {
        let info = self.node(node).ok_or(MemoryBindError::UnknownNode(node))?;
        if !self.is_this_system() {
            return Err(MemoryBindError::Unsupported(
                MemoryUnsupported::NotThisSystem,
            ));
        }
        if range.is_empty() {
            return Err(MemoryBindError::EmptyRange);
        }
        let hwloc = self.as_hwloc();
        if !hwloc
            .feature_support()
            .memory_binding()
            .is_some_and(|s| s.set_area())
        {
            return Err(MemoryBindError::Unsupported(MemoryUnsupported::Os));
        }
        let nodeset: NodeSet = [
            hwlocality::bitmap::BitmapIndex::try_from(info.os_index() as usize)
                .expect("node OS indices come from hwloc"),
        ]
        .into_iter()
        .collect();
        let flags = match policy {
            MemoryPolicy::Preferred => MemoryBindingFlags::empty(),
            MemoryPolicy::Strict => MemoryBindingFlags::STRICT,
        };
        // SAFETY: the caller promises `range` is mapped for the call.
        let target = unsafe { area(range) };
        hwloc
            .bind_memory_area(target, &nodeset, MemoryBindingPolicy::Bind, flags)
            .map_err(|e| match e {
                HybridError::Rust(MemoryBindingError::Unsupported) => {
                    MemoryBindError::Unsupported(MemoryUnsupported::Os)
                }
                // EPERM: a seccomp filter (containers) refusing mbind.
                HybridError::Hwloc(raw) if raw.errno.is_some_and(|e| e.0 == EPERM) => {
                    MemoryBindError::Unsupported(MemoryUnsupported::Os)
                }
                other => MemoryBindError::Rejected {
                    node,
                    message: other.to_string(),
                },
            })
    }

    /// Where the pages of `range` physically are (pages not yet touched are
    /// not counted).
    ///
    /// # Safety
    /// As [`Topology::bind_memory`]: `range` must be mapped during the call.
    ///
    /// # Errors
    /// [`LocateError::NotThisSystem`] on a synthetic topology;
    /// [`LocateError::EmptyRange`]; [`LocateError::Unsupported`] where the OS
    /// cannot tell.
    pub unsafe fn memory_location(&self, range: MemRange) -> Result<MemoryLocation, LocateError> {
        if !self.is_this_system() {
            return Err(LocateError::NotThisSystem);
        }
        if range.is_empty() {
            return Err(LocateError::EmptyRange);
        }
        let hwloc = self.as_hwloc();
        if !hwloc
            .feature_support()
            .memory_binding()
            .is_some_and(|s| s.get_area_memory_location())
        {
            return Err(LocateError::Unsupported);
        }
        // SAFETY: the caller promises `range` is mapped for the call.
        let target = unsafe { area(range) };
        let set: NodeSet = hwloc
            .area_memory_location(target, MemoryBindingFlags::empty())
            .map_err(|_| LocateError::Unsupported)?;
        let nodes: Vec<NodeId> = set
            .iter_set()
            .filter_map(|i| self.node_by_os_index(usize::from(i)))
            .collect();
        Ok(match nodes.as_slice() {
            [] => MemoryLocation::Unplaced,
            [one] => MemoryLocation::Node(*one),
            _ => MemoryLocation::Spread(nodes),
        })
    }

    /// The node holding the page at `addr`, `None` if the page has no
    /// physical memory yet.
    ///
    /// # Safety
    /// The byte at `addr` must be mapped during the call.
    ///
    /// # Errors
    /// As [`Topology::memory_location`].
    pub unsafe fn node_of_address(&self, addr: Address) -> Result<Option<NodeId>, LocateError> {
        let range = MemRange::new(addr, 1).map_err(|_| LocateError::EmptyRange)?;
        // SAFETY: the caller promises the byte at `addr` is mapped.
        Ok(match unsafe { self.memory_location(range) }? {
            MemoryLocation::Unplaced => None,
            MemoryLocation::Node(n) => Some(n),
            MemoryLocation::Spread(v) => v.first().copied(),
        })
    }
}

const EPERM: i32 = 1;

#[cfg(test)]
mod tests {
    use super::*;
    use hotmem_os::{MemTag, Memory, page_size};

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn synthetic_topologies_cannot_bind_or_locate() {
        let t = Topology::synthetic("pack:2 numa:1 core:2 pu:1").unwrap();
        let mut buf = vec![0u8; 64];
        let range = MemRange::from_ptr_len(buf.as_mut_ptr(), buf.len());
        // SAFETY: `buf` is live, mapped heap memory.
        unsafe {
            assert_eq!(
                t.bind_memory(range, NodeId::new(1), MemoryPolicy::Preferred),
                Err(MemoryBindError::Unsupported(
                    MemoryUnsupported::NotThisSystem
                ))
            );
            assert_eq!(
                t.bind_memory(range, NodeId::new(2), MemoryPolicy::Preferred),
                Err(MemoryBindError::UnknownNode(NodeId::new(2)))
            );
            assert_eq!(t.memory_location(range), Err(LocateError::NotThisSystem));
            assert_eq!(
                t.node_of_address(range.start()),
                Err(LocateError::NotThisSystem)
            );
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn real_binding_places_touched_pages_on_the_node() {
        let t = Topology::detect().unwrap();
        // A node with memory (a CPU-only node refuses a strict binding).
        let node = t
            .nodes()
            .iter()
            .rev()
            .find(|n| n.memory_bytes() != Some(0))
            .unwrap()
            .id();
        let memory = Memory::new();
        let r = memory.reserve(4 * page_size(), MemTag::JAVA_HEAP).unwrap();
        let range = r.range();
        r.commit(range).unwrap();
        // SAFETY: the whole reservation was just committed and lives until
        // the end of the test.
        unsafe {
            assert_eq!(t.memory_location(range), Ok(MemoryLocation::Unplaced));
            match t.bind_memory(range, node, MemoryPolicy::Strict) {
                Ok(()) => {
                    range.start().as_ptr::<u8>().write_bytes(1, range.len());
                    assert_eq!(t.memory_location(range), Ok(MemoryLocation::Node(node)));
                    assert_eq!(
                        t.node_of_address(range.start() + page_size()),
                        Ok(Some(node))
                    );
                }
                // A sandbox refusing mbind: the typed error, and the memory
                // is still usable and placed somewhere the OS can report.
                Err(MemoryBindError::Unsupported(MemoryUnsupported::Os)) => {
                    range.start().as_ptr::<u8>().write_bytes(1, range.len());
                    assert!(matches!(
                        t.memory_location(range),
                        Ok(MemoryLocation::Node(_)) | Err(LocateError::Unsupported)
                    ));
                }
                Err(e) => panic!("binding to {node} failed: {e}"),
            }
            assert_eq!(
                t.bind_memory(
                    MemRange::new(range.start(), 0).unwrap(),
                    node,
                    MemoryPolicy::Preferred
                ),
                Err(MemoryBindError::EmptyRange)
            );
        }
    }
}
