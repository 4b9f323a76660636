//! Fuzzes ONNX import: any bytes import or fail with an error (never a panic), and whatever
//! imports exports, and re-imports as an equal model.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use rge_formats::onnx;

fuzz_target!(|data: &[u8]| {
    // "<fuzz>" has no directory: external data is refused, never read from the disk.
    let Ok(m) = onnx::import_bytes(Bytes::copy_from_slice(data), "<fuzz>") else {
        return;
    };
    let bytes = onnx::export(&m)
        .expect("an imported model exports")
        .encode_to_vec();
    let again = onnx::import_bytes(Bytes::from(bytes.clone()), "<fuzz-export>")
        .expect("an exported model imports");
    // Graph equality compares float attributes with `==`, which a NaN never passes; then the
    // second export must at least be byte-identical to the first.
    if m != again {
        let bytes2 = onnx::export(&again).expect("re-export").encode_to_vec();
        assert!(bytes == bytes2, "round trip differs");
    }
});
