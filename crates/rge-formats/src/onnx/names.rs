//! Attribute names rge uses to keep what ONNX has and rge-ir has no field for, so that export
//! gives the model back. All start with `_onnx_`; an ONNX attribute with that prefix is refused.

use std::borrow::Cow;

use hashbrown::HashSet;

/// Output desc: the ONNX value name of this output (absent for an omitted optional output).
pub const ONNX_NAME: &str = "_onnx_name";
/// Desc: `dim_param` symbols by dim ("" where the dim has none); those dims are -1.
pub const DIM_PARAMS: &str = "_onnx_dim_params";
/// Desc: an encoded non-tensor `TypeProto` (sequence, map, optional, sparse, opaque).
pub const ONNX_TYPE: &str = "_onnx_type";
/// Node: `NodeProto.overload` when set.
pub const OVERLOAD: &str = "_onnx_overload";
/// Node or graph: the doc string when set.
pub const DOC_STRING: &str = "_onnx_doc_string";
/// Node or graph: `metadata_props` as a named bundle of string attributes.
pub const METADATA_PROPS: &str = "_onnx_metadata_props";
/// Node: the ONNX attribute each subgraph slot came from (`then_branch`, `body`; the elements
/// of a GRAPHS attribute are consecutive slots with the same name).
pub const SUBGRAPH_ATTRS: &str = "_onnx_subgraph_attrs";
/// Node: the names of its GRAPHS (list of graphs) attributes, empty ones included.
pub const SUBGRAPH_LISTS: &str = "_onnx_subgraph_lists";
/// Node: the number of its ONNX inputs, when outer-scope captures were appended after them.
pub const FORMAL_INPUTS: &str = "_onnx_formal_inputs";
/// Body Data node: stands for an outer-scope value (an implicit capture), not a formal input.
pub const CAPTURE: &str = "_onnx_capture";
/// Const node: the initializer is also listed as a graph input (an overridable default).
pub const GRAPH_INPUT: &str = "_onnx_graph_input";
/// Subgraph: the ONNX `GraphProto.name` of the body.
pub const GRAPH_NAME: &str = "_onnx_graph_name";
/// Root graph: `_onnx_opset_<domain>` = the imported opset version of that domain.
pub const OPSET_PREFIX: &str = "_onnx_opset_";
/// Prefix of every attribute above.
pub const RESERVED_PREFIX: &str = "_onnx_";
/// `NamedAttrs` name of a kept `TypeProto` attribute value (attr `bytes` = the encoding).
pub const TYPE_PROTO: &str = "onnx.TypeProto";
/// `NamedAttrs` name of a sparse tensor (attrs `values`, `indices`: tensors; `dims`: ints).
pub const SPARSE_TENSOR: &str = "onnx.SparseTensorProto";

/// Hands out names not in a set, as `<base>_<k>` with the smallest free k ≥ 1. Names claimed
/// from a borrowed source (the decoded model) are not copied.
#[derive(Debug, Default)]
pub(crate) struct Fresh<'a> {
    used: HashSet<Cow<'a, str>>,
}

impl<'a> Fresh<'a> {
    pub(crate) fn with_names(used: HashSet<Cow<'a, str>>) -> Self {
        Fresh { used }
    }
    pub(crate) fn with_capacity(n: usize) -> Self {
        Fresh {
            used: HashSet::with_capacity(n),
        }
    }
    /// Marks `name` used; false if it already was.
    pub(crate) fn claim(&mut self, name: &'a str) -> bool {
        if self.used.contains(name) {
            false
        } else {
            self.used.insert(Cow::Borrowed(name));
            true
        }
    }
    /// Marks an owned `name` used (no copy); false if it already was.
    pub(crate) fn claim_owned(&mut self, name: String) -> bool {
        if self.used.contains(name.as_str()) {
            false
        } else {
            self.used.insert(Cow::Owned(name));
            true
        }
    }
    /// A new name derived from `base`, marked used.
    pub(crate) fn fresh(&mut self, base: &str) -> String {
        let mut k = 1usize;
        loop {
            let c = format!("{base}_{k}");
            if !self.used.contains(c.as_str()) {
                self.used.insert(Cow::Owned(c.clone()));
                return c;
            }
            k += 1;
        }
    }
    /// `name` if free, else a fresh one; marked used either way.
    pub(crate) fn take(&mut self, name: &str) -> String {
        if self.claim_owned(name.to_string()) {
            name.to_string()
        } else {
            self.fresh(name)
        }
    }
}
