//! The built-in ops, one file per family. Every infer function sets each output's data type
//! and shape (unknown dims -1 where data-dependent, an unknown rank where the input's is) and,
//! where it is cheap and the inputs are known, the output's value.

use crate::error::OpsError;
use crate::registry::OpRegistryBuilder;

pub(crate) mod util;

mod activation;
mod cast;
mod control;
mod conv;
mod elementwise;
mod fused_elementwise;
mod gather;
mod generators;
mod hcom;
mod history;
mod history_legacy;
mod history_table;
mod image;
mod ir;
mod matmul;
mod misc;
mod ml;
mod ms;
mod nchwc;
mod norm;
mod reduce;
mod rnn;
mod sequence;
mod shape_ops;
mod slicing;
mod text;
pub mod tf;

/// Registers every built-in prototype.
pub(crate) fn register_builtins(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    ir::register(b)?;
    elementwise::register(b)?;
    activation::register(b)?;
    reduce::register(b)?;
    matmul::register(b)?;
    conv::register(b)?;
    norm::register(b)?;
    shape_ops::register(b)?;
    slicing::register(b)?;
    gather::register(b)?;
    generators::register(b)?;
    cast::register(b)?;
    control::register(b)?;
    sequence::register(b)?;
    rnn::register(b)?;
    misc::register(b)?;
    text::register(b)?;
    image::register(b)?;
    fused_elementwise::register(b)?;
    tf::register(b)?;
    hcom::register(b)?;
    ml::register(b)?;
    ms::register(b)?;
    nchwc::register(b)?;
    // Last: the versions of the schema history the families above do not write.
    history::register(b)?;
    Ok(())
}
