//! Memory-mapped files as `Bytes`, so that weights are sliced out of the page cache instead of
//! being read and copied. Small files are read: a map costs more than it saves below ~64 KiB.

use std::fs::File;
use std::io;
use std::path::Path;

use bytes::Bytes;

/// Files smaller than this are read into memory instead of mapped.
const MAP_THRESHOLD: u64 = 64 * 1024;

/// The whole file as `Bytes`: a read-only private map for large files, a read for small ones.
pub fn map_file(path: &Path) -> io::Result<Bytes> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if len < MAP_THRESHOLD {
        return std::fs::read(path).map(Bytes::from);
    }
    map_open_file(&file)
}

/// Maps an open file.
pub fn map_open_file(file: &File) -> io::Result<Bytes> {
    #[allow(unsafe_code)]
    // SAFETY: the map is read-only and private. Like every reader that maps model files (ONNX
    // Runtime, tract), rge assumes the file is not truncated or rewritten while it is loaded;
    // a concurrent writer could otherwise change bytes under a live `Bytes`.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Bytes::from_owner(map))
}
