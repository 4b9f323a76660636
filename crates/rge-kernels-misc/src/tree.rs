//! ai.onnx.ml TreeEnsemble (5): walks every tree for each row of X [N, F], aggregates the leaf
//! weights per target (sum, average, min, max) and applies the post transform.
//!
//! Where the spec leaves room this follows onnxruntime, which the models are checked against:
//! a target no leaf reached is 0 under every aggregate (MIN and MAX included; the ONNX
//! reference starts them at the type's largest and smallest values); a float X is compared
//! and summed in float, a double one in double; a tree whose root has both branches on one
//! leaf id (`nodes_trueleafs` and `nodes_falseleafs` set) is the single leaf at the root's
//! index. Where onnxruntime 1.32 departs from the spec, this keeps to the spec: post_transform
//! 1 is SOFTMAX and 2 LOGISTIC (onnxruntime reads them the other way round), every post
//! transform applies to a single target too (onnxruntime applies PROBIT alone there), and
//! BRANCH_MEMBER tests exact membership (onnxruntime matches some non-integer values, 2.5 to
//! a set holding 2). `nodes_hitrates` is checked for length and otherwise unused.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::put_f64;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    Member,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Aggregate {
    Average,
    Sum,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PostTransform {
    None,
    Softmax,
    Logistic,
    SoftmaxZero,
    Probit,
}

/// Where a branch goes.
#[derive(Debug, Clone, Copy)]
enum Next {
    Node(usize),
    Leaf(usize),
}

#[derive(Debug, Clone)]
struct Node {
    cmp: Cmp,
    split: f64,
    feature: usize,
    missing_true: bool,
    members: Vec<f64>,
    on_true: Next,
    on_false: Next,
}

struct TreeEnsemble {
    nodes: Vec<Node>,
    roots: Vec<Next>,
    leaf_targets: Vec<usize>,
    leaf_weights: Vec<f64>,
    n_targets: usize,
    aggregate: Aggregate,
    post: PostTransform,
}

fn ints(init: &KernelInit<'_>, name: &str) -> KernelResult<Vec<i64>> {
    init.ints_opt(name)?
        .map(<[i64]>::to_vec)
        .ok_or_else(|| KernelError::attr(name, "required but missing"))
}

fn index(v: i64, n: usize, name: &str) -> KernelResult<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&i| i < n)
        .ok_or_else(|| KernelError::attr(name, format!("index {v} out of range [0, {n})")))
}

pub(crate) fn parse_post_transform(v: i64) -> KernelResult<PostTransform> {
    Ok(match v {
        0 => PostTransform::None,
        1 => PostTransform::Softmax,
        2 => PostTransform::Logistic,
        3 => PostTransform::SoftmaxZero,
        4 => PostTransform::Probit,
        other => {
            return Err(KernelError::attr(
                "post_transform",
                format!("unknown post transform {other}"),
            ))
        }
    })
}

