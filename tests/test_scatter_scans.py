"""Issue 28's indexing and cumulative ops against NumPy (values, always) and PyTorch (values and gradients,
where it is installed): scatter, scatter_add, index_add, scatter_reduce, one_hot, masked_fill, topk, cummax,
cummin, logcumsumexp (PyTorch); segment_* and gather(batch_dims=) (TensorFlow, with a NumPy loop as the
oracle); unique, bincount, meshgrid (NumPy). Plus their errors, gg.function with data-dependent shapes, and
the GPU path on the stand-in CuPy (range checks raise at the next host read, no read at the op)."""
import numpy as np
import pytest

import gpugrad as gg
from tests.conftest import device_params, run_in_stand_in

RNG = np.random.default_rng(7)


def grad_of(fn, *xs):
    xs = [gg.tensor(x) for x in xs]
    with gg.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        out = fn(*xs)
        w = gg.tensor(np.arange(1.0, out.size + 1).reshape(out.shape))  # a weighted sum: each output counts
        loss = gg.sum(out * w)
    return out.numpy(), [g.numpy() if g is not None else None for g in tape.gradient(loss, xs)]


# ---------------------------------------------------------------- NumPy as the oracle


def scatter_reference(x, axis, index, src, combine):
    out = x.copy()
    for p in np.ndindex(*index.shape):
        q = list(p)
        q[axis] = index[p]
        out[tuple(q)] = combine(out[tuple(q)], src[p])
    return out


