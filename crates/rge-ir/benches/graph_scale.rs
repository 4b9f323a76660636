//! Scale benchmark for the IR (issue: 1M nodes, ~2M links). Prints ns per node for building,
//! each sort mode, remove/re-add and copy, and heap bytes per node. Run with
//! `cargo bench -p rge-ir --bench graph_scale` (`-- --nodes N` to change the size).
//! Not a test: figures are printed, never asserted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rge_ir::{
    ComputeGraph, DataType, Format, NodeId, OpDesc, Shape, SortMode, SortOptions, TensorDesc,
};

/// Counts live heap bytes so that bytes per node is measured, not estimated.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged and only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` was allocated by `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` was allocated by `System` with layout `l`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Small deterministic generator (xorshift*), so runs are comparable.
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

fn desc() -> TensorDesc {
    TensorDesc::new(Shape::new([-1, 64]), DataType::Float, Format::ND)
}

fn op(name: String) -> OpDesc {
    OpDesc::new(name, "Add")
        .with_input("x1", desc())
        .with_input("x2", desc())
        .with_output("y", desc())
}

/// A random DAG: node i takes its two inputs from random earlier nodes (the first two nodes
/// have none), so links ≈ 2 × nodes.
fn build(n: usize, rng: &mut Rng) -> (ComputeGraph, Vec<NodeId>) {
    let mut g = ComputeGraph::new("bench");
    g.reserve_nodes(n);
    let root = g.root();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = g.add_node(root, op(format!("n{i}"))).unwrap();
        if i >= 2 {
            for k in 0..2 {
                let src = ids[rng.below(i)];
                g.add_edge(src, 0, id, k).unwrap();
            }
        }
        ids.push(id);
    }
    (g, ids)
}

fn ns_per(t: Instant, n: usize) -> f64 {
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .iter()
        .position(|a| a == "--nodes")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let (mut g, ids) = build(n, &mut rng);
    let build_ns = ns_per(t, n);
    let bytes =
        LIVE.load(Ordering::Relaxed) - before - ids.capacity() * std::mem::size_of::<NodeId>();
    let links: usize = g
        .nodes_of(g.root())
        .map(|x| g.node(x).unwrap().in_link_count())
        .sum();
    println!("graph: {n} nodes, {links} links (2 inputs, 1 output per node)");
    println!("build            {build_ns:8.1} ns/node");
    println!(
        "memory           {:8.1} bytes/node (bar: < 600)",
        bytes as f64 / n as f64
    );

    for mode in [
        SortMode::Bfs,
        SortMode::Dfs,
        SortMode::Rdfs,
        SortMode::StableRdfs,
    ] {
        // Start each sort from a shuffled order so that no mode gets a sorted input for free.
        let mut order: Vec<NodeId> = g.nodes_of(g.root()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        g.set_node_order(g.root(), &order).unwrap();
        let opts = SortOptions {
            mode,
            ..Default::default()
        };
        let t = Instant::now();
        g.topological_sort(&opts).unwrap();
        let el = t.elapsed();
        println!(
            "sort {:<11} {:8.1} ns/node  {:6.3} s total (bar: < 0.5 s)",
            format!("{mode:?}"),
            el.as_nanos() as f64 / n as f64,
            el.as_secs_f64()
        );
    }

    let k = (n / 10).min(100_000);
    let t = Instant::now();
    let mut live = ids.clone();
    for _ in 0..k {
        let i = rng.below(live.len());
        let victim = live.swap_remove(i);
        g.remove_node(victim).unwrap();
    }
    let remove_ns = ns_per(t, k);
    let t = Instant::now();
    let root = g.root();
    for i in 0..k {
        let id = g.add_node(root, op(format!("r{i}"))).unwrap();
        for port in 0..2 {
            let src = live[rng.below(live.len())];
            g.add_edge(src, 0, id, port).unwrap();
        }
        live.push(id);
    }
    let readd_ns = ns_per(t, k);
    println!("remove {k:>7}   {remove_ns:8.1} ns/node");
    println!("re-add {k:>7}   {readd_ns:8.1} ns/node");

    let t = Instant::now();
    let copy = g.clone();
    println!("copy             {:8.1} ns/node", ns_per(t, n));
    assert_eq!(copy.total_node_count(), g.total_node_count());
}
