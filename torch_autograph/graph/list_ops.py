"""The graph list ops as the graph runs them: a graph list is a Python list at run time.

Tracing records these functions as FUNCTION ops (tracing/lists.py); an op that
changes its list returns it, so the list's new version is the op's output
(`%acc_2 = append(%acc, %y)`). Lowerings (exporting/list_lowering.py) match
them by identity.
"""

from __future__ import annotations

from typing import Any

import torch


def list_new(*items: Any) -> list:
    return list(items)


def list_append(lst: list, item: Any) -> list:
    lst.append(item)
    return lst


def list_pop(lst: list, index: int = -1) -> tuple[list, Any]:
    return lst, lst.pop(index)


def list_insert(lst: list, index: int, item: Any) -> list:
    lst.insert(index, item)
    return lst


def list_delitem(lst: list, index: Any) -> list:
    del lst[index]
    return lst


def list_setitem(lst: list, index: Any, item: Any) -> list:
    lst[index] = item
    return lst


def list_len(lst: list) -> int:
    return len(lst)


def list_from_rows(t: torch.Tensor) -> list:
    return list(t.unbind(0))
