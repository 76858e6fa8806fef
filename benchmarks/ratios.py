"""Print gpugrad's ratios to NumPy and PyTorch from one pytest-benchmark JSON file.

Usage::

    pytest benchmarks/ --benchmark-json=out.json
    python benchmarks/ratios.py out.json               # everything below
    python benchmarks/ratios.py --jit-table out.json   # issue 29's must-show table alone

Medians (and minimums, steadier on a busy machine), one line per benchmark,
then per workload and gpugrad device the ratios gpugrad/numpy and
gpugrad/torch of the medians (below 1 means gpugrad is faster), with the ratio
of the minimums in brackets, and the same for ``gpugrad-function`` (the step
through ``gg.function``, replayed); last, the same ratios from the interleaved
benchmarks (the peers timed in alternating blocks, see ``conftest.run_interleaved``),
where ``gpugrad-function`` is divided by eager ``gpugrad`` too; and where the interleaved benchmarks timed
``gpugrad-function-jit`` (``gg.function(jit_compile=True)``, numba installed), the table of
``gg.function(jit_compile=True)``'s must-show (:func:`jit_table_lines`). ``python -m benchmarks.jit_table``
runs the interleaved benchmarks and prints that table.
"""
import json
import sys

# the implementations divided by the peers: eager, gg.function, and gg.function(jit_compile=True)
OURS = ("gpugrad", "gpugrad-function", "gpugrad-function-jit")
PEERS = ("numpy", "torch")
JIT = "gpugrad-function-jit"
# gg.function(jit_compile=True)'s must-show (issue 29), in its order: (workload, the peer jit is divided by, bound)
JIT_TARGETS = (("W1", "numpy", 0.25), ("W3", "numpy", 0.35), ("W2", "numpy", 1.0), ("W4", "gpugrad-function", 1.0),
               ("CNN", "gpugrad-function", 1.0))
TABLE_PEERS = (("numpy", "numpy"), ("gpugrad", "eager"), ("gpugrad-function", "unfused"), (JIT, "jit"),
               ("torch", "torch"))


def medians(report):
    """``{(workload, impl, device): (median, min, extra_info)}``, in seconds, from a pytest-benchmark report.

    Example:
        >>> report = {"benchmarks": [{"extra_info": {"workload": "W3", "impl": "numpy", "device": "cpu"},
        ...                           "stats": {"median": 0.5, "min": 0.4}}]}
        >>> medians(report)[("W3", "numpy", "cpu")][:2]
        (0.5, 0.4)
    """
    found = {}
    for bench in report.get("benchmarks", []):
        info = bench.get("extra_info", {})
        if "interleaved_workload" in info:  # run_interleaved: its ratios are in info
            found[(info["interleaved_workload"], "interleaved", "cpu")] = (bench["stats"]["median"],
                                                                         bench["stats"]["min"], info)
        elif "workload" in info and "impl" in info:
            stats = bench["stats"]
            found[(info["workload"], info["impl"], info.get("device", "cpu"))] = (stats["median"], stats["min"], info)
    return found


