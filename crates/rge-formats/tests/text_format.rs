//! Golden output, round trips, parser leniency and parser errors.

mod common;

use bytes::Bytes;
use prost::Message;
use rge_formats::ge_proto::{
    attr_def::Value, AttrDef, DataType, GraphDef, ModelDef, TensorDescriptor,
};
use rge_formats::text_format::{parse_model_def, print_model_def, TextFormat, TextFormatError};

use common::{sample_model, SAMPLE_TEXT};

#[test]
fn golden_print() {
    let text = print_model_def(&sample_model());
    if text != SAMPLE_TEXT {
        for (i, (a, b)) in text.lines().zip(SAMPLE_TEXT.lines()).enumerate() {
            assert_eq!(a, b, "first difference at line {}", i + 1);
        }
        assert_eq!(text.lines().count(), SAMPLE_TEXT.lines().count());
    }
    assert_eq!(text, SAMPLE_TEXT);
}

#[test]
fn golden_parse_round_trip() {
    let model = sample_model();
    assert_eq!(parse_model_def(SAMPLE_TEXT).unwrap(), model);
    assert_eq!(
        print_model_def(&parse_model_def(SAMPLE_TEXT).unwrap()),
        SAMPLE_TEXT
    );
}

#[test]
fn binary_round_trip() {
    let model = sample_model();
    let buf = Bytes::from(model.encode_to_vec());
    let decoded = ModelDef::decode(buf.clone()).unwrap();
    assert_eq!(decoded, model);
    // Decoding from `Bytes` shares the buffer for bytes fields (no copy).
    let Some(Value::T(t)) = &decoded.graph[0].op[1].attr["value"].value else {
        panic!("weight attr missing");
    };
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    assert!(range.contains(&(t.data.as_ptr() as usize)));
    // Deterministic: re-encoding gives the same bytes.
    assert_eq!(decoded.encode_to_vec(), buf.as_ref());
}

#[test]
fn empty_model_prints_nothing() {
    assert_eq!(print_model_def(&ModelDef::default()), "");
    assert_eq!(parse_model_def("").unwrap(), ModelDef::default());
    assert_eq!(
        parse_model_def("  # only a comment\n").unwrap(),
        ModelDef::default()
    );
}

#[test]
fn other_messages_have_text_format() {
    let td = TensorDescriptor {
        dtype: DataType::DtInt64 as i32,
        ..Default::default()
    };
    assert_eq!(td.to_text_format(), "dtype: DT_INT64\n");
    assert_eq!(TensorDescriptor::from_text_format("dtype: 8").unwrap(), td);
}

