"""What a fuzzed program's run came to, and the tally the long fuzz runs report.

Every outcome falls in one category. These must stay at zero: a `mismatch`
(a value, dtype, gradient or object state different from Python's or eager
PyTorch's), an `internal error` (an exception that names no line of the
program: a bug of ours), a `gradient failure` (backward fails where eager's
works), a `refusal` (a clear error, naming the program's line, for a program
TensorFlow accepts), `raises only eagerly` (eager PyTorch raises and the graph
gives a result), `design rule not broken` (a refusal citing a design rule the
program does not break: `fuzz_structure.breaks` decides from its syntax
tree), `retraced` (a trace not reused for inputs of the same types) and
`eager differs from Python` (where nothing in the program lets eager
tensors differ from Python ints: a bug of the generator or of the rule that
skips the comparison). A `design rule: ...` is a refusal TensorFlow makes too
(listed in DESIGN_RULES) by a program that breaks it; the long runs bound
how many there are (`DESIGN_RULE_BOUND`). `eager raises` means eager PyTorch
fails and the graph fails too. `aliasing` is a mismatch that goes away once
`v += e` is written `v = v + (e)` (an in-place update seen through another
name where eager rebinds): it must stay at zero too, and is told apart only
to say where to look.
"""

from __future__ import annotations

import collections
import re

MUST_BE_ZERO = ("mismatch", "aliasing", "internal error", "gradient failure", "refusal", "raises only eagerly",
                "design rule not broken", "retraced", "eager differs from Python")
# At most this share of a long run may be refused by design rules (each one checked to be broken).
DESIGN_RULE_BOUND = 0.06  # the wider generator's list ranks and loop-first reads break TF's rules by design

# Refusals that are TensorFlow's own rules for graph code: message fragment -> the rule.
DESIGN_RULES = {
    "must also be initialised in the": "a variable defined in one branch only of a tensor `if`",
    "reaches its end without `return`": "a value or None returned depending on a tensor",
    "was raised while tracing a branch": "an exception raised in one branch of a tensor `if`",
    "maximum recursion depth exceeded while tracing": "recursion ending on a tensor condition",
    "loop must iterate at least once": "a variable first defined in a loop that may not run",
    "whose elements are unknown": "a list whose element type is unknown when it is read",
    "before the loop, but shape": "a loop variable changing shape (shape invariants)",
    "is None at the end of the": "None and a tensor merged by a tensor `if` or loop",
    "a graph loop variable keeps its type": "a loop variable changing its type (int to float)",
    "must be defined before the loop": "a variable first assigned in a loop, read where it may be unassigned",
    "a graph list holds tensors of one rank": "a list given elements of different ranks in a tensor `if` or loop",
    "that outlives the call is changed inside a tensor `if` or loop":
        "a Python object that outlives the call changed inside a tensor `if` or loop",
    "grows or shrinks inside the loop or `if` at":
        "a list that outlives the call grown with Python values inside a tensor `if` or loop",
    # A graph value has one type whatever path the graph takes (TensorFlow's `tf.cond` and TensorArray too):
    "both branches must give it the same type":
        "a variable or the return value given different types by the paths of a tensor `if`",
    "both paths must give it the same type":
        "a variable or the return value given different types by the paths of a tensor `if`",
    "a graph list holds tensors of one dtype": "a list given elements of different dtypes in a tensor `if` or loop",
    "tensors before the loop but": "a list given elements of different dtypes in a tensor `if` or loop",
    # (this library's own rule: a `try` around graph ops runs its handler when the graph runs; docs/python-state.md)
    "and does not exist when the handler ran":
        "a value made in a `try` body around graph ops kept elsewhere than in its variables",
    "which has ended where the handler's path meets the body's":
        "a run-time number made in a tensor `if` or loop of a `try` body around graph ops, read on a handler's path",
    "is rebound by the `finally:`": "a `finally:` inside a `try` body around graph ops rebinding what that `try` carries",
    "the `finally:` must run with the value":
        "a `finally:` of a `try` around graph ops changing state from what the body or a handler changes",
}


def classify_error(error: BaseException) -> str:
    """'design rule: ...', 'refusal' (a clear error at the program's line) or 'internal error'."""
    text = str(error)
    for fragment, rule in DESIGN_RULES.items():
        if fragment in text:
            return f"design rule: {rule}"
    return "refusal" if "<fuzz program" in text else "internal error"


def classify_refusal(error: BaseException, source: str, floats: bool) -> str:
    """`classify_error`, where a design rule counts only if the program breaks it (`fuzz_structure.breaks`)."""
    import fuzz_structure

    category = classify_error(error)
    if not category.startswith("design rule: "):
        return category
    rule = category[len("design rule: "):]
    if not fuzz_structure.breaks(rule, source, floats):
        return "design rule not broken"
    if rule == "an exception raised in one branch of a tensor `if`" and not _raised_by_fail(error.__cause__):
        return "internal error"  # an exception the program does not raise (only `fail` raises, a ValueError)
    return category


def _raised_by_fail(error: BaseException | None) -> bool:
    """Whether `error` is the ValueError the generated programs' `fail` helper raises."""
    if not isinstance(error, ValueError) or error.__traceback__ is None:
        return False
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name == "fail"


_AUGMENTED = re.compile(r"^(\s*)([a-z]\w*) ([-+])= (.*)$", re.MULTILINE)


def without_augmented_assignment(source: str) -> str:
    """`v += e` -> `v = v + (e)`: the program with no in-place update (to tell aliasing apart)."""
    return _AUGMENTED.sub(r"\1\2 = \2 \3 (\4)", source)


class Tally:
    """Counts per category, and the first program of each (to reproduce it)."""

    def __init__(self) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.examples: dict = {}

    def add(self, category: str, source: str = "", detail: str = "") -> None:
        self.counts[category] += 1
        self.examples.setdefault(category, (source, detail))

    def failures(self) -> dict:
        return {c: n for c, n in self.counts.items() if c in MUST_BE_ZERO}

    def design_rules(self) -> int:
        return sum(n for c, n in self.counts.items() if c.startswith("design rule: "))

    def within_bound(self) -> bool:
        """No failure, and design-rule refusals within `DESIGN_RULE_BOUND` of all programs."""
        return not self.failures() and self.design_rules() <= DESIGN_RULE_BOUND * sum(self.counts.values())

    def summary(self, title: str) -> str:
        lines = [title] + [f"  {n:6d}  {c}" for c, n in sorted(self.counts.items())]
        for c in self.failures():
            source, detail = self.examples[c]
            lines += [f"first {c}: {detail}", source]
        return "\n".join(lines)
