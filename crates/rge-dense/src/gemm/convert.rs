//! f16 / bf16 operands: converted to f32 before the GEMM (with F16C where `half` detects it).

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use super::GemmError;

/// Widens `src` into `dst` (same length).
pub fn f16_to_f32(src: &[f16], dst: &mut [f32]) -> Result<(), GemmError> {
    if src.len() != dst.len() {
        return Err(GemmError::LenMismatch {
            src: src.len(),
            dst: dst.len(),
        });
    }
    src.convert_to_f32_slice(dst);
    Ok(())
}

/// Widens `src` into `dst` (same length).
pub fn bf16_to_f32(src: &[bf16], dst: &mut [f32]) -> Result<(), GemmError> {
    if src.len() != dst.len() {
        return Err(GemmError::LenMismatch {
            src: src.len(),
            dst: dst.len(),
        });
    }
    src.convert_to_f32_slice(dst);
    Ok(())
}