def test_scatter_and_scatter_add_and_index_add_match_numpy_loops():
    x = RNG.normal(size=(4, 5))
    index = np.array([[3, 0, 1, 2], [0, 0, 3, 1]])
    src = RNG.normal(size=(2, 6))
    want = scatter_reference(x, 0, index, src, lambda a, b: b)
    got = gg.scatter(gg.tensor(x), 0, index, gg.tensor(src[:2, :4].copy())).numpy()
    np.testing.assert_array_equal(got[:, :4], want[:, :4])
    np.testing.assert_array_equal(got[:, 4], x[:, 4])
    # src larger than index: its first elements are read, as PyTorch reads them
    np.testing.assert_array_equal(gg.scatter(gg.tensor(x), 0, index, gg.tensor(src)).numpy(), want)
    want_add = scatter_reference(x, 1, index, src, lambda a, b: a + b)
    np.testing.assert_allclose(gg.scatter_add(gg.tensor(x), 1, index, gg.tensor(src)).numpy(), want_add)
    source = RNG.normal(size=(4, 3))
    want_index_add = x.copy()
    np.add.at(want_index_add, (slice(None), [4, 0, 4]), 2.0 * source)
    np.testing.assert_allclose(gg.index_add(gg.tensor(x), 1, [4, 0, 4], gg.tensor(source), alpha=2.0).numpy(),
                               want_index_add)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_a_numpy_loop(reduce, include_self):
    x = RNG.normal(size=(3, 4))
    index = np.array([[0, 2, 0, 0], [2, 2, 1, 0]])
    src = RNG.normal(size=(2, 4))
    groups = {}
    for p in np.ndindex(*index.shape):
        groups.setdefault((index[p], p[1]), []).append(src[p])
    want = x.copy()
    for q, values in groups.items():
        values = values + ([x[q]] if include_self else [])
        want[q] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](values)
    got = gg.scatter_reduce(gg.tensor(x), 0, index, gg.tensor(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def segment_reference(data, ids, n, reduce, empty):
    out = np.full((n,) + data.shape[ids.ndim:], empty, dtype=data.dtype)
    for s in range(n):
        rows = data[ids == s]
        if len(rows):
            out[s] = reduce(rows, axis=0)
    return out


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_segment_ops_match_tensorflows_rules(name):
    data = RNG.normal(size=(7, 2))
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[name]
    fn = getattr(gg, f"segment_{name}")
    sorted_ids = np.array([0, 0, 1, 1, 1, 4, 4])  # segments 2 and 3 empty: 0 in tf.math.segment_*
    np.testing.assert_allclose(fn(gg.tensor(data), sorted_ids).numpy(),
                               segment_reference(data, sorted_ids, 5, reduce, 0.0), rtol=1e-12)
    # unsorted, a negative id dropped, an empty segment: 0 for sum/mean, the lowest/highest for max/min
    ids = np.array([3, -1, 0, 3, 1, 0, -2])
    empty = {"sum": 0.0, "mean": 0.0, "max": np.finfo(np.float64).min, "min": np.finfo(np.float64).max}[name]
    np.testing.assert_allclose(fn(gg.tensor(data), ids, num_segments=5).numpy(),
                               segment_reference(data, ids, 5, reduce, empty), rtol=1e-12)


def test_segment_ids_of_several_dimensions_and_their_errors():
    data = RNG.normal(size=(2, 3, 2))
    ids = np.array([[0, 2, 0], [1, 1, 2]])
    np.testing.assert_allclose(gg.segment_sum(gg.tensor(data), ids, num_segments=3).numpy(),
                               segment_reference(data, ids, 3, np.sum, 0.0))
    with pytest.raises(gg.IndexOutOfRangeError, match="'SegmentSum': segment id 3 is not below num_segments 3"):
        gg.segment_sum(gg.tensor(data), ids + 1, num_segments=3)
    with pytest.raises(gg.IndexOutOfRangeError, match="'SegmentMax': segment ids must be sorted"):
        gg.segment_max(gg.tensor(data[0]), [1, 0, 2])
    with pytest.raises(gg.ShapeError, match="'SegmentMean'"):
        gg.segment_mean(gg.tensor(data), [0, 1, 2])


def test_gather_with_batch_dims_matches_tf_gather_as_a_loop():
    params = RNG.normal(size=(2, 3, 4, 5))
    indices = RNG.integers(-3, 3, size=(2, 3, 6))
    for b, axis in [(1, 1), (1, 2), (2, 2), (1, 3), (-1, 3)]:
        bb = b % indices.ndim
        got = gg.gather(gg.tensor(params), indices, axis=axis, batch_dims=b).numpy()
        want = np.empty(params.shape[:axis] + indices.shape[bb:] + params.shape[axis + 1:])
        for p in np.ndindex(*params.shape[:bb]):
            want[p] = np.take(params[p], indices[p], axis=axis - bb)
        np.testing.assert_array_equal(got, want)
    assert gg.gather(gg.tensor(params), indices, batch_dims=2).shape == (2, 3, 6, 5)  # axis defaults to batch_dims
    with pytest.raises(gg.ShapeError, match="'Gather'"):
        gg.gather(gg.tensor(params), indices, axis=0, batch_dims=1)
    with pytest.raises(gg.IndexOutOfRangeError, match="'Gather'"):
        gg.gather(gg.tensor(params), indices + 4, axis=2, batch_dims=1)


def test_cummax_cummin_topk_logcumsumexp_values_match_numpy():
    x = RNG.normal(size=(4, 6))
    v, i = gg.cummax(gg.tensor(x), axis=1)
    np.testing.assert_array_equal(v.numpy(), np.maximum.accumulate(x, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, i.numpy(), 1), v.numpy())
    v, i = gg.cummin(gg.tensor(x), axis=0)
    np.testing.assert_array_equal(v.numpy(), np.minimum.accumulate(x, axis=0))
    values, indices = gg.topk(gg.tensor(x), 3, axis=1)
    np.testing.assert_array_equal(values.numpy(), -np.sort(-x, axis=1)[:, :3])
    np.testing.assert_array_equal(np.take_along_axis(x, indices.numpy(), 1), values.numpy())
    ints = np.array([5, -3, np.iinfo(np.int64).min, 7, 5], dtype=np.int64)
    assert gg.topk(gg.tensor(ints), 5)[1].numpy().tolist() == [3, 0, 4, 1, 2]  # ties: the lower index first
    wide = np.array([[-1000.0, 0.0, 1000.0, -5.0], [3.0, 2.0, 1.0, 0.0]])
    np.testing.assert_allclose(gg.logcumsumexp(gg.tensor(wide), axis=1).numpy(),
                               np.logaddexp.accumulate(wide, axis=1), rtol=1e-13)
    np.testing.assert_allclose(gg.logcumsumexp(gg.tensor(x), axis=0).numpy(),
                               np.log(np.cumsum(np.exp(x), axis=0)), rtol=1e-12)


def test_logcumsumexp_gradient_is_finite_where_values_are_far_apart():
    x = np.array([-1000.0, 0.0, 1000.0, 999.0])
    _, (g,) = grad_of(lambda t: gg.logcumsumexp(t, axis=0), x)
    # d/dx_j sum_i w_i y_i = sum_{i >= j} w_i softmax(x[:i+1])_j, computed in float64 from the definition
    want = np.zeros(4)
    for i in range(4):
        p = np.exp(x[:i + 1] - np.logaddexp.reduce(x[:i + 1]))
        want[:i + 1] += (i + 1) * p
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-300)


def test_unique_bincount_meshgrid_one_hot_match_numpy():
    x = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 2.0]])
    values, inverse, counts = gg.unique(gg.tensor(x), return_inverse=True, return_counts=True)
    want = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), want[0])
    np.testing.assert_array_equal(inverse.numpy().reshape(-1), want[1].reshape(-1))
    np.testing.assert_array_equal(counts.numpy(), want[2])
    assert inverse.shape == x.shape and values.dtype == np.float64
    ints = RNG.integers(0, 6, size=20)
    np.testing.assert_array_equal(gg.unique(gg.tensor(ints)).numpy(), np.unique(ints))
    w = RNG.normal(size=20)
    np.testing.assert_array_equal(gg.bincount(gg.tensor(ints)).numpy(), np.bincount(ints))
    np.testing.assert_allclose(gg.bincount(gg.tensor(ints), gg.tensor(w), minlength=9).numpy(),
                               np.bincount(ints, w, minlength=9))
    assert gg.bincount(gg.tensor(np.zeros(0, np.int64)), minlength=2).numpy().tolist() == [0, 0]
    with pytest.raises(gg.IndexOutOfRangeError, match="'Bincount'"):
        gg.bincount(gg.tensor([1, -1]))
    a, b, c = RNG.normal(size=3), RNG.normal(size=2), RNG.normal(size=4)
    for kwargs in [{}, {"indexing": "ij"}, {"sparse": True}, {"indexing": "ij", "sparse": True}]:
        for got, want in zip(gg.meshgrid(gg.tensor(a), gg.tensor(b), gg.tensor(c), **kwargs),
                             np.meshgrid(a, b, c, **kwargs)):
            np.testing.assert_array_equal(got.numpy(), want)
    labels = np.array([[0, 3], [2, 2]])
    np.testing.assert_array_equal(gg.one_hot(gg.tensor(labels), 4).numpy(), np.eye(4, dtype=np.int64)[labels])
    assert gg.one_hot(gg.tensor(labels)).shape == (2, 2, 4)  # num_classes from the data
    with pytest.raises(gg.IndexOutOfRangeError, match=r"'OneHot': class 4 is outside \[0, 4\)"):
        gg.one_hot(gg.tensor(labels + 1), 4)


