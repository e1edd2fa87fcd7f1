#!/usr/bin/env python3
"""Small networks of common architectures, exported by PyTorch in training
mode at opset 17 with a batch of 4, their data and PyTorch's own 10-step
SGD traces (lr 0.05, batch 4, file order):

  make_zoo.py OUT   (OUT/NAME.onnx, NAME-data.npz, NAME-torch-losses.json)

mobile:  MobileNetV2-style: conv, batch norm, ReLU6, an inverted residual
         (1x1 expand, 3x3 depthwise, 1x1 project), global mean, Dropout
         (p = 0 here: PyTorch exports its ratio and training_mode as
         Constant nodes), linear; 3x16x16 images
mobile-drop: the same with Dropout(0.2) (imported, not traced)
layout:  elementwise ops between convolutions (PReLU per channel, a
         squeeze-and-excitation gate, a residual add, a learned per-channel
         shift, LeakyReLU), an add of the input to a convolution's result,
         reductions over H and W (mean, logsumexp, amin) and a mean over W
         alone; 3x8x8 images
seg:     a segmentation head: strided conv, GroupNorm(2) (exported as
         InstanceNormalization over [N, groups, -1]), SiLU, bilinear and
         bicubic upsampling by 2 (Resize linear and cubic), a skip concat,
         1x1 conv, global mean, linear; 3x8x8 images
tokens:  token and position embeddings (the positions an arange: a
         Gather of constant indices), a sinusoidal embedding of the
         positions computed in the graph (Sin, Cos), layer norm, Softplus, PReLU,
         torch.maximum (Max), F.normalize (ReduceL2, Clip, Expand, Div),
         mean over the sequence, linear; 12 tokens of a vocabulary of 40
einsums: attention and projections written with torch.einsum
         (bqd,bkd->bqk; bqk,bkd->bqd; ...d,de->...e with an ellipsis; a
         sum bsd->bd; an outer product bi,bj->bij); 6 steps of 8 features
causal:  self-attention masked by torch.triu(ones) (Trilu, then a float
         to bool Cast, masked_fill's Where), x.repeat (Tile) and
         torch.cumsum (CumSum); 5 steps of 8 features
decoder: nn.TransformerDecoderLayer (dropout 0, batch_first) with the
         causal mask nn.Transformer.generate_square_subsequent_mask
         writes, torch.triu of a tensor of -inf (Trilu of infinities,
         added to the scores), and cross-attention to a 3-step memory;
         6 steps of 8 features
llama:   a LLaMA-style block: RMSNorm (x.pow(2).mean, torch.rsqrt), a
         packed QKV split into heads, rotary embeddings from cos and sin
         tables held as buffers (rotate_half: slices, a negation, a
         concat), a causal mask torch.triu of -inf added to the scores,
         a SwiGLU feed-forward (F.silu(w1 g) * w3 g); 6 steps of 8
padmask: nn.MultiheadAttention with a key_padding_mask computed from the
         input (x > 1) and joined to a constant first column by
         torch.cat (a Concat of a constant mask and a computed one), its
         averaged attention weights used too; 6 steps of 8
pixel:   a convolution to 12 channels, nn.PixelShuffle(2) (DepthToSpace,
         mode CRD), tanh, nn.PixelUnshuffle(2) (a reshape, transpose and
         reshape), a 1x1 convolution; 3x8x8 images
gathered: torch.gather twice (GatherElements): by a constant index
         buffer (a permutation of the features), and a loss written by
         hand in the graph, -log_softmax(logits).gather(1, labels)
         (indices that are a graph input) averaged; 8 features
stats:   a layer of statistics: x.std and torch.var (their element count a
         ReduceProd of the shape, folded), torch.logsumexp, x.amin
         (ReduceMin), torch.sign and torch.flip (a Slice with step -1);
         8 features
lstm:    a 2-layer bidirectional nn.LSTM (batch_first) over 5 steps of 8
         features, its last step's output to a linear head
gru:     an nn.GRU (PyTorch's linear_before_reset) with an initial state
         of zeros given, the same head
padded:  nn.Embedding(padding_idx=0) over ids a third of which are 0
         (ONNX does not record the padding index: --padding-idx)
vectors: torch.matmul with 1-D operands: attention pooling by a learned
         vector ([B, S, 8] @ [8]), a vector times a matrix and a stack
         ([8] @ [8, 5], [5] @ [B, 5, S]) and a dot product ([8] @ [8])
masked:  a masked-token objective with its loss in the graph, labels -100
         (PyTorch's default ignore_index) at about half the positions,
         [N, C, S] scores; masked-flat: [N S, C] rows ignoring class 0,
         summed
smooth:  a two-layer MLP trained with label_smoothing 0.1 and
         ignore_index -100 (a quarter of the labels), which the export
         cannot carry (the importer's --label-smoothing, --ignore-index)
positions: embeddings of tokens and of torch.arange(x.shape[1]) expanded
         to the batch, exported with a dynamic batch and length (Range,
         Unsqueeze and Expand of shape entries, which the importer folds
         once --input-shape binds them), mean, linear
buffered: the same with the frequencies of the sinusoidal embedding a
         registered buffer (an initializer, as the parameters are)
vit:     a pre-norm transformer encoder layer (nn.TransformerEncoderLayer,
         dropout 0) over a patch embedding (conv, stride 4) with a class
         token and positions; 3x16x16 images
"""
import copy
import os
import sys

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F

