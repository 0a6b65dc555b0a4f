//! Hashing and comparing a string given as two parts (the operands of a
//! concatenation, before the result exists), a word at a time.
//!
//! The hash is FxHash's mix over the little-endian 8-byte words of the
//! bytes (the last one zero-padded) and the length: the same for any split
//! of the same bytes, and about one multiply per 8 bytes where FNV-1a (what
//! clox uses) takes one per byte. The hash is the VM's own: Lox programs
//! never see it.

/// FxHash's multiplier.
const K: u64 = 0x517c_c1b7_2722_0a95;

/// Up to 8 bytes as a little-endian word, zero-padded (a loop, not a
/// `memcpy` call: the parts are short).
#[inline(always)]
fn partial_word(bytes: &[u8]) -> u64 {
    let mut w = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(8) {
        w |= u64::from(b) << (8 * i);
    }
    w
}

/// Calls `f` with every 8-byte word of `head` then `tail` concatenated,
/// the last one zero-padded.
#[inline(always)]
fn words(head: &[u8], tail: &[u8], mut f: impl FnMut(u64)) {
    let mut chunks = head.chunks_exact(8);
    for chunk in &mut chunks {
        f(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    let mut tail = tail;
    if !rest.is_empty() {
        let take = (8 - rest.len()).min(tail.len());
        let seam = partial_word(rest) | partial_word(&tail[..take]) << (8 * rest.len());
        f(seam);
        tail = &tail[take..];
    }
    let mut chunks = tail.chunks_exact(8);
    for chunk in &mut chunks {
        f(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
    }
    if !chunks.remainder().is_empty() {
        f(partial_word(chunks.remainder()));
    }
}

/// The hash of `head` and `tail` concatenated.
#[inline]
pub(crate) fn hash(head: &[u8], tail: &[u8]) -> u32 {
    let mut h = 0u64;
    words(head, tail, |w| h = (h.rotate_left(5) ^ w).wrapping_mul(K));
    h = (h.rotate_left(5) ^ (head.len() + tail.len()) as u64).wrapping_mul(K);
    (h ^ (h >> 32)) as u32
}

/// `a == b` for slices of the same length, a word at a time.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    for (p, q) in (&mut x).zip(&mut y) {
        if p != q {
            return false;
        }
    }
    partial_word(x.remainder()) == partial_word(y.remainder())
}

/// Whether `bytes` is `head` followed by `tail`.
#[inline]
pub(crate) fn equals(bytes: &[u8], head: &[u8], tail: &[u8]) -> bool {
    bytes.len() == head.len() + tail.len()
        && same(&bytes[..head.len()], head)
        && same(&bytes[head.len()..], tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_where_the_split_is() {
        let text = b"the quick brown fox jumps over the lazy dog";
        let whole = hash(text, b"");
        for split in 0..=text.len() {
            let (head, tail) = text.split_at(split);
            assert_eq!(hash(head, tail), whole, "split at {split}");
        }
        assert_ne!(hash(b"a", b""), hash(b"a\0", b""));
        assert_ne!(hash(b"", b""), hash(b"\0", b""));
    }

    #[test]
    fn equality_of_two_parts() {
        let text = b"0123456789abcdefghij";
        for split in 0..=text.len() {
            let (head, tail) = text.split_at(split);
            assert!(equals(text, head, tail));
            assert!(!equals(b"0123456789abcdefghiJ", head, tail));
            assert!(!equals(b"0123456789abcdefghij!", head, tail));
        }
    }
}
