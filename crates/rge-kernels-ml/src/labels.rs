//! Class labels of the classifiers: int64 or strings, written as the label output.

use rge_kernels::{KernelCtx, KernelInit, KernelResult, Tensor};

#[derive(Debug, Clone)]
pub(crate) enum Labels {
    Ints(Vec<i64>),
    Strings(Vec<String>),
}

impl Labels {
    /// From `classlabels_strings` or the int attribute `int_attr` (`classlabels_ints`,
    /// `classlabels_int64s`); none given is an empty int list.
    pub(crate) fn from_init(init: &KernelInit<'_>, int_attr: &str) -> KernelResult<Self> {
        if let Some(s) = init.strings_opt("classlabels_strings")? {
            if !s.is_empty() {
                return Ok(Labels::Strings(s.to_vec()));
            }
        }
        Ok(Labels::Ints(
            init.ints_opt(int_attr)?.unwrap_or(&[]).to_vec(),
        ))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Labels::Ints(v) => v.len(),
            Labels::Strings(v) => v.len(),
        }
    }

    /// Writes output `i` from a choice per row: `Ok(k)` label k, `Err(true/false)` the
    /// positive / negative label of a binary model without two labels (1 / 0, "1" / "0").
    pub(crate) fn put(
        &self,
        ctx: &mut KernelCtx<'_>,
        i: usize,
        picks: &[Result<usize, bool>],
    ) -> KernelResult<()> {
        let shape = [picks.len()];
        match self {
            Labels::Ints(v) => {
                let out: Vec<i64> = picks
                    .iter()
                    .map(|p| match p {
                        Ok(k) => v[*k],
                        Err(pos) => *pos as i64,
                    })
                    .collect();
                ctx.put(i, Tensor::from_vec(&shape, out)?)
            }
            Labels::Strings(v) => {
                let out: Vec<String> = picks
                    .iter()
                    .map(|p| match p {
                        Ok(k) => v[*k].clone(),
                        Err(pos) => {
                            if *pos {
                                "1".into()
                            } else {
                                "0".into()
                            }
                        }
                    })
                    .collect();
                ctx.put(i, Tensor::from_strings(&shape, out)?)
            }
        }
    }

    /// The label of the positive (`true`) or negative class of a binary model.
    pub(crate) fn binary(&self, positive: bool) -> Result<usize, bool> {
        if self.len() == 2 {
            Ok(positive as usize)
        } else {
            Err(positive)
        }
    }
}
