//! The command line's allocator: mimalloc for small blocks, and on Linux one private mapping
//! per large block, with transparent huge pages asked for.
//!
//! - **Small blocks: mimalloc.** glibc's malloc slows down on the millions of small allocations
//!   of a large compile (its free-list consolidation grows with the heap: a 300k-node graph
//!   took six times as long as a 100k one); mimalloc stays near-linear.
//! - **Large blocks (weights, packed panels, the activation arena): a mapping each**, unmapped
//!   when freed and grown with `mremap`. mimalloc kept about 1 MiB of every freed 9 MiB weight
//!   that a packed copy replaced (45 MiB more peak memory running BERT-base), and glibc's heap
//!   keeps freed large blocks once its mmap threshold has risen (ResNet-50 peaked 28 MiB
//!   higher). Mapped blocks are page aligned, so an activation arena starts on a cache line.
//! - **Huge pages on large blocks only** (`MADV_HUGEPAGE`; without them ResNet-50 runs about
//!   4% slower). mimalloc is built without its own advice (`no_thp`): with it, each region it
//!   purged and reused came back as a 2 MiB page zeroed whole (a 100k-node compile ran 12%
//!   slower), and half-used huge pages raised peaks (GPT-2 809 MiB, not 703; ResNet-50 245, not
//!   209). The cost: MobileNetV2, whose weights are small blocks, runs about 2.5% slower.
//! - **`--memory-limit`.** With a limit set ([`set_limit`]), the bytes allocated are counted,
//!   and an allocation that would take them over the limit ends the process with a message
//!   naming the option and the limit (exit status 1), before the kernel's out-of-memory killer
//!   would. Memory-mapped model files are not counted: the kernel can drop their pages.
//!
//! This is the one hand-written part: no allocator crate routes by size to the OS.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::OnceLock;

use mimalloc::MiMalloc;

/// Blocks at least this large (and aligned to at most a page) get their own mapping.
const LARGE_BLOCK: usize = 2 << 20;
/// The page size mappings are rounded to (the kernel rounds further on larger pages).
const PAGE: usize = 4096;
/// The huge page size of x86-64 and of most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

pub struct Allocator;

