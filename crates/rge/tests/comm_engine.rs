//! The comm engine end to end in in-process worlds (one thread per rank, each with its own
//! engine set over its rank's communicator): the Hcom collectives placed on `comm` (on its own
//! stream) and computed across ranks; tensor-parallel sharding equal to the single-process
//! run; data-parallel `rge run` equal to the single-process run; and the faults (shapes that
//! differ across ranks, a rank that dies, an undefined group, a group naming ranks that do not
//! exist, `--tensor-parallel` greater than the ranks) as errors on every surviving rank.

#[path = "common/net.rs"]
mod net;

use std::sync::Arc;
use std::time::{Duration, Instant};

use net::{a_float, a_int, a_str, graph_of, Net, F32};
use rge::cli::distributed::{run_on, DistArgs};
use rge::cli::run::RunArgs;
use rge::engines::{engine_set, EngineArgs};
use rge_comm::{local_world, Communicator, Groups};
use rge_kernels::{Tensor, Value};
use rge_runtime::{ExecutorKind, Model, Session, SessionOptions};

fn session_on(comm: Arc<dyn Communicator>, executor: ExecutorKind) -> Session {
    let set = engine_set(&EngineArgs {
        comm: Some(comm),
        ..EngineArgs::default()
    })
    .unwrap();
    Session::new(SessionOptions {
        executor,
        ..SessionOptions::with_engines(set)
    })
    .unwrap()
}

/// Runs `f(comm)` on one thread per rank of an in-process world.
fn on_ranks<T: Send + 'static>(
    n: usize,
    groups: impl Fn(&mut Groups),
    f: impl Fn(Arc<dyn Communicator>) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let mut g = Groups::world(n);
    groups(&mut g);
    let f = Arc::new(f);
    let hs: Vec<_> = local_world(g, Duration::from_secs(20))
        .into_iter()
        .map(|c| {
            let f = f.clone();
            std::thread::spawn(move || f(Arc::new(c)))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
}

fn node_of<'a>(m: &'a Model, op_type: &str) -> &'a rge_ir::OpDesc {
    let g = m.graph();
    g.nodes_of(g.root())
        .filter_map(|n| g.op(n))
        .find(|op| op.op_type() == op_type)
        .unwrap_or_else(|| panic!("no {op_type} node"))
}

/// x [4, 2] → all-reduce (reduction), all-gather, broadcast (root 1), reduce-scatter (max),
/// all-to-all; and Relu(x) on a compute engine.
fn collectives_model(n: i64, reduction: &str, group: &str) -> rge_formats::onnx_proto::ModelProto {
    let mut net = Net::new();
    let x = net.input("x", F32, &[4, 2]);
    let g = || a_str("group", group);
    net.op_to(
        "HcomAllReduce",
        &[&x],
        "ar",
        vec![a_str("reduction", reduction), g()],
    );
    net.op_to(
        "HcomAllGather",
        &[&x],
        "ag",
        vec![a_int("rank_size", n), g()],
    );
    net.op_to(
        "HcomBroadcast",
        &[&x],
        "bc",
        vec![a_int("root_rank", 1 % n), g()],
    );
    net.op_to(
        "HcomReduceScatter",
        &[&x],
        "rs",
        vec![a_str("reduction", "max"), a_int("rank_size", n), g()],
    );
    net.op_to("HcomAllToAll", &[&x], "a2a", vec![g()]);
    net.op_to("Relu", &[&x], "r", vec![]);
    net.output("ar", F32, &[4, 2]);
    net.output("ag", F32, &[4 * n, 2]);
    net.output("bc", F32, &[4, 2]);
    net.output("rs", F32, &[4 / n, 2]);
    net.output("a2a", F32, &[4, 2]);
    net.output("r", F32, &[4, 2]);
    net.model()
}

fn x_of(rank: usize) -> Vec<f32> {
    (0..8)
        .map(|i| i as f32 * (rank as f32 + 1.0) - 3.0)
        .collect()
}

