//! The slice loops of the vector kernels, written once over [`Simd`]: full vectors, then one
//! masked vector for the tail. Each ISA instantiates them inside its `#[target_feature]`
//! entry points (`super::entries`).
//!
//! No closure appears in a hot loop: a closure is a function of its own that does not inherit
//! the entry point's target features, so the intrinsics it calls would not inline (8× slower).
//! The per-element expressions are spliced into the loops by the macros below instead.

use rge_simd::{math, Simd};

/// An elementwise unary function with its attributes (ONNX semantics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    Identity,
    Relu,
    LeakyRelu(f32),
    /// `min(max(x, lo), hi)`.
    Clip(f32, f32),
    Sigmoid,
    /// `max(0, min(1, alpha·x + beta))`.
    HardSigmoid(f32, f32),
    HardSwish,
    Tanh,
    Erf,
    Exp,
    Log,
    Sqrt,
    Reciprocal,
    Neg,
    Abs,
    /// erf-GELU.
    Gelu,
    /// tanh-GELU.
    GeluTanh,
    Softplus,
    Softsign,
    Elu(f32),
    /// `Selu(alpha, gamma)`.
    Selu(f32, f32),
    Celu(f32),
    ThresholdedRelu(f32),
    Mish,
    Swish(f32),
    Sin,
    Cos,
    Floor,
    Ceil,
    Round,
    /// `x·x`.
    Square,
}

/// An elementwise binary function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// NaN-propagating maximum.
    Max,
    /// NaN-propagating minimum.
    Min,
    /// `a^b` (lane by lane through `f32::powf`, which the reference uses too).
    Pow,
    /// `a < 0 ? a·b : a`.
    PRelu,
}

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    /// NaN-propagating.
    Max,
    /// NaN-propagating.
    Min,
    SumSquare,
    SumAbs,
}

impl Reduce {
    /// The neutral element.
    pub fn identity(self) -> f32 {
        match self {
            Reduce::Max => f32::NEG_INFINITY,
            Reduce::Min => f32::INFINITY,
            _ => 0.0,
        }
    }
}

/// One operand of a binary loop: a slice as long as the output, or one value for all.
#[derive(Clone, Copy, Debug)]
pub enum Src<'a> {
    Slice(&'a [f32]),
    Scalar(f32),
}

impl Src<'_> {
    /// The raw operand, checking a slice's length against the output's.
    pub(crate) fn operand(self, n: usize) -> Operand {
        match self {
            Src::Slice(v) => {
                assert_eq!(v.len(), n, "operand length differs from the output's");
                Operand::Ptr(v.as_ptr())
            }
            Src::Scalar(x) => Operand::Scalar(x),
        }
    }
}

/// A raw operand: `n` readable floats at a pointer (possibly the output itself), or a value.
#[derive(Clone, Copy, Debug)]
pub enum Operand {
    Ptr(*const f32),
    Scalar(f32),
}

/// `y[i] = $e` for every element, `$v` bound to the vector at `x[i]`: full vectors, then one
/// masked vector. Expanded in place (no closure). Needs `x` readable and `y` writable for `n`
/// floats, which may be the same memory (each block is read before it is written).
macro_rules! map_loop {
    ($s:ident, $x:expr, $y:expr, $n:expr, |$v:ident| $e:expr) => {{
        let (x, y, n): (*const f32, *mut f32, usize) = ($x, $y, $n);
        let lanes = lanes_of($s);
        let mut i = 0;
        while i + lanes <= n {
            // SAFETY: i + LANES <= n (the caller's contract covers n floats).
            let $v = unsafe { $s.load(x.add(i)) };
            let r = $e;
            // SAFETY: as above.
            unsafe { $s.store(y.add(i), r) };
            i += lanes;
        }
        if i < n {
            // SAFETY: n - i < LANES floats remain.
            let $v = unsafe { $s.load_n(x.add(i), n - i, 0.0) };
            let r = $e;
            // SAFETY: as above.
            unsafe { $s.store_n(y.add(i), r, n - i) };
        }
    }};
}

