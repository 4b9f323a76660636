//! The vector Resize against the `cpu` engine's (the reference, in f64) on every ISA and at 1
//! and 3 threads: random images, modes, coordinate transformations, nearest rounding, scales or
//! sizes, antialiasing; infinities beside samples; and the forms it hands to the reference.

mod common;

use common::*;
use proptest::prelude::*;
use rge_kernels::Tensor;

const COORDS: &[&str] = &[
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
];
const NEAREST: &[&str] = &["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"];
const MODES: &[&str] = &["nearest", "linear", "cubic"];

fn image(n: usize, c: usize, h: usize, w: usize) -> Tensor {
    let v: Vec<f32> = (0..n * c * h * w)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
        .collect();
    Tensor::from_vec(&[n, c, h, w], v).unwrap()
}

fn scales(v: &[f32]) -> Tensor {
    Tensor::from_vec(&[v.len()], v.to_vec()).unwrap()
}

/// A Resize of `x` by `scales` (or to `sizes`) over NCHW, roi empty.
fn resize(x: Tensor, by: Result<[f32; 4], [i64; 4]>) -> Case {
    let mut c = Case::new("Resize", vec![x]).opset(19);
    c.inputs.push(None);
    match by {
        Ok(s) => c.inputs.push(Some(scales(&s))),
        Err(s) => {
            c.inputs.push(None);
            c.inputs
                .push(Some(Tensor::from_vec(&[4], s.to_vec()).unwrap()));
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn resizes_match_the_reference(
        (n, ch, h, w) in (1usize..3, 1usize..4, 1usize..9, 1usize..9),
        (sh, sw) in (prop::sample::select(vec![0.5f32, 0.6, 1.0, 1.5, 2.0, 3.0, 4.0]),
                     prop::sample::select(vec![0.5f32, 0.75, 1.0, 1.7, 2.0, 3.0])),
        sized in any::<bool>(),
        mode in prop::sample::select(MODES),
        coord in prop::sample::select(COORDS),
        nearest in prop::sample::select(NEAREST),
        antialias in any::<bool>(),
        exclude in any::<bool>(),
        nhwc in any::<bool>(),
    ) {
        let len = |d: usize, s: f32| ((d as f32 * s) as i64).max(1);
        // Channels last: the image's axes 1 and 2 change, the last does not.
        let (x, by) = match (nhwc, sized) {
            (false, true) => (image(n, ch, h, w), Err([n as i64, ch as i64, len(h, sh), len(w, sw)])),
            (false, false) => (image(n, ch, h, w), Ok([1.0, 1.0, sh, sw])),
            (true, true) => (image(n, h, w, ch), Err([n as i64, len(h, sh), len(w, sw), ch as i64])),
            (true, false) => (image(n, h, w, ch), Ok([1.0, sh, sw, 1.0])),
        };
        let c = resize(x, by)
            .attr("mode", mode)
            .attr("coordinate_transformation_mode", coord)
            .attr("nearest_mode", nearest)
            .attr("antialias", antialias as i64)
            .attr("exclude_outside", exclude as i64);
        c.check(1e-5, 1e-5).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }
}

#[test]
fn upsampling_by_two_as_fpns_do() {
    // The detector's case: nearest ×2 (every second row a copy), and linear; NCHW, and NHWC
    // as the dense engine's channels-last regions run it; the last two large enough to split
    // over threads (one image's rows; planes).
    for (mode, coord) in [("nearest", "asymmetric"), ("linear", "half_pixel")] {
        for (x, s) in [
            (image(1, 5, 20, 20), [1.0, 1.0, 2.0, 2.0]),
            (image(1, 20, 20, 5), [1.0, 2.0, 2.0, 1.0]),
            (image(1, 41, 39, 24), [1.0, 2.0, 2.0, 1.0]),
            (image(2, 3, 70, 90), [1.0, 1.0, 2.0, 2.0]),
        ] {
            let c = resize(x, Ok(s))
                .attr("mode", mode)
                .attr("coordinate_transformation_mode", coord)
                .attr("nearest_mode", "floor");
            c.check(1e-6, 1e-6)
                .unwrap_or_else(|e| panic!("{mode} {s:?}: {e}"));
        }
    }
}

#[test]
fn an_infinity_beside_a_sample_stays_out_of_it() {
    // Linear at integer source positions reads one tap (weight 1) and leaves its neighbour,
    // an infinity, out: weight 0 times infinity would be NaN. NaN itself propagates.
    let mut v: Vec<f32> = (0..16).map(|i| i as f32).collect();
    v[1] = f32::INFINITY;
    v[6] = f32::NAN;
    let x = Tensor::from_vec(&[1, 1, 4, 4], v).unwrap();
    for coord in ["asymmetric", "align_corners", "half_pixel"] {
        let c = resize(x.clone(), Ok([1.0, 1.0, 2.0, 2.0]))
            .attr("mode", "linear")
            .attr("coordinate_transformation_mode", coord);
        c.check(1e-6, 1e-6)
            .unwrap_or_else(|e| panic!("{coord}: {e}"));
    }
}

#[test]
fn other_axes_crops_and_dtypes_run_the_reference() {
    // A resize along the channels, tf_crop_and_resize with extrapolated positions, a 1-D
    // tensor of f32 and a scale of N: still the reference's results.
    let c = resize(image(1, 2, 3, 3), Ok([1.0, 2.0, 1.0, 1.0]));
    c.check(1e-6, 1e-6).unwrap();
    let mut c = resize(image(1, 1, 4, 4), Ok([1.0, 1.0, 2.0, 2.0]))
        .attr("mode", "linear")
        .attr("coordinate_transformation_mode", "tf_crop_and_resize")
        .attr("extrapolation_value", -3.0f32);
    c.inputs[1] = Some(scales(&[0.0, 0.0, -0.5, 0.2, 1.0, 1.0, 1.5, 0.9]));
    c.check(1e-5, 1e-5).unwrap();
    let x = Tensor::from_vec(&[6], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let mut c = Case::new("Resize", vec![x])
        .opset(19)
        .attr("mode", "linear");
    c.inputs.push(None);
    c.inputs.push(Some(scales(&[1.5])));
    c.check(1e-6, 1e-6).unwrap();
    let c = resize(image(2, 1, 3, 3), Ok([2.0, 1.0, 2.0, 2.0]));
    c.check(1e-6, 1e-6).unwrap();
}

#[test]
fn a_bad_scale_is_an_error_naming_it() {
    let c = resize(image(1, 1, 2, 2), Ok([1.0, 1.0, -2.0, 2.0]));
    for r in c.run_vector() {
        let e = r.unwrap_err();
        assert!(e.contains("scale -2 is not positive"), "{e}");
    }
}
