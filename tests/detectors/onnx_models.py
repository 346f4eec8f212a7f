"""Tiny ONNX models built in code (onnx.helper) whose outputs are known: test fixtures for the detector adapter.

Each model really runs in ONNX Runtime: the output is ``constant + 0 * mean(input)`` (so it depends on the
input tensor, which must have the declared shape) or the normalised input itself (``identity``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml


def _save(graph, path: Path) -> Path:
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def constant_model(path: Path, outputs: dict[str, np.ndarray], input_shape: list, input_type: int = 1) -> Path:
    """Outputs ``name -> value`` computed as ``value + 0 * ReduceMean(input)``; input ``images`` of ``input_shape``."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Cast", ["images"], ["xf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceMean", ["xf"], ["m"], keepdims=0),
             helper.make_node("Mul", ["m", "zero"], ["z"])]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    outs = []
    for name, value in outputs.items():
        inits.append(numpy_helper.from_array(value.astype(np.float32), f"{name}_c"))
        nodes.append(helper.make_node("Add", [f"{name}_c", "z"], [name]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape)))
    graph = helper.make_graph(nodes, "constant_detector", [helper.make_tensor_value_info("images", input_type,
                                                                                          input_shape)], outs, inits)
    return _save(graph, path)


def identity_model(path: Path, input_shape: list) -> Path:
    """Output ``out`` = the input tensor (shape as declared, may be dynamic)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Identity", ["images"], ["out"])], "identity",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, input_shape)])
    return _save(graph, path)


def write_yaml(path: Path, model: Path, **spec) -> Path:
    doc = {"model": model.name, **spec}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
