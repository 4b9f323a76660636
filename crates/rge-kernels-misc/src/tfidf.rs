//! TfIdfVectorizer (9): counts the pool's n-grams (with skips) in each row of a [C] or [B, C]
//! input of int32, int64 or strings, then weighs the counts (TF, IDF, TFIDF).

use std::collections::HashMap;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Weighting {
    Tf,
    Idf,
    TfIdf,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Token {
    Int(i64),
    Str(String),
}

struct TfIdf {
    min_n: usize,
    max_n: usize,
    max_skip: usize,
    weighting: Weighting,
    weights: Vec<f32>,
    out_size: usize,
    /// n-gram → output column.
    grams: HashMap<Vec<Token>, usize>,
    strings: bool,
}

pub(crate) fn create_tfidf(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let min_n = init.int("min_gram_length")?;
    let max_n = init.int("max_gram_length")?;
    let max_skip = init.int("max_skip_count")?;
    if min_n < 1 || max_n < min_n || max_skip < 0 {
        return Err(KernelError::attr(
            "min_gram_length",
            format!("invalid gram lengths {min_n}..{max_n} or skip {max_skip}"),
        ));
    }
    let weighting = match init.str_opt("mode")?.unwrap_or("TF") {
        "TF" => Weighting::Tf,
        "IDF" => Weighting::Idf,
        "TFIDF" => Weighting::TfIdf,
        other => return Err(KernelError::attr("mode", format!("unknown mode '{other}'"))),
    };
    let counts = init.ints_or_empty("ngram_counts")?;
    let indexes = init.ints_or_empty("ngram_indexes")?;
    let pool: Vec<Token> = match (
        init.ints_opt("pool_int64s")?,
        init.strings_opt("pool_strings")?,
    ) {
        (Some(p), None) => p.iter().map(|&v| Token::Int(v)).collect(),
        (None, Some(p)) => p.iter().map(|s| Token::Str(s.clone())).collect(),
        (None, None) => Vec::new(),
        (Some(_), Some(_)) => {
            return Err(KernelError::attr(
                "pool_strings",
                "only one pool may be given",
            ))
        }
    };
    let strings = init.strings_opt("pool_strings")?.is_some();
    let out_size = indexes.iter().copied().max().map_or(0, |m| m.max(-1) + 1) as usize;
    if indexes.iter().any(|&i| i < 0) {
        return Err(KernelError::attr("ngram_indexes", "negative index"));
    }
    let weights = init
        .floats_opt("weights")?
        .map(<[f32]>::to_vec)
        .unwrap_or_default();
    if !weights.is_empty() && weights.len() < out_size {
        return Err(KernelError::attr(
            "weights",
            "fewer weights than output columns",
        ));
    }
    let mut grams = HashMap::new();
    // Gram ids run over the pool in order; sizes outside [min_n, max_n] keep their ids.
    let mut id = 0usize;
    for (i, &start) in counts.iter().enumerate() {
        let n = i + 1;
        let end = counts.get(i + 1).copied().unwrap_or(pool.len() as i64);
        let (start, end) = (start.max(0) as usize, end.max(0) as usize);
        if start > end || end > pool.len() {
            return Err(KernelError::attr("ngram_counts", "out of the pool's range"));
        }
        let items = &pool[start..end];
        for g in items.chunks_exact(n) {
            if n >= min_n as usize && n <= max_n as usize {
                let col = *indexes.get(id).ok_or_else(|| {
                    KernelError::attr("ngram_indexes", "fewer indexes than n-grams")
                })? as usize;
                grams.insert(g.to_vec(), col);
            }
            id += 1;
        }
    }
    Ok(Box::new(TfIdf {
        min_n: min_n as usize,
        max_n: max_n as usize,
        max_skip: max_skip as usize,
        weighting,
        weights,
        out_size,
        grams,
        strings,
    }))
}

impl TfIdf {
    fn count_row(&self, row: &[Token], freq: &mut [u64]) {
        let len = row.len();
        let mut start_n = self.min_n;
        let mut gram: Vec<Token> = Vec::with_capacity(self.max_n);
        for skip in 1..=self.max_skip + 1 {
            for s in 0..len {
                if s + skip * (start_n - 1) >= len {
                    break;
                }
                gram.clear();
                let mut item = s;
                for n in 1..=self.max_n {
                    if item >= len {
                        break;
                    }
                    gram.push(row[item].clone());
                    if n >= start_n {
                        if let Some(&col) = self.grams.get(&gram) {
                            freq[col] += 1;
                        }
                    }
                    item += skip;
                }
            }
            // Unigrams are counted once, not once per skip distance.
            if start_n == 1 {
                start_n = 2;
                if start_n > self.max_n {
                    break;
                }
            }
        }
    }
}

impl Kernel for TfIdf {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (rows, cols, out_shape) = match x.shape() {
            [] => (1, 1, vec![self.out_size]),
            [c] => (1, *c, vec![self.out_size]),
            [b, c] if *b > 0 => (*b, *c, vec![*b, self.out_size]),
            s => {
                return Err(KernelError::invalid(format!(
                    "TfIdfVectorizer input must be [C] or [B, C], got {s:?}"
                )))
            }
        };
        let tokens: Vec<Token> = if x.dtype() == DType::String {
            if !self.strings && !self.grams.is_empty() {
                return Err(KernelError::invalid("string input for an integer pool"));
            }
            x.as_strings()?
                .iter()
                .map(|s| Token::Str(s.clone()))
                .collect()
        } else {
            x.to_i64_vec()?.into_iter().map(Token::Int).collect()
        };
        let mut freq = vec![0u64; rows * self.out_size];
        if !self.grams.is_empty() {
            for r in 0..rows {
                self.count_row(
                    &tokens[r * cols..(r + 1) * cols],
                    &mut freq[r * self.out_size..(r + 1) * self.out_size],
                );
            }
        }
        let out = ctx.output::<f32>(0, &out_shape)?;
        let w = &self.weights;
        for (p, (o, &f)) in out.iter_mut().zip(&freq).enumerate() {
            let col = p % self.out_size.max(1);
            *o = match self.weighting {
                Weighting::Tf => f as f32,
                Weighting::Idf if w.is_empty() => (f > 0) as u8 as f32,
                Weighting::Idf => {
                    if f > 0 {
                        w[col]
                    } else {
                        0.0
                    }
                }
                Weighting::TfIdf if w.is_empty() => f as f32,
                Weighting::TfIdf => w[col] * f as f32,
            };
        }
        Ok(())
    }
}