def test_bad_input_raises_naming_the_op():
    x = gg.zeros((2, 3))
    with pytest.raises(gg.IndexOutOfRangeError, match="'Scatter': index 3 is out of bounds for axis 1"):
        gg.scatter(x, 1, [[3], [0]], value=1.0)
    with pytest.raises(gg.IndexOutOfRangeError, match="'ScatterAdd': index -1"):
        gg.scatter_add(x, 0, [[-1, 0, 0]], gg.ones((1, 3)))
    with pytest.raises(gg.IndexOutOfRangeError, match="'IndexAdd': index 2"):
        gg.index_add(x, 0, [2], gg.ones((1, 3)))
    with pytest.raises(gg.ShapeError, match="'ScatterReduce'"):
        gg.scatter_reduce(x, 0, [0, 1], gg.ones(2), "sum")
    with pytest.raises(ValueError, match="'ScatterReduce' takes reduce"):
        gg.scatter_reduce(x, 0, [[0]], gg.ones((1, 1)), "median")
    with pytest.raises(gg.DTypeError, match="'Scatter'"):
        gg.scatter(x, 0, [[0]], gg.ones((1, 1), dtype="float64"))
    with pytest.raises(gg.ShapeError, match="'TopK'"):
        gg.topk(x, 4)
    with pytest.raises(gg.DTypeError, match="'MaskedFill' takes a boolean mask"):
        gg.masked_fill(x, gg.tensor([1, 0, 1]), 0.0)


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def test_data_dependent_shapes_run_eagerly_under_function():
    count = gg.function(lambda t: gg.bincount(t))
    uniq = gg.function(lambda t: gg.unique(t) * 2)
    hot = gg.function(lambda t: gg.one_hot(t))
    seg = gg.function(lambda d, i: gg.segment_sum(d, i))
    for ints in ([0, 1, 1], [4, 0, 4, 4, 2], [1]):
        t = gg.tensor(np.array(ints))
        with pytest.warns(RuntimeWarning, match="runs eagerly") if ints == [0, 1, 1] else _nothing():
            count(t), uniq(t), hot(t), seg(gg.ones((len(ints), 2)), gg.tensor(np.sort(np.array(ints))))
        np.testing.assert_array_equal(count(t).numpy(), np.bincount(ints))
        np.testing.assert_array_equal(uniq(t).numpy(), 2 * np.unique(ints))
        assert hot(t).shape == (len(ints), max(ints) + 1)
        ids = np.sort(np.array(ints))
        assert seg(gg.ones((len(ints), 2)), gg.tensor(ids)).shape == (ids[-1] + 1, 2)


