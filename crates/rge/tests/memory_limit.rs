//! `--memory-limit`: a command whose heap would pass the limit ends with a message naming the
//! option, the limit and the command (exit status 1), not an out-of-memory kill; under a
//! limit it fits, the same command succeeds; a bad size is an error naming the option.

#[path = "common/net.rs"]
mod net;

use std::path::PathBuf;
use std::process::Command;

use net::*;
use prost::Message;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-memory-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// y = x + W, W a 16 MiB weight (import copies it onto the heap).
fn big_weight_model() -> PathBuf {
    let mut n = Net::new();
    let x = n.input("x", F32, &[1024, 4096]);
    let w = n.weight(&[1024, 4096], 3);
    n.op_to("Add", &[&x, &w], "y", vec![]);
    n.output("y", F32, &[1024, 4096]);
    let path = tmp("big.onnx");
    std::fs::write(&path, n.model().encode_to_vec()).unwrap();
    path
}

fn rge(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rge"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_heap_over_the_limit_is_a_clear_error_and_under_it_the_command_runs() {
    let model = big_weight_model();
    let (m, out) = (model.to_str().unwrap(), tmp("big.om"));
    let out = out.to_str().unwrap();

    let over = rge(&["compile", m, "-o", out, "--memory-limit", "8M"]);
    let err = String::from_utf8_lossy(&over.stderr);
    assert_eq!(over.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--memory-limit 8.0 MiB reached while running `rge compile"),
        "{err}"
    );
    assert!(err.contains("raise the limit"), "{err}");

    // The option is global: before the command too.
    let under = rge(&["--memory-limit", "1G", "compile", m, "-o", out]);
    assert!(
        under.status.success(),
        "{}",
        String::from_utf8_lossy(&under.stderr)
    );
    let run = rge(&["run", out, "--memory-limit", "8M"]);
    assert_eq!(run.status.code(), Some(1));
    let run = rge(&["run", out, "--memory-limit", "512M"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_bad_size_names_the_option() {
    for (size, why) in [("12X", "unknown unit `X`"), ("0", "at least one byte")] {
        let o = rge(&["--memory-limit", size, "ops"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("--memory-limit: ") && err.contains(why),
            "{err}"
        );
    }
}
