//! RNN, GRU and LSTM on the dense engine: the cells, attributes and checks are the reference
//! kernels' (`rge-kernels-sequence`), and their GEMMs (the input projection `X·Wᵀ` over every
//! step at once, and each step's `H·Rᵀ`) run on the packed GEMM with the session's threads;
//! an LSTM's steps take fixed column ranges of its packed R, one per thread
//! ([`gemm::sgemm_packed_columns`]).

use std::sync::Arc;

use rge_kernels::{Kernel, KernelInit, KernelResult};
use rge_kernels_sequence::{Act, FastGemm, LstmCellBlock, PreparedBt};

use crate::gemm::{self, AOperand, BOperand, Epilogue, GemmParams, PackedB};
use crate::kernels::gemm_err;

/// The dense GEMM in the recurrent kernels' `A·Bᵀ` form.
struct DenseGemm;

impl FastGemm for DenseGemm {
    fn a_bt(
        &self,
        m: usize,
        n: usize,
        k: usize,
        (a, lda): (&[f32], usize),
        (b, ldb): (&[f32], usize),
        (c, ldc): (&mut [f32], usize),
        threads: usize,
    ) -> KernelResult<()> {
        let a = AOperand::Raw {
            data: a,
            ld: lda,
            trans: false,
        };
        let b = BOperand::Raw {
            data: b,
            ld: ldb,
            trans: true,
        };
        let epi = Epilogue::default();
        gemm::sgemm(&GemmParams::new(m, n, k), a, b, c, ldc, &epi, threads).map_err(gemm_err)
    }

    fn activate(&self, act: &Act, xs: &mut [f32]) -> bool {
        let a = match *act {
            Act::Sigmoid => gemm::Activation::Sigmoid,
            Act::Tanh => gemm::Activation::Tanh,
            Act::Relu => gemm::Activation::Relu,
            _ => return false,
        };
        gemm::activate(gemm::Isa::best(), &a, xs).is_ok()
    }

    fn lstm_cell(&self, cell: &mut LstmCellBlock<'_, f32>) -> bool {
        gemm::lstm_cell(gemm::Isa::best(), cell).is_ok()
    }

    fn prepare_bt(
        &self,
        b: &[f32],
        n: usize,
        k: usize,
        ldb: usize,
    ) -> KernelResult<Option<Box<dyn PreparedBt>>> {
        let packed = PackedB::pack(b, k, n, ldb, true).map_err(gemm_err)?;
        Ok(Some(Box::new(DensePackedBt(packed))))
    }

    fn column_align(&self) -> Option<usize> {
        Some(gemm::PANEL_B)
    }
}

/// A recurrence matrix packed once per run (Rᵀ as the GEMM's B).
struct DensePackedBt(PackedB);

impl PreparedBt for DensePackedBt {
    fn a_bt(
        &self,
        m: usize,
        (a, lda): (&[f32], usize),
        (c, ldc): (&mut [f32], usize),
        threads: usize,
    ) -> KernelResult<()> {
        let p = GemmParams::new(m, self.0.n(), self.0.k());
        let a = AOperand::Raw {
            data: a,
            ld: lda,
            trans: false,
        };
        let epi = Epilogue::default();
        gemm::sgemm(&p, a, BOperand::Packed(&self.0), c, ldc, &epi, threads).map_err(gemm_err)
    }

    fn a_bt_columns(
        &self,
        m: usize,
        a: (&[f32], usize),
        cols: std::ops::Range<usize>,
        (c, ldc): (&mut [f32], usize),
    ) -> KernelResult<bool> {
        gemm::sgemm_packed_columns(m, a, &self.0, cols, c, ldc).map_err(gemm_err)?;
        Ok(true)
    }
}

/// Builds the RNN, GRU or LSTM kernel (by op type) over the dense GEMM.
pub fn create_recurrent(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    rge_kernels_sequence::recurrent_with(init, Arc::new(DenseGemm))
}
