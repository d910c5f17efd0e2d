"""A GPT written as nanoGPT writes it (Karpathy's model.py, without its
flash-attention path): causal self-attention by hand, one projection
split into query, key and value, masked_fill of a lower-triangular buffer
("bias": dtrain must keep it constant, --frozen or dtrain.export's
dtrain.frozen metadata), positions from torch.arange through a position
embedding, and the head's weight tied to the token embedding. For the
tests (train-step.test) and the benchmarks (bench/forward_bench.py's
nanogpt). Importing this module defines NanoGPT and does nothing else."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, block, dropout):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.heads = heads
        self.register_buffer(
            "bias", torch.tril(torch.ones(block, block)).view(1, 1, block,
                                                              block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.proj(y))


class Block(nn.Module):
    def __init__(self, dim, heads, block, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, block, dropout)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                 nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """Token ids (N x T, int64, T <= BLOCK) to next-token logits (N x T x
    VOCAB): token and position embeddings of width DIM, DEPTH blocks of
    HEADS heads, a final layer norm and a head tied to the token
    embedding."""

    def __init__(self, vocab=16, dim=16, heads=2, depth=1, block=8,
                 dropout=0.0):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [Block(dim, heads, block, dropout) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long,
                           device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))
