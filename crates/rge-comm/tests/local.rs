//! The in-process backend: every collective and reduction across 1, 2, 3 and 4 ranks (the
//! result every rank gets, against a reference computed here), groups, point-to-point, and the
//! faults: a size that differs across ranks, a rank that leaves, a rank that never arrives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rge_comm::{
    gather_to_root, local_world, CommError, Communicator, Groups, ReduceOp, WORLD_GROUP,
};
use rge_kernels::DType;

const W: &str = WORLD_GROUP;

/// Runs `f(comm)` on one thread per rank and returns each rank's result in rank order.
fn on_ranks<T: Send + 'static>(
    groups: Groups,
    timeout: Duration,
    f: impl Fn(&dyn Communicator) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let f = Arc::new(f);
    let handles: Vec<_> = local_world(groups, timeout)
        .into_iter()
        .map(|c| {
            let f = f.clone();
            std::thread::spawn(move || f(&c))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

fn values<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(b)
}

/// Rank r's data: 6 values depending on r.
fn data_f32(r: usize) -> Vec<f32> {
    (0..6)
        .map(|i| (i as f32 - 2.5) * (r as f32 + 1.0) + r as f32)
        .collect()
}

fn data_i32(r: usize) -> Vec<i32> {
    (0..6)
        .map(|i| (i - 3) * (r as i32 + 2) + 7 * r as i32)
        .collect()
}

fn fold<T: Copy>(parts: &[Vec<T>], f: impl Fn(T, T) -> T) -> Vec<T> {
    (0..parts[0].len())
        .map(|i| parts[1..].iter().fold(parts[0][i], |a, p| f(a, p[i])))
        .collect()
}

#[test]
fn all_reduce_every_reduction_f32_and_i32() {
    for n in 1..=4 {
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
            let got = on_ranks(Groups::world(n), Duration::from_secs(10), move |c| {
                let x = bytes(&data_f32(c.rank()));
                let mut y = vec![0u8; x.len()];
                c.all_reduce(W, &x, &mut y, DType::Float, op).unwrap();
                let xi = bytes(&data_i32(c.rank()));
                let mut yi = vec![0u8; xi.len()];
                c.all_reduce(W, &xi, &mut yi, DType::Int32, op).unwrap();
                (values::<f32>(&y), values::<i32>(&yi))
            });
            let pf: Vec<_> = (0..n).map(data_f32).collect();
            let pi: Vec<_> = (0..n).map(data_i32).collect();
            let (wf, wi) = match op {
                ReduceOp::Sum => (fold(&pf, |a, b| a + b), fold(&pi, |a, b| a + b)),
                ReduceOp::Prod => (fold(&pf, |a, b| a * b), fold(&pi, |a, b| a * b)),
                ReduceOp::Max => (fold(&pf, f32::max), fold(&pi, i32::max)),
                ReduceOp::Min => (fold(&pf, f32::min), fold(&pi, i32::min)),
            };
            for (r, (f, i)) in got.iter().enumerate() {
                assert_eq!(f, &wf, "{n} ranks, {op:?}, rank {r}");
                assert_eq!(i, &wi, "{n} ranks, {op:?}, rank {r}");
            }
        }
    }
}

#[test]
fn all_reduce_other_dtypes() {
    let got = on_ranks(Groups::world(3), Duration::from_secs(10), |c| {
        let r = c.rank() as f64;
        let x = bytes(&[r, -r, 0.5 * r]);
        let mut y = vec![0u8; x.len()];
        c.all_reduce(W, &x, &mut y, DType::Double, ReduceOp::Sum)
            .unwrap();
        let xu = bytes(&[c.rank() as u8 * 10, 200]);
        let mut yu = vec![0u8; 2];
        c.all_reduce(W, &xu, &mut yu, DType::Uint8, ReduceOp::Max)
            .unwrap();
        (values::<f64>(&y), yu)
    });
    for (y, yu) in got {
        assert_eq!(y, [3.0, -3.0, 1.5]);
        assert_eq!(yu, [20, 200]);
    }
}

#[test]
fn broadcast_all_gather_reduce_scatter_all_to_all() {
    for n in [1usize, 2, 4] {
        let got = on_ranks(Groups::world(n), Duration::from_secs(10), move |c| {
            let r = c.rank();
            let mut b = bytes(&data_f32(r));
            c.broadcast(W, &mut b, n - 1).unwrap();
            let x = bytes(&data_i32(r));
            let mut g = vec![0u8; x.len() * n];
            c.all_gather(W, &x, &mut g).unwrap();
            // 2·n values: block i of the reduction goes to rank i.
            let s: Vec<f32> = (0..2 * n).map(|i| (i * (r + 1)) as f32).collect();
            let mut rs = vec![0u8; 8];
            c.reduce_scatter(W, &bytes(&s), &mut rs, DType::Float, ReduceOp::Sum)
                .unwrap();
            // Element j of rank r: 100·r + j; block j goes to rank j.
            let a: Vec<i32> = (0..n).map(|j| (100 * r + j) as i32).collect();
            let mut t = vec![0u8; 4 * n];
            c.all_to_all(W, &bytes(&a), &mut t).unwrap();
            (
                values::<f32>(&b),
                values::<i32>(&g),
                values::<f32>(&rs),
                values::<i32>(&t),
            )
        });
        let gather_want: Vec<i32> = (0..n).flat_map(data_i32).collect();
        let tri = (n * (n + 1) / 2) as f32;
        for (r, (b, g, rs, t)) in got.into_iter().enumerate() {
            assert_eq!(b, data_f32(n - 1), "broadcast, {n} ranks, rank {r}");
            assert_eq!(g, gather_want, "all-gather, {n} ranks, rank {r}");
            assert_eq!(
                rs,
                [(2 * r) as f32 * tri, (2 * r + 1) as f32 * tri],
                "reduce-scatter, rank {r}"
            );
            let want: Vec<i32> = (0..n).map(|i| (100 * i + r) as i32).collect();
            assert_eq!(t, want, "all-to-all, {n} ranks, rank {r}");
        }
    }
}

