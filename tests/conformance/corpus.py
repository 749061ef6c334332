"""The corpus: its program files, their cases, the expected listing and the allowed refusals.

Programs live one folder per source (`tf_autograph/`, `mindspore/`,
`pytorch_examples/`); each file is a port with a header naming its origin
and ends with its `CASES`. A program's id is `source/file.py::name`.

`expected.txt` holds the outcome each program had when the listing was
last updated, one `id backend outcome` line each (backend: `default` or
`jit`); `allowed_refusals.txt` holds `id reason` lines: the only programs
whose refusal counts as correct, each with why the construct cannot be a
graph.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import sys

from cases import Case

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = ("tf_autograph", "mindspore", "pytorch_examples")
EXPECTED = HERE / "expected.txt"
ALLOWED_REFUSALS = HERE / "allowed_refusals.txt"


@dataclasses.dataclass(frozen=True)
class Program:
    """One case of one ported file."""

    id: str
    source: str
    path: str
    case: Case


def _load_module(source: str, path: pathlib.Path):
    name = f"conformance_{source}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect.getsource (AutoGraph's conversion) finds the module's file through it
    spec.loader.exec_module(module)
    return module


def programs() -> list[Program]:
    """Every case of every ported file, in file order."""
    found = []
    for source in SOURCES:
        for path in sorted((HERE / source).glob("*.py")):
            for c in _load_module(source, path).CASES:
                found.append(Program(f"{source}/{path.name}::{c.name}", source, str(path), c))
    ids = [p.id for p in found]
    duplicates = {i for i in ids if ids.count(i) > 1}
    assert not duplicates, f"two cases share an id: {sorted(duplicates)}"
    return found


def _rows(path: pathlib.Path) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            rows.append(line.split(None, 2))
    return rows


def expected() -> dict[tuple[str, str], str]:
    """{(program id, backend): outcome} from `expected.txt`."""
    return {(r[0], r[1]): r[2].strip() for r in _rows(EXPECTED)} if EXPECTED.exists() else {}


def allowed_refusals() -> dict[str, str]:
    """{program id: why the construct cannot be a graph} from `allowed_refusals.txt`."""
    return {r[0]: " ".join(r[1:]) for r in _rows(ALLOWED_REFUSALS)}


def write_expected(outcomes: dict[tuple[str, str], str]) -> None:
    """Rewrite `expected.txt` from measured outcomes (`run_conformance.py --update`)."""
    width = max(len(i) for i, _ in outcomes)
    lines = ["# The outcome of each corpus program per backend (tests/conformance/run_conformance.py --update).",
             "# A change of any of them fails the corpus test: update this file when a program is newly fixed."]
    lines += [f"{i:<{width}}  {b:<7}  {o}" for (i, b), o in outcomes.items()]
    EXPECTED.write_text("\n".join(lines) + "\n")