# ---------------------------------------------------------------- PyTorch as the oracle

@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch is the test-only oracle of these checks; not installed here")


def torch_grad(fn, *xs):
    import torch

    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    out = fn(*ts)
    w = torch.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)
    (out * w).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() if t.grad is not None else np.zeros_like(x)
                                  for t, x in zip(ts, xs)]


def assert_same(ours, theirs):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-14)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


TIES_X = np.array([[1.0, 5.0, 2.0, 0.0], [3.0, 5.0, 2.0, 0.0], [4.0, 0.5, 2.0, 7.0]])
TIES_SRC = np.array([[3.0, 5.0, 2.0, 1.0], [3.0, 0.0, 2.0, 1.0]])  # ties with each other and with x
TIES_INDEX = np.array([[1, 0, 2, 2], [1, 1, 2, 2]])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients_match_pytorch_with_ties(reduce, include_self, torch):
    # without include_self, x at a written position takes no part; PyTorch (2.x) still counts it among the
    # ties of the result when it equals it, so src's share there is less than dy. gpugrad gives src all of it
    # (the finite-difference derivative, checked by the spec rows); compared here where x ties with no result.
    x = TIES_X if include_self else TIES_X + 0.25
    ours = grad_of(lambda a, s: gg.scatter_reduce(a, 0, TIES_INDEX, s, reduce, include_self=include_self), x, TIES_SRC)
    index = torch.tensor(TIES_INDEX)
    theirs = torch_grad(lambda a, s: a.scatter_reduce(0, index, s, reduce, include_self=include_self), x, TIES_SRC)
    assert_same(ours, theirs)


def test_scatter_reduce_amax_without_self_gives_src_all_of_dy_where_x_ties_the_result():
    out, (gx, gs) = grad_of(lambda a, s: gg.scatter_reduce(a, 0, [0, 0, 1], s, "amax", include_self=False),
                            np.array([5.0, 1.0]), np.array([5.0, 2.0, 3.0]))
    assert out.tolist() == [5.0, 3.0]
    assert gx.tolist() == [0.0, 0.0] and gs.tolist() == [1.0, 0.0, 2.0]  # weights 1, 2: no share to x


