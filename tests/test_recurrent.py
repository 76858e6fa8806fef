"""gg.nn.LSTM, GRU, LSTMCell, GRUCell against PyTorch's semantics.

Oracles: a float64 NumPy transcription of PyTorch's documented formulas (its
gates in PyTorch's order) with central finite differences for the gradients,
which runs everywhere; and PyTorch itself (``torch.nn.LSTM``/``GRU`` and their
cells, weights copied in by name), where torch is installed.
"""
import math

import numpy as np
import pytest

import gpugrad as gg
from tests.conftest import device_params

H, I, T, B = 4, 3, 5, 2


# --------------------------------------------------------------------------- the NumPy oracle


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = _sig(f) * c + _sig(i) * np.tanh(g)
    return _sig(o) * np.tanh(c), c


def np_gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    xr, xz, xn = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    hr, hz, hn = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def np_rnn(kind, params, x, state, num_layers, batch_first):
    """PyTorch's sequence layer in float64, one direction, no projection: ``(out, h_n)`` or ``(out, (h_n, c_n))``."""
    return np_rnn_full(kind, params, x, state, num_layers, batch_first, False, 0)


def flatten_outputs(kind, result):
    out, state = result
    return [out] + (list(state) if kind == "LSTM" else [state])


def make_case(kind, num_layers, batch_first, with_state, seed=0):
    rng = np.random.default_rng(seed)
    shape = (B, T, I) if batch_first else (T, B, I)
    x = rng.standard_normal(shape)
    state = None
    if with_state:
        state = tuple(rng.standard_normal((num_layers, B, H)) for _ in range(2 if kind == "LSTM" else 1))
        state = state if kind == "LSTM" else state[0]
    return x, state


def layer_of(kind, num_layers, batch_first, dtype="float64", device=None, seed=0, **kw):
    cls = gg.nn.LSTM if kind == "LSTM" else gg.nn.GRU
    return cls(I, H, num_layers=num_layers, batch_first=batch_first, dtype=dtype, device=device, seed=seed, **kw)


def loss_weights(kind, outputs, seed=5):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(o)) for o in outputs]


def gg_loss_and_grads(layer, kind, x, state, weights):
    """The loss ``sum(w_j * output_j)`` and its gradients w.r.t. x, the initial state and every parameter."""
    xt = gg.tensor(x, dtype=layer.weight_ih_l0.dtype, device=layer.weight_ih_l0.device)
    states = [] if state is None else [gg.tensor(s, dtype=xt.dtype, device=xt.device)
                                       for s in (state if kind == "LSTM" else (state,))]
    variables = [v for _, v in layer.named_variables()]
    with gg.GradientTape() as tape:
        tape.watch([xt] + states)
        arg = None if state is None else (tuple(states) if kind == "LSTM" else states[0])
        outputs = flatten_outputs(kind, layer(xt, arg))
        loss = gg.sum(gg.stack([gg.sum(o * gg.tensor(w, dtype=o.dtype, device=o.device))
                                for o, w in zip(outputs, weights)]))
    grads = tape.gradient(loss, [xt] + states + variables)
    return [o.numpy() for o in outputs], [g.numpy() for g in grads]


def numerical_grads(fn, arrays, eps=1e-6):
    """Central differences of the scalar ``fn(arrays)`` w.r.t. each array."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            keep = a[idx]
            a[idx] = keep + eps
            up = fn()
            a[idx] = keep - eps
            down = fn()
            a[idx] = keep
            g[idx] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def assert_matches_the_numpy_oracle(layer, kind, x, state, oracle):
    """``layer``'s outputs equal ``oracle(params, x, state)``'s, and its gradients of a weighted sum of them (with
    respect to x, the initial state and every parameter) the oracle's central differences; returns the outputs."""
    params = {name: v.numpy().copy() for name, v in layer.named_variables()}
    want = flatten_outputs(kind, oracle(params, x, state))
    weights = loss_weights(kind, want)
    got, grads = gg_loss_and_grads(layer, kind, x, state, weights)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    states = [] if state is None else [np.array(s) for s in (state if kind == "LSTM" else (state,))]
    x = x.copy()

    def loss():
        st = None if not states else (tuple(states) if kind == "LSTM" else states[0])
        return sum(float(np.sum(o * w)) for o, w in zip(flatten_outputs(kind, oracle(params, x, st)), weights))

    expected = numerical_grads(loss, [x] + states + list(params.values()))
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    return want


