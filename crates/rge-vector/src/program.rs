//! The program of an `ai.rge` FusedElementwise node: a tree (or DAG) of elementwise ops over the
//! node's inputs, in SSA order, kept as the node's `program` attribute so `rge explain` and the
//! graph dumps show it. One instruction a `;`-separated item: the ONNX op name, its operands
//! (`x<k>` input k, `t<k>` the result of instruction k) and its float parameters, e.g.
//! `Add x0 x1; Sigmoid t0; Mul t1 x0` (SiLU of a sum). The last instruction is the output.

use crate::simd::{BinOp, UnaryOp};

/// An operand of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Input `k` of the node.
    Input(usize),
    /// The result of instruction `k` (an earlier one).
    Temp(usize),
}

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Instr {
    Unary(UnaryOp, Arg),
    Binary(BinOp, Arg, Arg),
}

/// A validated program: every operand refers to an input or an earlier instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub instrs: Vec<Instr>,
    pub inputs: usize,
}

/// The name and parameters of a unary op in program text.
pub fn unary_text(op: &UnaryOp) -> (&'static str, Vec<f32>) {
    use UnaryOp::*;
    match *op {
        Identity => ("Identity", vec![]),
        Relu => ("Relu", vec![]),
        LeakyRelu(a) => ("LeakyRelu", vec![a]),
        Clip(lo, hi) => ("Clip", vec![lo, hi]),
        Sigmoid => ("Sigmoid", vec![]),
        HardSigmoid(a, b) => ("HardSigmoid", vec![a, b]),
        HardSwish => ("HardSwish", vec![]),
        Tanh => ("Tanh", vec![]),
        Erf => ("Erf", vec![]),
        Exp => ("Exp", vec![]),
        Log => ("Log", vec![]),
        Sqrt => ("Sqrt", vec![]),
        Reciprocal => ("Reciprocal", vec![]),
        Neg => ("Neg", vec![]),
        Abs => ("Abs", vec![]),
        Gelu => ("Gelu", vec![]),
        GeluTanh => ("GeluTanh", vec![]),
        Softplus => ("Softplus", vec![]),
        Softsign => ("Softsign", vec![]),
        Elu(a) => ("Elu", vec![a]),
        Selu(a, g) => ("Selu", vec![a, g]),
        Celu(a) => ("Celu", vec![a]),
        ThresholdedRelu(a) => ("ThresholdedRelu", vec![a]),
        Mish => ("Mish", vec![]),
        Swish(a) => ("Swish", vec![a]),
        Sin => ("Sin", vec![]),
        Cos => ("Cos", vec![]),
        Floor => ("Floor", vec![]),
        Ceil => ("Ceil", vec![]),
        Round => ("Round", vec![]),
        Square => ("Square", vec![]),
    }
}

fn unary_from(name: &str, p: &[f32]) -> Option<UnaryOp> {
    use UnaryOp::*;
    let k = |n: usize| (p.len() == n).then_some(());
    Some(match name {
        "Identity" => k(0).map(|_| Identity)?,
        "Relu" => k(0).map(|_| Relu)?,
        "LeakyRelu" => k(1).map(|_| LeakyRelu(p[0]))?,
        "Clip" => k(2).map(|_| Clip(p[0], p[1]))?,
        "Sigmoid" => k(0).map(|_| Sigmoid)?,
        "HardSigmoid" => k(2).map(|_| HardSigmoid(p[0], p[1]))?,
        "HardSwish" => k(0).map(|_| HardSwish)?,
        "Tanh" => k(0).map(|_| Tanh)?,
        "Erf" => k(0).map(|_| Erf)?,
        "Exp" => k(0).map(|_| Exp)?,
        "Log" => k(0).map(|_| Log)?,
        "Sqrt" => k(0).map(|_| Sqrt)?,
        "Reciprocal" => k(0).map(|_| Reciprocal)?,
        "Neg" => k(0).map(|_| Neg)?,
        "Abs" => k(0).map(|_| Abs)?,
        "Gelu" => k(0).map(|_| Gelu)?,
        "GeluTanh" => k(0).map(|_| GeluTanh)?,
        "Softplus" => k(0).map(|_| Softplus)?,
        "Softsign" => k(0).map(|_| Softsign)?,
        "Elu" => k(1).map(|_| Elu(p[0]))?,
        "Selu" => k(2).map(|_| Selu(p[0], p[1]))?,
        "Celu" => k(1).map(|_| Celu(p[0]))?,
        "ThresholdedRelu" => k(1).map(|_| ThresholdedRelu(p[0]))?,
        "Mish" => k(0).map(|_| Mish)?,
        "Swish" => k(1).map(|_| Swish(p[0]))?,
        "Sin" => k(0).map(|_| Sin)?,
        "Cos" => k(0).map(|_| Cos)?,
        "Floor" => k(0).map(|_| Floor)?,
        "Ceil" => k(0).map(|_| Ceil)?,
        "Round" => k(0).map(|_| Round)?,
        "Square" => k(0).map(|_| Square)?,
        _ => return None,
    })
}

/// The name of a binary op in program text.
pub fn binary_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "Add",
        BinOp::Sub => "Sub",
        BinOp::Mul => "Mul",
        BinOp::Div => "Div",
        BinOp::Max => "Max",
        BinOp::Min => "Min",
        BinOp::Pow => "Pow",
        BinOp::PRelu => "PRelu",
    }
}

