"""Writes the ONNX backend node tests in the standard layout.

onnx's own writer (`onnx.backend.test.cmd_tools.generate_data`) emits only the model tests in
recent releases; the node test generators (`onnx.backend.test.case.node`) are still shipped. This
runs upstream's writer over the node cases, which gives `<out>/node/<test>/model.onnx` and
`test_data_set_0/{input,output}_N.pb`.

usage: python gen_onnx_node_tests.py OUT_DIR
"""

import argparse
import sys

import onnx.backend.test.case.node as node_test
import onnx.backend.test.cmd_tools as cmd_tools


def main() -> None:
    out = sys.argv[1]
    # Feed the node cases (kind "node") to the writer instead of the model cases.
    cmd_tools.model_test.collect_testcases = lambda: node_test.collect_testcases(None)
    cmd_tools.generate_data(argparse.Namespace(output=out))


if __name__ == "__main__":
    main()
