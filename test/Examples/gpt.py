"""A small decoder-only language model (GPT) built from PyTorch's own
layers, and a character-level task for it: train-gpt.test's language
model. Importing this module defines TinyGPT and progressions and does
nothing else.

usage: gpt.py [--vocab V] [--dim D] [--heads H] [--depth L] [--block T]
              [--dropout P] [--train N] [--val M] OUTDIR

Writes OUTDIR/gpt.onnx, TinyGPT(V, D, H, L, T, P) with random weights
from seed 0 exported in training mode through python/dtrain's
dtrain.export (a symbolic batch dimension, its causal mask listed in the
dtrain.frozen metadata), and OUTDIR/train.npz (N sequences) and
OUTDIR/val.npz (M sequences) of progressions(V, T + 1): x the first T
tokens of each, y the T after the first (the next token at each
position), both N x T int64.
"""
import argparse
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn


class TinyGPT(nn.Module):
    """Token ids (N x BLOCK, int64, in [0, VOCAB)) to next-token logits
    (N x BLOCK x VOCAB): a token embedding of width DIM plus learned
    positions, DEPTH of PyTorch's pre-norm GELU TransformerEncoderLayer
    (HEADS heads, an MLP of width 2 DIM, DROPOUT) under a causal mask (a
    buffer, "mask", that dtrain must not train), a layer norm and a linear
    head of VOCAB."""

    def __init__(self, vocab=16, dim=16, heads=2, depth=1, block=8,
                 dropout=0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, block, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim,
                                           dropout=dropout,
                                           activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        # torch 1.13's layers take no is_causal: the mask is -inf above the
        # diagonal, 0 elsewhere.
        self.register_buffer(
            "mask", nn.Transformer.generate_square_subsequent_mask(block))

    def forward(self, idx):
        x = self.tok(idx) + self.pos
        x = self.encoder(x, mask=self.mask)
        return self.head(self.norm(x))


def progressions(count, length, vocab, rng):
    """COUNT arithmetic progressions modulo VOCAB of LENGTH tokens (COUNT x
    LENGTH, int64): token i of a sequence is (a + i s) mod VOCAB, with its
    start a in [0, VOCAB) and its step s in [1, VOCAB) drawn at random
    (numpy Generator RNG). The first token and the step cannot be
    predicted; every token after the second follows from the two before
    it: (2 t[i-1] - t[i-2]) mod VOCAB. There are VOCAB (VOCAB - 1)
    distinct sequences (240 for 16): a training set of thousands holds
    them all, so validation measures how well the rule is learned, not
    how it generalizes to unseen sequences."""
    start = rng.integers(0, vocab, count)
    step = rng.integers(1, vocab, count)
    return (start[:, None] + step[:, None] * np.arange(length)) % vocab


def main():
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", help="the directory to write into")
    parser.add_argument("--vocab", type=int, default=16, metavar="V",
                        help="tokens 0..V-1 (default: 16)")
    parser.add_argument("--dim", type=int, default=32, metavar="D",
                        help="the model's width (default: 32)")
    parser.add_argument("--heads", type=int, default=4, metavar="H",
                        help="attention heads (default: 4)")
    parser.add_argument("--depth", type=int, default=1, metavar="L",
                        help="transformer layers (default: 1)")
    parser.add_argument("--block", type=int, default=8, metavar="T",
                        help="the context: tokens per sample (default: 8)")
    parser.add_argument("--dropout", type=float, default=0.0, metavar="P",
                        help="dropout in attention and MLP (default: 0)")
    parser.add_argument("--train", type=int, default=2048, metavar="N",
                        help="training sequences (default: 2048)")
    parser.add_argument("--val", type=int, default=512, metavar="M",
                        help="validation sequences (default: 512)")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), os.pardir, os.pardir, "python"))
    import dtrain

    rng = np.random.default_rng(0)
    for name, count in (("train", args.train), ("val", args.val)):
        tokens = progressions(count, args.block + 1, args.vocab, rng)
        dtrain.save_data(os.path.join(args.outdir, name + ".npz"),
                         tokens[:, :-1], tokens[:, 1:])

    torch.manual_seed(0)
    model = TinyGPT(args.vocab, args.dim, args.heads, args.depth,
                    args.block, args.dropout)
    dtrain.export(model, torch.zeros(2, args.block, dtype=torch.int64),
                  os.path.join(args.outdir, "gpt.onnx"))


if __name__ == "__main__":
    main()
