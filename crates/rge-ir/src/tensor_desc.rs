//! Tensor descriptors (`ge::GeTensorDesc` / `TensorDescriptor`).
//!
//! A graph keeps several descriptors per node, so [`TensorDesc`] is kept at 72 bytes: the
//! shape (rank ≤ 4 inline), data type, format, origin format and origin data type live
//! inline; the origin shape, shape ranges and the rarely set `TensorDescriptor` extension
//! fields live in a box that is allocated only when one of them is set to a non-default value.

use std::fmt;
use std::str::FromStr;

use crate::attr::{AttrMap, HasAttrs};
use crate::dtype::DataType;
use crate::error::{IrError, Result};
use crate::format::{Format, PrimaryFormat};
use crate::shape::{Shape, ShapeRange};

/// Where a tensor lives (`ge::DeviceType`); written as "NPU"/"CPU".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DeviceType {
    /// The accelerator (default).
    #[default]
    Npu = 0,
    /// The host CPU.
    Cpu = 1,
}

impl DeviceType {
    /// "NPU" or "CPU".
    pub const fn as_str(self) -> &'static str {
        match self {
            DeviceType::Npu => "NPU",
            DeviceType::Cpu => "CPU",
        }
    }

    /// Parses "NPU" or "CPU".
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "NPU" => Some(DeviceType::Npu),
            "CPU" => Some(DeviceType::Cpu),
            _ => None,
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DeviceType {
    type Err = IrError;

    fn from_str(s: &str) -> Result<Self> {
        DeviceType::parse(s).ok_or_else(|| IrError::Invalid {
            what: "device type",
            value: s.to_string(),
        })
    }
}

/// The rarely set fields of a descriptor, boxed.
#[derive(Clone, Debug, PartialEq, Default)]
struct TensorDescExt {
    origin_shape: Option<Shape>,
    shape_range: ShapeRange,
    origin_shape_range: ShapeRange,
    weight_size: i64,
    reuse_input: bool,
    reuse_input_index: i64,
    output_tensor: bool,
    input_tensor: bool,
    device_type: DeviceType,
    real_dim_cnt: i64,
    data_offset: i64,
    cmps_size: i64,
    cmps_tab: String,
    cmps_tab_offset: i64,
}

impl TensorDescExt {
    fn is_default(&self) -> bool {
        *self == TensorDescExt::default()
    }
}

static EMPTY_RANGE: ShapeRange = ShapeRange(Vec::new());

/// A tensor's metadata: shape, data type, format, origin (pre-transformation) values,
/// serialization extension fields and attributes.
#[derive(Clone, Debug, Default)]
pub struct TensorDesc {
    shape: Shape,
    dtype: DataType,
    origin_dtype: DataType,
    format: Format,
    origin_format: Format,
    /// `TensorDescriptor.size`, inline: the compile sets it on every output, and a box of
    /// the rare fields for it alone cost 192 bytes per output.
    size: i64,
    ext: Option<Box<TensorDescExt>>,
    attrs: AttrMap,
}

impl PartialEq for TensorDesc {
    fn eq(&self, other: &Self) -> bool {
        let ext_eq = match (&self.ext, &other.ext) {
            (None, None) => true,
            (Some(a), Some(b)) => a == b,
            (Some(e), None) | (None, Some(e)) => e.is_default(),
        };
        self.shape == other.shape
            && self.dtype == other.dtype
            && self.origin_dtype == other.origin_dtype
            && self.format == other.format
            && self.origin_format == other.origin_format
            && self.size == other.size
            && ext_eq
            && self.attrs == other.attrs
    }
}