def test_scatter_scatter_add_index_add_match_pytorch(torch):
    x, src = RNG.normal(size=(3, 4)), RNG.normal(size=(2, 5))
    index = np.array([[2, 0, 1, 1], [0, 0, 2, 1]])  # a repeat (column 1): PyTorch's gradient reaches both
    ti = torch.tensor(index)
    # (scatter_add with src larger than index: PyTorch's backward fails on its own shapes; gpugrad pads)
    assert_same(grad_of(lambda a, s: gg.scatter_add(a, 0, index, s), x, src[:, :4].copy()),
                torch_grad(lambda a, s: a.scatter_add(0, ti, s), x, src[:, :4].copy()))
    unique_index = np.array([[2, 0, 1, 1], [0, 2, 2, 0]])
    tu = torch.tensor(unique_index)
    assert_same(grad_of(lambda a, s: gg.scatter(a, 0, unique_index, s), x, src[:, :4].copy()),
                torch_grad(lambda a, s: a.scatter(0, tu, s), x, src[:, :4].copy()))
    ours = grad_of(lambda a: gg.scatter(a, 0, index, value=2.5), x)
    theirs = torch_grad(lambda a: a.scatter(0, ti, 2.5), x)
    assert_same(ours, theirs)
    source = RNG.normal(size=(3, 3))
    assert_same(grad_of(lambda a, s: gg.index_add(a, 1, [3, 0, 3], s, alpha=-0.5), x, source),
                torch_grad(lambda a, s: a.index_add(1, torch.tensor([3, 0, 3]), s, alpha=-0.5), x, source))


def test_one_hot_masked_fill_topk_match_pytorch(torch):
    labels = np.array([[0, 3], [2, 1]])
    ours = gg.one_hot(gg.tensor(labels), 5)
    theirs = torch.nn.functional.one_hot(torch.tensor(labels), 5)
    assert ours.dtype == np.int64 and np.array_equal(ours.numpy(), theirs.numpy())
    x = RNG.normal(size=(3, 4))
    mask = np.array([True, False, False, True])
    assert_same(grad_of(lambda a, v: gg.masked_fill(a, mask, v), x, np.array(0.7)),
                torch_grad(lambda a, v: a.masked_fill(torch.tensor(mask), v), x, np.array(0.7)))
    y = np.array([[1.0, 4.0, 4.0, -1.0, 4.0], [np.nan, 2.0, np.inf, 0.0, 2.0]])
    for largest in (True, False):  # PyTorch leaves the order of ties unspecified: the values and what they index
        ours = gg.topk(gg.tensor(y), 3, axis=1, largest=largest)
        theirs = torch.topk(torch.tensor(y), 3, dim=1, largest=largest)
        np.testing.assert_array_equal(ours[0].numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(np.take_along_axis(y, ours[1].numpy(), 1), theirs.values.numpy())
        assert ours[1].numpy()[0].tolist() == ([1, 2, 4] if largest else [3, 0, 1])  # ties: the lower index first
    z = RNG.normal(size=(4, 5))
    assert_same(grad_of(lambda a: gg.topk(a, 2, axis=0)[0], z),
                torch_grad(lambda a: torch.topk(a, 2, dim=0).values, z))


def test_cummax_cummin_logcumsumexp_match_pytorch_with_ties_and_nan(torch):
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [2.0, 2.0, np.nan, 5.0, np.nan, 1.0]])
    for ours_fn, theirs_fn in [(gg.cummax, torch.cummax), (gg.cummin, torch.cummin)]:
        v, i = ours_fn(gg.tensor(x), axis=1)
        tv, ti = theirs_fn(torch.tensor(x), dim=1)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    z = RNG.normal(size=(3, 5))
    for ours_fn, theirs_fn in [(gg.cummax, torch.cummax), (gg.cummin, torch.cummin)]:
        assert_same(grad_of(lambda a: ours_fn(a, axis=1)[0], z),
                    torch_grad(lambda a: theirs_fn(a, dim=1).values, z))
    wide = np.array([[-1000.0, 0.0, 1000.0, -5.0, 999.0], [3.0, 2.0, 1.0, 0.0, -1.0]])
    assert_same(grad_of(lambda a: gg.logcumsumexp(a, axis=1), wide),
                torch_grad(lambda a: torch.logcumsumexp(a, dim=1), wide))