from make_models import sgd_trace, write_trace


class InvertedResidual(nn.Module):
    def __init__(self, c, expand):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h),
            nn.ReLU6(), nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.body(x)


class Mobile(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU6(),
            InvertedResidual(8, 4))
        self.drop = nn.Dropout(p)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(self.drop(self.features(x).mean([2, 3])))


class Layout(nn.Module):
    """Elementwise ops between convolutions that the importer computes
    channels-last: a per-channel PReLU, a squeeze-and-excitation gate
    (mean with keepdim, 1x1 convolutions, Sigmoid, a broadcast product), a
    residual add, a learned [1, C, 1, 1] shift, LeakyReLU, reductions over
    H and W (mean, logsumexp, amin); and two it must not: an add of a
    full-size NCHW value that no layout op made (the input) and a mean
    over W alone (C kept with H)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.prelu = nn.PReLU(8)
        self.squeeze = nn.Conv2d(8, 4, 1)
        self.excite = nn.Conv2d(4, 8, 1)
        self.shift = nn.Parameter(torch.randn(1, 8, 1, 1) * 0.1)
        self.body = nn.Conv2d(8, 8, 3, 1, 1)
        self.mix = nn.Conv2d(8, 3, 1)
        self.fc = nn.Linear(3 * 8 + 3 * 8, 5)

    def forward(self, x):
        h = self.prelu(self.stem(x))
        gate = torch.sigmoid(self.excite(F.relu(self.squeeze(
            h.mean([2, 3], keepdim=True)))))
        h = h * gate
        h = F.leaky_relu(h + self.body(h) + self.shift, 0.1)
        mixed = self.mix(h) + x
        return self.fc(torch.cat([h.mean([2, 3]),
                                  torch.logsumexp(h, (2, 3)),
                                  h.amin((2, 3)),
                                  mixed.mean(3).flatten(1)], 1))


class Select(nn.Module):
    """Slices, comparisons and Where between convolutions, which the
    importer computes channels-last: a gate over half the channels (two
    Slices), a leaky ReLU written out (Greater, Where), a Split whose parts
    are concatenated the other way round, a strided slice of H and W."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.body = nn.Conv2d(4, 6, 3, 1, 1)
        self.head = nn.Conv2d(6, 4, 1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = self.stem(x)
        g = h[:, :4] * torch.sigmoid(h[:, 4:])
        g = torch.where(g > 0, g, 0.2 * g)
        a, b = torch.split(self.body(g), [2, 4], dim=1)
        y = torch.cat([b, a], 1)[:, :, ::2, 1::2]
        return self.fc(self.head(y).mean([2, 3]))


class Shuffle(nn.Module):
    """A ShuffleNetV2-style unit: half the channels through a 1x1 and a
    depthwise convolution, concatenated with the other half, then the
    channel shuffle (view, transpose, reshape) before a 1x1 convolution."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.a = nn.Conv2d(4, 4, 1)
        self.b = nn.Conv2d(4, 4, 3, 1, 1, groups=4)
        self.c = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = F.relu(self.stem(x))
        left, right = h.chunk(2, dim=1)
        h = torch.cat([left, F.relu(self.b(self.a(right)))], 1)
        n, c, height, width = h.shape
        h = h.view(n, 2, c // 2, height, width).transpose(1, 2)
        h = F.relu(self.c(h.reshape(n, c, height, width)))
        return self.fc(h.mean([2, 3]))


class Upsample(nn.Module):
    """A decoder's step between convolutions: bilinear upsampling (Resize
    linear, its interpolation matrices applied to the NHWC values) and
    bicubic with aligned corners."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, 2, 1)
        self.up = nn.Conv2d(8, 6, 3, 1, 1)
        self.out = nn.Conv2d(6, 4, 3, 1, 1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = F.relu(self.down(x))
        h = F.interpolate(h, scale_factor=2, mode="bilinear",
                          align_corners=False)
        h = F.relu(self.up(h))
        h = F.interpolate(h, size=(12, 10), mode="bicubic",
                          align_corners=True)
        return self.fc(self.out(h).mean([2, 3]))


class Seg(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, 2, 1)
        self.norm = nn.GroupNorm(2, 8)
        self.out = nn.Conv2d(19, 4, 1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = F.silu(self.norm(self.down(x)))
        up = F.interpolate(y, scale_factor=2, mode="bilinear",
                           align_corners=False)
        cubic = F.interpolate(y[:, :8], scale_factor=2, mode="bicubic",
                              align_corners=True)
        z = self.out(torch.cat([up, cubic, x], 1))
        return self.fc(z.mean([2, 3]))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, 16) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, 17, 16) * 0.1)
        self.encoder = nn.TransformerEncoderLayer(
            16, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.encoder(x)[:, 0])


