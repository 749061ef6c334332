"""Classes whose methods call the builtin zero-argument `super()` inside converted control flow."""


class Base:
    def f(self, x):
        return x + 100


class Child(Base):
    def f(self, x):
        if x > 0:
            y = super().f(x)
        else:
            y = x
        for _ in range(2):
            y = super().f(y)
        return y
