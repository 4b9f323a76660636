//! Binary ModelDef: read; on success, write (dump mode), read again, write again: the model and
//! the bytes must not change.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rge_formats::ge::{GeModel, WriteOptions};

mod common;

fuzz_target!(|data: &[u8]| {
    let ctx = common::context("fuzz.pb");
    let Ok(first) = GeModel::from_binary_bytes_with(bytes::Bytes::copy_from_slice(data), &ctx)
    else {
        return;
    };
    let opts = WriteOptions::dump();
    let w1 = first.to_binary_bytes(&opts).expect("write");
    let again = GeModel::from_binary_bytes_with(w1.clone(), &ctx).expect("read what was written");
    let w2 = again.to_binary_bytes(&opts).expect("write again");
    assert!(w1 == w2, "write → read → write changed the bytes");
    common::assert_same(&first, &again);
});