/// `y[i] = $e` with `$p`, `$q` bound to operands `$a`, `$b` at `i` (each a pointer to `n`
/// floats or a scalar), one loop per operand kind so no per-block branch remains. Expanded in
/// place (no closure); pointers may alias `y`.
macro_rules! zip_loop {
    ($s:ident, $a:expr, $b:expr, $y:expr, $n:expr, |$p:ident, $q:ident| $e:expr) => {{
        let (a, b, y, n): (Operand, Operand, *mut f32, usize) = ($a, $b, $y, $n);
        match (a, b) {
            (Operand::Ptr(pa), Operand::Ptr(pb)) => zip_run!($s, y, n, i, m;
                $s.load(pa.add(i)), $s.load(pb.add(i)),
                $s.load_n(pa.add(i), m, 1.0), $s.load_n(pb.add(i), m, 1.0);
                |$p, $q| $e),
            (Operand::Ptr(pa), Operand::Scalar(xb)) => {
                let vb = $s.splat(xb);
                zip_run!($s, y, n, i, m;
                    $s.load(pa.add(i)), vb, $s.load_n(pa.add(i), m, 1.0), vb;
                    |$p, $q| $e)
            }
            (Operand::Scalar(xa), Operand::Ptr(pb)) => {
                let va = $s.splat(xa);
                zip_run!($s, y, n, i, m;
                    va, $s.load(pb.add(i)), va, $s.load_n(pb.add(i), m, 1.0);
                    |$p, $q| $e)
            }
            (Operand::Scalar(xa), Operand::Scalar(xb)) => {
                let (va, vb) = ($s.splat(xa), $s.splat(xb));
                zip_run!($s, y, n, i, m; va, vb, va, vb; |$p, $q| $e)
            }
        }
    }};
}

/// The loop of [`zip_loop!`] for one operand kind: `$la`/`$lb` load a full vector at `$i`,
/// `$ta`/`$tb` the `$m`-lane tail.
macro_rules! zip_run {
    ($s:ident, $y:ident, $n:ident, $i:ident, $m:ident;
     $la:expr, $lb:expr, $ta:expr, $tb:expr; |$p:ident, $q:ident| $e:expr) => {{
        let lanes = lanes_of($s);
        let mut $i = 0;
        while $i + lanes <= $n {
            #[allow(unused_unsafe)]
            // SAFETY: i + LANES <= n for every pointer operand (the caller's contract).
            let ($p, $q) = unsafe { ($la, $lb) };
            let r = $e;
            // SAFETY: as above.
            unsafe { $s.store($y.add($i), r) };
            $i += lanes;
        }
        if $i < $n {
            let $m = $n - $i;
            #[allow(unused_unsafe)]
            // SAFETY: m < LANES floats remain in every pointer operand.
            let ($p, $q) = unsafe { ($ta, $tb) };
            let r = $e;
            // SAFETY: as above.
            unsafe { $s.store_n($y.add($i), r, $m) };
        }
    }};
}

/// The lane count of token `s` (lets the macros name it without the type).
#[inline(always)]
fn lanes_of<S: Simd>(_: S) -> usize {
    S::LANES
}

/// sin or cos of a block, in f64 lane by lane when a lane is too large for the vector
/// reduction (or is not finite).
#[inline(always)]
fn trig<S: Simd>(s: S, v: S::V, cos: bool) -> S::V {
    let big = s.hmax(s.abs(v));
    if big < math::TRIG_VECTOR_LIMIT {
        let (sn, cs) = math::sin_cos(s, v);
        return if cos { cs } else { sn };
    }
    let mut l = [0.0f32; 16];
    // SAFETY: `l` holds 16 >= LANES floats.
    unsafe { s.store(l.as_mut_ptr(), v) };
    for x in l.iter_mut().take(S::LANES) {
        let d = *x as f64;
        *x = if cos { d.cos() } else { d.sin() } as f32;
    }
    // SAFETY: as above.
    unsafe { s.load(l.as_ptr()) }
}

