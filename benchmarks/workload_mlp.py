"""W2 and W4's workloads, shared by their benchmarks (test_training_step.py) and benchmarks/gpu_jit.py: a ReLU
perceptron's training step (forward, backward, SGD update) by gpugrad, by hand in NumPy (or CuPy), and by PyTorch.

- W2: the digits MLP 64-256-256-10, a batch of 64 standardized digits, softmax cross-entropy (mean), SGD at
  learning rate 0.1.
- W4: 512-1024-1024-10, a batch of 256 random inputs, the same loss and step.
"""
import numpy as np

import gpugrad as gg
from gpugrad.training import standardized_digits

from .conftest import sgd_step, torch_sgd_step

LR = 0.1
WORKLOADS = {  # name: (layer sizes, batch, timed rounds, warm-up rounds)
    "W2": ((64, 256, 256, 10), 64, 1500, 50),  # about 1.5 s a peer: each sees the same spells of load
    "W4": ((512, 1024, 1024, 10), 256, 100, 5),
}


def make_problem(workload):
    """``(weights, x, labels)``: Glorot-uniform kernels (in, out) and zero biases, one batch; float32."""
    sizes, batch, _, _ = WORKLOADS[workload]
    rng = np.random.default_rng(0)
    weights = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        weights.append((rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32),
                        np.zeros(fan_out, np.float32)))
    if workload == "W2":  # the real digits, as the training job sees them
        x_train, y_train, _, _ = standardized_digits(True, "cpu")
        x, labels = x_train.numpy()[:batch].copy(), y_train.numpy()[:batch].copy()
    else:
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        labels = rng.integers(0, sizes[-1], batch).astype(np.int64)
    return weights, x, labels


# --------------------------------------------------------------------------- gpugrad


def gpugrad_setup(workload, device):
    """``(step, variables)``: a step function that runs one ``minimize``, and the model's Variables."""
    weights, x, labels = make_problem(workload)
    layers = []
    for i, (kernel, bias) in enumerate(weights):
        layer = gg.nn.Dense(*kernel.shape, activation="relu" if i < len(weights) - 1 else None, device=device)
        layer.kernel.assign(kernel)
        layer.bias.assign(bias)
        layers.append(layer)
    model = gg.nn.Sequential(layers)
    params = model.trainable_variables  # found once, as PyTorch's optimizer holds its parameters
    return sgd_step(model, params, x, labels, device=device, lr=LR), params


# --------------------------------------------------------------------------- NumPy by hand


def numpy_setup(workload, xp=np):
    """``(step, arrays)``: one hand-written SGD step on copies of the start weights, updated in place; ``xp``:
    the array module (CuPy runs the same code on a GPU)."""
    weights, x, labels = make_problem(workload)
    params = [(xp.asarray(k).copy(), xp.asarray(b).copy()) for k, b in weights]
    x, labels = xp.asarray(x), xp.asarray(labels)
    rows = xp.arange(x.shape[0])
    inv_n, lr = np.float32(1.0 / x.shape[0]), np.float32(LR)

    def step():
        # forward, keeping each layer's input (ReLU outputs)
        inputs = [x]
        h = x
        for i, (kernel, bias) in enumerate(params):
            h = h @ kernel
            h += bias
            if i < len(params) - 1:
                xp.maximum(h, 0, out=h)
                inputs.append(h)
        # softmax cross-entropy, stable: shift by the row max
        z = h - h.max(axis=1, keepdims=True)
        e = xp.exp(z)
        total = e.sum(axis=1, keepdims=True)
        loss = xp.mean(xp.log(total[:, 0]) - z[rows, labels])
        d = e / total  # (p - onehot) / N
        d[rows, labels] -= 1
        d *= inv_n
        # backward, updating each layer once its gradient is known
        for i in range(len(params) - 1, -1, -1):
            kernel, bias = params[i]
            a = inputs[i]
            d_kernel, d_bias = a.T @ d, d.sum(axis=0)
            if i:  # no gradient for the input batch
                d = d @ kernel.T
                d *= a > 0  # ReLU mask: a is the ReLU's output
            kernel -= lr * d_kernel
            bias -= lr * d_bias
        return loss

    return step, params


# --------------------------------------------------------------------------- PyTorch


def torch_setup(torch, workload, device="cpu"):
    """``(step, model)``: PyTorch's idiomatic step, from the same start weights (kernels transposed)."""
    weights, x, labels = make_problem(workload)
    modules = []
    for i, (kernel, bias) in enumerate(weights):
        linear = torch.nn.Linear(*kernel.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(kernel.T.copy()))
            linear.bias.copy_(torch.from_numpy(bias))
        modules.append(linear)
        if i < len(weights) - 1:
            modules.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*modules).to(device)
    return torch_sgd_step(torch, model, model.parameters(), x, labels, device=device, lr=LR), model


def torch_weights(model):
    linears = [m for m in model if hasattr(m, "weight")]
    return [(m.weight.detach().cpu().numpy().T, m.bias.detach().cpu().numpy()) for m in linears]
