#!/usr/bin/env python3
"""PyTorch peer for bench/train_vs_pytorch and bench/gpu.sh: the same models, shapes, optimizer and
in-memory data as ferry-train, timed the same way (samples/s over the steps after warm-up).
Prints one JSON object on stdout."""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.relu(layer(x), inplace=True)
        return self.layers[-1](x)


class Block(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.conv1 = nn.Conv2d(w, w, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, w, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(w)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = self.bn2(self.conv2(y))
        return F.relu(y + x, inplace=True)


class Cnn(nn.Module):
    def __init__(self, cin=1, width=32, blocks=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(cin, width, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(blocks))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem(x)), inplace=True)
        x = F.max_pool2d(x, 2)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean((2, 3)))


class DecoderBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x, mask):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        s = s.masked_fill(mask, float("-inf"))
        y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, t, d)
        h = x + self.proj(y)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Transformer(nn.Module):
    def __init__(self, vocab, context, d, layers, heads):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(DecoderBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool, device=tokens.device).triu(1)
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device)).unsqueeze(0)
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn", "transformer"], required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--samples", type=int, default=16384)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    if a.model == "mlp":
        model = Mlp([784, 1024, 1024, 10])
        x_all = torch.randn(a.samples, 784)
        y_all = torch.randint(0, 10, (a.samples,))
    elif a.model == "cnn":
        model = Cnn()
        x_all = torch.randn(a.samples, 1, 28, 28)
        y_all = torch.randint(0, 10, (a.samples,))
    else:
        model = Transformer(a.vocab, a.context, a.d_model, a.layers, a.heads)
        rows = torch.randint(0, a.vocab, (a.samples, a.context + 1))
        x_all, y_all = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    per_epoch = a.samples // a.batch
    order = torch.randperm(a.samples)
    amp = a.precision == "bf16"

    def step(i):
        idx = order[(i % per_epoch) * a.batch:(i % per_epoch + 1) * a.batch]
        x = x_all.index_select(0, idx).to(dev, non_blocking=True)
        y = y_all.index_select(0, idx).to(dev, non_blocking=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=amp):
            out = model(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for i in range(a.warmup):
        step(i)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    loss.item()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(json.dumps({"model": a.model, "batch": a.batch, "steps": a.steps, "seconds": dt,
                      "samples_per_s": a.batch * a.steps / dt, "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "device": str(dev), "precision": a.precision,
                      "params": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
