//! Assembling a lowered graph into a [`Program`]: readers and lifetimes, buffers (views,
//! PhonyConcat regions, in-place outputs), the memory plan, storage of every slot, and the step
//! dependencies (data, control, memory reuse) with each step's critical path.

use std::sync::Mutex;

use hashbrown::HashMap;

use rge_ir::{ComputeGraph, GraphId};

use crate::error::{RuntimeError, RuntimeResult};
use crate::lower::Lowering;
use crate::plan::{self, BufferReq, MemoryPlan};
use crate::program::{Program, Storage};

/// Plans memory and gathers dependencies.
pub(crate) fn finish(
    cx: Lowering<'_>,
    g: GraphId,
    graph: &ComputeGraph,
    mut deps: Vec<(u32, u32)>,
) -> RuntimeResult<Program> {
    let Lowering {
        mut slots,
        root_of,
        mut planned,
        rel,
        concats,
        steps,
        consts,
        inputs,
        outputs,
        views,
        env,
        spaces,
        flat,
        ..
    } = cx;
    let ns = slots.len();
    let nsteps = steps.len();
    // Readers and last use of every root slot.
    let readers = Readers::new(&steps, &root_of, ns);
    let mut last: Vec<u32> = vec![0; ns];
    for (si, st) in steps.iter().enumerate() {
        for &s in st.inputs.iter().flatten() {
            let r = root_of[s as usize] as usize;
            last[r] = last[r].max(si as u32);
            if let Some(p) = slots[r].producer {
                deps.push((p, si as u32));
            }
        }
    }
    for (i, s) in slots.iter().enumerate() {
        if let Some(p) = s.producer {
            last[i] = last[i].max(p);
        }
    }
    own_large_outputs(
        &mut planned,
        &slots,
        &root_of,
        &outputs,
        &concats,
        &flat,
        &readers,
    );
    for s in outputs.iter().filter_map(|o| o.1) {
        last[root_of[s as usize] as usize] = u32::MAX;
    }
    let flat_defs =
        crate::flat::loop_lifetimes(&flat, &steps, &slots, &root_of, &planned, &mut last);
    let mut extra_writers: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(s, w) in &flat.extra_writes {
        extra_writers
            .entry(root_of[s as usize])
            .or_default()
            .push(w);
    }
    // Buffers: one per planned root, merged for in-place outputs.
    let mut buf_of: Vec<u32> = (0..ns as u32).collect();
    let mut buf_rel: Vec<usize> = vec![0; ns];
    let mut buf_last = last.clone();
    // PhonyConcat: each input is a region of the output's buffer.
    for (out, parts) in &concats {
        for &(r, at) in parts {
            if buf_of[r as usize] != r {
                return Err(RuntimeError::Other(format!(
                    "`{}` feeds two PhonyConcat nodes: it cannot live in both",
                    slots[r as usize].name
                )));
            }
            buf_of[r as usize] = *out;
            buf_rel[r as usize] = at;
            buf_last[*out as usize] = buf_last[*out as usize].max(last[r as usize]);
        }
    }
    let mut in_place = 0usize;
    // (buffer, step) of every in-place write, in step order.
    let mut in_place_writers: Vec<(u32, u32)> = Vec::new();
    for (si, st) in steps.iter().enumerate() {
        let Some((i, o)) = st.in_place else {
            continue;
        };
        let (Some(Some(src)), Some(&out)) = (st.inputs.get(i), st.outputs.get(o)) else {
            continue;
        };
        let r = root_of[*src as usize] as usize;
        let b = buf_of[r] as usize;
        let out = out as usize;
        let src = *src as usize;
        if !planned[r]
            || !planned[out]
            || buf_last[b] != si as u32
            || slots[src].bytes != slots[out].bytes
            || slots[src].dtype != slots[out].dtype
            || slots[r].space != slots[out].space
        {
            continue;
        }
        buf_of[out] = b as u32;
        buf_rel[out] = buf_rel[r] + rel[src];
        buf_last[b] = buf_last[b].max(last[out]);
        in_place_writers.push((b as u32, si as u32));
        in_place += 1;
    }
    // Each buffer's member roots: (buffer, root) pairs sorted, one run per buffer.
    let mut pairs: Vec<(u32, u32)> = (0..ns)
        .filter(|&r| planned[r] && root_of[r] as usize == r)
        .map(|r| (buf_of[r], r as u32))
        .collect();
    pairs.sort_unstable();
    let mut groups: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    for (i, &(b, _)) in pairs.iter().enumerate() {
        match groups.last_mut() {
            Some((last, range)) if *last == b => range.end = i + 1,
            _ => groups.push((b, i..i + 1)),
        }
    }
    let req_of = |(b, range): &(u32, std::ops::Range<usize>)| -> BufferReq {
        let m = || pairs[range.clone()].iter().map(|&(_, s)| s);
        let mut writers: Vec<u32> = m()
            .filter_map(|s| slots[s as usize].producer)
            .chain(m().flat_map(|s| extra_writers.get(&s).into_iter().flatten().copied()))
            .collect();
        writers.sort_unstable();
        writers.dedup();
        // A value written inside a loop and alive outside it lives from the loop's head.
        let def = m()
            .filter_map(|s| flat_defs.get(&s).copied())
            .chain(writers.first().copied())
            .min()
            .unwrap_or(0);
        let mut rd: Vec<u32> = m()
            .flat_map(|s| readers.of(s as usize).iter().copied())
            .collect();
        rd.sort_unstable();
        rd.dedup();
        BufferReq {
            size: m()
                .map(|s| buf_rel[s as usize] + slots[s as usize].bytes)
                .max()
                .unwrap_or(0),
            def,
            last: buf_last[*b as usize],
            writers,
            readers: rd,
        }
    };
    let space_groups = |space: u8| -> Vec<&(u32, std::ops::Range<usize>)> {
        groups
            .iter()
            .filter(|(b, _)| slots[*b as usize].space == space)
            .collect()
    };
    // Each memory space has its own arena plan; the host's is the program's main plan.
    let host_groups = space_groups(0);
    let bufs: Vec<u32> = host_groups.iter().map(|(b, _)| *b).collect();
    let reqs: Vec<BufferReq> = host_groups.iter().map(|g| req_of(g)).collect();
    // In-place writers wait for the other readers of the buffer they write over. Readers before
    // the buffer's previous in-place writer already precede that writer, which precedes this
    // one (this one reads what it or a later step made): one window of readers per writer.
    let mut prev_writer: HashMap<u32, u32> = HashMap::new();
    for &(b, w) in &in_place_writers {
        let Ok(k) = bufs.binary_search(&b) else {
            return Err(RuntimeError::Other(format!(
                "in-place buffer {b} has no memory request"
            )));
        };
        let r = &reqs[k];
        let from = prev_writer
            .insert(b, w)
            .map_or(0, |p| r.readers.partition_point(|&x| x <= p));
        let to = r.readers.partition_point(|&x| x < w);
        deps.extend(r.readers[from..to.max(from)].iter().map(|&x| (x, w)));
    }
    let (offsets, arena) = match env.saved_offsets.filter(|_| g == graph.root()) {
        Some(saved) => {
            let arena = plan::check_offsets(&reqs, saved).map_err(|e| {
                RuntimeError::Other(format!("the saved memory plan does not fit: {e}"))
            })?;
            (saved.to_vec(), arena)
        }
        None => plan::place(&reqs),
    };
    let bound = plan::lower_bound(&reqs, nsteps);
    deps.extend(plan::memory_deps(&reqs, &offsets));
    let mut buf_offset: Vec<usize> = vec![0; ns];
    for (k, b) in bufs.iter().enumerate() {
        buf_offset[*b as usize] = offsets[k];
    }
    let mut space_plans = Vec::with_capacity(spaces.len());
    for (k, space) in spaces.iter().enumerate() {
        let idx = k as u8 + 1;
        let sgroups = space_groups(idx);
        let sbufs: Vec<u32> = sgroups.iter().map(|(b, _)| *b).collect();
        let sreqs: Vec<BufferReq> = sgroups.iter().map(|g| req_of(g)).collect();
        let (soffsets, sarena) = plan::place(&sreqs);
        deps.extend(plan::memory_deps(&sreqs, &soffsets));
        for (j, b) in sbufs.iter().enumerate() {
            buf_offset[*b as usize] = soffsets[j];
        }
        let allocator = env.engines.allocator(space).ok_or_else(|| {
            RuntimeError::Other(format!(
                "memory space `{space}` has no allocator in the engine set"
            ))
        })?;
        space_plans.push(crate::memory::SpacePlan {
            space: space.clone(),
            allocator,
            arena_bytes: sarena,
            lower_bound: plan::lower_bound(&sreqs, nsteps),
        });
    }
    // Storage of every slot.
    let mut dynamic_readers = Vec::new();
    let mut is_output = vec![false; ns];
    for s in outputs.iter().filter_map(|o| o.1) {
        is_output[root_of[s as usize] as usize] = true;
    }
    let mut read_count = vec![0u32; ns];
    for st in &steps {
        for &s in st.inputs.iter().flatten() {
            read_count[s as usize] += 1;
        }
    }
    for i in 0..ns {
        let r = root_of[i] as usize;
        if planned[r] {
            let off = buf_offset[buf_of[r] as usize] + buf_rel[r] + rel[i];
            let space = slots[buf_of[r] as usize].space;
            slots[i].space = space;
            slots[i].storage = Storage::Arena { space, offset: off };
        } else if matches!(slots[i].storage, Storage::Dynamic(_)) && r == i {
            let d = dynamic_readers.len() as u32;
            dynamic_readers.push(read_count[i] + u32::from(is_output[i]));
            slots[i].storage = Storage::Dynamic(d);
        }
    }
    // Dependency graph: a flat region is one unit, scheduled through its entry.
    let unit = crate::flat::units(&flat, nsteps);
    for d in deps.iter_mut() {
        *d = (unit[d.0 as usize], unit[d.1 as usize]);
    }
    deps.retain(|(a, b)| a != b);
    {
        use rayon::slice::ParallelSliceMut as _;
        deps.par_sort_unstable();
    }
    deps.dedup();
    let mut pred_count = vec![0u32; nsteps];
    let mut succ_start = vec![0u32; nsteps + 1];
    for &(a, b) in &deps {
        succ_start[a as usize + 1] += 1;
        pred_count[b as usize] += 1;
    }
    for i in 0..nsteps {
        succ_start[i + 1] += succ_start[i];
    }
    let succ: Vec<u32> = deps.iter().map(|d| d.1).collect();
    let mut critical = vec![1u32; nsteps];
    for i in (0..nsteps).rev() {
        let (a, b) = (succ_start[i] as usize, succ_start[i + 1] as usize);
        critical[i] = 1 + succ[a..b]
            .iter()
            .map(|&s| critical[s as usize])
            .max()
            .unwrap_or(0);
    }
    let total: usize = reqs
        .iter()
        .map(|r| r.size.div_ceil(plan::ALIGN) * plan::ALIGN)
        .sum();
    let mem = MemoryPlan {
        arena_bytes: arena,
        lower_bound: bound,
        total_bytes: total,
        buffers: reqs.len(),
        in_place,
        views,
        offsets,
    };
    Ok(Program {
        name: graph.graph_name(g).unwrap_or("").to_string(),
        dynamic_count: dynamic_readers.len(),
        dynamic_readers,
        slots,
        steps,
        consts,
        inputs,
        outputs,
        succ_start,
        succ,
        pred_count,
        critical,
        unit,
        plan: mem,
        spaces: space_plans,
        arenas: Mutex::new(Vec::new()),
        allocator: Default::default(),
    })
}

