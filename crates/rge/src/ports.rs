//! A graph's inputs and outputs as a user sees them: name, element type and dims, with the
//! model's dim names kept (`batch`, `height`: the ONNX `dim_param`s the importer records on
//! the desc). `rge inspect` prints them; the Python bindings' `get_inputs()`/`get_outputs()`
//! return them.

use rge_ir::{ComputeGraph, DataType, NodeId, TensorDesc};

/// The ONNX importer's record of dim names on a desc ("" where a dim has none).
pub const DIM_PARAMS_ATTR: &str = rge_formats::onnx::names::DIM_PARAMS;

/// One dim of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    Known(i64),
    /// An unknown dim the model names (`dim_param`).
    Named(String),
    Unknown,
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Known(v) => write!(f, "{v}"),
            Dim::Named(n) => f.write_str(n),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// One graph input or output.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub name: String,
    pub dtype: DataType,
    /// `None`: unknown rank.
    pub dims: Option<Vec<Dim>>,
}

impl Port {
    /// The names of the dims the model leaves open (named or not); empty when static.
    pub fn is_dynamic(&self) -> bool {
        self.dims
            .as_ref()
            .is_none_or(|d| d.iter().any(|x| !matches!(x, Dim::Known(_))))
    }

    /// `[batch,3,?,?]`, or `[unknown rank]`.
    pub fn dims_text(&self) -> String {
        match &self.dims {
            None => "[unknown rank]".into(),
            Some(d) => format!(
                "[{}]",
                d.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

/// The dims of `desc`, with the dim names the importer kept.
pub fn dims_of(desc: &TensorDesc) -> Option<Vec<Dim>> {
    let shape = desc.shape();
    if shape.is_unknown_rank() {
        return None;
    }
    let names: &[String] = desc
        .attrs()
        .get_as(DIM_PARAMS_ATTR)
        .ok()
        .flatten()
        .unwrap_or(&[]);
    Some(
        shape
            .dims()
            .iter()
            .enumerate()
            .map(|(i, &d)| match names.get(i).filter(|n| !n.is_empty()) {
                _ if d >= 0 => Dim::Known(d),
                Some(n) => Dim::Named(n.clone()),
                None => Dim::Unknown,
            })
            .collect(),
    )
}

fn port(name: String, desc: Option<&TensorDesc>) -> Port {
    match desc {
        Some(d) => Port {
            name,
            dtype: d.dtype(),
            dims: dims_of(d),
        },
        None => Port {
            name,
            dtype: DataType::Undefined,
            dims: None,
        },
    }
}

/// The ONNX value name of an output when the importer kept one, else `node:index`.
pub fn output_name(g: &ComputeGraph, n: NodeId, i: usize) -> String {
    let desc = g.op(n).and_then(|op| op.output(i));
    match desc.and_then(|d| d.attrs().get_str("_onnx_name").ok().flatten()) {
        Some(name) => name.to_string(),
        None => format!("{}:{i}", g.name_of(n)),
    }
}

/// The root graph's inputs (its Data nodes' outputs).
pub fn inputs(g: &ComputeGraph) -> Vec<Port> {
    g.input_nodes(g.root())
        .iter()
        .map(|&n| {
            let op = g.op(n);
            port(
                g.name_of(n).to_string(),
                op.and_then(|o| o.output(0).or_else(|| o.input(0))),
            )
        })
        .collect()
}

/// The root graph's outputs (what its NetOutput takes).
pub fn outputs(g: &ComputeGraph) -> Vec<Port> {
    g.output_nodes(g.root())
        .iter()
        .map(|&(n, i)| {
            port(
                output_name(g, n, i as usize),
                g.op(n).and_then(|o| o.output(i as usize)),
            )
        })
        .collect()
}
