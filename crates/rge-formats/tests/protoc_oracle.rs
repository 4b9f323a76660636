//! Compares the printer with the real C++ `TextFormat::Print`, as run by
//! `protoc --decode=ge.proto.ModelDef` (libprotobuf). Needs `protoc` on PATH,
//! so these tests are ignored by default:
//!
//! ```text
//! cargo test -p rge-formats --test protoc_oracle -- --ignored
//! ```

mod common;
mod strategies;

use std::io::Write;
use std::process::{Command, Stdio};

use bytes::Bytes;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use prost::Message;
use rge_formats::ge_proto::{attr_def, AttrDef, ModelDef};
use rge_formats::text_format::print_model_def;

fn protoc_decode(model: &ModelDef) -> String {
    let proto_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/proto");
    let mut child = Command::new("protoc")
        .args(["-I", proto_dir, "--decode=ge.proto.ModelDef", "ge_ir.proto"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("protoc must be on PATH for the oracle tests");
    let bin = model.encode_to_vec();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bin));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "protoc failed");
    String::from_utf8(out.stdout).expect("protoc prints ASCII")
}

/// Asserts that both printers agree; returns the length of the text.
fn assert_same(model: &ModelDef) -> usize {
    let ours = print_model_def(model);
    let theirs = protoc_decode(model);
    if ours != theirs {
        for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
            assert_eq!(a, b, "first difference at line {}", i + 1);
        }
        assert_eq!(ours, theirs);
    }
    ours.len()
}

#[test]
#[ignore = "needs protoc"]
fn sample_matches_cpp() {
    assert_eq!(protoc_decode(&common::sample_model()), common::SAMPLE_TEXT);
}

#[test]
#[ignore = "needs protoc"]
fn random_models_match_cpp() {
    let mut runner = TestRunner::new(Config::default());
    let strategy = strategies::model_def();
    // Batch several random models per protoc run, as graphs of one model.
    let mut compared = 0;
    for _ in 0..40 {
        let mut model = ModelDef::default();
        for _ in 0..8 {
            let m = strategy.new_tree(&mut runner).unwrap().current();
            model.graph.extend(m.graph);
            model.attr.extend(m.attr);
            if model.attr_groups.is_none() {
                model.attr_groups = m.attr_groups;
            }
            if model.name.is_empty() {
                model.name = m.name;
                model.version = m.version;
                model.custom_version = m.custom_version;
            }
        }
        compared += assert_same(&model);
    }
    eprintln!("compared {compared} bytes of text");
    assert!(
        compared > 100_000,
        "random models are too small to be a useful check"
    );
}

#[test]
#[ignore = "needs protoc"]
fn floats_match_cpp() {
    // Random bit patterns (all classes, NaN included), plus every subnormal
    // boundary and a sweep of short decimals.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut floats: Vec<f32> = (0..300_000)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            f32::from_bits((seed >> 32) as u32)
        })
        .collect();
    floats.extend((0..20_000).map(|i| i as f32 / 1000.0));
    floats.extend((0..2_000).map(f32::from_bits));
    floats.extend((0..2_000).map(|i| f32::from_bits(0x0080_0000 - i)));
    floats.extend([
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        -0.0,
        2_097_150.6,
        1e6,
        1e-5,
        1e-4,
    ]);
    let list = attr_def::ListValue {
        f: floats,
        ..Default::default()
    };
    let mut model = ModelDef::default();
    model.attr.insert(
        "f".into(),
        AttrDef {
            value: Some(attr_def::Value::List(list)),
        },
    );
    model.attr.insert(
        "one".into(),
        AttrDef {
            value: Some(attr_def::Value::F(-0.0)),
        },
    );
    model.attr.insert(
        "bytes".into(),
        AttrDef {
            value: Some(attr_def::Value::S(Bytes::from(
                (0..=255).collect::<Vec<u8>>(),
            ))),
        },
    );
    assert_same(&model);
}
