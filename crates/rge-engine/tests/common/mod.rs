//! Shared by the plugin tests.

use std::path::PathBuf;
use std::process::Command;

/// The example plugin's shared library: next to this test's profile directory (built by
/// `cargo test --workspace`), else built on demand into a target directory of its own (so as
/// not to wait on the lock of the running cargo).
pub fn plugin_path() -> PathBuf {
    let name = format!(
        "{}rge_engine_example_plugin{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let p = profile_dir.join(&name);
    if p.exists() {
        return p;
    }
    let target = profile_dir
        .parent()
        .expect("target dir")
        .join("plugin-build");
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "rge-engine-example-plugin", "--target-dir"])
        .arg(&target);
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .expect("run cargo build for the example plugin");
    assert!(status.success(), "building the example plugin failed");
    target
        .join(if release { "release" } else { "debug" })
        .join(name)
}
