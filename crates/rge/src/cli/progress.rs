//! Progress on long work (`rge conformance`, compiling a graph of [`LARGE_GRAPH`] nodes or
//! more): an indicatif bar on stderr when stderr is a terminal, nothing when it is piped or
//! redirected (so scripts and CI logs see none).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Graphs of this many nodes or more show a spinner while they compile.
pub const LARGE_GRAPH: usize = 100_000;

/// Whether progress is drawn: stderr is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `len` steps labelled `what`, or `None` off a terminal.
pub fn bar(len: u64, what: &str) -> Option<ProgressBar> {
    if !enabled() {
        return None;
    }
    let b = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({elapsed}, eta {eta})")
    {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_message(what.to_string());
    Some(b)
}

/// A spinner labelled `what` that ticks by itself, or `None` off a terminal.
pub fn spinner(what: &str) -> Option<ProgressBar> {
    if !enabled() {
        return None;
    }
    let s = ProgressBar::new_spinner();
    s.set_message(what.to_string());
    s.enable_steady_tick(Duration::from_millis(120));
    Some(s)
}

/// A spinner while a graph of `nodes` nodes compiles, when it is large.
pub fn compiling(nodes: usize) -> Option<ProgressBar> {
    (nodes >= LARGE_GRAPH)
        .then(|| spinner(&format!("compiling {nodes} nodes")))
        .flatten()
}
