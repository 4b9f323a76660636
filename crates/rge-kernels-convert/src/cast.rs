//! Cast, CastLike and BitCast.
//!
//! A cast between the thirteen byte-sized types (floats, integers, bool) is one typed loop.
//! The other types take a detour: small floats are decoded to f32 and packed integers to
//! i8/u8 first ([`widen`]); on the way out they are encoded from the byte-sized source
//! ([`encode_into`]). Strings parse into, and print from, the byte-sized types.

use rge_kernels::{
    bf16, dispatch_numeric_bool, f16, DType, Kernel, KernelCtx, KernelError, KernelInit,
    KernelResult, Tensor, TensorRef,
};

use crate::num::{convert, Num};
use crate::small_float::{
    code_of_int, e8m0_decode, e8m0_encode, int_of_code, pack_codes, packed_int, unpack_codes,
    Minifloat, RoundMode,
};
use crate::strings::{parse, ToText};
use crate::util::map_into;

/// Options of a cast.
#[derive(Debug, Clone, Copy)]
pub struct CastOpts {
    pub saturate: bool,
    pub round: RoundMode,
}

impl Default for CastOpts {
    fn default() -> Self {
        CastOpts {
            saturate: true,
            round: RoundMode::Up,
        }
    }
}

impl CastOpts {
    fn from_init(init: &KernelInit<'_>) -> KernelResult<Self> {
        Ok(CastOpts {
            saturate: init.int_or("saturate", 1)? != 0,
            round: RoundMode::parse(init.str_or("round_mode", "up")?)?,
        })
    }
}

/// True for the byte-sized numeric types and bool (the types [`Num`] covers).
pub fn is_plain(dt: DType) -> bool {
    matches!(
        dt,
        DType::Float
            | DType::Double
            | DType::Float16
            | DType::Bfloat16
            | DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::Uint8
            | DType::Uint16
            | DType::Uint32
            | DType::Uint64
            | DType::Bool
    )
}

/// A plain tensor holding the values of a small-float or packed-integer tensor (f32 for the
/// floats, i8/u8 for packed integers); `None` when `x` is already plain or a string.
pub fn widen(x: &TensorRef<'_>) -> KernelResult<Option<Tensor>> {
    let dt = x.dtype();
    let n = x.len();
    if let Some(mf) = Minifloat::of(dt) {
        let bits = if dt == DType::Float4E2M1 { 4 } else { 8 };
        let codes = if bits == 4 {
            unpack_codes(x.bytes()?, 4, n)
        } else {
            x.bytes()?.to_vec()
        };
        let v: Vec<f32> = codes.iter().map(|&c| mf.decode(c)).collect();
        return Tensor::from_vec(x.shape(), v).map(Some);
    }
    if dt == DType::Float8E8M0 {
        let v: Vec<f32> = x.bytes()?.iter().map(|&c| e8m0_decode(c)).collect();
        return Tensor::from_vec(x.shape(), v).map(Some);
    }
    if let Some((bits, signed)) = packed_int(dt) {
        let codes = unpack_codes(x.bytes()?, bits, n);
        return if signed {
            let v: Vec<i8> = codes
                .iter()
                .map(|&c| int_of_code(c, bits, true) as i8)
                .collect();
            Tensor::from_vec(x.shape(), v).map(Some)
        } else {
            Tensor::from_vec(x.shape(), codes).map(Some)
        };
    }
    Ok(None)
}

/// Casts `x` to `to` into output `out` of `ctx`.
pub fn cast_into(
    ctx: &mut KernelCtx<'_>,
    out: usize,
    x: TensorRef<'_>,
    to: DType,
    opts: CastOpts,
) -> KernelResult<()> {
    let from = x.dtype();
    if from == to {
        return copy_into(ctx, out, x);
    }
    if matches!(from, DType::Complex64 | DType::Complex128)
        || matches!(to, DType::Complex64 | DType::Complex128)
    {
        return Err(KernelError::unsupported(format!(
            "cast from {from} to {to}"
        )));
    }
    if let Some(w) = widen(&x)? {
        return cast_into(ctx, out, w.view(), to, opts);
    }
    if from == DType::String {
        return cast_from_strings(ctx, out, x, to, opts);
    }
    if to == DType::String {
        let strings = dispatch_numeric_bool!(from, S => Ok(to_strings::<S>(x.as_slice::<S>()?)))?;
        return ctx.put(out, Tensor::from_strings(x.shape(), strings)?);
    }
    if is_plain(to) {
        let threads = ctx.threads();
        return dispatch_numeric_bool!(from, S => {
            let src = x.as_slice::<S>()?;
            dispatch_numeric_bool!(to, D => {
                let dst = ctx.output::<D>(out, x.shape())?;
                map_into(src, dst, threads, convert::<S, D>);
                Ok(())
            })
        });
    }
    dispatch_numeric_bool!(from, S => encode_into(ctx, out, x.shape(), x.as_slice::<S>()?, to, opts))
}

