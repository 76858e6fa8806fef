"""Specs of the statistics (all compositions): nansum nanmean median quantile percentile ptp average.

Each names the op type it records, with a label; median and quantile draw
well-separated values so finite differences do not cross a tie.
"""
import numpy as np

import gpugrad as gg

from . import OpSpec
from .reductions import distinct

S = (3, 4)
T = (2, 3, 4)


def with_nans(rng):
    x = rng.uniform(-2.0, 2.0, size=S)
    x[0, 1] = x[2, 3] = np.nan
    x[1, :] = np.nan  # an all-NaN row
    return [x]


def values_and_weights(a_shape, w_shape):
    return lambda rng: [rng.uniform(-2.0, 2.0, size=a_shape), rng.uniform(0.5, 2.0, size=w_shape)]


SPECS = [
    OpSpec("Where", gg.nansum, [S], draw=with_nans, label="nansum"),
    OpSpec("Where", lambda x: gg.nansum(x, axis=1, keepdims=True), [S], draw=with_nans, label="nansum_axis"),
    OpSpec("Where", lambda x: gg.nanmean(x, axis=0), [S], label="nanmean",
           draw=lambda rng: [with_nans(rng)[0][[0, 2]]]),
    OpSpec("Where", gg.nanmean, [S], draw=with_nans, label="nanmean_all"),
    OpSpec("GetItem", gg.median, [(5,)], draw=distinct((5,)), label="median_odd"),
    OpSpec("GetItem", lambda x: gg.median(x, axis=1), [S], draw=distinct(S), label="median_even"),
    OpSpec("GetItem", lambda x: gg.median(x, axis=(0, 2), keepdims=True), [T], draw=distinct(T),
           label="median_tuple"),
    OpSpec("GetItem", lambda x: gg.quantile(x, 0.3, axis=0), [(5, 3)], draw=distinct((5, 3)), label="quantile"),
    OpSpec("GetItem", lambda x: gg.quantile(x, [0.1, 0.5, 0.85, 1.0], axis=-1), [S], draw=distinct(S),
           label="quantile_list"),
    OpSpec("GetItem", lambda x: gg.percentile(x, [20, 70]), [S], draw=distinct(S), label="percentile"),
    OpSpec("Max", gg.ptp, [S], draw=distinct(S), label="ptp"),
    OpSpec("Max", lambda x: x.ptp(axis=1, keepdims=True), [S], draw=distinct(S), label="ptp_axis"),
    OpSpec("Mean", lambda x: gg.average(x, axis=0), [S], label="average"),
    OpSpec("Div", lambda a, w: gg.average(a, weights=w), [S, S], draw=values_and_weights(S, S),
           label="average_weights"),
    OpSpec("Div", lambda a, w: gg.average(a, axis=1, weights=w), [S, (4,)], draw=values_and_weights(S, (4,)),
           label="average_weights_1d"),
    OpSpec("Div", lambda a, w: gg.stack(gg.average(a, axis=0, weights=w, returned=True)), [S, S],
           draw=values_and_weights(S, S), label="average_returned"),
]
