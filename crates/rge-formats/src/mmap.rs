//! Memory-mapped files as `Bytes`, so that weights are sliced out of the page cache instead of
//! being read and copied. Small files are read: a map costs more than it saves below ~64 KiB.
//!
//! Weights do not stay slices of the map: their offsets in a protobuf are arbitrary, and the
//! kernels want aligned memory, so the runtime would copy them and the file's pages would stay
//! resident beside the copy. [`FileBytes::owned_aligned`] makes the one owned, aligned copy at
//! import and hands the pages under it back to the OS, so a model's weights are in memory once.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use memmap2::{Mmap, UncheckedAdvice};

/// Files smaller than this are read into memory instead of mapped.
const MAP_THRESHOLD: u64 = 64 * 1024;

/// Slices shorter than this are copied without handing their pages back (an madvise per small
/// weight costs more than it saves; the whole map goes when the last slice of it does).
const OWN_THRESHOLD: usize = 4096;

/// The page size pages are handed back in (the kernel refuses ranges not aligned to its own page
/// size: then nothing is handed back, which is only a missed saving).
const PAGE: usize = 4096;

/// Alignment of the copies [`FileBytes::owned_aligned`] makes (what runtime buffers need).
pub const WEIGHT_ALIGN: usize = 16;

/// A whole file's bytes, and the map behind them when the file is mapped.
#[derive(Clone)]
pub struct FileBytes {
    bytes: Bytes,
    map: Option<Arc<Mmap>>,
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileBytes({} bytes, mapped: {})",
            self.bytes.len(),
            self.map.is_some()
        )
    }
}

impl FileBytes {
    /// Bytes that do not come from a file.
    pub fn in_memory(bytes: Bytes) -> Self {
        FileBytes { bytes, map: None }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// `slice` (a slice of these bytes, or any other bytes) as one owned, 16-byte-aligned copy,
    /// the file's pages wholly under it handed back to the OS when it is large. Small slices
    /// of a file that was read (not mapped) are returned as they are. Small slices of a map are
    /// copied too: one left in the map kept the whole map alive, and reading it later brought
    /// back a page, or on kernels that map the page cache's large folios whole, 2 MiB (BERT-base
    /// peaked 140 MiB higher for its biases and norms).
    pub fn owned_aligned(&self, slice: &Bytes) -> Bytes {
        if slice.len() < OWN_THRESHOLD {
            return if self.map.is_some() && !slice.is_empty() {
                aligned_copy(slice)
            } else {
                slice.clone()
            };
        }
        let copy = aligned_copy(slice);
        self.hand_back(slice);
        copy
    }

    /// Hands the file's pages wholly under `slice` back to the OS, when `slice` lies in the map
    /// (a slice still alive reads them in again): for bytes that were read once and are no
    /// longer needed.
    pub fn hand_back(&self, slice: &[u8]) {
        let Some(map) = self.map.as_ref().filter(|_| self.contains(slice)) else {
            return;
        };
        let offset = slice.as_ptr() as usize - map.as_ptr() as usize;
        let first = offset.next_multiple_of(PAGE);
        let end = (offset + slice.len()) / PAGE * PAGE;
        if end > first {
            // SAFETY: the map is read-only and shared (`Mmap::map`): dropping its pages loses
            // nothing, a later read of them faults them in again from the page cache. The
            // advice is only about residency; an error is a missed saving.
            #[allow(unsafe_code)]
            let _ = unsafe {
                map.unchecked_advise_range(UncheckedAdvice::DontNeed, first, end - first)
            };
        }
    }

    /// True when `slice` lies in this file's map.
    pub fn contains(&self, slice: &[u8]) -> bool {
        self.map.as_ref().is_some_and(|map| {
            let (base, start) = (map.as_ptr() as usize, slice.as_ptr() as usize);
            start >= base && start + slice.len() <= base + map.len()
        })
    }

    /// Hands every page of the map back to the OS (slices still alive read them in again).
    pub fn release_pages(&self) {
        if let Some(map) = &self.map {
            // SAFETY: as in `hand_back`: a read-only shared map; dropping its pages loses
            // nothing, a later read faults them in again from the page cache.
            #[allow(unsafe_code)]
            let _ = unsafe { map.unchecked_advise(UncheckedAdvice::DontNeed) };
        }
    }
}

/// An owned, 16-byte-aligned copy of `b`.
fn aligned_copy(b: &[u8]) -> Bytes {
    let mut words = vec![0u128; b.len().div_ceil(WEIGHT_ALIGN)];
    bytemuck::cast_slice_mut::<u128, u8>(&mut words)[..b.len()].copy_from_slice(b);
    Bytes::from_owner(AlignedBytes {
        words,
        len: b.len(),
    })
}

/// The owner of an aligned copy.
struct AlignedBytes {
    words: Vec<u128>,
    len: usize,
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice::<u128, u8>(&self.words)[..self.len]
    }
}

/// The owner of a map shared between `Bytes` and [`FileBytes`].
struct SharedMap(Arc<Mmap>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The whole file: a read-only map for large files, a read for small ones.
pub fn open_file(path: &Path) -> io::Result<FileBytes> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if len < MAP_THRESHOLD {
        return std::fs::read(path).map(|v| FileBytes::in_memory(Bytes::from(v)));
    }
    map_file_bytes(&file)
}

/// Maps an open file, keeping the map's handle.
pub fn map_file_bytes(file: &File) -> io::Result<FileBytes> {
    #[allow(unsafe_code)]
    // SAFETY: the map is read-only. Like every reader that maps model files (ONNX Runtime,
    // tract), rge assumes the file is not truncated or rewritten while it is loaded; a
    // concurrent writer could otherwise change bytes under a live `Bytes`.
    let map = Arc::new(unsafe { Mmap::map(file)? });
    Ok(FileBytes {
        bytes: Bytes::from_owner(SharedMap(map.clone())),
        map: Some(map),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_of_a_map_become_aligned_copies_and_read_files_keep_small_slices() {
        let dir = std::env::temp_dir().join(format!("rge-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = open_file(&path).unwrap();
        assert!(f.map.is_some());
        let big = f.bytes().slice(3..150_003);
        let owned = f.owned_aligned(&big);
        assert_eq!(owned, big);
        assert_ne!(owned.as_ptr(), big.as_ptr());
        assert_eq!(owned.as_ptr().align_offset(WEIGHT_ALIGN), 0);
        // The pages handed back read the same when touched again.
        assert_eq!(&f.bytes()[..], &data[..]);
        // A small slice of the map is copied too: left in it, it would keep the map alive.
        let small = f.bytes().slice(5..100);
        let copied = f.owned_aligned(&small);
        assert_eq!(copied, small);
        assert!(!f.contains(&copied));
        assert_eq!(copied.as_ptr().align_offset(WEIGHT_ALIGN), 0);
        // A file that was read, not mapped, keeps its small slices.
        let read = FileBytes::in_memory(Bytes::from(data.clone()));
        let small = read.bytes().slice(5..100);
        assert_eq!(read.owned_aligned(&small).as_ptr(), small.as_ptr());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
