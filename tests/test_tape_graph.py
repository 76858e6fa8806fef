"""The tape as a picture: ``tape.graph()``, ``fn.graph()``, their DOT text and rendering, and
``explain_gradient``'s graph.

Expectations come from the tape's own recording (its records, in order) and from ``tape.gradient``
itself: an op the graph puts on the gradient's path has an output whose gradient is not None, and
a cut path gives a None gradient.
"""
import re
import shutil
import sys
import types

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._recorder import INPUTS, OUTPUTS, TYPE, active_tapes
from gpugrad.errors import GradientError, TraceError
from gpugrad.visual import from_tape, render as render_module
from gpugrad.visual.dot import quote
from tests.conftest import run_in_stand_in


@pytest.fixture(autouse=True)
def no_tape_leaks():
    yield
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"


def expected_edges(records, sources):
    """``(tail, head)`` of every edge, from the records alone: a recorded input is its producer's node,
    a source or another unrecorded input a tensor node (numbered in the order first met, sources first)."""
    producer, tensor_ids, edges = {}, {}, []
    for s in sources:
        tensor_ids.setdefault(id(s), f"t{len(tensor_ids)}")
    for i, rec in enumerate(records):
        for t in rec[INPUTS]:
            if id(t) not in tensor_ids and id(t) not in producer:
                tensor_ids[id(t)] = f"t{len(tensor_ids)}"
        seen = set()
        for t in rec[INPUTS]:
            if id(t) in seen:
                continue
            seen.add(id(t))
            edges.append((tensor_ids[id(t)] if id(t) in tensor_ids else producer[id(t)], f"op{i}"))
        for o in rec[OUTPUTS]:
            producer[id(o)] = f"op{i}"
    return edges, producer, tensor_ids


def check_dot(text):
    """DOT text that parses as far as these checks go: one digraph, balanced braces outside quoted strings,
    unique node ids, every edge's endpoints declared before the edge; returns (node ids, edges)."""
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)  # quoted strings (escapes included) emptied
    assert unquoted.count("{") == unquoted.count("}") > 0
    depth = 0
    for ch in unquoted:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert text.startswith('digraph "') and text.rstrip().endswith("}")
    declared, edges = [], []
    for line in unquoted.splitlines():
        m = re.match(r"\s*(\w+) -> (\w+) \[", line)
        if m:
            assert m.group(1) in declared and m.group(2) in declared, line
            edges.append((m.group(1), m.group(2)))
            continue
        m = re.match(r"\s*(\w+) \[label=", line)
        if m:
            declared.append(m.group(1))
    assert len(declared) == len(set(declared))
    return declared, edges


# --------------------------------------------------------------------------- a tape's graph


def small_expression():
    w = gg.Variable([[1.0, -2.0], [0.5, 3.0]], name="w")
    b = gg.Variable([0.1, 0.2], name="b")
    x = gg.tensor([[1.0, 2.0]])
    with gg.GradientTape(persistent=True) as tape:
        h = gg.relu(gg.matmul(x, w) + b)
        loss = gg.sum(h * h)
        side = gg.mean(gg.exp(w))  # reached from w, not leading to loss
    return tape, loss, side, w, b


def test_a_small_expression_has_the_recorded_ops_in_order_and_their_edges():
    tape, loss, side, w, b = small_expression()
    g = tape.graph(target=loss, sources=[w, b])
    records = tape._ops
    assert [n.op_type for n in g.ops] == [rec[TYPE] for rec in records]
    assert [n.id for n in g.ops] == [f"op{i}" for i in range(len(records))]
    for n, rec in zip(g.ops, records):
        assert n.shapes == tuple(tuple(o.shape) for o in rec[OUTPUTS])
        assert n.dtypes == tuple(str(o.dtype) for o in rec[OUTPUTS])
        assert n.devices == tuple(o._device.name for o in rec[OUTPUTS])
    edges, producer, _ = expected_edges(records, [w, b])
    target_edge = (producer[id(loss)], g.targets[0].id)
    assert [(e.tail, e.head) for e in g.edges] == edges + [target_edge]
    assert [n.label for n in g.sources] == ["w", "b"] and len(g.targets) == 1
    assert [n.op_type for n in g.ops] == ["MatMul", "Add", "Relu", "Mul", "Sum", "Exp", "Mean"]


