"""Every node of this family's ops inside the multi-op ONNX node tests (expanded tests
included; subgraph bodies not), cut out as a single-node test with the inputs and outputs the
ONNX reference implementation computes for it. Checks the kernels on the exact shapes,
dtypes and attributes the multi-family tests will feed them.

    build/venv/bin/python crates/rge-kernels-tensor/tests/extract_node_cases.py /tmp/tensor-nodes
    RGE_ONNX_NODE_TESTS=/tmp/tensor-nodes cargo test -p rge-kernels-tensor --test onnx_nodes -- --nocapture
"""

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from onnx.reference import ReferenceEvaluator

D = os.path.join(os.path.dirname(__file__), "../../../build/onnx-node-tests/node")
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tensor-nodes"
shutil.rmtree(OUT, ignore_errors=True); os.makedirs(OUT)
mine=set("Identity Constant Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Gather GatherElements GatherND Scatter ScatterElements ScatterND TensorScatter Pad Tile Expand DepthToSpace SpaceToDepth Compress NonZero Unique TopK OneHot Range Shape Size ConstantOfShape EyeLike Trilu ReverseSequence CenterCropPad SequenceConstruct SequenceAt SequenceInsert SequenceErase SequenceLength SequenceEmpty SplitToSequence ConcatFromSequence Optional OptionalHasElement OptionalGetElement".split())

def read_pb(path, vi):
    b=open(path,'rb').read()
    t=vi.type
    if t.HasField('sequence_type'):
        s=onnx.SequenceProto(); s.ParseFromString(b); return numpy_helper.to_list(s)
    if t.HasField('optional_type'):
        o=onnx.OptionalProto(); o.ParseFromString(b); return numpy_helper.to_optional(o)
    tp=onnx.TensorProto(); tp.ParseFromString(b); return numpy_helper.to_array(tp)

def vi_of(name, v):
    if isinstance(v, list):
        elem = helper.np_dtype_to_tensor_dtype(v[0].dtype) if v else TensorProto.FLOAT
        return helper.make_tensor_sequence_value_info(name, elem, None)
    v=np.asarray(v)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)

def pb(name, v):
    if isinstance(v, list): return numpy_helper.from_list(v, name=name)
    return numpy_helper.from_array(np.asarray(v), name)

n=0
for t in sorted(os.listdir(D)):
    m=onnx.load(os.path.join(D,t,'model.onnx'))
    nodes=[x for x in m.graph.node if x.op_type in mine]
    if not nodes: continue
    if all(x.op_type in mine for x in m.graph.node): continue  # already a covered test
    ds=os.path.join(D,t,'test_data_set_0')
    feeds={}
    for i,vi in enumerate(m.graph.input):
        p=os.path.join(ds,f'input_{i}.pb')
        if os.path.exists(p): feeds[vi.name]=read_pb(p, vi)
    try:
        ref=ReferenceEvaluator(m)
        res=ref.run(None, feeds, intermediate=True)
    except Exception as e:
        print('skip', t, type(e).__name__, str(e)[:80]); continue
    for k,node in enumerate(nodes):
        vals={**feeds, **res}
        ins=[]; ok=True
        for name in node.input:
            if name=='' : ins.append(('',None)); continue
            if name in vals: ins.append((name, vals[name]))
            else:
                # initializer
                init=[x for x in m.graph.initializer if x.name==name]
                if init: ins.append((name, numpy_helper.to_array(init[0])))
                else: ok=False
        outs=[]
        for name in node.output:
            if name and name in vals: outs.append((name, vals[name]))
            else: ok=False
        if not ok or any(v is None for nm,v in ins if nm) or any(v is None or not isinstance(v,(np.ndarray,list,np.generic)) for _,v in outs):
            continue
        # rename to avoid clashes
        nn=helper.make_node(node.op_type, [f'i{j}' if nm else '' for j,(nm,_) in enumerate(ins)], [f'o{j}' for j in range(len(outs))], domain=node.domain)
        nn.attribute.extend(node.attribute)
        g=helper.make_graph([nn], 'g', [vi_of(f'i{j}', v) for j,(nm,v) in enumerate(ins) if nm], [vi_of(f'o{j}', v) for j,(_,v) in enumerate(outs)])
        mm=helper.make_model(g, opset_imports=m.opset_import); mm.ir_version=m.ir_version
        d=os.path.join(OUT, f'test_n_{t[5:]}_{k}_{node.op_type}')
        os.makedirs(os.path.join(d,'test_data_set_0'))
        onnx.save(mm, os.path.join(d,'model.onnx'))
        q=0
        for j,(nm,v) in enumerate(ins):
            if nm:
                open(os.path.join(d,'test_data_set_0',f'input_{q}.pb'),'wb').write(pb(f'i{j}',v).SerializeToString()); q+=1
        for j,(_,v) in enumerate(outs):
            open(os.path.join(d,'test_data_set_0',f'output_{j}.pb'),'wb').write(pb(f'o{j}',v).SerializeToString())
        n+=1
print('wrote', n)