// The limit and the count are the allocator's own state, global as the allocator itself is.
/// The `--memory-limit` in bytes; 0 while none is set.
static LIMIT: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated since the limit was set, less those freed (blocks from before count when
/// freed: a slight undercount).
static IN_USE: AtomicIsize = AtomicIsize::new(0);
/// What the process is doing, for the message.
static DOING: OnceLock<String> = OnceLock::new();

/// Sets the heap limit `--memory-limit` asked for; `doing` says what the process does (for the
/// message when the limit is reached). Counting starts now.
pub fn set_limit(bytes: usize, doing: String) {
    let _ = DOING.set(doing);
    LIMIT.store(bytes.max(1), Ordering::Relaxed);
}

/// Counts `bytes` more, and ends the process when that passes the limit.
fn charge(bytes: usize) {
    let limit = LIMIT.load(Ordering::Relaxed);
    if limit == 0 {
        return;
    }
    let bytes = bytes as isize;
    let now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    if now > limit as isize {
        over_limit(limit, bytes as usize, now as usize);
    }
}

/// Counts `bytes` freed.
fn refund(bytes: usize) {
    if LIMIT.load(Ordering::Relaxed) != 0 {
        IN_USE.fetch_sub(bytes as isize, Ordering::Relaxed);
    }
}

/// A message built without allocating (the allocator is what failed).
struct StackText {
    buf: [u8; 640],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// `bytes` in the largest binary unit that keeps it at least 1 (a value and its unit).
fn readable(bytes: usize) -> (f64, &'static str) {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    (v, units[u])
}

/// Prints why and exits with status 1, allocating nothing.
fn over_limit(limit: usize, bytes: usize, total: usize) -> ! {
    use std::fmt::Write;
    let mut m = StackText {
        buf: [0; 640],
        len: 0,
    };
    let ((l, lu), (b, bu), (t, tu)) = (readable(limit), readable(bytes), readable(total));
    let _ = writeln!(
        m,
        "rge: --memory-limit {l:.1} {lu} reached while {}: allocating {b:.1} {bu} more would \
         take rge's heap to {t:.1} {tu}; raise the limit",
        DOING.get().map_or("working", String::as_str),
    );
    // SAFETY: `write` and `_exit` allocate nothing and touch no Rust state; the buffer holds
    // `len` initialized bytes.
    unsafe {
        libc::write(2, m.buf.as_ptr().cast(), m.len);
        libc::_exit(1);
    }
}

/// True when `layout`'s block is mapped (and the same for its `dealloc` and `realloc`).
fn is_mapped(layout: Layout) -> bool {
    cfg!(target_os = "linux") && layout.size() >= LARGE_BLOCK && layout.align() <= PAGE
}

/// The length of the mapping of a block of `size` bytes.
fn map_len(size: usize) -> usize {
    size.next_multiple_of(PAGE)
}

#[cfg(target_os = "linux")]
mod mapped {
    use super::{map_len, HUGE_PAGE, PAGE};

    /// Asks the kernel to back the mapping's aligned 2 MiB stretches with huge pages. The whole
    /// mapping is advised, not only those stretches: a part advised alone becomes a mapping
    /// of its own to the kernel, and `mremap` refuses a range over two. Advice only: a failure
    /// changes nothing but speed.
    fn advise_huge(ptr: *mut u8, len: usize) {
        // SAFETY: the range is a whole mapping this module made (page aligned);
        // MADV_HUGEPAGE changes how its pages are backed, never their contents.
        unsafe {
            libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE);
        }
    }

    /// A new zeroed mapping for `size` bytes, starting on a huge page boundary when it spans
    /// one (so its first stretches can be huge pages); null when the kernel refuses.
    pub(super) fn map(size: usize) -> *mut u8 {
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
    pub(super) unsafe fn unmap(ptr: *mut u8, size: usize) {
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
        let p =
            unsafe { libc::mremap(ptr.cast(), map_len(old), map_len(new), libc::MREMAP_MAYMOVE) };
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        advise_huge(p.cast(), map_len(new));
        p.cast()
    }
}

#[cfg(not(target_os = "linux"))]
mod mapped {
    // `is_mapped` is false off Linux: these are never called.
    pub(super) fn map(_: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
    pub(super) unsafe fn unmap(_: *mut u8, _: usize) {}
    pub(super) unsafe fn remap(_: *mut u8, _: usize, _: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
}

// SAFETY: a block is mapped or from mimalloc by its layout (`is_mapped`), which the caller
// passes unchanged to `dealloc` and `realloc`, so each block goes back the way it came; mapped
// blocks are page aligned (at least the layout's alignment) and zeroed; a `realloc` across the
// size boundary copies into a block of the other kind.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        if is_mapped(layout) {
            return mapped::map(layout.size());
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        if is_mapped(layout) {
            // Fresh anonymous mappings read as zero.
            return mapped::map(layout.size());
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        refund(layout.size());
        // SAFETY: `ptr` came from `alloc` with this layout, so from the same kind of block.
        unsafe {
            if is_mapped(layout) {
                mapped::unmap(ptr, layout.size())
            } else {
                MiMalloc.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size` is valid for `layout.align()`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (is_mapped(layout), is_mapped(new_layout)) {
            (false, false) => {
                charge(new_size);
                refund(layout.size());
                // SAFETY: forwarded with the caller's guarantees.
                unsafe { MiMalloc.realloc(ptr, layout, new_size) }
            }
            (true, true) => {
                charge(new_size);
                refund(layout.size());
                // SAFETY: `ptr` is a mapping of `layout.size()` bytes.
                unsafe { mapped::remap(ptr, layout.size(), new_size) }
            }
            _ => {
                // Across the boundary: a block of the other kind, the common bytes copied.
                // SAFETY: `new_layout` is valid and not zero-sized (one side is large).
                let p = unsafe { self.alloc(new_layout) };
                if !p.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and do not overlap;
                    // the old block goes back the way it came.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cross_the_size_boundary_with_their_bytes() {
        let a = Allocator;
        let small = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: valid layouts; each block is freed once with the layout it has.
        unsafe {
            let p = a.alloc(small);
            assert!(!p.is_null());
            for i in 0..1000 {
                *p.add(i) = i as u8;
            }
            let q = a.realloc(p, small, 3 << 20);
            assert!(!q.is_null());
            assert_eq!(q as usize % PAGE, 0, "mapped blocks are page aligned");
            assert!((0..1000).all(|i| *q.add(i) == i as u8));
            *q.add((3 << 20) - 1) = 7;
            let big = Layout::from_size_align(3 << 20, 8).unwrap();
            let r = a.realloc(q, big, 5 << 20);
            assert!((0..1000).all(|i| *r.add(i) == i as u8) && *r.add((3 << 20) - 1) == 7);
            let s = a.realloc(r, Layout::from_size_align(5 << 20, 8).unwrap(), 500);
            assert!((0..500).all(|i| *s.add(i) == i as u8));
            a.dealloc(s, Layout::from_size_align(500, 8).unwrap());
            let z = a.alloc_zeroed(big);
            assert!(std::slice::from_raw_parts(z, 3 << 20)
                .iter()
                .all(|&b| b == 0));
            a.dealloc(z, big);
        }
    }

    #[test]
    fn sizes_in_messages_take_the_largest_unit_above_one() {
        assert_eq!(readable(224), (224.0, "bytes"));
        assert_eq!(readable(1536), (1.5, "KiB"));
        assert_eq!(readable(8 << 20), (8.0, "MiB"));
        assert_eq!(readable(3 << 30), (3.0, "GiB"));
    }

    #[test]
    fn alignments_above_a_page_stay_with_mimalloc() {
        let a = Allocator;
        let l = Layout::from_size_align(4 << 20, 1 << 16).unwrap();
        assert!(!is_mapped(l));
        // SAFETY: a valid layout, freed once with it.
        unsafe {
            let p = a.alloc(l);
            assert_eq!(p as usize % (1 << 16), 0);
            a.dealloc(p, l);
        }
    }
}