def test_the_path_is_what_the_gradient_passes_and_the_same_program_gives_the_same_text():
    tape, loss, side, w, b = small_expression()
    g = tape.graph(target=loss, sources=[w, b])
    for n, rec in zip(g.ops, tape._ops):
        reaches_loss = tape.gradient(loss, rec[OUTPUTS][0]) is not None
        reached = any(tape.gradient(rec[OUTPUTS][0], s) is not None for s in (w, b))
        assert (n.status == "path") == (reaches_loss and reached), n
    assert [n.op_type for n in g.path] == ["MatMul", "Add", "Relu", "Mul", "Sum"]
    assert g.node("op5").status == "off"  # Exp: reached, leads elsewhere
    # Mean: a result the loss does not use; the tape cannot tell it from a value taken out through NumPy
    assert [(n.op_type, n.note) for n in g.cut] == [("Mean", from_tape.LEAVES_TAPE)]
    path_edges = {(e.tail, e.head) for e in g.edges if e.on_path}
    assert ("t0", "op0") in path_edges and ("t1", "op1") in path_edges  # w and b send the gradient on
    assert ("t2", "op0") not in path_edges  # the constant x gets none
    assert all(n.status == "path" for n in g.sources + g.targets)
    assert tape.graph(target=loss, sources=[w, b]).to_dot() == g.to_dot()
    tape2, loss2, _, w2, b2 = small_expression()
    assert tape2.graph(target=loss2, sources=[w2, b2]).to_dot() == g.to_dot()


def test_without_a_target_every_op_reached_from_a_source_is_on_the_path():
    tape, loss, side, w, b = small_expression()
    g = tape.graph()  # sources: the tape's watched variables
    assert [n.label for n in g.sources] == ["w", "b"] and not g.targets
    assert [n.status for n in g.ops] == ["path"] * len(g.ops)
    g_side = tape.graph(target=side)
    assert [n.op_type for n in g_side.path] == ["Exp", "Mean"]
    assert tape.gradient(side, b) is None and g_side.node("t1").status == "off"


def test_the_summary_lists_the_ops_in_order():
    tape, loss, side, w, b = small_expression()
    text = str(tape.graph(target=loss))
    lines = text.splitlines()
    assert lines[0] == "tape graph: 7 ops, 2 sources, 1 target; 5 ops on the gradient path, 1 cut"
    op_lines = [line.split()[1] for line in lines if line.split()[0].startswith("op")]
    assert op_lines == [rec[TYPE] for rec in tape._ops]
    assert "  op2    Relu             (1, 2) float32 cpu  <- op1  [path]" in lines


@pytest.mark.parametrize("cut", ["stop_gradient", "numpy", "integer"])
def test_a_cut_path_is_marked_cut_where_the_gradient_stops(cut):
    w = gg.Variable([1.0, 2.0], name="w")
    with gg.GradientTape() as tape:
        z = w * 3.0
        if cut == "stop_gradient":
            y = gg.sum(gg.stop_gradient(z) * w)
        elif cut == "numpy":
            y = gg.sum(gg.tensor(np.asarray(z)) * w)  # z crosses to NumPy and back: a new constant
        else:
            y = gg.sum(gg.cast(gg.cast(z, gg.int32), gg.float32) * w)
    g = tape.graph(target=y, sources=[w])
    cut_node = {"stop_gradient": "StopGradient", "numpy": "Mul", "integer": "Cast"}[cut]
    note = {"stop_gradient": "stop_gradient", "numpy": from_tape.LEAVES_TAPE, "integer": from_tape.INTEGER_OUTPUT}[cut]
    assert [(n.op_type, n.note) for n in g.cut] == [(cut_node, note)]
    assert g.cut[0].id == ("op1" if cut != "numpy" else "op0")
    assert g.node("op0").status == ("off" if cut != "numpy" else "cut")  # z's Mul: before the cut, or the cut
    # the gradient still reaches w through the direct factor: the path is the last Mul and the Sum
    assert [n.op_type for n in g.path] == ["Mul", "Sum"] and g.path[0].id != "op0"
    assert tape.gradient(y, w).numpy().tolist() == z.numpy().tolist()  # d sum(c * w) / dw = c, c = z's values
    _, edges = check_dot(g.to_dot())
    assert (g.cut[0].id in {t for t, _ in edges} | {h for _, h in edges})
    assert "CUT: " in g.to_dot() and 'style="rounded,filled,dashed"' in g.to_dot()


