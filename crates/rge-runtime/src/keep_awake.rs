//! Keeping a session's pool workers awake for the length of one run.
//!
//! Rayon puts an idle worker to sleep after a few dozen yields (tens of microseconds), and waking
//! it takes an inter-processor interrupt: 10–50 µs on the VMs measured here, paid on the critical
//! path of every parallel op that follows a serial stretch (BERT's 12-head QKᵀ at 2 threads ran
//! its step in 0.161 ms against 0.104 for half the 1-thread work). onnxruntime's pool spins
//! between parallel sections instead; this does the same on top of rayon. While a run is in
//! flight, every worker but the one running the program runs a spinner that executes the pool's
//! pending jobs (`rayon::yield_now`) and otherwise spins.
//!
//! [`install`] is the entry point. The spinners start from the caller, before it hands the
//! program to the pool, so the workers
//! wake together rather than one after the other. A spinner is a job, so it may start nested
//! under another job's wait on its thread, holding that job until the spinner returns. Three
//! rules keep that from stalling a run:
//! - the spinner returns as soon as it finds itself on the thread that runs the program (that
//!   thread may pick up its own run's spinner while it waits in a join, or run the program from
//!   inside its spinner's poll, which is harmless: the spinner ends with the run);
//! - it returns when the run ends ([`KeepAwake`] is dropped, also on error or panic);
//! - it returns after [`IDLE_LIMIT`] without finding a job, so runs that share the pool from
//!   several caller threads, whose spinners may nest under each other's jobs, lose at most that
//!   long, and a run with a long serial stretch lets its workers sleep as rayon would.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a spinner spins without finding work before it lets its worker sleep.
const IDLE_LIMIT: Duration = Duration::from_micros(200);

/// How many empty polls between two reads of the clock.
const POLLS_PER_CLOCK: u32 = 64;

#[derive(Debug)]
struct RunState {
    done: AtomicBool,
    /// The pool index of the worker running the program (`usize::MAX` until it starts).
    owner: AtomicUsize,
}

/// The spinners of one run; dropping it ends them.
#[derive(Debug)]
struct KeepAwake {
    state: Arc<RunState>,
}

/// `pool.install(run)` with the pool's other workers kept awake until `run` returns.
pub(crate) fn install<R: Send>(pool: &rayon::ThreadPool, run: impl FnOnce() -> R + Send) -> R {
    let awake = KeepAwake::start(pool);
    pool.install(|| {
        if let Some(a) = &awake {
            a.enter();
        }
        run()
    })
}

impl KeepAwake {
    /// Starts a spinner on every worker of `pool` (none for a pool of one thread), before the
    /// run is handed to the pool.
    fn start(pool: &rayon::ThreadPool) -> Option<Self> {
        if pool.current_num_threads() < 2 {
            return None;
        }
        let state = Arc::new(RunState {
            done: AtomicBool::new(false),
            owner: AtomicUsize::new(usize::MAX),
        });
        let shared = Arc::clone(&state);
        pool.spawn_broadcast(move |ctx| spin(&shared, ctx.index()));
        Some(KeepAwake { state })
    }

    /// Records the current worker as the one running the program: its spinner returns.
    fn enter(&self) {
        if let Some(i) = rayon::current_thread_index() {
            self.state.owner.store(i, Ordering::Release);
        }
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.state.done.store(true, Ordering::Release);
    }
}

/// One worker's spinner: runs pending jobs until the run ends or nothing comes for a while.
fn spin(state: &RunState, index: usize) {
    let mut idle_since = Instant::now();
    let mut polls = 0u32;
    while !state.done.load(Ordering::Acquire) && state.owner.load(Ordering::Acquire) != index {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => {
                polls = 0;
                idle_since = Instant::now();
            }
            _ => {
                std::hint::spin_loop();
                polls += 1;
                if polls == POLLS_PER_CLOCK {
                    polls = 0;
                    if idle_since.elapsed() >= IDLE_LIMIT {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn nothing_on_one_thread() {
        assert!(KeepAwake::start(&pool(1)).is_none());
    }

    #[test]
    fn nested_parallel_work_finishes_under_spinners() {
        // Joins nested inside joins while spinners run: the spinner picked up by a thread
        // waiting in a join must not hold that join (a deadlock would hang this test).
        let p = pool(4);
        for _ in 0..50 {
            let sum = install(&p, || {
                use rayon::prelude::*;
                (0..64u64)
                    .into_par_iter()
                    .map(|i| (0..i).into_par_iter().sum::<u64>())
                    .sum::<u64>()
            });
            assert_eq!(
                sum,
                (0..64u64).map(|i| i * i.saturating_sub(1) / 2).sum::<u64>()
            );
        }
    }

    #[test]
    fn runs_from_several_callers_share_the_pool() {
        let p = Arc::new(pool(2));
        let finished = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let (p, finished) = (Arc::clone(&p), Arc::clone(&finished));
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        install(&p, || {
                            rayon::join(|| std::hint::black_box(1), || std::hint::black_box(2))
                        });
                    }
                    finished.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        assert_eq!(finished.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn spinners_end_with_the_run() {
        let p = pool(2);
        let state = {
            let awake = KeepAwake::start(&p).expect("spinners on a pool of 2");
            p.install(|| awake.enter());
            Arc::clone(&awake.state)
        };
        assert!(state.done.load(Ordering::Acquire));
        // The spinner's clone of the state is dropped once it returns.
        let t0 = Instant::now();
        while Arc::strong_count(&state) > 1 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "a spinner outlived its run"
            );
            std::thread::yield_now();
        }
    }
}
