//! A 16-byte-aligned byte buffer (enough for every element type): owned, or a shared slice of
//! someone else's aligned bytes (a weight of the IR graph), so that constants are not copied
//! from the graph into the program.

use bytes::Bytes;

/// Alignment every buffer's bytes have.
pub const BUFFER_ALIGN: usize = 16;

/// Bytes with 16-byte alignment: owned and zero-initialized, or shared (read-only until the
/// first mutable borrow, which copies).
#[derive(Clone, Default)]
pub struct Buffer {
    words: Vec<u128>,
    len: usize,
    /// Set when the bytes are shared; `words` is then empty.
    shared: Option<Bytes>,
}

impl Buffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        Buffer {
            words: vec![0u128; len.div_ceil(16)],
            len,
            shared: None,
        }
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        // Word by word, not zeroed and then copied: a model's outputs are copied out of the
        // arena every run, and the zeroing was a sixth of a large single-Conv run.
        let chunks = bytes.chunks_exact(16);
        let tail = chunks.remainder();
        let mut words: Vec<u128> = Vec::with_capacity(bytes.len().div_ceil(16));
        words.extend(chunks.map(|c| u128::from_ne_bytes(c.try_into().unwrap_or_default())));
        if !tail.is_empty() {
            let mut last = [0u8; 16];
            last[..tail.len()].copy_from_slice(tail);
            words.push(u128::from_ne_bytes(last));
        }
        Buffer {
            words,
            len: bytes.len(),
            shared: None,
        }
    }

    /// `bytes` shared without a copy when they are 16-byte aligned, else copied.
    pub fn from_shared(bytes: Bytes) -> Self {
        if bytes.as_ptr().align_offset(BUFFER_ALIGN) == 0 {
            Buffer {
                words: Vec::new(),
                len: bytes.len(),
                shared: Some(bytes),
            }
        } else {
            Buffer::from_bytes(&bytes)
        }
    }

    /// True when the bytes are shared with another owner (not copied).
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        if let Some(b) = &self.shared {
            return b;
        }
        // SAFETY: `words` holds at least `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    /// The bytes, mutable (shared bytes are copied first).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if let Some(b) = self.shared.take() {
            *self = Buffer::from_bytes(&b);
        }
        // SAFETY: `words` holds at least `len` initialized bytes, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Buffer {}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_shared() { ", shared" } else { "" };
        write!(f, "Buffer({} bytes{how})", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_keep_every_byte() {
        for len in [0usize, 1, 15, 16, 17, 33, 64] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let b = Buffer::from_bytes(&src);
            assert_eq!(b.as_slice(), &src[..], "{len} bytes");
            assert_eq!(b.as_slice().as_ptr().align_offset(BUFFER_ALIGN), 0);
        }
    }

    #[test]
    fn aligned_bytes_are_shared_and_copied_on_write() {
        let owner =
            Buffer::from_bytes(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
        let words: Vec<u8> = owner.as_slice().to_vec();
        // A Vec<u128>'s memory is 16-byte aligned: share a slice of it.
        let src: Vec<u128> = vec![u128::from_le_bytes(words[..16].try_into().unwrap()); 2];
        let bytes = Bytes::from_owner(AlignedWords(src));
        let mut b = Buffer::from_shared(bytes.clone());
        assert!(b.is_shared());
        assert_eq!(b.as_slice().as_ptr(), bytes.as_ptr());
        assert_eq!(b.as_slice(), &bytes[..]);
        b.as_mut_slice()[0] = 99;
        assert!(!b.is_shared());
        assert_eq!(b.as_slice()[0], 99);
        assert_eq!(bytes[0], 1, "the shared source is never written");
        // Unaligned: copied.
        let c = Buffer::from_shared(bytes.slice(1..9));
        assert!(!c.is_shared());
        assert_eq!(c.as_slice(), &bytes[1..9]);
        assert_eq!(c, Buffer::from_bytes(&bytes[1..9]));
    }

    struct AlignedWords(Vec<u128>);

    impl AsRef<[u8]> for AlignedWords {
        fn as_ref(&self) -> &[u8] {
            bytemuck::cast_slice(&self.0)
        }
    }
}
