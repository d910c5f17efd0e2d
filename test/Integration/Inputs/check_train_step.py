"""Checks training steps compiled by `dtrain-compile --mode=step`
(--dtrain-build-training: loss, reverse-mode gradients, optimizer update)
against PyTorch's on the same model, weights and batch.

usage: check_train_step.py [--torchvision] [--target cuda]
                           [--compile-flag FLAG ...] [--models M,...]
                           [--torch-device cuda] COMPILE WORKDIR

For each case below: builds the PyTorch model (seeded), exports it to ONNX
(TRAINING mode, fixed batch), compiles it with `COMPILE model.onnx
--mode=step --loss L --optimizer O --lr LR --weight-decay WD`, runs the
executable for STEPS steps on one random batch (`--repeat STEPS`: each run
starts from the parameters and optimizer state the previous one left) and
compares the loss and the correct-prediction count of the last step, every
parameter and every batch-norm running statistic after it with
PyTorch's (torch.optim, weight decay on parameters of more than one
dimension only, as dtrain does by default) at rtol 1e-4 and atol 1e-5 for
float32 models, 1e-6 and 1e-7 for float64 ones (model, batch and outputs
all float64). Language models take int64 token ids (B x T) and B x T
labels, their loss PyTorch's cross-entropy of the B x T x V logits
flattened to B * T rows; a model's float buffers other than batch norms'
statistics (a causal mask: python/dtrain's frozen_initializers) go to
`--frozen`, and must not be outputs of the step (not trained). Prints one line per case with the largest
differences, and exits non-zero on any mismatch or failure. --target is
dtrain-compile's (cuda: the step on the GPU), and each --compile-flag is passed to it too
(--cuda-loops: the CUDA target's loop nests, run on the CPU); --torch-device runs PyTorch's steps there (auto: on CUDA where this
torch has it).
"""
import argparse
import copy
import os
import runpy
import subprocess
import sys
import warnings

import numpy as np
import torch
import torchvision
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Examples"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dtrain.model import frozen_initializers  # noqa: E402
from gpt import TinyGPT  # noqa: E402
from nanogpt import NanoGPT  # noqa: E402
from vit import TinyViT  # noqa: E402

# (rtol, atol) by the batch's float type. float64 rounding is small enough
# that the torchvision cases' 3 steps, whose float32 rounding alone would
# exceed 1e-4, hold 100 times tighter (PyTorch's own float64 steps there
# move by under 1e-8 when the weights move by 1e-15).
TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-6, 1e-7)}
# dtrain-compile --wire's names.
WIRE_TYPES = {"bf16": torch.bfloat16, "f16": torch.float16}

class Lars(torch.optim.Optimizer):
    """LARS as dtrain documents it (train.lars_update): for tensors of more
    than one dimension, v = momentum v + lr * trust * (g + wd w) with
    trust = eta ||w|| / (||g|| + wd ||w||) (1 if a norm is 0), w -= v; 1-D
    tensors get PyTorch's momentum SGD. Written from the formulas, not from
    dtrain's code."""

    def __init__(self, groups, lr, momentum=0.9, eta=0.001):
        super().__init__(groups, dict(lr=lr, momentum=momentum, eta=eta,
                                      weight_decay=0.0))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            decay, eta = group["weight_decay"], group["eta"]
            for p in group["params"]:
                d = p.grad + decay * p
                state = self.state[p]
                v = state.get("v", torch.zeros_like(p))
                if p.dim() > 1:
                    w_norm, g_norm = p.norm(), p.grad.norm()
                    trust = (eta * w_norm / (g_norm + decay * w_norm)
                             if w_norm > 0 and g_norm > 0 else 1.0)
                    v = momentum * v + lr * trust * d
                    p.sub_(v)
                else:
                    v = momentum * v + d
                    p.sub_(lr * v)
                state["v"] = v


OPTIMIZERS = {
    "sgd": lambda groups, lr: torch.optim.SGD(groups, lr=lr),
    "momentum": lambda groups, lr: torch.optim.SGD(groups, lr=lr,
                                                   momentum=0.9),
    "nesterov": lambda groups, lr: torch.optim.SGD(groups, lr=lr,
                                                   momentum=0.9,
                                                   nesterov=True),
    "adam": lambda groups, lr: torch.optim.Adam(groups, lr=lr),
    "adamw": lambda groups, lr: torch.optim.AdamW(groups, lr=lr),
    "lars": lambda groups, lr: Lars(groups, lr=lr),
}


