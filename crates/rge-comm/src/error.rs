//! The comm engine's errors. Every collective error is seen by every surviving rank of the
//! group (each checks the same facts), so all of them stop with the same message.

/// A communication error.
#[derive(Debug, thiserror::Error)]
pub enum CommError {
    #[error("group `{group}` is not defined (defined: {known})")]
    UnknownGroup { group: String, known: String },
    #[error("group `{group}` names rank {rank}, which does not exist (the world has {size} ranks: 0..{size})")]
    NoSuchRank {
        group: String,
        rank: usize,
        size: usize,
    },
    #[error("group `{group}`: {msg}")]
    BadGroup { group: String, msg: String },
    #[error("rank {rank} is not a member of group `{group}`")]
    NotMember { group: String, rank: usize },
    #[error("{op} in group `{group}`: rank {rank} gave {got} bytes where rank {first} gave {want}: the tensors' shapes or dtypes differ across ranks")]
    Mismatch {
        op: &'static str,
        group: String,
        rank: usize,
        got: u64,
        first: usize,
        want: u64,
    },
    #[error("{op} in group `{group}`: timed out after {secs:.1} s waiting for rank(s) {missing:?} (a rank died, or never reached this collective)")]
    Timeout {
        op: &'static str,
        group: String,
        secs: f64,
        missing: Vec<usize>,
    },
    #[error("{op} in group `{group}`: rank {rank} has left (it died or finished before this collective)")]
    RankGone {
        op: &'static str,
        group: String,
        rank: usize,
    },
    #[error("{op} in group `{group}`: ranks disagree on the collective: rank {rank} runs {other}")]
    OpMismatch {
        op: &'static str,
        group: String,
        rank: usize,
        other: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("MPI: {0}")]
    Mpi(String),
}

/// A comm result.
pub type CommResult<T> = Result<T, CommError>;
