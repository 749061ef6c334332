"""The pyct layer alone: parsing, templates, naming, qualified names, analyses, loading."""

from __future__ import annotations

import ast
import linecache
import textwrap

import gast
import pytest

from torch_autograph.autograph.pyct import (
    activity,
    anno,
    ast_gast,
    liveness,
    loader,
    naming,
    origin_info,
    parser,
    qual_names,
    reaching_definitions,
    templates,
    transformer,
)


def _fn(src: str) -> gast.FunctionDef:
    return gast.parse(textwrap.dedent(src)).body[0]


def _find(fn, kind, index=0):
    return [n for n in gast.walk(fn) if isinstance(n, kind)][index]


# -- parser --------------------------------------------------------------------


def method_with_decorator_host():
    class Host:
        @staticmethod
        def meth(x):
            """Docstring
less indented than the body."""
            return x

    return Host.meth


def test_parse_entity_strips_decorators_and_keeps_user_lines():
    meth = method_with_decorator_host()
    parsed = parser.parse_entity(meth)
    assert isinstance(parsed.node, gast.FunctionDef) and parsed.node.decorator_list == []
    assert parsed.node.lineno == meth.__code__.co_firstlineno + 1  # the def, after @staticmethod
    assert parsed.filename == __file__


def test_parse_entity_without_source():
    ns = {}
    exec("def f():\n    pass\n", ns)  # noqa: S102
    with pytest.raises(parser.SourceNotFoundError, match="source code"):
        parser.parse_entity(ns["f"])
    with pytest.raises(parser.SourceNotFoundError):
        parser.parse_entity(len)


_LAYOUTS = '''
@deco(
    1,
)
@deco(2)
def decorated(x):
    return x

def signature_over_lines(
    x,
):
    return x

def string_at_column_0(x):
    s = """
not code
"""
    return s

def backslash(x):
    y = x + \\
1
    return y

def trailing_comments(x):
    return x
# a comment after the function

    # an indented one
def one_liner(x): return x

class Host:
    def method(self, x):
        if x:
            return x
        return -x
    @staticmethod
    def static(x):
        return x
'''


@pytest.mark.parametrize("name", ["decorated", "signature_over_lines", "string_at_column_0", "backslash",
                                  "trailing_comments", "one_liner", "Host.method", "Host.static"])
def test_parse_entity_finds_the_whole_definition(name):
    # The definition's end is found by indentation where that is plain, else by inspect: always the
    # whole def, as the module's own parse has it, at the user's lines.
    filename = f"<layouts {name}>"
    linecache.cache[filename] = (len(_LAYOUTS), None, _LAYOUTS.splitlines(True), filename)
    ns = {"deco": lambda *_: (lambda f: f)}
    exec(compile(_LAYOUTS, filename, "exec"), ns)  # noqa: S102
    fn = ns[name] if "." not in name else vars(ns["Host"])[name.split(".")[1]]
    fn = getattr(fn, "__func__", fn)
    expected = [n for n in ast.walk(ast.parse(_LAYOUTS)) if isinstance(n, ast.FunctionDef)
                and n.name == name.split(".")[-1]][0]
    expected.decorator_list = []
    parsed = parser.parse_entity(fn).node
    assert ast.dump(ast_gast.gast_to_ast(parsed)) == ast.dump(expected)
    assert (parsed.lineno, parsed.end_lineno) == (expected.lineno, expected.end_lineno)


# -- templates / naming / qual_names ----------------------------------------------


def test_templates_substitute_names_nodes_and_bodies():
    body = [gast.parse("y = 1").body[0], gast.parse("z = 2").body[0]]
    (fn,) = templates.replace("def name(params):\n    body\n    return value", name="f",
                              params=["a", "b"], body=body,
                              value=gast.parse("a + b").body[0].value)
    module = gast.gast_to_ast(gast.Module(body=[fn], type_ignores=[]))
    text = ast.unparse(ast.fix_missing_locations(module))
    assert text == "def f(a, b):\n    y = 1\n    z = 2\n    return a + b"


def test_templates_copy_reused_nodes_and_set_store_context():
    value = gast.parse("x").body[0].value
    stmts = templates.replace("target = ag__.ld(value)\nother = value", target=templates.names_tuple(
        ["a", "b"]), value=value)
    assert isinstance(stmts[0].targets[0].ctx, gast.Store)
    assert isinstance(stmts[0].targets[0].elts[0].ctx, gast.Store)
    assert stmts[0].value.args[0] is not stmts[1].value  # the second use is a copy
    # Template line numbers never leak into generated code.
    assert all(getattr(n, "lineno", None) is None for s in stmts for n in gast.walk(s)
               if "lineno" in n._attributes and not (isinstance(n, gast.Name) and n.id == "x"))


