"""A small vision transformer built from PyTorch's own layers, for the
tests (train-step.test, train-vit-digits.test via digits.py --model vit)
and the benchmarks (bench/forward_bench.py's vit). Importing this module
defines TinyViT and does nothing else."""
import torch
from torch import nn


class TinyViT(nn.Module):
    """PATCH x PATCH patches of a one-channel IMAGE x IMAGE image embedded
    by a strided convolution, a class token, learned positions, DEPTH of
    PyTorch's TransformerEncoderLayer (multi-head attention, layer norms,
    an MLP of width 2 DIM with ACTIVATION, NORM_FIRST or after, DROPOUT),
    a layer norm and a linear head of CLASSES."""

    def __init__(self, activation, norm_first, dim=16, heads=2, depth=1,
                 image=8, patch=4, dropout=0.0, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(1, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1,
                                            dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim,
                                           dropout=dropout,
                                           activation=activation,
                                           batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, depth,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x)[:, 0]))
