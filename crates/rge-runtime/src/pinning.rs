//! Pinning a session's pool workers to CPUs.
//!
//! Linux wakes a sleeping thread on the CPU of the thread that wakes it when it judges the cache
//! warm there (`wake_affine`), so a pool worker woken by the thread running the program can
//! land on that thread's CPU and share it until the load balancer moves one of them, tens of
//! milliseconds later on the VMs measured here. A 2-thread run in such a phase takes as long as
//! a 1-thread run, or longer: of 24 processes of `rge bench` on a 64→256 1×1 Conv at 2 threads,
//! 9 ran at 0.57–0.67 ms (1 thread: 0.68) and the rest at 0.31–0.34; with the workers pinned,
//! none did (0.31–0.41). OpenVINO pins its workers by default for the same reason.
//!
//! Worker `i` is pinned to the `i`-th CPU the process may run on (its affinity mask, so
//! `taskset` and cgroup cpusets are respected). [`ThreadPinning::Auto`] pins only a pool with one
//! worker per allowed CPU whose runs keep every worker busy (kernels split over the pool's
//! threads, or a parallel executor): such a pool owns the machine, so pinning costs nothing.
//! A smaller pool pinned to the first CPUs would pile every process's workers onto them, and
//! pinning a pool that runs on one thread would tie every such process to the first CPU.

use std::fmt;
use std::str::FromStr;

/// Whether a session pins its pool's workers to CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThreadPinning {
    /// Pin when the pool has at least two workers, exactly one per CPU the process may run on,
    /// and its runs use them all.
    #[default]
    Auto,
    /// Pin every worker of a pool of two or more (worker `i` to the `i`-th allowed CPU, wrapping
    /// when there are more workers than CPUs).
    On,
    /// Never pin: the OS places the workers.
    Off,
}

impl ThreadPinning {
    /// The CPUs to pin the workers of a pool of `threads` to (worker `i` to entry `i`), or
    /// `None` to leave them unpinned; `busy`: the pool's runs keep all its workers busy.
    pub(crate) fn cpus_for(self, threads: usize, busy: bool) -> Option<Vec<usize>> {
        if threads < 2 || self == ThreadPinning::Off {
            return None;
        }
        let allowed = allowed_cpus()?;
        let pin = match self {
            ThreadPinning::On => !allowed.is_empty(),
            ThreadPinning::Auto => busy && allowed.len() == threads,
            ThreadPinning::Off => false,
        };
        pin.then(|| (0..threads).map(|i| allowed[i % allowed.len()]).collect())
    }
}

impl fmt::Display for ThreadPinning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ThreadPinning::Auto => "auto",
            ThreadPinning::On => "on",
            ThreadPinning::Off => "off",
        })
    }
}

impl FromStr for ThreadPinning {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ThreadPinning::Auto),
            "on" => Ok(ThreadPinning::On),
            "off" => Ok(ThreadPinning::Off),
            _ => Err(format!("`{s}` is not one of auto, on, off")),
        }
    }
}

/// The CPUs this process may run on, in increasing order (`None` where that is unknown).
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most its size.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return None;
        }
        set
    };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `cpu < max`, the set's capacity in CPUs.
    let cpus: Vec<usize> = (0..max)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// Pins the calling thread to `cpu`; false when the OS refuses (the thread runs unpinned).
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread(cpu: usize) -> bool {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t is an empty set and `cpu` is within its capacity (checked
    // above); sched_setaffinity reads the set's size only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_cpu: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_errors() {
        for p in [ThreadPinning::Auto, ThreadPinning::On, ThreadPinning::Off] {
            assert_eq!(p.to_string().parse::<ThreadPinning>(), Ok(p));
        }
        let e = "always".parse::<ThreadPinning>().unwrap_err();
        assert!(e.contains("always") && e.contains("auto, on, off"), "{e}");
    }

    #[test]
    fn one_thread_and_off_never_pin() {
        for p in [ThreadPinning::Auto, ThreadPinning::On, ThreadPinning::Off] {
            assert_eq!(p.cpus_for(1, true), None);
        }
        assert_eq!(ThreadPinning::Off.cpus_for(2, true), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn auto_pins_only_a_busy_pool_of_one_worker_per_allowed_cpu() {
        let allowed = allowed_cpus().expect("linux reports the affinity mask");
        let n = allowed.len();
        if n >= 2 {
            assert_eq!(ThreadPinning::Auto.cpus_for(n, true), Some(allowed.clone()));
            assert_eq!(ThreadPinning::Auto.cpus_for(n, false), None);
        }
        assert_eq!(ThreadPinning::Auto.cpus_for(n + 1, true), None);
        // On wraps around the allowed CPUs, busy or not.
        let on = ThreadPinning::On.cpus_for(n + 1, false).expect("on pins");
        assert_eq!(on.len(), n + 1);
        assert_eq!(on[n], allowed[0]);
        assert!(on.iter().all(|c| allowed.contains(c)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pinned_thread_runs_only_on_its_cpu() {
        let allowed = allowed_cpus().expect("affinity mask");
        let cpu = *allowed.last().expect("at least one CPU");
        // In a thread of its own, so the test harness's thread keeps its mask.
        let seen = std::thread::spawn(move || {
            assert!(pin_current_thread(cpu));
            allowed_cpus()
        })
        .join()
        .expect("thread");
        assert_eq!(seen, Some(vec![cpu]));
        assert!(!pin_current_thread(usize::MAX));
    }
}
