//! Tensor files for the command line: NumPy `.npy` (read and write) and ONNX `TensorProto`
//! `.pb` (read), and random inputs of a declared dtype and shape.

use std::path::Path;

use rge_kernels::{tensor_from_ir, DType, Tensor, TensorData};

use crate::error::{RuntimeError, RuntimeResult};

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr_of(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Float => "<f4",
        DType::Double => "<f8",
        DType::Float16 => "<f2",
        DType::Int8 => "|i1",
        DType::Uint8 => "|u1",
        DType::Int16 => "<i2",
        DType::Uint16 => "<u2",
        DType::Int32 => "<i4",
        DType::Uint32 => "<u4",
        DType::Int64 => "<i8",
        DType::Uint64 => "<u8",
        DType::Bool => "|b1",
        DType::Complex64 => "<c8",
        DType::Complex128 => "<c16",
        _ => return None,
    })
}

fn dtype_of(descr: &str) -> Option<DType> {
    let d = descr.replace('=', "<");
    DType::ALL
        .iter()
        .copied()
        .find(|&t| descr_of(t).is_some_and(|x| x == d || x.replacen('|', "<", 1) == d))
}

/// The value of `key` in a NumPy header dict (`'key': value`), up to the next top-level comma.
fn header_field<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let k = format!("'{key}'");
    let at = header.find(&k)? + k.len();
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(r) = rest.strip_prefix('(') {
        return r.find(')').map(|e| &r[..e]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// Parses a `.npy` file's bytes; `origin` names it in errors.
pub fn parse_npy(bytes: &[u8], origin: &str) -> RuntimeResult<Tensor> {
    let err = |m: String| RuntimeError::file(origin, m);
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err("not a .npy file (bad magic)".into()));
    }
    let major = bytes[6];
    let (hlen, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(err("truncated header".into()));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(err(format!("unsupported .npy version {v}"))),
    };
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            err(format!(
                "header of {hlen} bytes runs past the end of the file"
            ))
        })?;
    let header =
        std::str::from_utf8(&bytes[start..end]).map_err(|_| err("header is not text".into()))?;
    let descr = header_field(header, "descr")
        .map(|s| s.trim_matches(|c| c == '\'' || c == '"'))
        .ok_or_else(|| err("header has no 'descr'".into()))?;
    if descr.starts_with('>') && !descr.ends_with('1') {
        return Err(err(format!("big-endian data ({descr}) is not supported")));
    }
    let dtype = dtype_of(descr).ok_or_else(|| err(format!("unsupported dtype '{descr}'")))?;
    let fortran = header_field(header, "fortran_order").unwrap_or("False");
    let shape_s =
        header_field(header, "shape").ok_or_else(|| err("header has no 'shape'".into()))?;
    let shape: Vec<usize> = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| err(format!("bad shape ({shape_s})")))?;
    if fortran == "True" && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(err("Fortran-order arrays are not supported".into()));
    }
    let n = rge_kernels::element_count(&shape)
        .ok_or_else(|| err(format!("shape {shape:?} overflows")))?;
    let want = dtype.bytes_for(n);
    let have = bytes.len() - end;
    if have != want {
        return Err(err(format!(
            "header says {dtype} {shape:?} ({want} bytes of data), the file holds {have}"
        )));
    }
    Tensor::from_bytes(dtype, &shape, &bytes[end..]).map_err(|e| err(e.to_string()))
}

/// The `.npy` encoding of a tensor (version 1).
pub fn npy_bytes(t: &Tensor) -> RuntimeResult<Vec<u8>> {
    let descr = descr_of(t.dtype()).ok_or_else(|| {
        RuntimeError::Other(format!("{} tensors cannot be written as .npy", t.dtype()))
    })?;
    let shape = match t.shape() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        s => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let total = 10 + h.len() + 1;
    h.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    h.push('\n');
    let mut out = Vec::with_capacity(10 + h.len() + t.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    match t.data() {
        TensorData::Bytes(b) => out.extend_from_slice(b.as_slice()),
        TensorData::Strings(_) => {
            return Err(RuntimeError::Other(
                "string tensors cannot be written as .npy".into(),
            ))
        }
    }
    Ok(out)
}

/// Reads a tensor from a `.npy` or ONNX `TensorProto` `.pb` file (by extension).
pub fn read_tensor(path: &Path) -> RuntimeResult<Tensor> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| RuntimeError::file(&origin, e))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "npy" => parse_npy(&bytes, &origin),
        "pb" => {
            use rge_formats::Message;
            let tp = rge_formats::onnx_proto::TensorProto::decode(bytes.as_slice())
                .map_err(|e| RuntimeError::file(&origin, format!("not a TensorProto: {e}")))?;
            let t = rge_formats::onnx::tensor_from_proto(&tp, &origin)
                .map_err(|e| RuntimeError::file(&origin, e))?;
            tensor_from_ir(&t).map_err(|e| RuntimeError::file(&origin, e))
        }
        _ => Err(RuntimeError::file(
            origin,
            "expected a .npy or .pb tensor file",
        )),
    }
}

/// A random tensor (floats in [-1, 1), integers in [0, 10), random bools); unknown dims are 1.
pub fn random_tensor(dtype: DType, dims: &[i64], seed: u64) -> RuntimeResult<Tensor> {
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| if d < 0 { 1 } else { d as usize })
        .collect();
    let n = rge_kernels::element_count(&shape)
        .ok_or_else(|| RuntimeError::Other(format!("shape {shape:?} overflows")))?;
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let unit = |x: u64| (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let t = match dtype {
        DType::Float => Tensor::from_vec(&shape, (0..n).map(|_| unit(next()) as f32).collect()),
        DType::Double => Tensor::from_vec(&shape, (0..n).map(|_| unit(next())).collect()),
        DType::Bool => Tensor::from_vec(&shape, (0..n).map(|_| next() & 1 == 1).collect()),
        DType::Int64 => Tensor::from_vec(&shape, (0..n).map(|_| (next() % 10) as i64).collect()),
        DType::Int32 => Tensor::from_vec(&shape, (0..n).map(|_| (next() % 10) as i32).collect()),
        DType::String => Tensor::from_strings(&shape, (0..n).map(|i| format!("s{i}")).collect()),
        dt => {
            let bytes: Vec<u8> = (0..dt.bytes_for(n)).map(|_| (next() % 10) as u8).collect();
            Tensor::from_bytes(dt, &shape, &bytes)
        }
    };
    t.map_err(|e| RuntimeError::Other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_and_lies() {
        let t = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let b = npy_bytes(&t).unwrap();
        assert_eq!((10 + u16::from_le_bytes([b[8], b[9]]) as usize) % 64, 0);
        assert_eq!(parse_npy(&b, "t.npy").unwrap(), t);
        let short = &b[..b.len() - 4];
        let e = parse_npy(short, "t.npy").unwrap_err().to_string();
        assert!(e.contains("t.npy") && e.contains("holds 20"), "{e}");
        assert!(parse_npy(b"nonsense", "x.npy").is_err());
        let s = Tensor::scalar(7i64);
        assert_eq!(parse_npy(&npy_bytes(&s).unwrap(), "s").unwrap(), s);
    }
}
