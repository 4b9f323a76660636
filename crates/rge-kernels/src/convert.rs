//! Runtime tensors ↔ rge-ir tensors (weights, constants, attribute tensors).
//!
//! rge-ir keeps strings in GE's layout (16-byte heads of offset and length, then the bytes);
//! runtime tensors keep them as `String`s.

use rge_ir::{Format, Shape, TensorDesc};

use crate::dtype::DType;
use crate::error::{KernelError, KernelResult};
use crate::tensor::{Tensor, TensorData};

/// A runtime tensor from an IR tensor: its bytes shared when they are 16-byte aligned (import
/// aligns large weights), else copied into aligned memory.
pub fn tensor_from_ir(t: &rge_ir::Tensor) -> KernelResult<Tensor> {
    let dtype = DType::from_desc(&t.desc).ok_or_else(|| {
        KernelError::unsupported(format!(
            "tensor type {} has no runtime type",
            t.desc.dtype()
        ))
    })?;
    let dims = t
        .desc
        .shape()
        .dims()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| {
            KernelError::invalid(format!("tensor shape {} is not known", t.desc.shape()))
        })?;
    if dtype.is_string() {
        let n: usize = dims.iter().product();
        return Tensor::from_strings(&dims, decode_ge_strings(&t.data, n)?);
    }
    Tensor::from_shared_bytes(dtype, &dims, t.data.clone())
}

/// An IR tensor (format ND) from a runtime tensor.
pub fn tensor_to_ir(t: &Tensor) -> rge_ir::Tensor {
    let dims: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    let desc = TensorDesc::new(Shape::from_slice(&dims), t.dtype().to_ir(), Format::ND);
    let data = match t.data() {
        TensorData::Bytes(b) => b.as_slice().to_vec(),
        TensorData::Strings(s) => rge_ir::string_data::encode_strings(s),
    };
    rge_ir::Tensor::new(desc, data)
}

fn decode_ge_strings(data: &[u8], n: usize) -> KernelResult<Vec<String>> {
    Ok(rge_ir::string_data::string_ranges(data, n)
        .map_err(KernelError::invalid)?
        .into_iter()
        .map(|r| String::from_utf8_lossy(&data[r]).into_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_numbers_strings_and_onnx_only_types() {
        let t = Tensor::from_vec(&[2], vec![1.5f32, -2.0]).unwrap();
        assert_eq!(tensor_from_ir(&tensor_to_ir(&t)).unwrap(), t);
        let s = Tensor::from_strings(&[2], vec!["a".into(), "bc".into()]).unwrap();
        assert_eq!(tensor_from_ir(&tensor_to_ir(&s)).unwrap(), s);
        let f8 = Tensor::from_vec(&[1], vec![3u8])
            .unwrap()
            .with_dtype(DType::Float8E5M2Fnuz)
            .unwrap();
        let ir = tensor_to_ir(&f8);
        assert_eq!(ir.desc.dtype(), rge_ir::DataType::Float8E5M2Fnuz);
        assert!(ir.desc.attrs().is_empty());
        assert_eq!(tensor_from_ir(&ir).unwrap(), f8);
        let u4 = Tensor::from_bytes(DType::Uint4, &[3], &[0x21, 0x0f]).unwrap();
        assert_eq!(tensor_to_ir(&u4).desc.dtype(), rge_ir::DataType::Uint4);
        assert_eq!(tensor_from_ir(&tensor_to_ir(&u4)).unwrap(), u4);
    }
}
