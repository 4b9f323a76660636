//! `rge explain`: why every node went where it went. The command fills an [`ExplainReport`]
//! from the compiler's placement and partition results; this module renders it as text,
//! JSON or one self-contained HTML page (docs/explain.md).

pub mod flops;
pub mod html;
pub mod json;
mod layout;
pub mod report;
pub mod text;

pub use flops::node_flops;
pub use html::{render_html, PALETTE};
pub use report::{
    flops_label, shape_label, Candidate, EdgeExplain, EngineSummary, ExplainReport, NodeExplain,
    PartitionExplain, PassExplain, TransferExplain,
};
pub use text::render_text;
