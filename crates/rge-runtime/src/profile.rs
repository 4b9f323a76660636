//! Step timings and the Chrome trace (`chrome://tracing`, Perfetto): one lane per stream or
//! worker thread, one box per node, the engine and op type in the box's args.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use crate::program::Step;

/// One timed step.
#[derive(Debug, Clone)]
pub struct ProfileEvent {
    pub node: String,
    pub op_type: String,
    pub engine: String,
    /// The kernel definition that ran (e.g. `cpu.Conv`).
    pub kernel: String,
    pub stream: Option<u32>,
    /// Input and output shapes as compiled (see `Step::shapes`).
    pub shapes: std::sync::Arc<str>,
    /// Lane: the stream executor's stream, or the worker thread.
    pub lane: usize,
    /// Microseconds since the profiler was made.
    pub start_us: f64,
    pub dur_us: f64,
}

/// Collects step timings from all threads of a run.
#[derive(Debug)]
pub struct Profiler {
    origin: Instant,
    events: Mutex<Vec<ProfileEvent>>,
}

impl Default for Profiler {
    fn default() -> Self {
        Profiler {
            origin: Instant::now(),
            events: Mutex::new(Vec::new()),
        }
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl Profiler {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn record(&self, step: &Step, lane: usize, start: Instant) {
        let end = Instant::now();
        let ev = ProfileEvent {
            node: step.node.clone(),
            op_type: step.op_type.to_string(),
            engine: step.engine.to_string(),
            kernel: step.kernel_name.to_string(),
            stream: step.stream,
            shapes: step.shapes.clone(),
            lane,
            start_us: start.duration_since(self.origin).as_secs_f64() * 1e6,
            dur_us: end.duration_since(start).as_secs_f64() * 1e6,
        };
        if let Ok(mut v) = self.events.lock() {
            v.push(ev);
        }
    }

    /// The events so far, by start time.
    pub fn events(&self) -> Vec<ProfileEvent> {
        let mut v = self.events.lock().map(|v| v.clone()).unwrap_or_default();
        v.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
        v
    }

    /// The Chrome trace JSON of the events.
    pub fn chrome_trace(&self) -> String {
        let events = self.events();
        let mut lanes: Vec<usize> = events.iter().map(|e| e.lane).collect();
        lanes.sort_unstable();
        lanes.dedup();
        let mut out = String::from("{\"traceEvents\":[\n");
        let mut first = true;
        for l in &lanes {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{l},\"args\":{{\"name\":\"lane {l}\"}}}}"
            );
        }
        for e in &events {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            let stream = e.stream.map_or("null".to_string(), |s| s.to_string());
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"name\":{},\"cat\":{},\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"engine\":{},\"kernel\":{},\"op_type\":{},\"shapes\":{},\"stream\":{}}}}}",
                json_str(&e.node),
                json_str(&e.engine),
                e.lane,
                e.start_us,
                e.dur_us,
                json_str(&e.engine),
                json_str(&e.kernel),
                json_str(&e.op_type),
                json_str(&e.shapes),
                stream
            );
        }
        out.push_str("\n]}\n");
        out
    }
}
