"""TensorFlow's tf.function on the P2 and P5 workloads; run under the TF venv (`make bench-tf-setup`).

Prints one JSON object: median µs per call for each workload. Used by
bench_vs_tensorflow.py, which alternates this process with our own
measurements of the same computations.
"""

import json
import os
import statistics
import sys
import timeit

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


@tf.function
def chain(x):
    for _ in range(25):  # a Python loop: unrolled into 200 graph ops, as in P2
        x = x + 0.5
        x = x * 0.9
        x = tf.sin(x)
        x = tf.tanh(x)
        x = x - 0.1
        x = tf.sigmoid(x)
        x = tf.cos(x)
        x = x / 1.1
    return x


@tf.function
def loop_tensor(x, n, a, b):
    for _ in tf.range(n):  # AutoGraph: a graph while loop, as in P5
        x = x * a + b
    return x


@tf.function
def loop_const(x, n):
    for _ in tf.range(n):
        x = x * 0.99 + 0.01
    return x


def median_us(fn, number):
    fn()
    runs = timeit.repeat(fn, number=number, repeat=int(sys.argv[1]) if len(sys.argv) > 1 else 7)
    return statistics.median(runs) / number * 1e6


x = tf.random.normal([16])
n = tf.constant(1000)
a, b = tf.fill([16], 0.99), tf.fill([16], 0.01)
print(json.dumps({
    "P2 chain": median_us(lambda: chain(x), 2000),
    "P5 loop (tensors)": median_us(lambda: loop_tensor(x, n, a, b), 20),
    "P5 loop (consts)": median_us(lambda: loop_const(x, n), 20),
    "tf": tf.__version__,
}))
