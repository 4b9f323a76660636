//! The inputs of `rge run` and `rge bench`: `--input NAME=FILE` (each input once), and random
//! inputs, which fill every input when none is given, or the inputs not given with
//! `--random-inputs` (seeded by `--seed`). An input left out when others are given is an
//! error naming it; so is a random input whose dims the model leaves open (`batch`, `?`),
//! unless `--shape` fixes them.

use std::fmt::Write as _;
use std::path::Path;

use rge_kernels::{DType, Value};
use rge_runtime::io;

use super::shape_args::Built;
use super::CliError;
use crate::ports::Port;

/// Seed of the first random input unless `--seed` says otherwise (input `k` gets seed + k).
pub const DEFAULT_SEED: u64 = 1;

/// How the inputs not given are filled.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomInputs {
    /// `--random-inputs`: fill every input not given, even when others are given.
    pub forced: bool,
    /// `--seed`.
    pub seed: Option<u64>,
}

/// One input: its name, its value, and where it came from (the file, or "random").
pub struct Given {
    pub name: String,
    pub value: Value,
    pub source: String,
}

/// Reads the `--input NAME=FILE` options; an input named twice is an error.
pub fn read(specs: &[String]) -> Result<Vec<Given>, CliError> {
    let mut out: Vec<Given> = Vec::with_capacity(specs.len());
    for spec in specs {
        let (name, file) = spec
            .split_once('=')
            .ok_or_else(|| CliError::new(format!("--input `{spec}`: expected NAME=FILE")))?;
        if let Some(prev) = out.iter().find(|g| g.name == name) {
            return Err(CliError::new(format!(
                "--input `{spec}`: input `{name}` is already given by `--input {name}={}`",
                prev.source
            )));
        }
        let t = io::read_tensor(Path::new(file))
            .map_err(|e| CliError::new(format!("--input `{spec}`: {e}")))?;
        out.push(Given {
            name: name.to_string(),
            value: Value::Tensor(t),
            source: file.to_string(),
        });
    }
    Ok(out)
}

fn declared_text(spec: &rge_runtime::program::InputSpec, port: Option<&Port>) -> String {
    if let Some(p) = port {
        return p.dims_text();
    }
    match &spec.dims {
        None => "[unknown rank]".into(),
        Some(d) => format!(
            "[{}]",
            d.iter()
                .map(|&x| if x < 0 { "?".into() } else { x.to_string() })
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// Adds random inputs for the inputs `given` leaves out (see the module doc), writing a line
/// per random input to `out`.
pub fn fill(
    built: &Built,
    mut given: Vec<Given>,
    random: RandomInputs,
    out: &mut String,
) -> Result<Vec<Given>, CliError> {
    let specs = built.inputs();
    for g in &given {
        if !specs.iter().any(|s| s.name == g.name) {
            let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            return Err(CliError::new(format!(
                "--input `{}={}`: the model has no input `{}` (inputs: {})",
                g.name,
                g.source,
                g.name,
                known.join(", ")
            )));
        }
    }
    let ports = crate::ports::inputs(built.graph());
    let missing: Vec<&rge_runtime::program::InputSpec> = specs
        .iter()
        .filter(|s| !given.iter().any(|g| g.name == s.name))
        .collect();
    if missing.is_empty() {
        return Ok(given);
    }
    if !given.is_empty() && !random.forced {
        let names: Vec<String> = missing.iter().map(|s| format!("`{}`", s.name)).collect();
        return Err(CliError::new(format!(
            "missing input{} {}: give {} with --input NAME=FILE, or add --random-inputs to fill the inputs not given with random data",
            if names.len() > 1 { "s" } else { "" },
            names.join(", "),
            if names.len() > 1 { "them" } else { "it" }
        )));
    }
    let open: Vec<String> = missing
        .iter()
        .filter(|s| rge_runtime::shape_cache::is_dynamic_input(s))
        .map(|s| {
            let port = ports.iter().find(|p| p.name == s.name);
            format!("`{}` {}", s.name, declared_text(s, port))
        })
        .collect();
    if !open.is_empty() {
        return Err(CliError::new(format!(
            "input{} {} ha{} dims the model leaves open: random inputs need static shapes; give {} with --input NAME=FILE, or fix the dims with --shape NAME=D0,D1,… (e.g. --shape {}={})",
            if open.len() > 1 { "s" } else { "" },
            open.join(", "),
            if open.len() > 1 { "ve" } else { "s" },
            if open.len() > 1 { "them" } else { "it" },
            missing
                .iter()
                .find(|s| rge_runtime::shape_cache::is_dynamic_input(s))
                .map_or("x", |s| s.name.as_str()),
            example_dims(missing.iter().find(|s| rge_runtime::shape_cache::is_dynamic_input(s)))
        )));
    }
    let seed = random.seed.unwrap_or(DEFAULT_SEED);
    for (k, spec) in specs.iter().enumerate() {
        if given.iter().any(|g| g.name == spec.name) {
            continue;
        }
        let dtype = spec.dtype.unwrap_or(DType::Float);
        let dims = spec.dims.clone().unwrap_or_default();
        let t = io::random_tensor(dtype, &dims, seed.wrapping_add(k as u64))?;
        let _ = writeln!(out, "input {}: random {}{:?}", spec.name, dtype, t.shape());
        given.push(Given {
            name: spec.name.clone(),
            value: Value::Tensor(t),
            source: "random".into(),
        });
    }
    Ok(given)
}

/// An example `--shape` value for `spec`: its static dims kept, 1 for the open ones.
fn example_dims(spec: Option<&&rge_runtime::program::InputSpec>) -> String {
    match spec.and_then(|s| s.dims.as_ref()) {
        Some(d) => d
            .iter()
            .map(|&x| if x < 0 { "1".into() } else { x.to_string() })
            .collect::<Vec<_>>()
            .join(","),
        None => "1".into(),
    }
}

/// The inputs as `(name, value)` pairs, for [`Built::order_inputs`].
pub fn named(given: &[Given]) -> Vec<(String, Value)> {
    given
        .iter()
        .map(|g| (g.name.clone(), g.value.clone()))
        .collect()
}