/// An operand as the text names it: `x{k}` (input) or `t{k}` (an earlier instruction).
struct ArgText(Arg);

impl std::fmt::Display for ArgText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Arg::Input(k) => write!(f, "x{k}"),
            Arg::Temp(k) => write!(f, "t{k}"),
        }
    }
}

fn parse_arg(s: &str) -> Option<Arg> {
    let (kind, k) = s.split_at_checked(1)?;
    let k: usize = k.parse().ok()?;
    match kind {
        "x" => Some(Arg::Input(k)),
        "t" => Some(Arg::Temp(k)),
        _ => None,
    }
}

impl Program {
    /// Checks operand references and builds the program.
    pub fn new(instrs: Vec<Instr>, inputs: usize) -> Result<Program, String> {
        if instrs.is_empty() {
            return Err("the program has no instruction".into());
        }
        for (i, ins) in instrs.iter().enumerate() {
            let args = match *ins {
                Instr::Unary(_, a) => vec![a],
                Instr::Binary(_, a, b) => vec![a, b],
            };
            for a in args {
                match a {
                    Arg::Input(k) if k >= inputs => {
                        return Err(format!(
                            "instruction {i} reads input {k}, the node has {inputs}"
                        ))
                    }
                    Arg::Temp(k) if k >= i => {
                        return Err(format!(
                            "instruction {i} reads t{k}, which is not computed before it"
                        ))
                    }
                    _ => {}
                }
            }
        }
        Ok(Program { instrs, inputs })
    }

    /// Parses program text for a node of `inputs` inputs.
    pub fn parse(text: &str, inputs: usize) -> Result<Program, String> {
        let mut instrs = Vec::new();
        for (i, item) in text.split(';').map(str::trim).enumerate() {
            let mut words = item.split_whitespace();
            let name = words
                .next()
                .ok_or_else(|| format!("instruction {i} is empty"))?;
            let rest: Vec<&str> = words.collect();
            let n_args = rest.iter().take_while(|w| parse_arg(w).is_some()).count();
            let args: Vec<Arg> = rest[..n_args].iter().filter_map(|w| parse_arg(w)).collect();
            let params: Vec<f32> = rest[n_args..]
                .iter()
                .map(|w| {
                    w.parse::<f32>()
                        .map_err(|_| format!("instruction {i} (`{item}`): `{w}` is not a number"))
                })
                .collect::<Result<_, _>>()?;
            let bin = crate::elementwise::bin_op(name);
            let ins = match (bin, args.as_slice()) {
                (Some(op), [a, b]) if params.is_empty() => Instr::Binary(op, *a, *b),
                (None, [a]) => Instr::Unary(
                    unary_from(name, &params).ok_or_else(|| {
                        format!("instruction {i} (`{item}`): unknown op or wrong parameters")
                    })?,
                    *a,
                ),
                _ => {
                    return Err(format!(
                        "instruction {i} (`{item}`): wrong operands for `{name}`"
                    ))
                }
            };
            instrs.push(ins);
        }
        Program::new(instrs, inputs)
    }

    /// The program text ([`Program::parse`] reads it back).
    pub fn text(&self) -> String {
        use std::fmt::Write;
        // One string written in place: a large graph makes a program per fused region.
        let mut s = String::with_capacity(self.instrs.len() * 12);
        for (i, ins) in self.instrs.iter().enumerate() {
            if i > 0 {
                s.push_str("; ");
            }
            // Writing to a String cannot fail.
            let _ = match ins {
                Instr::Unary(op, a) => {
                    let (name, params) = unary_text(op);
                    let r = write!(s, "{name} {}", ArgText(*a));
                    for p in params {
                        let _ = write!(s, " {p:?}");
                    }
                    r
                }
                Instr::Binary(op, a, b) => {
                    write!(s, "{} {} {}", binary_text(*op), ArgText(*a), ArgText(*b))
                }
            };
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        let p = Program::new(
            vec![
                Instr::Binary(BinOp::Add, Arg::Input(0), Arg::Input(1)),
                Instr::Unary(UnaryOp::Clip(0.0, 6.0), Arg::Temp(0)),
                Instr::Unary(UnaryOp::HardSigmoid(0.2, f32::NEG_INFINITY), Arg::Temp(1)),
                Instr::Binary(BinOp::Mul, Arg::Temp(2), Arg::Input(0)),
            ],
            2,
        )
        .unwrap();
        assert_eq!(Program::parse(&p.text(), 2).unwrap(), p);
    }

    #[test]
    fn bad_programs_are_refused_with_the_reason() {
        let e = Program::parse("Add x0 x2", 2).unwrap_err();
        assert!(e.contains("reads input 2"), "{e}");
        let e = Program::parse("Relu t0", 1).unwrap_err();
        assert!(e.contains("not computed before"), "{e}");
        let e = Program::parse("Frobnicate x0", 1).unwrap_err();
        assert!(e.contains("unknown op"), "{e}");
        let e = Program::parse("Clip x0 1", 1).unwrap_err();
        assert!(e.contains("wrong parameters"), "{e}");
        let e = Program::parse("", 1).unwrap_err();
        assert!(e.contains("empty"), "{e}");
    }
}
