//! The packed-operand format: layout, determinism, round trip, corruption.

mod common;

use common::rand_vec;
use rge_dense::gemm::*;

fn header_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn packed_b_layout_is_the_documented_one() {
    // 3 × 2 B: one 32-wide panel of 3 k steps, columns 2.. zero.
    let b = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let pb = PackedB::pack(&b, 3, 2, 2, false).unwrap();
    let bytes = pb.as_bytes();
    assert_eq!(&bytes[..8], b"RGEPACK\0");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2);
    assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), 1);
    assert_eq!((header_u64(bytes, 16), header_u64(bytes, 24)), (3, 2));
    assert_eq!(
        u32::from_le_bytes(bytes[32..36].try_into().unwrap()),
        PANEL_B as u32
    );
    assert_eq!(header_u64(bytes, 40), 3 * PANEL_B as u64);
    assert_eq!(bytes.len(), 64 + 3 * PANEL_B * 4);
    let data = floats(&bytes[64..]);
    for kk in 0..3 {
        assert_eq!(
            &data[kk * PANEL_B..kk * PANEL_B + 2],
            &b[kk * 2..kk * 2 + 2]
        );
        assert!(data[kk * PANEL_B + 2..(kk + 1) * PANEL_B]
            .iter()
            .all(|&x| x == 0.0));
    }
}

#[test]
fn packed_depth_blocks_are_the_documented_ones() {
    // k = 300: a 256-deep block of both panels, then a 44-deep one.
    let (k, n) = (300, 40);
    let b = common::rand_vec(k * n, 9);
    let pb = PackedB::pack(&b, k, n, n, false).unwrap();
    let bytes = pb.as_bytes();
    assert_eq!(
        u32::from_le_bytes(bytes[36..40].try_into().unwrap()),
        K_BLOCK as u32
    );
    let data = floats(&bytes[64..]);
    let panels = n.div_ceil(PANEL_B);
    assert_eq!(data.len(), panels * PANEL_B * k);
    for p in 0..k {
        for j in 0..n {
            let (blk, kk) = (p / K_BLOCK, p % K_BLOCK);
            let depth = K_BLOCK.min(k - blk * K_BLOCK);
            let at = blk * K_BLOCK * panels * PANEL_B
                + (j / PANEL_B) * depth * PANEL_B
                + kk * PANEL_B
                + j % PANEL_B;
            assert_eq!(data[at], b[p * n + j], "B[{p},{j}]");
        }
    }
    let a = common::rand_vec(n * k, 10);
    let pa = PackedA::pack(&a, n, k, k, false).unwrap();
    let data = floats(&pa.as_bytes()[64..]);
    let panels = n.div_ceil(PANEL_A);
    for i in 0..n {
        for p in 0..k {
            let (blk, kk) = (p / K_BLOCK, p % K_BLOCK);
            let depth = K_BLOCK.min(k - blk * K_BLOCK);
            let at = blk * K_BLOCK * panels * PANEL_A
                + (i / PANEL_A) * depth * PANEL_A
                + kk * PANEL_A
                + i % PANEL_A;
            assert_eq!(data[at], a[i * k + p], "A[{i},{p}]");
        }
    }
}

#[test]
fn packed_a_layout_is_the_documented_one() {
    // 2 × 3 A: one 12-row panel of 3 k steps, rows 2.. zero.
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let pa = PackedA::pack(&a, 2, 3, 3, false).unwrap();
    let bytes = pa.as_bytes();
    assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), 0);
    assert_eq!((header_u64(bytes, 16), header_u64(bytes, 24)), (2, 3));
    let data = floats(&bytes[64..]);
    assert_eq!(data.len(), 3 * PANEL_A);
    for kk in 0..3 {
        assert_eq!(data[kk * PANEL_A], a[kk]);
        assert_eq!(data[kk * PANEL_A + 1], a[3 + kk]);
        assert!(data[kk * PANEL_A + 2..(kk + 1) * PANEL_A]
            .iter()
            .all(|&x| x == 0.0));
    }
}

#[test]
fn packing_is_deterministic_and_layout_independent() {
    let (k, n) = (70, 45);
    let b = rand_vec(k * n, 3);
    // The same logical B stored transposed, with a padded leading dimension.
    let ld_t = k + 5;
    let mut bt = vec![9.0f32; n * ld_t];
    for p in 0..k {
        for j in 0..n {
            bt[j * ld_t + p] = b[p * n + j];
        }
    }
    let p1 = PackedB::pack(&b, k, n, n, false).unwrap();
    let p2 = PackedB::pack(&bt, k, n, ld_t, true).unwrap();
    assert_eq!(p1.as_bytes(), p2.as_bytes());
    let a = rand_vec(n * k, 4);
    assert_eq!(
        PackedA::pack(&a, n, k, k, false).unwrap().as_bytes(),
        PackedA::pack(&a, n, k, k, false).unwrap().as_bytes()
    );
}

