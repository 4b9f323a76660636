//! Element types kernels read and write as typed slices.

use std::fmt::Debug;

use half::{bf16, f16};

use crate::dtype::DType;

/// A Rust type that is the in-memory form of one [`DType`].
///
/// # Safety
/// `Self` must have the size and alignment of `DTYPE`'s element, and every byte pattern must
/// be a valid `Self` except for `bool`, whose views are checked (reads) or zeroed (fresh
/// outputs) before they are made.
pub unsafe trait Elem: Copy + Send + Sync + Debug + Default + PartialEq + 'static {
    /// The element type this Rust type stores.
    const DTYPE: DType;
}

macro_rules! elem {
    ($($t:ty => $dt:ident),*) => {
        // SAFETY: plain-old-data types whose size and alignment match their ONNX type.
        $(unsafe impl Elem for $t { const DTYPE: DType = DType::$dt; })*
    };
}

elem! {
    f32 => Float, f64 => Double, f16 => Float16, bf16 => Bfloat16,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    bool => Bool
}

/// True when `T` may view data of type `dt`: the exact type, or `u8` for every one-byte type
/// (float8 kinds, bool) so that kernels can move such bytes without knowing them.
pub fn may_view<T: Elem>(dt: DType) -> bool {
    T::DTYPE == dt || (T::DTYPE == DType::Uint8 && dt.bits() == 8)
}

/// Views bytes as elements. Errors (returns `None`) on misalignment or a length that is not a
/// multiple of the element size.
pub(crate) fn cast_slice<T: Elem>(bytes: &[u8]) -> Option<&[T]> {
    if T::DTYPE == DType::Bool && bytes.iter().any(|&b| b > 1) {
        return None;
    }
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 || (bytes.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: length and alignment checked above; every byte pattern is a valid `T`, and bool
    // bytes were checked to be 0 or 1.
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) })
}

/// Mutable counterpart of [`cast_slice`].
pub(crate) fn cast_slice_mut<T: Elem>(bytes: &mut [u8]) -> Option<&mut [T]> {
    if T::DTYPE == DType::Bool && bytes.iter().any(|&b| b > 1) {
        return None;
    }
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 || (bytes.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: as in `cast_slice`; safe code can store only valid `T`s through the slice.
    Some(unsafe {
        std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), bytes.len() / size)
    })
}

/// Views elements as bytes.
pub fn as_bytes<T: Elem>(v: &[T]) -> &[u8] {
    // SAFETY: any initialized memory may be read as bytes; `Elem` types have no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Views bytes as plain-old-data words of any width (for kernels that move elements without
/// looking at them); `None` on misalignment or a ragged length.
pub(crate) fn cast_pod<T: bytemuck::Pod>(bytes: &[u8]) -> Option<&[T]> {
    bytemuck::try_cast_slice(bytes).ok()
}

/// Mutable counterpart of [`cast_pod`].
pub(crate) fn cast_pod_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Option<&mut [T]> {
    bytemuck::try_cast_slice_mut(bytes).ok()
}
