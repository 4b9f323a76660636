//! Property tests: text and binary round trips over random ModelDefs.

mod strategies;

use bytes::Bytes;
use proptest::prelude::*;
use prost::Message;
use rge_formats::ge_proto::ModelDef;
use rge_formats::text_format::{format_float, parse_model_def, print_model_def};

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn text_round_trip(model in strategies::model_def()) {
        let text = print_model_def(&model);
        let parsed = parse_model_def(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&parsed, &model);
        prop_assert_eq!(print_model_def(&parsed), text);
    }

    #[test]
    fn binary_round_trip_agrees_with_text(model in strategies::model_def()) {
        let buf = Bytes::from(model.encode_to_vec());
        let decoded = ModelDef::decode(buf).unwrap();
        prop_assert_eq!(&decoded, &model);
        prop_assert_eq!(print_model_def(&decoded), print_model_def(&model));
    }

    #[test]
    fn float_text_round_trips(v in strategies::float()) {
        let s = format_float(v);
        let back: f32 = match s.as_str() {
            "inf" => f32::INFINITY,
            "-inf" => f32::NEG_INFINITY,
            _ => s.parse().unwrap(),
        };
        prop_assert_eq!(back.to_bits(), v.to_bits());
    }

    #[test]
    fn arbitrary_text_never_panics(text in "[ -~\\n\\t\u{80}-\u{10ffff}]{0,64}") {
        let _ = parse_model_def(&text);
    }
}
