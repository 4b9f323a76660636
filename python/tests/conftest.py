"""Shared fixtures: the repository's bundled example and the ONNX node tests."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NODE_TESTS = ROOT / "build" / "onnx-node-tests" / "node"


@pytest.fixture
def tiny_cnn():
    return str(EXAMPLES / "tiny_cnn.onnx")


@pytest.fixture
def tiny_cnn_image():
    import numpy as np

    return np.load(EXAMPLES / "tiny_cnn_image.npy")