#[test]
fn send_receive_and_gather_to_root() {
    let got = on_ranks(Groups::world(3), Duration::from_secs(10), |c| {
        let r = c.rank();
        // A ring: each sends to the next and receives from the previous.
        c.send(W, &[r as u8; 3], (r + 1) % 3, 7).unwrap();
        let mut b = [0u8; 3];
        c.recv(W, &mut b, (r + 2) % 3, 7).unwrap();
        let parts = gather_to_root(c, W, &vec![r as u8; r + 1], 0).unwrap();
        (b, parts)
    });
    for (r, (b, parts)) in got.into_iter().enumerate() {
        assert_eq!(b, [((r + 2) % 3) as u8; 3]);
        if r == 0 {
            assert_eq!(parts.unwrap(), vec![vec![0u8], vec![1, 1], vec![2, 2, 2]]);
        } else {
            assert!(parts.is_none());
        }
    }
}

#[test]
fn groups_run_on_their_members_only() {
    let mut g = Groups::world(4);
    g.define("odd", &[3, 1]).unwrap();
    let got = on_ranks(g, Duration::from_secs(10), |c| {
        let x = bytes(&[c.rank() as i64]);
        let mut y = vec![0u8; 8];
        let odd = c.all_reduce("odd", &x, &mut y, DType::Int64, ReduceOp::Sum);
        let mut w = vec![0u8; 8];
        c.all_reduce(W, &x, &mut w, DType::Int64, ReduceOp::Sum)
            .unwrap();
        let mut b = bytes(&[c.rank() as i64]);
        let bc = c.broadcast("odd", &mut b, 0).map(|_| values::<i64>(&b)[0]);
        (
            odd.map(|_| values::<i64>(&y)[0]).ok(),
            values::<i64>(&w)[0],
            bc.ok(),
        )
    });
    assert_eq!(got[0], (None, 6, None));
    assert_eq!(
        got[1],
        (Some(4), 6, Some(3)),
        "group rank 0 of `odd` is world rank 3"
    );
    assert_eq!(got[2], (None, 6, None));
    assert_eq!(got[3], (Some(4), 6, Some(3)));
}

#[test]
fn mismatched_sizes_fail_on_every_rank() {
    let got = on_ranks(Groups::world(3), Duration::from_secs(10), |c| {
        let n = if c.rank() == 1 { 5 } else { 4 };
        let x = vec![0u8; 4 * n];
        let mut y = vec![0u8; 4 * n];
        c.all_reduce(W, &x, &mut y, DType::Float, ReduceOp::Sum)
            .unwrap_err()
            .to_string()
    });
    for e in got {
        assert!(
            e.contains("rank 1 gave 20 bytes where rank 0 gave 16"),
            "{e}"
        );
    }
}

#[test]
fn a_rank_that_leaves_fails_the_others_at_once() {
    let t0 = Instant::now();
    let got = on_ranks(Groups::world(3), Duration::from_secs(30), |c| {
        if c.rank() == 2 {
            return None; // dies: its communicator is dropped with its thread
        }
        let x = [0u8; 4];
        let mut y = [0u8; 4];
        Some(
            c.all_reduce(W, &x, &mut y, DType::Float, ReduceOp::Sum)
                .unwrap_err(),
        )
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "waited for the timeout"
    );
    for e in got.into_iter().flatten() {
        assert!(matches!(e, CommError::RankGone { rank: 2, .. }), "{e}");
    }
}

#[test]
fn a_rank_that_never_arrives_times_out() {
    let t0 = Instant::now();
    let got = on_ranks(Groups::world(2), Duration::from_millis(300), |c| {
        let x = [0u8; 4];
        let mut y = [0u8; 4];
        if c.rank() == 1 {
            // Stuck elsewhere (holding its communicator) for longer than the timeout.
            std::thread::sleep(Duration::from_millis(1500));
            return None;
        }
        Some(
            c.all_reduce(W, &x, &mut y, DType::Float, ReduceOp::Sum)
                .unwrap_err()
                .to_string(),
        )
    });
    assert!(t0.elapsed() < Duration::from_secs(5));
    let e = got[0].clone().unwrap();
    assert!(
        e.contains("timed out after 0.3 s waiting for rank(s) [1]"),
        "{e}"
    );
}

#[test]
fn unknown_groups_and_collectives_that_differ_are_errors() {
    let got = on_ranks(Groups::world(2), Duration::from_secs(10), |c| {
        let x = [0u8; 4];
        let mut y = [0u8; 4];
        let unknown = c
            .all_gather("nope", &x, &mut [0u8; 8])
            .unwrap_err()
            .to_string();
        let r = if c.rank() == 0 {
            c.all_reduce(W, &x, &mut y, DType::Float, ReduceOp::Sum)
                .err()
        } else {
            std::thread::sleep(Duration::from_millis(100));
            c.all_gather(W, &x, &mut [0u8; 8]).err()
        };
        (unknown, r.map(|e| e.to_string()))
    });
    assert!(
        got[0].0.contains("group `nope` is not defined"),
        "{}",
        got[0].0
    );
    let e = got[1].1.clone().unwrap();
    assert!(e.contains("ranks disagree"), "{e}");
}
