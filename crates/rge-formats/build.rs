//! Compiles `proto/ge_ir.proto` and `proto/onnx.proto` with prost.
//!
//! The .proto files are parsed by `protox` (a pure-Rust protobuf compiler), so no
//! system `protoc` is needed.

use std::error::Error;

const PROTOS: [&str; 2] = ["proto/ge_ir.proto", "proto/onnx.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    for p in PROTOS {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let fds = protox::compile(PROTOS, ["proto"])?;

    let mut config = prost_build::Config::new();
    // Weights (GE TensorDef.data, ONNX raw_data) and every other bytes field are
    // `bytes::Bytes`, so decoding from a `Bytes` buffer does not copy them.
    config.bytes(["."]);
    // GE output is deterministic: maps iterate sorted by key.
    config.btree_map(["."]);
    config.compile_fds(fds)?;
    Ok(())
}
