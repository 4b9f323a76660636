//! An output's base pointer shared by parallel tasks that each write their own, disjoint
//! elements: the GEMM's rectangles of C, TransData's bands, the direct convolution's pixels or
//! channel blocks.

/// The base pointer of an output that the tasks of one call share.
#[derive(Clone, Copy)]
pub(crate) struct SharedOut(pub *mut f32);
// SAFETY: every user's tasks write disjoint elements through it, and the `&mut [f32]` it was
// taken from stays borrowed until they have all finished.
unsafe impl Send for SharedOut {}
// SAFETY: as above.
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// The pointer. A method, not the field: a closure that reads `.0` captures the bare
    /// pointer, which is neither `Send` nor `Sync`.
    pub(crate) fn ptr(self) -> *mut f32 {
        self.0
    }

    /// The pointer `n` floats further.
    ///
    /// # Safety
    /// As `pointer::add`: the result must stay inside the output's allocation.
    pub(crate) unsafe fn add(self, n: usize) -> SharedOut {
        // SAFETY: the caller's contract.
        SharedOut(unsafe { self.0.add(n) })
    }
}
