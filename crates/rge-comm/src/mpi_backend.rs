//! The MPI backend (feature `mpi`): Open MPI through the `mpi` crate. The world is
//! `MPI_COMM_WORLD` of the processes `mpirun` started; each named group is a communicator
//! split off the world when the backend starts (all ranks define the same groups, in the same
//! order). Collectives write straight into the output (no staging copy), after one small
//! all-reduce that checks every rank gave the same number of bytes. A watchdog thread ends the
//! process with a message naming the collective when one does not complete within the
//! timeout (MPI calls cannot be cancelled): a rank that died or never arrives never hangs the
//! others forever.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::{Communicator as _, CommunicatorCollectives, Destination, Root, Source};
use mpi::Threading;
use rge_kernels::{bf16, f16, DType};

use crate::comm::Communicator;
use crate::error::{CommError, CommResult};
use crate::group::{Groups, WORLD_GROUP};
use crate::reduce::ReduceOp;

/// The MPI calls of one process. `SimpleCommunicator` holds a raw `MPI_Comm` handle.
struct Comms {
    world: SimpleCommunicator,
    /// The communicator of each named group this rank belongs to.
    groups: Vec<(String, SimpleCommunicator)>,
}

// SAFETY: the handles are only used under `MpiComm::lock` (one MPI call at a time, which every
// threading level above Funneled allows) or, with `Threading::Multiple`, from any thread, as
// the MPI standard allows for communicator handles.
unsafe impl Send for Comms {}
// SAFETY: as for Send: shared use is serialized by the lock unless MPI provides Multiple.
unsafe impl Sync for Comms {}

/// What the watchdog polls: the collective in flight (its start, name and group), and the
/// stop flag. A collective only writes its entry (no wake-up: waking the watchdog on every
/// call cost a context switch per collective, 5% of a 1 MiB all-reduce on 2 cores); the
/// watchdog looks every [`poll_period`] and ends the process once one has run past the timeout.
type Watch = Arc<(Mutex<WatchState>, Condvar)>;

#[derive(Default)]
struct WatchState {
    current: Option<(Instant, &'static str, String)>,
    stop: bool,
}

/// How often the watchdog looks: a tenth of the timeout, between 10 ms and 250 ms.
fn poll_period(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

/// One process's communicator over MPI.
pub struct MpiComm {
    comms: Comms,
    groups: Groups,
    rank: usize,
    size: usize,
    lock: Mutex<()>,
    watch: Watch,
    watchdog: Option<JoinHandle<()>>,
    /// Closes the signal thread's iterator when the communicator is dropped.
    signals: signal_hook::iterator::Handle,
    signal_thread: Option<JoinHandle<()>>,
    // Dropped last: finalizes MPI after every communicator above is freed.
    _universe: mpi::environment::Universe,
}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MpiComm(rank {} of {})", self.rank, self.size)
    }
}

/// True when this process was started by an MPI launcher (`mpirun`, `mpiexec`, srun).
pub fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

