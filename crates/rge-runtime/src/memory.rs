//! Memory spaces at run time: each space other than the host's has an allocator of its own,
//! which hands out the arena the space's memory plan sized for one run. The host space's
//! arena is the runtime's own (pooled across runs).

use std::fmt;
use std::sync::Arc;

use rge_kernels::MemSpace;

/// The allocator of one memory space.
pub trait SpaceAllocator: Send + Sync {
    /// The space it allocates in.
    fn space(&self) -> MemSpace;
    /// An arena of at least `bytes` bytes, zeroed, 16-byte aligned, for one run.
    fn alloc_arena(&self, bytes: usize) -> Vec<u128>;
    /// Takes back an arena `alloc_arena` returned.
    fn free_arena(&self, arena: Vec<u128>);
}

impl fmt::Debug for dyn SpaceAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpaceAllocator({})", self.space())
    }
}

/// One non-host space of a program: its allocator and the arena its plan needs.
#[derive(Debug, Clone)]
pub struct SpacePlan {
    pub space: MemSpace,
    pub allocator: Arc<dyn SpaceAllocator>,
    /// The planned arena of one run.
    pub arena_bytes: usize,
    /// The largest total of its buffers alive at one step.
    pub lower_bound: usize,
}
