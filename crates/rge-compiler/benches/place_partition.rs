//! Placement and partitioning at scale. Prints figures, asserts nothing.
//!
//! Shapes (3 engines, random engine support per op type):
//! - `random`: each node reads 1–2 earlier nodes, mostly from the last 64, sometimes from
//!   anywhere;
//! - `alt-chain`: a chain whose engines alternate A, B, A, B…, every A node also fed by the
//!   first node (GE's `HasSecondPath` walks the whole chain for each A node);
//! - `fan-out`: one node feeding n/2 sinks of engine B, then n/2 nodes of engine A (GE's
//!   search revisits every sink for each A node).
//!
//! For each shape and size: place, partition (cluster levels + the End/PlaceHolder plan), their
//! sum and ns per node; materializing the partition graphs is timed apart. Each run places and
//! partitions a freshly built copy of the same graph. After an untimed warm-up (rayon pool,
//! code), the first run at each size is shown apart (`1st s`), then the size runs again (15
//! times at ≤ 20k nodes, 5 at ≤ 200k, 3 above; the runs of all sizes interleaved, so that a
//! change in the machine's load falls on all alike) and the run with the median total is shown
//! with the fastest and slowest totals; the per-node ratio compares medians (and, in brackets,
//! first runs). With `--keep-heap`, glibc is told to keep freed memory (see `keep_heap`), so that
//! every size is measured in the same state: small sizes always reuse the memory of the previous
//! run, while large ones otherwise take much of theirs fresh from the kernel each time. Then
//! GE's reference merge on the adversarial shapes at smaller sizes, for comparison.
//!
//! `cargo bench -p rge-compiler --bench place_partition [-- --sizes 10000,100000]
//! [--shapes random,alt-chain,fan-out] [--no-reference] [--keep-heap]`

use std::sync::Arc;
use std::time::Instant;

use rge_compiler::partition::{
    dense_graph, ge_merge_clusters, merge_clusters, partition, PartitionMode,
};
use rge_compiler::{place, CompileOptions, EngineManager};
use rge_engine::{BasicEngine, EngineAttributes, TableStore};
use rge_ir::{ComputeGraph, DataType, NodeId, OpDesc, Shape, TensorDesc};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const TYPES: usize = 12;

fn type_name(t: usize) -> String {
    format!("T{t}")
}

/// Engines a (cost 1), b (2), c (3) with random support per op type (c takes the rest), and
/// local for Data. Types 0 and 1 are a-only and b-only for the adversarial shapes.
fn manager(rng: &mut Rng) -> Arc<EngineManager> {
    let mut ops: [Vec<String>; 3] = Default::default();
    for t in 0..TYPES {
        let name = type_name(t);
        match t {
            0 => ops[0].push(name),
            1 => ops[1].push(name),
            _ => {
                let mut any = false;
                for (e, list) in ops.iter_mut().enumerate().take(2) {
                    if rng.below(100) < 35 + 10 * e {
                        list.push(name.clone());
                        any = true;
                    }
                }
                if !any || rng.below(2) == 0 {
                    ops[2].push(name);
                }
            }
        }
    }
    let mut b = EngineManager::builder();
    for (i, list) in ops.iter().enumerate() {
        let name = ["a", "b", "c"][i];
        let cost = i as u8 + 1;
        b.register(
            BasicEngine::new(EngineAttributes::new(name, cost)).with_store(
                TableStore::new(name, format!("{name}_store"), cost).with_ops(list.iter().cloned()),
            ),
        );
    }
    b.register(
        BasicEngine::new(EngineAttributes::new("local", 9))
            .with_store(TableStore::new("local", "local_store", 9).with_ops(["Data"])),
    );
    b.build().unwrap()
}

fn desc() -> TensorDesc {
    TensorDesc::new(Shape::new([8, 64]), DataType::Float, Default::default())
}

fn op(name: String, ty: &str, inputs: usize, outputs: usize) -> OpDesc {
    let mut op = OpDesc::new(name, ty);
    for _ in 0..inputs {
        op.add_input("", desc()).unwrap();
    }
    for _ in 0..outputs {
        op.add_output("", desc()).unwrap();
    }
    op
}

/// Adds a node reading output `i` of each `(src, i)`.
fn add_from(
    g: &mut ComputeGraph,
    name: String,
    ty: &str,
    srcs: &[(NodeId, usize)],
    outputs: usize,
) -> NodeId {
    let root = g.root();
    let n = g.add_node(root, op(name, ty, srcs.len(), outputs)).unwrap();
    for (k, &(s, i)) in srcs.iter().enumerate() {
        g.add_edge(s, i, n, k).unwrap();
    }
    n
}

fn add(g: &mut ComputeGraph, name: String, ty: &str, srcs: &[NodeId]) -> NodeId {
    let srcs: Vec<(NodeId, usize)> = srcs.iter().map(|&s| (s, 0)).collect();
    add_from(g, name, ty, &srcs, 1)
}

