//! The in-process backend: the ranks of a world are threads of one process, each with its
//! own [`LocalComm`] over shared rendezvous state. A collective is an exchange: each member
//! posts its bytes to the round (group, sequence number), waits for every member's, then
//! computes its result from all of them in group order (so every member computes the same
//! thing). A communicator that is dropped (its thread died or finished) is marked gone, and a
//! round waiting for it fails at once; otherwise a round fails after the timeout.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rge_kernels::DType;

use crate::comm::Communicator;
use crate::error::{CommError, CommResult};
use crate::group::Groups;
use crate::reduce::{reduce_into, ReduceOp};

/// How long a collective waits for the other ranks by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Round {
    op: &'static str,
    parts: Vec<Option<Arc<Vec<u8>>>>,
    taken: usize,
}

/// A point-to-point mailbox key: group, source and destination world ranks, tag.
type MailKey = (String, usize, usize, i32);

#[derive(Default)]
struct State {
    rounds: HashMap<(String, u64), Round>,
    mail: HashMap<MailKey, VecDeque<Vec<u8>>>,
    gone: Vec<bool>,
}

struct Shared {
    groups: Groups,
    timeout: Duration,
    state: Mutex<State>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking rank poisons nothing we cannot read on: the state stays consistent
        // between operations.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One rank of an in-process world.
pub struct LocalComm {
    shared: Arc<Shared>,
    rank: usize,
    /// The next round of each group this rank takes part in.
    seq: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for LocalComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LocalComm(rank {} of {})",
            self.rank,
            self.shared.groups.world_size()
        )
    }
}

/// An in-process world of `groups.world_size()` ranks: one communicator per rank, to be moved
/// to that rank's thread.
pub fn local_world(groups: Groups, timeout: Duration) -> Vec<LocalComm> {
    let n = groups.world_size();
    let shared = Arc::new(Shared {
        groups,
        timeout,
        state: Mutex::new(State {
            gone: vec![false; n],
            ..State::default()
        }),
        cv: Condvar::new(),
    });
    (0..n)
        .map(|rank| LocalComm {
            shared: shared.clone(),
            rank,
            seq: Mutex::new(HashMap::new()),
        })
        .collect()
}

/// A world of one rank (what a single process runs with): every collective is the identity.
pub fn solo() -> LocalComm {
    local_world(Groups::world(1), DEFAULT_TIMEOUT)
        .pop()
        .expect("a world of one has one rank")
}

impl Drop for LocalComm {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(g) = st.gone.get_mut(self.rank) {
            *g = true;
        }
        drop(st);
        self.shared.cv.notify_all();
    }
}

impl LocalComm {
    fn next_seq(&self, group: &str) -> u64 {
        let mut seq = self.seq.lock().unwrap_or_else(|p| p.into_inner());
        let s = seq.entry(group.to_string()).or_insert(0);
        *s += 1;
        *s
    }

