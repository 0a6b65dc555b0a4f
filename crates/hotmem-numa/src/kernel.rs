//! What the Linux kernel itself says, asked with raw system calls: no hwloc
//! in between and none of the pool's bookkeeping. Tests use these to check
//! the crate against the kernel (the NUMA guest of `cargo xtask numa-vm`);
//! the answers are in the kernel's node numbers (a node's
//! [`os_index`](crate::NodeInfo::os_index); map them back with
//! [`Topology::node_with_os_index`](crate::Topology::node_with_os_index)).
//!
//! - [`page_nodes`]: the node holding each page (`move_pages` with no target
//!   nodes, which only asks).
//! - [`current_cpu_and_node`]: where the calling thread runs (`getcpu`).
//! - [`thread_affinity`]: the calling thread's CPU mask
//!   (`sched_getaffinity`); [`set_thread_affinity`] sets it.
//! - [`memory_policy`]: the NUMA policy of the mapping at an address
//!   (`get_mempolicy` with `MPOL_F_ADDR`).
//!
//! ```
//! use hotmem_numa::kernel;
//!
//! let here = kernel::current_cpu_and_node()?;
//! assert!(kernel::thread_affinity()?.contains(here.cpu));
//! let page = vec![1u8; 4096];
//! let status = kernel::page_nodes(&[hotmem_os::Address::new(page.as_ptr() as usize)])?;
//! assert!(matches!(status[0], kernel::PageStatus::Node(_) | kernel::PageStatus::NotPresent));
//! # Ok::<(), hotmem_numa::KernelError>(())
//! ```

use crate::CpuSet;
use crate::error::{KernelCall, KernelError};
use hotmem_os::Address;

/// Where the kernel says a page is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageStatus {
    /// Resident on the node with this OS index.
    Node(u32),
    /// Mapped, but no physical page yet (`ENOENT`).
    NotPresent,
    /// Not mapped (`EFAULT`); some kernels (6.1) also answer this for a
    /// mapped page that was never touched.
    Unmapped,
    /// Another per-page error (the errno).
    Other(i32),
}

/// The CPU and node a thread runs on, as `getcpu` reports them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuNode {
    /// The CPU's OS index.
    pub cpu: usize,
    /// The node's OS index.
    pub node: u32,
}

/// A mapping's NUMA policy mode (`get_mempolicy`; mode flags dropped).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyMode {
    /// `MPOL_DEFAULT`: the mapping has no policy of its own (the thread's
    /// applies: usually the node of the CPU that touches the page first).
    Default,
    /// `MPOL_PREFERRED`.
    Preferred,
    /// `MPOL_BIND`.
    Bind,
    /// `MPOL_INTERLEAVE`.
    Interleave,
    /// `MPOL_LOCAL`.
    Local,
    /// A mode this crate does not name.
    Other(i32),
}

/// The policy of the mapping at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressPolicy {
    /// The mode.
    pub mode: PolicyMode,
    /// The nodes (OS indices) of the policy; empty for `Default`.
    pub nodes: Vec<u32>,
}

const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
/// `MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING`.
const MPOL_MODE_FLAGS: libc::c_int = (1 << 15) | (1 << 14) | (1 << 13);
/// Bits of node mask `get_mempolicy` may fill (the kernel refuses a mask
/// smaller than its own MAX_NUMNODES, which is at most 1024).
const MASK_BITS: usize = 1024;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The node of each page of `pages` (addresses anywhere in the page), in
/// order: `move_pages(0, n, pages, NULL, status, 0)`, which moves nothing.
///
/// # Errors
/// [`KernelError`] if the call itself fails (per-page failures are
/// [`PageStatus`] values).
pub fn page_nodes(pages: &[Address]) -> Result<Vec<PageStatus>, KernelError> {
    if pages.is_empty() {
        return Ok(Vec::new());
    }
    let ptrs: Vec<*mut libc::c_void> = pages.iter().map(|a| a.as_ptr::<libc::c_void>()).collect();
    let mut status: Vec<libc::c_int> = vec![i32::MIN; pages.len()];
    // SAFETY: `ptrs` and `status` hold `pages.len()` elements each and live
    // across the call; with a null node list `move_pages` only writes
    // `status` and reads `ptrs`, and checks the addresses itself (an
    // unmapped one is a per-page EFAULT, not a fault of ours).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_int,
            pages.len() as libc::c_ulong,
            ptrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(KernelError {
            call: KernelCall::MovePages,
            errno: errno(),
        });
    }
    Ok(status
        .into_iter()
        .map(|s| match s {
            s if s >= 0 => PageStatus::Node(s as u32),
            s if -s == libc::ENOENT => PageStatus::NotPresent,
            s if -s == libc::EFAULT => PageStatus::Unmapped,
            s => PageStatus::Other(-s),
        })
        .collect())
}

/// The CPU and node the calling thread is running on now (`getcpu`).
///
/// # Errors
/// [`KernelError`] if the kernel refuses the call.
pub fn current_cpu_and_node() -> Result<CpuNode, KernelError> {
    let mut cpu: libc::c_uint = 0;
    let mut node: libc::c_uint = 0;
    // SAFETY: both pointers are to live locals the call writes; the third
    // argument (a cache the kernel ignores) may be null.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            &mut node as *mut libc::c_uint,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if rc < 0 {
        return Err(KernelError {
            call: KernelCall::GetCpu,
            errno: errno(),
        });
    }
    Ok(CpuNode {
        cpu: cpu as usize,
        node,
    })
}