fn random_graph(n: usize, rng: &mut Rng) -> ComputeGraph {
    let mut g = ComputeGraph::new("random");
    g.reserve_nodes(n);
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = if i < 4 {
            add(&mut g, format!("n{i}"), "Data", &[])
        } else {
            let k = 1 + rng.below(2);
            let srcs: Vec<NodeId> = (0..k)
                .map(|_| {
                    let j = if rng.below(100) == 0 {
                        rng.below(i)
                    } else {
                        i - 1 - rng.below(i.min(64))
                    };
                    ids[j]
                })
                .collect();
            let t = type_name(2 + rng.below(TYPES - 2));
            add(&mut g, format!("n{i}"), &t, &srcs)
        };
        ids.push(id);
    }
    g
}

// The hubs below feed each consumer from an output of its own: rge-ir checks a new link
// against the producer anchor's peer list, so one anchor with k consumers costs O(k²) to build.

fn alt_chain(n: usize) -> ComputeGraph {
    let mut g = ComputeGraph::new("alt-chain");
    g.reserve_nodes(n);
    let (a, b) = (type_name(0), type_name(1));
    let first = add_from(&mut g, "n0".into(), &a, &[], 1 + n / 2);
    let mut prev = (first, 0);
    for i in 1..n {
        let id = if i % 2 == 1 {
            add_from(&mut g, format!("n{i}"), &b, &[prev], 1)
        } else {
            add_from(&mut g, format!("n{i}"), &a, &[prev, (first, i / 2)], 1)
        };
        prev = (id, 0);
    }
    g
}

fn fan_out(n: usize) -> ComputeGraph {
    let mut g = ComputeGraph::new("fan-out");
    g.reserve_nodes(n);
    let (a, b) = (type_name(0), type_name(1));
    let r = add_from(&mut g, "r".into(), &a, &[], n);
    for i in 0..(n - 1) / 2 {
        add_from(&mut g, format!("s{i}"), &b, &[(r, i)], 1);
    }
    let base = (n - 1) / 2;
    for i in 0..n - 1 - base {
        add_from(&mut g, format!("a{i}"), &a, &[(r, base + i)], 1);
    }
    g
}

fn build(shape: &str, n: usize, rng: &mut Rng) -> ComputeGraph {
    match shape {
        "random" => random_graph(n, rng),
        "alt-chain" => alt_chain(n),
        _ => fan_out(n),
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// CPU seconds used by this process's live threads so far (the sum of
/// `/proc/self/task/*/schedstat`, nanoseconds); 0 where unavailable. Wall time on a shared
/// machine overstates; the pool's threads live as long as the process, so differences are
/// exact.
fn cpu_secs() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += s
                .split_whitespace()
                .next()
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    ns as f64 / 1e9
}

/// One timed place + partition.
struct Run {
    place_s: f64,
    part_s: f64,
    cpu: f64,
    parts: usize,
    pairs: usize,
    refused: usize,
}

impl Run {
    fn total(&self) -> f64 {
        self.place_s + self.part_s
    }
}

/// Makes glibc keep freed memory in the process (no trimming; blocks up to 32 MiB from the
/// heap, not fresh mappings), so each run at a size reuses the memory the previous one freed,
/// as runs at small sizes always do. Without it, runs at 1M nodes get much of their memory
/// fresh from the kernel, which costs about 3 µs per 4 KiB page on this kind of VM (the `1st s`
/// column shows that cost at every size).
fn keep_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_MMAP_THRESHOLD: i32 = -3;
        // SAFETY: mallopt only sets allocator parameters; it is called before any other
        // thread exists.
        unsafe {
            mallopt(M_TRIM_THRESHOLD, i32::MAX);
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
        }
    }
}