CASES = [(kind, layers, bf, st) for kind in ("LSTM", "GRU") for layers in (1, 2) for bf in (False, True)
         for st in (False, True)]


def case_id(case):
    kind, layers, bf, st = case
    return f"{kind}-{layers}layer-{'batch_first' if bf else 'time_major'}-{'state' if st else 'zeros'}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sequence_layer_matches_the_numpy_oracle_values_and_gradients(case):
    kind, num_layers, batch_first, with_state = case
    layer = layer_of(kind, num_layers, batch_first)
    x, state = make_case(kind, num_layers, batch_first, with_state)
    assert_matches_the_numpy_oracle(layer, kind, x, state,
                                    lambda p, x, st: np_rnn(kind, p, x, st, num_layers, batch_first))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_cells_match_the_numpy_oracle_with_and_without_state(kind):
    rng = np.random.default_rng(1)
    cell = (gg.nn.LSTMCell if kind == "LSTM" else gg.nn.GRUCell)(I, H, dtype="float64", seed=3)
    w = [getattr(cell, n).numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    x, h, c = rng.standard_normal((B, I)), rng.standard_normal((B, H)), rng.standard_normal((B, H))
    zeros = np.zeros((B, H))
    if kind == "LSTM":
        for state, (wh, wc) in ((None, np_lstm_step(x, zeros, zeros, *w)), ((h, c), np_lstm_step(x, h, c, *w))):
            got_h, got_c = cell(x, state)
            np.testing.assert_allclose(got_h.numpy(), wh, rtol=1e-12)
            np.testing.assert_allclose(got_c.numpy(), wc, rtol=1e-12)
    else:
        np.testing.assert_allclose(cell(x).numpy(), np_gru_step(x, zeros, *w), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(cell(x, h).numpy(), np_gru_step(x, h, *w), rtol=1e-12)
        # unbatched, as PyTorch's cells take it
        np.testing.assert_allclose(cell(x[0], h[0]).numpy(), np_gru_step(x[:1], h[:1], *w)[0], rtol=1e-12)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_no_bias_and_unbatched_input_follow_pytorch(kind):
    layer = layer_of(kind, 2, False, bias=False)
    names = [n for n, _ in layer.named_variables()]
    assert names == ["weight_ih_l0", "weight_hh_l0", "weight_ih_l1", "weight_hh_l1"]
    x, state = make_case(kind, 2, False, True)
    params = {n: v.numpy() for n, v in layer.named_variables()}
    params.update({f"bias_{s}_l{k}": np.zeros(layer.weight_ih_l0.shape[0]) for s in ("ih", "hh") for k in (0, 1)})
    want = flatten_outputs(kind, np_rnn(kind, params, x, state, 2, False))
    got = flatten_outputs(kind, layer(x, state))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-14)
    # unbatched: (seq_len, input) in, no batch axis in the output or the states
    single = tuple(s[:, 0] for s in state) if kind == "LSTM" else state[:, 0]
    got = flatten_outputs(kind, layer(x[:, 0], single))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w[:, 0] if g.ndim == 2 and w.ndim == 3 else w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind,gates", [("LSTM", 4), ("GRU", 3)])
def test_parameter_shapes_names_and_initialisation_are_pytorchs(kind, gates):
    layer = (gg.nn.LSTM if kind == "LSTM" else gg.nn.GRU)(10, 64, num_layers=2, seed=0)
    shapes = {n: tuple(v.shape) for n, v in layer.named_variables()}
    assert shapes == {"weight_ih_l0": (gates * 64, 10), "weight_hh_l0": (gates * 64, 64),
                      "bias_ih_l0": (gates * 64,), "bias_hh_l0": (gates * 64,),
                      "weight_ih_l1": (gates * 64, 64), "weight_hh_l1": (gates * 64, 64),
                      "bias_ih_l1": (gates * 64,), "bias_hh_l1": (gates * 64,)}
    values = np.concatenate([v.numpy().ravel() for v in layer.variables])
    bound = 1 / math.sqrt(64)
    assert values.dtype == np.float32 and np.abs(values).max() <= bound
    # uniform on (-k, k): the variance is k^2 / 3
    assert abs(values.var() / (bound ** 2 / 3) - 1) < 0.05 and abs(values.mean()) < 0.01 * bound
    again = (gg.nn.LSTM if kind == "LSTM" else gg.nn.GRU)(10, 64, num_layers=2, seed=0)
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(layer.variables, again.variables))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_function_traces_once_per_length_and_equals_eager(kind):
    layer = layer_of(kind, 2, True, dtype="float32")
    weights = None

    def step(x):
        nonlocal weights
        with gg.GradientTape() as tape:
            tape.watch(x)
            outputs = flatten_outputs(kind, layer(x))
            loss = gg.sum(gg.stack([gg.sum(o * o) for o in outputs]))
        return [loss] + tape.gradient(loss, [x] + layer.trainable_variables)

    fn = gg.function(step)
    for length in (5, 5, 3, 5, 3):
        x = gg.tensor(np.random.default_rng(length).standard_normal((B, length, I)).astype(np.float32))
        eager, traced = step(x), fn(x)
        for e, t in zip(eager, traced, strict=True):
            np.testing.assert_array_equal(t.numpy(), e.numpy())
    assert fn.trace_count == 2  # one trace per sequence length


