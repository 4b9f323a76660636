//! Old op versions rewritten into newer ones before inference, as onnx's version converter
//! adapters do (`onnx/version_converter/adapters`): the one place where an old version becomes
//! a newer one. A rewritten node keeps its type, name and ports; its attributes take the newer
//! version's form and its own opset ([`OpDesc::opset`]) becomes that version's, which the
//! inference pass and kernel selection read before the graph's import. So the newer version's
//! infer function and kernel serve it, and no kernel carries the old form.
//!
//! Rewritten (default domain only; the version is the one serving the node's opset):
//!
//! | old | new | rewrite |
//! |---|---|---|
//! | Cast 1 | 6 | `to` as a type name (`"FLOAT"`) → its `TensorProto` code |
//! | Upsample 1 | 7 | `width_scale`, `height_scale` → `scales = [1, 1, h, w]`; mode `bilinear` → `linear` |
//! | Split 1 | 2 | without a `split` input (the attribute form) |
//! | Add, Sub, Mul, Div 1, 6; And, Or, Xor, Equal, Less, Greater, Pow 1 | 7 | without `axis`, `broadcast` is numpy broadcasting of B to A (the trailing dims): the flags go |
//! | Gemm 1, 6 | 7 | `broadcast` goes (7 broadcasts C) |
//! | Pad 1 | 2 | `paddings` → `pads` |
//! | LpPool 1, GlobalLpPool 1 | 2 | the float `p` → an int |
//! | BatchNormalization 1, 6 | 7 | `is_test = 1`, or one output: inference, the flags go |
//! | Dropout 1, 6 | 7 | `is_test = 1`: inference, the flags go |
//!
//! `consumed_inputs` (a memory hint of version 1) is dropped wherever it appears. What is left
//! in its old form is served by the old version's prototype: binary ops with an explicit
//! `axis` (their infer aligns B at `axis`, as the kernels' legacy broadcast does), training
//! BatchNormalization and Dropout of versions 1 and 6, Split 1 with a `split` input (of the
//! data's type), Tile 1, and versions whose kernels read
//! the old attributes themselves (Reshape 1, Slice 1, TopK 1, Concat 1 …).

use rge_ir::{AttrValue, ComputeGraph, OpDesc};

use crate::error::OpsError;
use crate::registry::normalize_domain;

const CONSUMED_INPUTS: &str = "consumed_inputs";

/// Binary ops whose versions before 7 have `broadcast` and `axis`.
const LEGACY_BROADCAST: &[&str] = &[
    "Add", "Sub", "Mul", "Div", "And", "Or", "Xor", "Equal", "Less", "Greater", "Pow",
];

/// Rewrites every old node of `graph` (root and subgraphs) whose version has a newer form;
/// `default_opset` is the graph's import of the default domain, for nodes without their own.
/// Returns how many were rewritten. An attribute combination the old version forbids is an
/// error naming the node.
pub fn upgrade_graph(graph: &mut ComputeGraph, default_opset: i64) -> Result<usize, OpsError> {
    let root = graph.root();
    let mut count = 0;
    for n in graph.all_nodes(root) {
        let linked = |i: usize| {
            graph
                .node(n)
                .is_some_and(|node| node.peer_of_input(i).is_some())
        };
        let has_split_input = linked(1);
        let Some(op) = graph.op_mut(n) else { continue };
        if !normalize_domain(op.domain()).is_empty() {
            continue;
        }
        let opset = op.opset().unwrap_or(default_opset);
        if opset >= 7 {
            continue;
        }
        if upgrade_op(op, opset, has_split_input).map_err(|message| OpsError::Node {
            node: op.name().to_string(),
            op_type: op.op_type().to_string(),
            message,
        })? {
            count += 1;
        }
    }
    Ok(count)
}

/// Rewrites one node of opset `opset` (< 7); true if it was. `has_input1`: input 1 is linked.
pub fn upgrade_op(op: &mut OpDesc, opset: i64, has_input1: bool) -> Result<bool, String> {
    let new_version = match op.op_type() {
        "Cast" if opset < 6 => {
            cast_to_code(op)?;
            6
        }
        "Upsample" => {
            upsample_scales(op)?;
            7
        }
        "Split" if opset < 2 => {
            if has_input1 && op.attrs().contains("split") {
                return Err("gives `split` both as an input and as an attribute".into());
            }
            if has_input1 {
                // A `split` input of the data's type: the old version's own form.
                return Ok(drop_consumed(op));
            }
            2
        }
        t if LEGACY_BROADCAST.contains(&t) => {
            let broadcast = int_attr(op, "broadcast")?.unwrap_or(0);
            if broadcast != 0 && broadcast != 1 {
                return Err(format!("`broadcast` is {broadcast}; it must be 0 or 1"));
            }
            if broadcast == 1 && op.attrs().contains("axis") {
                // B aligned at `axis`: left to the old version's prototype and kernels.
                return Ok(drop_consumed(op));
            }
            op.attrs_mut().remove("broadcast");
            op.attrs_mut().remove("axis");
            7
        }
        "Gemm" => {
            let broadcast = int_attr(op, "broadcast")?.unwrap_or(0);
            if broadcast != 0 && broadcast != 1 {
                return Err(format!("`broadcast` is {broadcast}; it must be 0 or 1"));
            }
            op.attrs_mut().remove("broadcast");
            7
        }
        "Pad" if opset < 2 => {
            if op.attrs().contains("pads") {
                return Err("version 1 takes `paddings`, not `pads`".into());
            }
            if let Some(p) = op.attrs_mut().remove("paddings") {
                op.attrs_mut().set("pads", p);
            }
            2
        }
        "LpPool" | "GlobalLpPool" if opset < 2 => {
            // Version 1's `p` is a float (default 2); 2's an int.
            match op.attrs().get("p") {
                None | Some(AttrValue::Int(_)) => {}
                Some(AttrValue::Float(p)) if p.fract() == 0.0 && *p >= 1.0 => {
                    let p = *p as i64;
                    op.attrs_mut().set("p", p);
                }
                Some(AttrValue::Float(p)) => {
                    return Err(format!("`p` = {p}: rge's kernels take a whole p ≥ 1"))
                }
                Some(other) => return Err(format!("`p` is {}, not a float", other.kind_name())),
            }
            2
        }
        "BatchNormalization" => {
            let is_test = int_attr(op, "is_test")?.unwrap_or(0);
            if is_test == 0 && op.output_count() > 1 {
                // Training with running statistics: the old version's own semantics.
                return Ok(drop_consumed(op));
            }
            if is_test == 1 && op.output_count() > 1 {
                return Err(format!(
                    "`is_test` = 1 (inference) with {} outputs; inference has one",
                    op.output_count()
                ));
            }
            op.attrs_mut().remove("is_test");
            7
        }
        "Dropout" => {
            if int_attr(op, "is_test")?.unwrap_or(0) == 0 {
                return Ok(drop_consumed(op));
            }
            op.attrs_mut().remove("is_test");
            7
        }
        _ => return Ok(drop_consumed(op)),
    };
    op.attrs_mut().remove(CONSUMED_INPUTS);
    op.set_opset(Some(new_version));
    Ok(true)
}

