//! TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml 1 and 3): the node arrays are
//! checked and linked into trees when the kernel is built (lengths equal, every child inside
//! its tree, no cycles), then each row walks every tree; leaves add their weights to the
//! targets (classes), aggregated and post-transformed as onnxruntime does.
//!
//! As in onnxruntime, a double X is compared with the thresholds in double precision (the
//! `*_as_tensor` attributes of opset 3 keep them double) and its scores are summed in double;
//! every other input type is compared and summed in float, the thresholds rounded to float.

use std::collections::HashMap;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::labels::Labels;
use crate::post::{binary_scores, probit, Post, SecondClass};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    Leaf,
}

fn mode(s: &str) -> KernelResult<Mode> {
    Ok(match s {
        "BRANCH_LEQ" => Mode::Leq,
        "BRANCH_LT" => Mode::Lt,
        "BRANCH_GTE" => Mode::Gte,
        "BRANCH_GT" => Mode::Gt,
        "BRANCH_EQ" => Mode::Eq,
        "BRANCH_NEQ" => Mode::Neq,
        "LEAF" => Mode::Leaf,
        other => {
            return Err(KernelError::attr(
                "nodes_modes",
                format!("unknown mode `{other}`"),
            ))
        }
    })
}

#[derive(Debug, Clone)]
struct Node {
    mode: Mode,
    feature: usize,
    /// The threshold as written (float attributes widened, `_as_tensor` ones as is).
    value: f64,
    missing_true: bool,
    /// Indices into the node array.
    yes: usize,
    no: usize,
    /// (target or class, weight) of a leaf.
    weights: Vec<(usize, f64)>,
}

/// The linked trees: nodes and each tree's root.
struct Forest {
    nodes: Vec<Node>,
    roots: Vec<usize>,
    max_feature: usize,
}

/// Values from `name` (floats) or `name_as_tensor` (opset 3, double), at full precision.
fn floats(init: &KernelInit<'_>, name: &str) -> KernelResult<Vec<f64>> {
    if let Some(v) = init.floats_opt(name)? {
        return Ok(v.iter().map(|&v| f64::from(v)).collect());
    }
    match init.tensor_opt(&format!("{name}_as_tensor"))? {
        Some(t) => t.view().to_f64_vec(),
        None => Ok(Vec::new()),
    }
}

/// The precision a row is compared and summed in: f32, or f64 for a double X.
trait Num: Copy + PartialOrd + std::ops::Add<Output = Self> {
    const ZERO: Self;
    fn of(v: f64) -> Self;
    fn is_nan(self) -> bool;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
}

