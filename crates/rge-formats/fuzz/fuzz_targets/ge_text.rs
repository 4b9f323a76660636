//! Text ModelDef: read; on success, write (dump mode), read again, write again: the model and
//! the text must not change.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rge_formats::ge::{GeModel, WriteOptions};

mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = common::context("fuzz.txt");
    let Ok(first) = GeModel::from_text_str_with(text, &ctx) else {
        return;
    };
    let opts = WriteOptions::dump();
    let t1 = first.to_text(&opts).expect("write");
    let again = GeModel::from_text_str_with(&t1, &ctx).expect("read what was written");
    let t2 = again.to_text(&opts).expect("write again");
    assert!(t1 == t2, "write → read → write changed the text");
    common::assert_same(&first, &again);
});
