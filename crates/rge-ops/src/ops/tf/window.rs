//! TensorFlow's sliding-window attributes, shared by the TF-dialect prototypes and the
//! `cpu_tf` engine's kernels so both compute the same geometry: `data_format` (NHWC/NCHW),
//! 4-element `strides`/`dilations`/`ksize` (batch and channel entries 1), `padding`
//! (SAME, VALID, EXPLICIT with `explicit_paddings`) and GE's `pads` [top, bottom, left, right].

use rge_ir::{AttrMap, AttrValue};

/// Where the channel axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    Nhwc,
    Nchw,
}

impl DataFormat {
    /// The format named by attribute `data_format` (absent: NHWC, TF's default).
    pub fn from_attrs(attrs: &AttrMap) -> Result<Self, String> {
        match attr_str(attrs, "data_format")? {
            None | Some("NHWC") => Ok(DataFormat::Nhwc),
            Some("NCHW") => Ok(DataFormat::Nchw),
            Some(other) => Err(format!(
                "attribute `data_format`: unknown data format `{other}` (NHWC or NCHW)"
            )),
        }
    }

    /// (height axis, width axis, channel axis) of a rank-4 tensor.
    pub fn axes(self) -> (usize, usize, usize) {
        match self {
            DataFormat::Nhwc => (1, 2, 3),
            DataFormat::Nchw => (2, 3, 1),
        }
    }
}

/// How the spatial dims are padded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Padding {
    Same,
    Valid,
    /// (before, after) for height then width.
    Explicit([(i64, i64); 2]),
}

/// The window of one Conv2D / pool node, in (height, width) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub format: DataFormat,
    pub strides: [i64; 2],
    pub dilations: [i64; 2],
    pub padding: Padding,
}

/// One spatial axis of the output: its size and the padding (before, after) it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axis {
    pub out: i64,
    pub pad_before: i64,
    pub pad_after: i64,
}

fn attr_str<'a>(attrs: &'a AttrMap, name: &str) -> Result<Option<&'a str>, String> {
    match attrs.get(name) {
        None => Ok(None),
        Some(AttrValue::String(s)) => Ok(Some(s.as_str())),
        Some(AttrValue::Bytes(b)) => std::str::from_utf8(b)
            .map(Some)
            .map_err(|_| format!("attribute `{name}` is not UTF-8")),
        Some(v) => Err(format!(
            "attribute `{name}` is {}, not a string",
            v.kind_name()
        )),
    }
}

/// A list-of-ints attribute (absent: `None`).
pub fn attr_ints<'a>(attrs: &'a AttrMap, name: &str) -> Result<Option<&'a [i64]>, String> {
    match attrs.get(name) {
        None => Ok(None),
        Some(AttrValue::ListInt(v)) => Ok(Some(v.as_slice())),
        Some(AttrValue::ListFloat(v)) if v.is_empty() => Ok(Some(&[])),
        Some(v) => Err(format!("attribute `{name}` is {}, not ints", v.kind_name())),
    }
}

/// The (height, width) entries of a 4-element attribute in `format`'s order; the batch and
/// channel entries must be 1 and every entry positive.
pub fn spatial4(
    attrs: &AttrMap,
    name: &str,
    format: DataFormat,
    default: Option<[i64; 2]>,
) -> Result<[i64; 2], String> {
    let Some(v) = attr_ints(attrs, name)? else {
        return default.ok_or_else(|| format!("required attribute `{name}` is missing"));
    };
    if v.len() != 4 {
        return Err(format!(
            "attribute `{name}` must have 4 elements (one per NHWC/NCHW dim), got {v:?}"
        ));
    }
    if let Some(bad) = v.iter().find(|&&s| s <= 0) {
        return Err(format!(
            "attribute `{name}` {v:?}: every entry must be positive, got {bad}"
        ));
    }
    let (h, w, c) = format.axes();
    if v[0] != 1 || v[c] != 1 {
        return Err(format!(
            "attribute `{name}` {v:?}: the batch and channel entries must be 1"
        ));
    }
    Ok([v[h], v[w]])
}

impl Window {
    /// The window attributes of a Conv2D / DepthwiseConv2dNative / pool node.
    pub fn from_attrs(attrs: &AttrMap) -> Result<Self, String> {
        let format = DataFormat::from_attrs(attrs)?;
        let strides = spatial4(attrs, "strides", format, None)?;
        let dilations = spatial4(attrs, "dilations", format, Some([1, 1]))?;
        let padding = match attr_str(attrs, "padding")? {
            Some("SAME") => Padding::Same,
            Some("VALID") => Padding::Valid,
            Some("EXPLICIT") => {
                let p = attr_ints(attrs, "explicit_paddings")?.unwrap_or(&[]);
                if p.len() != 8 {
                    return Err(format!(
                        "attribute `explicit_paddings` must have 8 elements (before/after per dim) with padding EXPLICIT, got {p:?}"
                    ));
                }
                let (h, w, c) = format.axes();
                if p.iter().any(|&x| x < 0)
                    || p[0] != 0
                    || p[1] != 0
                    || p[2 * c] != 0
                    || p[2 * c + 1] != 0
                {
                    return Err(format!(
                        "attribute `explicit_paddings` {p:?}: entries must be ≥ 0 and the batch and channel pads 0"
                    ));
                }
                Padding::Explicit([(p[2 * h], p[2 * h + 1]), (p[2 * w], p[2 * w + 1])])
            }
            Some(other) => {
                return Err(format!(
                    "attribute `padding`: unknown padding `{other}` (SAME, VALID or EXPLICIT)"
                ))
            }
            // GE's own Conv2D carries `pads` [top, bottom, left, right] instead.
            None => match attr_ints(attrs, "pads")? {
                Some(p) if p.len() == 4 && p.iter().all(|&x| x >= 0) => {
                    Padding::Explicit([(p[0], p[1]), (p[2], p[3])])
                }
                Some(p) => {
                    return Err(format!(
                    "attribute `pads` must be 4 values ≥ 0 [top, bottom, left, right], got {p:?}"
                ))
                }
                None => return Err("required attribute `padding` is missing".into()),
            },
        };
        Ok(Window {
            format,
            strides,
            dilations,
            padding,
        })
    }

    /// Output size and padding of spatial axis `i` (0 height, 1 width) for an input of
    /// `input` and a kernel of `k` (-1 dims give -1).
    pub fn axis(&self, i: usize, input: i64, k: i64) -> Result<Axis, String> {
        let (s, d) = (self.strides[i], self.dilations[i]);
        if input < 0 || k < 0 {
            return Ok(Axis {
                out: -1,
                pad_before: 0,
                pad_after: 0,
            });
        }
        let eff = (k - 1) * d + 1;
        let (out, before, after) = match self.padding {
            Padding::Same => {
                let out = (input + s - 1) / s;
                let total = ((out - 1) * s + eff - input).max(0);
                (out, total / 2, total - total / 2)
            }
            Padding::Valid => {
                if input < eff {
                    return Err(format!(
                        "the window ({eff} with dilation) is larger than the input ({input}) with padding VALID"
                    ));
                }
                ((input - eff) / s + 1, 0, 0)
            }
            Padding::Explicit(p) => {
                let (b, a) = p[i];
                if input + b + a < eff {
                    return Err(format!(
                        "the window ({eff} with dilation) is larger than the padded input ({})",
                        input + b + a
                    ));
                }
                ((input + b + a - eff) / s + 1, b, a)
            }
        };
        Ok(Axis {
            out,
            pad_before: before,
            pad_after: after,
        })
    }
}
