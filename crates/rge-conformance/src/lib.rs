//! The ONNX backend node tests for rge: reading test folders (`model.onnx`,
//! `test_data_set_*/input_*.pb`, `output_*.pb`), comparing values with ONNX Runtime's rule
//! (dtype and shape equal, |got − want| ≤ atol + rtol·|want|, NaN equal to NaN), and a small
//! reference interpreter that runs a graph node by node with a kernel registry (no compiler,
//! no memory plan) so kernel crates can check themselves before the runtime exists.

pub mod compare;
pub mod data;
pub mod distribution;
pub mod reference;
pub mod suite;

pub use compare::{compare_values, Tolerance};
pub use data::{load_test, NodeTest, TestDataSet};
pub use distribution::{compare_by_distribution, parse_rules, DistRule};
pub use reference::interpret;
pub use suite::{
    check_family, list_tests, node_tests_dir, op_types_of, run_suite, run_suite_by, run_suite_with,
    run_test_by, Coverage, Outcome, Runner, SuiteReport,
};
