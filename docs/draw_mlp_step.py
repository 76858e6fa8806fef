"""Draw docs/_static/mlp_step.svg and .png: the digits MLP's training step as gpugrad records it.

Run from the repository root with the ``graph`` extra and Graphviz's ``dot``::

    python docs/draw_mlp_step.py

``mlp_step``: the tape of one step of ``gpugrad train``'s model (64-256-256-10, ReLU) on a batch of
64 digits, the loss its target and the named variables its sources; ``mlp_step_traced``: the steps
of the same step traced by ``gg.function`` (forward, backward sweep and Adam's update).
"""
import os
import sys

import gpugrad as gg
from gpugrad.training import build_model, standardized_digits

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_static")


def main():
    net = build_model("mlp", device="cpu")
    x, y, _, _ = standardized_digits(True, "cpu")
    xb, yb = x[:64], y[:64]
    with gg.GradientTape() as tape:
        loss = gg.softmax_cross_entropy(net(xb), yb)
    graph = tape.graph(target=loss, sources=dict(net.named_variables()))
    opt = gg.optimizers.Adam(1e-3)
    variables = net.trainable_variables
    step = gg.function(lambda a, b: opt.minimize(lambda: gg.softmax_cross_entropy(net(a), b), variables))
    step(xb, yb)
    traced = step.graph()
    os.makedirs(OUT, exist_ok=True)
    for name, g in (("mlp_step", graph), ("mlp_step_traced", traced)):
        for suffix, dpi in ((".svg", None), (".png", 110)):
            print(g.render(os.path.join(OUT, name + suffix), dpi=dpi))
    print(graph)
    print(traced)


if __name__ == "__main__":
    sys.exit(main())
