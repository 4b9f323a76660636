//! Statistical checks of the Philox streams at sizes that catch a bad generator: mean,
//! variance, Kolmogorov–Smirnov against the exact CDF, a 256-bin χ², serial and cross-seed
//! correlation. Each bound is ~5σ (or the KS critical value at α ≈ 0.001), so a good stream
//! passes for every seed tried; a self-check shows the same tests reject slightly bad streams.

use rge_rng::Stream;

const N: u64 = 1 << 20;

fn draws(f: impl Fn(u64) -> f64) -> Vec<f64> {
    (0..N).map(f).collect()
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (
        m,
        x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0),
    )
}

/// The KS statistic sup |F_n − F| of `x` against `cdf`.
fn ks(mut x: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// The KS critical value at α = 0.001 (c(α) = 1.949).
fn ks_crit(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

/// Φ via erfc (W. J. Cody's rational approximations are overkill here: a continued-fraction
/// free series, accurate to ~1e-12, is enough for KS bounds of ~2e-3).
fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// erfc by its Taylor series for |x| < 3, by the asymptotic continued fraction beyond.
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 3.0 {
        // erf(x) = 2/√π Σ (−1)^k x^(2k+1) / (k! (2k+1))
        let (mut term, mut sum, mut k) = (x, x, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            k += 1.0;
            term *= -x * x / k;
            sum += term / (2.0 * k + 1.0);
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // Lentz-free backward evaluation of the continued fraction.
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = k as f64 / 2.0 / (x + f);
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / (x + f)
    }
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let cov = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (a.len() as f64 - 1.0);
    cov / (va * vb).sqrt()
}

fn chi2_256(x: &[f64]) -> f64 {
    let mut bins = [0u64; 256];
    for &v in x {
        bins[(v * 256.0) as usize] += 1;
    }
    let e = x.len() as f64 / 256.0;
    bins.iter().map(|&o| (o as f64 - e).powi(2) / e).sum()
}

/// Everything a uniform stream must pass.
fn check_uniform(u: &[f64]) -> Result<(), String> {
    let n = u.len() as f64;
    let (m, v) = mean_var(u);
    if (m - 0.5).abs() > 5.0 * (1.0 / 12.0 / n).sqrt() {
        return Err(format!("mean {m}"));
    }
    // Var of the sample variance of U(0,1): (1/80 − 1/144)/n.
    if (v - 1.0 / 12.0).abs() > 5.0 * ((1.0 / 80.0 - 1.0 / 144.0) / n).sqrt() {
        return Err(format!("variance {v}"));
    }
    let d = ks(u.to_vec(), |x| x.clamp(0.0, 1.0));
    if d > ks_crit(u.len()) {
        return Err(format!("KS {d} > {}", ks_crit(u.len())));
    }
    // χ² with 255 degrees of freedom: mean 255, σ = √510.
    let c = chi2_256(u);
    if c > 255.0 + 5.0 * 510f64.sqrt() {
        return Err(format!("chi2 {c}"));
    }
    let r = correlation(&u[..u.len() - 1], &u[1..]);
    if r.abs() > 5.0 / n.sqrt() {
        return Err(format!("lag-1 correlation {r}"));
    }
    Ok(())
}

#[test]
fn reference_phi_is_accurate() {
    for (x, want) in [
        (0.0, 0.5),
        (1.0, 0.841_344_746_068_542_9),
        (-1.96, 0.024_997_895_148_220_43),
        (3.5, 0.999_767_370_920_964_1),
        (-4.0, 3.167_124_183_311_992e-5),
    ] {
        assert!(
            (phi(x) - want).abs() < 1e-10,
            "phi({x}) = {}, want {want}",
            phi(x)
        );
    }
}

#[test]
fn uniform_streams_pass_for_several_seeds() {
    for key in [0u64, 1, 42, u64::MAX, 0x1234_5678_9abc_def0] {
        let s = Stream::new(key);
        check_uniform(&draws(|i| s.uniform(i))).unwrap_or_else(|e| panic!("key {key}: {e}"));
    }
}

#[test]
fn the_checks_reject_slightly_bad_streams() {
    let s = Stream::new(7);
    // A 1 % power bias, 8-bit quantisation, and a stream that repeats every 4096 values
    // (lag-1 fine, but a correlated copy of itself) must each fail some check.
    let biased = draws(|i| s.uniform(i).powf(1.01));
    assert!(check_uniform(&biased).is_err());
    let coarse = draws(|i| (s.uniform(i) * 256.0).floor() / 256.0 + 1.0 / 512.0);
    assert!(check_uniform(&coarse).is_err());
    let sticky = draws(|i| {
        let (a, b) = (s.uniform(i), s.uniform(i.saturating_sub(1)));
        if i % 8 == 0 {
            b
        } else {
            a
        }
    });
    assert!(check_uniform(&sticky).is_err());
}

#[test]
fn normal_streams_have_the_right_moments_and_cdf() {
    for key in [0u64, 3, 99] {
        let s = Stream::new(key);
        let z = draws(|i| s.normal(i));
        let n = z.len() as f64;
        let (m, v) = mean_var(&z);
        assert!(m.abs() < 5.0 / n.sqrt(), "key {key}: mean {m}");
        assert!(
            (v - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
            "key {key}: variance {v}"
        );
        let d = ks(z.clone(), phi);
        assert!(d < ks_crit(z.len()), "key {key}: KS {d}");
        // The cosine and sine halves of each Box–Muller pair are uncorrelated.
        let even: Vec<f64> = z.iter().step_by(2).copied().collect();
        let odd: Vec<f64> = z.iter().skip(1).step_by(2).copied().collect();
        let r = correlation(&even, &odd);
        assert!(
            r.abs() < 5.0 / (n / 2.0).sqrt(),
            "key {key}: pair correlation {r}"
        );
    }
}

#[test]
fn adjacent_keys_give_independent_streams() {
    let a = draws(|i| Stream::new(1).uniform(i));
    let b = draws(|i| Stream::new(2).uniform(i));
    let r = correlation(&a, &b);
    assert!(r.abs() < 5.0 / (N as f64).sqrt(), "{r}");
    // Interleaved they are still one good uniform stream.
    let mixed: Vec<f64> = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| [*x, *y])
        .take(N as usize)
        .collect();
    check_uniform(&mixed).unwrap();
}