impl MpiComm {
    /// Initializes MPI (once per process) with the group specs `NAME=R0,R1,…` and the
    /// collectives' timeout.
    pub fn init(group_specs: &[String], timeout: Duration) -> CommResult<MpiComm> {
        let (universe, _threading) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| CommError::Mpi("MPI was initialized already in this process".into()))?;
        let world = universe.world();
        let size = world.size() as usize;
        let rank = world.rank() as usize;
        let mut groups = Groups::world(size);
        for s in group_specs {
            groups.define_spec(s)?;
        }
        let mut mine = Vec::new();
        for (name, ranks) in groups.named() {
            let pos = ranks.iter().position(|&r| r == rank);
            let color = match pos {
                Some(_) => Color::with_value(1),
                None => Color::undefined(),
            };
            let key = pos.unwrap_or(0) as i32;
            if let Some(c) = world.split_by_color_with_key(color, key) {
                mine.push((name.to_string(), c));
            }
        }
        let watch: Watch = Arc::new((Mutex::new(WatchState::default()), Condvar::new()));
        let w = watch.clone();
        let watchdog = std::thread::Builder::new()
            .name(format!("rge-comm-watchdog-{rank}"))
            .spawn(move || watchdog(&w, rank, timeout))
            .map_err(|e| CommError::Mpi(format!("cannot start the watchdog thread: {e}")))?;
        let (signals, signal_thread) = stop_reporter(watch.clone(), rank, size)?;
        Ok(MpiComm {
            comms: Comms {
                world,
                groups: mine,
            },
            groups,
            rank,
            size,
            lock: Mutex::new(()),
            watch,
            watchdog: Some(watchdog),
            signals,
            signal_thread: Some(signal_thread),
            _universe: universe,
        })
    }

    fn comm_of(&self, group: &str) -> CommResult<&SimpleCommunicator> {
        if group == WORLD_GROUP {
            return Ok(&self.comms.world);
        }
        self.groups.member(group, self.rank)?;
        self.comms
            .groups
            .iter()
            .find(|(n, _)| n == group)
            .map(|(_, c)| c)
            .ok_or_else(|| CommError::NotMember {
                group: group.into(),
                rank: self.rank,
            })
    }

    /// Runs `f` (one collective) under the lock and the watchdog.
    fn guarded<T>(
        &self,
        what: &'static str,
        group: &str,
        f: impl FnOnce() -> CommResult<T>,
    ) -> CommResult<T> {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.watch
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .current = Some((Instant::now(), what, group.to_string()));
        let r = f();
        self.watch
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .current = None;
        r
    }

    /// Checks every member gives `len` bytes (one all-reduce of two integers); on a mismatch
    /// gathers the sizes so every rank names the same culprit.
    fn check_sizes(
        &self,
        c: &SimpleCommunicator,
        op: &'static str,
        group: &str,
        len: usize,
    ) -> CommResult<()> {
        let mine = [len as i64, -(len as i64)];
        let mut ext = [0i64; 2];
        c.all_reduce_into(&mine[..], &mut ext[..], SystemOperation::max());
        if ext[0] == -ext[1] {
            return Ok(());
        }
        let mut all = vec![0i64; c.size() as usize];
        c.all_gather_into(&(len as i64), &mut all[..]);
        let ranks = self.groups.ranks(group)?;
        let i = all.iter().position(|&l| l != all[0]).unwrap_or(0);
        Err(CommError::Mismatch {
            op,
            group: group.into(),
            rank: ranks[i],
            got: all[i] as u64,
            first: ranks[0],
            want: all[0] as u64,
        })
    }
}

fn watchdog(w: &Watch, rank: usize, timeout: Duration) {
    let (lock, cv) = &**w;
    let period = poll_period(timeout);
    let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if st.stop {
            return;
        }
        if let Some((start, what, group)) = &st.current {
            if start.elapsed() >= timeout {
                eprintln!(
                    "rge: comm (rank {rank}, mpi backend): {what} in group `{group}` did not complete within {:.1} s (a rank died, or never reached it); stopping this rank",
                    timeout.as_secs_f64()
                );
                std::process::exit(1);
            }
        }
        st = cv
            .wait_timeout(st, period)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// A thread that reports where this rank was when the launcher stopped it (SIGTERM, SIGINT or
/// SIGHUP: `mpirun` ends the job's other ranks so when one of them dies), then ends it: every
/// surviving rank says which collective it was waiting in, not only mpirun.
fn stop_reporter(
    watch: Watch,
    rank: usize,
    size: usize,
) -> CommResult<(signal_hook::iterator::Handle, JoinHandle<()>)> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| CommError::Mpi(format!("cannot watch for signals: {e}")))?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name(format!("rge-comm-signals-{rank}"))
        .spawn(move || {
            // Ends when the handle is closed (the communicator dropped).
            if let Some(sig) = signals.forever().next() {
                let st = watch.0.lock().unwrap_or_else(|p| p.into_inner());
                let doing = match &st.current {
                    Some((start, what, group)) => format!(
                        "while waiting {:.1} s in {what} in group `{group}`",
                        start.elapsed().as_secs_f64()
                    ),
                    None => "between collectives".to_string(),
                };
                eprintln!(
                    "rge: comm (rank {rank} of {size}, mpi backend): stopped by signal {sig} {doing} (another rank ended, or the job was stopped)"
                );
                std::process::exit(128 + sig);
            }
        })
        .map_err(|e| CommError::Mpi(format!("cannot start the signal thread: {e}")))?;
    Ok((handle, thread))
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        self.signals.close();
        if let Some(h) = self.signal_thread.take() {
            let _ = h.join();
        }
        self.watch.0.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
        self.watch.1.notify_all();
        if let Some(h) = self.watchdog.take() {
            let _ = h.join();
        }
    }
}