pub(crate) fn create_tree_ensemble(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let tensor_f64 = |name: &str| -> KernelResult<Vec<f64>> {
        init.tensor_opt(name)?
            .ok_or_else(|| KernelError::attr(name, "required but missing"))?
            .view()
            .to_f64_vec()
    };
    let splits = tensor_f64("nodes_splits")?;
    let modes = init
        .tensor_opt("nodes_modes")?
        .ok_or_else(|| KernelError::attr("nodes_modes", "required but missing"))?
        .view()
        .to_i64_vec()?;
    let features = ints(init, "nodes_featureids")?;
    let true_ids = ints(init, "nodes_truenodeids")?;
    let false_ids = ints(init, "nodes_falsenodeids")?;
    let true_leafs = ints(init, "nodes_trueleafs")?;
    let false_leafs = ints(init, "nodes_falseleafs")?;
    let missing = init.ints_or_empty("nodes_missing_value_tracks_true")?;
    if let Some(h) = init.tensor_opt("nodes_hitrates")? {
        if h.view().len() != splits.len() {
            return Err(KernelError::attr(
                "nodes_hitrates",
                format!("has {} values for {} nodes", h.view().len(), splits.len()),
            ));
        }
    }
    let leaf_targets = ints(init, "leaf_targetids")?;
    let leaf_weights = tensor_f64("leaf_weights")?;
    let roots = ints(init, "tree_roots")?;
    let n_targets = init.int("n_targets")?;
    let n = splits.len();
    if [
        modes.len(),
        features.len(),
        true_ids.len(),
        false_ids.len(),
        true_leafs.len(),
        false_leafs.len(),
    ]
    .iter()
    .any(|&l| l != n)
        || (!missing.is_empty() && missing.len() != n)
    {
        return Err(KernelError::attr(
            "nodes_*",
            "node attributes differ in length",
        ));
    }
    let n_leaves = leaf_weights.len();
    if leaf_targets.len() != n_leaves {
        return Err(KernelError::attr(
            "leaf_targetids",
            "length differs from leaf_weights",
        ));
    }
    let n_targets = usize::try_from(n_targets)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| KernelError::attr("n_targets", "must be positive"))?;
    let leaf_targets = leaf_targets
        .iter()
        .map(|&t| index(t, n_targets, "leaf_targetids"))
        .collect::<KernelResult<Vec<_>>>()?;
    let mut member_sets = Vec::new();
    if let Some(m) = init.tensor_opt("membership_values")? {
        let mut cur = Vec::new();
        for v in m.view().to_f64_vec()? {
            if v.is_nan() {
                member_sets.push(std::mem::take(&mut cur));
            } else {
                cur.push(v);
            }
        }
        if !cur.is_empty() {
            member_sets.push(cur);
        }
    }
    let mut member_sets = member_sets.into_iter();
    let next = |leaf: i64, id: i64, name: &str| -> KernelResult<Next> {
        Ok(if leaf != 0 {
            Next::Leaf(index(id, n_leaves, name)?)
        } else {
            Next::Node(index(id, n, name)?)
        })
    };
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let cmp = match modes[i] {
            0 => Cmp::Leq,
            1 => Cmp::Lt,
            2 => Cmp::Gte,
            3 => Cmp::Gt,
            4 => Cmp::Eq,
            5 => Cmp::Neq,
            6 => Cmp::Member,
            m => {
                return Err(KernelError::attr(
                    "nodes_modes",
                    format!("unknown mode {m}"),
                ))
            }
        };
        let members = if cmp == Cmp::Member {
            member_sets.next().ok_or_else(|| {
                KernelError::attr("membership_values", "missing a set for a member node")
            })?
        } else {
            Vec::new()
        };
        nodes.push(Node {
            cmp,
            split: splits[i],
            feature: usize::try_from(features[i])
                .map_err(|_| KernelError::attr("nodes_featureids", "negative feature"))?,
            missing_true: missing.get(i).is_some_and(|&m| m != 0),
            members,
            on_true: next(true_leafs[i], true_ids[i], "nodes_truenodeids")?,
            on_false: next(false_leafs[i], false_ids[i], "nodes_falsenodeids")?,
        });
    }
    let roots = roots
        .iter()
        .map(|&r| {
            let r = index(r, n, "tree_roots")?;
            let single_leaf =
                true_leafs[r] != 0 && false_leafs[r] != 0 && true_ids[r] == false_ids[r];
            Ok(if single_leaf {
                Next::Leaf(index(r as i64, n_leaves, "tree_roots")?)
            } else {
                Next::Node(r)
            })
        })
        .collect::<KernelResult<Vec<_>>>()?;
    let aggregate = match init.int_or("aggregate_function", 1)? {
        0 => Aggregate::Average,
        1 => Aggregate::Sum,
        2 => Aggregate::Min,
        3 => Aggregate::Max,
        other => {
            return Err(KernelError::attr(
                "aggregate_function",
                format!("unknown aggregate {other}"),
            ))
        }
    };
    Ok(Box::new(TreeEnsemble {
        nodes,
        roots,
        leaf_targets,
        leaf_weights,
        n_targets,
        aggregate,
        post: parse_post_transform(init.int_or("post_transform", 0)?)?,
    }))
}