    /// Posts `part` to this rank's next round of `group` and returns every member's part.
    fn exchange(
        &self,
        op: &'static str,
        group: &str,
        part: &[u8],
    ) -> CommResult<Vec<Arc<Vec<u8>>>> {
        let ranks = self.shared.groups.ranks(group)?;
        let (me, n) = self.member(group)?;
        let key = (group.to_string(), self.next_seq(group));
        let deadline = Instant::now() + self.shared.timeout;
        let mut st = self.shared.lock();
        {
            let round = st.rounds.entry(key.clone()).or_default();
            if round.parts.is_empty() {
                round.op = op;
                round.parts = vec![None; n];
            } else if round.op != op {
                let other = round.op;
                let rank = round
                    .parts
                    .iter()
                    .position(Option::is_some)
                    .map_or(0, |i| ranks[i]);
                return Err(CommError::OpMismatch {
                    op,
                    group: group.into(),
                    rank,
                    other,
                });
            }
            round.parts[me] = Some(Arc::new(part.to_vec()));
        }
        self.shared.cv.notify_all();
        loop {
            let round = st.rounds.get(&key).ok_or_else(|| {
                CommError::Invalid(format!("{op} in group `{group}`: the round vanished"))
            })?;
            let missing: Vec<usize> = (0..n).filter(|&i| round.parts[i].is_none()).collect();
            if missing.is_empty() {
                break;
            }
            if let Some(&i) = missing.iter().find(|&&i| st.gone[ranks[i]]) {
                return Err(CommError::RankGone {
                    op,
                    group: group.into(),
                    rank: ranks[i],
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CommError::Timeout {
                    op,
                    group: group.into(),
                    secs: self.shared.timeout.as_secs_f64(),
                    missing: missing.iter().map(|&i| ranks[i]).collect(),
                });
            }
            st = self
                .shared
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let round = st.rounds.get_mut(&key).ok_or_else(|| {
            CommError::Invalid(format!("{op} in group `{group}`: the round vanished"))
        })?;
        let parts: Vec<Arc<Vec<u8>>> = round.parts.iter().flatten().cloned().collect();
        round.taken += 1;
        if round.taken == n {
            st.rounds.remove(&key);
        }
        Ok(parts)
    }

    /// The parts' sizes agree among themselves (checked before each rank's own expectations,
    /// so that every rank reports the same culprit).
    fn uniform(&self, op: &'static str, group: &str, parts: &[Arc<Vec<u8>>]) -> CommResult<usize> {
        let want = parts.first().map_or(0, |p| p.len());
        if let Some(i) = parts.iter().position(|p| p.len() != want) {
            let ranks = self.shared.groups.ranks(group)?;
            return Err(CommError::Mismatch {
                op,
                group: group.into(),
                rank: ranks[i],
                got: parts[i].len() as u64,
                first: ranks[0],
                want: want as u64,
            });
        }
        Ok(want)
    }
}

fn size_error(op: &str, what: String) -> CommError {
    CommError::Invalid(format!("{op}: {what}"))
}

impl Communicator for LocalComm {
    fn backend(&self) -> &'static str {
        "in-process"
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.groups.world_size()
    }

    fn groups(&self) -> &Groups {
        &self.shared.groups
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
        if recv.len() != send.len() {
            return Err(size_error(
                OP,
                format!("{} bytes into {}", send.len(), recv.len()),
            ));
        }
        let parts = self.exchange(OP, group, send)?;
        self.uniform(OP, group, &parts)?;
        recv.copy_from_slice(&parts[0]);
        for p in &parts[1..] {
            reduce_into(recv, p, dtype, op)?;
        }
        Ok(())
    }

    fn broadcast(&self, group: &str, buf: &mut [u8], root: usize) -> CommResult<()> {
        const OP: &str = "HcomBroadcast";
        let (_, n) = self.member(group)?;
        if root >= n {
            return Err(size_error(
                OP,
                format!("root_rank {root} is outside group `{group}` of {n} ranks"),
            ));
        }
        let parts = self.exchange(OP, group, buf)?;
        self.uniform(OP, group, &parts)?;
        buf.copy_from_slice(&parts[root]);
        Ok(())
    }

    fn all_gather(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()> {
        const OP: &str = "HcomAllGather";
        let parts = self.exchange(OP, group, send)?;
        let len = self.uniform(OP, group, &parts)?;
        if recv.len() != len * parts.len() {
            return Err(size_error(
                OP,
                format!(
                    "{} bytes from each of {} ranks into {}",
                    len,
                    parts.len(),
                    recv.len()
                ),
            ));
        }
        for (chunk, p) in recv.chunks_exact_mut(len.max(1)).zip(&parts) {
            chunk.copy_from_slice(p);
        }
        Ok(())
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
        let (me, n) = self.member(group)?;
        let parts = self.exchange(OP, group, send)?;
        let len = self.uniform(OP, group, &parts)?;
        if len != recv.len() * n {
            return Err(size_error(
                OP,
                format!("{len} bytes do not split into {n} blocks of {}", recv.len()),
            ));
        }
        let block = recv.len();
        let at = |p: &Arc<Vec<u8>>| p[me * block..(me + 1) * block].to_vec();
        recv.copy_from_slice(&at(&parts[0]));
        for p in &parts[1..] {
            reduce_into(recv, &at(p), dtype, op)?;
        }
        Ok(())
    }

    fn all_to_all(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()> {
        const OP: &str = "HcomAllToAll";
        let (me, n) = self.member(group)?;
        let parts = self.exchange(OP, group, send)?;
        let len = self.uniform(OP, group, &parts)?;
        if len != recv.len() || len % n != 0 {
            return Err(size_error(
                OP,
                format!("{len} bytes do not split into {n} equal blocks"),
            ));
        }
        let block = len / n;
        for (i, p) in parts.iter().enumerate() {
            recv[i * block..(i + 1) * block].copy_from_slice(&p[me * block..(me + 1) * block]);
        }
        Ok(())
    }

    fn send(&self, group: &str, buf: &[u8], dest: usize, tag: i32) -> CommResult<()> {
        let ranks = self.shared.groups.ranks(group)?;
        self.member(group)?;
        let Some(&to) = ranks.get(dest) else {
            return Err(size_error(
                "HcomSend",
                format!(
                    "dest_rank {dest} is outside group `{group}` of {} ranks",
                    ranks.len()
                ),
            ));
        };
        let mut st = self.shared.lock();
        st.mail
            .entry((group.to_string(), self.rank, to, tag))
            .or_default()
            .push_back(buf.to_vec());
        drop(st);
        self.shared.cv.notify_all();
        Ok(())
    }

    fn recv(&self, group: &str, buf: &mut [u8], src: usize, tag: i32) -> CommResult<()> {
        let msg = self.recv_any_size(group, src, tag)?;
        if msg.len() != buf.len() {
            let ranks = self.shared.groups.ranks(group)?;
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
        const OP: &str = "HcomReceive";
        let ranks = self.shared.groups.ranks(group)?;
        self.member(group)?;
        let Some(&from) = ranks.get(src) else {
            return Err(size_error(
                OP,
                format!(
                    "src_rank {src} is outside group `{group}` of {} ranks",
                    ranks.len()
                ),
            ));
        };
        let key = (group.to_string(), from, self.rank, tag);
        let deadline = Instant::now() + self.shared.timeout;
        let mut st = self.shared.lock();
        loop {
            if let Some(m) = st.mail.get_mut(&key).and_then(VecDeque::pop_front) {
                return Ok(m);
            }
            if st.gone[from] {
                return Err(CommError::RankGone {
                    op: OP,
                    group: group.into(),
                    rank: from,
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CommError::Timeout {
                    op: OP,
                    group: group.into(),
                    secs: self.shared.timeout.as_secs_f64(),
                    missing: vec![from],
                });
            }
            st = self
                .shared
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
