//! Element types kernels read and write as typed slices.

use std::fmt::Debug;

use half::{bf16, f16};

use crate::dtype::DType;

/// A Rust type that is the in-memory form of one [`DType`].
///
/// # Safety
/// `Self` must have the size and alignment of `DTYPE`'s element and every byte pattern a
/// buffer of that type may hold must be a valid `Self` (buffers of `bool` hold only 0 or 1:
/// every constructor of bool data validates it).
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
    T::DTYPE == dt || (T::DTYPE == DType::Uint8 && dt.bits() == 8 && dt != DType::Bool)
}

/// Views bytes as elements. Errors (returns `None`) on misalignment or a length that is not a
/// multiple of the element size.
pub(crate) fn cast_slice<T: Elem>(bytes: &[u8]) -> Option<&[T]> {
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 || (bytes.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: length and alignment checked above; `Elem` guarantees every stored pattern is
    // valid for `T` (bool buffers are validated on construction).
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) })
}

/// Mutable counterpart of [`cast_slice`].
pub(crate) fn cast_slice_mut<T: Elem>(bytes: &mut [u8]) -> Option<&mut [T]> {
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 || (bytes.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: as in `cast_slice`; the caller writes only valid `T`s, which keeps the buffer
    // valid for its type (a bool slice written through `&mut [bool]` holds only 0 and 1).
    Some(unsafe {
        std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), bytes.len() / size)
    })
}

/// Views elements as bytes.
pub fn as_bytes<T: Elem>(v: &[T]) -> &[u8] {
    // SAFETY: any initialized memory may be read as bytes; `Elem` types have no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}
