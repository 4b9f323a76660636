//! Running a kernel's work as a few parts over the pool, the calling thread waiting awake.
//!
//! A rayon join leaves the thread that waits for the other half spinning for a few
//! microseconds, then asleep, and waking it costs an inter-processor interrupt (10–50 µs on
//! the VMs measured here) on the critical path. The worker that steals a part starts it a few
//! microseconds late, so the caller, done with its own part first, waited in nearly every
//! parallel convolution: ResNet-50 at 2 threads put its calling thread to sleep about 17 times
//! a run. Here the caller runs part 0, then runs pending jobs or spins until the other parts
//! are done (the workers wait awake in their run's spinner, `rge-runtime`'s `keep_awake`).
//! Kernels that split their work in a few parts (the dense engine's GEMM and convolutions,
//! attention's heads) use it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts a spawned part as done when dropped, so a part that panics still ends the wait (the
/// scope then propagates the panic).
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Runs `part(t)` for every `t < parts`: part 0 on this thread, the others spawned on the
/// current rayon pool; returns when all are done, having waited without sleeping. Give the
/// larger parts the lower indices: part 0 runs first, and on the caller.
pub fn for_each_part(parts: usize, part: impl Fn(usize) + Sync) {
    if parts <= 1 {
        if parts == 1 {
            part(0);
        }
        return;
    }
    let left = AtomicUsize::new(parts - 1);
    rayon::scope(|s| {
        for t in 1..parts {
            let (part, left) = (&part, &left);
            s.spawn(move |_| {
                let _done = Done(left);
                part(t);
            });
        }
        part(0);
        // A part nobody stole is run here by `yield_now`.
        while left.load(Ordering::Acquire) > 0 {
            if !matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
                std::hint::spin_loop();
            }
        }
    });
}

/// [`for_each_part`] over `data` cut into chunks of `chunk` elements (the last shorter): part
/// `t` gets chunk `t`.
pub fn for_each_chunk_mut<T: Send>(
    data: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    // One uncontended lock per chunk, taken once: the chunks are disjoint.
    let chunks: Vec<Mutex<&mut [T]>> = data.chunks_mut(chunk.max(1)).map(Mutex::new).collect();
    for_each_part(chunks.len(), |t| {
        if let Ok(mut c) = chunks[t].lock() {
            f(t, &mut c);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_part_runs_once() {
        for threads in [1, 2, 3] {
            for parts in 0..7 {
                let seen: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
                pool(threads).install(|| {
                    for_each_part(parts, |t| {
                        seen[t].fetch_add(1, Ordering::Relaxed);
                    })
                });
                assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn every_chunk_is_handed_out_once_with_its_index() {
        let mut v: Vec<usize> = vec![0; 10];
        pool(2).install(|| {
            for_each_chunk_mut(&mut v, 4, |t, c| c.iter_mut().for_each(|x| *x += t + 1))
        });
        assert_eq!(v, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn nested_parts_finish() {
        let total = AtomicUsize::new(0);
        pool(2).install(|| {
            for_each_part(3, |_| {
                for_each_part(4, |t| {
                    total.fetch_add(t, Ordering::Relaxed);
                })
            })
        });
        assert_eq!(total.load(Ordering::Relaxed), 3 * 6);
    }

    #[test]
    fn a_panicking_part_ends_the_wait_and_propagates() {
        let r = std::panic::catch_unwind(|| {
            pool(2).install(|| {
                for_each_part(2, |t| {
                    if t == 1 {
                        panic!("part 1");
                    }
                })
            })
        });
        assert!(r.is_err());
    }
}
