//! `rge engines` against the seed's engine table (engines.md §1.2 and §4.2, the stream flags
//! of its `engine_conf.json`; rge's reading in docs/engines.md): all twelve engines listed,
//! each with the seed's cost, runtime type, kind and stream flags. `custom` (GE's
//! DNN_VM_CUSTOM, created by the engine manager for custom op types) is listed either as an
//! engine or as "not in this build" with the reason; it is never missing.

use serde_json::Value as Json;

/// A row of the seed's table: name, GE counterpart, cost, runtime, composite members,
/// (independent, skip_assign_stream, attach). Written out here, not taken from
/// `rge_engine::STANDARD_ENGINES`, so a change to the code's table fails the test.
struct Seed {
    name: &'static str,
    ge: &'static str,
    cost: u64,
    runtime: &'static str,
    members: &'static [&'static str],
    independent: bool,
    skip: bool,
    attach: bool,
}

const fn seed(
    name: &'static str,
    ge: &'static str,
    cost: u64,
    runtime: &'static str,
    members: &'static [&'static str],
    (independent, skip, attach): (bool, bool, bool),
) -> Seed {
    Seed {
        name,
        ge,
        cost,
        runtime,
        members,
        independent,
        skip,
        attach,
    }
}

const NONE: (bool, bool, bool) = (false, false, false);
const ATTACH: (bool, bool, bool) = (false, false, true);
const SKIP_ATTACH: (bool, bool, bool) = (false, true, true);
const INDEPENDENT: (bool, bool, bool) = (true, false, false);

const SEED: [Seed; 12] = [
    seed("custom", "DNN_VM_CUSTOM", 0, "DEVICE", &[], NONE),
    seed("dense", "AIcoreEngine", 1, "DEVICE", &[], NONE),
    seed(
        "fused",
        "ffts_plus",
        1,
        "DEVICE",
        &["dense", "vector"],
        SKIP_ATTACH,
    ),
    seed("vector", "VectorEngine", 2, "DEVICE", &[], NONE),
    seed("rng", "DSAEngine", 2, "DEVICE", &[], NONE),
    seed("rts", "DNN_VM_RTS", 2, "DEVICE", &[], SKIP_ATTACH),
    seed("comm", "DNN_HCCL", 2, "DEVICE", &[], INDEPENDENT),
    seed("cpu", "DNN_VM_AICPU_ASCEND", 3, "DEVICE", &[], ATTACH),
    seed("cpu_tf", "DNN_VM_AICPU", 4, "DEVICE", &[], ATTACH),
    seed("media", "DNN_VM_DVPP", 5, "DEVICE", &[], ATTACH),
    seed("local", "DNN_VM_GE_LOCAL", 9, "DEVICE", &[], SKIP_ATTACH),
    seed("host", "DNN_VM_HOST_CPU", 10, "HOST", &[], SKIP_ATTACH),
];

fn rge(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rge"))
        .args(args)
        // No gpu adapter search noise (as scripts/test.sh sets it).
        .env("NODEVICE_SELECT", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rge {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The stream flags as `rge engines` writes them ("-", "attach", "skip+attach", …).
fn streams(s: &Seed) -> String {
    let mut v = Vec::new();
    if s.independent {
        v.push("independent");
    }
    if s.skip {
        v.push("skip");
    }
    if s.attach {
        v.push("attach");
    }
    if v.is_empty() {
        "-".into()
    } else {
        v.join("+")
    }
}

#[test]
fn rge_engines_json_lists_the_seeds_twelve_engines_with_their_cost_runtime_and_flags() {
    let j: Json = serde_json::from_str(&rge(&["engines", "--json"])).unwrap();
    let engines = j["engines"].as_array().expect("engines");
    let absent = j["not_in_this_build"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for s in &SEED {
        let what = s.name;
        if let Some(e) = engines.iter().find(|e| e["name"] == s.name) {
            assert_eq!(e["cost"], s.cost, "{what}: {e}");
            assert_eq!(e["runtime"], s.runtime, "{what}: {e}");
            let kind = if s.members.is_empty() {
                "atomic"
            } else {
                "composite"
            };
            assert_eq!(e["kind"], kind, "{what}: {e}");
            assert_eq!(e["members"], serde_json::json!(s.members), "{what}: {e}");
            assert_eq!(e["independent"], s.independent, "{what}: {e}");
            assert_eq!(e["skip_assign_stream"], s.skip, "{what}: {e}");
            assert_eq!(e["attach"], s.attach, "{what}: {e}");
        } else {
            // Only `custom` may be absent (the engine manager creates it for custom op
            // types); every other engine of the table is in the command line's set.
            assert_eq!(s.name, "custom", "{what} is not listed as an engine: {j}");
            let e = absent
                .iter()
                .find(|e| e["name"] == s.name)
                .unwrap_or_else(|| {
                    panic!("{what} is listed neither as an engine nor as absent: {j}")
                });
            assert_eq!(e["ge_counterpart"], s.ge, "{what}: {e}");
            assert_eq!(e["cost"], s.cost, "{what}: {e}");
            assert_eq!(e["runtime"], s.runtime, "{what}: {e}");
            assert_eq!(e["streams"], streams(s), "{what}: {e}");
            assert!(
                e["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{what}: no reason: {e}"
            );
        }
    }
    // No absent row stands for an engine that is in the set.
    for e in &absent {
        assert!(
            !engines.iter().any(|x| x["name"] == e["name"]),
            "{e} is both present and absent"
        );
    }
    // Engines ascend by cost, as placement tries them.
    let costs: Vec<u64> = engines
        .iter()
        .map(|e| e["cost"].as_u64().unwrap())
        .collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
}

#[test]
fn rge_engines_text_names_all_twelve() {
    let text = rge(&["engines"]);
    for s in &SEED {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(s.name))
            .unwrap_or_else(|| panic!("{} missing:\n{text}", s.name));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], s.cost.to_string(), "{line}");
        assert_eq!(cols[2], s.runtime, "{line}");
        assert!(cols.contains(&streams(s).as_str()), "{line}");
    }
}

/// The table of docs/engines.md is the seed's table as this test writes it.
#[test]
fn docs_engines_table_is_the_seed_table() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/engines.md"
    ))
    .unwrap();
    for s in &SEED {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", s.name)))
            .unwrap_or_else(|| panic!("docs/engines.md has no row for {}", s.name));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | engine | GE counterpart | cost | runtime | kind | streams |
        assert_eq!(cells[2], s.ge, "{row}");
        assert_eq!(cells[3], s.cost.to_string(), "{row}");
        assert_eq!(cells[4], s.runtime, "{row}");
        assert_eq!(
            cells[5].starts_with("composite"),
            !s.members.is_empty(),
            "{row}"
        );
        let flags = streams(s);
        let want = if flags == "-" { "–" } else { flags.as_str() };
        assert_eq!(cells[6], want, "{row}");
    }
}
