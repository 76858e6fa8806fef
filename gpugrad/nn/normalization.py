"""``LayerNorm`` and ``BatchNorm`` (``gg.layer_norm``, ``gg.batch_norm``)."""
from ._common import make_variable, name_of, network_op
from .module import Module

__all__ = ["LayerNorm", "BatchNorm"]


def _shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalise over the last ``len(normalized_shape)`` axes, then scale by ``weight`` and shift by ``bias``.

    ``(x - mean) / sqrt(var + eps) * weight + bias``, mean and (biased)
    variance over the normalised axes; ``weight`` starts at ones, ``bias`` at
    zeros; ``elementwise_affine=False`` has neither.

    Example:
        >>> import gpugrad as gg
        >>> ln = gg.nn.LayerNorm(4)
        >>> ln.weight.shape, ln(gg.ones((2, 4))).shape
        ((4,), (2, 4))
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, dtype=None, device=None, name=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = float(eps)
        if elementwise_affine:
            self.weight = make_variable("ones", self.normalized_shape, dtype, device, None, name_of(name, "weight"))
            self.bias = make_variable("zeros", self.normalized_shape, dtype, device, None, name_of(name, "bias"))
        else:
            self.weight = self.bias = None
        self.name = name

    def forward(self, x):
        return network_op("layer_norm")(x, self.normalized_shape, self.weight, self.bias, eps=self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class BatchNorm(Module):
    """Batch normalisation over every axis but the channels (axis 1): (N, C) or (N, C, H, W) input.

    While training it normalises with the batch's statistics and updates
    ``running_mean`` and ``running_var`` (non-trainable Variables) as
    ``running = (1 - momentum) * running + momentum * batch`` (PyTorch's
    convention; the running variance takes the unbiased batch variance); in
    evaluation mode it normalises with the running statistics.

    Example:
        >>> import gpugrad as gg
        >>> bn = gg.nn.BatchNorm(3)
        >>> [name for name, _ in bn.named_variables()]
        ['weight', 'bias', 'running_mean', 'running_var']
        >>> len(bn.trainable_variables)
        2
    """

    def __init__(self, num_features, momentum=0.1, eps=1e-5, affine=True, dtype=None, device=None, name=None):
        super().__init__()
        self.num_features = int(num_features)
        self.momentum, self.eps = float(momentum), float(eps)
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"BatchNorm momentum must be in [0, 1], got {momentum!r}")
        shape = (self.num_features,)
        if affine:
            self.weight = make_variable("ones", shape, dtype, device, None, name_of(name, "weight"))
            self.bias = make_variable("zeros", shape, dtype, device, None, name_of(name, "bias"))
        else:
            self.weight = self.bias = None
        self.running_mean = make_variable("zeros", shape, dtype, device, None, name_of(name, "running_mean"),
                                          trainable=False)
        self.running_var = make_variable("ones", shape, dtype, device, None, name_of(name, "running_var"),
                                         trainable=False)
        self.name = name

    def forward(self, x):
        return network_op("batch_norm")(x, self.running_mean, self.running_var, self.weight, self.bias,
                                        training=self.training, momentum=self.momentum, eps=self.eps)

    def extra_repr(self):
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}, affine={self.weight is not None}"
