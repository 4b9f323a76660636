//! Every small-float code decoded, and the encodings of every representable value, every
//! midpoint between neighbours and the floats either side of it, out-of-range values,
//! infinities and NaNs, checked against the ONNX reference's tables (tests/data/fp_tables.txt,
//! made by tests/data/gen_fp_tables.py with ml_dtypes and onnx.numpy_helper).

use rge_kernels::DType;
use rge_kernels_convert::small_float::{e8m0_decode, e8m0_encode, Minifloat, RoundMode};

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s, 16).expect("hex field")
}

#[test]
fn small_floats_match_the_reference_tables() {
    let text = include_str!("data/fp_tables.txt");
    let (mut decoded, mut encoded, mut e8m0) = (0, 0, 0);
    let mut bad = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "d" => {
                let ty = DType::from_onnx(f[1].parse().unwrap()).unwrap();
                let code = hex(f[2]) as u8;
                let want = f32::from_bits(hex(f[3]));
                let got = match Minifloat::of(ty) {
                    Some(mf) => mf.decode(code),
                    None => e8m0_decode(code),
                };
                let same = (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits();
                if !same {
                    bad.push(format!("{line}: decoded {got} ({:x})", got.to_bits()));
                }
                decoded += 1;
            }
            "e" => {
                let ty = DType::from_onnx(f[1].parse().unwrap()).unwrap();
                let sat = f[2] == "1";
                let x = f32::from_bits(hex(f[3]));
                let want = hex(f[4]) as u8;
                let got = Minifloat::of(ty).unwrap().encode(x as f64, sat);
                if got != want {
                    bad.push(format!("{line}: encoded {x} as {got:x}"));
                }
                encoded += 1;
            }
            "m" => {
                let mode = match f[1] {
                    "u" => RoundMode::Up,
                    "n" => RoundMode::Nearest,
                    _ => RoundMode::Down,
                };
                let sat = f[2] == "1";
                let x = f32::from_bits(hex(f[3]));
                let want = hex(f[4]) as u8;
                let got = e8m0_encode(x, sat, mode);
                if got != want {
                    bad.push(format!("{line}: encoded {x} as {got:x}"));
                }
                e8m0 += 1;
            }
            other => panic!("unknown line kind {other}"),
        }
    }
    assert!(decoded == 5 * 256 + 16 && encoded > 5000 && e8m0 > 1000);
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad[..bad.len().min(40)].join("\n")
    );
}
