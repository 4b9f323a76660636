//! The reductions of GE's collectives (sum, prod, max, min) over raw element bytes, for every
//! numeric dtype the collective ops take. The in-process backend reduces with these; the MPI
//! backend uses MPI's own operations and these only for the 16-bit floats MPI has no type for.

use rge_kernels::{bf16, f16, DType};

use crate::error::{CommError, CommResult};

/// A reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

impl ReduceOp {
    /// The op GE's `reduction` attribute names.
    pub fn parse(s: &str) -> Option<ReduceOp> {
        Some(match s {
            "sum" => ReduceOp::Sum,
            "prod" => ReduceOp::Prod,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            _ => return None,
        })
    }

    /// GE's name of the op.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

macro_rules! fold_elems {
    ($t:ty, $acc:expr, $x:expr, $op:expr, $from:expr, $to:expr, $add:expr, $mul:expr, $max:expr, $min:expr) => {{
        const W: usize = std::mem::size_of::<$t>();
        let f: fn($t, $t) -> $t = match $op {
            ReduceOp::Sum => $add,
            ReduceOp::Prod => $mul,
            ReduceOp::Max => $max,
            ReduceOp::Min => $min,
        };
        for (a, b) in $acc.chunks_exact_mut(W).zip($x.chunks_exact(W)) {
            let (Ok(ab), Ok(bb)) = (<[u8; W]>::try_from(&*a), <[u8; W]>::try_from(b)) else {
                continue;
            };
            let r = f($from(ab), $from(bb));
            a.copy_from_slice(&$to(r));
        }
    }};
}

macro_rules! fold_int {
    ($t:ty, $acc:expr, $x:expr, $op:expr) => {
        fold_elems!(
            $t,
            $acc,
            $x,
            $op,
            <$t>::from_ne_bytes,
            <$t>::to_ne_bytes,
            |a: $t, b: $t| a.wrapping_add(b),
            |a: $t, b: $t| a.wrapping_mul(b),
            |a: $t, b: $t| a.max(b),
            |a: $t, b: $t| a.min(b)
        )
    };
}

macro_rules! fold_float {
    ($t:ty, $acc:expr, $x:expr, $op:expr) => {
        fold_elems!(
            $t,
            $acc,
            $x,
            $op,
            <$t>::from_ne_bytes,
            <$t>::to_ne_bytes,
            |a: $t, b: $t| a + b,
            |a: $t, b: $t| a * b,
            |a: $t, b: $t| a.max(b),
            |a: $t, b: $t| a.min(b)
        )
    };
}

macro_rules! fold_half {
    ($t:ty, $acc:expr, $x:expr, $op:expr) => {
        fold_elems!(
            $t,
            $acc,
            $x,
            $op,
            |b: [u8; 2]| <$t>::from_bits(u16::from_ne_bytes(b)),
            |v: $t| v.to_bits().to_ne_bytes(),
            |a: $t, b: $t| <$t>::from_f32(a.to_f32() + b.to_f32()),
            |a: $t, b: $t| <$t>::from_f32(a.to_f32() * b.to_f32()),
            |a: $t, b: $t| <$t>::from_f32(a.to_f32().max(b.to_f32())),
            |a: $t, b: $t| <$t>::from_f32(a.to_f32().min(b.to_f32()))
        )
    };
}

/// True when `dtype` can be reduced.
pub fn reducible(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::Float
            | DType::Double
            | DType::Float16
            | DType::Bfloat16
            | DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::Uint8
            | DType::Uint16
            | DType::Uint32
            | DType::Uint64
    )
}

/// `acc[i] = op(acc[i], x[i])` for every element of `dtype` (integers wrap, as MPI's do).
pub fn reduce_into(acc: &mut [u8], x: &[u8], dtype: DType, op: ReduceOp) -> CommResult<()> {
    if acc.len() != x.len() {
        return Err(CommError::Invalid(format!(
            "reduction of {} bytes with {} bytes",
            acc.len(),
            x.len()
        )));
    }
    match dtype {
        DType::Float => fold_float!(f32, acc, x, op),
        DType::Double => fold_float!(f64, acc, x, op),
        DType::Float16 => fold_half!(f16, acc, x, op),
        DType::Bfloat16 => fold_half!(bf16, acc, x, op),
        DType::Int8 => fold_int!(i8, acc, x, op),
        DType::Int16 => fold_int!(i16, acc, x, op),
        DType::Int32 => fold_int!(i32, acc, x, op),
        DType::Int64 => fold_int!(i64, acc, x, op),
        DType::Uint8 => fold_int!(u8, acc, x, op),
        DType::Uint16 => fold_int!(u16, acc, x, op),
        DType::Uint32 => fold_int!(u32, acc, x, op),
        DType::Uint64 => fold_int!(u64, acc, x, op),
        other => {
            return Err(CommError::Invalid(format!(
                "{other} tensors cannot be reduced"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_on_floats_and_ints() {
        let a: Vec<u8> = bytemuck::cast_slice(&[1.0f32, -2.0, 3.0]).to_vec();
        let b: Vec<u8> = bytemuck::cast_slice(&[4.0f32, 5.0, -6.0]).to_vec();
        for (op, want) in [
            (ReduceOp::Sum, [5.0f32, 3.0, -3.0]),
            (ReduceOp::Prod, [4.0, -10.0, -18.0]),
            (ReduceOp::Max, [4.0, 5.0, 3.0]),
            (ReduceOp::Min, [1.0, -2.0, -6.0]),
        ] {
            let mut acc = a.clone();
            reduce_into(&mut acc, &b, DType::Float, op).unwrap();
            let got: &[f32] = bytemuck::cast_slice(&acc);
            assert_eq!(got, want, "{op:?}");
        }
        let mut acc: Vec<u8> = bytemuck::cast_slice(&[i64::MAX, 7]).to_vec();
        let x: Vec<u8> = bytemuck::cast_slice(&[1i64, -9]).to_vec();
        reduce_into(&mut acc, &x, DType::Int64, ReduceOp::Sum).unwrap();
        let got: &[i64] = bytemuck::cast_slice(&acc);
        assert_eq!(got, [i64::MIN, -2]);
    }

    #[test]
    fn halves_reduce_through_f32() {
        let h = |v: f32| f16::from_f32(v).to_bits().to_ne_bytes();
        let mut acc = [h(1.5), h(2.0)].concat();
        let x = [h(0.25), h(-3.0)].concat();
        reduce_into(&mut acc, &x, DType::Float16, ReduceOp::Sum).unwrap();
        assert_eq!(acc, [h(1.75), h(-1.0)].concat());
    }

    #[test]
    fn strings_and_bools_are_refused() {
        let mut acc = vec![1u8];
        assert!(reduce_into(&mut acc, &[0], DType::Bool, ReduceOp::Max).is_err());
    }
}