/// Graph outputs of at least this many bytes get a buffer of their own, written by their
/// producer and handed to the caller, instead of a place in the arena that is copied out after
/// the run: the copy of a 4.8 MiB output was 40% of a single-op Conv's run.
const OWN_OUTPUT_BYTES: usize = 64 << 10;

/// Takes large graph outputs out of the memory plan (they become run-time values, moved out of
/// the frame at the end of the run). Only a plain value qualifies: the root of no view, in host
/// memory, no part of a PhonyConcat, and made and read outside flattened control flow (whose
/// values must be planned).
fn own_large_outputs(
    planned: &mut [bool],
    slots: &[crate::program::Slot],
    root_of: &[u32],
    outputs: &[(String, Option<u32>)],
    concats: &[(u32, Vec<(u32, usize)>)],
    flat: &crate::flat::FlatState,
    readers: &Readers,
) {
    let mut members = vec![0u32; slots.len()];
    for &r in root_of {
        members[r as usize] += 1;
    }
    let in_region = |step: u32| flat.regions.iter().any(|&(a, b)| step >= a && step < b);
    for s in outputs.iter().filter_map(|o| o.1) {
        let r = s as usize;
        let slot = &slots[r];
        let plain = root_of[r] == s
            && planned[r]
            && members[r] == 1
            && slot.space == 0
            && !slot.view
            && slot.bytes >= OWN_OUTPUT_BYTES
            && slot.producer.is_some_and(|p| !in_region(p))
            && !readers.of(r).iter().any(|&x| in_region(x))
            && !flat.extra_writes.iter().any(|&(w, _)| w == s)
            && !concats
                .iter()
                .any(|(out, parts)| *out == s || parts.iter().any(|&(p, _)| p == s));
        if plain {
            planned[r] = false;
        }
    }
}