def test_an_unrecorded_target_is_marked_and_its_gradient_is_none():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = gg.sum(gg.tensor(np.asarray(w * 4.0)))
    g = tape.graph(target=y)
    assert g.targets[0].note == "no recorded op made it" and g.targets[0].status == "off"
    assert [n.note for n in g.cut] == [from_tape.LEAVES_TAPE] and not g.path
    assert tape.gradient(y, w) is None


def test_a_persistent_tape_draws_after_gradient_and_a_used_one_says_why_not():
    tape, loss, side, w, b = small_expression()
    before = tape.graph(target=loss).to_dot()
    tape.gradient(loss, [w, b])
    assert tape.graph(target=loss).to_dot() == before  # outside its block the sweep records nothing
    x = gg.Variable(2.0)
    with gg.GradientTape() as used:
        y = x * x
    used.gradient(y, x)
    with pytest.raises(GradientError, match=r"call tape.graph\(\) before tape.gradient\(\)"):
        used.graph()
    with pytest.raises(gg.errors.NotATensorError):
        tape.graph(target=[1.0])


def test_nested_tapes_each_draw_their_own_records():
    x = gg.Variable(1.5, name="x")
    with gg.GradientTape() as outer:
        with gg.GradientTape(persistent=True) as inner:
            y = gg.sin(x) * x
        dy = inner.gradient(y, x)  # recorded on the outer tape, not the inner one (it has stopped)
    g_inner = inner.graph(target=y)
    g_outer = outer.graph(target=dy, sources=[x])
    assert [n.op_type for n in g_inner.ops] == [rec[TYPE] for rec in inner._ops] == ["Sin", "Mul"]
    assert [n.op_type for n in g_outer.ops] == [rec[TYPE] for rec in outer._ops]
    assert outer._ops[:2] == inner._ops and len(outer._ops) > 2  # the forward ops, then the backward sweep's
    assert [n.status for n in g_inner.ops] == ["path", "path"]
    assert g_outer.targets[0].status == "path" and [n.op_type for n in g_outer.path][:2] == ["Sin", "Mul"]
    # y itself: a result dy does not read (the sweep seeds it with ones), so the gradient of dy stops there
    assert [(n.id, n.note) for n in g_outer.cut] == [("op1", from_tape.LEAVES_TAPE)]
    assert g_outer.targets[0].id == g_outer.edges[-1].head and g_outer.edges[-1].on_path
    assert outer.gradient(dy, x) is not None  # the second derivative the outer graph's path carries


def test_labels_are_escaped_in_the_dot_text():
    v = gg.Variable([1.0], name='a "quoted"\\name\nsecond line')
    with gg.GradientTape() as tape:
        y = gg.sum(v * 2.0)
    text = tape.graph(target=y).to_dot()
    assert 'source: a \\"quoted\\"\\\\name\\nsecond line' in text
    check_dot(text)
    assert quote('a"b') == '"a\\"b"'


def test_the_dot_text_parses_with_every_edge_between_declared_nodes():
    tape, loss, side, w, b = small_expression()
    g = tape.graph(target=loss)
    declared, edges = check_dot(g.to_dot())
    assert declared == [n.id for n in g.nodes]
    assert edges == [(e.tail, e.head) for e in g.edges]
    edge_lines = [line for line in g.to_dot().splitlines() if " -> " in line]
    assert [('color="#c0392b" penwidth=2' in line) for line in edge_lines] == [e.on_path for e in g.edges]


# --------------------------------------------------------------------------- a traced function's graph


def mlp_step():
    from gpugrad.training import build_model
    net = build_model("mlp", device="cpu")
    opt = gg.optimizers.Adam(1e-3)
    variables = net.trainable_variables
    rng = np.random.default_rng(0)
    x = gg.tensor(rng.standard_normal((8, 64)).astype(np.float32))
    y = gg.tensor(rng.integers(0, 10, 8))
    step = gg.function(lambda xb, yb: opt.minimize(lambda: gg.softmax_cross_entropy(net(xb), yb), variables))
    return step, x, y, variables