macro_rules! ext_scalar {
    ($($(#[$m:meta])* $get:ident, $set:ident: $t:ty;)*) => {$(
        $(#[$m])*
        pub fn $get(&self) -> $t {
            self.ext.as_ref().map_or_else(<$t>::default, |e| e.$get)
        }

        #[doc = concat!("Sets `", stringify!($get), "` (allocates the extension box only for a non-default value).")]
        pub fn $set(&mut self, v: $t) {
            if let Some(e) = self.ext_mut_unless(v == <$t>::default()) {
                e.$get = v;
            }
        }
    )*};
}

impl TensorDesc {
    /// A descriptor with the given shape, data type and format; the origin format is ND,
    /// the origin data type undefined and the origin shape not initialized.
    pub fn new(shape: Shape, dtype: DataType, format: Format) -> Self {
        TensorDesc {
            shape,
            dtype,
            format,
            ..TensorDesc::default()
        }
    }

    /// A descriptor with the given shape and data type in format ND.
    pub fn with_shape_dtype(shape: Shape, dtype: DataType) -> Self {
        TensorDesc::new(shape, dtype, Format::ND)
    }

    /// The extension box, allocated on demand unless `skip` and it is not there yet.
    fn ext_mut_unless(&mut self, skip: bool) -> Option<&mut TensorDescExt> {
        if skip && self.ext.is_none() {
            None
        } else {
            Some(self.ext.get_or_insert_with(Default::default))
        }
    }

    /// True if the extension box is allocated (for tests and memory accounting).
    pub fn has_ext(&self) -> bool {
        self.ext.is_some()
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The shape, mutable.
    pub fn shape_mut(&mut self) -> &mut Shape {
        &mut self.shape
    }

    /// Sets the shape.
    pub fn set_shape(&mut self, shape: Shape) {
        self.shape = shape;
    }

    /// The data type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Sets the data type.
    pub fn set_dtype(&mut self, dtype: DataType) {
        self.dtype = dtype;
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Sets the format.
    pub fn set_format(&mut self, format: Format) {
        self.format = format;
    }

    /// The origin shape, `None` while not initialized.
    pub fn origin_shape(&self) -> Option<&Shape> {
        self.ext.as_ref()?.origin_shape.as_ref()
    }

    /// Sets the origin shape and marks it initialized.
    pub fn set_origin_shape(&mut self, shape: Shape) {
        self.ext.get_or_insert_with(Default::default).origin_shape = Some(shape);
    }

    /// Forgets the origin shape (back to not initialized).
    pub fn clear_origin_shape(&mut self) {
        if let Some(e) = self.ext.as_mut() {
            e.origin_shape = None;
        }
    }

    /// True once an origin shape has been set (`origin_shape_initialized`).
    pub fn origin_shape_initialized(&self) -> bool {
        self.origin_shape().is_some()
    }

    /// The origin format (default ND).
    pub fn origin_format(&self) -> Format {
        self.origin_format
    }

    /// Sets the origin format.
    pub fn set_origin_format(&mut self, format: Format) {
        self.origin_format = format;
    }

    /// The origin data type (default undefined).
    pub fn origin_dtype(&self) -> DataType {
        self.origin_dtype
    }

    /// Sets the origin data type.
    pub fn set_origin_dtype(&mut self, dtype: DataType) {
        self.origin_dtype = dtype;
    }

    /// `TensorDescriptor.size`: the memory size in bytes (default 0).
    pub fn size(&self) -> i64 {
        self.size
    }

    /// Sets `size`.
    pub fn set_size(&mut self, v: i64) {
        self.size = v;
    }

    ext_scalar! {
        /// `TensorDescriptor.weight_size` (default 0).
        weight_size, set_weight_size: i64;
        /// `TensorDescriptor.reuse_input` (default false).
        reuse_input, set_reuse_input: bool;
        /// `TensorDescriptor.reuse_input_index` (default 0).
        reuse_input_index, set_reuse_input_index: i64;
        /// `TensorDescriptor.output_tensor` (default false).
        output_tensor, set_output_tensor: bool;
        /// `TensorDescriptor.input_tensor` (default false).
        input_tensor, set_input_tensor: bool;
        /// `TensorDescriptor.device_type` (default NPU).
        device_type, set_device_type: DeviceType;
        /// `TensorDescriptor.real_dim_cnt` (default 0).
        real_dim_cnt, set_real_dim_cnt: i64;
        /// `TensorDescriptor.data_offset` (default 0).
        data_offset, set_data_offset: i64;
        /// `TensorDescriptor.cmps_size` (default 0).
        cmps_size, set_cmps_size: i64;
        /// `TensorDescriptor.cmps_tab_offset` (default 0).
        cmps_tab_offset, set_cmps_tab_offset: i64;
    }

    /// `TensorDescriptor.cmps_tab` (default empty).
    pub fn cmps_tab(&self) -> &str {
        self.ext.as_ref().map_or("", |e| e.cmps_tab.as_str())
    }

    /// Sets `cmps_tab`.
    pub fn set_cmps_tab(&mut self, tab: impl Into<String>) {
        let tab = tab.into();
        if let Some(e) = self.ext_mut_unless(tab.is_empty()) {
            e.cmps_tab = tab;
        }
    }

    /// The shape range of a dynamic shape (default empty).
    pub fn shape_range(&self) -> &ShapeRange {
        self.ext.as_ref().map_or(&EMPTY_RANGE, |e| &e.shape_range)
    }

    /// Sets the shape range.
    pub fn set_shape_range(&mut self, range: ShapeRange) {
        if let Some(e) = self.ext_mut_unless(range.is_empty()) {
            e.shape_range = range;
        }
    }

    /// The origin shape range (default empty).
    pub fn origin_shape_range(&self) -> &ShapeRange {
        self.ext
            .as_ref()
            .map_or(&EMPTY_RANGE, |e| &e.origin_shape_range)
    }

    /// Sets the origin shape range.
    pub fn set_origin_shape_range(&mut self, range: ShapeRange) {
        if let Some(e) = self.ext_mut_unless(range.is_empty()) {
            e.origin_shape_range = range;
        }
    }

    /// The attributes.
    pub fn attrs(&self) -> &AttrMap {
        &self.attrs
    }

    /// The attributes, mutable.
    pub fn attrs_mut(&mut self) -> &mut AttrMap {
        &mut self.attrs
    }

    /// The data size in bytes of this shape/format/data type, as GE's
    /// `TensorUtils::CalcTensorMemSize`; `Ok(None)` for an unknown shape or a data type
    /// without a fixed size.
    ///
    /// Rules (from GE): the dims are scanned in order and the first negative dim makes the
    /// size unknown, the first 0 dim makes it 0. The element count is the product of the dims
    /// for every supported format except a 4-D (NCHW-ordered) NC1HWC0 shape, whose C is
    /// padded to C1·C0. C0 is the format's c0 when its c0 bits are set, else 32 for the
    /// 1-byte types (int8, uint8, bool, qint8, the dual-sub and 8-bit float types), 64 for the
    /// 4-bit types and 16 otherwise (the last two are rge's choices; GE uses 16). Strings
    /// count 16 bytes per element; sub-byte types are packed and rounded up to a byte.
    /// Formats GE does not size (e.g. FRACTAL_Z_G, NYUV, RESERVED) and an NC1HWC0 shape that
    /// is neither 4-D nor 5-D are errors; overflow is an error.
    pub fn calc_tensor_mem_size(&self) -> Result<Option<i64>> {
        use PrimaryFormat::*;
        let dims = self.shape.dims();
        for &d in dims {
            if d < 0 {
                return Ok(None);
            }
            if d == 0 {
                return Ok(self.dtype.bits().map(|_| 0));
            }
        }
        let shape = match self.format.primary() {
            Nd | Md | Nchw | Hwcn | Nhwc | Chwn | C1hwncoc0 | FractalZ | FilterHwck | FractalNz
            | FractalZz | Ndhwc | Ncdhw | Dhwcn | Dhwnc | FractalZ3d | FractalZ3dTranspose
            | Ndc1hwc0 | FractalZC04 | FractalZnLstm | Nc1hwc0C04 => None,
            Nc1hwc0 if dims.len() == 5 => None,
            Nc1hwc0 if dims.len() == 4 => {
                let c0 = i64::from(self.c0());
                let c1 = dims[1] / c0 + i64::from(dims[1] % c0 != 0);
                Some(Shape::new([dims[0], c1, dims[2], dims[3], c0]))
            }
            _ => {
                return Err(IrError::Invalid {
                    what: "format for memory size",
                    value: format!("{} with shape {}", self.format, self.shape),
                })
            }
        };
        shape.as_ref().unwrap_or(&self.shape).byte_size(self.dtype)
    }

    /// The C0 used to pad C for 5-D layouts (see [`Self::calc_tensor_mem_size`]).
    fn c0(&self) -> u32 {
        use DataType::*;
        if let Some(c0) = self.format.c0() {
            return c0;
        }
        match self.dtype {
            Int8 | Uint8 | Bool | Qint8 | DualSubInt8 | DualSubUint8 | HiFloat8 | Float8E5M2
            | Float8E4M3Fn | Float8E8M0 | Float8E4M3Fnuz | Float8E5M2Fnuz => 32,
            Int4 | Uint4 | Float4E2M1 | Float4E1M2 | HiFloat4 => 64,
            _ => 16,
        }
    }
}

impl HasAttrs for TensorDesc {
    fn attrs(&self) -> &AttrMap {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut AttrMap {
        &mut self.attrs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_small() {
        assert!(
            std::mem::size_of::<TensorDesc>() <= 80,
            "{}",
            std::mem::size_of::<TensorDesc>()
        );
    }

    #[test]
    fn defaults() {
        let d = TensorDesc::default();
        assert_eq!(d.shape(), &Shape::scalar());
        assert_eq!(d.dtype(), DataType::Undefined);
        assert_eq!(d.format(), Format::ND);
        assert_eq!(d.origin_format(), Format::ND);
        assert_eq!(d.origin_dtype(), DataType::Undefined);
        assert_eq!(d.origin_shape(), None);
        assert!(!d.origin_shape_initialized());
        assert_eq!(d.size(), 0);
        assert_eq!(d.device_type(), DeviceType::Npu);
        assert_eq!(d.cmps_tab(), "");
        assert!(d.shape_range().is_empty());
        assert!(!d.has_ext());
        assert!(d.attrs().is_empty());
    }

    #[test]
    fn setters() {
        let mut d = TensorDesc::with_shape_dtype(Shape::new([2, 3]), DataType::Float16);
        assert_eq!(d.format(), Format::ND);
        d.set_format(Format::NCHW);
        d.set_dtype(DataType::Float);
        d.shape_mut().set_dim(0, 4).unwrap();
        assert_eq!(d.shape().dims(), &[4, 3]);
        d.set_shape(Shape::new([1]));
        d.set_origin_format(Format::NHWC);
        d.set_origin_dtype(DataType::Int8);
        // Default values do not allocate.
        d.set_size(0);
        d.set_reuse_input(false);
        d.set_cmps_tab("");
        d.set_shape_range(ShapeRange::default());
        assert!(!d.has_ext());
        d.set_origin_shape(Shape::new([1, 1]));
        assert!(d.has_ext() && d.origin_shape_initialized());
        assert_eq!(d.origin_shape(), Some(&Shape::new([1, 1])));
        d.set_size(64);
        d.set_weight_size(8);
        d.set_reuse_input(true);
        d.set_reuse_input_index(1);
        d.set_output_tensor(true);
        d.set_input_tensor(true);
        d.set_device_type(DeviceType::Cpu);
        d.set_real_dim_cnt(2);
        d.set_data_offset(128);
        d.set_cmps_size(3);
        d.set_cmps_tab("tab");
        d.set_cmps_tab_offset(5);
        d.set_shape_range(ShapeRange::new(vec![(1, 4)]));
        d.set_origin_shape_range(ShapeRange::new(vec![(1, -1)]));
        assert_eq!(
            (
                d.size(),
                d.weight_size(),
                d.reuse_input(),
                d.reuse_input_index()
            ),
            (64, 8, true, 1)
        );
        assert!(d.output_tensor() && d.input_tensor());
        assert_eq!(d.device_type(), DeviceType::Cpu);
        assert_eq!(
            (d.real_dim_cnt(), d.data_offset(), d.cmps_size()),
            (2, 128, 3)
        );
        assert_eq!((d.cmps_tab(), d.cmps_tab_offset()), ("tab", 5));
        assert_eq!(d.shape_range().0, vec![(1, 4)]);
        assert_eq!(d.origin_shape_range().0, vec![(1, -1)]);
        assert_eq!(
            (d.origin_format(), d.origin_dtype()),
            (Format::NHWC, DataType::Int8)
        );
        d.clear_origin_shape();
        assert!(!d.origin_shape_initialized());
        d.attrs_mut().set("x", 1i64);
        assert_eq!(HasAttrs::attrs(&d).get_int("x").unwrap(), Some(1));
    }

    #[test]
    fn equality_ignores_ext_allocation() {
        let a = TensorDesc::new(Shape::new([2]), DataType::Float, Format::ND);
        let mut b = a.clone();
        b.set_weight_size(5);
        assert_ne!(a, b);
        b.set_weight_size(0);
        assert!(b.has_ext());
        assert_eq!(a, b);
        assert_eq!(b, a);
    }

    #[test]
    fn device_type() {
        assert_eq!(DeviceType::parse("CPU"), Some(DeviceType::Cpu));
        assert_eq!("NPU".parse::<DeviceType>().unwrap(), DeviceType::Npu);
        assert!("GPU".parse::<DeviceType>().is_err());
        assert_eq!(DeviceType::Cpu.to_string(), "CPU");
    }

    fn mem(dims: &[i64], dt: DataType, f: Format) -> Result<Option<i64>> {
        TensorDesc::new(Shape::from_slice(dims), dt, f).calc_tensor_mem_size()
    }

    #[test]
    fn mem_size() {
        use DataType::*;
        assert_eq!(mem(&[2, 3], Float, Format::ND).unwrap(), Some(24));
        assert_eq!(mem(&[], Float16, Format::ND).unwrap(), Some(2));
        assert_eq!(mem(&[1, 3, 4, 4], Float, Format::NCHW).unwrap(), Some(192));
        assert_eq!(mem(&[1, 3, 4], Float, Format::NCHW).unwrap(), Some(48));
        assert_eq!(mem(&[3], Int4, Format::ND).unwrap(), Some(2));
        assert_eq!(mem(&[4], String, Format::ND).unwrap(), Some(64));
        assert_eq!(mem(&[4], Undefined, Format::ND).unwrap(), None);
        assert_eq!(mem(&[2, -1], Float, Format::ND).unwrap(), None);
        assert_eq!(mem(&[-2], Float, Format::ND).unwrap(), None);
        // GE scans in order: the first 0 dim wins over a later unknown dim.
        assert_eq!(mem(&[0, -1], Float, Format::ND).unwrap(), Some(0));
        assert_eq!(mem(&[-1, 0], Float, Format::ND).unwrap(), None);
        // NC1HWC0: a 5-D shape is already padded, a 4-D one is NCHW with C padded to C0.
        assert_eq!(
            mem(&[1, 1, 2, 2, 16], Float16, Format::NC1HWC0).unwrap(),
            Some(128)
        );
        assert_eq!(
            mem(&[1, 3, 2, 2], Float16, Format::NC1HWC0).unwrap(),
            Some(128)
        );
        assert_eq!(
            mem(&[1, 17, 2, 2], Float16, Format::NC1HWC0).unwrap(),
            Some(256)
        );
        assert_eq!(
            mem(&[1, 3, 2, 2], Int8, Format::NC1HWC0).unwrap(),
            Some(128)
        );
        assert_eq!(
            mem(&[1, 3, 2, 2], Int4, Format::NC1HWC0).unwrap(),
            Some(128)
        );
        let c0_8 = Format::NC1HWC0.with_c0_format(4).unwrap();
        assert_eq!(mem(&[1, 3, 2, 2], Float, c0_8).unwrap(), Some(128));
        assert!(mem(&[1, 3, 2], Float16, Format::NC1HWC0).is_err());
        // Fractal formats are sized as stored (dims already padded).
        assert_eq!(
            mem(&[4, 1, 16, 16], Float16, Format::FRACTAL_NZ).unwrap(),
            Some(2048)
        );
        assert_eq!(
            mem(
                &[4, 1, 16, 16],
                Float16,
                Format::FRACTAL_Z.with_sub_format(2)
            )
            .unwrap(),
            Some(2048)
        );
        assert!(mem(&[2], Float, Format::RESERVED).is_err());
        assert!(mem(&[2], Float, Format::new(PrimaryFormat::FractalZG)).is_err());
        assert!(matches!(
            mem(&[i64::MAX, 2], Float, Format::ND).unwrap_err(),
            IrError::Overflow { .. }
        ));
        assert!(matches!(
            mem(&[i64::MAX / 2], Float, Format::ND).unwrap_err(),
            IrError::Overflow { .. }
        ));
    }
}