fn mpi_op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Prod => SystemOperation::product(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
    }
}

fn cast<T: bytemuck::Pod>(b: &[u8]) -> CommResult<&[T]> {
    bytemuck::try_cast_slice(b).map_err(|e| CommError::Mpi(format!("buffer: {e}")))
}

fn cast_mut<T: bytemuck::Pod>(b: &mut [u8]) -> CommResult<&mut [T]> {
    bytemuck::try_cast_slice_mut(b).map_err(|e| CommError::Mpi(format!("buffer: {e}")))
}

/// Runs `$body` with `$T` the Rust type of `$dtype` (MPI's native types).
macro_rules! typed {
    ($dtype:expr, $T:ident => $body:expr, $half:expr) => {
        match $dtype {
            DType::Float => {
                type $T = f32;
                $body
            }
            DType::Double => {
                type $T = f64;
                $body
            }
            DType::Int8 => {
                type $T = i8;
                $body
            }
            DType::Int16 => {
                type $T = i16;
                $body
            }
            DType::Int32 => {
                type $T = i32;
                $body
            }
            DType::Int64 => {
                type $T = i64;
                $body
            }
            DType::Uint8 => {
                type $T = u8;
                $body
            }
            DType::Uint16 => {
                type $T = u16;
                $body
            }
            DType::Uint32 => {
                type $T = u32;
                $body
            }
            DType::Uint64 => {
                type $T = u64;
                $body
            }
            DType::Float16 | DType::Bfloat16 => $half,
            other => {
                return Err(CommError::Invalid(format!(
                    "{other} tensors cannot be reduced"
                )))
            }
        }
    };
}

/// 16-bit floats as f32 (MPI has no type for them).
fn widen(b: &[u8], dtype: DType) -> CommResult<Vec<f32>> {
    let bits: &[u16] = cast(b)?;
    Ok(match dtype {
        DType::Float16 => bits.iter().map(|&h| f16::from_bits(h).to_f32()).collect(),
        _ => bits.iter().map(|&h| bf16::from_bits(h).to_f32()).collect(),
    })
}

fn narrow(v: &[f32], out: &mut [u8], dtype: DType) -> CommResult<()> {
    let bits: &mut [u16] = cast_mut(out)?;
    for (o, &x) in bits.iter_mut().zip(v) {
        *o = match dtype {
            DType::Float16 => f16::from_f32(x).to_bits(),
            _ => bf16::from_f32(x).to_bits(),
        };
    }
    Ok(())
}

impl Communicator for MpiComm {
    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn groups(&self) -> &Groups {
        &self.groups
    }

    fn all_reduce(
        &self,
        group: &str,
        send: &[u8],
        recv: &mut [u8],
        dtype: DType,
        op: ReduceOp,
    ) -> CommResult<()> {
        const OP: &str = "HcomAllReduce";
        let c = self.comm_of(group)?;
        if send.len() != recv.len() {
            return Err(CommError::Invalid(format!(
                "{OP}: {} bytes into {}",
                send.len(),
                recv.len()
            )));
        }
        self.guarded(OP, group, || {
            self.check_sizes(c, OP, group, send.len())?;
            typed!(dtype, T => {
                c.all_reduce_into(cast::<T>(send)?, cast_mut::<T>(recv)?, mpi_op(op));
            }, {
                let w = widen(send, dtype)?;
                let mut r = vec![0f32; w.len()];
                c.all_reduce_into(&w[..], &mut r[..], mpi_op(op));
                narrow(&r, recv, dtype)?;
            });
            Ok(())
        })
    }