# ---------------------------------------------------------------- the GPU path on the stand-in


@pytest.mark.parametrize("device", device_params())
def test_the_data_dependent_and_integer_paths_give_the_cpus_values_on_every_device(device):
    x = RNG.normal(size=(3, 4))
    ints = np.array([[2, 0, 2, 5], [1, 1, 0, 3], [0, 2, 1, 1]])
    cases = [
        lambda d: gg.unique(gg.tensor(ints, device=d), return_inverse=True, return_counts=True),
        lambda d: (gg.unique(gg.tensor(np.array([np.nan, 1.0, np.nan, 0.5]), device=d)),),
        lambda d: (gg.bincount(gg.tensor(ints[0], device=d), gg.tensor(x[0], device=d)),),
        lambda d: (gg.one_hot(gg.tensor(ints, device=d)),),
        lambda d: (gg.segment_max(gg.tensor(x, device=d), gg.tensor([0, 0, 2], device=d)),
                   gg.segment_mean(gg.tensor(x, device=d), [0, 2, 2])),
        lambda d: (gg.scatter_reduce(gg.tensor(ints, device=d), 1, ints % 4, gg.tensor(ints, device=d), "mean"),
                   gg.scatter_reduce(gg.tensor(ints, device=d), 0, ints % 3, gg.tensor(ints, device=d), "amin"),
                   gg.scatter_reduce(gg.tensor(ints, device=d), 0, ints % 3, gg.tensor(ints, device=d), "prod"),
                   gg.scatter_reduce(gg.tensor(x, device=d), 1, ints % 4, gg.tensor(x, device=d), "prod",
                                     include_self=False)),
        lambda d: gg.cummin(gg.tensor(ints, device=d), axis=1) + gg.topk(gg.tensor(ints, device=d), 3),
        lambda d: gg.meshgrid(gg.tensor(x[0], device=d), gg.tensor(x[1], device=d)),
    ]
    for case in cases:
        for got, want in zip(case(device), case("cpu")):
            assert got.device.startswith(device) and got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.slow