def test_dropout_between_layers_only_while_training():
    layer = layer_of("LSTM", 2, False, dropout=0.5)
    x, _ = make_case("LSTM", 2, False, False)
    plain = {n: v.numpy() for n, v in layer.named_variables()}
    want = np_rnn("LSTM", plain, x, None, 2, False)[0]
    layer.eval()
    np.testing.assert_allclose(layer(x)[0].numpy(), want, rtol=1e-12)
    layer.train()
    gg.random.seed(0)
    dropped = layer(x)[0].numpy()
    assert not np.allclose(dropped, want)
    single = layer_of("LSTM", 1, False, dropout=0.5)  # one layer: no layer after which to drop (PyTorch's)
    np.testing.assert_allclose(single(x)[0].numpy(),
                               np_rnn("LSTM", {n: v.numpy() for n, v in single.named_variables()}, x, None, 1,
                                      False)[0], rtol=1e-12)


@pytest.mark.parametrize("bad,error,match", [
    (lambda: gg.nn.LSTM(3, 0), ValueError, "hidden_size"),
    (lambda: gg.nn.GRU(3.0, 4), TypeError, "input_size"),
    (lambda: gg.nn.LSTM(3, 4, num_layers=0), ValueError, "num_layers"),
    (lambda: gg.nn.LSTM(3, 4, dropout=1.0), ValueError, "dropout"),
    (lambda: gg.nn.LSTM(3, 4)(gg.ones((5, 2, 4))), gg.ShapeError, "LSTM: input"),
    (lambda: gg.nn.GRU(3, 4)(gg.ones((5, 2, 3)), gg.zeros((1, 3, 4))), gg.ShapeError, "GRU: h_0"),
    (lambda: gg.nn.LSTM(3, 4)(gg.ones((5, 2, 3)), gg.zeros((1, 2, 4))), TypeError, "LSTM: the state"),
    (lambda: gg.nn.LSTMCell(3, 4)(gg.ones((2, 3)), (gg.zeros((2, 4)), gg.zeros((2, 5)))), gg.ShapeError,
     "LSTMCell: c"),
    (lambda: gg.nn.GRUCell(3, 4)(gg.ones((2, 2, 3))), gg.ShapeError, "GRUCell: input"),
    (lambda: gg.nn.GRU(3, 4, batch_first=True)(gg.ones((2, 0, 3))), gg.ShapeError, "GRU: the input sequence is empty"),
])
def test_bad_arguments_raise_naming_the_layer(bad, error, match):
    with pytest.raises(error, match=match):
        bad()


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_each_device_computes_the_cpus_values_and_gradients(kind, device):
    x, state = make_case(kind, 2, True, True)
    cpu = layer_of(kind, 2, True, dtype="float32")
    other = layer_of(kind, 2, True, dtype="float32", device=device)
    weights = loss_weights(kind, flatten_outputs(kind, np_rnn(
        kind, {n: v.numpy() for n, v in cpu.named_variables()}, x, state, 2, True)))
    want = gg_loss_and_grads(cpu, kind, x, state, weights)
    got = gg_loss_and_grads(other, kind, x, state, weights)
    for g, w in zip(got[0] + got[1], want[0] + want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- PyTorch as the oracle


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="PyTorch is the test-only oracle of torch.nn.LSTM/GRU; not installed")