#[test]
fn lenient_input() {
    let text = r#"
        # comment
        attr < key: 'k' value: { i: 0x10 } >;
        graph: { op [ { name: "a" "b" type: 'T\x41\101\u00e9' }, { name: "c" } ], name: "g" }
        graph { attr [ { key: "f" value { list { f: [1e3, -inf, nan, 2, .5f, 1., 2f, -Infinity] b: [t, True, 0, f] val_type: 3 } } } ] }
        graph { op { input_desc { dtype: 7 shape: {} } output_desc { dtype: DT_BOOL } input: [] } }
    "#;
    let m = parse_model_def(text).unwrap();
    assert_eq!(m.attr["k"].value, Some(Value::I(16)));
    assert_eq!(m.graph[0].name, "g");
    assert_eq!(m.graph[0].op[0].name, "ab");
    assert_eq!(m.graph[0].op[0].r#type, "TAAé");
    assert_eq!(m.graph[0].op[1].name, "c");
    let Some(Value::List(l)) = &m.graph[1].attr["f"].value else {
        panic!()
    };
    assert_eq!(l.f[..2], [1000.0, f32::NEG_INFINITY]);
    assert!(l.f[2].is_nan());
    assert_eq!(l.f[3..], [2.0, 0.5, 1.0, 2.0, f32::NEG_INFINITY]);
    assert_eq!(l.b, [true, true, false, false]);
    assert_eq!(l.val_type, 3);
    let op = &m.graph[2].op[0];
    assert_eq!(op.input_desc[0].dtype, DataType::DtInt32 as i32);
    assert!(op.input_desc[0].shape.is_some());
    assert_eq!(op.output_desc[0].dtype, DataType::DtBool as i32);
}

#[test]
fn parse_numbers_and_ranges() {
    let m = parse_model_def(
        "version: 4294967295 attr { key: \"a\" value { i: -9223372036854775808 } }",
    )
    .unwrap();
    assert_eq!(m.version, u32::MAX);
    assert_eq!(m.attr["a"].value, Some(Value::I(i64::MIN)));
    // Float fields read a decimal integer and round to f32; huge values become inf.
    let m = parse_model_def(
        "attr { key: \"a\" value { f: 16777217 } } attr { key: \"b\" value { f: 1e39 } }",
    )
    .unwrap();
    assert_eq!(m.attr["a"].value, Some(Value::F(16_777_216.0)));
    assert_eq!(m.attr["b"].value, Some(Value::F(f32::INFINITY)));
    // Unknown enum numbers are kept and printed as numbers (proto3 open enums).
    let m = parse_model_def("graph { op { input_desc { dtype: -5 } } }").unwrap();
    assert_eq!(m.graph[0].op[0].input_desc[0].dtype, -5);
    assert!(print_model_def(&m).contains("dtype: -5\n"));
}

#[test]
fn map_entries_last_wins_and_defaults_print() {
    let m = parse_model_def(
        "attr { key: \"a\" value { i: 1 } } attr { key: \"a\" value { i: 2 } } attr { }",
    )
    .unwrap();
    assert_eq!(m.attr.len(), 2);
    assert_eq!(m.attr["a"].value, Some(Value::I(2)));
    assert_eq!(m.attr[""], AttrDef::default());
    // C++ prints key and value of a map entry even when they are defaults.
    assert!(print_model_def(&m).starts_with("attr {\n  key: \"\"\n  value {\n  }\n}\n"));
}

fn err(text: &str) -> TextFormatError {
    match parse_model_def(text) {
        Ok(m) => panic!("parsed {text:?} into {m:?}"),
        Err(e) => e,
    }
}

#[test]
fn error_unknown_field_names_field_and_position() {
    let e = err("graph {\n  name: \"g\"\n  nmae: \"x\"\n}\n");
    assert_eq!((e.line, e.column), (3, 3));
    assert!(
        e.message.contains("\"nmae\"") && e.message.contains("ge.proto.GraphDef"),
        "{e}"
    );
    assert_eq!(e.to_string(), format!("3:3: {}", e.message));
}

#[test]
fn error_truncated_input() {
    let full = print_model_def(&sample_model());
    // Every proper prefix that cuts a token or leaves a block open must fail
    // cleanly; none may panic.
    for (i, _) in full.char_indices().step_by(7) {
        let _ = parse_model_def(&full[..i]);
    }
    let e = err("graph {\n  op {\n    name: \"a\"\n");
    assert!(e.message.contains("end of input"), "{e}");
    err("graph { name: ");
    err("graph { name: \"abc");
    err("graph { name ");
}

#[test]
fn error_bad_escapes_and_literals() {
    for text in [
        r#"name: "\q""#,
        r#"name: "\x""#,
        r#"name: "\400""#,
        r#"name: "\uD800""#,
        r#"name: "\U00110000""#,
        r#"name: "\377""#, // valid escape, but a string field must be UTF-8
        "name: \"a\nb\"",
        "version: -1",
        "version: 4294967296",
        "version: 1.5",
        "attr { key: \"a\" value { i: 9223372036854775808 } }",
        "attr { key: \"a\" value { f: 0x10 } }",
        "attr { key: \"a\" value { b: 2 } }",
        "graph { op { input_desc { dtype: DT_NOPE } } }",
        "graph { op { input_desc { dtype: 2147483648 } } }",
        "name 1",
        "name: [\"a\"]",
        "graph [ { name: \"a\" } { name: \"b\" } ]",
        "graph { name: \"a\" }}",
        "graph ( }",
        "name: \"a\" name: \"b\"",
        "attr { key: \"a\" value { i: 1 f: 2 } }",
        "attr { key: \"a\" key: \"b\" }",
        "attr { key: \"a\" other: 1 }",
        "[ext.field]: 1",
        "name: 09",
        "name: \"\\",
        "\u{1}",
    ] {
        let e = err(text);
        assert!(e.line >= 1 && e.column >= 1, "{text:?}: {e}");
    }
}

#[test]
fn error_too_deep() {
    // AttrDef.g -> GraphDef.attr -> AttrDef ... nests without bound.
    let depth = 200;
    let mut text = String::new();
    for _ in 0..depth {
        text.push_str("attr { key: \"a\" value { g { ");
    }
    let e = err(&text);
    assert!(e.message.contains("deeper than 100"), "{e}");
    // Exactly at the limit is fine: 3 * 33 + 1 = 100 nested messages.
    let mut ok = String::new();
    for _ in 0..33 {
        ok.push_str("attr { key: \"a\" value { g { ");
    }
    ok.push_str("attr { } ");
    ok.push_str(&"} } } ".repeat(33));
    assert!(parse_model_def(&ok).is_ok());
    ok.insert_str(0, "graph { ");
    ok.push('}');
    assert!(err(&ok).message.contains("deeper than 100"));
}

#[test]
fn no_panic_on_garbage() {
    let inputs = [
        "graph { op { input: \"\\",
        "<",
        ">",
        "{",
        "}",
        ":",
        "-",
        "--1",
        "- inf",
        "\"",
        "'",
        "graph: [",
        "graph: [ {",
        "graph [ ,",
        "attr { value { list { f: [ - ] } } }",
        "attr { value { list { i: [1,,2] } } }",
        "version: 0x",
        "version: 0xffffffffffffffffff",
        "attr{key:\"\"value{f:-nan}}",
        "\u{feff}graph {}",
        "graph { name: \"\u{0}\" }",
    ];
    for text in inputs {
        let _ = parse_model_def(text);
    }
    // Random byte soup built from the token alphabet.
    let alphabet = [
        "graph", "{", "}", "<", ">", "[", "]", ":", ",", ";", "-", "\"x\"", "'\\0'", "1", "1.5e",
        "0x", "attr", "key", "value", "list", "f", "i", "nan", "#c\n", " ", "op", "dtype",
    ];
    let mut seed: u64 = 0x1234_5678;
    for _ in 0..2000 {
        let mut s = String::new();
        for _ in 0..24 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s.push_str(alphabet[(seed >> 33) as usize % alphabet.len()]);
        }
        let _ = parse_model_def(&s);
    }
}

#[test]
fn graph_def_text_round_trip() {
    let g = GraphDef {
        name: "g\u{1}\u{7f}\u{10ffff}".into(),
        ..Default::default()
    };
    let text = g.to_text_format();
    assert_eq!(text, "name: \"g\\001\\177\\364\\217\\277\\277\"\n");
    assert_eq!(GraphDef::from_text_format(&text).unwrap(), g);
}