def test_on_the_stand_in_gpu_the_ops_match_the_cpu_and_range_checks_wait_for_a_host_read(tmp_path):
    run_in_stand_in("""
        import numpy as np, cupy, pytest
        import gpugrad as gg

        rng = np.random.default_rng(0)
        x, src = rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
        index = np.array([[0, 2, 0, 0], [2, 2, 1, 0]])
        wide = np.array([[-1000.0, 0.0, 1000.0, -5.0, 999.0, 3.0, 1.0]])
        cases = [
            lambda d: gg.scatter_reduce(gg.tensor(x, device=d), 0, gg.tensor(index, device=d),
                                        gg.tensor(src, device=d), "amax", include_self=False),
            lambda d: gg.scatter_reduce(gg.tensor(x, device=d), 0, index, gg.tensor(src, device=d), "mean"),
            lambda d: gg.scatter(gg.tensor(x, device=d), 1, [[3], [0], [1]], value=2.0),
            lambda d: gg.segment_min(gg.tensor(x, device=d), [0, 0, 2]),
            lambda d: gg.segment_mean(gg.tensor(x, device=d), [2, -1, 0], num_segments=3),
            lambda d: gg.cummax(gg.tensor(x, device=d), axis=1)[1],
            lambda d: gg.topk(gg.tensor(x, device=d), 2, axis=0)[0],
            lambda d: gg.logcumsumexp(gg.tensor(wide, device=d), axis=1),
            lambda d: gg.gather(gg.tensor(x, device=d), gg.tensor([[1, 3], [0, 0], [2, 2]], device=d), axis=1,
                                batch_dims=1),
            lambda d: gg.unique(gg.tensor(index, device=d), return_inverse=True)[1],
            lambda d: gg.bincount(gg.tensor([0, 3, 3], device=d), minlength=5),
            lambda d: gg.one_hot(gg.tensor([2, 0], device=d), 3),
        ]
        for case in cases:
            np.testing.assert_allclose(case("cuda").numpy(), case("cpu").numpy(), rtol=1e-12)
        # gradients through the GPU path
        for d in ("cpu", "cuda"):
            t = gg.tensor(wide, device=d)
            with gg.GradientTape() as tape:
                tape.watch(t)
                y = gg.sum(gg.logcumsumexp(t, axis=1) * gg.tensor(np.arange(7.0), device=d))
            g = tape.gradient(y, t).numpy()
            if d == "cpu":
                want = g
        np.testing.assert_allclose(g, want, rtol=1e-12)

        def raised_at_read(make, match):
            with cupy._transfers.counting() as seen:
                out = make()  # no error and no read here
            assert seen == [], seen
            with pytest.raises(gg.IndexOutOfRangeError, match=match):
                out.numpy()

        xg = gg.tensor(x, device="cuda")
        raised_at_read(lambda: gg.scatter(xg, 0, gg.tensor([[3, 0, 0, 0]], device="cuda"), value=1.0),
                       "'Scatter': index 3 is out of bounds.*next host read")
        raised_at_read(lambda: gg.scatter_add(xg, 1, gg.tensor([[-1], [0], [0]], device="cuda"), xg),
                       "'ScatterAdd': index -1")
        raised_at_read(lambda: gg.index_add(xg, 0, gg.tensor([5], device="cuda"), xg[:1]), "'IndexAdd': index 5")
        raised_at_read(lambda: gg.one_hot(gg.tensor([4], device="cuda"), 3), "'OneHot': class 4")
        raised_at_read(lambda: gg.segment_sum(xg, gg.tensor([0, 7, 1], device="cuda"), num_segments=3),
                       "'SegmentSum': segment id 7")
        raised_at_read(lambda: gg.gather(xg, gg.tensor([[9], [0], [0]], device="cuda"), axis=1, batch_dims=1),
                       "'Gather': index 9")
        print("ok")
    """, tmp_path)


