//! Shared test helpers: a hand-built ModelDef covering the printer rules.

#![allow(dead_code)]

use bytes::Bytes;
use rge_formats::ge_proto::{
    attr_def, attr_def::list_list_int::ListInt, attr_def::list_value::ListValueType,
    attr_def::ListListInt, attr_def::ListValue, AttrDef, DataType, GraphDef, ModelDef, OpDef,
    ShapeDef, TensorDef, TensorDescriptor,
};

pub fn attr(v: attr_def::Value) -> AttrDef {
    AttrDef { value: Some(v) }
}

pub fn sample_model() -> ModelDef {
    use attr_def::Value;

    let data_desc = TensorDescriptor {
        dtype: DataType::DtFloat as i32,
        shape: Some(ShapeDef { dim: vec![2, -1] }),
        layout: "ND".into(),
        attr: [
            (
                "origin_format".to_owned(),
                attr(Value::S(Bytes::from_static(b"ND"))),
            ),
            (
                "shape_range".to_owned(),
                attr(Value::ListListInt(ListListInt {
                    list_list_i: vec![ListInt { list_i: vec![2, 2] }, ListInt::default()],
                })),
            ),
        ]
        .into(),
        size: 24,
        device_type: "NPU".into(),
        real_dim_cnt: 2,
        ..Default::default()
    };

    let data = OpDef {
        name: "x".into(),
        r#type: "Data".into(),
        input: vec![String::new()],
        attr: [("index".to_owned(), attr(Value::I(0)))].into(),
        has_out_attr: true,
        output_desc: vec![data_desc.clone()],
        ..Default::default()
    };

    let add_attrs = [
        ("T", attr(Value::Dt(0))),
        ("_f0", attr(Value::F(0.0))),
        ("_f1", attr(Value::F(-128.0))),
        // The f32 nearest 28.7625046 (Rust prints it as 28.762505).
        ("_f2", attr(Value::F(28.762_505))),
        ("_f3", attr(Value::F(0.1))),
        ("b", attr(Value::B(false))),
        ("bt", attr(Value::Bt(Bytes::from_static(b"\x00\x01\xff")))),
        (
            "dims",
            attr(Value::List(ListValue {
                i: vec![1, -1],
                val_type: ListValueType::VtListInt as i32,
                ..Default::default()
            })),
        ),
        ("empty", AttrDef::default()),
        (
            "empty_lli",
            attr(Value::ListListInt(ListListInt::default())),
        ),
        (
            "fl",
            attr(Value::List(ListValue {
                f: vec![1e6, f32::INFINITY, f32::NEG_INFINITY, 1e-10, 0.5],
                b: vec![true, false],
                val_type: ListValueType::VtListFloat as i32,
                ..Default::default()
            })),
        ),
        (
            "g",
            attr(Value::G(GraphDef {
                name: "sub_0".into(),
                ..Default::default()
            })),
        ),
        (
            "s",
            attr(Value::S(Bytes::from_static(
                b"say \"hi\"\nit's\x12 \\ \xc3\xa9",
            ))),
        ),
        (
            "td",
            attr(Value::Td(TensorDescriptor {
                shape: Some(ShapeDef::default()),
                ..Default::default()
            })),
        ),
        (
            "value",
            attr(Value::T(TensorDef {
                desc: Some(TensorDescriptor {
                    dtype: 99,
                    ..Default::default()
                }),
                data: Bytes::from_static(&[0, 0, 128, 63]),
            })),
        ),
    ];

    let add = OpDef {
        name: "add".into(),
        r#type: "Add".into(),
        input: vec!["x:0".into(), String::new(), "c:-1".into()],
        attr: add_attrs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        id: 1,
        input_desc: vec![data_desc, TensorDescriptor::default()],
        subgraph_name: vec!["sub_0".into()],
        ..Default::default()
    };

    ModelDef {
        graph: vec![
            GraphDef {
                name: "root".into(),
                input: vec!["x:0".into()],
                output: vec!["add:0".into()],
                op: vec![data, add],
                attr: [(
                    "_session_graph_id".to_owned(),
                    attr(Value::S(Bytes::from_static(b"-1_0"))),
                )]
                .into(),
                ..Default::default()
            },
            GraphDef {
                name: "sub_0".into(),
                ..Default::default()
            },
        ],
        attr: [
            ("memory_size".to_owned(), attr(Value::I(0))),
            (
                "target_type".to_owned(),
                attr(Value::S(Bytes::from_static(b"MINI"))),
            ),
        ]
        .into(),
        ..Default::default()
    }
}

