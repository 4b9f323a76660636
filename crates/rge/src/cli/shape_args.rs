//! `--shape NAME=D0,D1,…` (repeatable; `rge run`, `rge compile`, `rge bench`, `rge inspect
//! --shapes`): fixes a graph input's dims before anything is inferred or compiled, so shape
//! inference, the memory plan and the kernels see static shapes. `NAME=` alone is a scalar.
//!
//! A model whose inputs still have unknown dims after the `--shape` options is compiled per
//! input shapes at run time ([`rge_runtime::ShapeSpecializedModel`]): see [`build`].

use std::path::Path;
use std::sync::Arc;

use rge_ir::{op_types, ComputeGraph, NodeId, Shape};
use rge_kernels::Value;
use rge_runtime::program::InputSpec;
use rge_runtime::shape_cache::{graph_inputs, is_dynamic_input};
use rge_runtime::{Model, Session, ShapeSpecializedModel};

use super::CliError;
use crate::model;

/// One `--shape` option: the input's name and its dims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeArg {
    pub name: String,
    pub dims: Vec<i64>,
    /// The option's value as given (for messages).
    pub spec: String,
}

fn bad(spec: &str, msg: impl std::fmt::Display) -> CliError {
    CliError::new(format!("--shape `{spec}`: {msg}"))
}

/// Parses one `--shape` value: `NAME=D0,D1,…` with every dim a positive integer.
pub fn parse_one(spec: &str) -> Result<ShapeArg, CliError> {
    let (name, dims) = spec
        .rsplit_once('=')
        .ok_or_else(|| bad(spec, "expected NAME=D0,D1,… (e.g. input=1,3,224,224)"))?;
    if name.is_empty() {
        return Err(bad(spec, "no input name before `=`"));
    }
    let dims = dims.trim();
    let dims: Vec<i64> = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| {
                let d = d.trim();
                match d.parse::<i64>() {
                    Ok(v) if v > 0 => Ok(v),
                    Ok(v) => Err(bad(spec, format!("dim {v} is not positive"))),
                    Err(_) => Err(bad(spec, format!("dim `{d}` is not an integer"))),
                }
            })
            .collect::<Result<_, _>>()?
    };
    Ok(ShapeArg {
        name: name.to_string(),
        dims,
        spec: spec.to_string(),
    })
}

/// Parses every `--shape` value; an input named twice is an error.
pub fn parse(specs: &[String]) -> Result<Vec<ShapeArg>, CliError> {
    let mut out: Vec<ShapeArg> = Vec::with_capacity(specs.len());
    for s in specs {
        let a = parse_one(s)?;
        if let Some(prev) = out.iter().find(|p| p.name == a.name) {
            return Err(bad(
                s,
                format!("input `{}` is already fixed by `{}`", a.name, prev.spec),
            ));
        }
        out.push(a);
    }
    Ok(out)
}

fn dims_text(d: &[i64]) -> String {
    let v: Vec<String> = d
        .iter()
        .map(|&x| if x < 0 { "?".into() } else { x.to_string() })
        .collect();
    format!("[{}]", v.join(","))
}

/// The root graph's Data node called `name` (its node name, or the ONNX value name).
fn find_input(g: &ComputeGraph, inputs: &[(NodeId, InputSpec)], name: &str) -> Option<NodeId> {
    inputs
        .iter()
        .find(|(_, s)| s.name == name)
        .map(|(n, _)| *n)
        .or_else(|| {
            inputs.iter().map(|(n, _)| *n).find(|&n| {
                g.op(n)
                    .and_then(|op| op.output(0))
                    .is_some_and(|d| d.attrs().get_str("_onnx_name").ok().flatten() == Some(name))
            })
        })
}