    fn broadcast(&self, group: &str, buf: &mut [u8], root: usize) -> CommResult<()> {
        const OP: &str = "HcomBroadcast";
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if root >= n {
            return Err(CommError::Invalid(format!(
                "{OP}: root_rank {root} is outside group `{group}` of {n} ranks"
            )));
        }
        self.guarded(OP, group, || {
            self.check_sizes(c, OP, group, buf.len())?;
            c.process_at_rank(root as i32).broadcast_into(buf);
            Ok(())
        })
    }

    fn all_gather(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()> {
        const OP: &str = "HcomAllGather";
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if recv.len() != send.len() * n {
            return Err(CommError::Invalid(format!(
                "{OP}: {} bytes from each of {n} ranks into {}",
                send.len(),
                recv.len()
            )));
        }
        self.guarded(OP, group, || {
            self.check_sizes(c, OP, group, send.len())?;
            c.all_gather_into(send, recv);
            Ok(())
        })
    }

    fn reduce_scatter(
        &self,
        group: &str,
        send: &[u8],
        recv: &mut [u8],
        dtype: DType,
        op: ReduceOp,
    ) -> CommResult<()> {
        const OP: &str = "HcomReduceScatter";
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if send.len() != recv.len() * n {
            return Err(CommError::Invalid(format!(
                "{OP}: {} bytes do not split into {n} blocks of {}",
                send.len(),
                recv.len()
            )));
        }
        self.guarded(OP, group, || {
            self.check_sizes(c, OP, group, send.len())?;
            typed!(dtype, T => {
                c.reduce_scatter_block_into(cast::<T>(send)?, cast_mut::<T>(recv)?, mpi_op(op));
            }, {
                let w = widen(send, dtype)?;
                let mut r = vec![0f32; w.len() / n];
                c.reduce_scatter_block_into(&w[..], &mut r[..], mpi_op(op));
                narrow(&r, recv, dtype)?;
            });
            Ok(())
        })
    }

    fn all_to_all(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()> {
        const OP: &str = "HcomAllToAll";
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if send.len() != recv.len() || send.len() % n != 0 {
            return Err(CommError::Invalid(format!(
                "{OP}: {} bytes do not split into {n} equal blocks",
                send.len()
            )));
        }
        self.guarded(OP, group, || {
            self.check_sizes(c, OP, group, send.len())?;
            c.all_to_all_into(send, recv);
            Ok(())
        })
    }

    fn send(&self, group: &str, buf: &[u8], dest: usize, tag: i32) -> CommResult<()> {
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if dest >= n {
            return Err(CommError::Invalid(format!(
                "HcomSend: dest_rank {dest} is outside group `{group}` of {n} ranks"
            )));
        }
        self.guarded("HcomSend", group, || {
            c.process_at_rank(dest as i32).send_with_tag(buf, tag);
            Ok(())
        })
    }

    fn recv(&self, group: &str, buf: &mut [u8], src: usize, tag: i32) -> CommResult<()> {
        let msg = self.recv_any_size(group, src, tag)?;
        if msg.len() != buf.len() {
            let ranks = self.groups.ranks(group)?;
            return Err(CommError::Mismatch {
                op: "HcomReceive",
                group: group.into(),
                rank: ranks[src],
                got: msg.len() as u64,
                first: self.rank,
                want: buf.len() as u64,
            });
        }
        buf.copy_from_slice(&msg);
        Ok(())
    }

    fn recv_any_size(&self, group: &str, src: usize, tag: i32) -> CommResult<Vec<u8>> {
        let c = self.comm_of(group)?;
        let (_, n) = self.member(group)?;
        if src >= n {
            return Err(CommError::Invalid(format!(
                "HcomReceive: src_rank {src} is outside group `{group}` of {n} ranks"
            )));
        }
        self.guarded("HcomReceive", group, || {
            let (msg, _) = c
                .process_at_rank(src as i32)
                .receive_vec_with_tag::<u8>(tag);
            Ok(msg)
        })
    }
}

/// Raw `MPI_Allreduce` of f32 over the world, for the bandwidth bench's baseline.
pub fn raw_all_reduce_f32(comm: &MpiComm, send: &[f32], recv: &mut [f32]) {
    comm.comms
        .world
        .all_reduce_into(send, recv, SystemOperation::sum());
}

/// A world barrier (the bench's fence between timings).
pub fn barrier(comm: &MpiComm) {
    comm.comms.world.barrier();
}