/// The calling thread's CPU affinity mask (`sched_getaffinity(0)`).
///
/// # Errors
/// [`KernelError`] if the kernel refuses the call.
pub fn thread_affinity() -> Result<CpuSet, KernelError> {
    let set = rustix::thread::sched_getaffinity(None).map_err(|e| KernelError {
        call: KernelCall::SchedGetAffinity,
        errno: e.raw_os_error(),
    })?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .collect())
}

/// Sets the calling thread's CPU affinity mask (`sched_setaffinity(0)`):
/// for tests that place a thread on a node before checking what follows.
///
/// # Errors
/// [`KernelError`] if the kernel refuses (a CPU outside the process's
/// cpuset, or a CPU number beyond what `sched_setaffinity` takes).
pub fn set_thread_affinity(cpus: &CpuSet) -> Result<(), KernelError> {
    let refused = |errno| KernelError {
        call: KernelCall::SchedSetAffinity,
        errno,
    };
    let mut set = rustix::thread::CpuSet::new();
    for cpu in cpus.iter() {
        if cpu >= rustix::thread::CpuSet::MAX_CPU {
            return Err(refused(libc::EINVAL));
        }
        set.set(cpu);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| refused(e.raw_os_error()))
}

/// The NUMA policy of the mapping that holds `addr`
/// (`get_mempolicy(&mode, mask, MASK_BITS, addr, MPOL_F_ADDR)`).
///
/// # Errors
/// [`KernelError`] if the kernel refuses (`EFAULT` for an unmapped address).
pub fn memory_policy(addr: Address) -> Result<AddressPolicy, KernelError> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0 as libc::c_ulong; MASK_BITS / libc::c_ulong::BITS as usize];
    // SAFETY: `mode` and `mask` are live locals of the sizes given (the mask
    // holds MASK_BITS bits); the kernel checks `addr` itself and reads no
    // byte of it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MASK_BITS as libc::c_ulong,
            addr.as_ptr::<libc::c_void>(),
            MPOL_F_ADDR,
        )
    };
    if rc < 0 {
        return Err(KernelError {
            call: KernelCall::GetMempolicy,
            errno: errno(),
        });
    }
    let bits = libc::c_ulong::BITS as usize;
    let nodes = (0..MASK_BITS)
        .filter(|&i| mask[i / bits] & (1 << (i % bits)) != 0)
        .map(|i| i as u32)
        .collect();
    let mode = match mode & !MPOL_MODE_FLAGS {
        libc::MPOL_DEFAULT => PolicyMode::Default,
        libc::MPOL_PREFERRED => PolicyMode::Preferred,
        libc::MPOL_BIND => PolicyMode::Bind,
        libc::MPOL_INTERLEAVE => PolicyMode::Interleave,
        libc::MPOL_LOCAL => PolicyMode::Local,
        other => PolicyMode::Other(other),
    };
    Ok(AddressPolicy { mode, nodes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotmem_os::{MemTag, Memory, page_size};

    #[test]
    #[cfg_attr(miri, ignore = "raw system calls: Miri cannot run them")]
    fn pages_report_their_state() {
        let memory = Memory::new();
        let r = memory.reserve(4 * page_size(), MemTag::JAVA_HEAP).unwrap();
        let first = r.subrange(0, 2 * page_size()).unwrap();
        r.commit(first).unwrap();
        // SAFETY: the first page is committed and owned by this test.
        unsafe { r.start().as_ptr::<u8>().write(1) };
        let pages: Vec<Address> = (0..3).map(|i| r.start() + i * page_size()).collect();
        let s = page_nodes(&pages).unwrap();
        assert!(matches!(s[0], PageStatus::Node(_)), "{s:?}");
        // Committed, never touched: ENOENT, or EFAULT from kernels (6.1)
        // that find no page to report.
        assert!(
            matches!(s[1], PageStatus::NotPresent | PageStatus::Unmapped),
            "{s:?}"
        );
        // Reserved only: mapped PROT_NONE, so "present" does not apply.
        assert!(
            matches!(s[2], PageStatus::NotPresent | PageStatus::Unmapped),
            "{s:?}"
        );
        assert_eq!(page_nodes(&[]).unwrap(), []);
        let policy = memory_policy(r.start()).unwrap();
        assert_eq!(policy.mode, PolicyMode::Default, "never bound");
    }

    #[test]
    #[cfg_attr(miri, ignore = "raw system calls: Miri cannot run them")]
    fn the_thread_runs_inside_its_mask() {
        let mask = thread_affinity().unwrap();
        assert!(!mask.is_empty());
        let here = current_cpu_and_node().unwrap();
        assert!(mask.contains(here.cpu), "cpu {} outside {mask}", here.cpu);
        // Narrowed to one CPU in a thread of its own, then back.
        let cpu = mask.iter().last().unwrap();
        std::thread::spawn(move || {
            let one: CpuSet = std::iter::once(cpu).collect();
            set_thread_affinity(&one).unwrap();
            assert_eq!(thread_affinity().unwrap(), one);
            assert_eq!(current_cpu_and_node().unwrap().cpu, cpu);
        })
        .join()
        .unwrap();
        assert_eq!(
            thread_affinity().unwrap(),
            mask,
            "other threads keep theirs"
        );
    }
}
