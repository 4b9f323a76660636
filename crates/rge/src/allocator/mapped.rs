//! One private mapping per large block (Linux): made 2 MiB aligned with huge pages advised,
//! grown or shrunk with `mremap`; a freed block is kept for the next large allocation
//! (`reuse.rs` chooses) or unmapped.

use std::sync::Mutex;

use super::reuse::{Block, Evicted, Reuse};
use super::{map_len, HUGE_PAGE, PAGE};

// The freed blocks kept, global as the allocator itself is. A std Mutex allocates nothing.
static KEPT: Mutex<Reuse> = Mutex::new(Reuse::new());

fn kept() -> std::sync::MutexGuard<'static, Reuse> {
    // The lock guards plain bookkeeping that no panic leaves half-done.
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A block of `size` bytes (zeroed when `zeroed`): a kept block, resized when its length
/// differs, or a new mapping. Also returns the size of the kept block reused (0 for a new
/// mapping); null when the kernel refuses.
pub(super) fn alloc(size: usize, zeroed: bool) -> (*mut u8, usize) {
    let Some(b) = kept().take(size, map_len) else {
        return (map(size), 0);
    };
    let ptr = if map_len(b.size) == map_len(size) {
        b.ptr as *mut u8
    } else {
        // SAFETY: a kept block is a whole mapping of `b.size` bytes that nothing uses.
        unsafe { remap(b.ptr as *mut u8, b.size, size) }
    };
    if ptr.is_null() {
        // SAFETY: as above; the failed remap left it untouched.
        unsafe { unmap(b.ptr as *mut u8, b.size) };
        return (map(size), b.size);
    }
    if zeroed {
        // SAFETY: the block holds at least `size` writable bytes that nothing else uses.
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
    }
    (ptr, b.size)
}

/// Frees a block: kept for reuse, or unmapped. Returns the bytes unmapped (blocks evicted
/// from the kept ones included).
///
/// # Safety
/// `ptr` came from `alloc(size, _)` (or `remap(.., size)`) and is not used after.
pub(super) unsafe fn free(ptr: *mut u8, size: usize) -> usize {
    let out = kept().put(Block {
        ptr: ptr as usize,
        size,
    });
    // SAFETY: evicted blocks are whole mappings nothing uses (the caller's guarantee for
    // this one, the kept set's for the others).
    unsafe { unmap_all(&out) }
}

/// Unmaps every kept block; returns their bytes.
pub(super) fn drain() -> usize {
    let out = kept().drain();
    // SAFETY: kept blocks are whole mappings that nothing uses.
    unsafe { unmap_all(&out) }
}

/// # Safety
/// Each block is a whole mapping of its size that nothing uses.
unsafe fn unmap_all(blocks: &Evicted) -> usize {
    let mut bytes = 0;
    for b in blocks.iter().flatten() {
        // SAFETY: the caller's guarantee.
        unsafe { unmap(b.ptr as *mut u8, b.size) };
        bytes += b.size;
    }
    bytes
}

/// Asks the kernel to back the mapping's aligned 2 MiB stretches with huge pages. The whole
/// mapping is advised, not only those stretches: a part advised alone becomes a mapping
/// of its own to the kernel, and `mremap` refuses a range over two. Advice only: a failure
/// changes nothing but speed.
fn advise_huge(ptr: *mut u8, len: usize) {
    if !super::huge_pages() {
        return;
    }
    // SAFETY: the range is a whole mapping this module made (page aligned);
    // MADV_HUGEPAGE changes how its pages are backed, never their contents.
    unsafe {
        libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE);
    }
}

/// A new zeroed mapping for `size` bytes, starting on a huge page boundary when it spans
/// one (so its first stretches can be huge pages); null when the kernel refuses.
fn map(size: usize) -> *mut u8 {
    let len = map_len(size);
    // Room to slide to a 2 MiB boundary; the slack is unmapped right after.
    let slack = if len >= HUGE_PAGE {
        HUGE_PAGE - PAGE
    } else {
        0
    };
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no
    // existing memory.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + slack,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let raw = raw as usize;
    let start = if slack > 0 {
        raw.next_multiple_of(HUGE_PAGE)
    } else {
        raw
    };
    // SAFETY: the head `raw..start` and the tail past `start + len` are parts of the
    // mapping just made that nothing uses (both page aligned, possibly empty).
    unsafe {
        if start > raw {
            libc::munmap(raw as *mut libc::c_void, start - raw);
        }
        let tail = raw + len + slack - (start + len);
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
    }
    advise_huge(start as *mut u8, len);
    start as *mut u8
}

/// Unmaps a block `map` returned for `size` bytes.
///
/// # Safety
/// `ptr` came from `map(size)` (or `remap(.., size)`) and is not used after.
unsafe fn unmap(ptr: *mut u8, size: usize) {
    // SAFETY: the caller's guarantee: this is our whole mapping, no longer used.
    unsafe {
        libc::munmap(ptr.cast(), map_len(size));
    }
}

/// Grows or shrinks a mapping, moving it when needed (its bytes move with it); null when
/// the kernel refuses (the old mapping is then untouched).
///
/// # Safety
/// `ptr` came from `map(old)` (or `remap(.., old)`).
pub(super) unsafe fn remap(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
    // SAFETY: the caller's guarantee: `ptr..ptr + map_len(old)` is our whole mapping.
    let p = unsafe { libc::mremap(ptr.cast(), map_len(old), map_len(new), libc::MREMAP_MAYMOVE) };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    advise_huge(p.cast(), map_len(new));
    p.cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping holding `p`, from /proc/self/smaps.
    fn vm_flags(p: *mut u8) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let addr = p as usize;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            // A mapping's header starts with its range; its fields start with a name.
            if let Some((a, b)) = range {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(f) = line.strip_prefix("VmFlags:") {
                    return f.to_string();
                }
            }
        }
        panic!("no mapping holds {p:?}")
    }

    #[test]
    fn new_mappings_ask_for_huge_pages_until_the_process_is_tuned_for_compiling() {
        // mimalloc 3's purge delay (option 15) is 1000 ms unless tuned: another option at this
        // index would have another value.
        // SAFETY: reading an option has no preconditions.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::super::MI_OPTION_PURGE_DELAY) };
        assert!(delay == 1000 || delay == -1, "purge delay {delay}");
        let size = 5 << 20;
        let before = map(size);
        assert!(!before.is_null());
        assert!(vm_flags(before).contains(" hg"), "{}", vm_flags(before));
        super::super::tune_for_compile();
        // SAFETY: as above.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, -1, "freed memory stays with the process");
        let after = map(size);
        assert!(!after.is_null());
        assert!(!vm_flags(after).contains(" hg"), "{}", vm_flags(after));
        // SAFETY: both are whole mappings `map(size)` made, used by nothing else.
        unsafe {
            unmap(before, size);
            unmap(after, size);
        }
    }
}