/// Encodes plain values into a small-float or packed-integer output.
pub fn encode_into<S: Num>(
    ctx: &mut KernelCtx<'_>,
    out: usize,
    shape: &[usize],
    src: &[S],
    to: DType,
    opts: CastOpts,
) -> KernelResult<()> {
    let dst = ctx.output_bytes(out, to, shape)?;
    encode_slice(src, to, opts, dst)
}

/// Encodes plain values as `to` codes into `dst` (packed for sub-byte types).
pub fn encode_slice<S: Num>(
    src: &[S],
    to: DType,
    opts: CastOpts,
    dst: &mut [u8],
) -> KernelResult<()> {
    if let Some(mf) = Minifloat::of(to) {
        let sat = opts.saturate;
        if to == DType::Float4E2M1 {
            pack_codes(src.iter().map(|&s| mf.encode(s.to_f64(), sat)), 4, dst);
        } else {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = mf.encode(s.to_f64(), sat);
            }
        }
        return Ok(());
    }
    if to == DType::Float8E8M0 {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = e8m0_encode(s.to_f64() as f32, opts.saturate, opts.round);
        }
        return Ok(());
    }
    if let Some((bits, _)) = packed_int(to) {
        pack_codes(
            src.iter().map(|&s| code_of_int(s.to_i64(), bits)),
            bits,
            dst,
        );
        return Ok(());
    }
    Err(KernelError::unsupported(format!("cast to {to}")))
}

fn copy_into(ctx: &mut KernelCtx<'_>, out: usize, x: TensorRef<'_>) -> KernelResult<()> {
    if x.dtype().is_string() {
        return ctx.put(out, x.to_owned());
    }
    let src = x.bytes()?;
    let dst = ctx.output_bytes(out, x.dtype(), x.shape())?;
    dst.copy_from_slice(src);
    Ok(())
}

fn to_strings<S: ToText>(src: &[S]) -> Vec<String> {
    src.iter().map(|&v| v.to_text()).collect()
}

fn parse_all<D: Num>(src: &[String]) -> KernelResult<Vec<D>> {
    src.iter().map(|s| parse::<D>(s)).collect()
}

fn cast_from_strings(
    ctx: &mut KernelCtx<'_>,
    out: usize,
    x: TensorRef<'_>,
    to: DType,
    opts: CastOpts,
) -> KernelResult<()> {
    let src = x.as_strings()?;
    if is_plain(to) {
        return dispatch_numeric_bool!(to, D => {
            let v = parse_all::<D>(src)?;
            let dst = ctx.output::<D>(out, x.shape())?;
            dst.copy_from_slice(&v);
            Ok(())
        });
    }
    if packed_int(to).is_some() {
        let v = parse_all::<i64>(src)?;
        return encode_into(ctx, out, x.shape(), &v, to, opts);
    }
    let v = parse_all::<f64>(src)?;
    encode_into(ctx, out, x.shape(), &v, to, opts)
}

fn target_type(init: &KernelInit<'_>) -> KernelResult<DType> {
    let to = init.int("to")?;
    i32::try_from(to)
        .ok()
        .and_then(DType::from_onnx)
        .ok_or_else(|| KernelError::attr("to", format!("{to} is not a known data type")))
}

/// Cast: `to` attribute; `saturate` (opset 19+) and `round_mode` (opset 24+).
struct Cast {
    to: DType,
    opts: CastOpts,
}

impl Kernel for Cast {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        cast_into(ctx, 0, x, self.to, self.opts)
    }
}

pub fn cast_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Cast {
        to: target_type(init)?,
        opts: CastOpts::from_init(init)?,
    }))
}

/// CastLike: the type of input 1.
struct CastLike {
    opts: CastOpts,
}

impl Kernel for CastLike {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let to = ctx.input(1)?.dtype();
        cast_into(ctx, 0, x, to, self.opts)
    }
}

pub fn cast_like_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(CastLike {
        opts: CastOpts::from_init(init)?,
    }))
}

/// BitCast: the same bits read as another type of the same width.
struct BitCast {
    to: DType,
}

impl Kernel for BitCast {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let from = x.dtype();
        if from.is_string() || self.to.is_string() {
            return Err(KernelError::invalid(
                "BitCast does not take or give strings",
            ));
        }
        if from.bits() != self.to.bits() {
            return Err(KernelError::invalid(format!(
                "BitCast from {from} ({} bits) to {} ({} bits): widths differ",
                from.bits(),
                self.to,
                self.to.bits()
            )));
        }
        let src = x.bytes()?;
        if self.to == DType::Bool && src.iter().any(|&b| b > 1) {
            return Err(KernelError::invalid(
                "BitCast to BOOL of a byte other than 0 or 1",
            ));
        }
        let dst = ctx.output_bytes(0, self.to, x.shape())?;
        dst.copy_from_slice(src);
        Ok(())
    }
}

pub fn bitcast_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let to = target_type(init)?;
    if to.is_string() {
        return Err(KernelError::attr("to", "BitCast cannot give strings"));
    }
    Ok(Box::new(BitCast { to }))
}

// Keep the half types referenced for the dispatch macros' expansions.
#[allow(dead_code)]
type _Halves = (f16, bf16);