/// Runs per size: small sizes take a few milliseconds and vary most, so they get more.
fn reps_for(n: usize) -> usize {
    match n {
        0..=20_000 => 15,
        20_001..=200_000 => 5,
        _ => 3,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keep = args.iter().any(|a| a == "--keep-heap");
    if keep {
        keep_heap();
    }
    let sizes: Vec<usize> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let m = manager(&mut rng);
    let o = CompileOptions::default();
    println!(
        "threads: {}  (rayon; placement decides nodes in parallel); heap: {}",
        rayon::current_num_threads(),
        if keep {
            "kept (--keep-heap: freed memory is reused at every size)"
        } else {
            "allocator defaults (--keep-heap: keep freed memory for reuse)"
        }
    );
    println!(
        "{:<10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>4} {:>13}",
        "shape",
        "nodes",
        "place s",
        "part s",
        "total s",
        "ns/node",
        "cpu s",
        "parts",
        "pairs",
        "refused",
        "mat s",
        "1st s",
        "reps",
        "min-max total s"
    );
    let shapes: Vec<String> = args
        .iter()
        .position(|a| a == "--shapes")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(String::from).collect())
        .unwrap_or_else(|| vec!["random".into(), "alt-chain".into(), "fan-out".into()]);
    // Warm-up (untimed): starts the rayon pool and brings the code in, so the first timed run
    // (the smallest size, the ratio's denominator) is not charged for it.
    for shape in shapes.iter().map(String::as_str) {
        let mut g = build(shape, 10_000, &mut Rng(1));
        place(&mut g, &m, &o).unwrap();
        partition(&g, &m, &o, PartitionMode::Atomic, 0).unwrap();
    }
    for shape in shapes.iter().map(String::as_str) {
        // Each run places and partitions a freshly built copy of the same graph (same seed).
        // A size's first run is shown apart (`1st s`: the process meets that much memory for
        // the first time); of its next `reps`, the run with the median total is shown, with
        // the fastest and slowest. After the first runs, the runs of all sizes are interleaved
        // so that a change in the machine's load falls on every size alike.
        let mut schedule: Vec<(f64, usize, usize)> = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let runs = reps_for(n) + 1;
            for rep in 0..runs {
                schedule.push((rep as f64 / runs as f64, i, rep));
            }
        }
        schedule.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut first = vec![0.0; sizes.len()];
        let mut mat = vec!["-".to_string(); sizes.len()];
        let mut runs: Vec<Vec<Run>> = sizes.iter().map(|_| Vec::new()).collect();
        for &(_, i, rep) in &schedule {
            let n = sizes[i];
            let mut g = build(shape, n, &mut Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64));
            let c0 = cpu_secs();
            let t = Instant::now();
            place(&mut g, &m, &o).unwrap();
            let place_s = secs(t);
            let t = Instant::now();
            let plan = partition(&g, &m, &o, PartitionMode::Atomic, 0).unwrap();
            let part_s = secs(t);
            let cpu = cpu_secs() - c0;
            let st = plan.levels.last().unwrap().stats;
            if rep == 0 {
                first[i] = place_s + part_s;
                // Building every partition graph (copies of all nodes, End/PlaceHolder nodes)
                // is an IR-bound step, timed apart, once.
                if n <= 100_000 {
                    let t = Instant::now();
                    let graphs = plan.materialize(&g).unwrap();
                    mat[i] = format!("{:.3}", secs(t));
                    drop(graphs);
                }
                continue;
            }
            runs[i].push(Run {
                place_s,
                part_s,
                cpu,
                parts: plan.partitions.len(),
                pairs: plan.edges.len(),
                refused: st.refused_path + st.refused_budget,
            });
        }
        let mut per_node = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let runs = &mut runs[i];
            runs.sort_by(|a, b| a.total().total_cmp(&b.total()));
            let r = &runs[runs.len() / 2];
            let total = r.total();
            let ns = total * 1e9 / n as f64;
            per_node.push((n, ns, total, first[i] * 1e9 / n as f64));
            println!(
                "{:<10} {:>9} {:>8.3} {:>8.3} {:>8.3} {:>8.0} {:>8.3} {:>8} {:>8} {:>8} {:>8} {:>8.3} {:>4} {:>6.3}-{:.3}",
                shape,
                n,
                r.place_s,
                r.part_s,
                total,
                ns,
                r.cpu,
                r.parts,
                r.pairs,
                r.refused,
                mat[i],
                first[i],
                runs.len(),
                runs[0].total(),
                runs[runs.len() - 1].total()
            );
        }
        if let (Some(lo), Some(hi)) = (per_node.first(), per_node.last()) {
            println!(
                "{:<10} per-node time at {} / at {}: {:.2} (bar ≤ 1.5; first runs: {:.2}); total at {}: {:.3} s (bar < 2 s at 1M)",
                shape,
                hi.0,
                lo.0,
                hi.1 / lo.1,
                hi.3 / lo.3,
                hi.0,
                hi.2
            );
        }
    }

    if args.iter().any(|a| a == "--no-reference") {
        return;
    }
    // GE's HasSecondPath merge against rge's on the same cluster keys (the merge step alone).
    println!();
    println!(
        "{:<10} {:>7} {:>12} {:>10} {:>12} {:>10}",
        "shape", "nodes", "rge merge s", "clusters", "GE merge s", "clusters"
    );
    for shape in ["alt-chain", "fan-out", "random"] {
        for n in [2_000usize, 4_000, 8_000, 16_000, 32_000] {
            let mut g = build(shape, n, &mut rng);
            place(&mut g, &m, &o).unwrap();
            let dense = dense_graph(&g, g.root()).unwrap();
            let mut names = std::collections::HashMap::new();
            let keys: Vec<u32> = dense
                .ids
                .iter()
                .map(|&id| {
                    let e = g.op(id).unwrap().engine_name().to_string();
                    let k = names.len() as u32;
                    *names.entry(e).or_insert(k)
                })
                .collect();
            let t = Instant::now();
            let (_, ours) = merge_clusters(&dense, &keys, o.merge_search_budget);
            let t_ours = secs(t);
            let t = Instant::now();
            let (_, ge) = ge_merge_clusters(&dense, &keys);
            let t_ge = secs(t);
            println!(
                "{:<10} {:>7} {:>12.4} {:>10} {:>12.4} {:>10}",
                shape, n, t_ours, ours.clusters, t_ge, ge.clusters
            );
        }
    }
}
