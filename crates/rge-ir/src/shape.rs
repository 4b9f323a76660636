//! Tensor shapes (`ge::GeShape`) and shape ranges.
//!
//! Conventions (reference §1.2 ShapeDef): no dims is a scalar, a lone dim of -2 is an
//! unknown rank, -1 marks an unknown dim.

use std::fmt;

use smallvec::SmallVec;

use crate::dtype::DataType;
use crate::error::{IrError, Result};

/// A dim whose size is unknown.
pub const UNKNOWN_DIM: i64 = -1;
/// The lone dim of a shape whose rank is unknown.
pub const UNKNOWN_RANK: i64 = -2;

/// A tensor shape; dims of rank ≤ 4 are stored inline.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Shape {
    dims: SmallVec<[i64; 4]>,
}

impl Shape {
    /// A shape with the given dims.
    pub fn new(dims: impl IntoIterator<Item = i64>) -> Self {
        Shape {
            dims: dims.into_iter().collect(),
        }
    }

    /// A shape with the given dims.
    pub fn from_slice(dims: &[i64]) -> Self {
        Shape {
            dims: SmallVec::from_slice(dims),
        }
    }

    /// The scalar shape (no dims).
    pub fn scalar() -> Self {
        Shape::default()
    }

    /// The unknown-rank shape `[-2]`.
    pub fn unknown_rank() -> Self {
        Shape::from_slice(&[UNKNOWN_RANK])
    }

    /// The dims.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The dims, mutable.
    pub fn dims_mut(&mut self) -> &mut [i64] {
        &mut self.dims
    }

    /// Replaces all dims.
    pub fn set_dims(&mut self, dims: impl IntoIterator<Item = i64>) {
        self.dims.clear();
        self.dims.extend(dims);
    }

    /// The rank, `None` for an unknown rank.
    pub fn rank(&self) -> Option<usize> {
        if self.is_unknown_rank() {
            None
        } else {
            Some(self.dims.len())
        }
    }

    /// Dim `i`, if there is one.
    pub fn dim(&self, i: usize) -> Option<i64> {
        self.dims.get(i).copied()
    }

    /// Sets dim `i`; errors if `i` is out of range.
    pub fn set_dim(&mut self, i: usize, v: i64) -> Result<()> {
        if i >= self.dims.len() {
            return Err(IrError::Invalid {
                what: "dim index",
                value: format!("{i} (shape {self} has rank {})", self.dims.len()),
            });
        }
        self.dims[i] = v;
        Ok(())
    }

    /// True for the scalar shape (no dims).
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }

    /// True if any dim is -2 (unknown rank).
    pub fn is_unknown_rank(&self) -> bool {
        self.dims.contains(&UNKNOWN_RANK)
    }

    /// True if any dim is -1 or -2.
    pub fn is_unknown(&self) -> bool {
        self.dims
            .iter()
            .any(|&d| d == UNKNOWN_DIM || d == UNKNOWN_RANK)
    }

    /// True if every dim is known (≥ 0).
    pub fn is_fully_known(&self) -> bool {
        self.dims.iter().all(|&d| d >= 0)
    }

    /// Checks that every dim is ≥ 0 or -1, or that the shape is exactly `[-2]`.
    pub fn validate(&self) -> Result<()> {
        for (i, &d) in self.dims.iter().enumerate() {
            let ok = d >= 0 || d == UNKNOWN_DIM || (d == UNKNOWN_RANK && self.dims.len() == 1);
            if !ok {
                return Err(IrError::Invalid {
                    what: "shape",
                    value: format!("{self}: dim {i} is {d}"),
                });
            }
        }
        Ok(())
    }

    /// The element count (1 for a scalar), `None` if the shape is not fully known;
    /// errors on overflow.
    pub fn element_count(&self) -> Result<Option<i64>> {
        if !self.is_fully_known() {
            return Ok(None);
        }
        let mut n: i64 = 1;
        for &d in &self.dims {
            n = n.checked_mul(d).ok_or_else(|| IrError::Overflow {
                what: format!("element count of shape {self}"),
            })?;
        }
        Ok(Some(n))
    }

    /// The data size in bytes for elements of `dt` (sub-byte types packed, rounded up);
    /// `None` if the shape is not fully known or `dt` has no fixed size; errors on overflow.
    pub fn byte_size(&self, dt: DataType) -> Result<Option<i64>> {
        let (Some(count), Some(bits)) = (self.element_count()?, dt.bits()) else {
            return Ok(None);
        };
        let overflow = || IrError::Overflow {
            what: format!("byte size of {dt} tensor of shape {self}"),
        };
        let bits = i64::from(bits);
        if bits % 8 == 0 {
            count.checked_mul(bits / 8).map(Some).ok_or_else(overflow)
        } else {
            let total = count.checked_mul(bits).ok_or_else(overflow)?;
            Ok(Some(total / 8 + i64::from(total % 8 != 0)))
        }
    }
}

impl From<Vec<i64>> for Shape {
    fn from(v: Vec<i64>) -> Self {
        Shape::new(v)
    }
}

impl From<&[i64]> for Shape {
    fn from(v: &[i64]) -> Self {
        Shape::from_slice(v)
    }
}

