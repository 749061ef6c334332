"""User code for test_staging.py: control flow that depends on staged values."""


def break_in_python_loop(x):
    s = 0
    for i in range(5):
        if x < i:
            break
        s += i
    return s


def break_in_python_list_loop(x):
    s = 0
    for i in [0, 1, 2, 3, 4]:
        if x < i:
            break
        s += i
    return s


def return_in_python_loop(x):
    for i in range(5):
        if x < i:
            return i * 10
    return -1


def python_while_turns_staged(x):
    i = 0
    while i < 4:
        i = i + x  # a staged x makes i, and the condition, staged
    return i


class Acc:
    def __init__(self):
        self.total = 0

    def add(self, x):
        if x > 0:
            self.total = self.total + x
        else:
            self.total = self.total - 1
        return self.total


def loop_over_staged_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


def enumerate_zip(n, xs):
    s = 0
    for i, x in enumerate(range(n)):
        s += i * x
    for a, b in zip(range(n), xs):
        s += a * b
    return s


def list_in_staged_loop(n):
    out = []
    for i in range(n):
        out.append(i * i)
    return out


def assert_staged(x):
    assert x > 0, "x must be positive"
    return x


class Recorder:
    """Appends to an attribute's list in a loop; `squares` is read-only (a property)."""

    def __init__(self):
        self.out = []
        self._squares = []

    @property
    def squares(self):
        return self._squares

    def run(self, n):
        self.out = []
        for i in range(n):
            self.out.append(i * i)
        last = self.out.pop()
        return self.out, last

    def fill_read_only(self, n):
        for i in range(n):
            self.squares.append(i * i)
        return self.squares
