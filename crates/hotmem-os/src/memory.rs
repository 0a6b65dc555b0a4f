//! `Memory`: the handle through which address space is reserved.

use crate::error::{OsError, OsOp, PhysicalError, ReserveError};
use crate::sync::Arc;
use crate::{MemRange, MemTag, MemoryEvent, MemoryObserver, PhysicalMemory, Reservation};
use crate::{align_up, page_size, sys};
use std::fmt;

/// The door to virtual memory. Every reservation made through it, and every
/// commit, uncommit and release of those reservations, is reported to its
/// observer (if any).
///
/// Cloning is cheap; clones share the observer.
#[derive(Clone, Default)]
pub struct Memory {
    observer: Option<Arc<dyn MemoryObserver>>,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("observed", &self.observer.is_some())
            .finish()
    }
}

impl Memory {
    /// A memory without observer.
    pub fn new() -> Memory {
        Memory { observer: None }
    }

    /// A memory whose every operation is reported to `observer`.
    pub fn with_observer(observer: Arc<dyn MemoryObserver>) -> Memory {
        Memory {
            observer: Some(observer),
        }
    }

    /// The attached observer.
    pub fn observer(&self) -> Option<&Arc<dyn MemoryObserver>> {
        self.observer.as_ref()
    }

    #[inline]
    pub(crate) fn notify(&self, event: MemoryEvent) {
        if let Some(o) = &self.observer {
            o.observe(&event);
        }
    }

    /// Reserves `size` bytes of address space: inaccessible, with no backing
    /// and no charge against the commit limit.
    ///
    /// # Errors
    /// [`ReserveError::ZeroSize`], [`ReserveError::Misaligned`] if `size` is
    /// not a multiple of [`page_size()`], [`ReserveError::Os`] if the kernel
    /// refuses.
    pub fn reserve(&self, size: usize, tag: MemTag) -> Result<Reservation, ReserveError> {
        self.reserve_aligned(size, page_size(), tag)
    }

    /// Reserves `size` bytes starting at a multiple of `align` (a power of two,
    /// at least a page), e.g. 2 MiB for a heap of 2 MiB granules.
    ///
    /// # Errors
    /// As [`Memory::reserve`], plus [`ReserveError::BadAlignment`] and
    /// [`ReserveError::Overflow`].
    pub fn reserve_aligned(
        &self,
        size: usize,
        align: usize,
        tag: MemTag,
    ) -> Result<Reservation, ReserveError> {
        let page = page_size();
        if size == 0 {
            return Err(ReserveError::ZeroSize);
        }
        if size % page != 0 {
            return Err(ReserveError::Misaligned {
                size,
                page_size: page,
            });
        }
        if !align.is_power_of_two() || align < page {
            return Err(ReserveError::BadAlignment { align });
        }
        let padded = size
            .checked_add(align - page)
            .ok_or(ReserveError::Overflow { size, align })?;
        let base =
            sys::reserve(padded).map_err(|e| ReserveError::Os(OsError::new(OsOp::Reserve, e)))?;
        let start = base
            .align_up(align)
            .expect("mapping below the top of the address space");
        let head = start.offset_from(base);
        let tail = padded - head - size;
        // Trim the padding. A trim the kernel refuses leaves that padding
        // mapped (inaccessible, unbacked: harmless, and owned by nobody);
        // it is reported reserved with the reservation's tag, so that an
        // observer still sees exactly what the kernel maps.
        let range = MemRange::new(start, size).expect("inside mapping");
        let head = MemRange::new(base, head).expect("inside mapping");
        let tail = MemRange::new(range.end(), tail).expect("inside mapping");
        let mut leftovers = [None, None];
        for (padding, left) in [head, tail].into_iter().zip(&mut leftovers) {
            if padding.is_empty() {
                continue;
            }
            // SAFETY: `padding` is the head or the tail of the mapping made
            // just above, outside `range`, not handed to anyone.
            if unsafe { sys::release(padding) }.is_err() {
                *left = Some(padding);
            }
        }
        for padding in leftovers.into_iter().flatten() {
            self.notify(MemoryEvent::Reserve {
                range: padding,
                tag,
            });
        }
        self.notify(MemoryEvent::Reserve { range, tag });
        Ok(Reservation::new(self.clone(), range, tag))
    }

    /// Creates `capacity` bytes of physical memory (a memfd) that can be
    /// mapped into reservations, at several addresses at once if wanted. No
    /// memory is allocated until [`PhysicalMemory::commit`].
    ///
    /// # Errors
    /// [`PhysicalError::ZeroSize`], [`PhysicalError::Misaligned`] if the
    /// capacity is not a multiple of [`page_size()`], or the OS error.
    pub fn physical(&self, capacity: usize) -> Result<PhysicalMemory, PhysicalError> {
        PhysicalMemory::create(capacity)
    }
}

/// Rounds `size` up to a whole number of pages, `None` on overflow.
pub fn round_to_pages(size: usize) -> Option<usize> {
    align_up(size, page_size())
}