def ratio_lines(found):
    """The lines ``main`` prints: a table of medians and minimums, then the ratios.

    Example:
        >>> found = {("W1", "gpugrad", "cpu"): (2e-3, 1.5e-3, {"us_per_op": 2.0}),
        ...          ("W1", "numpy", "cpu"): (1e-3, 1e-3, {"us_per_op": 1.0})}
        >>> print("\\n".join(ratio_lines(found)))  # doctest: +NORMALIZE_WHITESPACE
        workload  impl     device      median        min  us/op (median)
        W1        gpugrad  cpu       2.000 ms   1.500 ms   2.000
        W1        numpy    cpu       1.000 ms   1.000 ms   1.000
        W1  gpugrad(cpu)/numpy = 2.00 (min 1.50)
        W1  gpugrad(cpu)/torch = n/a (no torch result)

    ``gpugrad-function`` rows get the same ratios:

        >>> found[("W1", "gpugrad-function", "cpu")] = (5e-4, 4e-4, {"us_per_op": 0.5})
        >>> found[("W1", "torch", "cpu")] = (2.5e-3, 2e-3, {"us_per_op": 2.5})
        >>> print("\\n".join(ratio_lines(found)))  # doctest: +NORMALIZE_WHITESPACE
        workload  impl              device      median        min  us/op (median)
        W1        gpugrad           cpu       2.000 ms   1.500 ms   2.000
        W1        gpugrad-function  cpu       0.500 ms   0.400 ms   0.500
        W1        numpy             cpu       1.000 ms   1.000 ms   1.000
        W1        torch             cpu       2.500 ms   2.000 ms   2.500
        W1  gpugrad(cpu)/numpy = 2.00 (min 1.50)
        W1  gpugrad(cpu)/torch = 0.80 (min 0.75)
        W1  gpugrad-function(cpu)/numpy = 0.50 (min 0.40)
        W1  gpugrad-function(cpu)/torch = 0.20 (min 0.20)
    """
    lines = [f"{'workload':<9} {'impl':<17} {'device':<9} {'median':>10} {'min':>10}  us/op (median)"]
    for (workload, impl, device), (median, low, info) in sorted(found.items()):
        if impl == "interleaved":
            continue
        per_op = f"{info['us_per_op']:7.3f}" if "us_per_op" in info else ""
        lines.append(f"{workload:<9} {impl:<17} {device:<9} {median * 1e3:7.3f} ms {low * 1e3:7.3f} ms {per_op}")
    for (workload, impl, device), (median, low, _) in sorted(found.items()):
        if impl not in OURS:
            continue
        for other in PEERS:
            base = found.get((workload, other, "cpu"))
            value = f"{median / base[0]:.2f} (min {low / base[1]:.2f})" if base else f"n/a (no {other} result)"
            lines.append(f"{workload}  {impl}({device})/{other} = {value}")
    return lines + interleaved_lines(found)


def interleaved_lines(found):
    """The ratios of the interleaved benchmarks (``run_interleaved``): medians, minimums in brackets.

    Example:
        >>> found = {("W1", "interleaved", "cpu"): (0.1, 0.1, {"interleaved_workload": "W1", "interleaved": {
        ...          "gpugrad": {"median": 1.0, "min": 0.6}, "torch": {"median": 2.0, "min": 1.0}}})}
        >>> interleaved_lines(found)
        ['W1  interleaved gpugrad(cpu)/torch = 0.50 (min 0.60)']

    A ``gpugrad-function`` peer is divided by every other peer, eager ``gpugrad`` among them
    (below 1: the replay is faster than the tape); eager ``gpugrad`` is not divided by it:

        >>> found[("W1", "interleaved", "cpu")][2]["interleaved"]["gpugrad-function"] = {"median": 0.25, "min": 0.2}
        >>> print("\\n".join(interleaved_lines(found)))
        W1  interleaved gpugrad(cpu)/torch = 0.50 (min 0.60)
        W1  interleaved gpugrad-function(cpu)/gpugrad = 0.25 (min 0.33)
        W1  interleaved gpugrad-function(cpu)/torch = 0.12 (min 0.20)
    """
    lines = []
    for (workload, impl, device), (_, _, info) in sorted(found.items()):
        timed = info.get("interleaved", {}) if impl == "interleaved" else {}
        for ours in OURS:
            mine = timed.get(ours)
            for name, peer in sorted(timed.items()):
                if mine and name != ours and not (name in OURS and OURS.index(name) > OURS.index(ours)):
                    # a later one of ours is divided by an earlier one (its inverse is not shown)
                    lines.append(f"{workload}  interleaved {ours}({device})/{name} = "
                                 f"{mine['median'] / peer['median']:.2f} (min {mine['min'] / peer['min']:.2f})")
    return lines