/// `y = op(x)`.
///
/// # Safety
/// `x` readable and `y` writable for `n` floats (they may be the same memory).
#[inline(always)]
pub unsafe fn unary<S: Simd>(s: S, op: &UnaryOp, x: *const f32, y: *mut f32, n: usize) {
    let zero = s.splat(0.0);
    let one = s.splat(1.0);
    macro_rules! go {
        (|$v:ident| $e:expr) => {
            map_loop!(s, x, y, n, |$v| $e)
        };
    }
    match *op {
        UnaryOp::Identity => go!(|v| v),
        UnaryOp::Relu => go!(|v| s.max(zero, v)),
        UnaryOp::LeakyRelu(a) => go!(|v| s.select(s.lt(v, zero), s.mul(v, s.splat(a)), v)),
        UnaryOp::Clip(lo, hi) => go!(|v| s.min(s.splat(hi), s.max(s.splat(lo), v))),
        UnaryOp::Sigmoid => go!(|v| math::sigmoid(s, v)),
        UnaryOp::HardSigmoid(a, b) => {
            go!(|v| s.max(zero, s.min(one, s.fma(s.splat(a), v, s.splat(b)))))
        }
        UnaryOp::HardSwish => go!(|v| {
            let h = s.max(zero, s.min(one, s.fma(s.splat(1.0 / 6.0), v, s.splat(0.5))));
            s.mul(v, h)
        }),
        UnaryOp::Tanh => go!(|v| math::tanh(s, v)),
        UnaryOp::Erf => go!(|v| math::erf(s, v)),
        UnaryOp::Exp => go!(|v| math::exp(s, v)),
        UnaryOp::Log => go!(|v| math::log(s, v)),
        UnaryOp::Sqrt => go!(|v| s.sqrt(v)),
        UnaryOp::Reciprocal => go!(|v| s.div(one, v)),
        UnaryOp::Neg => go!(|v| s.neg(v)),
        UnaryOp::Abs => go!(|v| s.abs(v)),
        UnaryOp::Gelu => go!(|v| math::gelu(s, v)),
        UnaryOp::GeluTanh => go!(|v| math::gelu_tanh(s, v)),
        UnaryOp::Softplus => go!(|v| math::softplus(s, v)),
        UnaryOp::Softsign => go!(|v| s.div(v, s.add(one, s.abs(v)))),
        UnaryOp::Elu(a) => go!(|v| {
            let neg = s.mul(s.splat(a), math::expm1(s, v));
            s.select(s.lt(zero, v), v, math::keep_nan(s, v, neg))
        }),
        UnaryOp::Selu(a, g) => go!(|v| {
            let neg = s.mul(s.splat(a), math::expm1(s, v));
            let r = s.select(s.lt(zero, v), v, neg);
            math::keep_nan(s, v, s.mul(s.splat(g), r))
        }),
        UnaryOp::Celu(a) => go!(|v| {
            // max(0, x) + min(0, a·expm1(x/a))
            let e = s.mul(s.splat(a), math::expm1(s, s.div(v, s.splat(a))));
            let r = s.add(s.max(zero, v), s.min(zero, e));
            math::keep_nan(s, v, r)
        }),
        // x > alpha ? x : 0, so NaN gives 0 (the ONNX reference's `where`).
        UnaryOp::ThresholdedRelu(a) => go!(|v| s.select(s.lt(s.splat(a), v), v, zero)),
        UnaryOp::Mish => go!(|v| s.mul(v, math::tanh(s, math::softplus(s, v)))),
        UnaryOp::Swish(a) => go!(|v| math::swish(s, v, a)),
        UnaryOp::Sin => go!(|v| trig(s, v, false)),
        UnaryOp::Cos => go!(|v| trig(s, v, true)),
        UnaryOp::Floor => go!(|v| s.floor(v)),
        UnaryOp::Ceil => go!(|v| s.ceil(v)),
        UnaryOp::Round => go!(|v| s.round(v)),
        UnaryOp::Square => go!(|v| s.mul(v, v)),
    }
}

/// Loads operand `o` at element `i` (`l` lanes).
///
/// # Safety
/// A pointer operand must be readable at `i..i + l`.
#[inline(always)]
unsafe fn load_op<S: Simd>(s: S, o: Operand, i: usize, l: usize) -> S::V {
    match o {
        // SAFETY: forwarded contract.
        Operand::Ptr(p) => unsafe {
            if l == S::LANES {
                s.load(p.add(i))
            } else {
                s.load_n(p.add(i), l, 1.0)
            }
        },
        Operand::Scalar(x) => s.splat(x),
    }
}

