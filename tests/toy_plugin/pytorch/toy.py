"""The toy workload's Gram layer in PyTorch."""

from __future__ import annotations


def _gram(torch, layer, generator) -> list:
    t = layer.tokens

    class Gram(torch.nn.Module):
        def forward(self, x):
            tokens = x.reshape(-1, t, t)
            gram = torch.einsum("bmk,bnk->bmn", tokens, tokens)
            return (tokens + gram @ tokens / (t * t)).reshape(-1, t * t)

    return [Gram()]


LAYERS = {"gram": _gram}
