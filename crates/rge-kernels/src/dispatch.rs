//! Typed dispatch: run generic code for the Rust type of a runtime [`DType`](crate::DType).
//!
//! ```ignore
//! dispatch_float!(x.dtype(), T => relu::<T>(ctx, x))
//! ```
//! Each macro evaluates to the body's value for a matching type and to
//! `Err(KernelError::Unsupported)` otherwise, so the body must be a `KernelResult`.

/// Dispatch over an explicit list of `Variant: RustType` pairs.
#[macro_export]
macro_rules! dispatch_types {
    ($dt:expr, $T:ident => $body:expr; $($variant:ident : $ty:ty),+ $(,)?) => {{
        match $dt {
            $($crate::DType::$variant => {
                #[allow(dead_code)]
                type $T = $ty;
                $body
            })+
            #[allow(unreachable_patterns)]
            other => Err($crate::KernelError::unsupported(format!("data type {other}"))),
        }
    }};
}

/// Dispatch over float, double, float16 and bfloat16.
#[macro_export]
macro_rules! dispatch_float {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::dispatch_types!($dt, $T => $body;
            Float: f32, Double: f64, Float16: $crate::f16, Bfloat16: $crate::bf16)
    };
}

/// Dispatch over the eight integer types of at least one byte.
#[macro_export]
macro_rules! dispatch_int {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::dispatch_types!($dt, $T => $body;
            Int8: i8, Int16: i16, Int32: i32, Int64: i64,
            Uint8: u8, Uint16: u16, Uint32: u32, Uint64: u64)
    };
}

/// Dispatch over every real numeric type (floats and integers).
#[macro_export]
macro_rules! dispatch_numeric {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::dispatch_types!($dt, $T => $body;
            Float: f32, Double: f64, Float16: $crate::f16, Bfloat16: $crate::bf16,
            Int8: i8, Int16: i16, Int32: i32, Int64: i64,
            Uint8: u8, Uint16: u16, Uint32: u32, Uint64: u64)
    };
}

/// Dispatch over every numeric type and bool.
#[macro_export]
macro_rules! dispatch_numeric_bool {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::dispatch_types!($dt, $T => $body;
            Float: f32, Double: f64, Float16: $crate::f16, Bfloat16: $crate::bf16,
            Int8: i8, Int16: i16, Int32: i32, Int64: i64,
            Uint8: u8, Uint16: u16, Uint32: u32, Uint64: u64, Bool: bool)
    };
}

/// Dispatch by element size only, for kernels that move elements without looking at them
/// (Transpose, Gather, Concat …): `T` is `u8`, `u16`, `u32`, `u64` or `u128`. Sub-byte types
/// and strings are not covered.
#[macro_export]
macro_rules! dispatch_by_size {
    ($dt:expr, $T:ident => $body:expr) => {{
        match $dt.bits() {
            8 => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
            16 => {
                #[allow(dead_code)]
                type $T = u16;
                $body
            }
            32 => {
                #[allow(dead_code)]
                type $T = u32;
                $body
            }
            64 => {
                #[allow(dead_code)]
                type $T = u64;
                $body
            }
            128 => {
                #[allow(dead_code)]
                type $T = u128;
                $body
            }
            _ => Err($crate::KernelError::unsupported(format!(
                "data type {}",
                $dt
            ))),
        }
    }};
}
