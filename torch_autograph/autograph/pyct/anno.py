"""Annotations attached to AST nodes, keyed by enum members.

Converters and analyses communicate through these instead of ad-hoc node
attributes, so every key in use is listed here.
"""

from __future__ import annotations

import enum
from typing import Any

ANNO_ATTR = "___ta_anno"  # the node attribute holding its annotations dict


class Basic(enum.Enum):
    """Keys set by the converters themselves."""

    SKIP_PROCESSING = "the node was generated; converters leave it alone"
    EXTRA_LOOP_TEST = "an expression and-ed into a for loop's test (break/return flags)"
    LOOP_OPTIONS = "dict of option name -> expression node, from set_loop_options"
    EXPRESSION_TEMP = "a generated name bound and read inside one expression; analyses ignore it"
    TRUTH_ONLY = "an and/or whose value is read only for its truth (an if/while/assert test)"
    TRY_SUCCEEDED = "on a try with handlers and else: the name its else tests (True: the body raised nothing)"


class Static(enum.Enum):
    """Keys set by static analysis (recomputed before the converters that need them)."""

    LIVE_OUT = "frozenset of names live right after the statement"
    LIVE_IN = "frozenset of names live right before the statement"
    BODY_LIVE_IN = "frozenset of names live at the start of a loop body / branch"
    ORELSE_LIVE_IN = "frozenset of names live at the start of an else branch"
    FINALLY_LIVE_IN = "on a try: frozenset of names live after its body, handlers and else (its finally, then on)"
    MAYBE_DEFINED_IN = "frozenset of names some definition of which may reach the statement"
    MAYBE_UNDEFINED = "True on a Name load that no definition reaches on every path"
    MODIFIED = "frozenset of names the statement assigns (any depth, same scope)"
    MODIFIED_QNS = "frozenset of attributes/subscripts (QN) the statement assigns"
    ELEMENT_WRITES = "frozenset of names whose elements the statement assigns at a non-constant index"
    READ = "frozenset of names the statement reads (any depth, same scope)"


def getanno(node: Any, key: enum.Enum, default: Any = None) -> Any:
    """Returns the annotation `key` of `node`, or `default`."""
    return getattr(node, ANNO_ATTR, {}).get(key, default)


def hasanno(node: Any, key: enum.Enum) -> bool:
    return key in getattr(node, ANNO_ATTR, {})


def setanno(node: Any, key: enum.Enum, value: Any) -> None:
    annos = getattr(node, ANNO_ATTR, None)
    if annos is None:
        annos = {}
        setattr(node, ANNO_ATTR, annos)
        # gast/ast nodes list their fields; the annotation must not become one.
    annos[key] = value


def delanno(node: Any, key: enum.Enum) -> None:
    getattr(node, ANNO_ATTR, {}).pop(key, None)