impl<const N: usize> From<[i64; N]> for Shape {
    fn from(v: [i64; N]) -> Self {
        Shape::from_slice(&v)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Per-dim `(min, max)` ranges of a dynamic shape; a max of -1 means unbounded.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ShapeRange(pub Vec<(i64, i64)>);

impl ShapeRange {
    /// A range with one `(min, max)` pair per dim.
    pub fn new(ranges: Vec<(i64, i64)>) -> Self {
        ShapeRange(ranges)
    }

    /// True if no range is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of dims covered.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if `shape` has the same rank and every known dim lies in its range.
    /// Unknown (-1) dims match any range; an unknown-rank shape is never contained.
    pub fn contains(&self, shape: &Shape) -> bool {
        if shape.is_unknown_rank() || shape.dims().len() != self.0.len() {
            return false;
        }
        shape
            .dims()
            .iter()
            .zip(&self.0)
            .all(|(&d, &(lo, hi))| d == UNKNOWN_DIM || (d >= lo && (hi == -1 || d <= hi)))
    }

    /// Checks that every min is ≥ 0 and every max is -1 or ≥ min.
    pub fn validate(&self) -> Result<()> {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            if lo < 0 || (hi != -1 && hi < lo) {
                return Err(IrError::Invalid {
                    what: "shape range",
                    value: format!("{self}: range {i} is ({lo}, {hi})"),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for ShapeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, (lo, hi)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{lo}~{hi}")?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        let s = Shape::new([1, 3, -1]);
        assert_eq!(s.dims(), &[1, 3, -1]);
        assert_eq!(s.rank(), Some(3));
        assert_eq!(s.dim(1), Some(3));
        assert_eq!(s.dim(3), None);
        assert!(s.is_unknown() && !s.is_unknown_rank() && !s.is_fully_known());
        assert_eq!(s.to_string(), "[1,3,-1]");
        assert_eq!(Shape::scalar().to_string(), "[]");
        assert_eq!(Shape::default(), Shape::scalar());
        assert!(Shape::scalar().is_scalar());
        assert_eq!(Shape::scalar().rank(), Some(0));
        let u = Shape::unknown_rank();
        assert_eq!(u.to_string(), "[-2]");
        assert_eq!(u.rank(), None);
        assert!(u.is_unknown_rank() && u.is_unknown());
        let mut t = Shape::from_slice(&[2, 2]);
        t.set_dim(1, 5).unwrap();
        assert_eq!(t.dims(), &[2, 5]);
        assert!(t.set_dim(2, 1).is_err());
        t.dims_mut()[0] = 7;
        assert_eq!(t, Shape::from([7, 5]));
        t.set_dims([1, 2, 3, 4, 5]);
        assert_eq!(t.rank(), Some(5));
        assert_eq!(Shape::from(vec![1, 2]), Shape::new([1, 2]));
    }

    #[test]
    fn validate() {
        assert!(Shape::new([0, 1, -1]).validate().is_ok());
        assert!(Shape::unknown_rank().validate().is_ok());
        assert!(Shape::scalar().validate().is_ok());
        let e = Shape::new([1, -3]).validate().unwrap_err();
        assert!(e.to_string().contains("dim 1 is -3"), "{e}");
        assert!(Shape::new([-2, 3]).validate().is_err());
        assert!(Shape::new([3, -2]).validate().is_err());
    }

    #[test]
    fn element_count_and_overflow() {
        assert_eq!(Shape::scalar().element_count().unwrap(), Some(1));
        assert_eq!(Shape::new([2, 3, 4]).element_count().unwrap(), Some(24));
        assert_eq!(Shape::new([2, 0, 4]).element_count().unwrap(), Some(0));
        assert_eq!(Shape::new([2, -1]).element_count().unwrap(), None);
        assert_eq!(Shape::unknown_rank().element_count().unwrap(), None);
        let e = Shape::new([i64::MAX, 2]).element_count().unwrap_err();
        assert!(matches!(e, IrError::Overflow { .. }));
        assert!(Shape::new([i64::MAX / 2, 4])
            .byte_size(DataType::Int8)
            .is_err());
        assert!(Shape::new([i64::MAX / 2])
            .byte_size(DataType::Float)
            .is_err());
        assert!(Shape::new([i64::MAX / 2])
            .byte_size(DataType::Int4)
            .is_err());
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(Shape::new([3]).byte_size(DataType::Int4).unwrap(), Some(2));
        assert_eq!(Shape::new([4]).byte_size(DataType::Int4).unwrap(), Some(2));
        assert_eq!(Shape::new([9]).byte_size(DataType::Uint1).unwrap(), Some(2));
        assert_eq!(
            Shape::new([4]).byte_size(DataType::Float6E3M2).unwrap(),
            Some(3)
        );
        assert_eq!(
            Shape::new([2, 3]).byte_size(DataType::Float).unwrap(),
            Some(24)
        );
        assert_eq!(Shape::scalar().byte_size(DataType::Int64).unwrap(), Some(8));
        assert_eq!(
            Shape::new([2]).byte_size(DataType::String).unwrap(),
            Some(32)
        );
        assert_eq!(
            Shape::new([2]).byte_size(DataType::Undefined).unwrap(),
            None
        );
        assert_eq!(Shape::new([-1]).byte_size(DataType::Float).unwrap(), None);
    }

    #[test]
    fn shape_range() {
        let r = ShapeRange::new(vec![(1, 20), (3, 3), (0, -1)]);
        assert!(r.validate().is_ok());
        assert!(!r.is_empty());
        assert_eq!(r.len(), 3);
        assert!(r.contains(&Shape::new([5, 3, 1000])));
        assert!(r.contains(&Shape::new([-1, 3, 0])));
        assert!(!r.contains(&Shape::new([21, 3, 1])));
        assert!(!r.contains(&Shape::new([5, 4, 1])));
        assert!(!r.contains(&Shape::new([5, 3])));
        assert!(!r.contains(&Shape::unknown_rank()));
        assert_eq!(r.to_string(), "[1~20,3~3,0~-1]");
        assert!(ShapeRange::new(vec![(-1, 2)]).validate().is_err());
        assert!(ShapeRange::new(vec![(3, 2)]).validate().is_err());
        assert!(ShapeRange::default().is_empty());
        assert!(ShapeRange::default().contains(&Shape::scalar()));
    }
}
