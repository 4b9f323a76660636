//! Constant: value, value_float(s), value_int(s), value_string(s) and sparse_value.

use rge_ir::AttrValue;
use rge_kernels::{
    tensor_from_ir, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor,
};

use crate::elems::copy_to_output;
use crate::util::{count, dims};

struct Constant {
    value: Tensor,
}

impl Kernel for Constant {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = self.value.shape().to_vec();
        copy_to_output(ctx, 0, self.value.view(), &shape)
    }
}

/// The dense tensor of a sparse one: `values` at `indices` (linear `[nnz]` or `[nnz, rank]`),
/// zero elsewhere.
pub(crate) fn densify(values: &Tensor, indices: &Tensor, shape: &[usize]) -> KernelResult<Tensor> {
    let n = count(shape)?;
    let nnz = values.len();
    let ind = indices.view().to_i64_vec()?;
    let linear: Vec<usize> = if indices.shape().len() == 1 && ind.len() == nnz {
        ind.iter()
            .map(|&i| usize::try_from(i).ok().filter(|&i| i < n))
            .collect::<Option<_>>()
            .ok_or_else(|| KernelError::invalid("sparse index out of range"))?
    } else if indices.shape() == [nnz, shape.len()] {
        let st = rge_kernels::shape_util::strides(shape);
        ind.chunks(shape.len().max(1))
            .take(nnz)
            .map(|tuple| {
                tuple
                    .iter()
                    .zip(shape)
                    .zip(&st)
                    .try_fold(0usize, |acc, ((&i, &d), &s)| {
                        usize::try_from(i)
                            .ok()
                            .filter(|&i| i < d)
                            .map(|i| acc + i * s)
                    })
            })
            .collect::<Option<_>>()
            .ok_or_else(|| KernelError::invalid("sparse index out of range"))?
    } else {
        return Err(KernelError::invalid(format!(
            "sparse indices {:?} do not fit {nnz} values of shape {shape:?}",
            indices.shape()
        )));
    };
    let dt = values.dtype();
    if dt.is_string() {
        let mut out = vec![String::new(); n];
        for (&p, v) in linear.iter().zip(values.view().as_strings()?) {
            out[p] = v.clone();
        }
        return Tensor::from_strings(shape, out);
    }
    if dt.bits() % 8 != 0 {
        return Err(KernelError::unsupported(format!("sparse {dt} constants")));
    }
    let size = dt.bits() as usize / 8;
    let src = values.view().bytes()?;
    let mut out = vec![0u8; n * size];
    for (k, &p) in linear.iter().enumerate() {
        out[p * size..(p + 1) * size].copy_from_slice(&src[k * size..(k + 1) * size]);
    }
    Tensor::from_bytes(dt, shape, &out)
}

fn sparse(init: &KernelInit<'_>) -> KernelResult<Option<Tensor>> {
    let Some(v) = init.attrs.get("sparse_value") else {
        return Ok(None);
    };
    let AttrValue::NamedAttrs(na) = v else {
        return Err(KernelError::attr("sparse_value", "not a sparse tensor"));
    };
    let get = |name: &str| -> KernelResult<Tensor> {
        match na.attrs.get(name) {
            Some(AttrValue::Tensor(t)) => tensor_from_ir(t),
            _ => Err(KernelError::attr(
                "sparse_value",
                format!("no {name} tensor"),
            )),
        }
    };
    let shape = match na.attrs.get("dims") {
        Some(AttrValue::ListInt(d)) => dims(d)?,
        _ => return Err(KernelError::attr("sparse_value", "no dims")),
    };
    densify(&get("values")?, &get("indices")?, &shape).map(Some)
}

pub(crate) fn constant(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let value = if let Some(t) = init.tensor_opt("value")? {
        t
    } else if let Some(t) = sparse(init)? {
        t
    } else if let Some(v) = init.float_opt("value_float")? {
        Tensor::scalar(v)
    } else if let Some(v) = init.floats_opt("value_floats")? {
        Tensor::from_slice(&[v.len()], v)?
    } else if let Some(v) = init.int_opt("value_int")? {
        Tensor::scalar(v)
    } else if let Some(v) = init.ints_opt("value_ints")? {
        Tensor::from_slice(&[v.len()], v)?
    } else if let Some(v) = init.str_opt("value_string")? {
        Tensor::from_strings(&[], vec![v.to_string()])?
    } else if let Some(v) = init.strings_opt("value_strings")? {
        Tensor::from_strings(&[v.len()], v.to_vec())?
    } else {
        return Err(KernelError::attr(
            "value",
            "Constant has no value attribute",
        ));
    };
    Ok(Box::new(Constant { value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densify_both_index_forms() {
        let vals = Tensor::from_vec(&[2], vec![5i32, 7]).unwrap();
        let lin = Tensor::from_vec(&[2], vec![1i64, 3]).unwrap();
        let d = densify(&vals, &lin, &[2, 2]).unwrap();
        assert_eq!(d.as_slice::<i32>().unwrap(), &[0, 5, 0, 7]);
        let coo = Tensor::from_vec(&[2, 2], vec![0i64, 1, 1, 1]).unwrap();
        let d = densify(&vals, &coo, &[2, 2]).unwrap();
        assert_eq!(d.as_slice::<i32>().unwrap(), &[0, 5, 0, 7]);
        let bad = Tensor::from_vec(&[2], vec![1i64, 9]).unwrap();
        assert!(densify(&vals, &bad, &[2, 2]).is_err());
    }
}
