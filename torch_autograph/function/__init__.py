"""`ta.function`: the polymorphic Function, its ConcreteFunctions, trace cache, signatures and the compile pipeline."""

from .function import ConcreteFunction, Function, TraceEvent, function

__all__ = ["ConcreteFunction", "Function", "TraceEvent", "function"]
