//! Image resizes with TensorFlow's (and GE's) semantics on [N, H, W, C] f32 planes:
//! bilinear and nearest (`align_corners`, `half_pixel_centers`) and area (box average,
//! `align_corners`).

/// An image batch: `n` images of `h × w × c`, f32, interleaved.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    pub n: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Bilinear,
    Nearest,
    Area,
}

/// The input/output scale of one axis (TF's `CalculateResizeScale`).
fn scale(input: usize, output: usize, align_corners: bool) -> f64 {
    if align_corners && output > 1 {
        (input as f64 - 1.0) / (output as f64 - 1.0)
    } else {
        input as f64 / output as f64
    }
}

/// (lower, upper, lerp) of each output coordinate for bilinear.
fn weights(input: usize, output: usize, align: bool, half: bool) -> Vec<(usize, usize, f64)> {
    let s = scale(input, output, align);
    (0..output)
        .map(|o| {
            let x = if half {
                (o as f64 + 0.5) * s - 0.5
            } else {
                o as f64 * s
            };
            let f = x.floor();
            let lo = (f.max(0.0) as usize).min(input - 1);
            let hi = (x.ceil().max(0.0) as usize).min(input - 1);
            (lo, hi, x - f)
        })
        .collect()
}

/// The source index of each output coordinate for nearest.
fn nearest(input: usize, output: usize, align: bool, half: bool) -> Vec<usize> {
    let s = scale(input, output, align);
    (0..output)
        .map(|o| {
            let x = if half {
                (o as f64 + 0.5) * s
            } else {
                o as f64 * s
            };
            let i = if align { x.round() } else { x.floor() };
            (i.max(0.0) as usize).min(input - 1)
        })
        .collect()
}

/// For area (TF's `ResizeArea`): the (index, weight) spans of each output coordinate, weights
/// summing to 1. Output cell `o` covers `[o·s, (o+1)·s)` of the input (`s` the scale,
/// `(in−1)/(out−1)` with `align_corners`); each input cell it touches weighs the length it
/// covers, and cells past the edge (with `align_corners`) are the edge's, as TF bounds them.
fn spans(input: usize, output: usize, align: bool) -> Vec<Vec<(usize, f64)>> {
    let s = scale(input, output, align);
    (0..output)
        .map(|o| {
            let (a, b) = (o as f64 * s, (o as f64 + 1.0) * s);
            let mut v = Vec::new();
            let mut i = a.floor() as usize;
            while (i as f64) < b {
                let lo = a.max(i as f64);
                let hi = b.min(i as f64 + 1.0);
                if hi > lo {
                    v.push((i.min(input - 1), (hi - lo) / s));
                }
                i += 1;
            }
            v
        })
        .collect()
}

/// Resizes `src` (geometry `g`) to `oh × ow` into `dst` (`g.n · oh · ow · g.c` values).
// The op's own parameters, passed as they are: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn resize(
    src: &[f32],
    g: Geometry,
    oh: usize,
    ow: usize,
    method: Method,
    align: bool,
    half: bool,
    dst: &mut [f32],
) {
    let Geometry { n, h, w, c } = g;
    let at = |b: usize, y: usize, x: usize, ch: usize| src[((b * h + y) * w + x) * c + ch];
    let mut k = 0;
    match method {
        Method::Bilinear => {
            let (ys, xs) = (weights(h, oh, align, half), weights(w, ow, align, half));
            for b in 0..n {
                for &(y0, y1, fy) in &ys {
                    for &(x0, x1, fx) in &xs {
                        for ch in 0..c {
                            let tl = f64::from(at(b, y0, x0, ch));
                            let tr = f64::from(at(b, y0, x1, ch));
                            let bl = f64::from(at(b, y1, x0, ch));
                            let br = f64::from(at(b, y1, x1, ch));
                            let top = tl + (tr - tl) * fx;
                            let bot = bl + (br - bl) * fx;
                            dst[k] = (top + (bot - top) * fy) as f32;
                            k += 1;
                        }
                    }
                }
            }
        }
        Method::Nearest => {
            let (ys, xs) = (nearest(h, oh, align, half), nearest(w, ow, align, half));
            for b in 0..n {
                for &y in &ys {
                    for &x in &xs {
                        for ch in 0..c {
                            dst[k] = at(b, y, x, ch);
                            k += 1;
                        }
                    }
                }
            }
        }
        Method::Area => {
            let (ys, xs) = (spans(h, oh, align), spans(w, ow, align));
            for b in 0..n {
                for ysp in &ys {
                    for xsp in &xs {
                        for ch in 0..c {
                            let mut acc = 0.0f64;
                            for &(y, wy) in ysp {
                                for &(x, wx) in xsp {
                                    acc += wy * wx * f64::from(at(b, y, x, ch));
                                }
                            }
                            dst[k] = acc as f32;
                            k += 1;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf_bilinear_and_area_on_a_ramp() {
        // 1×2×2×1 [[0, 1], [2, 3]] to 3×3 with align_corners: the corners stay, the centre is
        // the mean.
        let g = Geometry {
            n: 1,
            h: 2,
            w: 2,
            c: 1,
        };
        let src = [0.0, 1.0, 2.0, 3.0];
        let mut d = [0.0; 9];
        resize(&src, g, 3, 3, Method::Bilinear, true, false, &mut d);
        assert_eq!(d, [0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0]);
        let mut d = [0.0; 1];
        resize(&src, g, 1, 1, Method::Area, false, false, &mut d);
        assert_eq!(d, [1.5]);
        let mut d = [0.0; 16];
        resize(&src, g, 4, 4, Method::Nearest, false, true, &mut d);
        assert_eq!(&d[..4], &[0.0, 0.0, 1.0, 1.0]);
    }
}
