"""`ta.function`: the polymorphic Function, its ConcreteFunctions, trace cache, signatures and the compile pipeline."""

from .arguments import bind_arguments
from .export_api import export
from .function import BoundFunction, ConcreteFunction, Function, TraceEvent, function
from .signatures import Identity, Literal, Structure
from .tracebacks import map_origin, user_facing

__all__ = ["BoundFunction", "ConcreteFunction", "Function", "Identity", "Literal", "Structure", "TraceEvent",
           "bind_arguments", "export", "function", "map_origin", "user_facing"]
