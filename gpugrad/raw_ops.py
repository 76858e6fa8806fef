"""The fused gradient ops and the backward convolutions, as TensorFlow's ``tf.raw_ops``.

Gradient rules call them: each is an op type of its own (``TanhGrad``,
``Conv2DBackpropInput``, ...), one fused CUDA kernel on a GPU and NumPy on the
CPU, with a registered gradient of its own, so second order runs through
them. A user's rule may call them too; ``dy`` is never written into unless
the rule is registered with ``donates_dy=True``.

Example:
    >>> import gpugrad as gg
    >>> gg.raw_ops.tanh_grad(gg.tensor([0.5]), gg.tensor([2.0])).numpy().tolist()  # dy (1 - y^2)
    [1.5]
"""
from . import ops as _ops

__all__ = list(_ops.RAW_OPS)
globals().update({name: getattr(_ops, name) for name in __all__})