/// The steps reading each root slot, ascending and without repeats, in one flat list: a list
/// per slot would cost a million allocations on a million-node graph.
pub(crate) struct Readers {
    /// Slot `r`'s readers are `list[start[r]..start[r + 1]]`.
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Readers {
    fn new(steps: &[crate::program::Step], root_of: &[u32], slots: usize) -> Self {
        // Two passes over the same reads: count, then fill. `seen` drops a step's second read
        // of a slot.
        let reads = |f: &mut dyn FnMut(usize, u32)| {
            let mut seen = vec![u32::MAX; slots];
            for (si, st) in steps.iter().enumerate() {
                for &s in st.inputs.iter().flatten() {
                    let r = root_of[s as usize] as usize;
                    if seen[r] != si as u32 {
                        seen[r] = si as u32;
                        f(r, si as u32);
                    }
                }
            }
        };
        let mut start = vec![0u32; slots + 1];
        reads(&mut |r, _| start[r + 1] += 1);
        for i in 0..slots {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[slots] as usize];
        reads(&mut |r, si| {
            list[fill[r] as usize] = si;
            fill[r] += 1;
        });
        Readers { start, list }
    }

    /// The steps reading root slot `r`.
    fn of(&self, r: usize) -> &[u32] {
        &self.list[self.start[r] as usize..self.start[r + 1] as usize]
    }
}
