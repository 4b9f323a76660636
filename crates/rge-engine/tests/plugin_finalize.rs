//! Initialize failure and finalize on drop, in a process of their own: the plugin's state is
//! global to the process, so other tests loading it concurrently would race.

use rge_engine::{load_engine_plugin, EngineOptions};

mod common;
use common::plugin_path;

#[test]
fn initialize_failure_and_finalize_on_drop() {
    let mut opts = EngineOptions::new();
    opts.insert("example.fail".into(), "1".into());
    let err = load_engine_plugin(&plugin_path(), &opts).err().unwrap();
    assert!(err.to_string().contains("asked to fail"), "{err}");

    let marker = std::env::temp_dir().join(format!("rge-example-finalize-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let mut opts = EngineOptions::new();
    opts.insert(
        "example.finalize_marker".into(),
        marker.display().to_string(),
    );
    let engines = load_engine_plugin(&plugin_path(), &opts).unwrap();
    assert!(!marker.exists());
    drop(engines);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "finalized");
    let _ = std::fs::remove_file(&marker);
}