impl TreeEnsemble {
    /// The leaf a row reaches from `root`.
    fn leaf(&self, row: &[f64], root: Next, narrow: bool) -> KernelResult<usize> {
        let mut at = root;
        for _ in 0..=self.nodes.len() {
            match at {
                Next::Leaf(l) => return Ok(l),
                Next::Node(i) => {
                    let node = &self.nodes[i];
                    let x = *row.get(node.feature).ok_or_else(|| {
                        KernelError::invalid(format!(
                            "feature {} out of range for {} features",
                            node.feature,
                            row.len()
                        ))
                    })?;
                    let s = if narrow {
                        node.split as f32 as f64
                    } else {
                        node.split
                    };
                    let cond = match node.cmp {
                        Cmp::Leq => x <= s,
                        Cmp::Lt => x < s,
                        Cmp::Gte => x >= s,
                        Cmp::Gt => x > s,
                        Cmp::Eq => x == s,
                        Cmp::Neq => x != s,
                        Cmp::Member => node
                            .members
                            .iter()
                            .any(|&m| x == if narrow { m as f32 as f64 } else { m }),
                    } || (node.missing_true && x.is_nan());
                    at = if cond { node.on_true } else { node.on_false };
                }
            }
        }
        Err(KernelError::invalid("the tree has a cycle"))
    }
}

/// Applies a post transform to one row of scores.
pub(crate) fn post_transform(post: PostTransform, row: &mut [f64]) {
    match post {
        PostTransform::None => {}
        PostTransform::Logistic => row.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp())),
        PostTransform::Softmax | PostTransform::SoftmaxZero => {
            let zero = post == PostTransform::SoftmaxZero;
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for v in row.iter_mut() {
                // onnxruntime's SOFTMAX_ZERO leaves |v| <= 1e-7 at 0.
                *v = if zero && v.abs() <= 1e-7 {
                    0.0
                } else {
                    (*v - m).exp()
                };
                sum += *v;
            }
            if sum > 0.0 {
                row.iter_mut().for_each(|v| *v /= sum);
            }
        }
        PostTransform::Probit => row.iter_mut().for_each(|v| *v = probit(*v)),
    }
}

/// √2 · erfinv(2p − 1), with ONNX Runtime's closed-form erfinv approximation.
fn probit(p: f64) -> f64 {
    let x = 2.0 * p - 1.0;
    let sgn = if x < 0.0 { -1.0 } else { 1.0 };
    let w = (1.0 - x) * (1.0 + x);
    let l = w.ln();
    let v = 2.0 / (std::f64::consts::PI * 0.147) + 0.5 * l;
    let v2 = l / 0.147;
    let v3 = -v + (v * v - v2).sqrt();
    std::f64::consts::SQRT_2 * sgn * v3.sqrt()
}

impl Kernel for TreeEnsemble {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (rows, feats) = match x.shape() {
            [n, f] => (*n, *f),
            [f] => (1, *f),
            s => return Err(KernelError::invalid(format!("X must be [N, F], got {s:?}"))),
        };
        let dt = x.dtype();
        // Float inputs are compared and summed in float (the splits and weights rounded to
        // it), a double input in double.
        let narrow = dt != DType::Double;
        let round = |v: f64| if narrow { v as f32 as f64 } else { v };
        let data: Vec<f64> = x.to_f64_vec()?.into_iter().map(round).collect();
        let nt = self.n_targets;
        let mut out = vec![0.0; rows * nt];
        let mut has = vec![false; nt];
        let trees = self.roots.len() as f64;
        for r in 0..rows {
            let row = &data[r * feats..(r + 1) * feats];
            let acc = &mut out[r * nt..(r + 1) * nt];
            has.fill(false);
            for &root in &self.roots {
                let l = self.leaf(row, root, narrow)?;
                let (t, w) = (self.leaf_targets[l], round(self.leaf_weights[l]));
                acc[t] = match (self.aggregate, has[t]) {
                    (Aggregate::Sum | Aggregate::Average, _) => round(acc[t] + w),
                    (_, false) => w,
                    (Aggregate::Min, true) if w < acc[t] => w,
                    (Aggregate::Max, true) if w > acc[t] => w,
                    (Aggregate::Min | Aggregate::Max, true) => acc[t],
                };
                has[t] = true;
            }
            if self.aggregate == Aggregate::Average {
                acc.iter_mut().for_each(|v| *v = round(*v / trees));
            }
            post_transform(self.post, acc);
        }
        put_f64(ctx, 0, dt, &[rows, nt], &out)
    }
}
