"""The state a converted `if`/loop threads through its generated functions.

Simple names travel as parameters and return values. Attributes and
constant subscripts the statement assigns (`self.y`, `d['k']`) travel the
same way under a local alias, read with `ag__.ld_attr`/`ag__.ld_item` and
written back with `ag__.st_attr`/`ag__.st_item`, so a staged `cond` can
trace each branch from the same starting values:

    if c:                          def if_true(self_y):
        self.y = self.y + 1            ag__.st_attr(self, 'y', self_y)
                          ->           self.y = self.y + 1
                                       return (ag__.ld_attr(self, 'y'),)
                                   self_y, = ag__.if_stmt(c, if_true, None,
                                                          (ag__.ld_attr(self, 'y'),), ('self.y',))
                                   ag__.st_attr(self, 'y', self_y)
"""

from __future__ import annotations

import dataclasses
import re

import gast

from torch_autograph.autograph.pyct import qual_names, templates, transformer


def _expr(qn: qual_names.QN) -> gast.expr:
    """The Load expression of a qualified name."""
    if qn.parent is None:
        return transformer.name(qn.name)
    parent = _expr(qn.parent)
    if qn.subscript:
        return gast.Subscript(value=parent, slice=transformer.constant(qn.name),
                              ctx=gast.Load())
    return gast.Attribute(value=parent, attr=qn.name, ctx=gast.Load())


def _accessor(qn: qual_names.QN, op: str) -> str:
    return f"ag__.{op}_item" if qn.subscript else f"ag__.{op}_attr"


def _load(qn: qual_names.QN) -> gast.expr:
    """The expression reading a parent symbol, its subscripts through `ag__.ld_item`: Undefined where one is missing.

    `x['b']['a']` assigned in a branch is read before the `if` as `ld_item(ld_item(x, 'b'), 'a')`, not
    `ld_item(x['b'], 'a')`: Python raises the KeyError of a missing `x['b']` at the user's assignment, in the
    branch that runs it, not before the `if`.
    """
    if not qn.subscript:  # a name, or an attribute: read as written (`self.bn`), the common case stays readable
        return _expr(qn)
    return templates.replace_as_expression(f"{_accessor(qn, 'ld')}(parent, key)", parent=_load(qn.parent),
                                           key=transformer.constant(qn.name))


@dataclasses.dataclass
class State:
    """Names (and aliased compound symbols) of one statement's state.

    Attributes:
        names: simple variable names, sorted.
        compounds: (qualified name, local alias) pairs, sorted by name.
    """

    names: list
    compounds: list = dataclasses.field(default_factory=list)

    @classmethod
    def build(cls, names: list, qns, excluded_roots: set, namer) -> "State":
        compounds = []
        for qn in sorted((q for q in qns if not q.is_simple), key=str):
            if qn.root.name in excluded_roots:
                continue  # the base itself changes inside: its attributes are not stable
            alias = namer.new_symbol(re.sub(r"\W+", "_", str(qn)).strip("_"))
            compounds.append((qn, alias))
        return cls(list(names), compounds)

    @property
    def params(self) -> list:
        return self.names + [alias for _, alias in self.compounds]

    @property
    def labels(self) -> list:
        return self.names + [str(qn) for qn, _ in self.compounds]

    def __bool__(self) -> bool:
        return bool(self.names or self.compounds)

    def values(self) -> gast.Tuple:
        """The current values: `(x, ag__.ld_attr(self, 'y'))`."""
        elts = [transformer.name(n) for n in self.names]
        for qn, _ in self.compounds:
            elts.append(templates.replace_as_expression(
                f"{_accessor(qn, 'ld')}(parent, key)", parent=_load(qn.parent),
                key=transformer.constant(qn.name)))
        return gast.Tuple(elts=elts, ctx=gast.Load())

    def targets(self) -> gast.Tuple:
        return templates.names_tuple(self.params, gast.Store)

    def restores(self) -> list:
        """Statements writing the aliases back into their symbols."""
        out = []
        for qn, alias in self.compounds:
            out += templates.replace(f"{_accessor(qn, 'st')}(parent, key, alias)",
                                     parent=_load(qn.parent),
                                     key=transformer.constant(qn.name), alias=alias)
        return out


def undeclare(body: list, names: set) -> None:
    """Drop `names` from the `global`/`nonlocal` statements in `body`'s blocks: in the generated function they
    are parameters (or declared by its prologue, `_write_through`); an emptied statement becomes `pass`."""
    for n in transformer.walk_statements(body):
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue  # its own scope: its declarations are its own
        for field in transformer.BLOCK_FIELDS:
            block = getattr(n, field, None)
            if type(block) is list:
                _undeclare_block(block, names)
    _undeclare_block(body, names)


def _undeclare_block(block: list, names: set) -> None:
    for k, s in enumerate(block):
        if isinstance(s, (gast.Global, gast.Nonlocal)) and names & set(s.names):
            s.names = [n for n in s.names if n not in names]
            if not s.names:
                block[k] = transformer.copy_location(gast.Pass(), s)