def copy_from_torch(layer, module):
    for name, param in module.named_parameters():
        getattr(layer, name).assign(param.detach().numpy())


def assert_matches_pytorch(torch, kind, module, layer, x, state):
    """``layer`` and the PyTorch ``module`` (same weights) give the same outputs and gradients of a weighted sum
    of them with respect to x, the initial state and every parameter."""
    tx = torch.tensor(x, requires_grad=True)
    tstate = None if state is None else (tuple(torch.tensor(s, requires_grad=True) for s in state)
                                         if kind == "LSTM" else torch.tensor(state, requires_grad=True))
    t_outputs = flatten_outputs(kind, module(tx, tstate))
    weights = loss_weights(kind, [o.detach().numpy() for o in t_outputs])
    loss = sum((o * torch.tensor(w)).sum() for o, w in zip(t_outputs, weights))
    leaves = [tx] + ([] if state is None else (list(tstate) if kind == "LSTM" else [tstate])) + \
        list(module.parameters())
    t_grads = torch.autograd.grad(loss, leaves)
    got, grads = gg_loss_and_grads(layer, kind, x, state, weights)
    for g, t in zip(got, t_outputs, strict=True):
        assert g.shape == tuple(t.shape)
        np.testing.assert_allclose(g, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    for g, t in zip(grads, t_grads, strict=True):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sequence_layer_matches_pytorch(case, torch):
    kind, num_layers, batch_first, with_state = case
    module = getattr(torch.nn, kind)(I, H, num_layers=num_layers, batch_first=batch_first).double()
    layer = layer_of(kind, num_layers, batch_first, seed=9)
    copy_from_torch(layer, module)
    assert [n for n, _ in layer.named_variables()] == [n for n, _ in module.named_parameters()]
    x, state = make_case(kind, num_layers, batch_first, with_state)
    assert_matches_pytorch(torch, kind, module, layer, x, state)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_cells_match_pytorch(kind, torch):
    module = getattr(torch.nn, f"{kind}Cell")(I, H).double()
    cell = getattr(gg.nn, f"{kind}Cell")(I, H, dtype="float64")
    copy_from_torch(cell, module)
    rng = np.random.default_rng(2)
    x, h, c = rng.standard_normal((B, I)), rng.standard_normal((B, H)), rng.standard_normal((B, H))
    state = (h, c) if kind == "LSTM" else h
    t_state = tuple(map(torch.tensor, state)) if kind == "LSTM" else torch.tensor(h)
    for args, t_args in (((x,), (torch.tensor(x),)), ((x, state), (torch.tensor(x), t_state))):
        got, want = cell(*args), module(*t_args)
        got, want = (got, want) if kind == "LSTM" else ((got,), (want,))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_pytorch_initialisation_bound_is_the_same(torch):
    module = torch.nn.GRU(10, 64)
    bound = max(float(p.detach().abs().max()) for p in module.parameters())
    ours = max(float(np.abs(v.numpy()).max()) for v in gg.nn.GRU(10, 64, seed=0).variables)
    assert bound <= 1 / math.sqrt(64) and ours <= 1 / math.sqrt(64)
    assert ours > 0.95 / math.sqrt(64) and bound > 0.95 / math.sqrt(64)  # both fill (-k, k)


# --------------------------------------------------------------------------- bidirectional, proj_size


def np_rnn_full(kind, params, x, state, num_layers, batch_first, bidirectional, proj):
    """PyTorch's sequence layer in float64 with its ``bidirectional`` and (LSTM) ``proj_size``."""
    seq = np.swapaxes(x, 0, 1) if batch_first else x
    steps, batch = seq.shape[:2]
    suffixes = ("", "_reverse") if bidirectional else ("",)
    h_size = proj or H
    if state is None:
        count = num_layers * len(suffixes)
        state = (np.zeros((count, batch, h_size)), np.zeros((count, batch, H))) if kind == "LSTM" else \
            np.zeros((count, batch, H))
    hs, cs = [], []
    for k in range(num_layers):
        directions = []
        for d, suffix in enumerate(suffixes):
            idx = k * len(suffixes) + d
            w = [params.get(f"{n}_l{k}{suffix}", np.zeros(1)) for n in ("weight_ih", "weight_hh", "bias_ih",
                                                                       "bias_hh")]
            outs = [None] * steps
            h = state[0][idx] if kind == "LSTM" else state[idx]
            c = state[1][idx] if kind == "LSTM" else None
            for t in (range(steps - 1, -1, -1) if suffix else range(steps)):
                if kind == "LSTM":
                    h, c = np_lstm_step(seq[t], h, c, *w)
                    if proj:
                        h = h @ params[f"weight_hr_l{k}{suffix}"].T
                else:
                    h = np_gru_step(seq[t], h, *w)
                outs[t] = h
            hs.append(h)
            cs.append(c)
            directions.append(np.stack(outs))
        seq = np.concatenate(directions, axis=-1)
    out = np.swapaxes(seq, 0, 1) if batch_first else seq
    return (out, (np.stack(hs), np.stack(cs))) if kind == "LSTM" else (out, np.stack(hs))


FULL_CASES = [("LSTM", 1, True, 0, False), ("LSTM", 2, True, 0, True), ("LSTM", 1, False, 2, True),
              ("LSTM", 2, True, 3, True), ("LSTM", 2, False, 2, False), ("GRU", 2, True, 0, True),
              ("GRU", 1, True, 0, False)]


def full_id(case):
    kind, layers, bidirectional, proj, st = case
    return f"{kind}-{layers}layer{'-bidirectional' if bidirectional else ''}{f'-proj{proj}' if proj else ''}" \
        f"-{'state' if st else 'zeros'}"


def full_case(kind, num_layers, bidirectional, proj, with_state, batch_first=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, T, I) if batch_first else (T, B, I))
    state = None
    if with_state:
        count = num_layers * (2 if bidirectional else 1)
        state = (rng.standard_normal((count, B, proj or H)), rng.standard_normal((count, B, H))) \
            if kind == "LSTM" else rng.standard_normal((count, B, H))
    return x, state


