//! ONNX load speed: builds a ResNet-50-shaped model (53 convolutions with ResNet-50's shapes,
//! a 2048×1000 Gemm, ~102 MB of f32 weights in `raw_data`), writes it to a temp dir, and times
//! `rge_formats::onnx::import_file` against Python's `onnx.load` on the same file.
//!
//! Run: `cargo bench -p rge-formats --bench onnx_load`. The Python peer uses the workspace's
//! `.venv/bin/python` when present, else `python3`; it is skipped with a note when `onnx` is
//! missing. Prints figures only; the bar is ≥ 5× faster than `onnx.load` and ≥ 1 GB/s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use rge_formats::onnx;
use rge_formats::onnx_proto::attribute_proto::AttributeType;
use rge_formats::onnx_proto::tensor_shape_proto::{dimension, Dimension};
use rge_formats::onnx_proto::{
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

struct Builder {
    g: GraphProto,
    rng: u64,
    weight_bytes: usize,
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn tensor_type(dims: &[i64]) -> TypeProto {
    TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: 1,
            shape: Some(TensorShapeProto {
                dim: dims
                    .iter()
                    .map(|&d| Dimension {
                        value: Some(dimension::Value::DimValue(d)),
                        ..Default::default()
                    })
                    .collect(),
            }),
        })),
        ..Default::default()
    }
}

impl Builder {
    fn weights(&mut self, name: &str, dims: &[i64]) -> String {
        let n: i64 = dims.iter().product();
        let mut data = Vec::with_capacity(n as usize * 4);
        for _ in 0..n {
            // xorshift64: small finite floats in [-0.5, 0.5).
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let v = (self.rng >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            data.extend_from_slice(&v.to_le_bytes());
        }
        self.weight_bytes += data.len();
        self.g.initializer.push(TensorProto {
            name: name.into(),
            dims: dims.to_vec(),
            data_type: 1,
            raw_data: Bytes::from(data),
            ..Default::default()
        });
        name.into()
    }

    fn node(
        &mut self,
        op: &str,
        name: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
    ) -> String {
        let out = format!("{name}_output_0");
        self.g.node.push(NodeProto {
            op_type: op.into(),
            name: name.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![out.clone()],
            attribute: attrs,
            ..Default::default()
        });
        out
    }

    fn conv(&mut self, name: &str, x: &str, cin: i64, cout: i64, k: i64, stride: i64) -> String {
        let w = self.weights(&format!("{name}.weight"), &[cout, cin, k, k]);
        let b = self.weights(&format!("{name}.bias"), &[cout]);
        let p = k / 2;
        let attrs = vec![
            ints("dilations", &[1, 1]),
            ints("kernel_shape", &[k, k]),
            ints("pads", &[p, p, p, p]),
            ints("strides", &[stride, stride]),
        ];
        self.node("Conv", &format!("/{name}/Conv"), &[x, &w, &b], attrs)
    }

    fn relu(&mut self, name: &str, x: &str) -> String {
        self.node("Relu", &format!("/{name}/Relu"), &[x], vec![])
    }
}

/// ResNet-50 (torchvision layout, batch norms folded into conv biases).
fn resnet50() -> (ModelProto, usize) {
    let mut b = Builder {
        g: GraphProto {
            name: "resnet50".into(),
            ..Default::default()
        },
        rng: 0x9e37_79b9_7f4a_7c15,
        weight_bytes: 0,
    };
    b.g.input.push(ValueInfoProto {
        name: "input".into(),
        r#type: Some(tensor_type(&[1, 3, 224, 224])),
        ..Default::default()
    });
    let mut x = b.conv("conv1", "input", 3, 64, 7, 2);
    x = b.relu("relu", &x);
    x = b.node(
        "MaxPool",
        "/maxpool/MaxPool",
        &[&x],
        vec![
            ints("kernel_shape", &[3, 3]),
            ints("pads", &[1, 1, 1, 1]),
            ints("strides", &[2, 2]),
        ],
    );
    let mut cin = 64;
    for (l, (&blocks, &width)) in [3, 4, 6, 3].iter().zip(&[64i64, 128, 256, 512]).enumerate() {
        for blk in 0..blocks {
            let p = format!("layer{}.{blk}", l + 1);
            let stride = if blk == 0 && l > 0 { 2 } else { 1 };
            let identity = if blk == 0 {
                b.conv(&format!("{p}.downsample.0"), &x, cin, width * 4, 1, stride)
            } else {
                x.clone()
            };
            let mut y = b.conv(&format!("{p}.conv1"), &x, cin, width, 1, 1);
            y = b.relu(&format!("{p}.relu1"), &y);
            y = b.conv(&format!("{p}.conv2"), &y, width, width, 3, stride);
            y = b.relu(&format!("{p}.relu2"), &y);
            y = b.conv(&format!("{p}.conv3"), &y, width, width * 4, 1, 1);
            y = b.node("Add", &format!("/{p}/Add"), &[&y, &identity], vec![]);
            x = b.relu(&format!("{p}.relu3"), &y);
            cin = width * 4;
        }
    }
    x = b.node(
        "GlobalAveragePool",
        "/avgpool/GlobalAveragePool",
        &[&x],
        vec![],
    );
    x = b.node("Flatten", "/Flatten", &[&x], vec![]);
    let w = b.weights("fc.weight", &[1000, 2048]);
    let bias = b.weights("fc.bias", &[1000]);
    let out = b.node("Gemm", "/fc/Gemm", &[&x, &w, &bias], vec![]);
    b.g.output.push(ValueInfoProto {
        name: out,
        r#type: Some(tensor_type(&[1, 1000])),
        ..Default::default()
    });
    let weight_bytes = b.weight_bytes;
    let m = ModelProto {
        ir_version: 8,
        producer_name: "rge-bench".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(b.g),
        ..Default::default()
    };
    (m, weight_bytes)
}

fn min_median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[0], v[v.len() / 2])
}

fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let py = if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let ok = Command::new(&py)
        .args(["-c", "import onnx"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

const PEER: &str = "import onnx, sys, time
ts = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); m = onnx.load(sys.argv[1]); ts.append(time.perf_counter() - t)
ts.sort(); print(ts[0], ts[len(ts) // 2])";

fn main() {
    let (model, weight_bytes) = resnet50();
    let dir = std::env::temp_dir().join(format!("rge-onnx-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("resnet50.onnx");
    let encoded = model.encode_to_vec();
    std::fs::write(&path, &encoded).unwrap();
    let mb = weight_bytes as f64 / 1e6;
    println!(
        "model: {} nodes, {} initializers, {mb:.1} MB of weights, file {:.1} MB",
        model.graph.as_ref().unwrap().node.len(),
        model.graph.as_ref().unwrap().initializer.len(),
        encoded.len() as f64 / 1e6
    );

    let runs = 7;
    let mut times = Vec::new();
    let mut touched = Vec::new();
    let mut nodes = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let m = onnx::import_file(&path).unwrap();
        times.push(t.elapsed());
        nodes = m.graph.total_node_count();
        // The same, then reading every 4 KiB page of every weight.
        let t = Instant::now();
        let m = onnx::import_file(&path).unwrap();
        let mut sum = 0u64;
        for n in m.graph.nodes_of(m.graph.root()) {
            if let Ok(Some(t)) = m
                .graph
                .op(n)
                .unwrap()
                .attrs()
                .get_as::<&rge_ir::Tensor>("value")
            {
                sum += t
                    .data
                    .iter()
                    .step_by(4096)
                    .map(|&b| u64::from(b))
                    .sum::<u64>();
            }
        }
        touched.push(t.elapsed());
        std::hint::black_box(sum);
    }
    // What reading the file alone costs (`import_file` reads it into one buffer).
    let read: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(std::fs::read(&path).unwrap());
            t.elapsed()
        })
        .collect();
    // A caller that memory-maps the file and hands the map to `import_bytes_in` as `Bytes`
    // imports without reading the weights at all (rge-formats itself is `forbid(unsafe_code)`).
    let mapped: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: the bench wrote this temp file and nothing modifies or truncates it while
            // it is mapped.
            let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            let m =
                onnx::import_bytes_in(Bytes::from_owner(map), "resnet50.onnx", Some(&dir)).unwrap();
            std::hint::black_box(m);
            t.elapsed()
        })
        .collect();
    let (best, median) = min_median(times);
    let (tbest, _) = min_median(touched);
    let (rbest, _) = min_median(read);
    let (mbest, mmedian) = min_median(mapped);
    let secs = best.as_secs_f64();
    println!(
        "rge import_file: min {:.2} ms, median {:.2} ms; {:.2} GB/s of weights, {:.0} nodes/s \
         ({nodes} rge nodes)",
        secs * 1e3,
        median.as_secs_f64() * 1e3,
        weight_bytes as f64 / secs / 1e9,
        nodes as f64 / secs,
    );
    println!(
        "rge import_file + read every weight page: min {:.2} ms",
        tbest.as_secs_f64() * 1e3
    );
    println!(
        "  of which std::fs::read of the file: min {:.2} ms",
        rbest.as_secs_f64() * 1e3
    );
    let msecs = mbest.as_secs_f64();
    println!(
        "rge import_bytes_in on a memory map (caller maps): min {:.3} ms, median {:.3} ms; \
         {:.1} GB/s of weights, {:.0} nodes/s",
        msecs * 1e3,
        mmedian.as_secs_f64() * 1e3,
        weight_bytes as f64 / msecs / 1e9,
        nodes as f64 / msecs,
    );

    let m = onnx::import_file(&path).unwrap();
    let t = Instant::now();
    let bytes = onnx::export(&m).unwrap().encode_to_vec();
    println!(
        "rge export + encode: {:.2} ms ({:.1} MB)",
        t.elapsed().as_secs_f64() * 1e3,
        bytes.len() as f64 / 1e6
    );

    match python() {
        None => println!("peer: skipped (no python with the `onnx` package)"),
        Some(py) => {
            let out = Command::new(&py)
                .args(["-c", PEER])
                .arg(&path)
                .arg(runs.to_string())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<f64> = text
                .split_whitespace()
                .filter_map(|s| s.parse().ok())
                .collect();
            if v.len() == 2 {
                println!(
                    "python onnx.load: min {:.2} ms, median {:.2} ms ({})",
                    v[0] * 1e3,
                    v[1] * 1e3,
                    py.display()
                );
                println!(
                    "ratio: import_file is {:.1}x faster than onnx.load; on a memory map {:.0}x \
                     (min vs min)",
                    v[0] / secs,
                    v[0] / msecs
                );
            } else {
                println!("peer: failed: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