GAMMA = 0x9E3779B97F4A7C15


def splitmix64(z):
    """One SplitMix64 step on a uint64 array (wrapping, as documented for
    nn.dropout_mask)."""
    z = z + np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def dropout_mask(seed, step, stream, shape, ratio, dtype):
    """nn.dropout_mask from its documented definition: 0 where the top 24
    bits of element i's number are below round(ratio 2^24), else
    1 / (1 - ratio), in DTYPE (the masked tensor's)."""
    key = splitmix64(np.array([seed], dtype=np.uint64))
    key = splitmix64(key ^ np.uint64(step))
    key = splitmix64(key ^ np.uint64(stream))
    index = np.arange(int(np.prod(shape)), dtype=np.uint64)
    numbers = splitmix64(key + index * np.uint64(GAMMA))
    dropped = (numbers >> np.uint64(40)) < np.uint64(round(ratio * 2 ** 24))
    return torch.from_numpy(np.where(dropped, 0.0, 1.0 / (1.0 - ratio))
                            .reshape(shape)).to(dtype)


def use_dtrain_dropout(model):
    """Makes MODEL's dropouts apply dtrain's masks (seed 0, the k-th dropout
    of a forward pass stream k, steps counted from 1 by the model's forward
    calls), so that its training steps can be compared with dtrain's."""
    step = [0]
    dropouts = [m for m in model.modules()
                if isinstance(m, nn.Dropout) and m.p > 0]

    def count_step(module, args):
        step[0] += 1

    model.register_forward_pre_hook(count_step)
    for stream, module in enumerate(dropouts):
        module.forward = (lambda x, stream=stream, p=module.p:
                          x * dropout_mask(0, step[0], stream, x.shape, p,
                                           x.dtype).to(x.device))


def relu_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))


def wide_mlp():
    """1000 classes: softmax's sums and the argmax over them are long
    reductions beside the batch, and LARS's norms of the 64000-element
    weight long reductions to scalars (--cuda-loops splits all of them)."""
    torch.manual_seed(5)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1000))


def dropout_mlp():
    torch.manual_seed(4)
    return nn.Sequential(nn.Dropout(0.2), nn.Linear(12, 16), nn.ReLU(),
                         nn.Dropout(0.5), nn.Linear(16, 5))


def smooth_mlp():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3),
                         nn.Sigmoid())


class CastMLP(nn.Module):
    """Explicit casts, as a model exported with .bfloat16() and .double()
    has: ONNX Casts of run-time tensors (f32 to bf16 to f64 to f32), whose
    gradients cast back. Without the bf16 rounding, PyTorch's parameters
    after 3 steps differ from these beyond the tolerance."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.first, self.second = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x):
        hidden = torch.relu(self.first(x)).bfloat16().double()
        return self.second(hidden.float())


class HardMLP(nn.Module):
    """MobileNetV3's activations: hardswish and a squeeze-and-excitation
    style gate by hardsigmoid (ONNX HardSigmoid, which the importer makes a
    clip), and a negation and a reciprocal (Neg, Reciprocal)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.first, self.gate = nn.Linear(6, 8), nn.Linear(8, 8)
        self.second = nn.Linear(8, 3)

    def forward(self, x):
        h = nn.functional.hardswish(self.first(x) * 3)
        h = h * nn.functional.hardsigmoid(self.gate(h) * 3)
        y = self.second(h)
        return -y * torch.reciprocal(1.5 + torch.sigmoid(y))


class MaxMinMLP(nn.Module):
    """torch.maximum and torch.minimum (ONNX Max and Min): a leaky ReLU
    written as max(h, h / 4) and a trained per-feature cap, min(h, cap),
    whose gradient sums over the batch it is broadcast to."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(6)
        self.first, self.second = nn.Linear(6, 8), nn.Linear(8, 3)
        self.cap = nn.Parameter(torch.full((8,), 0.3))

    def forward(self, x):
        h = self.first(x)
        h = torch.maximum(h, 0.25 * h)
        return self.second(torch.minimum(h, self.cap))


class ActivationsMLP(nn.Module):
    """ELU, SELU, CELU, softplus and abs (ONNX Elu, Selu, Celu, Softplus,
    Abs, which the importer makes of nn ops), with inputs on both sides of
    0 and large enough that a naive exp would overflow in its branch not
    taken."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.first, self.second = nn.Linear(6, 10), nn.Linear(10, 3)

    def forward(self, x):
        h = self.first(x) * 4
        h = torch.cat([nn.functional.elu(h[:, :2] * 60, 0.5) / 60,
                       nn.functional.selu(h[:, 2:4]),
                       nn.functional.celu(h[:, 4:6], 2.0),
                       nn.functional.softplus(h[:, 6:8]),
                       torch.abs(h[:, 8:])], 1)
        return self.second(h)


