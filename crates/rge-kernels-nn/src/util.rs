//! Helpers shared by this crate's kernels: float element conversions, attribute readers and
//! the convolution/pooling window geometry (auto_pad, pads, strides, dilations).

use rge_kernels::{bf16, f16, Elem, KernelError, KernelInit, KernelResult, TensorRef};

/// A float element type: f32, f64, f16 or bf16, with round trips through f32 and f64.
pub(crate) trait Real: Elem + PartialOrd {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl Real for f32 {
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Real for f64 {
    #[inline]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Real for f16 {
    #[inline]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}

impl Real for bf16 {
    #[inline]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
}

/// Reads a float tensor of any float type as f32 values.
pub(crate) fn to_f32_vec(t: &TensorRef<'_>) -> KernelResult<Vec<f32>> {
    rge_kernels::dispatch_float!(t.dtype(), T => Ok(t
        .as_slice::<T>()?
        .iter()
        .map(|v| v.to_f32())
        .collect()))
}

/// A list attribute of non-negative sizes (`kernel_shape`, `strides` …), checked.
pub(crate) fn usize_list(init: &KernelInit<'_>, name: &str) -> KernelResult<Option<Vec<usize>>> {
    match init.ints_opt(name)? {
        None => Ok(None),
        Some(v) => v
            .iter()
            .map(|&x| {
                usize::try_from(x)
                    .map_err(|_| KernelError::attr(name, format!("negative value {x}")))
            })
            .collect::<KernelResult<Vec<_>>>()
            .map(Some),
    }
}

/// ONNX `auto_pad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

impl AutoPad {
    pub fn parse(init: &KernelInit<'_>) -> KernelResult<Self> {
        Ok(match init.str_or("auto_pad", "NOTSET")? {
            "NOTSET" | "" => AutoPad::NotSet,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            "VALID" => AutoPad::Valid,
            other => {
                return Err(KernelError::attr(
                    "auto_pad",
                    format!("unknown value {other}"),
                ))
            }
        })
    }
}

/// The sliding-window attributes shared by Conv-like and pooling ops (any may be absent: they
/// default from the input rank at compute time).
#[derive(Debug, Clone)]
pub struct WindowAttrs {
    pub auto_pad: AutoPad,
    pub kernel: Option<Vec<usize>>,
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub pads: Option<Vec<i64>>,
    pub ceil_mode: bool,
    /// Pools: a padded input shorter than the kernel still gives one window when the
    /// shortfall is under the stride (onnxruntime's truncating output-size rule; the spec's
    /// floor gives 0). Off for convolutions.
    pub short_input_window: bool,
}

impl WindowAttrs {
    pub fn parse(init: &KernelInit<'_>) -> KernelResult<Self> {
        let strides = usize_list(init, "strides")?;
        if strides.as_ref().is_some_and(|s| s.contains(&0)) {
            return Err(KernelError::attr("strides", "must be positive"));
        }
        let dilations = usize_list(init, "dilations")?;
        if dilations.as_ref().is_some_and(|s| s.contains(&0)) {
            return Err(KernelError::attr("dilations", "must be positive"));
        }
        let pads = init.ints_opt("pads")?.map(<[i64]>::to_vec);
        if pads.as_ref().is_some_and(|p| p.iter().any(|&x| x < 0)) {
            return Err(KernelError::attr("pads", "must be non-negative"));
        }
        let kernel = usize_list(init, "kernel_shape")?;
        if kernel.as_ref().is_some_and(|k| k.contains(&0)) {
            return Err(KernelError::attr("kernel_shape", "must be positive"));
        }
        Ok(WindowAttrs {
            auto_pad: AutoPad::parse(init)?,
            kernel,
            strides,
            dilations,
            pads,
            ceil_mode: init.int_or("ceil_mode", 0)? != 0,
            short_input_window: false,
        })
    }

    /// Resolves the geometry for `input` spatial dims; `kernel` is used when the attribute is
    /// absent (Conv reads it from W).
    pub fn resolve(&self, input: &[usize], kernel: Option<&[usize]>) -> KernelResult<Geometry> {
        let n = input.len();
        let kernel: Vec<usize> = match (&self.kernel, kernel) {
            (Some(k), _) => k.clone(),
            (None, Some(k)) => k.to_vec(),
            (None, None) => return Err(KernelError::attr("kernel_shape", "required but missing")),
        };
        if kernel.len() != n {
            return Err(KernelError::invalid(format!(
                "kernel_shape {kernel:?} does not fit {n} spatial dims"
            )));
        }
        let strides = self.strides.clone().unwrap_or_else(|| vec![1; n]);
        let dilations = self.dilations.clone().unwrap_or_else(|| vec![1; n]);
        if strides.len() != n || dilations.len() != n {
            return Err(KernelError::invalid(format!(
                "strides {strides:?} / dilations {dilations:?} do not fit {n} spatial dims"
            )));
        }
        let mut pads_begin = vec![0usize; n];
        let mut pads_end = vec![0usize; n];
        let mut out = vec![0usize; n];
        for i in 0..n {
            let dk = (kernel[i].saturating_sub(1))
                .checked_mul(dilations[i])
                .and_then(|v| v.checked_add(1))
                .ok_or_else(|| KernelError::invalid("kernel extent overflows"))?;
            let s = strides[i];
            let d = input[i];
            match self.auto_pad {
                AutoPad::SameUpper | AutoPad::SameLower => {
                    let o = d.div_ceil(s);
                    let total = ((o.saturating_sub(1)) * s + dk).saturating_sub(d);
                    let small = total / 2;
                    if self.auto_pad == AutoPad::SameUpper {
                        pads_begin[i] = small;
                        pads_end[i] = total - small;
                    } else {
                        pads_begin[i] = total - small;
                        pads_end[i] = small;
                    }
                    out[i] = o;
                }
                AutoPad::Valid => {
                    out[i] = if d >= dk { (d - dk) / s + 1 } else { 0 };
                }
                AutoPad::NotSet => {
                    if let Some(p) = &self.pads {
                        if p.len() != 2 * n {
                            return Err(KernelError::invalid(format!(
                                "pads {p:?} do not fit {n} spatial dims"
                            )));
                        }
                        pads_begin[i] = p[i] as usize;
                        pads_end[i] = p[i + n] as usize;
                    }
                    let padded = d + pads_begin[i] + pads_end[i];
                    out[i] = if padded < dk {
                        usize::from(self.short_input_window && dk - padded < s)
                    } else if self.ceil_mode {
                        let mut o = (padded - dk).div_ceil(s) + 1;
                        // The last window must start inside the input or the begin padding.
                        if (o - 1) * s >= d + pads_begin[i] {
                            o -= 1;
                        }
                        o
                    } else {
                        (padded - dk) / s + 1
                    };
                }
            }
        }
        Ok(Geometry {
            input: input.to_vec(),
            kernel,
            strides,
            dilations,
            pads_begin,
            pads_end,
            out,
        })
    }
}

/// A resolved sliding-window geometry over the spatial dims.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub input: Vec<usize>,
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    pub pads_begin: Vec<usize>,
    pub pads_end: Vec<usize>,
    pub out: Vec<usize>,
}

/// The taps of one output position along one spatial dim: `first..end` of the kernel lie
/// inside the input, `padded` of them inside the padded extent; `start` is the input position
/// of tap 0 (negative in the begin padding).
#[derive(Debug, Clone, Copy)]
pub struct WindowTaps {
    pub start: isize,
    pub first: usize,
    pub end: usize,
    pub padded: usize,
}

impl Geometry {
    /// The taps of output index `o` along spatial dim `d` (pools: which window elements exist,
    /// and how many count with `count_include_pad`).
    pub fn taps(&self, o: usize, d: usize) -> WindowTaps {
        let (s, dil, k) = (self.strides[d], self.dilations[d], self.kernel[d]);
        let (pb, pe, size) = (
            self.pads_begin[d] as isize,
            self.pads_end[d] as isize,
            self.input[d] as isize,
        );
        let start = (o * s) as isize - pb;
        let pos = |t: usize| start + (t * dil) as isize;
        let first = (0..k).find(|&t| pos(t) >= 0).unwrap_or(k);
        let end = (0..k).rev().find(|&t| pos(t) < size).map_or(0, |t| t + 1);
        let padded = (0..k)
            .filter(|&t| pos(t) >= -pb && pos(t) < size + pe)
            .count();
        WindowTaps {
            start,
            first,
            end: end.max(first),
            padded,
        }
    }
}

/// Splits `shape` into (N, C, spatial) for NCHW-style ops (rank ≥ 3 unless `min_rank` says).
pub(crate) fn nc_spatial(
    shape: &[usize],
    min_rank: usize,
) -> KernelResult<(usize, usize, &[usize])> {
    if shape.len() < min_rank.max(2) {
        return Err(KernelError::invalid(format!(
            "expected an input of rank ≥ {}, got shape {shape:?}",
            min_rank.max(2)
        )));
    }
    Ok((shape[0], shape[1], &shape[2..]))
}

/// Calls `f(flat_index, multi_index)` for every index of `dims` in row-major order.
pub(crate) fn for_each_index(dims: &[usize], mut f: impl FnMut(usize, &[usize])) {
    let total: usize = dims.iter().product();
    if total == 0 {
        return;
    }
    let mut idx = vec![0usize; dims.len()];
    for flat in 0..total {
        f(flat, &idx);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
