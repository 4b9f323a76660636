//! The caching allocator for run-time (dynamic) values: buffers freed by their last reader go
//! back to a pool keyed by byte length, and the next request of that length takes one instead of
//! allocating and zeroing (a kernel output's content is unspecified until the kernel writes it).
//! Repeated runs of a dynamic-shape model thus stop allocating once their shapes repeat.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rge_kernels::{Buffer, TensorData, Value};

/// At most this many bytes are kept per program.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// A pool of byte buffers by length.
#[derive(Debug, Default)]
pub struct CachingAllocator {
    pools: Mutex<HashMap<usize, Vec<Buffer>>>,
    cached: AtomicUsize,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

impl CachingAllocator {
    /// A buffer of `len` bytes (recycled when one is cached).
    pub fn take(&self, len: usize) -> Buffer {
        if len > 0 {
            if let Some(b) = self
                .pools
                .lock()
                .ok()
                .and_then(|mut p| p.get_mut(&len).and_then(Vec::pop))
            {
                self.cached.fetch_sub(len, Ordering::Relaxed);
                self.hits.fetch_add(1, Ordering::Relaxed);
                return b;
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        Buffer::zeroed(len)
    }

    /// Returns a buffer to the pool (dropped when the pool is full).
    pub fn give(&self, b: Buffer) {
        let len = b.len();
        if len == 0 || self.cached.load(Ordering::Relaxed) + len > DEFAULT_CACHE_BYTES {
            return;
        }
        if let Ok(mut p) = self.pools.lock() {
            p.entry(len).or_default().push(b);
            self.cached.fetch_add(len, Ordering::Relaxed);
        }
    }

    /// Recycles the byte buffers a value holds.
    pub fn recycle(&self, v: Value) {
        match v {
            Value::Tensor(t) => {
                if let TensorData::Bytes(b) = t.into_data() {
                    self.give(b);
                }
            }
            Value::Sequence { items, .. } => {
                for t in items {
                    self.recycle(Value::Tensor(t));
                }
            }
            Value::Optional(Some(v)) => self.recycle(*v),
            // Maps are small (ai.onnx.ml's per-row outputs): dropped, not pooled.
            Value::Optional(None) | Value::Map(_) | Value::MapSequence { .. } => {}
        }
    }

    /// (requests served from the pool, requests allocated, bytes cached now).
    pub fn stats(&self) -> (usize, usize, usize) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
            self.cached.load(Ordering::Relaxed),
        )
    }
}
