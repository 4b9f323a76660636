//! The round-trip check both targets run on whatever reads.

use rge_formats::ge::{GeModel, ReadContext, ReadOptions};

pub fn context(origin: &str) -> ReadContext {
    ReadContext::new(origin).with_options(ReadOptions {
        allow_missing_subgraphs: true,
        ..Default::default()
    })
}

/// `first` was read from fuzz input; `again` from its re-written form. NaN floats make equal
/// models compare unequal, so they are compared only without NaN.
pub fn assert_same(first: &GeModel, again: &GeModel) {
    if !format!("{first:?}").contains("NaN") {
        assert!(first == again, "read → write → read changed the model");
    }
}
