//! NonMaxSuppression (opsets 10, 11): greedy per (batch, class) selection by descending score,
//! dropping boxes whose IoU with a kept box exceeds the threshold.

use num_traits::Float;
use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

struct Nms {
    center_point_box: bool,
}

pub(crate) fn create_nms(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let c = init.int_or("center_point_box", 0)?;
    if c != 0 && c != 1 {
        return Err(KernelError::attr("center_point_box", "must be 0 or 1"));
    }
    Ok(Box::new(Nms {
        center_point_box: c == 1,
    }))
}

/// (min x, min y, max x, max y) of a box in the layout `center` selects.
fn corners<F: Float>(b: &[F], center: bool) -> [F; 4] {
    let two = F::one() + F::one();
    if center {
        let (hw, hh) = (b[2] / two, b[3] / two);
        [b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh]
    } else {
        // [y1, x1, y2, x2], any diagonal pair.
        [
            b[1].min(b[3]),
            b[0].min(b[2]),
            b[1].max(b[3]),
            b[0].max(b[2]),
        ]
    }
}

fn suppress<F: Float>(a: &[F; 4], b: &[F; 4], iou_threshold: F) -> bool {
    let ix0 = a[0].max(b[0]);
    let ix1 = a[2].min(b[2]);
    if ix1 <= ix0 {
        return false;
    }
    let iy0 = a[1].max(b[1]);
    let iy1 = a[3].min(b[3]);
    if iy1 <= iy0 {
        return false;
    }
    let inter = (ix1 - ix0) * (iy1 - iy0);
    if inter <= F::zero() {
        return false;
    }
    let area_a = (a[2] - a[0]) * (a[3] - a[1]);
    let area_b = (b[2] - b[0]) * (b[3] - b[1]);
    let union = area_a + area_b - inter;
    if area_a <= F::zero() || area_b <= F::zero() || union <= F::zero() {
        return false;
    }
    inter / union > iou_threshold
}

fn opt_scalar(t: Option<TensorRef<'_>>) -> KernelResult<Option<f64>> {
    match t {
        Some(t) if !t.is_empty() => Ok(t.to_f64_vec()?.first().copied()),
        _ => Ok(None),
    }
}

impl Nms {
    fn run<F: Float>(
        &self,
        boxes: &[F],
        scores: &[F],
        (batches, classes, nboxes): (usize, usize, usize),
        max_out: usize,
        iou: F,
        score_threshold: Option<F>,
    ) -> Vec<i64> {
        let mut selected = Vec::new();
        let mut cand: Vec<(F, usize)> = Vec::with_capacity(nboxes);
        let mut kept: Vec<[F; 4]> = Vec::new();
        for b in 0..batches {
            let bb = &boxes[b * nboxes * 4..(b + 1) * nboxes * 4];
            let boxes_c: Vec<[F; 4]> = bb
                .chunks_exact(4)
                .map(|c| corners(c, self.center_point_box))
                .collect();
            for c in 0..classes {
                let s = &scores[(b * classes + c) * nboxes..(b * classes + c + 1) * nboxes];
                cand.clear();
                cand.extend(
                    s.iter()
                        .enumerate()
                        .filter(|(_, &v)| score_threshold.is_none_or(|t| v > t))
                        .map(|(i, &v)| (v, i)),
                );
                // Highest score first; ties keep the lower index first.
                cand.sort_by(|x, y| {
                    y.0.partial_cmp(&x.0)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(x.1.cmp(&y.1))
                });
                kept.clear();
                for &(_, i) in &cand {
                    if kept.len() >= max_out {
                        break;
                    }
                    let bx = boxes_c[i];
                    if kept.iter().any(|k| suppress(&bx, k, iou)) {
                        continue;
                    }
                    kept.push(bx);
                    selected.extend([b as i64, c as i64, i as i64]);
                }
            }
        }
        selected
    }
}

impl Kernel for Nms {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let boxes = ctx.input(0)?;
        let scores = ctx.input(1)?;
        let bs = boxes.shape();
        let ss = scores.shape();
        if bs.len() != 3 || bs[2] != 4 || ss.len() != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
            return Err(KernelError::invalid(format!(
                "boxes {bs:?} and scores {ss:?} do not match"
            )));
        }
        let dims = (bs[0], ss[1], bs[1]);
        let max_out = match ctx.opt_input(2)? {
            Some(t) if !t.is_empty() => t.to_i64_vec()?[0].max(0) as usize,
            _ => 0,
        };
        let iou = opt_scalar(ctx.opt_input(3)?)?.unwrap_or(0.0);
        let score_threshold = opt_scalar(ctx.opt_input(4)?)?;
        let sel = if boxes.dtype() == DType::Float && scores.dtype() == DType::Float {
            self.run(
                boxes.as_slice::<f32>()?,
                scores.as_slice::<f32>()?,
                dims,
                max_out,
                iou as f32,
                score_threshold.map(|v| v as f32),
            )
        } else {
            self.run(
                &boxes.to_f64_vec()?,
                &scores.to_f64_vec()?,
                dims,
                max_out,
                iou,
                score_threshold,
            )
        };
        let n = sel.len() / 3;
        ctx.output::<i64>(0, &[n, 3])?.copy_from_slice(&sel);
        Ok(())
    }
}
