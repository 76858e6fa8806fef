"""numba against numexpr as the CPU engine of ``gg.function(jit_compile=True)``, on W1's and W3's fused regions.

Each engine computes the region the fusion finds, fed the same arrays, interleaved in blocks in one process
(as ``conftest.run_interleaved``); NumPy by hand is the unit. numexpr evaluates one expression per output and
re-reads its operands for each (it keeps no values between expressions), and its expression depth is bounded
by Python's parser, so W1's 2000-op chain runs as expressions of at most 50 ops.

Usage::

    python benchmarks/jit_engines.py
"""
import time

import numpy as np


def _interleaved(peers, block, cycles):
    times = {name: [] for name in peers}
    for cycle in range(cycles + 1):
        for name, fn in peers.items():
            for _ in range(block):
                start = time.perf_counter()
                fn()
                if cycle:
                    times[name].append(time.perf_counter() - start)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


def w1_peers():
    import numexpr

    import gpugrad as gg
    from benchmarks import workload_w1 as w1
    x_np = w1.make_x()
    x = gg.tensor(x_np)
    fn = gg.function(w1.gpugrad_w1, jit_compile=True)
    fn(x)
    scale = np.float32(w1.SCALE)
    chunk = 25  # (tanh, *) pairs per numexpr expression

    def numexpr_w1():
        y, saved = x_np, []
        for _ in range(w1.STEPS):  # the tanh outputs are read by the backward pass: written each
            t = numexpr.evaluate("tanh(y)", local_dict={"y": y})
            saved.append(t)
            y = numexpr.evaluate("t * scale", local_dict={"t": t, "scale": scale})
        dy = np.ones_like(y)
        for start in range(len(saved) - 1, -1, -chunk):
            names = {f"t{k}": saved[k] for k in range(max(start - chunk + 1, 0), start + 1)}
            expr = "dy"
            for k in range(start, max(start - chunk + 1, 0) - 1, -1):
                expr = f"(({expr}) * scale * (1 - t{k} * t{k}))"
            dy = numexpr.evaluate(expr, local_dict=dict(names, dy=dy, scale=scale))
        return dy

    np.testing.assert_allclose(numexpr_w1(), w1.numpy_w1(x_np), rtol=1e-4)
    return {"numpy": lambda: w1.numpy_w1(x_np), "numba (gg.function jit)": lambda: fn(x), "numexpr": numexpr_w1}


def w3_peers():
    import numexpr

    import gpugrad as gg
    from benchmarks import workload_w3 as w3
    x_np = w3.make_x()
    x = gg.tensor(x_np)
    fn = gg.function(w3.gpugrad_w3, jit_compile=True)
    fn(x)
    (trace,) = fn._traces.values()
    steps = trace.plan.steps
    out = np.empty_like(x_np)

    def numexpr_w3():
        l = numexpr.evaluate("log(x)", local_dict={"x": x_np})  # noqa: E741
        numexpr.evaluate("sum(l * l)", local_dict={"l": l})
        return numexpr.evaluate("(l + l) / x", local_dict={"l": l, "x": x_np}, out=out)

    def numexpr_w3_one_pass():  # log computed twice, no intermediate array
        numexpr.evaluate("sum(log(x) ** 2)", local_dict={"x": x_np})
        return numexpr.evaluate("2 * log(x) / x", local_dict={"x": x_np}, out=out)

    return {"numpy": lambda: w3.numpy_w3(x_np), "numba (gg.function jit)": lambda: fn(x),
            "numba (the plan's steps alone)": lambda: [s() for s in steps],
            "numexpr (log, then the rest)": numexpr_w3, "numexpr (one pass each)": numexpr_w3_one_pass}


def main():
    import numexpr

    import gpugrad as gg
    numexpr.set_num_threads(gg.get_num_threads())
    for name, peers, block in (("W1", w1_peers(), 20), ("W3", w3_peers(), 3)):
        medians = _interleaved(peers, block, 10)
        for peer, t in medians.items():
            print(f"{name}  {peer:34s} {t * 1e3:8.3f} ms   {t / medians['numpy']:.2f}x numpy")


if __name__ == "__main__":
    main()
