"""Exporting traced graphs: a graph as exportable Python (`codegen`), as a `torch.export.ExportedProgram` (`program`).

`ConcreteFunction.export()` is the entry point; `ta.saved_model` saves and
loads the programs of a function or module.
"""

from .program import dynamic_shapes, example_inputs, export_graph, exportable_module

__all__ = ["dynamic_shapes", "example_inputs", "export_graph", "exportable_module"]