class MaskedAttention(nn.Module):
    """Attention over a batch whose padding a run-time int64 mask of token
    flags marks, in the three ways PyTorch code applies one: masked_fill of
    mask == 0 (ONNX Equal), of ~mask.bool() (Cast to bool, Not), and an
    additive bias (1 - mask.float()) * -10000 (Cast to float); the mask is
    unsqueezed as integers first."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(6)
        self.query, self.out = nn.Linear(4, 4), nn.Linear(4, 3)

    def forward(self, x, mask):
        scores = self.query(x) @ x.transpose(1, 2)
        flags = mask[:, None, :]
        equal = scores.masked_fill(flags == 0, -1e9).softmax(-1)
        negated = scores.masked_fill(~flags.bool(), -1e9).softmax(-1)
        bias = (scores + (1.0 - flags.float()) * -10000.0).softmax(-1)
        return self.out(((equal + negated + bias) @ x).mean(1))


def small_cnn():
    torch.manual_seed(2)
    return nn.Sequential(
        # No bias before batch norm (it cancels it): its gradient is
        # rounding noise, which Adam would scale up to a full step.
        nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6),
        nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(6, 8, 3, stride=2, padding=1, groups=2),
        nn.LeakyReLU(0.1), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8, 4),
        nn.LogSoftmax(dim=1))


def vit(activation="gelu", norm_first=True):
    """test/Examples/vit.py's, without dropout: the attention's has no
    module whose masks could be made dtrain's."""
    torch.manual_seed(6)
    return TinyViT(activation, norm_first)


def gpt():
    """test/Examples/gpt.py's, without dropout."""
    torch.manual_seed(18)
    return TinyGPT()


def nanogpt():
    """test/Examples/nanogpt.py's: attention by hand (a split projection, a
    masked_fill of a frozen buffer), positions from arange, a tied head."""
    torch.manual_seed(20)
    return NanoGPT()


