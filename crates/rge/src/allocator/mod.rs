//! The command line's allocator: mimalloc for small blocks, and on Linux one private mapping
//! per large block, with transparent huge pages asked for.
//!
//! - **Small blocks: mimalloc.** glibc's malloc slows down on the millions of small allocations
//!   of a large compile (its free-list consolidation grows with the heap: a 300k-node graph
//!   took six times as long as a 100k one); mimalloc stays near-linear.
//! - **Large blocks (weights, packed panels, the activation arena, outputs): a mapping each**,
//!   grown with `mremap`; when freed, kept for the next large allocation (up to 64 MiB in 8
//!   blocks, `reuse.rs`: a run's large outputs get the last run's pages, with no page faults)
//!   or unmapped. mimalloc kept about 1 MiB of every freed 9 MiB weight that a packed copy
//!   replaced (45 MiB more peak memory running BERT-base), and glibc's heap keeps freed large
//!   blocks once its mmap threshold has risen (ResNet-50 peaked 28 MiB higher). Mapped blocks
//!   are page aligned, so an activation arena starts on a cache line.
//! - **Huge pages on large blocks only** (`MADV_HUGEPAGE`; without them ResNet-50 runs about
//!   4% slower). mimalloc is built without its own advice (`no_thp`): with it, each region it
//!   purged and reused came back as a 2 MiB page zeroed whole (a 100k-node compile ran 12%
//!   slower), and half-used huge pages raised peaks (GPT-2 809 MiB, not 703; ResNet-50 245, not
//!   209). The cost: MobileNetV2, whose weights are small blocks, runs about 2.5% slower.
//! - **`--memory-limit`.** With a limit set ([`set_limit`]), the bytes allocated are counted,
//!   and an allocation that would take them over the limit ends the process with a message
//!   naming the option and the limit (exit status 1), before the kernel's out-of-memory killer
//!   would. Freed blocks kept for reuse count until they are unmapped, which happens first when
//!   the limit would be passed. Memory-mapped model files are not counted: the kernel can drop
//!   their pages.
//!
//! - **A compile-only process keeps its memory and takes no huge pages** ([`tune_for_compile`],
//!   what `rge compile` calls). It runs nothing, so huge pages buy no TLB time, while on VMs
//!   whose guests hand free memory back to the host (free page reporting) a fresh huge page is
//!   expensive to touch: 7 ms per MiB here against 0.35 for small pages, since every huge page
//!   is carved from memory the host has taken back. For the same reason memory mimalloc
//!   returned to the kernel cost as much again when the next stage took it. The 1M-node DAG
//!   compiled in 34 s instead of 46–48 s (15–18 s of it in the kernel before, 4 s after), with
//!   the same peak.
//!
//! This is the one hand-written part: no allocator crate routes by size to the OS.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
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
/// Whether large blocks ask for huge pages (until [`tune_for_compile`]).
static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// mimalloc's `mi_option_purge_delay` (its `mi_option_t` value in mimalloc 3, the version built): how long
/// freed memory stays with the process before it is returned to the kernel; -1 never.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tunes the allocator for a process that compiles and runs nothing (module docs): freed
/// memory stays with the process for the next stage, and new large blocks are not advised
/// onto huge pages. Blocks mapped before keep their advice.
pub fn tune_for_compile() {
    HUGE_PAGES.store(false, Ordering::Relaxed);
    // SAFETY: mimalloc reads its options on every use and allows setting them at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// Whether new large blocks ask for huge pages.
fn huge_pages() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed)
}

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
    let mut now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    if now > limit as isize {
        // Freed blocks kept for reuse go first.
        let kept = mapped::drain() as isize;
        now = IN_USE.fetch_sub(kept, Ordering::Relaxed) - kept;
    }
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
mod mapped;
#[cfg(target_os = "linux")]
mod reuse;

#[cfg(not(target_os = "linux"))]
mod mapped {
    // `is_mapped` is false off Linux: these are never called.
    pub(super) fn alloc(_: usize, _: bool) -> (*mut u8, usize) {
        (std::ptr::null_mut(), 0)
    }
    pub(super) unsafe fn free(_: *mut u8, _: usize) -> usize {
        0
    }
    pub(super) fn drain() -> usize {
        0
    }
    pub(super) unsafe fn remap(_: *mut u8, _: usize, _: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
}

/// A counted block for `layout`, zeroed when `zeroed`: mapped (a kept one reused) or mimalloc's.
///
/// # Safety
/// As `GlobalAlloc::alloc`: `layout` has a non-zero size.
unsafe fn alloc_block(layout: Layout, zeroed: bool) -> *mut u8 {
    charge(layout.size());
    if is_mapped(layout) {
        let (p, reused) = mapped::alloc(layout.size(), zeroed);
        refund(reused);
        return p;
    }
    // SAFETY: the caller's guarantees.
    unsafe {
        if zeroed {
            MiMalloc.alloc_zeroed(layout)
        } else {
            MiMalloc.alloc(layout)
        }
    }
}

// SAFETY: a block is mapped or from mimalloc by its layout (`is_mapped`), which the caller
// passes unchanged to `dealloc` and `realloc`, so each block goes back the way it came; mapped
// blocks are page aligned (at least the layout's alignment) and zeroed for `alloc_zeroed`
// (fresh mappings read as zero, reused ones are cleared); a `realloc` across the size boundary
// copies into a block of the other kind.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { alloc_block(layout, false) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { alloc_block(layout, true) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout, so from the same kind of block.
        unsafe {
            if is_mapped(layout) {
                // A kept block still counts (it is still memory); what is unmapped does not.
                refund(mapped::free(ptr, layout.size()));
            } else {
                refund(layout.size());
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
    fn a_freed_large_block_serves_the_next_one_of_its_size_cleared_when_asked() {
        let a = Allocator;
        // 40 MiB: no other test asks for a size this block would serve.
        let l = Layout::from_size_align(40 << 20, 64).unwrap();
        // SAFETY: a valid layout; each block is freed once with it.
        unsafe {
            let p = a.alloc(l);
            std::ptr::write_bytes(p, 0xAB, l.size());
            a.dealloc(p, l);
            let q = a.alloc(l);
            assert_eq!(q, p, "the kept mapping is reused");
            assert_eq!(*q.add(l.size() - 1), 0xAB, "not cleared for alloc");
            a.dealloc(q, l);
            let z = a.alloc_zeroed(l);
            assert!(std::slice::from_raw_parts(z, l.size())
                .iter()
                .all(|&b| b == 0));
            // A smaller block within half its size reuses it too, shrunk.
            let half = Layout::from_size_align(24 << 20, 64).unwrap();
            a.dealloc(z, l);
            let h = a.alloc(half);
            assert_eq!(h, z, "shrunk in place");
            *h.add(half.size() - 1) = 1;
            a.dealloc(h, half);
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
