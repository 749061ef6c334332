"""Every code block of README.md and docs/ is checked, so the docs cannot drift from the code.

A page's Python blocks run in order in one namespace (with `torch` and `ta` imported), each from its own
`demo.py` (so shown file:line references read `demo.py:N`), in a fresh directory. An HTML comment on the line
before a block says what else it is:

    <!-- doc-check: output -->           the block is what the Python block(s) before it printed; compared line
                                         by line (trailing spaces aside; a line `...` stands for any lines)
    <!-- doc-check: error -->            on a Python block: it raises; the next output block shows the error
    <!-- doc-check: slow -->             on a Python block: run by `make test-slow` only (AOTInductor compiles)
    <!-- doc-check: requires: PROGRAM -->  on a Python block: run where PROGRAM is on PATH (Graphviz's `dot`)
    <!-- doc-check: skip: REASON -->     not run (a shell command, C++, several processes); the reason is required
    <!-- doc-check: setup: CODE -->      on a Python block: CODE (one line, not shown on the page) runs first,
                                         e.g. to define what a fragment uses; may follow another mark's line

Any other block (a shell command, a fragment) without one of these fails the test, so a new block is either
checked or says why not.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
from dataclasses import dataclass

import pytest
import torch

import torch_autograph as ta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md"] + sorted(f"docs/{p}" for p in os.listdir(os.path.join(ROOT, "docs")) if p.endswith(".md"))
_MARK = re.compile(r"^<!-- doc-check: (output|error|slow|skip: .+|requires: \S+) -->$")
_SETUP = re.compile(r"^<!-- doc-check: setup: (.+) -->$")
_BLOCK_PATH = re.compile(r"[^\s\"'(]*block\d+/demo\.py")


@dataclass
class Block:
    lang: str
    text: str
    line: int  # 1-based line of the opening fence
    mark: str | None  # "output", "error", "skip: reason" or None
    setup: str = ""  # code run before the block


def blocks_of(path: str) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the doc-check mark on the line before it."""
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if fence is None:
            i += 1
            continue
        indent, start = fence.group(1), i
        j = i + 1
        while not lines[j].startswith(indent + "```"):
            j += 1
        above = [lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()][:2]
        setup = next((m.group(1) for m in map(_SETUP.match, above[:1]) if m), "")
        marks = [m.group(1) for m in map(_MARK.match, above[1:] if setup else above[:1]) if m]
        body = "\n".join(line[len(indent):] for line in lines[start + 1:j])
        found.append(Block(fence.group(2), body, start + 1, marks[0] if marks else None, setup))
        i = j + 1
    return found


def matches(shown: str, actual: str) -> bool:
    """Whether `actual` is what `shown` shows: line by line, trailing spaces aside, `...` lines any lines."""
    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.split("\n")]
        while out and not out[-1]:
            out.pop()
        return out

    pattern = "".join(r"(?:[^\n]*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n"
                      for line in lines(shown))
    return re.fullmatch(pattern, "\n".join(lines(actual)) + "\n") is not None


def _error_text(e: BaseException) -> str:
    kind = type(e)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{name}: {e}"


def check_page(page: str, tmp_path, slow: bool = False) -> None:
    config = (dict(vars(ta.config._config)), ta.config.profile_user_lines)
    try:
        _run_page(page, tmp_path, slow)
    finally:  # what a page switches on stays on the page
        vars(ta.config._config).clear()
        vars(ta.config._config).update(config[0])
        ta.config.profile_user_lines = config[1]


def _run_page(page: str, tmp_path, slow: bool) -> None:
    namespace: dict = {"torch": torch, "ta": ta, "__name__": "demo"}
    printed, error, ran_python = "", None, False
    cwd = os.getcwd()
    for k, block in enumerate(blocks_of(page)):
        where = f"{page}:{block.line}"
        if block.mark is not None and block.mark.startswith("skip:"):
            assert block.mark[len("skip:"):].strip(), f"{where}: a skip needs its reason"
            continue
        if block.mark == "slow" and not slow:
            continue
        if block.mark is not None and block.mark.startswith("requires:") \
                and shutil.which(block.mark.split(":", 1)[1].strip()) is None:
            continue
        if block.mark == "output":
            assert ran_python, f"{where}: an output block with no Python block before it"
            # Each block ran from its own demo.py: paths to them read `demo.py`, as the page shows them.
            actual = _BLOCK_PATH.sub("demo.py", _error_text(error) if error is not None else printed)
            assert matches(block.text, actual), f"{where}: the block shows\n{block.text}\nbut the code gives\n{actual}"
            continue
        assert block.lang == "python", f"{where}: a ```{block.lang} block with no doc-check mark (output or skip)"
        directory = tmp_path / f"block{k}"
        directory.mkdir()
        source = directory / "demo.py"
        source.write_text(block.text + "\n")
        out = io.StringIO()
        os.chdir(directory)
        try:
            with contextlib.redirect_stdout(out):
                try:
                    if block.setup:
                        exec(block.setup, namespace)  # noqa: S102 - the docs' hidden setup
                    exec(compile(block.text + "\n", str(source), "exec"), namespace)  # noqa: S102 - the docs' code
                    error = None
                except Exception as e:
                    if block.mark != "error":
                        raise AssertionError(f"{where}: the block raised {_error_text(e)}") from e
                    error = e
                else:
                    assert block.mark != "error", f"{where}: the block is marked error but did not raise"
        finally:
            os.chdir(cwd)
        printed, ran_python = out.getvalue(), True


@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_is_checked(page, tmp_path):
    torch.manual_seed(0)
    check_page(page, tmp_path)


def _has_slow_blocks(page: str) -> bool:
    return any(b.mark == "slow" for b in blocks_of(page))


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if _has_slow_blocks(p)])
def test_every_block_of_the_page_runs_with_the_slow_ones(page, tmp_path):
    torch.manual_seed(0)
    check_page(page, tmp_path, slow=True)


def test_the_checker_finds_a_drifted_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1 + 1)\n```\n\n<!-- doc-check: output -->\n```\n3\n```\n")
    with pytest.raises(AssertionError, match="the block shows"):
        check_page(os.path.relpath(page, ROOT), tmp_path)


def test_the_checker_refuses_an_unmarked_shell_block(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```\nmake demo\n```\n")
    with pytest.raises(AssertionError, match="no doc-check mark"):
        check_page(os.path.relpath(page, ROOT), tmp_path)


def test_ellipsis_lines_stand_for_any_lines():
    assert matches("a\n...\nd\n", "a\nb\nc\nd")
    assert matches("a\n...\nd", "a\nd")
    assert not matches("a\n...\nd", "a\nb\nc")


# Figures come from one place: the latest run in benchmarks/README.md. Elsewhere a ratio or a timing is a copy
# that drifts; a page refers to the row instead. Allowed: settings (a threshold of 2 s), `make` timings in README.
_FIGURE = re.compile(r"\b\d+(?:\.\d+)?x\b|\b\d[\d.,–-]*\s?(?:µs|ms)\b|\b\d+\.\d+(?:–\d+\.\d+)?\s?s\b")
_ALLOWED = ("2 s or more", "in 7.9 s` (the duration is that compile's)")


@pytest.mark.parametrize("page", PAGES)
def test_no_benchmark_figure_is_copied_outside_the_benchmarks_readme(page):
    bad = []
    for n, line in enumerate(open(os.path.join(ROOT, page)).read().split("\n"), 1):
        if line.startswith("make ") or any(a in line for a in _ALLOWED):
            continue
        if _FIGURE.search(line):
            bad.append(f"{page}:{n}: {line}")
    assert bad == [], "\n".join(bad)