def lenet():
    """The demo's LeNet-5 (test/Examples/lenet.py), seeded there."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "..", "Examples", "lenet.py")
    saved = sys.argv
    sys.argv = [script, os.devnull, "train"]
    try:
        return runpy.run_path(script, run_name="__main__")["model"]
    finally:
        sys.argv = saved


def torchvision_model(name, **kwargs):
    torch.manual_seed(3)
    return getattr(torchvision.models, name)(weights=None, num_classes=10,
                                             **kwargs)


def torchvision_cases():
    """resnet18 (the importer issue's CNN) at a small input, batch 8, 64x64,
    one SGD step with lr 1, so that the parameters compared are w - g and
    the tolerance applies to the gradients themselves. More steps, or
    mobilenet_v2, whose batch norms see few values, make float32 rounding
    grow past rtol 1e-4 in PyTorch itself (its float32 step leaves its
    float64 one by 6.7e-4 on mobilenet_v2); so resnet18 and mobilenet_v2
    also run in float64: 3 steps of momentum SGD and of Adam, with weight
    decay, batch 8, 32x32; shufflenet_v2_x0_5 3 momentum steps too."""
    torch.manual_seed(13)
    x, labels = torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))
    yield ("resnet18 softmax-xent sgd", torchvision_model("resnet18"),
           "softmax-xent", "sgd", 1.0, 0.0, 1, x, labels)
    # In float64 rounding stays far below the tolerance, so both networks
    # can take several steps of the stateful optimizers. 32x32: both
    # networks downsample by 32, so their last layers run at 1x1 here.
    # Batch 8, not 4: the batch norms there see only batch-many values, and
    # at 4 mobilenet_v2's steps are chaotic in PyTorch itself (weights
    # perturbed by 1e-15 end 3 momentum steps 1.9 apart; at 8, 7e-9).
    torch.manual_seed(15)
    x = torch.randn(8, 3, 32, 32, dtype=torch.float64)
    labels = torch.randint(0, 10, (8,))
    for name in ("resnet18", "mobilenet_v2"):
        for optimizer, lr in (("momentum", 0.05), ("adam", 0.001)):
            yield ("%s f64 softmax-xent %s" % (name, optimizer),
                   torchvision_model(name).double(), "softmax-xent",
                   optimizer, lr, 5e-4, 3, x, labels)
    # The channel shuffle: reshapes to targets computed from x.size(), a
    # transpose, channel halves sliced apart and concatenated.
    yield ("shufflenet_v2_x0_5 f64 softmax-xent momentum",
           torchvision_model("shufflenet_v2_x0_5").double(), "softmax-xent",
           "momentum", 0.05, 5e-4, 3, x, labels)


def cases():
    """(name, model, loss, optimizer, lr, weight decay, steps, x, target)"""
    torch.manual_seed(10)
    x, labels = torch.randn(4, 12), torch.tensor([0, 3, 4, 3])
    yield ("relu-mlp softmax-xent sgd", relu_mlp(), "softmax-xent", "sgd",
           0.1, 0.0, 1, x, labels)
    yield ("relu-mlp softmax-xent momentum", relu_mlp(), "softmax-xent",
           "momentum", 0.05, 5e-4, 3, x, labels)
    yield ("relu-mlp softmax-xent adam", relu_mlp(), "softmax-xent", "adam",
           0.01, 0.0, 3, x, labels)
    # Learning-rate schedules against PyTorch's schedulers, over 5 steps.
    yield ("relu-mlp softmax-xent momentum step-schedule", relu_mlp(),
           "softmax-xent", "momentum", 0.05, 0.0, 5, x, labels,
           (("--schedule", "step", "--step-size", "2", "--gamma", "0.5"),
            lambda o: torch.optim.lr_scheduler.StepLR(o, 2, gamma=0.5)))
    yield ("relu-mlp softmax-xent adamw cosine-schedule", relu_mlp(),
           "softmax-xent", "adamw", 0.01, 0.1, 5, x, labels,
           (("--schedule", "cosine", "--total-steps", "4"),
            lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 4)))
    # Gradients exchanged in 16 bits (one rank): rounded before the update.
    for wire in ("bf16", "f16"):
        yield ("relu-mlp softmax-xent sgd wire-" + wire, relu_mlp(),
               "softmax-xent", "sgd", 1.0, 0.0, 1, x, labels, ((), None),
               wire)
    yield ("relu-mlp softmax-xent sgd warmup", relu_mlp(), "softmax-xent",
           "sgd", 0.1, 0.0, 5, x, labels,
           (("--warmup-steps", "3"),
            lambda o: torch.optim.lr_scheduler.LinearLR(
                o, start_factor=1 / 3, total_iters=2)))
    # Two of the labels the model's first picks, so that the count of
    # correct answers (an argmax over the 1000 classes) is not 0.
    torch.manual_seed(16)
    wide_x = torch.randn(4, 32)
    with torch.no_grad():
        picks = wide_mlp()(wide_x).argmax(1)
    wide_labels = torch.tensor([picks[0], picks[1], 7, 993])
    for optimizer, lr in (("momentum", 0.05), ("lars", 2.0)):
        yield ("wide-mlp softmax-xent " + optimizer, wide_mlp(),
               "softmax-xent", optimizer, lr, 5e-4, 3, wide_x, wide_labels)
    # Dropout with dtrain's masks, different at every step.
    yield ("dropout-mlp softmax-xent momentum", dropout_mlp(),
           "softmax-xent", "momentum", 0.05, 5e-4, 3, x, labels)
    yield ("dropout-mlp softmax-xent adam", dropout_mlp(), "softmax-xent",
           "adam", 0.01, 0.0, 3, x, labels)
    torch.manual_seed(11)
    x, targets = torch.randn(5, 6), torch.rand(5, 3)
    yield ("tanh-sigmoid-mlp mse sgd", smooth_mlp(), "mse", "sgd", 0.5, 0.01,
           1, x, targets)
    yield ("tanh-sigmoid-mlp mse nesterov", smooth_mlp(), "mse", "nesterov",
           0.2, 0.01, 3, x, targets)
    yield ("tanh-sigmoid-mlp mse adamw", smooth_mlp(), "mse", "adamw", 0.02,
           0.1, 3, x, targets)
    yield ("cast-mlp softmax-xent momentum", CastMLP(), "softmax-xent",
           "momentum", 0.1, 0.0, 3, x, torch.tensor([2, 0, 1, 1, 2]))
    yield ("hard-mlp softmax-xent momentum", HardMLP(), "softmax-xent",
           "momentum", 0.1, 0.0, 3, x, torch.tensor([2, 0, 1, 1, 2]))
    yield ("maxmin-mlp softmax-xent momentum", MaxMinMLP(), "softmax-xent",
           "momentum", 0.1, 0.0, 3, x, torch.tensor([2, 0, 1, 1, 2]))
    yield ("activations-mlp softmax-xent momentum", ActivationsMLP(),
           "softmax-xent", "momentum", 0.05, 0.0, 3, x,
           torch.tensor([2, 0, 1, 1, 2]))
    torch.manual_seed(13)
    batch = {"x": torch.randn(2, 5, 4),
             "mask": torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])}
    yield ("masked-attention softmax-xent adam", MaskedAttention(),
           "softmax-xent", "adam", 0.01, 0.0, 3, batch, torch.tensor([0, 2]))
    torch.manual_seed(12)
    x, labels = torch.randn(4, 3, 8, 8), torch.tensor([1, 0, 3, 2])
    yield ("cnn softmax-xent momentum", small_cnn(), "softmax-xent",
           "momentum", 0.05, 5e-4, 3, x, labels)
    yield ("cnn softmax-xent adam", small_cnn(), "softmax-xent", "adam",
           0.01, 0.0, 3, x, labels)
    yield ("cnn softmax-xent lars", small_cnn(), "softmax-xent", "lars",
           2.0, 5e-4, 3, x, labels)
    # Transformers: batched attention products, softmax, layer norms
    # (ReduceMean, Pow, Sqrt), GELU (Erf), the class token's Expand, the
    # Gather of its output; in float32 and float64.
    torch.manual_seed(17)
    x, labels = torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))
    yield ("vit softmax-xent momentum", vit(), "softmax-xent", "momentum",
           0.05, 5e-4, 3, x, labels)
    yield ("vit post-norm relu softmax-xent sgd", vit("relu", False),
           "softmax-xent", "sgd", 0.1, 0.0, 1, x, labels)
    yield ("vit f64 softmax-xent adam", vit().double(), "softmax-xent",
           "adam", 0.01, 5e-4, 3, x.double(), labels)
    # A language model: B x T token ids, each sequence's next tokens as the
    # labels, the loss over all B * T positions. Tokens repeat within and
    # across the sequences (32 of a vocabulary of 16, token 3 at every third
    # position), so that the embedding's gradient sums several positions'
    # into a row.
    torch.manual_seed(19)
    tokens = torch.randint(0, 16, (4, 9))
    tokens[:, 2::3] = 3
    x, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    assert len(torch.unique(x)) < x.numel()
    yield ("nanogpt softmax-xent momentum", nanogpt(), "softmax-xent",
           "momentum", 0.05, 5e-4, 3, x, labels)
    yield ("gpt f64 softmax-xent adam", gpt().double(), "softmax-xent",
           "adam", 0.01, 5e-4, 3, x, labels)
    torch.manual_seed(14)
    x, labels = torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))
    for optimizer, lr in (("momentum", 0.05), ("adam", 0.001)):
        yield ("lenet softmax-xent " + optimizer, lenet(), "softmax-xent",
               optimizer, lr, 5e-4, 3, x, labels)


def train(model, inputs, target, loss_name, optimizer_name, lr, decay, steps,
          scheduler=None, wire=None):
    """PyTorch's STEPS steps on MODEL (in place) of the tuple of its INPUTS,
    with weight decay on the parameters of more than one dimension only;
    returns the loss and the correct-prediction count (softmax-xent, else
    None) of the last step.
    WIRE (a 16-bit torch dtype): each gradient is rounded to it before the
    update, as a one-rank exchange in that type does."""
    # CrossEntropyLoss after LogSoftmax is what dtrain's softmax-xent of
    # log-probabilities computes too. Logits of more than 2 dimensions (a
    # language model's B x T x V) have the classes last: the loss of every
    # position, the rows flattened.
    if loss_name == "softmax-xent":
        cross_entropy = nn.CrossEntropyLoss()

        def criterion(output, target):
            return cross_entropy(output.reshape(-1, output.shape[-1]),
                                 target.reshape(-1))
    else:
        criterion = nn.MSELoss()
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() > 1],
               "weight_decay": decay},
              {"params": [p for p in params if p.dim() <= 1],
               "weight_decay": 0.0}]
    optimizer = OPTIMIZERS[optimizer_name](groups, lr)
    schedule = scheduler(optimizer) if scheduler else None
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        output = model(*inputs)
        loss = criterion(output, target)
        loss.backward()
        if wire is not None:
            for p in params:
                p.grad = p.grad.to(wire).to(p.grad.dtype)
        optimizer.step()
        if schedule:
            schedule.step()
    correct = None
    if loss_name == "softmax-xent":
        correct = (output.argmax(-1) == target).sum().cpu().numpy()
    return loss.detach().cpu().numpy(), correct


def state(model, loss, correct):
    """name -> array: the loss, the count, parameters and running stats."""
    values = {"loss": loss}
    if correct is not None:
        values["correct"] = correct
    values.update((n, p.detach().cpu().numpy())
                  for n, p in model.named_parameters())
    # Batch-norm running means (PyTorch's buffers). Not the running
    # variances: ONNX's BatchNormalization, which dtrain implements, mixes
    # in the biased batch variance, PyTorch's training the unbiased one.
    values.update((n, b.cpu().numpy()) for n, b in model.named_buffers()
                  if n.endswith("running_mean"))
    return values


def check(options, work, name, model, loss_name,
          optimizer_name, lr, decay, steps, x, target, schedule=((), None),
          wire=None):
    """X: the batch, or a dict of the model's inputs by name (a mask beside
    the batch). SCHEDULE: dtrain-compile's schedule flags and the PyTorch
    scheduler (a function of the optimizer) that they stand for. WIRE: dtrain-compile
    --wire's type name, for one-rank data-parallel steps whose gradients
    travel in it; PyTorch's must then differ from the steps without
    rounding by more than the tolerance, or the case could not fail."""
    flags, scheduler = schedule
    if options.target:
        flags = tuple(flags) + ("--target", options.target)
    flags = tuple(flags) + tuple(options.compile_flag)
    # The model's float type (a language model's batch is int64 token ids).
    dtype = next(model.parameters()).dtype
    rtol, atol = TOLERANCES[dtype]
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    exe = os.path.join(work, "step.bin")
    inputs = x if isinstance(x, dict) else {"x": x}
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs.values()), onnx_path,
                          opset_version=13, input_names=list(inputs),
                          output_names=["y"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    # Float buffers other than batch norms' statistics (a causal mask) stay
    # constant, as dtrain.export marks them; else dtrain would train them.
    frozen = frozen_initializers(model, onnx_path)
    if frozen:
        flags = tuple(flags) + ("--frozen=" + ",".join(frozen),)
    use_dtrain_dropout(model)
    names = [n for n, _ in model.named_parameters()]
    before = {n: p.detach().cpu().numpy().copy()
              for n, p in model.named_parameters()}
    # PyTorch's steps on --torch-device; the batch files stay on the host.
    device = torch.device(options.torch_device)
    model.to(device)
    x_on = tuple(value.to(device) for value in inputs.values())
    target_on = target.to(device)
    if wire is not None:
        unrounded = copy.deepcopy(model)
        plain = state(unrounded, *train(unrounded, x_on, target_on, loss_name,
                                        optimizer_name, lr, decay, steps,
                                        scheduler))
        flags = tuple(flags) + ("--data-parallel", "--wire", wire)
    want = state(model, *train(model, x_on, target_on, loss_name, optimizer_name,
                               lr, decay, steps, scheduler,
                               WIRE_TYPES.get(wire)))
    if wire is not None and all(
            np.allclose(plain[k], want[k], rtol=rtol, atol=atol)
            for k in want):
        print("%s: MISMATCH: rounding the gradients to %s changes no "
              "output beyond the tolerance" % (name, wire))
        return False

    # dtrain's steps.
    result = subprocess.run(
        [options.compile, onnx_path, "--mode=step", "--loss", loss_name,
         "--optimizer", optimizer_name, "--lr", repr(lr), "--weight-decay",
         repr(decay), "-o", exe] + list(flags),
        capture_output=True, text=True)
    if result.returncode != 0:
        print("%s: COMPILE FAILED:\n%s" % (name, result.stderr))
        return False
    command = [exe]
    for input_name, value in inputs.items():
        np.save(os.path.join(work, input_name + ".npy"), value.numpy())
        command += ["--input", "%s=%s" % (input_name, os.path.join(
            work, input_name + ".npy"))]
    label = "labels" if loss_name == "softmax-xent" else "targets"
    np.save(os.path.join(work, "label.npy"), target.numpy())
    command += ["--input", label + "=" + os.path.join(work, "label.npy"),
               "--output", os.path.join(work, "out.npz"), "--repeat",
               str(steps)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print("%s: RUN FAILED:\n%s" % (name, result.stderr))
        return False
    got = dict(np.load(os.path.join(work, "out.npz")))

    ok = True
    worst = []
    for key, expected in want.items():
        value = got.get(key)
        if value is None:
            print("%s: MISMATCH: no output %r (outputs: %s)" % (
                name, key, sorted(got)))
            ok = False
            continue
        # An output in another type than PyTorch's would mean the step did
        # not run in the model's type (say, float32 arithmetic on a float64
        # model), which a comparison of values might not notice.
        if value.dtype != expected.dtype:
            print("%s: MISMATCH: %s is %s, not %s" % (
                name, key, value.dtype, expected.dtype))
            ok = False
            continue
        diff = float(np.abs(value - expected).max())
        worst.append((diff, key))
        if not np.allclose(value, expected, rtol=rtol, atol=atol):
            print("%s: MISMATCH in %s: max |dtrain - PyTorch| = %.3g" % (
                name, key, diff))
            ok = False
    # A frozen buffer is no parameter of the step: not an output.
    for n in frozen:
        if any(k == n or k.startswith(n + ".") for k in got):
            print("%s: MISMATCH: the frozen buffer %s is an output of the "
                  "step (trained)" % (name, n))
            ok = False
    # The step must have moved every parameter (a zero gradient would pass
    # a comparison of parameters that hardly change).
    for n in names:
        if np.array_equal(got[n], before[n]):
            print("%s: MISMATCH: %s did not change" % (name, n))
            ok = False
    if ok:
        counted = ("correct=%d " % int(got["correct"])
                   if "correct" in got else "")
        # The largest first: the networks have more outputs than a line.
        worst.sort(key=lambda item: -item[0])
        print("%s: loss=%.6f %smax_abs %s OK" % (
            name, float(got["loss"]), counted,
            " ".join(["%s=%.2g" % (key, diff) for diff, key in worst[:8]]
                     + (["..."] if len(worst) > 8 else []))))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("compile", help="the dtrain-compile executable")
    parser.add_argument("workdir", help="scratch directory")
    parser.add_argument("--torchvision", action="store_true",
                        help="torchvision's resnet18 and mobilenet_v2 "
                        "instead of the small models")
    parser.add_argument("--target", help="dtrain-compile's --target")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="one more dtrain-compile flag, e.g. "
                        "--cuda-loops (repeatable)")
    parser.add_argument("--models",
                        help="only the cases of these models, comma-"
                        "separated (a case name's first word), e.g. "
                        "cnn,lenet for flags that change only convolutions")
    parser.add_argument("--torch-device", default="cpu",
                        help="where PyTorch's steps run: cpu, cuda, or auto "
                        "(cuda when this torch has it, else cpu)")
    args = parser.parse_args()
    if args.torch_device == "auto":
        args.torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    print("PyTorch on %s, dtrain --target=%s%s" % (
        args.torch_device, args.target or "cpu",
        "".join(" " + flag for flag in args.compile_flag)))
    warnings.filterwarnings("ignore")
    torch.set_num_threads(2)
    ok = True
    chosen = torchvision_cases() if args.torchvision else cases()
    models = set(args.models.split(",")) if args.models else None
    seen = set()
    for i, case in enumerate(chosen):
        model = case[0].split()[0]
        seen.add(model)
        if models is None or model in models:
            ok &= check(args, os.path.join(args.workdir, str(i)), *case)
    if models is not None and models - seen:
        print("no cases of --models %s (models: %s)" % (
            ",".join(sorted(models - seen)), ",".join(sorted(seen))))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