#[test]
fn collectives_in_a_model_across_ranks() {
    for (n, reduction) in [(2usize, "sum"), (4, "prod"), (4, "min"), (2, "max")] {
        let m = collectives_model(n as i64, reduction, rge_comm::WORLD_GROUP);
        let got = on_ranks(
            n,
            |_| {},
            move |comm| {
                let rank = comm.rank();
                let s = session_on(comm, ExecutorKind::Stream);
                let model = s.compile_graph(graph_of(&m)).unwrap();
                let ar = node_of(&model, "HcomAllReduce");
                assert_eq!(ar.engine_name(), "comm");
                let relu_stream = node_of(&model, "Relu").stream_id();
                assert_ne!(ar.stream_id(), relu_stream, "comm runs on its own stream");
                let x = Tensor::from_vec(&[4, 2], x_of(rank)).unwrap();
                let outs = model
                    .run_with(&[Value::from(x)], ExecutorKind::Stream, None)
                    .unwrap();
                outs.iter().map(f32s).collect::<Vec<_>>()
            },
        );
        let xs: Vec<Vec<f32>> = (0..n).map(x_of).collect();
        let red = |f: fn(f32, f32) -> f32| -> Vec<f32> {
            (0..8)
                .map(|i| xs[1..].iter().fold(xs[0][i], |a, x| f(a, x[i])))
                .collect()
        };
        let want_ar = match reduction {
            "sum" => red(|a, b| a + b),
            "prod" => red(|a, b| a * b),
            "min" => red(f32::min),
            _ => red(f32::max),
        };
        let max = red(f32::max);
        let rows = 4 / n;
        for (r, outs) in got.iter().enumerate() {
            assert_eq!(
                outs[0], want_ar,
                "{n} ranks {reduction}: all-reduce on rank {r}"
            );
            assert_eq!(outs[1], xs.concat(), "all-gather on rank {r}");
            assert_eq!(outs[2], xs[1 % n], "broadcast on rank {r}");
            assert_eq!(
                outs[3],
                max[r * rows * 2..(r + 1) * rows * 2],
                "reduce-scatter on rank {r}"
            );
            let want_a2a: Vec<f32> = (0..n)
                .flat_map(|i| xs[i][r * rows * 2..(r + 1) * rows * 2].to_vec())
                .collect();
            assert_eq!(outs[4], want_a2a, "all-to-all on rank {r}");
            assert_eq!(
                outs[5],
                xs[r].iter().map(|v| v.max(0.0)).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn a_group_of_some_ranks() {
    let mut net = Net::new();
    let x = net.input("x", F32, &[2]);
    net.op_to(
        "HcomAllReduce",
        &[&x],
        "y",
        vec![a_str("reduction", "sum"), a_str("group", "pair")],
    );
    net.output("y", F32, &[2]);
    let m = net.model();
    let got = on_ranks(
        3,
        |g| g.define("pair", &[2, 0]).unwrap(),
        move |comm| {
            let rank = comm.rank();
            let s = session_on(comm, ExecutorKind::Sequential);
            let model = match s.compile_graph(graph_of(&m)) {
                Ok(m) => m,
                Err(e) => return Err(e.to_string()),
            };
            let x = Tensor::from_vec(&[2], vec![rank as f32, 1.0]).unwrap();
            Ok(f32s(
                &model
                    .run_with(&[Value::from(x)], ExecutorKind::Sequential, None)
                    .unwrap()[0],
            ))
        },
    );
    assert_eq!(got[0].as_ref().unwrap(), &[2.0, 2.0]);
    assert_eq!(got[2].as_ref().unwrap(), &[2.0, 2.0]);
    let e = got[1].as_ref().unwrap_err();
    assert!(e.contains("rank 1 is not a member of group `pair`"), "{e}");
}

#[test]
fn an_undefined_group_is_a_compile_error_naming_the_node() {
    let m = collectives_model(1, "sum", "nowhere");
    let comm: Arc<dyn Communicator> = Arc::new(rge_comm::solo());
    let e = session_on(comm, ExecutorKind::Sequential)
        .compile_graph(graph_of(&m))
        .unwrap_err()
        .to_string();
    assert!(e.contains("group `nowhere` is not defined"), "{e}");
}

#[test]
fn shapes_that_differ_across_ranks_fail_on_every_rank() {
    let mut net = Net::new();
    let x = net.input("x", F32, &[-1]);
    net.op_to(
        "HcomAllReduce",
        &[&x],
        "y",
        vec![
            a_str("reduction", "sum"),
            a_str("group", rge_comm::WORLD_GROUP),
        ],
    );
    net.output("y", F32, &[-1]);
    let m = net.model();
    let got = on_ranks(
        2,
        |_| {},
        move |comm| {
            let rank = comm.rank();
            let s = session_on(comm, ExecutorKind::Sequential);
            let model = s.compile_graph_for_shapes(graph_of(&m)).unwrap();
            let x = Value::from(Tensor::from_vec(&[3 + rank], vec![1f32; 3 + rank]).unwrap());
            let model = model.model_for(std::slice::from_ref(&x)).unwrap();
            model
                .run_with(&[x], ExecutorKind::Sequential, None)
                .unwrap_err()
                .to_string()
        },
    );
    for e in got {
        assert!(
            e.contains("rank 1 gave 16 bytes where rank 0 gave 12"),
            "{e}"
        );
    }
}

#[test]
fn a_rank_that_dies_is_an_error_on_the_others() {
    let m = collectives_model(4, "sum", rge_comm::WORLD_GROUP);
    let t0 = Instant::now();
    let got = on_ranks(
        4,
        |_| {},
        move |comm| {
            if comm.rank() == 1 {
                return None; // dies before the run: its communicator goes with it
            }
            let s = session_on(comm, ExecutorKind::Sequential);
            let model = s.compile_graph(graph_of(&m)).unwrap();
            let x = Tensor::from_vec(&[4, 2], vec![0f32; 8]).unwrap();
            Some(
                model
                    .run_with(&[Value::from(x)], ExecutorKind::Sequential, None)
                    .unwrap_err()
                    .to_string(),
            )
        },
    );
    assert!(t0.elapsed() < Duration::from_secs(15));
    assert_eq!(got.iter().flatten().count(), 3, "three ranks survive");
    for e in got.into_iter().flatten() {
        assert!(e.contains("rank 1 has left"), "{e}");
    }
}

/// x [2, 8] → MatMul [8, 16] → Add [16] → Relu → MatMul [16, 8] → Add [8] → Gemm ([8, 4], C [4])
/// → y [2, 4]: an MLP pair and a lone Gemm.
fn mlp() -> rge_formats::onnx_proto::ModelProto {
    let mut net = Net::new();
    let x = net.input("x", F32, &[2, 8]);
    let w1 = net.weight(&[8, 16], 1);
    let b1 = net.weight(&[16], 2);
    let w2 = net.weight(&[16, 8], 3);
    let b2 = net.weight(&[8], 4);
    let w3 = net.weight(&[8, 4], 5);
    let c3 = net.weight(&[4], 6);
    let h = net.op("MatMul", &[&x, &w1], vec![]);
    let h = net.op("Add", &[&h, &b1], vec![]);
    let h = net.op("Relu", &[&h], vec![]);
    let h = net.op("MatMul", &[&h, &w2], vec![]);
    let h = net.op("Add", &[&h, &b2], vec![]);
    net.op_to(
        "Gemm",
        &[&h, &w3, &c3],
        "y",
        vec![a_float("alpha", 0.5), a_float("beta", 2.0)],
    );
    net.output("y", F32, &[2, 4]);
    net.model()
}

fn mlp_input() -> Value {
    Value::from(
        Tensor::from_vec(
            &[2, 8],
            (0..16)
                .map(|i| (i as f32 - 7.5) / 4.0)
                .collect::<Vec<f32>>(),
        )
        .unwrap(),
    )
}

/// Within `rel` of each value, or of a tenth of the largest (partial sums taken in another
/// order differ by rounding where the sum cancels).
fn close(a: &[f32], b: &[f32], rel: f32) {
    assert_eq!(a.len(), b.len());
    let floor = 0.1 * b.iter().fold(1e-3f32, |m, y| m.max(y.abs()));
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= rel * y.abs().max(floor), "{x} vs {y}");
    }
}

/// Shards `m` over 1 (reference), 2 and 4 in-process ranks; each rank's outputs equal the
/// single-process run within 1e-5, and the pass reports `columns` column splits, `rows` row
/// splits and as many all-reduces as row splits.
fn check_tensor_parallel(m: &rge_formats::onnx_proto::ModelProto, columns: usize, rows: usize) {
    let single = {
        let comm: Arc<dyn Communicator> = Arc::new(rge_comm::solo());
        let model = session_on(comm, ExecutorKind::Sequential)
            .compile_graph(graph_of(m))
            .unwrap();
        f32s(
            &model
                .run_with(&[mlp_input()], ExecutorKind::Sequential, None)
                .unwrap()[0],
        )
    };
    for n in [2usize, 4] {
        let m = m.clone();
        let got = on_ranks(
            n,
            |_| {},
            move |comm| {
                let rank = comm.rank();
                let mut g = graph_of(&m);
                let mut read = 0u64;
                let rep = rge_comm::tensor_parallel::shard_with(&mut g, rank, n, &mut |b| {
                    read += b.len() as u64
                })
                .unwrap();
                // Every sharded weight (and bias) was reported read: its pages can go back.
                assert!(read >= rep.weight_bytes_full, "{read} {rep:?}");
                let model = session_on(comm, ExecutorKind::Stream)
                    .compile_graph(g)
                    .unwrap();
                let y = f32s(
                    &model
                        .run_with(&[mlp_input()], ExecutorKind::Stream, None)
                        .unwrap()[0],
                );
                (rep, y)
            },
        );
        for (rep, y) in got {
            assert_eq!(rep.column.len(), columns, "{rep:?}");
            assert_eq!(rep.row.len(), rows, "{rep:?}");
            assert_eq!(rep.collectives.len(), rows, "{rep:?}");
            assert_eq!(
                rep.weight_bytes_local * n as u64,
                rep.weight_bytes_full,
                "{rep:?}"
            );
            close(&y, &single, 1e-5);
        }
    }
}

#[test]
fn tensor_parallel_equals_single_process() {
    // The pair (columns, then rows) and the lone Gemm (rows).
    check_tensor_parallel(&mlp(), 1, 2);
}

/// x [2, 8] → MatMul [8, 16] → Add [16] → GELU → MatMul [16, 8] → y: GELU as exporters write
/// it, tanh form `0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³)))` (`variant` 0), with an inner
/// value that is also a graph output (1), or with a per-column constant inside (2).
fn gelu_mlp(variant: u8) -> rge_formats::onnx_proto::ModelProto {
    let mut net = Net::new();
    let x = net.input("x", F32, &[2, 8]);
    let w1 = net.weight(&[8, 16], 1);
    let b1 = net.weight(&[16], 2);
    let w2 = net.weight(&[16, 8], 3);
    let h = net.op("MatMul", &[&x, &w1], vec![]);
    let h = net.op("Add", &[&h, &b1], vec![]);
    let three = net.scalar(3.0);
    let cube = net.op("Pow", &[&h, &three], vec![]);
    let k = net.scalar(0.044715);
    let t = net.op("Mul", &[&cube, &k], vec![]);
    let t = if variant == 2 {
        let per_column = net.weight(&[16], 9);
        net.op("Add", &[&t, &per_column], vec![])
    } else {
        t
    };
    let t = net.op("Add", &[&h, &t], vec![]);
    let c = net.scalar(0.797_884_6);
    let t = net.op("Mul", &[&t, &c], vec![]);
    let t = net.op("Tanh", &[&t], vec![]);
    let one = net.scalar(1.0);
    let t = net.op("Add", &[&t, &one], vec![]);
    let t = net.op("Mul", &[&h, &t], vec![]);
    let half = net.scalar(0.5);
    let t = net.op("Mul", &[&t, &half], vec![]);
    net.op_to("MatMul", &[&t, &w2], "y", vec![]);
    net.output("y", F32, &[2, 8]);
    if variant == 1 {
        net.op_to("Identity", &[&cube], "cube", vec![]);
        net.output("cube", F32, &[2, 16]);
    }
    net.model()
}

#[test]
fn tensor_parallel_pairs_mlps_through_gelu_and_leaves_near_misses_to_rows() {
    check_tensor_parallel(&gelu_mlp(0), 1, 1);
    // A value of the region read outside it, or a per-column constant inside: no pair, both
    // MatMuls split by rows, still equal to one process.
    check_tensor_parallel(&gelu_mlp(1), 0, 2);
    check_tensor_parallel(&gelu_mlp(2), 0, 2);
}

fn write_model(
    dir: &std::path::Path,
    m: &rge_formats::onnx_proto::ModelProto,
) -> std::path::PathBuf {
    use prost::Message;
    let p = dir.join("mlp.onnx");
    std::fs::write(&p, m.encode_to_vec()).unwrap();
    p
}

fn run_args(model: &std::path::Path, input: &std::path::Path, out: &std::path::Path) -> RunArgs {
    RunArgs {
        model: model.into(),
        inputs: vec![format!("x={}", input.display())],
        output_dir: Some(out.into()),
        ..RunArgs::default()
    }
}

#[test]
fn data_parallel_run_equals_single_process() {
    let dir = std::env::temp_dir().join(format!("rge-comm-dp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut net = Net::new();
    let x = net.input("x", F32, &[5, 8]);
    let w = net.weight(&[8, 3], 7);
    let h = net.op("MatMul", &[&x, &w], vec![]);
    net.op_to("Tanh", &[&h], "y", vec![]);
    net.output("y", F32, &[5, 3]);
    let model = write_model(&dir, &net.model());
    let input = dir.join("x.npy");
    let xt = Tensor::from_vec(
        &[5, 8],
        (0..40)
            .map(|i| (i as f32 - 20.0) / 9.0)
            .collect::<Vec<f32>>(),
    )
    .unwrap();
    std::fs::write(&input, rge_runtime::io::npy_bytes(&xt).unwrap()).unwrap();
    let single = dir.join("single");
    rge::cli::run::run(&run_args(&model, &input, &single)).unwrap();
    let want = rge_runtime::io::read_tensor(&single.join("y.npy")).unwrap();
    for n in [2usize, 3, 4] {
        let out = dir.join(format!("dp{n}"));
        let (m, i, o) = (model.clone(), input.clone(), out.clone());
        let got = on_ranks(
            n,
            |_| {},
            move |comm| {
                let dist = DistArgs {
                    data_parallel: true,
                    ..DistArgs::default()
                };
                run_on(comm, &run_args(&m, &i, &o), &[], &dist).map_err(|e| e.message)
            },
        );
        assert!(got[0]
            .as_ref()
            .unwrap()
            .contains(&format!("data parallel: {n} ranks, batch 5")));
        for r in &got[1..] {
            assert_eq!(r.as_deref().unwrap(), "", "only rank 0 prints");
        }
        let y = rge_runtime::io::read_tensor(&out.join("y.npy")).unwrap();
        assert_eq!(y.shape(), want.shape());
        close(
            y.as_slice::<f32>().unwrap(),
            want.as_slice::<f32>().unwrap(),
            1e-5,
        );
    }
    // Faults: a batch smaller than the ranks; --tensor-parallel above the ranks; a group naming
    // a rank that does not exist.
    let (m, i, o) = (model.clone(), input.clone(), dir.join("bad"));
    let got = on_ranks(
        6,
        |_| {},
        move |comm| {
            let dist = DistArgs {
                data_parallel: true,
                ..DistArgs::default()
            };
            run_on(comm, &run_args(&m, &i, &o), &[], &dist)
                .unwrap_err()
                .message
        },
    );
    for e in got {
        assert!(
            e.contains("the batch of 5 (input `x`) is smaller than the 6 ranks"),
            "{e}"
        );
    }
    let (m, i, o) = (model.clone(), input.clone(), dir.join("bad"));
    let got = on_ranks(
        2,
        |_| {},
        move |comm| {
            let dist = DistArgs {
                tensor_parallel: Some(4),
                ..DistArgs::default()
            };
            run_on(comm, &run_args(&m, &i, &o), &[], &dist)
                .unwrap_err()
                .message
        },
    );
    for e in got {
        assert!(
            e.contains("--tensor-parallel 4 is greater than the number of ranks (2)"),
            "{e}"
        );
    }
    let dist = DistArgs {
        groups: vec!["g=0,5".into()],
        ..DistArgs::default()
    };
    let e = rge::cli::distributed::world(&dist).unwrap_err().message;
    assert!(
        e.contains("group `g` names rank 5, which does not exist"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn all_reduces_with_one_fusion_id_become_one() {
    let mut net = Net::new();
    let dims: [&[i64]; 4] = [&[2, 3], &[4], &[1, 2, 2], &[3]];
    let xs: Vec<String> = (0..4)
        .map(|i| net.input(&format!("x{i}"), F32, dims[i]))
        .collect();
    for (i, x) in xs.iter().enumerate() {
        // The first three share fusion id 5; the last has its own.
        let id = if i < 3 { 5 } else { 6 };
        net.op_to(
            "HcomAllReduce",
            &[x],
            &format!("y{i}"),
            vec![
                a_str("reduction", "sum"),
                a_str("group", rge_comm::WORLD_GROUP),
                a_int("fusion", 2),
                a_int("fusion_id", id),
            ],
        );
        net.output(&format!("y{i}"), F32, dims[i]);
    }
    let m = net.model();
    let got = on_ranks(
        2,
        |_| {},
        move |comm| {
            let rank = comm.rank() as f32;
            let s = session_on(comm, ExecutorKind::Sequential);
            let model = s.compile_graph(graph_of(&m)).unwrap();
            let g = model.graph();
            let reduces: Vec<&rge_ir::OpDesc> = g
                .nodes_of(g.root())
                .filter_map(|n| g.op(n))
                .filter(|op| op.op_type() == "HcomAllReduce")
                .collect();
            let fused: Vec<Vec<String>> = reduces
                .iter()
                .filter_map(
                    |op| match op.attrs().get(rge_comm::fusion::FUSED_FROM_ATTR) {
                        Some(rge_ir::AttrValue::ListString(v)) => Some(v.clone()),
                        _ => None,
                    },
                )
                .collect();
            let inputs: Vec<Value> = dims
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let shape: Vec<usize> = d.iter().map(|&x| x as usize).collect();
                    let n: usize = shape.iter().product();
                    Value::from(
                        Tensor::from_vec(
                            &shape,
                            (0..n)
                                .map(|j| j as f32 + 10.0 * i as f32 + rank)
                                .collect::<Vec<f32>>(),
                        )
                        .unwrap(),
                    )
                })
                .collect();
            let outs = model
                .run_with(&inputs, ExecutorKind::Sequential, None)
                .unwrap();
            (
                reduces.len(),
                fused,
                outs.iter()
                    .map(|v| (v.as_tensor().unwrap().shape().to_vec(), f32s(v)))
                    .collect::<Vec<_>>(),
            )
        },
    );
    for (count, fused, outs) in got {
        assert_eq!(
            count, 2,
            "three fused into one, plus the one with its own id"
        );
        assert_eq!(fused.len(), 1);
        assert_eq!(fused[0].len(), 3, "{fused:?}");
        for (i, (shape, y)) in outs.iter().enumerate() {
            let want_shape: Vec<usize> = dims[i].iter().map(|&x| x as usize).collect();
            assert_eq!(shape, &want_shape);
            let want: Vec<f32> = (0..y.len())
                .map(|j| 2.0 * (j as f32 + 10.0 * i as f32) + 1.0)
                .collect();
            assert_eq!(y, &want, "output {i}");
        }
    }
}

#[test]
fn explain_shows_the_shard_and_the_collectives() {
    let dir = std::env::temp_dir().join(format!("rge-comm-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = write_model(&dir, &mlp());
    let text =
        rge::cli::explain::run_tensor_parallel(&path, &EngineArgs::default(), false, None, 2)
            .unwrap();
    assert!(text.contains("tensor parallel, rank 0 of 2"), "{text}");
    assert!(
        text.contains("tensor parallel: columns 0..8 of 16 (rank 0 of 2)"),
        "{text}"
    );
    assert!(
        text.contains("tensor parallel: rows 0..8 of 16 (rank 0 of 2)"),
        "{text}"
    );
    assert!(
        text.contains("collective over group `hccl_world_group`"),
        "{text}"
    );
    assert!(text.contains("comm"), "placed on the comm engine: {text}");
    let json = rge::cli::explain::run_tensor_parallel(&path, &EngineArgs::default(), true, None, 2)
        .unwrap();
    assert!(json.contains("HcomAllReduce"), "{json}");
    let e = rge::cli::explain::run_tensor_parallel(&path, &EngineArgs::default(), false, None, 0)
        .unwrap_err();
    assert!(e.message.contains("--tensor-parallel"), "{}", e.message);
    let _ = std::fs::remove_dir_all(&dir);
}