/// Fixes the root graph's inputs to `shapes`: each input's Data node gets the dims on its input
/// and output desc. Errors name the option: an unknown input (listing the inputs), a rank or a
/// static dim that contradicts the model, an input that is not a tensor.
pub fn apply(g: &mut ComputeGraph, shapes: &[ShapeArg]) -> Result<(), CliError> {
    if shapes.is_empty() {
        return Ok(());
    }
    let inputs = graph_inputs(g);
    for a in shapes {
        let Some(n) = find_input(g, &inputs, &a.name) else {
            let known: Vec<String> = inputs
                .iter()
                .map(|(_, s)| match &s.dims {
                    Some(d) => format!("{}{}", s.name, dims_text(d)),
                    None => s.name.clone(),
                })
                .collect();
            return Err(bad(
                &a.spec,
                format!(
                    "the model has no input `{}` (inputs: {})",
                    a.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let spec = &inputs.iter().find(|(m, _)| *m == n).expect("found").1;
        if !spec.tensor {
            return Err(bad(
                &a.spec,
                format!("input `{}` is not a tensor", spec.name),
            ));
        }
        if let Some(declared) = &spec.dims {
            if declared.len() != a.dims.len() {
                return Err(bad(
                    &a.spec,
                    format!(
                        "input `{}` has rank {} ({}), the option gives {} dims",
                        spec.name,
                        declared.len(),
                        dims_text(declared),
                        a.dims.len()
                    ),
                ));
            }
            for (i, (&d, &v)) in declared.iter().zip(&a.dims).enumerate() {
                if d >= 0 && d != v {
                    return Err(bad(
                        &a.spec,
                        format!(
                            "dim {i} of input `{}` is {d} in the model ({}), not {v}",
                            spec.name,
                            dims_text(declared)
                        ),
                    ));
                }
            }
        }
        let op = g.op_mut(n).expect("live input");
        debug_assert!(op_types::is_data(op.op_type()));
        let shape = Shape::new(a.dims.iter().copied());
        if let Some(d) = op.input_mut(0) {
            d.set_shape(shape.clone());
        }
        if let Some(d) = op.output_mut(0) {
            d.set_shape(shape);
        }
    }
    Ok(())
}

/// A model ready to run: compiled once (static inputs, or a loaded compiled model), or
/// compiled per input shapes (inputs with unknown dims).
pub enum Built {
    Fixed(Arc<Model>),
    PerShape(Box<ShapeSpecializedModel>),
}

impl Built {
    /// The inputs (dims as declared, -1 unknown), in run order.
    pub fn inputs(&self) -> Vec<InputSpec> {
        match self {
            Built::Fixed(m) => m.inputs().into_iter().cloned().collect(),
            Built::PerShape(m) => m.inputs().into_iter().cloned().collect(),
        }
    }

    /// The graph as given (a per-shape model) or as compiled.
    pub fn graph(&self) -> &ComputeGraph {
        match self {
            Built::Fixed(m) => m.graph(),
            Built::PerShape(m) => m.graph(),
        }
    }

    /// The model that runs `inputs` (for a per-shape model: compiled now unless cached).
    pub fn model_for(&self, inputs: &[Value]) -> Result<Arc<Model>, CliError> {
        match self {
            Built::Fixed(m) => Ok(m.clone()),
            Built::PerShape(m) => Ok(m.model_for(inputs)?),
        }
    }

    /// Puts named inputs in run order; errors name unknown or missing inputs.
    pub fn order_inputs(&self, named: &[(String, Value)]) -> Result<Vec<Value>, CliError> {
        Ok(match self {
            Built::Fixed(m) => m.order_inputs(named)?,
            Built::PerShape(m) => m.order_inputs(named)?,
        })
    }

    /// Compilations so far (a fixed model: 1).
    pub fn compilations(&self) -> usize {
        match self {
            Built::Fixed(_) => 1,
            Built::PerShape(m) => m.compilations(),
        }
    }
}

/// Loads the graph of `path` (not a compiled model) with `--shape` applied.
pub fn load_graph(path: &Path, shapes: &[String]) -> Result<ComputeGraph, CliError> {
    let shapes = parse(shapes)?;
    let (m, _) = model::load(path)?;
    shaped(path, m, &shapes)
}

/// [`load_graph`], an ONNX model's weights left in its mapped file, returned beside the graph
/// (`model::load_mapped`).
pub fn load_graph_mapped(
    path: &Path,
    shapes: &[String],
) -> Result<(ComputeGraph, Option<rge_formats::mmap::FileBytes>), CliError> {
    let shapes = parse(shapes)?;
    let (m, file) = model::load_mapped(path)?;
    Ok((shaped(path, m, &shapes)?, file))
}

/// The graph of `m` with `shapes` applied; errors name `path`.
fn shaped(path: &Path, m: model::Model, shapes: &[ShapeArg]) -> Result<ComputeGraph, CliError> {
    let mut g = super::run::graph_of(m);
    apply(&mut g, shapes)
        .map_err(|e| CliError::new(format!("{}: {}", path.display(), e.message)))?;
    Ok(g)
}

fn no_shapes_for_compiled(path: &Path, shapes: &[String]) -> Result<(), CliError> {
    match shapes.first() {
        Some(s) => Err(bad(
            s,
            format!(
                "{} is a compiled model: its input shapes were fixed when it was compiled (compile the source model with --shape)",
                path.display()
            ),
        )),
        None => Ok(()),
    }
}

/// Builds `path` for running: a compiled model is loaded; a model whose inputs are static once
/// `--shape` is applied is compiled now; one with inputs of unknown dims is compiled per input
/// shapes when run.
pub fn build(s: &Session, path: &Path, shapes: &[String]) -> Result<Built, CliError> {
    if rge_runtime::is_compiled_model(path) {
        no_shapes_for_compiled(path, shapes)?;
        return Ok(Built::Fixed(s.load_model(path)?));
    }
    let g = load_graph(path, shapes)?;
    if graph_inputs(&g)
        .iter()
        .any(|(_, spec)| is_dynamic_input(spec))
    {
        return Ok(Built::PerShape(Box::new(s.compile_graph_for_shapes(g)?)));
    }
    compile_showing_progress(s, g, path).map(Built::Fixed)
}

/// Compiles `g`, with a spinner on a terminal when the graph is large (`cli::progress`).
fn compile_showing_progress(
    s: &Session,
    g: ComputeGraph,
    path: &Path,
) -> Result<Arc<Model>, CliError> {
    let spinner = super::progress::compiling(g.total_node_count());
    let m = s
        .compile_graph(g)
        .map(Arc::new)
        .map_err(|e| CliError::new(format!("{}: {e}", path.display())));
    if let Some(sp) = spinner {
        sp.finish_and_clear();
    }
    m
}

/// Builds `path` once, with `--shape` applied (inputs left dynamic stay dynamic): what `rge
/// compile` writes.
pub fn build_once(s: &Session, path: &Path, shapes: &[String]) -> Result<Arc<Model>, CliError> {
    if rge_runtime::is_compiled_model(path) {
        no_shapes_for_compiled(path, shapes)?;
        return Ok(s.load_model(path)?);
    }
    let start = std::time::Instant::now();
    let g = load_graph(path, shapes)?;
    if s.engines().options().verbose || rge_compiler::stages::log_enabled_by_env() {
        let line = rge_compiler::stages::stage_log_line("parse", start.elapsed());
        eprintln!("{line}");
    }
    compile_showing_progress(s, g, path)
}
