"""The graph IR and the tracer that records torch calls into it."""

from .graph import Graph, Node, Op, OpKind, SourceLocation, Value, ValueKind
from .tensor import GraphShape, GraphTensor

__all__ = ["Graph", "GraphShape", "GraphTensor", "Node", "Op", "OpKind", "SourceLocation", "Value", "ValueKind"]