#[test]
fn packed_bytes_round_trip() {
    let (m, n, k) = (37, 70, 45);
    let a = rand_vec(m * k, 1);
    let b = rand_vec(k * n, 2);
    let pa = PackedA::pack(&a, m, k, k, false).unwrap();
    let pb = PackedB::pack(&b, k, n, n, false).unwrap();
    let pa2 = PackedA::from_bytes(pa.as_bytes()).unwrap();
    let pb2 = PackedB::from_bytes(pb.as_bytes()).unwrap();
    assert_eq!(pa.as_bytes(), pa2.as_bytes());
    assert_eq!(pb.as_bytes(), pb2.as_bytes());
    assert_eq!((pa2.m(), pa2.k(), pb2.k(), pb2.n()), (m, k, k, n));
    let p = GemmParams::new(m, n, k);
    let mut c1 = vec![0.0f32; m * n];
    let mut c2 = vec![0.0f32; m * n];
    sgemm(
        &p,
        AOperand::Packed(&pa),
        BOperand::Packed(&pb),
        &mut c1,
        n,
        &Epilogue::NONE,
        1,
    )
    .unwrap();
    sgemm(
        &p,
        AOperand::Packed(&pa2),
        BOperand::Packed(&pb2),
        &mut c2,
        n,
        &Epilogue::NONE,
        1,
    )
    .unwrap();
    assert_eq!(c1, c2);
    // Empty operands round-trip too.
    let e = PackedB::pack(&[], 0, 5, 5, false).unwrap();
    assert_eq!(PackedB::from_bytes(e.as_bytes()).unwrap().n(), 5);
}

#[test]
fn corrupted_or_truncated_bytes_are_errors() {
    let b = rand_vec(40 * 50, 5);
    let pb = PackedB::pack(&b, 40, 50, 50, false).unwrap();
    let good = pb.as_bytes().to_vec();
    assert!(PackedB::from_bytes(&good).is_ok());
    // Truncated anywhere, or extended.
    for len in [0, 1, 63, 64, 65, good.len() / 2, good.len() - 1] {
        assert!(
            PackedB::from_bytes(&good[..len]).is_err(),
            "truncated to {len}"
        );
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 4]);
    assert!(PackedB::from_bytes(&longer).is_err());
    // A flipped bit in any header field or in the panels.
    for at in [
        0,
        8,
        12,
        16,
        24,
        32,
        40,
        48,
        64,
        64 + 4 * 33,
        good.len() - 1,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        assert!(PackedB::from_bytes(&bad).is_err(), "flipped byte {at}");
    }
    // The other kind.
    assert!(PackedA::from_bytes(&good).is_err());
    // Dimensions that overflow.
    let mut bad = good.clone();
    bad[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(PackedB::from_bytes(&bad).is_err());
}

#[test]
fn a_packed_left_operand_unpacks_and_transposes_to_the_same_values() {
    // Shapes across panel edges and depth blocks (K_BLOCK 256).
    for (m, k) in [(1, 1), (12, 256), (13, 257), (49, 600), (5, 3)] {
        let a = rand_vec(m * k, (m * 31 + k) as u64);
        let pa = PackedA::pack(&a, m, k, k, false).unwrap();
        assert_eq!(pa.unpack(), a, "{m}×{k}");
        let pb = pa.transposed().unwrap();
        assert_eq!((pb.k(), pb.n()), (k, m));
        assert_eq!(
            pb.as_bytes(),
            PackedB::pack(&a, k, m, k, true).unwrap().as_bytes(),
            "{m}×{k}"
        );
    }
}

#[test]
fn column_ranges_of_a_packed_b_match_the_whole_product() {
    // Depths over one and two K blocks, widths with ragged tails, ranges on every panel.
    for (m, k, n) in [(8, 512, 2048), (3, 300, 100), (13, 17, 64), (1, 1, 33)] {
        let a = rand_vec(m * k, 3);
        let b = rand_vec(k * n, 4);
        let pb = PackedB::pack(&b, k, n, n, false).unwrap();
        let mut whole = vec![0f32; m * n];
        let p = GemmParams::new(m, n, k);
        let a_op = AOperand::Raw {
            data: &a,
            ld: k,
            trans: false,
        };
        sgemm(
            &p,
            a_op,
            BOperand::Packed(&pb),
            &mut whole,
            n,
            &Epilogue::default(),
            1,
        )
        .unwrap();
        for start in (0..n).step_by(PANEL_B) {
            for end in [start + 1, (start + 2 * PANEL_B).min(n), n] {
                let end = end.min(n);
                let w = end - start;
                // A row stride past the width: the columns between stay untouched.
                let ldc = w + 3;
                let mut part = vec![f32::NAN; (m - 1) * ldc + w];
                sgemm_packed_columns(m, (&a, k), &pb, start..end, &mut part, ldc).unwrap();
                for i in 0..m {
                    for j in 0..w {
                        let (got, want) = (part[i * ldc + j], whole[i * n + start + j]);
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "{m}×{k}×{n} cols {start}..{end} ({i}, {j})"
                        );
                    }
                    if i + 1 < m {
                        assert!(part[i * ldc + w..(i + 1) * ldc].iter().all(|x| x.is_nan()));
                    }
                }
            }
        }
    }
}

#[test]
fn a_column_range_off_a_panel_or_past_the_end_is_an_error() {
    let b = rand_vec(4 * 64, 1);
    let pb = PackedB::pack(&b, 4, 64, 64, false).unwrap();
    let a = rand_vec(2 * 4, 2);
    let mut c = vec![0f32; 2 * 64];
    let e = sgemm_packed_columns(2, (&a, 4), &pb, 5..20, &mut c, 64).unwrap_err();
    assert!(e.to_string().contains("columns 5..20"), "{e}");
    let e = sgemm_packed_columns(2, (&a, 4), &pb, 32..65, &mut c, 64).unwrap_err();
    assert!(e.to_string().contains("columns 32..65"), "{e}");
    // C too short for the range.
    let e = sgemm_packed_columns(2, (&a, 4), &pb, 0..64, &mut c[..100], 64).unwrap_err();
    assert!(matches!(e, GemmError::TooShort { .. }), "{e}");
}
