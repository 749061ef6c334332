"""`str(graph)` stays readable: lines within 120 columns, long calls wrapped, sub-graphs indented (golden)."""

import torch

import torch_autograph as ta
from torch_autograph.graph.printing import WIDTH


def _branchy(x, n):
    if x.sum() > 0:
        y = x * 2
    else:
        y = torch.nn.functional.layer_norm(x, (3,), weight=torch.ones(3), bias=torch.zeros(3), eps=1e-5) - 1
    i = 0
    while i < n:
        y = torch.tanh(y) + i
        i += 1
    assert y.sum() > -100, "too small"
    return y


def test_comments_align_per_block_and_move_above_a_line_they_would_push_past_120_columns():
    cf = ta.function(_branchy).get_concrete_function(ta.TensorSpec([None, 3]), torch.tensor(3))
    first = _branchy.__code__.co_firstlineno
    text = str(cf.graph)

    def at(k: int) -> str:
        return f"test_printing.py:{first + k}"

    assert text == f"""\
graph _branchy(x: float32[u0, 3] cpu, n: int64[] cpu) {{
  sizes: u0 = x.size(0)
  %sum: float32[] cpu = %x.sum()                                              # {at(1)}
  %gt: bool[] cpu = %sum > 0                                                  # {at(1)}
  %y: float32[u0, 3] cpu = cond(%gt)                                          # {at(1)}
    graph true(x: float32[u0, 3] cpu) {{
      %mul: float32[u0, 3] cpu = %x * 2  # {at(2)}
      return %mul
    }}
    graph false(x: float32[u0, 3] cpu) {{
      %ones: float32[3] cpu = torch.ones(3)       # {at(4)}
      %zeros: float32[3] cpu = torch.zeros(3)     # {at(4)}
      # {at(4)}
      %layer_norm: float32[u0, 3] cpu = torch.nn.functional.layer_norm(%x, (3,), weight=%ones, bias=%zeros, eps=1e-05)
      %sub: float32[u0, 3] cpu = %layer_norm - 1  # {at(4)}
      return %sub
    }}
  %i_1: int, %y_2: float32[u0, 3] cpu = while((0, %y), loop_vars=(%i, %y_1))  # {at(6)}
    graph cond(i: int, y_1: float32[u0, 3] cpu, n: int64[] cpu) {{
      %gt_3: bool[] cpu = %n > %i  # {at(6)}
      return %gt_3
    }}
    graph body(i: int, y_1: float32[u0, 3] cpu) {{
      %tanh: float32[u0, 3] cpu = torch.tanh(%y_1)  # {at(7)}
      %add: float32[u0, 3] cpu = %tanh + %i         # {at(7)}
      %sym: int = expr[u1 + 1](%i)                  # {at(6)}
      return %sym, %add
    }}
  %sum_1: float32[] cpu = %y_2.sum()                                          # {at(9)}
  %gt_4: bool[] cpu = %sum_1 > -100                                           # {at(9)}
  check(%gt_4, 'assertion failed: too small')                                 # {at(9)}
  return %y_2
}}"""
    assert max(map(len, text.splitlines())) <= WIDTH


def test_a_node_that_does_not_fit_has_its_comment_on_the_line_above():
    def many(a):
        return torch.stack([a, a + 1, a + 2, a + 3, a + 4, a + 5, a + 6, a + 7, a + 8, a + 9, a + 10, a + 11])

    f = ta.function(many, autograph=False)
    lines = str(f.get_concrete_function(ta.TensorSpec([2])).graph).splitlines()
    i = next(k for k, line in enumerate(lines) if "torch.stack(" in line)
    line = many.__code__.co_firstlineno + 1
    assert lines[i - 1] == f"  # test_printing.py:{line}"
    assert lines[i] == "  %stack: float32[12, 2] cpu = torch.stack([%a, %add, %add_1, %add_2, %add_3, %add_4, %add_5, " \
                       "%add_6, %add_7, %add_8,"
    assert lines[i + 1] == "      %add_9, %add_10])"
    assert max(map(len, lines)) <= WIDTH
