//! GE's layout of a string tensor's data: one 16-byte head per element (`u64` offset of the
//! string from the start of the data, `u64` length, little-endian), then the strings, each
//! followed by a NUL. One codec for the file formats and the kernels.

use std::ops::Range;

/// The data of a string tensor holding `strings`.
pub fn encode_strings<S: AsRef<[u8]>>(strings: &[S]) -> Vec<u8> {
    let heads = strings.len() * 16;
    let total = heads + strings.iter().map(|s| s.as_ref().len() + 1).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    let mut off = heads as u64;
    for s in strings {
        let len = s.as_ref().len() as u64;
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        off += len + 1;
    }
    for s in strings {
        out.extend_from_slice(s.as_ref());
        out.push(0);
    }
    out
}

/// Where each of `n` strings lies in `data` (the layout of [`encode_strings`]), checking every
/// head: the string must lie after the heads and inside the data.
pub fn string_ranges(data: &[u8], n: usize) -> Result<Vec<Range<usize>>, String> {
    let heads = n
        .checked_mul(16)
        .filter(|&h| h <= data.len())
        .ok_or_else(|| format!("{} bytes cannot hold {n} string heads", data.len()))?;
    data[..heads]
        .chunks_exact(16)
        .map(|h| {
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
            let (off, len) = (word(&h[..8]), word(&h[8..]));
            match off.checked_add(len) {
                Some(end) if off >= heads as u64 && end <= data.len() as u64 => {
                    Ok(off as usize..end as usize)
                }
                _ => Err(format!(
                    "string at {off} of {len} bytes is outside the data"
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_heads() {
        let data = encode_strings(&["ab", "", "xyz"]);
        let r = string_ranges(&data, 3).unwrap();
        let got: Vec<&[u8]> = r.iter().map(|r| &data[r.clone()]).collect();
        assert_eq!(got, [&b"ab"[..], b"", b"xyz"]);
        assert!(string_ranges(&data, 9).unwrap_err().contains("cannot hold"));
        let mut bad = data.clone();
        bad[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(string_ranges(&bad, 3)
            .unwrap_err()
            .contains("outside the data"));
    }
}
