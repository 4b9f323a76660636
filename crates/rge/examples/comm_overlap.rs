//! Communication overlapping computation: a model with an all-reduce of a large buffer and,
//! independent of it, a chain of MatMuls, run by an in-process world of 2 ranks (one compute
//! thread each, so the 2 cores are not oversubscribed), with the stream executor (the comm
//! engine's own stream beside the compute stream) and with the sequential executor (one node at
//! a time). Rank 1 reaches the all-reduce `PEER_DELAY` late, as a slower peer or a network
//! would make it: the time rank 0 waits in the collective is what overlap can hide. Prints
//! rank 0's median time of each and their ratio (run by `bash bench/comm_overlap.sh`; figures
//! only, nothing asserted).

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use rge::engines::{engine_set, EngineArgs};
use rge_comm::{local_world, Communicator, Groups};
use rge_formats::onnx_proto::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{ExecutorKind, Session, SessionOptions};

const COMM_FLOATS: i64 = 1 << 18; // 1 MiB all-reduced
const DIM: i64 = 384; // MatMul size
const LAYERS: usize = 8;
/// How late rank 1 starts each run.
const PEER_DELAY: Duration = Duration::from_millis(10);

fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn s_attr(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: v.as_bytes().to_vec().into(),
        ..Default::default()
    }
}

fn model() -> rge_ir::ComputeGraph {
    let mut nodes = vec![NodeProto {
        op_type: "HcomAllReduce".into(),
        name: "allreduce".into(),
        input: vec!["g".into()],
        output: vec!["g_sum".into()],
        attribute: vec![
            s_attr("reduction", "sum"),
            s_attr("group", rge_comm::WORLD_GROUP),
        ],
        ..Default::default()
    }];
    let mut inits = Vec::new();
    let mut prev = "x".to_string();
    for l in 0..LAYERS {
        let w = format!("w{l}");
        inits.push(TensorProto {
            name: w.clone(),
            dims: vec![DIM, DIM],
            data_type: 1,
            float_data: (0..DIM * DIM)
                .map(|i| ((i % 17) as f32 - 8.0) / 200.0)
                .collect(),
            ..Default::default()
        });
        let out = if l + 1 == LAYERS {
            "y".to_string()
        } else {
            format!("h{l}")
        };
        nodes.push(NodeProto {
            op_type: "MatMul".into(),
            name: format!("mm{l}"),
            input: vec![prev.clone(), w],
            output: vec![out.clone()],
            ..Default::default()
        });
        prev = out;
    }
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "overlap".into(),
            node: nodes,
            initializer: inits,
            input: vec![vi("g", &[COMM_FLOATS]), vi("x", &[DIM, DIM])],
            output: vec![vi("g_sum", &[COMM_FLOATS]), vi("y", &[DIM, DIM])],
            ..Default::default()
        }),
        ..Default::default()
    };
    rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "overlap.onnx")
        .expect("model")
        .graph
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs = 9;
    let world = local_world(Groups::world(2), Duration::from_secs(60));
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = world
        .into_iter()
        .map(|c| {
            let start = barrier.clone();
            std::thread::spawn(move || {
                let comm: Arc<dyn Communicator> = Arc::new(c);
                let rank = comm.rank();
                let set = engine_set(&EngineArgs {
                    comm: Some(comm),
                    ..EngineArgs::default()
                })
                .expect("engines");
                let s = Session::new(SessionOptions {
                    threads: 1,
                    ..SessionOptions::with_engines(set)
                })
                .expect("session");
                let m = s.compile_graph(model()).expect("compile");
                let inputs = vec![
                    Value::from(
                        Tensor::from_vec(&[COMM_FLOATS as usize], vec![1f32; COMM_FLOATS as usize])
                            .expect("g"),
                    ),
                    Value::from(
                        Tensor::from_vec(
                            &[DIM as usize, DIM as usize],
                            vec![0.5f32; (DIM * DIM) as usize],
                        )
                        .expect("x"),
                    ),
                ];
                let run = |kind| {
                    // Both ranks start each run together; then rank 1 is late.
                    start.wait();
                    if rank == 1 {
                        std::thread::sleep(PEER_DELAY);
                    }
                    let t0 = Instant::now();
                    m.run_with(&inputs, kind, None).expect("run");
                    t0.elapsed()
                };
                let mut times = Vec::new();
                for kind in [ExecutorKind::Sequential, ExecutorKind::Stream] {
                    run(kind);
                    let t: Vec<Duration> = (0..runs).map(|_| run(kind)).collect();
                    times.push(median(t));
                }
                (rank, m.stream_count, times)
            })
        })
        .collect();
    for h in handles {
        let (rank, streams, t) = h.join().expect("rank");
        if rank == 0 {
            println!(
                "all-reduce {} MiB beside {LAYERS} MatMuls {DIM}x{DIM}, 2 in-process ranks (1 thread each), {streams} streams, rank 1 {} ms late",
                (COMM_FLOATS * 4) >> 20,
                PEER_DELAY.as_millis()
            );
            println!(
                "sequential executor: {:8.2} ms (median of {runs})",
                t[0].as_secs_f64() * 1e3
            );
            println!(
                "stream executor:     {:8.2} ms (comm on its own stream)",
                t[1].as_secs_f64() * 1e3
            );
            println!(
                "overlap speedup:     {:8.2}x",
                t[0].as_secs_f64() / t[1].as_secs_f64()
            );
        }
    }
}