def test_namer_is_deterministic_and_avoids_user_names():
    fn = _fn("def f(if_true, loop_body_1):\n    loop_body = 1\n")
    namer = naming.Namer.for_tree(fn)
    assert [namer.new_symbol("if_true"), namer.new_symbol("if_true"),
            namer.new_symbol("loop_body"), namer.new_symbol("x")] == [
        "if_true_1", "if_true_2", "loop_body_2", "x"]


def test_qual_names():
    node = gast.parse("a.b[0].c").body[0].value
    qn = qual_names.from_node(node)
    assert str(qn) == "a.b[0].c" and qn.root == qual_names.QN("a")
    assert qual_names.from_node(gast.parse("a[i]").body[0].value) is None


# -- analyses ----------------------------------------------------------------------


def test_activity_scopes():
    fn = _fn("""
        def f(a):
            b = a + c
            self.x = 1
            d['k'] += 1
            def g(q):
                return q + e
            h = lambda r: r + w
            l = [v for v in u]
            global G
            G = 1
    """)
    act = activity.activity_of(fn.body)
    assert act.read >= {"a", "c", "e", "w", "u", "self", "d"} and not act.read & {"q", "r", "v"}
    assert act.modified == {"b", "g", "h", "l", "G"} and act.declared == {"G"}
    assert {str(q) for q in act.modified_qns} == {"self.x", "d['k']"}
    assert activity.function_locals(fn) == {"a", "b", "g", "h", "l"}
    # The comprehension runs where it is written; the def and the lambda may run later.
    assert activity.captured_by_nested_scopes(fn) == ({"e", "w"}, set())


def test_activity_counts_generated_stores_as_assignments():
    fn = _fn("""
        def f(self, d, v):
            ag__.st_attr(self.a, 'out', ag__.list_append(self.a.out, v))
            ag__.st_item(d, 0, v)
            ag__.st_attr(self, name, v)
    """)
    act = activity.activity_of(fn.body)
    assert {str(q) for q in act.modified_qns} == {"self.a.out", "d[0]"}  # not a variable key
    assert act.modified == set()


def test_liveness_of_branches_and_loops():
    fn = _fn("""
        def f(x, n):
            i = 0
            t = 5
            while i < n:
                t = i * 2
                x = x + t
                i += 1
            if x > 0:
                y = x
            else:
                y = 0
            return y
    """)
    liveness.analyze(fn)
    loop = _find(fn, gast.While)
    assert anno.getanno(loop, anno.Static.LIVE_OUT) == {"x"}
    assert anno.getanno(loop, anno.Static.BODY_LIVE_IN) >= {"i", "n", "x"}
    assert "t" not in anno.getanno(loop, anno.Static.BODY_LIVE_IN)  # written before read
    branch = _find(fn, gast.If)
    assert anno.getanno(branch, anno.Static.LIVE_OUT) == {"y"}
    assert anno.getanno(branch, anno.Static.MODIFIED) == {"y"}


def test_reaching_definitions():
    fn = _fn("""
        def f(c, n):
            if c:
                y = 1
            for i in range(n):
                z = i
            w = 1
            return y + z + w + c
    """)
    reaching_definitions.analyze(fn)
    branch, loop = _find(fn, gast.If), _find(fn, gast.For)
    assert anno.getanno(branch, anno.Static.MAYBE_DEFINED_IN) == {"c", "n"}
    assert anno.getanno(loop, anno.Static.MAYBE_DEFINED_IN) == {"c", "n", "y"}
    loads = {n.id: anno.getanno(n, anno.Static.MAYBE_UNDEFINED)
             for n in gast.walk(fn.body[-1]) if isinstance(n, gast.Name)}
    assert loads == {"y": True, "z": True, "w": False, "c": False}


# -- loader / origin info -----------------------------------------------------------


def test_loader_registers_source_and_origins():
    user = ast.parse("def f(x):\n    return x + 1\n")
    gen_src, owners = loader.unparse_with_origins(user)
    assert gen_src == loader.unparse(user) and owners == {1: 1, 2: 2}
    filename = loader.generated_filename("f", "test-key")
    assert filename == loader.generated_filename("f", "test-key")  # deterministic
    origin_info.register(filename, origin_info.build_line_map(owners, "user.py", "f"))
    ns = loader.load_source(gen_src, filename)
    assert ns["f"](1) == 2
    assert origin_info.lookup(filename, 2) == ("user.py", 2, "f", "")
    import linecache
    assert linecache.getline(filename, 2).strip() == "return x + 1"


def test_compact_unparse_has_no_blank_lines():
    tree = ast.parse("def f():\n    def g():\n        pass\n    def h():\n        pass\n")
    assert "\n\n" not in loader.unparse(tree)


def test_transformer_splices_lists_and_drops_none():
    class T(transformer.Transformer):
        def visit_Pass(self, node):
            return None

        def visit_Expr(self, node):
            return [node, node]

    fn = _fn("def f():\n    pass\n    x\n")
    T().visit(fn)
    assert [type(s).__name__ for s in fn.body] == ["Expr", "Expr"]