def test_fn_graph_of_a_traced_mlp_step_lists_its_plan_steps():
    step, x, y, variables = mlp_step()
    with pytest.raises(TraceError, match="has not been called yet"):
        step.graph()
    step(x, y)
    g = step.graph()
    stats = step._traces[next(reversed(step._traces))].plan.stats
    kinds = [n.step_kind for n in g.ops]
    assert kinds.count("kernel") == stats["kernel_steps"] and kinds.count("call") == stats["call_steps"]
    assert [n.op_type for n in g.ops][:4] == ["Dense", "Dense", "Dense", "SoftmaxCrossEntropy"]
    update = g.ops[-1]
    assert (update.step_kind, update.call_kind, update.op_type) == ("call", "host", "Optimizer._apply_pairs")
    variables_drawn = [n for n in g.nodes if "variable" in n.roles]
    assert [n.shapes[0] for n in variables_drawn] == [tuple(v.shape) for v in variables]
    assert set(g.inputs_of(update.id)) >= {n.id for n in variables_drawn}  # the update reads every variable
    assert g.inputs_of("step0") == ["t0"] + [n.id for n in variables_drawn[:2]]  # x, the first layer's kernel, bias
    assert [n.label for n in g.nodes if "output" in n.roles] == ["#0"]
    assert g.inputs_of([n.id for n in g.nodes if "output" in n.roles][0]) == ["step3"]  # the loss
    by_type = {n.op_type: n.id for n in g.ops}
    # the gradient step reads the probabilities the forward kernel filled in (an input it computes too)
    assert by_type["SoftmaxCrossEntropy"] in g.inputs_of(by_type["SoftmaxCrossEntropyGrad"])
    assert [n.attrs for n in g.ops][:3] == ["activation=relu", "activation=relu", ""]
    assert all(n.segment is None for n in g.ops) and g.segments == 0  # on the CPU: no CUDA graph
    text = str(g)
    assert text.splitlines()[0] == f"function graph: {len(g.ops)} steps ({kinds.count('kernel')} kernel, 1 call)"
    assert "CALL[HOST] Optimizer._apply_pairs" in text
    check_dot(g.to_dot())


def test_fn_graph_of_a_function_that_runs_eagerly_says_why():
    f = gg.function(lambda x: gg.sum(x[x > 0.0]))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f(gg.tensor([1.0, -2.0]))
    with pytest.raises(TraceError, match="runs eagerly .* boolean-mask indexing"):
        f.graph()


GPU_SEGMENTS = """
    import numpy as np, gpugrad as gg
    f = gg.function(lambda a, m: gg.sum(gg.exp(gg.tanh(gg.matmul(gg.tanh(a) * 1.5 + 0.25, m)) * 0.5) - 1.0))
    rng = np.random.default_rng(0)
    args = [gg.tensor(rng.standard_normal(s).astype(np.float32), device="cuda") for s in ((4, 5), (5, 3))]
    f(*args)
    g = f.graph()
    stats = f._traces[next(reversed(f._traces))].plan.stats
    print("segments", g.segments, stats["graph_segments"], stats["graphed_steps"])
    print("steps", [(n.op_type, n.segment, n.devices) for n in g.ops])
    print("clusters", g.to_dot().count("subgraph cluster_segment"))
"""


def test_fn_graph_on_a_gpu_plan_gives_each_step_its_cuda_graph_segment(tmp_path):
    out = run_in_stand_in(GPU_SEGMENTS, tmp_path)
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    n_segments, graph_segments, graphed = map(int, lines["segments"].split())
    steps = eval(lines["steps"])  # noqa: S307 - our own output
    assert n_segments == graph_segments > 0 and int(lines["clusters"]) == n_segments
    in_segments = [s for _, s, _ in steps if s is not None]
    assert len(in_segments) == graphed
    assert sorted(set(in_segments)) == list(range(n_segments))
    for k in range(n_segments):  # a segment is a run of consecutive steps
        at = [i for i, (_, s, _) in enumerate(steps) if s == k]
        assert at == list(range(at[0], at[0] + len(at))) and len(at) >= 2
    assert all(d == ("cuda:0",) for _, _, d in steps if d)
    assert [t for t, s, _ in steps if t == "MatMul"] and all(s is None for t, s, _ in steps if t in ("MatMul", "Sum"))


# --------------------------------------------------------------------------- explain_gradient's graph