class Tokens(nn.Module):
    def __init__(self, vocab=40, dim=16, length=12, buffer=False):
        super().__init__()
        # The frequencies as a buffer (an initializer like the parameters:
        # only --frozen keeps it out of training) or computed in the graph.
        half = dim // 2
        if buffer:
            self.register_buffer(
                "freqs", torch.exp(-torch.arange(half).float() * (4.0 / half)))
        else:
            self.freqs = None
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(length, dim)
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.act = nn.PReLU(dim)
        self.head = nn.Linear(dim, 5)

    def forward(self, ids):
        ids = ids.long()
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.tok(ids) + self.pos(positions)
        # A sinusoidal embedding computed in the graph (as diffusion models
        # embed their timesteps): sin and cos of the positions' angles.
        half = self.pos.weight.shape[1] // 2
        freqs = self.freqs if self.freqs is not None else torch.exp(
            -torch.arange(half).float() * (4.0 / half))
        angles = positions.float().unsqueeze(-1) * freqs
        x = x + torch.cat([torch.sin(angles), torch.cos(angles)], -1)
        x = x + F.softplus(self.fc(self.norm(x)))
        x = torch.maximum(self.act(x.transpose(1, 2)).transpose(1, 2),
                          torch.zeros_like(x) - 0.5)
        x = F.normalize(x, dim=-1) * 2
        return self.head(x.mean(1))