/// The exact text C++ `TextFormat::Print` writes for [`sample_model`].
pub const SAMPLE_TEXT: &str = r#"graph {
  name: "root"
  input: "x:0"
  output: "add:0"
  op {
    name: "x"
    type: "Data"
    input: ""
    attr {
      key: "index"
      value {
        i: 0
      }
    }
    has_out_attr: true
    output_desc {
      dtype: DT_FLOAT
      shape {
        dim: 2
        dim: -1
      }
      layout: "ND"
      attr {
        key: "origin_format"
        value {
          s: "ND"
        }
      }
      attr {
        key: "shape_range"
        value {
          list_list_int {
            list_list_i {
              list_i: 2
              list_i: 2
            }
            list_list_i {
            }
          }
        }
      }
      size: 24
      device_type: "NPU"
      real_dim_cnt: 2
    }
  }
  op {
    name: "add"
    type: "Add"
    input: "x:0"
    input: ""
    input: "c:-1"
    attr {
      key: "T"
      value {
        dt: 0
      }
    }
    attr {
      key: "_f0"
      value {
        f: 0
      }
    }
    attr {
      key: "_f1"
      value {
        f: -128
      }
    }
    attr {
      key: "_f2"
      value {
        f: 28.7625046
      }
    }
    attr {
      key: "_f3"
      value {
        f: 0.1
      }
    }
    attr {
      key: "b"
      value {
        b: false
      }
    }
    attr {
      key: "bt"
      value {
        bt: "\000\001\377"
      }
    }
    attr {
      key: "dims"
      value {
        list {
          i: 1
          i: -1
          val_type: VT_LIST_INT
        }
      }
    }
    attr {
      key: "empty"
      value {
      }
    }
    attr {
      key: "empty_lli"
      value {
        list_list_int {
        }
      }
    }
    attr {
      key: "fl"
      value {
        list {
          f: 1e+06
          f: inf
          f: -inf
          f: 1e-10
          f: 0.5
          b: true
          b: false
          val_type: VT_LIST_FLOAT
        }
      }
    }
    attr {
      key: "g"
      value {
        g {
          name: "sub_0"
        }
      }
    }
    attr {
      key: "s"
      value {
        s: "say \"hi\"\nit\'s\022 \\ \303\251"
      }
    }
    attr {
      key: "td"
      value {
        td {
          shape {
          }
        }
      }
    }
    attr {
      key: "value"
      value {
        t {
          desc {
            dtype: 99
          }
          data: "\000\000\200?"
        }
      }
    }
    id: 1
    input_desc {
      dtype: DT_FLOAT
      shape {
        dim: 2
        dim: -1
      }
      layout: "ND"
      attr {
        key: "origin_format"
        value {
          s: "ND"
        }
      }
      attr {
        key: "shape_range"
        value {
          list_list_int {
            list_list_i {
              list_i: 2
              list_i: 2
            }
            list_list_i {
            }
          }
        }
      }
      size: 24
      device_type: "NPU"
      real_dim_cnt: 2
    }
    input_desc {
    }
    subgraph_name: "sub_0"
  }
  attr {
    key: "_session_graph_id"
    value {
      s: "-1_0"
    }
  }
}
graph {
  name: "sub_0"
}
attr {
  key: "memory_size"
  value {
    i: 0
  }
}
attr {
  key: "target_type"
  value {
    s: "MINI"
  }
}
"#;