def jit_table_lines(found):
    """``gg.function(jit_compile=True)``'s must-show from the interleaved benchmarks: per workload the median
    milliseconds per call of NumPy by hand, eager gpugrad, ``gg.function`` unfused, fused (``jit``) and PyTorch;
    the ratios jit/numpy and jit/unfused (medians; the ratio of the minimums in brackets); the target and whether
    the medians meet it; then what the jit peer of each workload fused (``jit_fused``, from its diagnostics).

    Example:
        >>> timed = {"numpy": {"median": 2e-3, "min": 2e-3}, "gpugrad-function": {"median": 1e-3, "min": 1e-3},
        ...          "gpugrad-function-jit": {"median": 4e-4, "min": 3e-4}}
        >>> found = {("W1", "interleaved", "cpu"): (0, 0, {"interleaved": timed})}
        >>> print("\\n".join(jit_table_lines(found)[1:4]))  # doctest: +NORMALIZE_WHITESPACE
        workload  numpy ms  eager ms  unfused ms  jit ms  torch ms     jit/numpy   jit/unfused  target
        W1           2.000         -       1.000   0.400         -   0.20 (0.15)   0.40 (0.30)  jit/numpy <= 0.25: ok
        W3      not run
    """
    interleaved = {w: info.get("interleaved", {}) for (w, impl, _), (_, _, info) in found.items()
                   if impl == "interleaved"}
    lines = ["gg.function(jit_compile=True), interleaved: median ms per call; ratios of the medians (of the minimums)",
             f"{'workload':<8}" + "".join(f"{label + ' ms':>{len(label) + 7}}" for _, label in TABLE_PEERS)
             + f"{'jit/numpy':>14}{'jit/unfused':>14}  target"]
    for workload, base, bound in JIT_TARGETS:
        timed = interleaved.get(workload)
        if timed is None:
            lines.append(f"{workload:<8}not run")
            continue
        row = f"{workload:<8}" + "".join(
            f"{timed[peer]['median'] * 1e3:{len(label) + 7}.3f}" if peer in timed else f"{'-':>{len(label) + 7}}"
            for peer, label in TABLE_PEERS)
        for other in ("numpy", "gpugrad-function"):
            mine, theirs = timed.get(JIT), timed.get(other)
            row += (f"{mine['median'] / theirs['median']:7.2f} ({mine['min'] / theirs['min']:.2f})" if mine and theirs
                    else f"{'n/a':>14}")
        name = "jit/numpy" if base == "numpy" else "jit/unfused"
        if JIT not in timed:
            verdict = "not timed (no numba: the jit extra)"
        else:
            verdict = "ok" if timed[JIT]["median"] / timed[base]["median"] <= bound else "MISS"
        lines.append(f"{row}  {name} <= {bound:.2f}: {verdict}")
    fused = {w: info["jit_fused"] for (w, impl, _), (_, _, info) in found.items()
             if impl == "interleaved" and "jit_fused" in info}
    said = [f"{workload} fused: {fused[workload]}" for workload, _, _ in JIT_TARGETS if workload in fused]
    return lines + [line if len(line) <= 116 else line[:112] + " ..." for line in said]  # the JSON keeps it all


def main(argv=None):
    """Read the JSON file named in ``argv`` and print the table (``--jit-table``: the jit table alone); return the
    exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    jit_only = "--jit-table" in argv
    argv = [a for a in argv if a != "--jit-table"]
    if len(argv) != 1:
        print("usage: python benchmarks/ratios.py [--jit-table] BENCHMARK_JSON", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        found = medians(json.load(f))
    if not found:
        print(f"{argv[0]}: no gpugrad benchmark results (was it written by pytest benchmarks/ "
              f"--benchmark-json=...?)", file=sys.stderr)
        return 1
    has_jit = any(JIT in info.get("interleaved", {}) for (_, impl, _), (_, _, info) in found.items()
                  if impl == "interleaved")
    if jit_only:
        print("\n".join(jit_table_lines(found)))
        return 0
    print("\n".join(ratio_lines(found) + ([""] + jit_table_lines(found) if has_jit else [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
