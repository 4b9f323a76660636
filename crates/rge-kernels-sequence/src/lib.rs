//! rge CPU kernels: sequence ops — the recurrent nets (RNN, LSTM, GRU), the attention family
//! (Attention, LinearAttention, FlexAttention, RotaryEmbedding) and the losses
//! (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss).

mod attention;
mod attention_bias;
mod attention_fast;
mod common;
mod flex_attention;
mod linear_attention;
mod loss;
mod rnn;
mod rotary;

use rge_kernels::{KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

pub use attention::attention_with;
pub use attention_fast::{check_bias, HeadMath, PortableHeads};
pub use common::{FastGemm, Gemm, LstmCellBlock, PreparedBt};
pub use rnn::{recurrent_with, Act};

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register(ONNX_DOMAIN, "Attention", attention::attention)?;
    b.register(
        ONNX_DOMAIN,
        "SoftmaxCrossEntropyLoss",
        loss::softmax_cross_entropy,
    )?;
    b.register(ONNX_DOMAIN, "NegativeLogLikelihoodLoss", loss::nll_loss)?;
    b.register(ONNX_DOMAIN, "RNN", rnn::rnn)?;
    b.register(ONNX_DOMAIN, "GRU", rnn::gru)?;
    b.register(ONNX_DOMAIN, "LSTM", rnn::lstm)?;
    b.register(ONNX_DOMAIN, "RotaryEmbedding", rotary::rotary_embedding)?;
    b.register(
        ONNX_DOMAIN,
        "LinearAttention",
        linear_attention::linear_attention,
    )?;
    b.register(
        "ai.onnx.preview",
        "FlexAttention",
        flex_attention::flex_attention,
    )?;
    Ok(())
}
