//! The spatial attributes of Conv and pooling (2-D; a 1-D op is taken as height 1): kernel,
//! strides, dilations, pads (explicit or `auto_pad`) and the output size.

use rge_kernels::{KernelError, KernelInit, KernelResult};

/// A 2-D window.
#[derive(Clone, Debug)]
pub struct Window {
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// Explicit pads (top, left, bottom, right); `auto_pad` replaces them at run time.
    pub pads: [usize; 4],
    pub auto_pad: String,
    pub ceil_mode: bool,
    /// The op is 1-D (input rank 3).
    pub one_d: bool,
}

fn two(v: &[i64], what: &str, one_d: bool, default: usize) -> KernelResult<[usize; 2]> {
    let v: Vec<usize> = v.iter().map(|&x| x.max(0) as usize).collect();
    match (v.len(), one_d) {
        (0, _) => Ok([default, default]),
        (1, true) => Ok([1, v[0]]),
        (2, false) => Ok([v[0], v[1]]),
        _ => Err(KernelError::invalid(format!(
            "{what} {v:?} does not fit a 2-D window"
        ))),
    }
}

impl Window {
    /// The window of a node whose spatial kernel is `kernel` (from the attribute or the
    /// weights).
    pub fn from_init(init: &KernelInit<'_>, kernel: &[i64], one_d: bool) -> KernelResult<Window> {
        let pads: Vec<usize> = init
            .ints_or_empty("pads")?
            .iter()
            .map(|&x| x.max(0) as usize)
            .collect();
        let pads = match (pads.len(), one_d) {
            (0, _) => [0; 4],
            (2, true) => [0, pads[0], 0, pads[1]],
            (4, false) => [pads[0], pads[1], pads[2], pads[3]],
            _ => {
                return Err(KernelError::invalid(format!(
                    "pads {pads:?} do not fit a 2-D window"
                )))
            }
        };
        Ok(Window {
            kernel: two(kernel, "kernel_shape", one_d, 1)?,
            strides: two(&init.ints_or_empty("strides")?, "strides", one_d, 1)?,
            dilations: two(&init.ints_or_empty("dilations")?, "dilations", one_d, 1)?,
            pads,
            auto_pad: init.str_or("auto_pad", "NOTSET")?.to_string(),
            ceil_mode: init.int_or("ceil_mode", 0)? != 0,
            one_d,
        })
    }

    /// (output size, pad before) of each spatial dim for input sizes `hw`.
    pub fn output(&self, hw: [usize; 2]) -> KernelResult<([usize; 2], [usize; 2])> {
        let mut out = [0; 2];
        let mut before = [0; 2];
        for d in 0..2 {
            let k = (self.kernel[d] - 1) * self.dilations[d] + 1;
            let s = self.strides[d].max(1);
            let (o, b) = match self.auto_pad.as_str() {
                "SAME_UPPER" | "SAME_LOWER" => {
                    let o = hw[d].div_ceil(s);
                    let total = ((o - 1) * s + k).saturating_sub(hw[d]);
                    let b = if self.auto_pad == "SAME_UPPER" {
                        total / 2
                    } else {
                        total.div_ceil(2)
                    };
                    (o, b)
                }
                "VALID" => ((hw[d].saturating_sub(k)) / s + 1, 0),
                _ => {
                    let span = hw[d] + self.pads[d] + self.pads[d + 2];
                    if span < k {
                        return Err(KernelError::invalid(
                            "the window is larger than the padded input",
                        ));
                    }
                    let o = if self.ceil_mode {
                        let o = (span - k).div_ceil(s) + 1;
                        // The last window must start inside the input or the left pad.
                        if (o - 1) * s >= hw[d] + self.pads[d] {
                            o - 1
                        } else {
                            o
                        }
                    } else {
                        (span - k) / s + 1
                    };
                    (o, self.pads[d])
                }
            };
            out[d] = o;
            before[d] = b;
        }
        Ok((out, before))
    }
}