impl Num for f32 {
    const ZERO: Self = 0.0;
    fn of(v: f64) -> Self {
        v as f32
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Num for f64 {
    const ZERO: Self = 0.0;
    fn of(v: f64) -> Self {
        v
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// X, [F] (one row) or [N, F]: (N, F, values) in f64 for a double X, else in f32 (ints and
/// float16 converted, as onnxruntime does).
enum Rows {
    F32(usize, usize, Vec<f32>),
    F64(usize, usize, Vec<f64>),
}

fn rows(ctx: &KernelCtx<'_>) -> KernelResult<Rows> {
    let (n, f) = crate::input::rows_and_features(ctx)?;
    let x = ctx.input(0)?;
    let v = x.to_f64_vec()?;
    Ok(if x.dtype() == DType::Double {
        Rows::F64(n, f, v)
    } else {
        Rows::F32(n, f, v.into_iter().map(|v| v as f32).collect())
    })
}

/// `prefix` is "target" or "class"; targets/classes must be below `outputs`.
fn forest(init: &KernelInit<'_>, prefix: &str, outputs: usize) -> KernelResult<Forest> {
    let ints = |n: &str| init.ints_or_empty(n);
    let tree_ids = ints("nodes_treeids")?;
    let node_ids = ints("nodes_nodeids")?;
    let features = ints("nodes_featureids")?;
    let trues = ints("nodes_truenodeids")?;
    let falses = ints("nodes_falsenodeids")?;
    let values = floats(init, "nodes_values")?;
    let modes = init.strings_opt("nodes_modes")?.unwrap_or(&[]);
    let missing = ints("nodes_missing_value_tracks_true")?;
    let n = tree_ids.len();
    for (name, len) in [
        ("nodes_nodeids", node_ids.len()),
        ("nodes_featureids", features.len()),
        ("nodes_modes", modes.len()),
        ("nodes_truenodeids", trues.len()),
        ("nodes_falsenodeids", falses.len()),
        ("nodes_values", values.len()),
    ] {
        if len != n {
            return Err(KernelError::attr(
                name,
                format!("has {len} values; nodes_treeids has {n}"),
            ));
        }
    }
    if !missing.is_empty() && missing.len() != n {
        return Err(KernelError::attr(
            "nodes_missing_value_tracks_true",
            format!("has {} values for {n} nodes", missing.len()),
        ));
    }
    if n == 0 {
        return Err(KernelError::attr(
            "nodes_treeids",
            "the ensemble has no nodes",
        ));
    }
    let mut index: HashMap<(i64, i64), usize> = HashMap::with_capacity(n);
    let mut roots = Vec::new();
    let mut seen_tree = std::collections::HashSet::new();
    for i in 0..n {
        if index.insert((tree_ids[i], node_ids[i]), i).is_some() {
            return Err(KernelError::attr(
                "nodes_nodeids",
                format!(
                    "node {} of tree {} is defined twice",
                    node_ids[i], tree_ids[i]
                ),
            ));
        }
        if seen_tree.insert(tree_ids[i]) {
            roots.push(i);
        }
    }
    let mut nodes = Vec::with_capacity(n);
    let mut max_feature = 0;
    for i in 0..n {
        let m = mode(&modes[i])?;
        let child = |id: i64, what: &str| -> KernelResult<usize> {
            index.get(&(tree_ids[i], id)).copied().ok_or_else(|| {
                KernelError::attr(
                    what,
                    format!(
                        "node {} of tree {} points to node {id}, which is not in the tree",
                        node_ids[i], tree_ids[i]
                    ),
                )
            })
        };
        let (yes, no, feature) = if m == Mode::Leaf {
            (i, i, 0)
        } else {
            let f = usize::try_from(features[i]).map_err(|_| {
                KernelError::attr("nodes_featureids", format!("feature {} < 0", features[i]))
            })?;
            max_feature = max_feature.max(f + 1);
            (
                child(trues[i], "nodes_truenodeids")?,
                child(falses[i], "nodes_falsenodeids")?,
                f,
            )
        };
        nodes.push(Node {
            mode: m,
            feature,
            value: values[i],
            missing_true: missing.get(i).is_some_and(|&v| v != 0),
            yes,
            no,
            weights: Vec::new(),
        });
    }
    // The leaves' weights.
    let t_tree = ints(&format!("{prefix}_treeids"))?;
    let t_node = ints(&format!("{prefix}_nodeids"))?;
    let t_id = ints(&format!("{prefix}_ids"))?;
    let t_w = floats(init, &format!("{prefix}_weights"))?;
    for (name, len) in [
        (format!("{prefix}_nodeids"), t_node.len()),
        (format!("{prefix}_ids"), t_id.len()),
        (format!("{prefix}_weights"), t_w.len()),
    ] {
        if len != t_tree.len() {
            return Err(KernelError::attr(
                name,
                format!("has {len} values; {prefix}_treeids has {}", t_tree.len()),
            ));
        }
    }
    for k in 0..t_tree.len() {
        let at = index.get(&(t_tree[k], t_node[k])).copied().ok_or_else(|| {
            KernelError::attr(
                format!("{prefix}_nodeids"),
                format!(
                    "weight {k} names node {} of tree {}, which does not exist",
                    t_node[k], t_tree[k]
                ),
            )
        })?;
        let id = usize::try_from(t_id[k])
            .ok()
            .filter(|&v| v < outputs)
            .ok_or_else(|| {
                KernelError::attr(
                    format!("{prefix}_ids"),
                    format!("{} is outside [0, {outputs})", t_id[k]),
                )
            })?;
        nodes[at].weights.push((id, t_w[k]));
    }
    let f = Forest {
        nodes,
        roots,
        max_feature,
    };
    f.check_acyclic()?;
    Ok(f)
}

impl Forest {
    /// Every walk ends at a leaf: a depth-first search per tree finds any node reached again
    /// while it is on the current path (a cycle would make a walk loop forever).
    fn check_acyclic(&self) -> KernelResult<()> {
        const NEW: u8 = 0;
        const ON_PATH: u8 = 1;
        const DONE: u8 = 2;
        let cycle = || KernelError::attr("nodes_truenodeids", "a tree has a cycle");
        let mut state = vec![NEW; self.nodes.len()];
        for &root in &self.roots {
            // (node, its children are done)
            let mut stack = vec![(root, false)];
            while let Some((i, finished)) = stack.pop() {
                if finished {
                    state[i] = DONE;
                    continue;
                }
                match state[i] {
                    DONE => continue,
                    ON_PATH => return Err(cycle()),
                    _ => {}
                }
                state[i] = ON_PATH;
                stack.push((i, true));
                let node = &self.nodes[i];
                if node.mode != Mode::Leaf {
                    for c in [node.yes, node.no] {
                        match state[c] {
                            ON_PATH => return Err(cycle()),
                            NEW => stack.push((c, false)),
                            _ => {}
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn leaf<T: Num>(&self, root: usize, x: &[T]) -> &Node {
        let mut node = &self.nodes[root];
        while node.mode != Mode::Leaf {
            let v = x[node.feature];
            let go = if v.is_nan() && node.missing_true {
                true
            } else {
                let s = T::of(node.value);
                match node.mode {
                    Mode::Leq => v <= s,
                    Mode::Lt => v < s,
                    Mode::Gte => v >= s,
                    Mode::Gt => v > s,
                    Mode::Eq => v == s,
                    Mode::Neq => v != s,
                    Mode::Leaf => unreachable!("loop ends at leaves"),
                }
            };
            node = &self.nodes[if go { node.yes } else { node.no }];
        }
        node
    }

    fn check_features(&self, f: usize) -> KernelResult<()> {
        if self.max_feature > f {
            return Err(KernelError::invalid(format!(
                "the trees use feature {} but X has {f} features",
                self.max_feature - 1
            )));
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Average,
    Min,
    Max,
}

struct TreeRegressor {
    forest: Forest,
    targets: usize,
    aggregate: Aggregate,
    base: Vec<f64>,
    post: Post,
}

pub(crate) fn tree_ensemble_regressor(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let targets = init.int_or("n_targets", 1)?;
    let targets = usize::try_from(targets)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| {
            KernelError::attr("n_targets", format!("must be positive, got {targets}"))
        })?;
    let aggregate = match init.str_or("aggregate_function", "SUM")? {
        "SUM" => Aggregate::Sum,
        "AVERAGE" => Aggregate::Average,
        "MIN" => Aggregate::Min,
        "MAX" => Aggregate::Max,
        other => {
            return Err(KernelError::attr(
                "aggregate_function",
                format!("`{other}` is not SUM, AVERAGE, MIN or MAX"),
            ))
        }
    };
    let base = floats(init, "base_values")?;
    if !base.is_empty() && base.len() != targets {
        return Err(KernelError::attr(
            "base_values",
            format!("has {} values for {targets} targets", base.len()),
        ));
    }
    Ok(Box::new(TreeRegressor {
        forest: forest(init, "target", targets)?,
        targets,
        aggregate,
        base,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

impl TreeRegressor {
    /// The aggregated scores of each row, base values added, before the post transform.
    fn scores<T: Num>(&self, n: usize, f: usize, x: &[T]) -> KernelResult<Vec<f32>> {
        self.forest.check_features(f)?;
        let t = self.targets;
        let trees = self.forest.roots.len() as f64;
        let mut out = Vec::with_capacity(n * t);
        for r in 0..n {
            let xr = &x[r * f..(r + 1) * f];
            let mut acc = vec![T::ZERO; t];
            let mut has = vec![false; t];
            for &root in &self.forest.roots {
                let leaf = self.forest.leaf(root, xr);
                // Weights of one leaf add up; trees combine by the aggregate.
                let mut this = vec![None::<T>; t];
                for &(id, w) in &leaf.weights {
                    let s = this[id].get_or_insert(T::ZERO);
                    *s = *s + T::of(w);
                }
                for (k, v) in this.into_iter().enumerate() {
                    let Some(v) = v else { continue };
                    acc[k] = match (self.aggregate, has[k]) {
                        (Aggregate::Min, true) if v < acc[k] => v,
                        (Aggregate::Max, true) if v > acc[k] => v,
                        (Aggregate::Min | Aggregate::Max, true) => acc[k],
                        (Aggregate::Min | Aggregate::Max, false) => v,
                        _ => acc[k] + v,
                    };
                    has[k] = true;
                }
            }
            out.extend(acc.iter().enumerate().map(|(k, &v)| {
                let v = if let Aggregate::Average = self.aggregate {
                    T::of(v.to_f64() / trees)
                } else {
                    v
                };
                (v + T::of(self.base.get(k).copied().unwrap_or(0.0))).to_f32()
            }));
        }
        Ok(out)
    }
}

impl Kernel for TreeRegressor {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, scores) = match rows(ctx)? {
            Rows::F32(n, f, x) => (n, self.scores(n, f, &x)?),
            Rows::F64(n, f, x) => (n, self.scores(n, f, &x)?),
        };
        let t = self.targets;
        let mut out = Vec::with_capacity(n * t);
        for row in scores.chunks(t) {
            let mut row = row.to_vec();
            if t >= 2 {
                self.post.apply_row(&mut row);
            } else if self.post == Post::Probit {
                row[0] = probit(row[0]);
            }
            out.extend(row);
        }
        ctx.put(0, rge_kernels::Tensor::from_vec(&[n, t], out)?)
    }
}

struct TreeClassifier {
    forest: Forest,
    labels: Labels,
    base: Vec<f32>,
    post: Post,
    /// Two labels and leaves that score class 0 only: one score column made into two.
    binary: bool,
    all_positive: bool,
}

pub(crate) fn tree_ensemble_classifier(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let labels = Labels::from_init(init, "classlabels_int64s")?;
    let classes = labels.len();
    if classes == 0 {
        return Err(KernelError::attr(
            "classlabels_int64s",
            "no class labels (classlabels_int64s or classlabels_strings)",
        ));
    }
    let forest = forest(init, "class", classes)?;
    let base: Vec<f32> = floats(init, "base_values")?
        .into_iter()
        .map(|v| v as f32)
        .collect();
    if !base.is_empty() && base.len() != classes && !(classes == 2 && base.len() == 1) {
        return Err(KernelError::attr(
            "base_values",
            format!("has {} values for {classes} classes", base.len()),
        ));
    }
    let used: std::collections::BTreeSet<usize> = forest
        .nodes
        .iter()
        .flat_map(|n| n.weights.iter().map(|w| w.0))
        .collect();
    let all_positive = forest
        .nodes
        .iter()
        .flat_map(|n| n.weights.iter())
        .all(|w| w.1 >= 0.0);
    Ok(Box::new(TreeClassifier {
        binary: classes == 2 && used.len() == 1,
        all_positive,
        forest,
        labels,
        base,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

impl TreeClassifier {
    /// Each row's summed class weights and whether any leaf voted for the class.
    fn sums<T: Num>(&self, n: usize, f: usize, x: &[T]) -> KernelResult<Vec<(f32, bool)>> {
        self.forest.check_features(f)?;
        let c = self.labels.len();
        let mut out = Vec::with_capacity(n * c);
        for r in 0..n {
            let xr = &x[r * f..(r + 1) * f];
            let mut scores = vec![T::ZERO; c];
            let mut has = vec![false; c];
            for &root in &self.forest.roots {
                for &(id, w) in &self.forest.leaf(root, xr).weights {
                    scores[id] = scores[id] + T::of(w);
                    has[id] = true;
                }
            }
            out.extend(scores.iter().zip(has).map(|(s, h)| (s.to_f32(), h)));
        }
        Ok(out)
    }
}

impl Kernel for TreeClassifier {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, sums) = match rows(ctx)? {
            Rows::F32(n, f, x) => (n, self.sums(n, f, &x)?),
            Rows::F64(n, f, x) => (n, self.sums(n, f, &x)?),
        };
        let c = self.labels.len();
        let mut picks = Vec::with_capacity(n);
        let mut out = Vec::with_capacity(n * c);
        for row in sums.chunks(c) {
            let mut scores: Vec<f32> = row.iter().map(|p| p.0).collect();
            let mut has: Vec<bool> = row.iter().map(|p| p.1).collect();
            if c > 2 {
                for (k, b) in self.base.iter().enumerate() {
                    scores[k] += b;
                }
                let best = (0..c).filter(|&k| has[k] || !self.base.is_empty()).fold(
                    None,
                    |best: Option<usize>, k| match best {
                        Some(b) if scores[b] >= scores[k] => Some(b),
                        _ => Some(k),
                    },
                );
                picks.push(Ok(best.unwrap_or(0)));
                self.post.apply_row(&mut scores);
                out.extend(scores);
                continue;
            }
            // Two classes.
            if self.base.len() == 2 && has[1] {
                scores[0] += self.base[0];
                scores[1] += self.base[1];
            } else if self.base.len() == 2 {
                scores[1] = self.base[1] + scores[0];
                scores[0] = -scores[1];
                has[1] = true;
            } else if self.base.len() == 1 {
                scores[0] += self.base[0];
            }
            if has[1] {
                let pos = if self.binary {
                    scores[1] > if self.all_positive { 0.5 } else { 0.0 }
                } else {
                    scores[1] > scores[0]
                };
                picks.push(self.labels.binary(pos));
                self.post.apply_row(&mut scores);
                out.extend(scores);
            } else {
                let s = scores[0];
                let (pos, second) = if self.all_positive {
                    (s > 0.5, SecondClass::Complement)
                } else {
                    (s > 0.0, SecondClass::Mirror)
                };
                picks.push(if self.binary {
                    self.labels.binary(pos)
                } else {
                    self.labels.binary(s > 0.0)
                });
                if self.post == Post::Probit {
                    out.extend([probit(s), 0.0]);
                } else {
                    out.extend(binary_scores(s, self.post, second));
                }
            }
        }
        self.labels.put(ctx, 0, &picks)?;
        ctx.put(1, rge_kernels::Tensor::from_vec(&[n, c], out)?)
    }
}
