//! String ops: StringNormalizer (10), StringConcat (20), StringSplit (20), RegexFullMatch (20).

use rge_kernels::shape_util::{broadcast_shapes, broadcast_strides, for_each_broadcast};
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

#[derive(Debug, Clone, Copy, PartialEq)]
enum CaseChange {
    None,
    Lower,
    Upper,
}

struct StringNormalizer {
    case: CaseChange,
    case_sensitive: bool,
    /// Stop words, lower-cased when the match ignores case.
    stopwords: Vec<String>,
}

pub(crate) fn create_string_normalizer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let case = match init.str_or("case_change_action", "NONE")? {
        "NONE" => CaseChange::None,
        "LOWER" => CaseChange::Lower,
        "UPPER" => CaseChange::Upper,
        other => {
            return Err(KernelError::attr(
                "case_change_action",
                format!("unknown action '{other}'"),
            ))
        }
    };
    let case_sensitive = init.int_or("is_case_sensitive", 0)? != 0;
    let stopwords = init
        .strings_opt("stopwords")?
        .unwrap_or_default()
        .iter()
        .map(|s| {
            if case_sensitive {
                s.clone()
            } else {
                s.to_lowercase()
            }
        })
        .collect();
    Ok(Box::new(StringNormalizer {
        case,
        case_sensitive,
        stopwords,
    }))
}

impl Kernel for StringNormalizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape();
        let two_d = match shape {
            [_] => false,
            [1, _] => true,
            _ => {
                return Err(KernelError::invalid(format!(
                    "StringNormalizer input must be [C] or [1, C], got {shape:?}"
                )))
            }
        };
        let mut out: Vec<String> = x
            .as_strings()?
            .iter()
            .filter(|s| {
                if self.stopwords.is_empty() {
                    return true;
                }
                let key = if self.case_sensitive {
                    std::borrow::Cow::Borrowed(s.as_str())
                } else {
                    std::borrow::Cow::Owned(s.to_lowercase())
                };
                !self.stopwords.iter().any(|w| *w == *key)
            })
            .map(|s| match self.case {
                CaseChange::None => s.clone(),
                CaseChange::Lower => s.to_lowercase(),
                CaseChange::Upper => s.to_uppercase(),
            })
            .collect();
        if out.is_empty() {
            out.push(String::new());
        }
        let n = out.len();
        let shape: Vec<usize> = if two_d { vec![1, n] } else { vec![n] };
        ctx.put(0, Tensor::from_strings(&shape, out)?)
    }
}

struct StringConcat;

pub(crate) fn create_string_concat(_init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(StringConcat))
}

impl Kernel for StringConcat {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let shape = broadcast_shapes(&[a.shape(), b.shape()])?;
        let strides = [
            broadcast_strides(a.shape(), &shape),
            broadcast_strides(b.shape(), &shape),
        ];
        let (sa, sb) = (a.as_strings()?, b.as_strings()?);
        let mut out = Vec::with_capacity(shape.iter().product());
        for_each_broadcast(&shape, &strides, |_, o| {
            let mut s = String::with_capacity(sa[o[0]].len() + sb[o[1]].len());
            s.push_str(&sa[o[0]]);
            s.push_str(&sb[o[1]]);
            out.push(s);
        });
        ctx.put(0, Tensor::from_strings(&shape, out)?)
    }
}

struct StringSplit {
    delimiter: Option<String>,
    maxsplit: Option<usize>,
}

pub(crate) fn create_string_split(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let delimiter = init
        .str_opt("delimiter")?
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let maxsplit = match init.int_opt("maxsplit")? {
        None => None,
        Some(v) if v < 0 => None,
        Some(v) => Some(v as usize),
    };
    Ok(Box::new(StringSplit {
        delimiter,
        maxsplit,
    }))
}

/// Python's `str.isspace` set: Unicode whitespace plus the ASCII separators 0x1c–0x1f.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `s.split(None, maxsplit)`: runs of whitespace separate, ends are trimmed.
fn split_whitespace(s: &str, maxsplit: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start_matches(is_py_space);
    while !rest.is_empty() {
        if maxsplit.is_some_and(|m| out.len() >= m) {
            out.push(rest.to_string());
            break;
        }
        match rest.find(is_py_space) {
            Some(i) => {
                out.push(rest[..i].to_string());
                rest = rest[i..].trim_start_matches(is_py_space);
            }
            None => {
                out.push(rest.to_string());
                break;
            }
        }
    }
    out
}

/// `s.split(sep, maxsplit)`.
fn split_sep(s: &str, sep: &str, maxsplit: Option<usize>) -> Vec<String> {
    match maxsplit {
        Some(m) => s.splitn(m + 1, sep).map(str::to_string).collect(),
        None => s.split(sep).map(str::to_string).collect(),
    }
}

impl Kernel for StringSplit {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let parts: Vec<Vec<String>> = x
            .as_strings()?
            .iter()
            .map(|s| match &self.delimiter {
                Some(d) => split_sep(s, d, self.maxsplit),
                None => split_whitespace(s, self.maxsplit),
            })
            .collect();
        let width = parts.iter().map(Vec::len).max().unwrap_or(0);
        let mut shape = x.shape().to_vec();
        let counts: Vec<i64> = parts.iter().map(|p| p.len() as i64).collect();
        ctx.output::<i64>(1, &shape)?.copy_from_slice(&counts);
        shape.push(width);
        let mut out = Vec::with_capacity(parts.len() * width);
        for mut p in parts {
            p.resize(width, String::new());
            out.extend(p);
        }
        ctx.put(0, Tensor::from_strings(&shape, out)?)
    }
}

struct RegexFullMatch {
    re: regex::Regex,
}

pub(crate) fn create_regex_full_match(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let pattern = init
        .str_opt("pattern")?
        .ok_or_else(|| KernelError::attr("pattern", "required but missing"))?;
    let re = regex::Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| KernelError::attr("pattern", format!("invalid regex: {e}")))?;
    Ok(Box::new(RegexFullMatch { re }))
}

impl Kernel for RegexFullMatch {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let s = x.as_strings()?;
        let out = ctx.output::<bool>(0, x.shape())?;
        for (o, v) in out.iter_mut().zip(s) {
            *o = self.re.is_match(v);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_split_semantics() {
        assert_eq!(split_whitespace("  a b   c ", None), ["a", "b", "c"]);
        assert_eq!(split_whitespace("a b   c", Some(1)), ["a", "b   c"]);
        assert!(split_whitespace("   ", None).is_empty());
        assert_eq!(split_sep("o-n--x-", "-", None), ["o", "n", "", "x", ""]);
        assert_eq!(split_sep("a.b.c", ".", Some(1)), ["a", "b.c"]);
        assert_eq!(split_sep("", ".", None), [""]);
    }
}
