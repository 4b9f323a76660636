//! An owned, 16-byte-aligned byte buffer (enough for every element type).

/// Owned bytes with 16-byte alignment, zero-initialized.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Buffer {
    words: Vec<u128>,
    len: usize,
}

impl Buffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        Buffer {
            words: vec![0u128; len.div_ceil(16)],
            len,
        }
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut b = Buffer::zeroed(bytes.len());
        b.as_mut_slice().copy_from_slice(bytes);
        b
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
        // SAFETY: `words` holds at least `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `words` holds at least `len` initialized bytes, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({} bytes)", self.len)
    }
}