/// Drops `consumed_inputs`; the node stays at its version (not counted as rewritten).
fn drop_consumed(op: &mut OpDesc) -> bool {
    op.attrs_mut().remove(CONSUMED_INPUTS);
    false
}

fn int_attr(op: &OpDesc, name: &str) -> Result<Option<i64>, String> {
    match op.attrs().get(name) {
        None => Ok(None),
        Some(AttrValue::Int(v)) => Ok(Some(*v)),
        Some(AttrValue::Bool(b)) => Ok(Some(i64::from(*b))),
        Some(other) => Err(format!("`{name}` is {}, not an int", other.kind_name())),
    }
}

/// Cast 1's `to` names the type (`TensorProto.DataType` names, e.g. `"FLOAT"`).
fn cast_to_code(op: &mut OpDesc) -> Result<(), String> {
    let code = match op.attrs().get("to") {
        Some(AttrValue::String(s)) => onnx_type_code(s)
            .ok_or_else(|| format!("`to` = {s:?} is not an ONNX data type name"))?,
        Some(AttrValue::Int(v)) => *v,
        Some(AttrValue::DataType(_)) => return Ok(()),
        Some(other) => return Err(format!("`to` is {}, not a type name", other.kind_name())),
        None => return Err("needs the attribute `to`".into()),
    };
    op.attrs_mut().set("to", code);
    Ok(())
}

/// The `TensorProto.DataType` code of a type name of Cast 1 (`"FLOAT"`, `"float"`).
fn onnx_type_code(name: &str) -> Option<i64> {
    const NAMES: [&str; 17] = [
        "UNDEFINED",
        "FLOAT",
        "UINT8",
        "INT8",
        "UINT16",
        "INT16",
        "INT32",
        "INT64",
        "STRING",
        "BOOL",
        "FLOAT16",
        "DOUBLE",
        "UINT32",
        "UINT64",
        "COMPLEX64",
        "COMPLEX128",
        "BFLOAT16",
    ];
    let upper = name.to_ascii_uppercase();
    NAMES
        .iter()
        .position(|&n| n == upper)
        .filter(|&i| i > 0)
        .map(|i| i as i64)
}

/// Upsample 1: `height_scale`/`width_scale` (both required, ≥ 1) on an NCHW input.
fn upsample_scales(op: &mut OpDesc) -> Result<(), String> {
    let scale = |name: &str| -> Result<f32, String> {
        match op.attrs().get(name) {
            Some(AttrValue::Float(v)) => Ok(*v),
            Some(AttrValue::Int(v)) => Ok(*v as f32),
            Some(other) => Err(format!("`{name}` is {}, not a float", other.kind_name())),
            None => Err(format!("version 1 needs the attribute `{name}`")),
        }
    };
    let (h, w) = (scale("height_scale")?, scale("width_scale")?);
    if h.is_nan() || w.is_nan() || h < 1.0 || w < 1.0 {
        return Err(format!(
            "`height_scale` = {h} and `width_scale` = {w}: version 1 scales up (each ≥ 1)"
        ));
    }
    let mode = match op.attrs().get("mode") {
        None => "nearest".to_string(),
        Some(AttrValue::String(m)) if m == "nearest" => "nearest".into(),
        Some(AttrValue::String(m)) if m == "bilinear" => "linear".into(),
        Some(AttrValue::String(m)) => {
            return Err(format!(
                "`mode` = {m:?}: version 1 has `nearest` and `bilinear`"
            ))
        }
        Some(other) => return Err(format!("`mode` is {}, not a string", other.kind_name())),
    };
    let attrs = op.attrs_mut();
    attrs.remove("height_scale");
    attrs.remove("width_scale");
    attrs.set("scales", AttrValue::ListFloat(vec![1.0, 1.0, h, w]));
    attrs.set("mode", mode);
    Ok(())
}
