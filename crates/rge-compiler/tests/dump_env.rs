//! `RGE_DUMP_GRAPH` turns on stage dumps (a process of its own: it sets the environment).

mod common;

use common::*;
use rge_compiler::{CompileOptions, Pipeline};

#[test]
fn dump_dir_from_the_environment() {
    let dir = std::env::temp_dir().join(format!("rge-dump-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // This test binary has one test: nothing else reads the environment concurrently.
    std::env::set_var(rge_compiler::options::DUMP_GRAPH_ENV, &dir);
    let g = graph(&[("x", "Data", &[]), ("a", "MatMul", &["x", "x"])]);
    let model = Pipeline::new(manager(), CompileOptions::default())
        .compile(g)
        .unwrap();
    assert!(dir.join("00_input.txt").exists());
    assert!(dir.join("03_place.txt").exists() || dir.join("02_place.txt").exists());
    assert_eq!(model.dumps.len(), std::fs::read_dir(&dir).unwrap().count());
    let _ = std::fs::remove_dir_all(&dir);
}