/// `y = op(a, b)`.
///
/// # Safety
/// Pointer operands readable and `y` writable for `n` floats (operands may alias `y`).
#[inline(always)]
pub unsafe fn binary<S: Simd>(s: S, op: BinOp, a: Operand, b: Operand, y: *mut f32, n: usize) {
    macro_rules! go {
        (|$p:ident, $q:ident| $e:expr) => {
            zip_loop!(s, a, b, y, n, |$p, $q| $e)
        };
    }
    match op {
        BinOp::Add => go!(|p, q| s.add(p, q)),
        BinOp::Sub => go!(|p, q| s.sub(p, q)),
        BinOp::Mul => go!(|p, q| s.mul(p, q)),
        BinOp::Div => go!(|p, q| s.div(p, q)),
        // max(p, q) returns q when either is NaN; a NaN p is put back.
        BinOp::Max => go!(|p, q| s.select(s.is_nan(p), p, s.max(p, q))),
        BinOp::Min => go!(|p, q| s.select(s.is_nan(p), p, s.min(p, q))),
        BinOp::PRelu => go!(|p, q| s.select(s.lt(p, s.splat(0.0)), s.mul(p, q), p)),
        // Exponents with an exact vector form (the same bits as powf); others call powf.
        BinOp::Pow => match b {
            Operand::Scalar(1.0) => go!(|p, _q| p),
            Operand::Scalar(2.0) => go!(|p, _q| s.mul(p, p)),
            Operand::Scalar(-1.0) => go!(|p, _q| s.div(s.splat(1.0), p)),
            // SAFETY: this function's contract (n floats at each pointer and at y).
            _ => unsafe { pow_loop(a, b, y, n) },
        },
    }
}

/// `y = powf(a, b)` element by element, one tight loop per operand form.
///
/// # Safety
/// `y` writable and each pointer operand readable for `n` floats (`y` may be an operand).
#[inline(always)]
unsafe fn pow_loop(a: Operand, b: Operand, y: *mut f32, n: usize) {
    // SAFETY (every block below): i < n, which the contract covers.
    match (a, b) {
        (Operand::Ptr(p), Operand::Ptr(q)) => {
            for i in 0..n {
                unsafe { *y.add(i) = (*p.add(i)).powf(*q.add(i)) };
            }
        }
        (Operand::Ptr(p), Operand::Scalar(e)) => {
            for i in 0..n {
                unsafe { *y.add(i) = (*p.add(i)).powf(e) };
            }
        }
        (Operand::Scalar(x), Operand::Ptr(q)) => {
            for i in 0..n {
                unsafe { *y.add(i) = x.powf(*q.add(i)) };
            }
        }
        (Operand::Scalar(x), Operand::Scalar(e)) => {
            let v = x.powf(e);
            for i in 0..n {
                unsafe { *y.add(i) = v };
            }
        }
    }
}

/// `acc = op(acc, v)` on vectors, NaN-propagating for Max/Min.
#[inline(always)]
fn step<S: Simd>(s: S, op: Reduce, acc: S::V, v: S::V) -> S::V {
    match op {
        Reduce::Sum => s.add(acc, v),
        Reduce::Max => s.select(s.is_nan(acc), acc, s.max(acc, v)),
        Reduce::Min => s.select(s.is_nan(acc), acc, s.min(acc, v)),
        Reduce::SumSquare => s.fma(v, v, acc),
        Reduce::SumAbs => s.add(acc, s.abs(v)),
    }
}

// The two helpers below are functions, not closures inside `reduce`: a closure does not
// inherit the ISA's target features, so the intrinsics it calls stayed calls.

/// Two accumulators' partial results merged: as sums (the terms are already squared or
/// absolute) or as max/min.
#[inline(always)]
fn merge<S: Simd>(s: S, op: Reduce, a: S::V, b: S::V) -> S::V {
    match op {
        Reduce::Max | Reduce::Min => step(s, op, a, b),
        _ => s.add(a, b),
    }
}

/// One vector's lanes reduced to a float.
#[inline(always)]
fn horizontal<S: Simd>(s: S, op: Reduce, v: S::V) -> f32 {
    match op {
        Reduce::Max => s.hmax(v),
        Reduce::Min => s.hmin(v),
        _ => s.hsum(v),
    }
}