def test_explain_gradient_carries_the_graph_and_names_the_node_where_the_gradient_stops():
    w = gg.Variable([1.0, 2.0], name="w")
    with gg.GradientTape() as tape:
        y = gg.sum(gg.cast(gg.cast(w * 2.0, gg.int32), gg.float32))
    e = gg.explain_gradient(tape, y, w)
    assert e.gradient == "none" and tape.gradient(y, w) is None
    assert [(n.id, n.op_type) for n in e.graph.cut] == [("op1", "Cast")]
    assert "The gradient stops at op 'Cast': node op1 of .graph, marked cut (integer output: no gradient)" in str(e)
    assert str(e).splitlines()[-1].startswith("path: ")
    with gg.GradientTape() as tape2:
        tape2.watch(gg.tensor(1.0))
        z = gg.sum(w * 2.0)
    e = gg.explain_gradient(tape2, z, w)
    assert e.reason == "connected" and e.graph.cut == () and [n.op_type for n in e.graph.path] == ["Mul", "Sum"]
    assert "stops" not in str(e)


# --------------------------------------------------------------------------- render


def small_graph():
    x = gg.Variable([1.0, 2.0], name="x")
    with gg.GradientTape() as tape:
        y = gg.sum(gg.exp(x))
    return tape.graph(target=y)


def test_render_without_the_graphviz_package_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    with pytest.raises(ImportError, match=r'pip install "gpugrad\[graph\]".*apt-get install graphviz'):
        small_graph().render(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_render_without_the_dot_program_names_what_to_install(monkeypatch, tmp_path):
    fake = types.ModuleType("graphviz")

    class ExecutableNotFound(RuntimeError):
        pass

    class Source:
        def __init__(self, text):
            self.text = text

        def pipe(self, format):
            raise ExecutableNotFound("failed to execute PosixPath('dot')")

    fake.ExecutableNotFound, fake.Source = ExecutableNotFound, Source
    monkeypatch.setitem(sys.modules, "graphviz", fake)
    with pytest.raises(ImportError, match=r"Graphviz's dot program.*apt-get install graphviz"):
        small_graph().render(tmp_path / "g.png")


def test_render_takes_svg_png_or_pdf_by_the_suffix():
    with pytest.raises(ValueError, match=r"\.pdf, \.png, \.svg.*'g\.jpg'"):
        small_graph().render("g.jpg")


def have_graphviz():
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


@pytest.mark.skipif(not have_graphviz(), reason="needs the graphviz package (the graph extra) and the dot program "
                                                "(apt-get install graphviz)")
def test_render_draws_svg_and_png_with_graphviz(tmp_path):
    g = small_graph()
    svg = g.render(tmp_path / "g.svg")
    text = (tmp_path / "g.svg").read_text()
    assert svg == tmp_path / "g.svg" and "<svg" in text
    for n in g.nodes:
        assert f"<title>{n.id}</title>" in text  # every node drawn, under its id
    assert "Exp" in text and "source: x" in text
    g.render(tmp_path / "g.png", dpi=50)
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_module.format_of(tmp_path / "g.png") == "png"


def test_named_sources_label_their_nodes():
    from gpugrad.training import build_model
    net = build_model("mlp", device="cpu")
    with gg.GradientTape() as tape:
        loss = gg.mean(net(gg.ones((2, 64))))
    named = dict(net.named_variables())
    g = tape.graph(target=loss, sources=named)
    assert [n.label for n in g.sources] == list(named) and len(set(named)) == 6
    assert [n.shapes[0] for n in g.sources] == [tuple(v.shape) for v in named.values()]
    assert all(n.status == "path" for n in g.sources)


def test_a_decorated_method_s_function_shows_its_graph_and_diagnostics():
    class Model:
        def __init__(self):
            self.w = gg.Variable([1.0, 2.0])

        @gg.function
        def step(self, x):
            return gg.sum(self.w * x)
    m = Model()
    assert m.step(gg.tensor([1.0, 1.0])).item() == 3.0
    assert m.step(gg.tensor([2.0, 1.0])).item() == 4.0 and m.step.trace_count == 1
    assert [n.op_type for n in m.step.graph().ops] == ["Mul", "Sum"]
    assert "2 kernel steps" in m.step.diagnostics()[0]
    assert Model.step is Model.__dict__["step"]  # read from the class: the function itself
