//! The stream executor (the seed's StreamExecutor): one executor thread per stream, each running
//! its stream's steps in program order; a step whose dependencies lie on another stream waits
//! for them (the events of stream assignment are among those dependencies). Steps without a
//! stream (skipped engines) run on stream 0's thread.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

use crate::error::{RuntimeError, RuntimeResult};
use crate::frame::Frame;

struct Lanes<'f, 'a> {
    frame: &'f Frame<'a>,
    pending: Vec<AtomicU32>,
    abort: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
    error: Mutex<Option<RuntimeError>>,
    /// False with one stream: nobody waits, so nobody needs waking.
    notify: bool,
}

impl Lanes<'_, '_> {
    fn wait_ready(&self, i: usize) -> bool {
        if self.pending[i].load(Ordering::Acquire) == 0 {
            return true;
        }
        let Ok(mut g) = self.lock.lock() else {
            return false;
        };
        while self.pending[i].load(Ordering::Acquire) != 0 {
            if self.abort.load(Ordering::Acquire) {
                return false;
            }
            g = match self.cv.wait(g) {
                Ok(g) => g,
                Err(_) => return false,
            };
        }
        true
    }

    fn lane(&self, steps: &[u32], lane: usize) {
        for &i in steps {
            // One stream runs in program order: its dependencies already ran.
            if self.abort.load(Ordering::Acquire) || (self.notify && !self.wait_ready(i as usize)) {
                return;
            }
            if let Err(e) = self.frame.run_unit(i as usize, lane) {
                if let Ok(mut slot) = self.error.lock() {
                    slot.get_or_insert(e);
                }
                self.abort.store(true, Ordering::Release);
                let _g = self.lock.lock();
                self.cv.notify_all();
                return;
            }
            if !self.notify {
                continue;
            }
            let mut woke = false;
            for &s in self.frame.program().successors(i as usize) {
                if self.pending[s as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                    woke = true;
                }
            }
            if woke {
                let _g = self.lock.lock();
                self.cv.notify_all();
            }
        }
    }
}

/// Runs the frame's program with one thread per stream.
pub(crate) fn streams(frame: &Frame<'_>) -> RuntimeResult<()> {
    let prog = frame.program();
    let n = prog.stream_count();
    let mut lanes: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, s) in prog.steps.iter().enumerate() {
        lanes[s.stream.map_or(0, |x| x as usize)].push(i as u32);
    }
    let sync = Lanes {
        frame,
        pending: prog.pred_count.iter().map(|&c| AtomicU32::new(c)).collect(),
        abort: AtomicBool::new(false),
        lock: Mutex::new(()),
        cv: Condvar::new(),
        error: Mutex::new(None),
        notify: n > 1,
    };
    if n == 1 {
        sync.lane(&lanes[0], 0);
    } else {
        std::thread::scope(|sc| {
            for (k, l) in lanes.iter().enumerate() {
                let s = &sync;
                sc.spawn(move || s.lane(l, k));
            }
        });
    }
    if let Some(e) = sync.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    Ok(())
}
