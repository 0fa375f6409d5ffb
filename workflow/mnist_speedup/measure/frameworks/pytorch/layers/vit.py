"""The ViT's layer kinds in PyTorch (spec: mnist_speedup/workloads/vit.py): each a module whose parameters
carry the spec's names and layouts (kernels (inputs, outputs), used as ``x @ kernel``), the exact GELU, layer
norm over the last axis in float32 (autocast keeps it there)."""

from __future__ import annotations

import functools
import math


def _parameters(torch, module, layer, generator) -> None:
    """The spec's parameters on ``module``, drawn from ``generator`` in the spec's order."""
    for name, (shape, init) in layer.weights.items():
        value = torch.empty(shape)
        if init == "normal":
            torch.nn.init.trunc_normal_(value, std=0.02, a=-0.04, b=0.04, generator=generator)
        else:
            value.fill_(1.0 if init == "ones" else 0.0)
        module.register_parameter(name, torch.nn.Parameter(value))


@functools.cache
def _modules(torch):
    """The three module classes, made once the framework is imported."""
    functional = torch.nn.functional

    class Vit(torch.nn.Module):
        def __init__(self, layer, generator):
            super().__init__()
            self.layer = layer
            _parameters(torch, self, layer, generator)

        def linear(self, x, name: str):
            return x @ getattr(self, f"{name}_kernel") + getattr(self, f"{name}_bias")

        def norm(self, x, name: str):
            w = self.layer.width
            scale, bias = getattr(self, f"{name}_scale"), getattr(self, f"{name}_bias")
            return functional.layer_norm(x.float(), (w,), scale, bias, eps=1e-6).to(x.dtype)

        def dropout(self, x):
            return functional.dropout(x, self.layer.rate, self.training)

    class PatchEmbed(Vit):
        def forward(self, x):
            p = self.layer.patch
            side = 28 // p
            patches = x.reshape(-1, side, p, side, p).permute(0, 1, 3, 2, 4).reshape(-1, side * side, p * p)
            tokens = patches @ self.kernel + self.bias
            cls = self.class_token.expand(tokens.shape[0], 1, -1).to(tokens.dtype)
            return torch.cat([cls, tokens], dim=1) + self.position

    class EncoderBlock(Vit):
        def attention(self, h):
            b, t, w = h.shape
            heads = self.layer.heads
            d = w // heads
            q, k, v = (self.linear(h, n).reshape(b, t, heads, d).transpose(1, 2) for n in ("query", "key", "value"))
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
            probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
            mixed = torch.einsum("bhqk,bhkd->bhqd", probs, v).transpose(1, 2).reshape(b, t, w)
            return self.linear(mixed, "out")

        def forward(self, x):
            x = x + self.dropout(self.attention(self.norm(x, "norm1")))
            h = functional.gelu(self.linear(self.norm(x, "norm2"), "mlp1"), approximate="none")
            return x + self.dropout(self.linear(self.dropout(h), "mlp2"))

    class Head(Vit):
        def forward(self, x):
            return self.norm(x[:, 0], "norm") @ self.kernel + self.bias

    return {"patch_embed": PatchEmbed, "encoder_block": EncoderBlock, "vit_head": Head}


def _build(kind: str):
    return lambda torch, layer, generator: [_modules(torch)[kind](layer, generator)]


LAYERS = {kind: _build(kind) for kind in ("patch_embed", "encoder_block", "vit_head")}