/// The reduction of `x`; sums in four f32 vector accumulators per 4·LANES block, added in
/// f64 block by block so long rows keep their precision.
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs (what its constructor checks); the slices
/// bound every access.
#[inline(always)]
pub unsafe fn reduce<S: Simd>(s: S, op: Reduce, x: &[f32]) -> f32 {
    let id = op.identity();
    let n = x.len();
    let p = x.as_ptr();
    let mut total = id as f64;
    let combine = |t: f64, v: f32| match op {
        Reduce::Max => {
            if t.is_nan() || v.is_nan() {
                f64::NAN
            } else {
                t.max(v as f64)
            }
        }
        Reduce::Min => {
            if t.is_nan() || v.is_nan() {
                f64::NAN
            } else {
                t.min(v as f64)
            }
        }
        _ => t + v as f64,
    };
    // Blocks of 256 vectors per f64 step: few conversions, short f32 sums.
    let chunk = S::LANES * 256;
    let mut start = 0;
    while start < n {
        let end = (start + chunk).min(n);
        let mut acc = [s.splat(id); 4];
        let mut i = start;
        while i + 4 * S::LANES <= end {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: i + (k+1)·LANES <= end <= n.
                *a = step(s, op, *a, unsafe { s.load(p.add(i + k * S::LANES)) });
            }
            i += 4 * S::LANES;
        }
        while i < end {
            let l = S::LANES.min(end - i);
            // SAFETY: i + l <= end; masked lanes are filled with the identity.
            let v = unsafe { s.load_n(p.add(i), l, id) };
            acc[0] = step(s, op, acc[0], v);
            i += l;
        }
        let (m01, m23) = (merge(s, op, acc[0], acc[1]), merge(s, op, acc[2], acc[3]));
        total = combine(total, horizontal(s, op, merge(s, op, m01, m23)));
        start = end;
    }
    total as f32
}

/// `acc[i] = op(acc[i], x[i])`.
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs (what its constructor checks); the slices
/// bound every access.
#[inline(always)]
pub unsafe fn accumulate<S: Simd>(s: S, op: Reduce, acc: &mut [f32], x: &[f32]) {
    let (a, b) = (acc.as_mut_ptr(), x.as_ptr());
    let (pa, pb) = (Operand::Ptr(a as *const f32), Operand::Ptr(b));
    let n = acc.len();
    // Both hold n floats (checked by the caller).
    match op {
        Reduce::SumSquare => zip_loop!(s, pa, pb, a, n, |p, q| s.fma(q, q, p)),
        Reduce::SumAbs => zip_loop!(s, pa, pb, a, n, |p, q| s.add(p, s.abs(q))),
        _ => zip_loop!(s, pa, pb, a, n, |p, q| step(s, op, p, q)),
    }
}