def full_layer(kind, num_layers, bidirectional, proj, seed=0, batch_first=True):
    extra = {"proj_size": proj} if proj else {}
    return layer_of(kind, num_layers, batch_first, seed=seed, bidirectional=bidirectional, **extra)


@pytest.mark.parametrize("case", FULL_CASES, ids=full_id)
def test_bidirectional_and_projection_match_the_numpy_oracle_values_and_gradients(case):
    kind, num_layers, bidirectional, proj, with_state = case
    layer = full_layer(kind, num_layers, bidirectional, proj)
    x, state = full_case(*case)
    want = assert_matches_the_numpy_oracle(
        layer, kind, x, state, lambda p, x, st: np_rnn_full(kind, p, x, st, num_layers, True, bidirectional, proj))
    directions = 2 if bidirectional else 1
    assert want[0].shape == (B, T, directions * (proj or H))
    assert want[1].shape == (directions * num_layers, B, proj or H)


def test_bidirectional_projected_parameters_are_named_shaped_and_ordered_as_pytorchs():
    layer = gg.nn.LSTM(10, 8, num_layers=2, bidirectional=True, proj_size=3, seed=0)
    got = [(n, tuple(v.shape)) for n, v in layer.named_variables()]
    want = []
    for k, size in ((0, 10), (1, 6)):
        for suffix in ("", "_reverse"):
            want += [(f"weight_ih_l{k}{suffix}", (32, size)), (f"weight_hh_l{k}{suffix}", (32, 3)),
                     (f"bias_ih_l{k}{suffix}", (32,)), (f"bias_hh_l{k}{suffix}", (32,)),
                     (f"weight_hr_l{k}{suffix}", (3, 8))]
    assert got == want
    assert max(float(np.abs(v.numpy()).max()) for v in layer.variables) <= 1 / math.sqrt(8)
    assert "bidirectional=True, proj_size=3" in repr(layer)


def test_the_layers_show_pytorchs_arguments_in_their_signature():
    import inspect

    lstm = list(inspect.signature(gg.nn.LSTM).parameters)
    assert lstm[:8] == ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                        "bidirectional", "proj_size"]
    assert list(inspect.signature(gg.nn.GRU).parameters)[6] == "bidirectional"
    assert list(inspect.signature(gg.nn.GRUCell).parameters)[:3] == ["input_size", "hidden_size", "bias"]


