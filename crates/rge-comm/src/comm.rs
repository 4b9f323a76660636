//! The communicator interface: one per rank, over a backend (in-process threads, or MPI).
//! Buffers are raw element bytes with their dtype; every collective checks that each rank gave
//! the same number of bytes (a shape or dtype that differs across ranks is an error on every
//! rank, not undefined behaviour), and waits at most the communicator's timeout.

use std::fmt::Debug;

use rge_kernels::DType;

use crate::error::{CommError, CommResult};
use crate::group::Groups;
use crate::reduce::ReduceOp;

/// A tag the data-parallel gather uses for its point-to-point messages (outside the range
/// HcomSend tags are checked to).
pub const GATHER_TAG: i32 = 30_000;

/// The largest tag HcomSend/HcomReceive may use (MPI guarantees tags up to 32767).
pub const MAX_USER_TAG: i64 = 29_999;

/// One rank's communicator.
pub trait Communicator: Send + Sync + Debug {
    /// The backend's name (`in-process`, `mpi`).
    fn backend(&self) -> &'static str;
    /// This rank in the world.
    fn rank(&self) -> usize;
    /// The world size.
    fn size(&self) -> usize;
    /// The groups defined.
    fn groups(&self) -> &Groups;

    /// `recv = op(send of every member)`, elementwise; every member gets the result.
    fn all_reduce(
        &self,
        group: &str,
        send: &[u8],
        recv: &mut [u8],
        dtype: DType,
        op: ReduceOp,
    ) -> CommResult<()>;

    /// Every member's `buf` becomes the `root` member's.
    fn broadcast(&self, group: &str, buf: &mut [u8], root: usize) -> CommResult<()>;

    /// `recv` = every member's `send`, concatenated in group order.
    fn all_gather(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()>;

    /// The reduction of every member's `send`, split into equal blocks: member i gets block i.
    fn reduce_scatter(
        &self,
        group: &str,
        send: &[u8],
        recv: &mut [u8],
        dtype: DType,
        op: ReduceOp,
    ) -> CommResult<()>;

    /// Block j of member i's `send` becomes block i of member j's `recv`.
    fn all_to_all(&self, group: &str, send: &[u8], recv: &mut [u8]) -> CommResult<()>;

    /// Sends `buf` to member `dest` with `tag`.
    fn send(&self, group: &str, buf: &[u8], dest: usize, tag: i32) -> CommResult<()>;

    /// Receives into `buf` from member `src` with `tag` (the sizes must agree).
    fn recv(&self, group: &str, buf: &mut [u8], src: usize, tag: i32) -> CommResult<()>;

    /// Receives a message of unknown size from member `src` with `tag`.
    fn recv_any_size(&self, group: &str, src: usize, tag: i32) -> CommResult<Vec<u8>>;

    /// This rank's place in `group` and the group's size.
    fn member(&self, group: &str) -> CommResult<(usize, usize)> {
        self.groups().member(group, self.rank())
    }
}

/// Each member's `send` of any size, collected on member `root` (in group order); `None` on
/// the other members. For outputs of data-parallel runs, whose batch shares may differ.
pub fn gather_to_root(
    comm: &dyn Communicator,
    group: &str,
    send: &[u8],
    root: usize,
) -> CommResult<Option<Vec<Vec<u8>>>> {
    let (me, n) = comm.member(group)?;
    if root >= n {
        return Err(CommError::Invalid(format!(
            "gather root {root} is outside group `{group}` of {n} ranks"
        )));
    }
    if me != root {
        comm.send(group, send, root, GATHER_TAG)?;
        return Ok(None);
    }
    let mut parts = Vec::with_capacity(n);
    for src in 0..n {
        if src == me {
            parts.push(send.to_vec());
        } else {
            parts.push(comm.recv_any_size(group, src, GATHER_TAG)?);
        }
    }
    Ok(Some(parts))
}

/// Checks a user tag of HcomSend/HcomReceive.
pub fn check_tag(tag: i64) -> CommResult<i32> {
    if (0..=MAX_USER_TAG).contains(&tag) {
        Ok(tag as i32)
    } else {
        Err(CommError::Invalid(format!(
            "sr_tag {tag} is outside 0..={MAX_USER_TAG}"
        )))
    }
}
