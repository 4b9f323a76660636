//! The ready-queue executors: topological (FIFO), priority (critical path first) and parallel
//! (a worker pool).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use crate::error::{RuntimeError, RuntimeResult};
use crate::frame::Frame;

fn check_all_ran(ran: usize, total: usize) -> RuntimeResult<()> {
    if ran != total {
        return Err(RuntimeError::Other(format!(
            "{} of {total} steps never became ready (a dependency cycle)",
            total - ran
        )));
    }
    Ok(())
}

/// One thread, ready steps in FIFO order.
pub(crate) fn topological(frame: &Frame<'_>) -> RuntimeResult<()> {
    let prog = frame.program();
    let mut pending = prog.pred_count.clone();
    let mut ready: VecDeque<u32> = (0..prog.steps.len() as u32)
        .filter(|&i| pending[i as usize] == 0)
        .collect();
    let mut ran = 0;
    while let Some(i) = ready.pop_front() {
        frame.run_unit(i as usize, 0)?;
        ran += 1;
        for &s in prog.successors(i as usize) {
            pending[s as usize] -= 1;
            if pending[s as usize] == 0 {
                ready.push_back(s);
            }
        }
    }
    check_all_ran(ran, prog.steps.len())
}

/// One thread, the ready step with the longest path to the end first.
pub(crate) fn priority(frame: &Frame<'_>) -> RuntimeResult<()> {
    let prog = frame.program();
    let mut pending = prog.pred_count.clone();
    let mut ready: BinaryHeap<(u32, Reverse<u32>)> = (0..prog.steps.len() as u32)
        .filter(|&i| pending[i as usize] == 0)
        .map(|i| (prog.critical[i as usize], Reverse(i)))
        .collect();
    let mut ran = 0;
    while let Some((_, Reverse(i))) = ready.pop() {
        frame.run_unit(i as usize, 0)?;
        ran += 1;
        for &s in prog.successors(i as usize) {
            pending[s as usize] -= 1;
            if pending[s as usize] == 0 {
                ready.push((prog.critical[s as usize], Reverse(s)));
            }
        }
    }
    check_all_ran(ran, prog.steps.len())
}

struct Shared<'f, 'a> {
    frame: &'f Frame<'a>,
    pending: Vec<AtomicU32>,
    abort: AtomicBool,
    error: Mutex<Option<RuntimeError>>,
    ran: AtomicU32,
}

impl Shared<'_, '_> {
    fn fail(&self, e: RuntimeError) {
        self.abort.store(true, Ordering::Release);
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }

    /// Runs step `i`, then its successors that became ready: one inline, the rest spawned.
    fn run<'s>(&'s self, scope: &rayon::Scope<'s>, mut i: u32) {
        loop {
            if self.abort.load(Ordering::Acquire) {
                return;
            }
            let lane = rayon::current_thread_index().unwrap_or(0);
            if let Err(e) = self.frame.run_unit(i as usize, lane) {
                self.fail(e);
                return;
            }
            self.ran.fetch_add(1, Ordering::Relaxed);
            let mut next = None;
            for &s in self.frame.program().successors(i as usize) {
                // AcqRel: the step's writes happen before the successor's reads.
                if self.pending[s as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                    if next.is_none() {
                        next = Some(s);
                    } else {
                        scope.spawn(move |sc| self.run(sc, s));
                    }
                }
            }
            match next {
                Some(s) => i = s,
                None => return,
            }
        }
    }
}

/// Ready steps spread over a worker pool.
pub(crate) fn parallel(frame: &Frame<'_>, pool: Option<&rayon::ThreadPool>) -> RuntimeResult<()> {
    let prog = frame.program();
    let shared = Shared {
        frame,
        pending: prog.pred_count.iter().map(|&c| AtomicU32::new(c)).collect(),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        ran: AtomicU32::new(0),
    };
    let roots: Vec<u32> = (0..prog.steps.len() as u32)
        .filter(|&i| prog.pred_count[i as usize] == 0)
        .collect();
    let go = || {
        rayon::scope(|sc| {
            for &r in &roots {
                let sh = &shared;
                sc.spawn(move |sc| sh.run(sc, r));
            }
        })
    };
    match pool {
        Some(p) => p.install(go),
        None => go(),
    }
    if let Some(e) = shared.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    check_all_ran(
        shared.ran.load(Ordering::Acquire) as usize,
        prog.steps.len(),
    )
}
