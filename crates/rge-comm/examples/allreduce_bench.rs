//! All-reduce bandwidth of the comm engine's HcomAllReduce kernel against a raw
//! `MPI_Allreduce` on the same buffers, 4 KiB to 256 MiB of f32, in the same run (run it with
//! `bash bench/allreduce.sh`, which starts it under mpirun). For each size the two are timed
//! in alternating rounds; the best round of each counts. Rank 0 prints the table.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rge_comm::mpi_backend::{barrier, raw_all_reduce_f32, MpiComm};
use rge_comm::Communicator;
use rge_ir::AttrMap;
use rge_kernels::{
    DType, KernelCtx, KernelInit, KernelResult, OutputSink, TensorRef, Value, ValueRef,
};

/// The kernel's output: the bench's preallocated receive buffer (as the runtime's arena gives
/// a planned slot), so both sides write the same memory.
struct Preallocated {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `alloc` returns the buffer of `len` bytes (16-aligned: a Vec<f32> of 4-byte elements
// allocated by the bench with 64-byte-aligned length, checked in `alloc`), initialized, used by
// nothing else during the call; each index once per call (one output).
unsafe impl OutputSink for Preallocated {
    fn output_count(&self) -> usize {
        1
    }
    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>> {
        let want = dtype.bytes_for(shape.iter().product());
        if index != 0 || want != self.len || self.ptr.as_ptr() as usize % 16 != 0 {
            return Err(rge_kernels::KernelError::invalid("bench output mismatch"));
        }
        Ok(self.ptr)
    }
    fn put(&mut self, _: usize, _: Value) -> KernelResult<()> {
        Err(rge_kernels::KernelError::invalid(
            "bench output is allocated",
        ))
    }
}

fn time(iters: usize, mut f: impl FnMut()) -> Duration {
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    t0.elapsed() / iters as u32
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let comm = Arc::new(MpiComm::init(&[], Duration::from_secs(120))?);
    let dyn_comm: Arc<dyn Communicator> = comm.clone();
    let mut attrs = AttrMap::default();
    attrs.set("reduction", "sum");
    attrs.set("group", rge_comm::WORLD_GROUP);
    let kernel = rge_comm::kernels::create(
        "HcomAllReduce",
        &KernelInit {
            node_name: "bench_allreduce",
            op_type: "HcomAllReduce",
            domain: "",
            opset: 1,
            attrs: &attrs,
            input_types: &[Some(DType::Float)],
            output_types: &[Some(DType::Float)],
            subgraph_attrs: &[],
            constants: &[],
        },
        &dyn_comm,
    )?;
    let rounds: usize = std::env::var("RGE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let max_mib: usize = std::env::var("RGE_BENCH_MAX_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    if comm.rank() == 0 {
        println!(
            "all-reduce (sum, f32) over {} ranks, {} backend; best of {rounds} rounds per size",
            comm.size(),
            dyn_comm.backend()
        );
        println!(
            "{:>10} {:>8} {:>14} {:>14} {:>8}",
            "bytes", "iters", "MPI GB/s", "comm GB/s", "ratio"
        );
    }
    let mut bytes = 4096usize;
    while bytes <= max_mib << 20 {
        let n = bytes / 4;
        let send: Vec<f32> = (0..n)
            .map(|i| (i % 97) as f32 + comm.rank() as f32)
            .collect();
        let mut recv = vec![0f32; n];
        // ~256 MiB moved per timing, at least 3 calls.
        let iters = ((256usize << 20) / bytes).clamp(3, 2000);
        let shape = [n];
        let (mut raw_best, mut eng_best) = (Duration::MAX, Duration::MAX);
        for _ in 0..rounds {
            barrier(&comm);
            let raw = time(iters, || raw_all_reduce_f32(&comm, &send, &mut recv));
            barrier(&comm);
            let eng = time(iters, || {
                let x = TensorRef::new(DType::Float, &shape, bytemuck::cast_slice(&send))
                    .expect("input");
                let inputs = [Some(ValueRef::Tensor(x))];
                let mut out = Preallocated {
                    ptr: NonNull::new(recv.as_mut_ptr().cast::<u8>()).expect("buffer"),
                    len: bytes,
                };
                let mut ctx = KernelCtx::new(&inputs, &mut out);
                kernel.compute(&mut ctx).expect("HcomAllReduce");
            });
            raw_best = raw_best.min(raw);
            eng_best = eng_best.min(eng);
        }
        let want = (0..n.min(64)).all(|i| {
            let base = (i % 97) as f32;
            let s: f32 = (0..comm.size()).map(|r| base + r as f32).sum();
            recv[i] == s
        });
        if !want {
            return Err("the all-reduce result is wrong".into());
        }
        if comm.rank() == 0 {
            let gbs = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e9;
            println!(
                "{:>10} {:>8} {:>14.3} {:>14.3} {:>8.3}",
                bytes,
                iters,
                gbs(raw_best),
                gbs(eng_best),
                raw_best.as_secs_f64() / eng_best.as_secs_f64()
            );
        }
        bytes *= 4;
    }
    Ok(())
}
