"""Run the whole conformance corpus and print its table (`make conformance`).

    python tests/conformance/run_conformance.py            # every program, both backends
    python tests/conformance/run_conformance.py -k cond_basic --no-jit
    python tests/conformance/run_conformance.py --update   # rewrite expected.txt from this run

Prints the counts per source and outcome, then each program whose outcome is
not `equal` with its first error line, then every program whose outcome
differs from `expected.txt`; exits 1 when one does.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import pathlib
import sys
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE)]  # this checkout's package, and the corpus's modules

import corpus  # noqa: E402
import harness  # noqa: E402

CLASSES = ("equal", "refusal", "unlisted refusal", "internal error", "wrong value", "hang", "corpus error")


def outcome_of(program: corpus.Program, backend: str, allowed: dict[str, str]) -> harness.Outcome:
    """The program's outcome, with a refusal not in `allowed_refusals.txt` told apart."""
    outcome = harness.run_case(program.case, program.path, jit=backend == "jit")
    if outcome.kind == harness.REFUSAL and program.id not in allowed:
        return harness.Outcome("unlisted refusal", outcome.detail)
    return outcome


def table(results: dict[tuple[str, str], harness.Outcome], sources: list[str]) -> str:
    """Counts per source (and backend) and outcome class."""
    counts = collections.Counter((pid.split("/")[0], backend, o.kind) for (pid, backend), o in results.items())
    head = f"{'source':<18}{'backend':<9}" + "".join(f"{c:>18}" for c in CLASSES) + f"{'total':>8}"
    lines = [head, "-" * len(head)]
    for source in sources + ["all"]:
        for backend in ("default", "jit"):
            row = [sum(n for (s, b, c), n in counts.items() if (source in ("all", s)) and b == backend and c == k)
                   for k in CLASSES]
            if sum(row):
                lines.append(f"{source:<18}{backend:<9}" + "".join(f"{n:>18}" for n in row) + f"{sum(row):>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only programs whose id contains this")
    parser.add_argument("--no-jit", action="store_true", help="skip the jit_compile=True runs")
    parser.add_argument("--update", action="store_true", help="rewrite expected.txt from this run")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.getLogger("torch_autograph").setLevel(logging.ERROR)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    allowed = corpus.allowed_refusals()
    programs = [p for p in corpus.programs() if args.k in p.id]
    results: dict[tuple[str, str], harness.Outcome] = {}
    start = time.perf_counter()
    for p in programs:
        for backend in ("default", "jit") if p.case.jit and not args.no_jit else ("default",):
            results[(p.id, backend)] = outcome_of(p, backend, allowed)
    print(table(results, list(corpus.SOURCES)))
    print(f"\n{len(programs)} programs, {len(results)} runs in {time.perf_counter() - start:.1f} s\n")
    for (pid, backend), o in results.items():
        if o.kind != "equal":
            reason = f"  [listed: {allowed[pid]}]" if o.kind == "refusal" else ""
            print(f"{o.kind:<17} {backend:<8} {pid}\n    {o.detail}{reason}")
    listing = corpus.expected()
    changed = [(key, listing.get(key, "(not listed)"), o.kind) for key, o in results.items()
               if listing.get(key) != o.kind]
    if args.update:
        merged = {**{k: v for k, v in listing.items() if k[0] in {p.id for p in corpus.programs()}},
                  **{k: o.kind for k, o in results.items()}}
        corpus.write_expected(dict(sorted(merged.items())))
        print(f"\nexpected.txt updated ({len(changed)} changes)")
        return 0
    for (pid, backend), was, now in changed:
        print(f"CHANGED  {backend:<8} {pid}: expected {was}, now {now}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