@pytest.mark.parametrize("bad,error,match", [
    (lambda: gg.nn.GRU(3, 4, proj_size=2), ValueError, "GRU: proj_size is the LSTM's only"),
    (lambda: gg.nn.LSTM(3, 4, proj_size=4), ValueError, "smaller than hidden_size"),
    (lambda: gg.nn.LSTM(3, 4, proj_size=-1), ValueError, "proj_size must be at least 0"),
    (lambda: gg.nn.LSTM(3, 4, proj_size=2)(gg.ones((5, 2, 3)), (gg.zeros((1, 2, 4)), gg.zeros((1, 2, 4)))),
     gg.ShapeError, r"LSTM: h_0 has shape \(1, 2, 2\)"),
    (lambda: gg.nn.GRU(3, 4, bidirectional=True)(gg.ones((5, 2, 3)), gg.zeros((1, 2, 4))), gg.ShapeError,
     r"GRU: h_0 has shape \(2, 2, 4\)"),
])
def test_bad_bidirectional_and_projection_arguments_raise_naming_the_layer(bad, error, match):
    with pytest.raises(error, match=match):
        bad()


def test_bidirectional_unbatched_input_drops_the_batch_axis():
    layer = full_layer("LSTM", 2, True, 2, batch_first=False)
    x, state = full_case("LSTM", 2, True, 2, True, batch_first=False)
    params = {n: v.numpy() for n, v in layer.named_variables()}
    want = flatten_outputs("LSTM", np_rnn_full("LSTM", params, x[:, :1], tuple(s[:, :1] for s in state), 2, False,
                                               True, 2))
    got = flatten_outputs("LSTM", layer(x[:, 0], tuple(s[:, 0] for s in state)))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w[:, 0], rtol=1e-12, atol=1e-14)


def test_bidirectional_function_equals_eager():
    layer = layer_of("LSTM", 2, True, dtype="float32", bidirectional=True, proj_size=2)

    def step(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            outputs = flatten_outputs("LSTM", layer(x))
            loss = gg.sum(gg.stack([gg.sum(o * o) for o in outputs]))
        return [loss] + tape.gradient(loss, [x] + layer.trainable_variables)

    fn = gg.function(step)
    x = gg.tensor(np.random.default_rng(0).standard_normal((B, T, I)).astype(np.float32))
    for e, t in zip(step(x), fn(x), strict=True):
        np.testing.assert_array_equal(t.numpy(), e.numpy())


@pytest.mark.parametrize("case", FULL_CASES, ids=full_id)
def test_bidirectional_and_projection_match_pytorch(case, torch):
    kind, num_layers, bidirectional, proj, with_state = case
    extra = {"proj_size": proj} if proj else {}
    module = getattr(torch.nn, kind)(I, H, num_layers=num_layers, batch_first=True, bidirectional=bidirectional,
                                     **extra).double()
    layer = full_layer(kind, num_layers, bidirectional, proj, seed=9)
    assert [n for n, _ in layer.named_variables()] == [n for n, _ in module.named_parameters()]
    copy_from_torch(layer, module)
    x, state = full_case(*case)
    assert_matches_pytorch(torch, kind, module, layer, x, state)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("case", [("LSTM", 2, True, 2, True), ("GRU", 2, True, 0, True)], ids=full_id)
def test_bidirectional_and_projection_give_the_cpus_values_and_gradients_on_each_device(case, device):
    kind, num_layers, bidirectional, proj, _ = case
    x, state = full_case(*case)
    extra = {"proj_size": proj} if proj else {}
    cpu, other = (layer_of(kind, num_layers, True, dtype="float32", device=d, bidirectional=bidirectional, **extra)
                  for d in (None, device))
    weights = loss_weights(kind, flatten_outputs(kind, np_rnn_full(
        kind, {n: v.numpy() for n, v in cpu.named_variables()}, x, state, num_layers, True, bidirectional, proj)))
    want = gg_loss_and_grads(cpu, kind, x, state, weights)
    got = gg_loss_and_grads(other, kind, x, state, weights)
    for g, w in zip(got[0] + got[1], want[0] + want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
