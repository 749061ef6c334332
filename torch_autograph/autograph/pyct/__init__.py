"""Python code tools: parse, annotate, analyse, generate and load source (no torch)."""
