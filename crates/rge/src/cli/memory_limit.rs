//! `--memory-limit SIZE`: the size it names. The limit itself is kept by the command line's
//! allocator (`allocator.rs` of the binary).

/// Bytes in `s`: a whole or decimal number, optionally followed by `K`, `M`, `G` or `T`
/// (KiB … TiB; `KiB`, `MB` … are read the same) or `B`. An error says what is wrong.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => {
            return Err(format!(
                "unknown unit `{other}` (give bytes, or a number with K, M, G or T)"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{t}` is not a size (e.g. 512M, 4G, 1.5G)"))?;
    let bytes = value * (1u64 << shift) as f64;
    // NaN cannot come from digits and dots, so `< 1.0` covers every too-small size.
    if bytes < 1.0 || bytes >= usize::MAX as f64 {
        return Err(format!("`{t}` is not a size of at least one byte"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
    }

    #[test]
    fn bad_sizes_say_why() {
        for (s, why) in [
            ("12X", "unknown unit `X`"),
            ("G", "not a size"),
            ("", "not a size"),
            ("0", "at least one byte"),
            ("1.2.3M", "not a size"),
            ("99999999999999999999T", "at least one byte"),
        ] {
            let e = parse_size(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
