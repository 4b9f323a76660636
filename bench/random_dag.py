"""Writes the random elementwise DAG of onnxruntime's session-creation benchmark as an ONNX file:
NODES nodes of Add/Mul/Relu/Sigmoid on [1,16] f32, each input drawn from the last 64 values
(graph inputs and node outputs); values nobody reads are graph outputs.

usage: random_dag.py NODES OUT.onnx [SEED]
"""
import random
import sys

import onnx
from onnx import TensorProto, helper


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    shape = [1, 16]
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, shape) for i in range(4)]
    values = [i.name for i in inputs]
    read = set()
    nodes = []
    for k in range(n):
        op = rng.choice(["Add", "Mul", "Relu", "Sigmoid"])
        arity = 2 if op in ("Add", "Mul") else 1
        window = values[-64:]
        srcs = [rng.choice(window) for _ in range(arity)]
        read.update(srcs)
        name = f"v{k}"
        nodes.append(helper.make_node(op, srcs, [name], name=f"n{k}"))
        values.append(name)
    outputs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape)
               for v in values[4:] if v not in read]
    graph = helper.make_graph(nodes, "random_dag", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, out)
    print(f"{out}: {n} nodes, {len(outputs)} outputs")


if __name__ == "__main__":
    main()
