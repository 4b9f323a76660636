//! Attribute names the compiler reads and writes. GE's names where GE has one; the rest are
//! rge's (marked).

/// With [`SPECIFIED_KERNEL_LIB_NAME`]: the node's engine is fixed by the user.
pub const SPECIFIED_ENGINE_NAME: &str = "_specified_engine_name";
pub const SPECIFIED_KERNEL_LIB_NAME: &str = "_specified_kernel_lib_name";
/// The placed kernel library (GE's `SetOpKernelLibName` also writes it as this attribute).
pub const OP_KERNEL_LIB_NAME: &str = "_ge_attr_op_kernel_lib_name";
/// The placed engine and kernel library, which restore a placement after reloading a dump.
pub const LXFUSION_ENGINE_NAME: &str = "_lxfusion_engine_name";
pub const LXFUSION_OP_KERNEL_LIB_NAME: &str = "_lxfusion_op_kernel_lib_name";
/// rge: bool (or int 1) — run this node on the `host` engine (GE's hostExecFlag).
pub const HOST_EXEC_FLAG: &str = "_host_exec_flag";
/// rge: a data-flow resource handle (string or int); nodes sharing one are put on one engine.
pub const DATA_FLOW_HANDLE: &str = "_data_flow_handle";
/// rge: int — the pipeline stage of a node; partitions never span two stages.
pub const STAGE_LEVEL: &str = "_stage_level";
/// A user stream label; partitions never span two labels, and a label gets its own stream.
pub const STREAM_LABEL: &str = rge_ir::attr_names::STREAM_LABEL;

// End / PlaceHolder attributes (ge-reference §4.4).
pub const PEER_INDEX: &str = "peerIndex";
pub const PARENT_OP_TYPE: &str = "parentOpType";
pub const END_REAR_NODE_ENGINE_NAME: &str = "end_rear_node_engine_name";
pub const PARENT_NODE_NAME: &str = "_parentNodeName";
pub const PLD_FRONT_NODE_ENGINE_NAME: &str = "pld_front_node_engine_name";
pub const PARENT_ID: &str = "parentId";
pub const ANCHOR_INDEX: &str = "anchorIndex";
pub const PEER_NODE_NAME: &str = "_peerNodeName";
pub const TASK_L2_FUSION_INFO: &str = "_task_L2FusionInfo";
pub const DATA_ANCHOR_INDEX_FOR_LXFUSION: &str = "_data_anchor_index_for_lxfusion";

// Partition graph attributes (ge-reference §4.6).
pub const PARENT_GRAPH_NAME: &str = "_parent_graph_name";
pub const IS_ROOT_GRAPH: &str = "_is_root_graph";
pub const IS_UNKNOWN_SHAPE: &str = "_is_unknown_shape";
pub const OWNER_GRAPH_IS_UNKNOWN: &str = "OwnerGraphIsUnknown";

/// Op types of the partition boundary nodes.
pub const END: &str = "End";
pub const PLACEHOLDER: &str = "PlaceHolder";

/// The engine name of data-like source nodes while partitioning, and of the input graph.
pub const ENGINE_DEFAULT_DATA: &str = "ENGINE_DEFAULT_DATA";
pub const INPUT_NODES_SUBGRAPH: &str = "inputNodesSubGraph";
pub const INPUT_NODE_GRAPH: &str = "inputNodeGraph";
