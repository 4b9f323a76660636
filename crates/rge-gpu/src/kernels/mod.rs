//! The gpu engine's kernels, by family.

pub mod attention;
pub mod cast;
pub mod conv;
pub mod copy;
pub mod epilogue;
pub mod gather;
pub mod map;
pub mod matmul;
pub mod pool;
pub mod reduce;
pub mod resize;
pub mod rows;
pub mod strided;
pub mod tile;
pub mod transfer;
pub mod window;
