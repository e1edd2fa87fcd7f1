#!/usr/bin/env python3
"""Writes the ONNX models the import tests read (Inputs/*.onnx), exported
from PyTorch (Debian's python3-torch) with fixed seeds; run it again to
regenerate them. The files are checked in, so the tests need no PyTorch.

  /usr/bin/python3 test/Import/make_models.py test/Import/Inputs
"""
import copy
import json
import os
import sys

import numpy
import torch


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Encoder(torch.nn.Module):
    """A small BERT-style encoder: token and position embeddings, one
    post-LN layer (attention with 2 heads, GELU feed-forward), a classifier
    on the first token. No dropout (the traces must be deterministic)."""

    def __init__(self, vocab=50, seq=8, hidden=16, heads=2, ffn=32,
                 classes=3):
        super().__init__()
        self.heads = heads
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Parameter(torch.randn(seq, hidden) * 0.1)
        self.ln0 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.ff1 = torch.nn.Linear(hidden, ffn)
        self.ff2 = torch.nn.Linear(ffn, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.cls = torch.nn.Linear(hidden, classes)

    def forward(self, ids):
        b, s = ids.shape
        h = self.ln0(self.tok(ids) + self.pos)
        q, k, v = self.qkv(h).split(h.shape[-1], dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        a = torch.softmax(q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5), -1)
        ctx = (a @ v).transpose(1, 2).reshape(b, s, -1)
        h = self.ln1(h + self.out(ctx))
        h = self.ln2(h + self.ff2(torch.nn.functional.gelu(self.ff1(h))))
        return self.cls(h[:, 0])


class MaskedEncoder(Encoder):
    """The encoder with padding: token id 0 is padding, and attention to
    it is masked (masked_fill exports Equal and Where)."""

    def forward(self, ids):
        b, s = ids.shape
        pad = (ids == 0)[:, None, None, :]
        h = self.ln0(self.tok(ids) + self.pos)
        q, k, v = self.qkv(h).split(h.shape[-1], dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        a = torch.softmax(scores.masked_fill(pad, -1e4), -1)
        ctx = (a @ v).transpose(1, 2).reshape(b, s, -1)
        h = self.ln1(h + self.out(ctx))
        h = self.ln2(h + self.ff2(torch.nn.functional.gelu(self.ff1(h))))
        return self.cls(h[:, 0])


class AdditiveMaskEncoder(Encoder):
    """The encoder with Hugging Face's attention mask: an integer input of
    1s (attend) and 0s (padding), cast to float and turned into an
    additive bias of the scores, (1 - mask) * -10000 (Cast, Sub, Mul,
    Add)."""

    def forward(self, ids, mask):
        b, s = ids.shape
        bias = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        h = self.ln0(self.tok(ids) + self.pos)
        q, k, v = self.qkv(h).split(h.shape[-1], dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5) + bias
        a = torch.softmax(scores, -1)
        ctx = (a @ v).transpose(1, 2).reshape(b, s, -1)
        h = self.ln1(h + self.out(ctx))
        h = self.ln2(h + self.ff2(torch.nn.functional.gelu(self.ff1(h))))
        return self.cls(h[:, 0])


class Cnn(torch.nn.Module):
    """A small CNN with batch norm (NCHW, as PyTorch exports it)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        F = torch.nn.functional
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class UNetLike(torch.nn.Module):
    """Encoder-decoder with a skip connection: a transposed convolution and
    a nearest upsampling bring the resolution back, concatenated with the
    encoder's features, then a classifier (the import tests use the
    cross-entropy loss)."""

    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.mid = torch.nn.Conv2d(6, 6, 3, padding=1)
        self.up = torch.nn.ConvTranspose2d(6, 6, 2, stride=2)
        self.dec = torch.nn.Conv2d(12, 6, 3, padding=1)
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x):
        F = torch.nn.functional
        e = F.relu(self.bn(self.enc(x)))
        m = F.relu(self.mid(F.max_pool2d(e, 2)))
        u = self.up(m) + F.interpolate(m, scale_factor=2.0, mode="nearest")
        d = F.relu(self.dec(torch.cat([u, e], 1)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(d, 1), 1))


def sgd_trace(model, x, y, batch, steps, lr):
    """PyTorch's losses of `steps` SGD steps on the batches in file order
    (wrapping), as the runner's --no-shuffle takes them."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for i in range(steps):
        k = i % (x.shape[0] // batch)
        loss = torch.nn.functional.cross_entropy(
            model(x[k * batch:(k + 1) * batch]),
            y[k * batch:(k + 1) * batch].long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def write_trace(out, name, losses, state=None):
    """PyTorch's losses (and final tensors) as name-torch-losses.json."""
    trace = {"torch": torch.__version__, "losses": losses}
    if state is not None:
        trace["state"] = state
    with open(os.path.join(out, name + "-torch-losses.json"), "w") as f:
        json.dump(trace, f)
        f.write("\n")


def image_model(out, name, model, samples, classes):
    """An NCHW classifier exported in training mode (batch norm on batch
    statistics, updating its running ones), its data (8x8 RGB images) and
    PyTorch's trace (SGD, lr 0.05, batch 4). Returns the trained model."""
    images = torch.rand(samples, 3, 8, 8) * 2 - 1
    labels = torch.randint(0, classes, (samples,), dtype=torch.int32)
    torch.onnx.export(copy.deepcopy(model), images[:4],
                      os.path.join(out, name + ".onnx"), input_names=["image"],
                      output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    numpy.savez(os.path.join(out, name + "-data.npz"), image=images.numpy(),
                labels=labels.numpy())
    # Tracing for the export ran the copy once in training mode, so the
    # exported running statistics are one update in: the same here.
    with torch.no_grad():
        model(images[:4])
    return sgd_trace(model, images, labels, batch=4, steps=10, lr=0.05)


def export_tokens(model, ids, path, opset=17):
    """A model of token ids exported with a dynamic batch."""
    torch.onnx.export(model, ids[:4].long(), path,
                      input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch"}}, opset_version=opset,
                      # In eval mode the exporter merges parameters with
                      # equal values (the fresh LayerNorm weights) into one
                      # initializer; training mode keeps every parameter.
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def token_model(out, name, model, ids, labels):
    """A model of token ids exported at opset 17 with a dynamic batch, its
    data and PyTorch's trace (SGD, lr 0.05, batch 4)."""
    export_tokens(model, ids, os.path.join(out, name + ".onnx"))
    numpy.savez(os.path.join(out, name + "-data.npz"), ids=ids.numpy(),
                labels=labels.numpy())
    trained = copy.deepcopy(model).train()
    write_trace(out, name, sgd_trace(_LongIds(trained), ids, labels, batch=4,
                                     steps=10, lr=0.05))


def additive_mask_model(out):
    """The encoder with an integer attention-mask input (int64, as Hugging
    Face's tokenizers give it), exported at opset 17 with a dynamic batch;
    its data (ids, mask, labels) and PyTorch's trace (SGD, lr 0.05, batch
    4, the batches in file order)."""
    torch.manual_seed(5)
    model = AdditiveMaskEncoder().eval()
    ids = torch.randint(1, 50, (32, 8), dtype=torch.int32)
    mask = torch.ones(32, 8, dtype=torch.int32)
    for row, m in zip(ids, mask):
        n = int(torch.randint(2, 9, ()))
        row[n:] = 0
        m[n:] = 0
    labels = torch.randint(0, 3, (32,), dtype=torch.int32)
    name = "encoder-additive-mask"
    torch.onnx.export(model, (ids[:4].long(), mask[:4].long()),
                      os.path.join(out, name + ".onnx"),
                      input_names=["ids", "mask"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch"}, "mask": {0: "batch"}},
                      opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    numpy.savez(os.path.join(out, name + "-data.npz"), ids=ids.numpy(),
                mask=mask.numpy(), labels=labels.numpy())
    trained = copy.deepcopy(model).train()
    opt = torch.optim.SGD(trained.parameters(), lr=0.05)
    losses = []
    for i in range(10):
        k = i % (ids.shape[0] // 4)
        batch = slice(k * 4, (k + 1) * 4)
        loss = torch.nn.functional.cross_entropy(
            trained(ids[batch].long(), mask[batch].long()),
            labels[batch].long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    write_trace(out, name, losses)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = Mlp().eval()
    # A dynamic batch dimension: the importer must bind it.
    torch.onnx.export(model, torch.randn(4, 12), os.path.join(out, "mlp.onnx"),
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}}, opset_version=13)
    torch.onnx.export(model, torch.randn(4, 12),
                      os.path.join(out, "mlp-static.onnx"),
                      input_names=["x"], output_names=["logits"],
                      opset_version=17)
    # The MLP's training data and PyTorch's loss trace from the exported
    # weights: SGD, lr 0.1, batch 8, 10 steps.
    x = torch.rand(64, 12) * 2 - 1
    y = torch.randint(0, 5, (64,), dtype=torch.int32)
    numpy.savez(os.path.join(out, "mlp-data.npz"), x=x.numpy(), y=y.numpy())
    trained = copy.deepcopy(model).train()
    losses = sgd_trace(trained, x, y, batch=8, steps=10, lr=0.1)
    write_trace(out, "mlp", losses)
    # The same MLP with its loss inside (SoftmaxCrossEntropyLoss), as a
    # user exports a training graph.
    torch.onnx.export(_WithLoss(model), (torch.randn(4, 12),
                                         torch.zeros(4, dtype=torch.long)),
                      os.path.join(out, "mlp-loss.onnx"),
                      input_names=["x", "y"], output_names=["loss"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=17)

    weighted_loss_model(out, model, x, y)

    # The encoder, exported at opset 17 (LayerNormalization, GELU as Erf)
    # with a dynamic batch; its data and trace (SGD, lr 0.05, batch 4).
    torch.manual_seed(1)
    encoder = Encoder().eval()
    ids = torch.randint(0, 50, (32, 8), dtype=torch.int32)
    labels = torch.randint(0, 3, (32,), dtype=torch.int32)
    token_model(out, "encoder", encoder, ids, labels)
    # The same encoder at opset 13, where nn.LayerNorm exports as its
    # steps (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add):
    # the same weights, data and trace.
    export_tokens(encoder, ids, os.path.join(out, "encoder-opset13.onnx"), 13)

    # The CNN with batch norm, and its final running statistics, a filter
    # and a bias.
    torch.manual_seed(2)
    cnn = Cnn().train()
    losses = image_model(out, "cnn", cnn, samples=32, classes=4)
    state = {name: cnn.state_dict()[name].flatten().tolist()
             for name in ("bn1.running_mean", "bn1.running_var",
                          "bn2.running_var", "conv1.weight", "fc.bias")}
    write_trace(out, "cnn", losses, state)

    # The encoder-decoder.
    torch.manual_seed(3)
    unet = UNetLike().train()
    write_trace(out, "unet", image_model(out, "unet", unet, samples=16,
                                         classes=3))

    # The encoder with padding masked in attention (Equal, Where), ids
    # padded with 0 after a random length (at least 2 tokens).
    torch.manual_seed(4)
    masked = MaskedEncoder().eval()
    ids = torch.randint(1, 50, (32, 8), dtype=torch.int32)
    for row in ids:
        row[int(torch.randint(2, 9, ())):] = 0
    labels = torch.randint(0, 3, (32,), dtype=torch.int32)
    token_model(out, "encoder-masked", masked, ids, labels)

    # The encoder with an additive mask from an integer mask input (Cast).
    additive_mask_model(out)


class _WithLoss(torch.nn.Module):
    """A model and its cross-entropy, one graph."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.inner(x), y)


class _WithWeightedLoss(torch.nn.Module):
    """A model and the cross-entropies ONNX writes out: class weights with
    an ignored class (mean over the weights), plus half the mean of the
    per-sample (reduction none) losses."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.weight = torch.tensor([1.0, 0.5, 2.0, 1.5, 0.25])

    def forward(self, x, y):
        logits = self.inner(x)
        weighted = torch.nn.functional.cross_entropy(
            logits, y, weight=self.weight, ignore_index=2)
        each = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        return weighted + 0.5 * each.mean()


def weighted_loss_model(out, model, x, y):
    """The MLP with _WithWeightedLoss exported as its training graph, and
    PyTorch's trace of it (SGD, lr 0.1, batch 8, 10 steps)."""
    with_loss = _WithWeightedLoss(copy.deepcopy(model))
    torch.onnx.export(with_loss, (torch.randn(8, 12),
                                  torch.zeros(8, dtype=torch.long)),
                      os.path.join(out, "mlp-weighted-loss.onnx"),
                      input_names=["x", "y"], output_names=["loss"],
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    opt = torch.optim.SGD(with_loss.inner.parameters(), lr=0.1)
    losses = []
    for i in range(10):
        k = i % (x.shape[0] // 8)
        loss = with_loss(x[k * 8:(k + 1) * 8], y[k * 8:(k + 1) * 8].long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    write_trace(out, "mlp-weighted-loss", losses)


class _LongIds(torch.nn.Module):
    """The encoder on int32 ids (as the runner feeds them)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, ids):
        return self.inner(ids.long())


if __name__ == "__main__":
    main()
