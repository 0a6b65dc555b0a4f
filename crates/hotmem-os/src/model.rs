//! A reference model of one reservation, page by page, that the proptest and
//! the fuzz target drive real operations against.

use crate::{CommitError, MemRange, MemTag, Memory, Reservation, page_size, procfs};

/// One operation on a reservation of [`PAGES`] pages.
#[derive(Copy, Clone, Debug)]
pub enum Op {
    /// Commit `len` pages at page `first` (may be out of range or empty).
    Commit {
        /// First page.
        first: usize,
        /// Page count.
        len: usize,
    },
    /// Uncommit `len` pages at page `first`.
    Uncommit {
        /// First page.
        first: usize,
        /// Page count.
        len: usize,
    },
    /// Write `value` into every committed page of the range.
    Write {
        /// First page.
        first: usize,
        /// Page count.
        len: usize,
        /// Byte written.
        value: u8,
    },
    /// Commit a range that is not page aligned (always rejected).
    CommitMisaligned {
        /// First page.
        first: usize,
    },
}

/// Pages in the modelled reservation.
pub const PAGES: usize = 16;

/// Runs `ops` against a real reservation and a model, checking after every
/// step that each page's contents and residency are what the model says and
/// that rejected operations changed nothing.
///
/// # Panics
/// When the real memory and the model disagree.
pub fn check_ops(ops: &[Op]) {
    let page = page_size();
    let r: Reservation = Memory::new()
        .reserve(PAGES * page, MemTag::TEST)
        .expect("reserve");
    // None: uncommitted; Some(b): committed and every byte of the page is b.
    let mut model: [Option<u8>; PAGES] = [None; PAGES];
    let range_of = |first: usize, len: usize| -> Option<MemRange> {
        r.start()
            .checked_add(first.checked_mul(page)?)
            .and_then(|s| MemRange::new(s, len.checked_mul(page)?).ok())
    };
    for op in ops {
        match *op {
            Op::Commit { first, len } | Op::Uncommit { first, len } => {
                let Some(range) = range_of(first, len) else {
                    continue;
                };
                let valid = len > 0 && first.checked_add(len).is_some_and(|end| end <= PAGES);
                let result = if matches!(op, Op::Commit { .. }) {
                    r.commit(range)
                } else {
                    r.uncommit(range)
                };
                if valid {
                    result.expect("valid commit/uncommit");
                    let value = matches!(op, Op::Commit { .. }).then_some(0);
                    model[first..first + len].fill(value);
                } else {
                    assert!(
                        matches!(result, Err(CommitError::Range(_))),
                        "{op:?} gave {result:?}"
                    );
                }
            }
            Op::Write { first, len, value } => {
                let end = first.saturating_add(len).min(PAGES);
                for (p, state) in model.iter_mut().enumerate().take(end).skip(first) {
                    if state.is_some() {
                        let at = r.start() + p * page;
                        // SAFETY: the model says page `p` is committed.
                        unsafe { at.as_ptr::<u8>().write_bytes(value, page) };
                        *state = Some(value);
                    }
                }
            }
            Op::CommitMisaligned { first } => {
                let at = r.start() + (first % PAGES) * page + 8;
                let range = MemRange::new(at, page).expect("in range");
                assert!(matches!(r.commit(range), Err(CommitError::Range(_))));
            }
        }
        for (p, state) in model.iter().enumerate() {
            let at = r.start() + p * page;
            let one = MemRange::new(at, page).expect("in range");
            let resident = procfs::resident_bytes(one).expect("pagemap");
            match state {
                None => assert_eq!(resident, 0, "uncommitted page {p} is resident"),
                Some(v) => {
                    // SAFETY: committed per the model; reading touches at most one page.
                    let (b0, blast) = unsafe {
                        (
                            at.as_ptr::<u8>().read(),
                            at.as_ptr::<u8>().add(page - 1).read(),
                        )
                    };
                    assert_eq!((b0, blast), (*v, *v), "page {p} lost its contents");
                }
            }
        }
    }
}

/// Decodes fuzzer bytes into operations and runs [`check_ops`].
pub fn fuzz(data: &[u8]) {
    let ops: Vec<Op> = data
        .chunks_exact(3)
        .map(|c| {
            let first = (c[1] % 20) as usize;
            let len = (c[2] % 20) as usize;
            match c[0] % 4 {
                0 => Op::Commit { first, len },
                1 => Op::Uncommit { first, len },
                2 => Op::Write {
                    first,
                    len,
                    value: c[2],
                },
                _ => Op::CommitMisaligned { first },
            }
        })
        .take(64)
        .collect();
    check_ops(&ops);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let idx = 0usize..20;
        prop_oneof![
            (idx.clone(), 0usize..20).prop_map(|(first, len)| Op::Commit { first, len }),
            (idx.clone(), 0usize..20).prop_map(|(first, len)| Op::Uncommit { first, len }),
            (idx.clone(), 0usize..20, any::<u8>()).prop_map(|(first, len, value)| Op::Write {
                first,
                len,
                value
            }),
            idx.prop_map(|first| Op::CommitMisaligned { first }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        #[cfg_attr(miri, ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri")]
        fn reservation_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
            check_ops(&ops);
        }
    }
}
