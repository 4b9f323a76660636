"""A sample of the ONNX backend node tests through rge.InferenceSession: the outputs equal the
stored ones (what onnxruntime reproduces) by onnxruntime's rule, and equal onnxruntime's own."""

import glob
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import rge
from conftest import NODE_TESTS

# Common operators across families, each a plain-tensor test.
SAMPLE = [
    "test_add",
    "test_relu",
    "test_conv_with_strides_padding",
    "test_maxpool_2d_default",
    "test_averagepool_2d_pads",
    "test_globalaveragepool",
    "test_gemm_default_no_bias",
    "test_matmul_2d",
    "test_softmax_axis_1",
    "test_reshape_reduced_dims",
    "test_transpose_all_permutations_0",
    "test_concat_2d_axis_0",
    "test_reduce_mean_default_axes_keepdims_example",
    "test_batchnorm_example",
    "test_sigmoid",
    "test_cast_FLOAT_to_DOUBLE",
    "test_where_example",
    "test_argmax_default_axis_example",
    "test_lstm_defaults",
    "test_slice",
]


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


@pytest.mark.parametrize("name", SAMPLE)
def test_node_test_matches_stored_outputs_and_onnxruntime(name):
    folder = NODE_TESTS / name
    if not folder.is_dir():
        pytest.skip(f"{folder} missing: run scripts/gen_onnx_node_tests.sh")
    model = str(folder / "model.onnx")
    sess = rge.InferenceSession(model)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    assert names == [i.name for i in ref.get_inputs()]
    for data in sorted(glob.glob(str(folder / "test_data_set_*"))):
        inputs = [load(p) for p in sorted(glob.glob(os.path.join(data, "input_*.pb")))]
        expected = [load(p) for p in sorted(glob.glob(os.path.join(data, "output_*.pb")))]
        feed = dict(zip(names, inputs))
        got = sess.run(None, feed)
        theirs = ref.run(None, feed)
        assert len(got) == len(expected) == len(theirs)
        for g, want, t in zip(got, expected, theirs):
            assert g.dtype == want.dtype and g.shape == want.shape
            np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-5)
            np.testing.assert_allclose(g, t, rtol=1e-3, atol=1e-5)