def test_the_ops_replay_under_function_with_new_values_and_indices():
    def step(x, s, index, ids):
        with gg.GradientTape() as tape:
            tape.watch([x, s])
            outs = [gg.scatter(x, 0, index, s), gg.scatter_reduce(x, 0, index, s, "amax", include_self=False),
                    gg.scatter_reduce(x, 0, index, s, "mean"), gg.scatter_add(x, 0, index, s),
                    gg.segment_max(x, ids, num_segments=3), gg.logcumsumexp(x, axis=1), gg.topk(x, 2)[0],
                    gg.cummax(x, axis=0)[0], gg.masked_fill(x, x > 0.5, 0.0),
                    gg.gather(x, index[:, :2], axis=1, batch_dims=1)]
            loss = gg.sum(gg.stack([gg.sum(gg.tanh(o) ** 2.0) for o in outs]))  # (an empty segment: lowest)
        return [loss] + list(tape.gradient(loss, [x, s]))

    traced = gg.function(step)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        args = (gg.tensor(rng.normal(size=(3, 4))), gg.tensor(rng.normal(size=(3, 4))),
                gg.tensor(rng.integers(0, 3, size=(3, 4))), gg.tensor(rng.integers(0, 3, size=3)))
        for got, want in zip(traced(*args), step(*args)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_numpys_meshgrid_unique_bincount_on_tensors_are_the_gg_ops():
    a, b = RNG.normal(size=3), RNG.normal(size=2)
    for got, want in zip(np.meshgrid(gg.tensor(a), gg.tensor(b), indexing="ij"), np.meshgrid(a, b, indexing="ij")):
        assert isinstance(got, gg.Tensor)
        np.testing.assert_array_equal(got.numpy(), want)
    ints = np.array([3, 1, 3, 0])
    values, counts = np.unique(gg.tensor(ints), return_counts=True)
    assert values.numpy().tolist() == [0, 1, 3] and counts.numpy().tolist() == [1, 1, 2]
    assert np.bincount(gg.tensor(ints), minlength=5).numpy().tolist() == np.bincount(ints, minlength=5).tolist()
    with pytest.raises(TypeError, match="return_index"):
        np.unique(gg.tensor(ints), return_index=True)


PROD_INDEX = np.array([[0, 2, 0, 1], [2, 2, 1, 0], [1, 0, 0, 2], [0, 2, 0, 2]])


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradients_match_pytorch_where_zeros_meet(include_self, torch):
    # zeros alone, two and three of them at one position, and a zero of x: PyTorch's rule, no division by 0
    x = RNG.uniform(0.5, 1.5, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))
    src = RNG.uniform(0.5, 1.5, (4, 4)) * RNG.choice([-1.0, 1.0], (4, 4))
    x[1, 3] = x[2, 1] = 0.0
    src[0, 1] = src[1, 1] = src[3, 1] = 0.0  # three zeros at (2, 1), with x's
    src[0, 2] = src[2, 2] = 0.0  # two at (0, 2)
    src[1, 3] = 0.0  # one at (0, 3)
    ours = grad_of(lambda a, s: gg.scatter_reduce(a, 0, PROD_INDEX, s, "prod", include_self=include_self), x, src)
    index = torch.tensor(PROD_INDEX)
    theirs = torch_grad(lambda a, s: a.scatter_reduce(0, index, s, "prod", include_self=include_self), x, src)
    assert_same(ours, theirs)


def test_scatter_reduce_prod_second_derivative_where_two_zeros_meet_is_finite_differences():
    # PyTorch refuses this double backward; gpugrad's rule is the exclusive product as a polynomial there
    x = np.array([[2.0, 0.5], [1.5, -1.0]])
    src = np.array([[0.0, 3.0], [0.0, 0.0]])
    index = np.array([[1, 0], [1, 0]])  # two zeros at (1, 0); at (0, 1) a zero and 3.0

    def grad(a, s):
        xa, sa = gg.tensor(a), gg.tensor(s)
        with gg.GradientTape() as tape:
            tape.watch([xa, sa])
            loss = gg.sum(gg.scatter_reduce(xa, 0, index, sa, "prod"))
        return [g.numpy() for g in tape.gradient(loss, [xa, sa])]

    xa, sa = gg.tensor(x), gg.tensor(src)
    with gg.GradientTape(persistent=True) as outer:
        outer.watch([xa, sa])
        with gg.GradientTape() as inner:
            inner.watch([xa, sa])
            loss = gg.sum(gg.scatter_reduce(xa, 0, index, sa, "prod"))
        gx, gs = inner.gradient(loss, [xa, sa])
        probe = gg.sum(gs * gg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    hx, hs = outer.gradient(probe, [xa, sa])
    eps = 1e-6
    for which, got in ((0, hx), (1, hs)):
        base = [x, src][which]
        want = np.zeros_like(base)
        for p in np.ndindex(base.shape):
            up, down = [x.copy(), src.copy()], [x.copy(), src.copy()]
            up[which][p] += eps
            down[which][p] -= eps
            want[p] = (np.sum(grad(*up)[1] * [[1.0, 2.0], [3.0, 4.0]]) -
                       np.sum(grad(*down)[1] * [[1.0, 2.0], [3.0, 4.0]])) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-7, atol=1e-9)
    assert np.any(hs.numpy() != 0)  # the two zeros meet: d^2 / (d src_00 d src_10) = x[1, 0] = 1.5
