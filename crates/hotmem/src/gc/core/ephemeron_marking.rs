//! Ephemerons marked while the mutators run: a concurrent cycle's marking
//! retains the value of every [`Ephemeron`](crate::Ephemeron) whose key it
//! has reached, between its rounds, so that Pause Mark End looks only at
//! the pairs whose key was not live then (usually those about to be
//! cleared), not at every pair. With a million ephemerons the pause's
//! fixpoint was about 20 ms, nearly all of it the first pass over pairs
//! whose keys were long marked.
//!
//! Why the pause may skip the other pairs:
//! - marks only grow during a cycle: a pair whose key was live at a pass
//!   had its value marked then, and its key stays live;
//! - a pair added since the cycle's Pause Mark Start holds a key and a
//!   value the adding thread had (from its roots, a handle, a load, or a
//!   new object): reachable in the snapshot, or allocated since, so both
//!   are marked by the end of marking without the pair's help; its key is
//!   live, and it is not cleared;
//! - an index whose pair was dropped and reused meanwhile holds such a new
//!   pair: looking at it again costs nothing, and clearing checks the key.
//!
//! The later passes, like the pause's, look only at the pairs still
//! waiting; a chain of ephemerons (a value holding the next key) takes one
//! pass per link, each over fewer pairs. When nothing was marked since a
//! pass found none of the waiting keys live (Pause Mark End's logs held
//! nothing new), the pause makes no pass at all ([`Waiting::settled`]).

use super::mark::{MarkPolicy, Marker};
use super::stats::StrengthCounts;
use crate::GcError;
use crate::vm::Binding;
use crate::weak::EphemeronTable;

/// Which ephemerons a collection's weak processing starts from.
pub(crate) enum EphemeronStart {
    /// Every pair (a stop-the-world collection, or a concurrent cycle whose
    /// marking did not get to them).
    All,
    /// Concurrent marking went through them: only these pairs' keys were
    /// not live then.
    Scanned(EphemeronScan),
}

/// What concurrent marking's passes over the ephemerons left.
pub(crate) struct EphemeronScan {
    /// The pairs whose key was not live at the last pass.
    pub(crate) waiting: Waiting,
    /// Pairs found at the first pass, and values retained by all.
    pub(crate) counts: StrengthCounts,
}

/// The pairs whose key was not live when last looked at, and when that
/// was.
pub(crate) struct Waiting {
    /// Their indices in the table.
    pub(crate) pairs: Vec<usize>,
    /// The marker's count of marked objects when a pass last found none
    /// of these keys live, every marked object traced: while the count
    /// stays, no key can have become live (marks only come from tracing,
    /// which counts them), and a pass would find nothing.
    pub(crate) settled_at: Option<u64>,
}

impl Waiting {
    /// Every pair is waiting; none was looked at.
    pub(crate) fn all(pairs: Vec<usize>) -> Waiting {
        Waiting {
            pairs,
            settled_at: None,
        }
    }

    /// Whether a pass now would find nothing: none was marked since the
    /// last pass found nothing.
    pub(crate) fn settled<B: Binding, P: MarkPolicy>(&self, marker: &Marker<'_, B, P>) -> bool {
        self.settled_at == Some(marker.marked())
    }
}

impl EphemeronScan {
    /// One pass of concurrent marking, between two rounds of tracing: the
    /// first over every pair of `table`, later ones over the pairs still
    /// waiting. Marks the value of each pair whose key `marker` finds live
    /// (for the next round to trace); returns how many values it marked.
    ///
    /// # Errors
    /// A value that is no object of the heap (the embedder's error).
    pub(crate) fn pass<B: Binding, P: MarkPolicy>(
        scan: &mut Option<EphemeronScan>,
        table: &EphemeronTable,
        marker: &Marker<'_, B, P>,
    ) -> Result<u64, GcError> {
        let mut error = None;
        let mut fresh = 0;
        let mut retain = |value| match marker.mark_root(value, None) {
            Ok(marked) => fresh += u64::from(marked),
            Err(e) => {
                error.get_or_insert(e);
            }
        };
        match scan {
            None => {
                let mut s = EphemeronScan {
                    waiting: Waiting::all(Vec::new()),
                    counts: StrengthCounts::default(),
                };
                table.for_each_chunked(|i, pair| {
                    if let Some((key, value)) = pair {
                        s.counts.found += 1;
                        match marker.is_live(key) {
                            true => retain(value),
                            false => s.waiting.pairs.push(i),
                        }
                    }
                });
                *scan = Some(s);
            }
            Some(s) => table.retain_chunked(&mut s.waiting.pairs, |pair| match pair {
                Some((key, value)) if marker.is_live(key) => {
                    retain(value);
                    false
                }
                Some(_) => true,
                None => false,
            }),
        }
        if let Some(e) = error {
            return Err(e);
        }
        if let Some(s) = scan {
            s.counts.retained += fresh;
            // The count is of the objects traced so far: any marked but
            // not traced yet (this round's logs) are traced before weak
            // processing, and move it.
            s.waiting.settled_at = (fresh == 0).then(|| marker.marked());
        }
        Ok(fresh)
    }
}
