//! The gather primitive most movement kernels reduce to: each output axis has a map from its
//! coordinate to the source offset it contributes (already multiplied by the source stride);
//! an output element reads `src[sum of its axes' offsets]`, or a fill value where any axis
//! maps to [`FILL`]. Transpose, Slice, Expand, Tile, Pad, Gather, Compress … build maps.

use rayon::prelude::*;
use rge_kernels::{KernelError, KernelResult};

use crate::elems::{Item, Movement};

/// A map entry meaning "outside the source: the fill value".
pub(crate) const FILL: usize = usize::MAX;

/// Where fill elements come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fill {
    /// No map holds FILL.
    None,
    /// The element type's zero (`T::default()`: zero bytes, "" for strings).
    Zero,
    /// The first element of the second source.
    Src1,
}

/// Per-axis offset maps over one source.
#[derive(Clone, Debug)]
pub(crate) struct AxisMaps {
    maps: Vec<Vec<usize>>,
    /// The last map is `first + j` with no FILL: rows copy as slices.
    contiguous_last: bool,
    /// The last map repeats one offset (a broadcast axis): rows are one element repeated.
    constant_last: bool,
    /// Some entry of the last map is FILL.
    fill_in_last: bool,
    fill: Fill,
    threads: usize,
}

impl AxisMaps {
    /// Maps for the output axes, in order.
    pub(crate) fn new(maps: Vec<Vec<usize>>, fill: Fill) -> Self {
        let contiguous_last = maps.last().is_some_and(|m| {
            m.first()
                .is_some_and(|&f| f != FILL && m.iter().enumerate().all(|(j, &v)| v == f + j))
        });
        let constant_last = maps
            .last()
            .is_some_and(|m| m.len() > 1 && m[0] != FILL && m.iter().all(|&v| v == m[0]));
        let fill_in_last = maps.last().is_some_and(|m| m.contains(&FILL));
        AxisMaps {
            maps,
            contiguous_last,
            constant_last,
            fill_in_last,
            fill,
            threads: 1,
        }
    }

    /// Lets the gather use up to `threads` threads on large outputs.
    pub(crate) fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The output shape.
    pub(crate) fn out_shape(&self) -> Vec<usize> {
        self.maps.iter().map(Vec::len).collect()
    }

    /// Gathers `src` into `out` (whose length is the product of the map lengths).
    pub(crate) fn gather<T: Item>(&self, src: &[T], fill: &T, out: &mut [T]) -> KernelResult<()> {
        let n: usize = self.maps.iter().map(Vec::len).product();
        if out.len() != n {
            return Err(KernelError::invalid(format!(
                "gather output has {} elements, maps give {n}",
                out.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        // Every reachable offset must lie inside the source.
        let reach: usize = self
            .maps
            .iter()
            .map(|m| m.iter().copied().filter(|&v| v != FILL).max().unwrap_or(0))
            .try_fold(0usize, |a, b| a.checked_add(b))
            .ok_or_else(|| KernelError::invalid("gather offsets overflow"))?;
        let any_real = self.maps.iter().all(|m| m.iter().any(|&v| v != FILL));
        if any_real && reach >= src.len() {
            return Err(KernelError::invalid(format!(
                "gather reaches offset {reach} of a {}-element source",
                src.len()
            )));
        }
        let Some((last, outer)) = self.maps.split_last() else {
            out[0] = src[0].clone();
            return Ok(());
        };
        let row = last.len();
        let rows = n / row;
        let work = |first_row: usize, chunk: &mut [T]| {
            let mut idx = vec![0usize; outer.len()];
            let mut r = first_row;
            for d in (0..outer.len()).rev() {
                idx[d] = r % outer[d].len();
                r /= outer[d].len();
            }
            for dst in chunk.chunks_mut(row) {
                let mut base = 0usize;
                let mut filled = false;
                for (m, &i) in outer.iter().zip(&idx) {
                    let v = m[i];
                    if v == FILL {
                        filled = true;
                        break;
                    }
                    base += v;
                }
                if filled {
                    dst.fill(fill.clone());
                } else if self.constant_last {
                    dst.fill(src[base + last[0]].clone());
                } else if self.contiguous_last {
                    let s = base + last[0];
                    dst.clone_from_slice(&src[s..s + row]);
                } else if !self.fill_in_last {
                    for (d, &m) in dst.iter_mut().zip(last) {
                        *d = src[base + m].clone();
                    }
                } else {
                    for (d, &m) in dst.iter_mut().zip(last) {
                        *d = if m == FILL {
                            fill.clone()
                        } else {
                            src[base + m].clone()
                        };
                    }
                }
                for d in (0..outer.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < outer[d].len() {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        };
        if self.threads > 1 && n >= 1 << 16 && rows > 1 {
            let rows_per = rows.div_ceil(self.threads * 4).max(1);
            out.par_chunks_mut(rows_per * row)
                .enumerate()
                .for_each(|(c, chunk)| work(c * rows_per, chunk));
        } else {
            work(0, out);
        }
        Ok(())
    }
}

impl Movement for AxisMaps {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let src = srcs.first().copied().unwrap_or(&[]);
        let fill = match self.fill {
            Fill::None | Fill::Zero => T::default(),
            Fill::Src1 => srcs
                .get(1)
                .and_then(|s| s.first())
                .cloned()
                .ok_or_else(|| KernelError::invalid("the fill value is missing"))?,
        };
        let out = outs
            .first_mut()
            .ok_or_else(|| KernelError::invalid("no output"))?;
        self.gather(src, &fill, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_and_fill() {
        // src 2x3, transposed: maps axis0 (3) → j*1, axis1 (2) → j*3.
        let m = AxisMaps::new(vec![vec![0, 1, 2], vec![0, 3]], Fill::None);
        let src = [1, 2, 3, 4, 5, 6];
        let mut out = [0; 6];
        m.gather(&src, &0, &mut out).unwrap();
        assert_eq!(out, [1, 4, 2, 5, 3, 6]);
        let m = AxisMaps::new(vec![vec![FILL, 0, 1, FILL]], Fill::Zero);
        let mut out = [9; 4];
        m.gather(&[7, 8], &0, &mut out).unwrap();
        assert_eq!(out, [0, 7, 8, 0]);
    }

    #[test]
    fn threaded_matches_serial() {
        let (r, c) = (300usize, 257usize);
        let src: Vec<u32> = (0..(r * c) as u32).collect();
        let maps = vec![(0..c).collect::<Vec<_>>(), (0..r).map(|j| j * c).collect()];
        let one = AxisMaps::new(maps.clone(), Fill::None);
        let many = AxisMaps::new(maps, Fill::None).with_threads(4);
        let (mut a, mut b) = (vec![0u32; r * c], vec![0u32; r * c]);
        one.gather(&src, &0, &mut a).unwrap();
        many.gather(&src, &0, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[1], c as u32);
    }

    #[test]
    fn out_of_range_is_an_error() {
        let bad = AxisMaps::new(vec![vec![0, 5]], Fill::None);
        assert!(bad.gather(&[1, 2], &0, &mut [0, 0]).is_err());
    }
}