class Einsums(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Parameter(torch.randn(dim, dim) * 0.3)
        self.head = nn.Linear(dim * dim // 4, 5)
        self.dim = dim

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.dim, -1)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / self.dim ** 0.5
        y = torch.einsum("bqk,bkd->bqd", scores.softmax(-1), v)
        y = torch.einsum("...d,de->...e", y, self.proj) + x
        pooled = torch.einsum("bsd->bd", y)
        outer = torch.einsum("bi,bj->bij", pooled[:, :4], pooled[:, 4:])
        return self.head(outer.flatten(1) * 0.1)


class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
        scores = (x @ x.transpose(1, 2)).masked_fill(mask, float("-inf"))
        y = self.fc(scores.softmax(-1) @ x).repeat(1, 1, 2)
        return self.head(torch.cumsum(y, dim=1).mean(1) * 0.3)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.layer = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0,
                                                batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        h = self.embed(x)
        t = h.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        return self.head(self.layer(h, h[:, :3], tgt_mask=mask).mean(1))


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * \
            self.weight


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.norm1, self.norm2 = RMSNorm(16), RMSNorm(16)
        self.qkv = nn.Linear(16, 48, bias=False)
        self.out = nn.Linear(16, 16, bias=False)
        self.w1 = nn.Linear(16, 32, bias=False)
        self.w3 = nn.Linear(16, 32, bias=False)
        self.w2 = nn.Linear(32, 16, bias=False)
        self.head = nn.Linear(16, 5)
        angles = torch.arange(6.0)[:, None] * \
            10000 ** (-torch.arange(0, 8, 2.0) / 8)[None]
        angles = torch.cat([angles, angles], -1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def rotate(self, x):
        half = torch.cat((-x[..., 4:], x[..., :4]), -1)
        return x * self.cos + half * self.sin

    def forward(self, x):
        h = self.embed(x)
        b, t, _ = h.shape
        q, k, v = (p.view(b, t, 2, 8).transpose(1, 2)
                   for p in self.qkv(self.norm1(h)).split(16, -1))
        scores = self.rotate(q) @ self.rotate(k).transpose(-1, -2) / 8 ** 0.5
        scores = scores + torch.triu(torch.full((t, t), float("-inf")), 1)
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, 16)
        h = h + self.out(y)
        g = self.norm2(h)
        h = h + self.w2(F.silu(self.w1(g)) * self.w3(g))
        return self.head(h[:, -1])


class PadMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.attention = nn.MultiheadAttention(16, 4, batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        h = self.embed(x)
        pad = x[..., 0] > 1.0
        pad = torch.cat([torch.zeros_like(pad[:, :1]), pad[:, 1:]], 1)
        y, w = self.attention(h, h, h, key_padding_mask=pad)
        return self.head(y.mean(1) + w.mean(1).sum(-1, keepdim=True))


class Triangles(nn.Module):
    """Masks of booleans cut to a triangle: torch.tril of a mask computed
    from the data, torch.eye's boolean diagonal joined to it, a constant
    torch.triu of boolean ones (folded), and a float torch.eye added."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        h = self.embed(x)
        t = x.shape[1]
        scores = h @ h.transpose(1, 2) / 4.0 + torch.eye(t)
        keep = torch.tril(x[:, :, None, 0] > x[:, None, :, 1])
        keep = keep | torch.eye(t, dtype=torch.bool)
        scores = scores.masked_fill(~keep, -1e4)
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        scores = scores.masked_fill(future, float("-inf"))
        return self.head((scores.softmax(-1) @ h).mean(1))


class MaskBuffer(nn.Module):
    """A causal mask of -inf registered as a float buffer: an initializer
    in the export, like the weights."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.head = nn.Linear(16, 5)
        self.register_buffer("mask",
                             torch.full((6, 6), float("-inf")).triu(1))

    def forward(self, x):
        h = self.embed(x)
        scores = h @ h.transpose(1, 2) / 4.0 + self.mask
        return self.head((scores.softmax(-1) @ h).mean(1))


class Pixel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.project = nn.Conv2d(12, 4, 1)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        y = torch.tanh(self.shuffle(self.conv(x)))
        return self.head(self.project(self.unshuffle(y)).mean((2, 3)))


class Gathered(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 5)
        self.register_buffer("order", torch.tensor([[3, 1, 0, 2, 7, 5, 4,
                                                      6]]))

    def forward(self, x, labels):
        h = self.fc(x)
        h = torch.tanh(h) + torch.gather(h, 1, self.order.expand(4, 8))
        logp = torch.log_softmax(self.head(h), 1)
        return -torch.gather(logp, 1, labels.long()[:, None]).mean()


class Stats(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        y = self.fc(x)
        y = (y - y.mean(-1, keepdim=True)) / (y.std(-1, keepdim=True) + 1) \
            + torch.var(y, -1, keepdim=True)
        y = y - torch.logsumexp(y, -1, keepdim=True) + y.amin(-1, keepdim=True)
        return self.head(y * torch.sign(x) + y.flip(-1))


class Recurrent(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.rnn = (nn.LSTM(8, 6, num_layers=2, batch_first=True,
                            bidirectional=True) if lstm
                    else nn.GRU(8, 6, batch_first=True))
        self.head = nn.Linear(12 if lstm else 6, 5)
        self.lstm = lstm

    def forward(self, x):
        if self.lstm:
            y, _ = self.rnn(x)
        else:
            y, _ = self.rnn(x, torch.zeros(1, x.shape[0], 6))
        return self.head(y[:, -1])


class Vectors(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.v = nn.Parameter(torch.randn(8) * 0.5)
        self.u = nn.Parameter(torch.randn(5) * 0.5)
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        a = (h @ self.v).softmax(-1)                 # [B, S, 8] @ [8]
        pooled = (a.unsqueeze(1) @ h).squeeze(1)
        bias = self.v @ self.w                       # [8] @ [8, 5]
        gate = self.u @ self.w.t()                   # [5] @ [5, 8]
        scores = self.u @ torch.tanh(h @ self.w).transpose(1, 2)  # [5] @ [B, 5, S]
        return (pooled * gate) @ self.w + bias * (self.v @ self.v) \
            + scores.mean(-1, keepdim=True)           # [8] @ [8]: a dot


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4, padding_idx=0)
        self.head = nn.Linear(4, 5)

    def forward(self, ids):
        return self.head(self.emb(ids.long()).mean(1))


class MaskedTokens(nn.Module):
    """A masked-token objective with its loss in the graph: per-position
    logits over a vocabulary of 12, cross-entropy against labels that are
    -100 where a position is not predicted (PyTorch's default
    ignore_index), as [N, C, S] scores (`flat`: as [N S, C] rows, ignoring
    class 0, summed)."""

    def __init__(self, flat):
        super().__init__()
        self.flat = flat
        self.emb = nn.Embedding(12, 8)
        self.mix = nn.Linear(8, 8)
        self.head = nn.Linear(8, 12)

    def forward(self, ids, labels):
        h = self.emb(ids.long())
        logits = self.head(torch.tanh(self.mix(h) + h.mean(1, keepdim=True)))
        if self.flat:
            return F.cross_entropy(logits.reshape(-1, 12),
                                   labels.long().reshape(-1), ignore_index=0,
                                   reduction="sum")
        return F.cross_entropy(logits.transpose(1, 2), labels.long())


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)
        self.head = nn.Linear(4, 5)

    def forward(self, ids):
        ids = ids.long()
        pos = torch.arange(ids.shape[1]).unsqueeze(0).expand(ids.shape[0], -1)
        return self.head((self.emb(ids) + self.emb(pos)).mean(1))


def export(out, name, model, x, outputs=("logits",)):
    torch.onnx.export(copy.deepcopy(model), x[:4],
                      os.path.join(out, name + ".onnx"), input_names=["x"],
                      output_names=list(outputs), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def main():
    out = sys.argv[1]
    torch.manual_seed(3)
    for name, model, shape in (("mobile", Mobile(0.0), (3, 16, 16)),
                               ("layout", Layout(), (3, 8, 8)),
                               ("seg", Seg(), (3, 8, 8)),
                               ("vit", ViT(), (3, 16, 16)),
                               ("einsums", Einsums(), (6, 8)),
                               ("causal", Causal(), (5, 8)),
                               ("decoder", Decoder(), (6, 8)),
                               ("llama", Llama(), (6, 8)),
                               ("padmask", PadMask(), (6, 8)),
                               ("triangles", Triangles(), (6, 8)),
                               ("maskbuffer", MaskBuffer(), (6, 8)),
                               ("stats", Stats(), (8,)),
                               ("lstm", Recurrent(True), (5, 8)),
                               ("gru", Recurrent(False), (5, 8)),
                               ("vectors", Vectors(), (5, 8))):
        x = torch.randn(32, *shape)
        y = torch.randint(0, 5, (32,), dtype=torch.int32)
        export(out, name, model, x)
        # Tracing for the export ran the copy once in training mode, so
        # batch norm's running statistics are one update in: the same here.
        with torch.no_grad():
            model.train()(x[:4])
        numpy.savez(os.path.join(out, name + "-data.npz"), x=x.numpy(),
                    y=y.numpy())
        write_trace(out, name, sgd_trace(model.train(), x, y, batch=4,
                                         steps=10, lr=0.05))
    ids = torch.randint(0, 40, (32, 12), dtype=torch.int32)
    y = torch.randint(0, 5, (32,), dtype=torch.int32)
    numpy.savez(os.path.join(out, "tokens-data.npz"), x=ids.numpy(),
                y=y.numpy())
    for name, buffer in (("tokens", False), ("buffered", True)):
        torch.manual_seed(4)
        model = Tokens(buffer=buffer)
        export(out, name, model, ids.long())
        write_trace(out, name, sgd_trace(model.train(), ids, y, batch=4,
                                         steps=10, lr=0.05))
    torch.manual_seed(5)
    model = Positions()
    ids = torch.randint(0, 16, (32, 6), dtype=torch.int32)
    torch.onnx.export(copy.deepcopy(model), ids[:4].long(),
                      os.path.join(out, "positions.onnx"), input_names=["x"],
                      output_names=["logits"], opset_version=17,
                      dynamic_axes={"x": {0: "batch", 1: "length"}},
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    numpy.savez(os.path.join(out, "positions-data.npz"), x=ids.numpy(),
                y=y.numpy())
    write_trace(out, "positions", sgd_trace(model.train(), ids, y, batch=4,
                                            steps=10, lr=0.05))
    export(out, "mobile-drop", Mobile(0.2), torch.randn(4, 3, 16, 16))
    # PyTorch's label smoothing (0.1) and ignore_index (-100 for a quarter
    # of the labels), which the export cannot carry: given to the importer.
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 5))
    x = torch.randn(32, 8)
    smooth_labels = torch.randint(0, 5, (32,), dtype=torch.int32)
    smooth_labels[torch.rand(32) < 0.25] = -100
    export(out, "smooth", model, x)
    numpy.savez(os.path.join(out, "smooth-data.npz"), x=x.numpy(),
                y=smooth_labels.numpy())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for i in range(10):
        k = i % 8
        loss = F.cross_entropy(model(x[k * 4:(k + 1) * 4]),
                               smooth_labels[k * 4:(k + 1) * 4].long(),
                               ignore_index=-100, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    write_trace(out, "smooth", losses)
    # Labels -100 (not predicted) at about half the positions.
    ids = torch.randint(0, 12, (32, 6), dtype=torch.int32)
    labels = torch.randint(0, 12, (32, 6), dtype=torch.int32)
    labels[torch.rand(32, 6) < 0.5] = -100
    numpy.savez(os.path.join(out, "masked-data.npz"), x=ids.numpy(),
                y=labels.numpy())
    for name, flat in (("masked", False), ("masked-flat", True)):
        # The flat one ignores class 0 instead of -100: its -100 labels are
        # 0 there.
        targets = labels.clone()
        if flat:
            targets[targets == -100] = 0
            numpy.savez(os.path.join(out, name + "-data.npz"), x=ids.numpy(),
                        y=targets.numpy())
        torch.manual_seed(7)
        loss_case(out, name, MaskedTokens(flat), ids, targets)
    torch.manual_seed(8)
    model = Gathered()
    features = torch.randn(32, 8)
    classes = torch.randint(0, 5, (32,), dtype=torch.int32)
    numpy.savez(os.path.join(out, "gathered-data.npz"), x=features.numpy(),
                y=classes.numpy())
    loss_case(out, "gathered", model, features, classes)
    # Token ids a third of which are the padding index 0.
    torch.manual_seed(6)
    model = Padded()
    ids = torch.randint(0, 16, (32, 6), dtype=torch.int32)
    ids[torch.rand(32, 6) < 0.3] = 0
    export(out, "padded", model, ids.long())
    numpy.savez(os.path.join(out, "padded-data.npz"), x=ids.numpy(),
                y=y.numpy())
    write_trace(out, "padded", sgd_trace(model.train(), ids, y, batch=4,
                                         steps=10, lr=0.05))
    y = image_case(out, "select", 9, Select)
    image_case(out, "upsample", 11, Upsample, y)
    image_case(out, "shuffle", 10, Shuffle, y)
    image_case(out, "pixel", 12, Pixel, y)


def loss_case(out, name, model, x, y):
    """A model whose loss is in its graph, forward(x, y) -> loss, exported
    with inputs x and y, and PyTorch's 10 SGD steps (lr 0.05, batch 4,
    file order) on them."""
    torch.onnx.export(copy.deepcopy(model), (x[:4], y[:4]),
                      os.path.join(out, name + ".onnx"),
                      input_names=["x", "y"], output_names=["loss"],
                      opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for i in range(10):
        k = i % (x.shape[0] // 4)
        loss = model(x[k * 4:(k + 1) * 4], y[k * 4:(k + 1) * 4])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    write_trace(out, name, losses)


def image_case(out, name, seed, make, y=None):
    """make() under `seed`, exported for 32 random 3x8x8 images, with its
    data (labels `y`, or 5 classes drawn after the images) and PyTorch's
    SGD trace; returns the labels."""
    torch.manual_seed(seed)
    model = make()
    x = torch.randn(32, 3, 8, 8)
    if y is None:
        y = torch.randint(0, 5, (32,), dtype=torch.int32)
    export(out, name, model, x)
    numpy.savez(os.path.join(out, name + "-data.npz"), x=x.numpy(),
                y=y.numpy())
    write_trace(out, name, sgd_trace(model.train(), x, y, batch=4, steps=10,
                                     lr=0.05))
    return y

if __name__ == "__main__":
    main()