/// Softmax (or log-softmax) of a row: `max`, `Σ e^{x-max}`, then `e^{x-max}/Σ` (or
/// `x - max - ln Σ`). Terms under `e^-87` count as 0 ([`math::exp_normal`]): next to the
/// largest term (1) they cannot change the sum, and computing them as denormals costs a
/// microcode assist per vector (masked scores at −10000 made a softmax 20× slower).
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs (what its constructor checks); the slices
/// bound every access.
#[inline(always)]
pub unsafe fn softmax<S: Simd>(s: S, x: &[f32], y: &mut [f32], log: bool) {
    let n = x.len();
    if n == 0 {
        return;
    }
    // SAFETY: the reduction reads x only.
    let m = unsafe { reduce(s, Reduce::Max, x) };
    // A row of -inf: e^{x-max} is NaN, as the reference gives (-inf - -inf).
    let mv = s.splat(m);
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    // Lane sums in f32 vectors, flushed to f64 every 256 vectors.
    let mut sum = 0.0f64;
    let mut acc = s.splat(0.0);
    let mut i = 0;
    let mut since_flush = 0;
    // Two vectors a step, each with its own sum: two independent chains through the
    // exponential (PP-OCR's 80 rows of 6625 at 1 thread, with `exp_normal`'s short form:
    // 0.45 → 0.33 ms; four a step 0.345; onnxruntime 0.24).
    let mut acc2 = s.splat(0.0);
    while i + 2 * S::LANES <= n {
        // SAFETY: i + 2·LANES <= n for both slices.
        let (e0, e1) = unsafe {
            (
                math::exp_normal(s, s.sub(s.load(xp.add(i)), mv)),
                math::exp_normal(s, s.sub(s.load(xp.add(i + S::LANES)), mv)),
            )
        };
        if !log {
            // SAFETY: as above.
            unsafe {
                s.store(yp.add(i), e0);
                s.store(yp.add(i + S::LANES), e1);
            }
        }
        acc = s.add(acc, e0);
        acc2 = s.add(acc2, e1);
        since_flush += 2;
        if since_flush >= 256 {
            sum += s.hsum(acc) as f64 + s.hsum(acc2) as f64;
            acc = s.splat(0.0);
            acc2 = s.splat(0.0);
            since_flush = 0;
        }
        i += 2 * S::LANES;
    }
    acc = s.add(acc, acc2);
    while i + S::LANES <= n {
        // SAFETY: i + LANES <= n for both slices.
        let e = math::exp_normal(s, s.sub(unsafe { s.load(xp.add(i)) }, mv));
        if !log {
            // SAFETY: as above.
            unsafe { s.store(yp.add(i), e) };
        }
        acc = s.add(acc, e);
        since_flush += 1;
        if since_flush == 256 {
            sum += s.hsum(acc) as f64;
            acc = s.splat(0.0);
            since_flush = 0;
        }
        i += S::LANES;
    }
    if i < n {
        let l = n - i;
        // SAFETY: l < LANES floats remain in both slices.
        let v = unsafe { s.load_n(xp.add(i), l, f32::NEG_INFINITY) };
        let e = math::exp_normal(s, s.sub(v, mv));
        if !log {
            // SAFETY: as above.
            unsafe { s.store_n(yp.add(i), e, l) };
        }
        // Masked lanes give e^{-inf} = 0 (or NaN for an all -inf row, zeroed here; the stored
        // lanes keep their NaN).
        acc = s.add(acc, s.select(s.is_nan(e), s.splat(0.0), e));
    }
    sum += s.hsum(acc) as f64;
    if log {
        // (x - max) is exact near the maximum; ln Σ is subtracted after, one rounding.
        let lsum = s.splat(sum.ln() as f32);
        map_loop!(s, xp, yp, n, |v| s.sub(s.sub(v, mv), lsum));
    } else {
        let inv = s.splat((1.0 / sum) as f32);
        map_loop!(s, yp as *const f32, yp, n, |v| s.mul(v, inv));
    }
}

/// `(mean, variance)` of a row, two passes; with `rms`, `(0, mean of squares)`.
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs (what its constructor checks); the slices
/// bound every access.
#[inline(always)]
pub unsafe fn mean_var<S: Simd>(s: S, x: &[f32], rms: bool) -> (f32, f32) {
    let n = x.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let mean = if rms {
        0.0
    } else {
        // SAFETY: reads x only.
        (unsafe { reduce(s, Reduce::Sum, x) } as f64 / nf) as f32
    };
    let mv = s.splat(mean);
    let p = x.as_ptr();
    let mut acc = 0.0f64;
    let mut start = 0;
    let chunk = S::LANES * 256;
    while start < n {
        let end = (start + chunk).min(n);
        let mut a = s.splat(0.0);
        let mut i = start;
        while i < end {
            let l = S::LANES.min(end - i);
            // SAFETY: i + l <= n; masked lanes load the mean (a zero deviation).
            let d = s.sub(unsafe { s.load_n(p.add(i), l, mean) }, mv);
            a = s.fma(d, d, a);
            i += l;
        }
        acc += s.hsum(a) as f64;
        start = end;
    }
    (mean, (acc / nf) as f32)
}

/// `y = (x - mean)·inv·gamma + beta`.
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs (what its constructor checks); the slices
/// bound every access.
#[inline(always)]
pub unsafe fn scale_shift<S: Simd>(
    s: S,
    x: &[f32],
    y: &mut [f32],
    mean: f32,
    inv: f32,
    gamma: Operand,
    beta: Operand,
) {
    let (mv, iv) = (s.splat(mean), s.splat(inv));
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    let n = x.len();
    let mut i = 0;
    while i < n {
        let l = S::LANES.min(n - i);
        // SAFETY: i + l <= n for x, y and the slice operands (checked by the caller).
        unsafe {
            let v = if l == S::LANES {
                s.load(xp.add(i))
            } else {
                s.load_n(xp.add(i), l, 0.0)
            };
            let g = load_op(s, gamma, i, l);
            let b = load_op(s, beta, i, l);
            let r = s.fma(s.mul(s.sub(v, mv), iv), g, b);
            if l == S::LANES {
                s.store(yp.add(i), r);
            } else {
                s.store_n(yp.add(i), r, l);
            }
        }
        i += l;
    }
}
