//! The ONNX backend node tests whose ops are all in this family (plus the reference
//! interpreter's own Data/Const/Constant/Identity/NetOutput), run through the reference
//! interpreter of rge-conformance. Filter with RGE_NODE_FILTER=regex.

#[test]
fn onnx_node_tests() {
    let mut b = rge_kernels::KernelRegistryBuilder::new();
    rge_kernels_tensor::register(&mut b).expect("register");
    rge_conformance::check_family("tensor", &b.build());
}
