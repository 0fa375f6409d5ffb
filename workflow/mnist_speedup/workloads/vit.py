"""A small vision transformer (ViT): the image as 4x4 patches, a learned position embedding and a class token,
pre-norm encoder blocks (layer norm, multi-head self-attention, residual; layer norm, an MLP with the exact
GELU, residual), a final layer norm and a linear head of 10 on the class token.

The spec names every parameter and its layout, which each framework's layer file (layers/vit.py) builds as
written: kernels (inputs, outputs) as ``x @ kernel``; the class token (width,); the position embedding
(tokens + 1, width), the class token's row first; a layer norm's scale and bias (width,). Patches and tokens
are taken row-major: token ``7 r + c`` is the patch at row ``r``, column ``c``, its 16 pixels row-major too.
Weights and embeddings are drawn from a normal cut at two standard deviations (0.02), biases and layer-norm
biases are 0, layer-norm scales 1. Layer norm over the last axis, epsilon 1e-6. Dropout after the embedding,
after the attention's output projection and after each MLP linear; none on the attention probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mnist_speedup.spec.workloads import IMAGE_SIDE, N_CLASSES, Layer, Product, ProductKind, Workload

#: every weight and embedding's standard deviation (before the cut at two), and the layer norm's epsilon
STDDEV = 0.02
LAYER_NORM_EPSILON = 1e-6

# Element-wise costs per element, forward and backward together (written down so that they can be checked):
COSTS = {
    "layer_norm": 17,  # fwd: mean, subtract, square, variance, normalise, scale, shift (7); bwd: 10
    "softmax": 8,  # fwd: max-subtract, exp, sum, divide (5); bwd: (dP - sum(dP P)) P (3)
    "attention_scale": 2,  # the scores times 1/sqrt(head width), fwd and bwd
    "gelu": 16,  # exact: x/sqrt(2), erf, 1 +, times x/2 (8 fwd, counting erf as 5); its derivative (8 bwd)
    "residual": 2,  # add fwd; the gradient passed on to both branches bwd
}


@dataclass(frozen=True)
class VitLayer(Layer):
    """One of the ViT's layer kinds: ``patch_embed`` (patches to tokens, the class token and the position
    embedding), ``encoder_block``, ``vit_head`` (the final layer norm of the class token and the linear
    head). ``rate`` is the block's dropout."""

    width: int = 0
    heads: int = 0
    mlp: int = 0
    patch: int = 0

    @property
    def tokens(self) -> int:
        """Patches, and the class token."""
        return (IMAGE_SIDE // self.patch) ** 2 + 1

    @property
    def weights(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Every parameter by name: (shape, ``normal`` / ``zeros`` / ``ones``), in the order frameworks keep them."""
        w, m = self.width, self.mlp
        if self.kind == "patch_embed":
            return {
                "kernel": ((self.patch**2, w), "normal"),
                "bias": ((w,), "zeros"),
                "class_token": ((w,), "normal"),
                "position": ((self.tokens, w), "normal"),
            }
        if self.kind == "vit_head":
            return {**_norm("norm", w), "kernel": ((w, N_CLASSES), "normal"), "bias": ((N_CLASSES,), "zeros")}
        out = _norm("norm1", w)
        for name in ("query", "key", "value", "out"):
            out |= {f"{name}_kernel": ((w, w), "normal"), f"{name}_bias": ((w,), "zeros")}
        out |= _norm("norm2", w)
        return out | {
            "mlp1_kernel": ((w, m), "normal"),
            "mlp1_bias": ((m,), "zeros"),
            "mlp2_kernel": ((m, w), "normal"),
            "mlp2_bias": ((w,), "zeros"),
        }

    @property
    def weight_shape(self):
        return None  # no single kernel: the weights are named above


def _norm(name: str, width: int) -> dict:
    return {f"{name}_scale": ((width,), "ones"), f"{name}_bias": ((width,), "zeros")}


class Vit(Workload):
    type = "vit"
    family, marker = "ViT", "D"
    product_kinds = (
        ProductKind("bmm", "bmk,bkn->bmn"),
        ProductKind("bmm_nt", "bmk,bnk->bmn"),
        ProductKind("bmm_tn", "bkm,bkn->bmn"),
    )
    elementwise_costs = COSTS

    @property
    def patches(self) -> int:
        return (IMAGE_SIDE // self.spec["patch"]) ** 2

    def _layer(self, kind: str) -> VitLayer:
        s = self.spec
        return VitLayer(kind, rate=s["dropout"], width=s["width"], heads=s["heads"], mlp=s["mlp"], patch=s["patch"])

    def network(self) -> list[Layer]:
        embed = [self._layer("patch_embed"), Layer("dropout", rate=self.spec["dropout"])]
        return embed + [self._layer("encoder_block")] * self.spec["depth"] + [self._layer("vit_head")]

    def words(self) -> str:
        s = self.spec
        return f"ViT {s['depth']}x{s['width']} ({s['heads']} heads, patch {s['patch']})"

    def products(self, b: int) -> list[Product]:
        s = self.spec
        w, m, h, T = s["width"], s["mlp"], s["heads"], self.patches + 1
        n, d, pixels = b * T, s["width"] // s["heads"], s["patch"] ** 2
        out = [Product("matmul", (b * self.patches, pixels, w)), Product("matmul", (pixels, b * self.patches, w))]
        for _ in range(s["depth"]):
            dense = [(w, w)] * 4 + [(w, m), (m, w)]  # query, key, value, out; the MLP
            out += [Product("matmul", (n, i, o)) for i, o in dense]  # forward
            out += [Product("matmul", (i, n, o)) for i, o in dense]  # weight gradients
            out += [Product("matmul", (n, o, i)) for i, o in dense]  # input gradients
            out += [Product("bmm_nt", (b * h, T, d, T)), Product("bmm", (b * h, T, T, d))]  # Q K^T, then P V
            out += [Product("bmm", (b * h, T, T, d)), Product("bmm_tn", (b * h, T, T, d))]  # dQ, dK
            out += [Product("bmm_nt", (b * h, T, d, T)), Product("bmm_tn", (b * h, T, T, d))]  # dP, dV
        head = (w, N_CLASSES)
        return out + [
            Product("matmul", (b, *head)),
            Product("matmul", (w, b, N_CLASSES)),
            Product("matmul", (b, N_CLASSES, w)),
        ]

    def n_parameters(self) -> int:
        return sum(math.prod(shape) for layer in self.network() for shape, _ in getattr(layer, "weights", {}).values())

    def activations(self, b: int) -> dict[str, int]:
        s = self.spec
        w, m, depth, T = s["width"], s["mlp"], s["depth"], self.patches + 1
        n = b * T
        dropped = n * w + depth * (2 * n * w + n * m) if s["dropout"] > 0 else 0
        return {
            "bias": b * self.patches * w + depth * (5 * n * w + n * m) + b * N_CLASSES,
            "layer_norm": depth * 2 * n * w + b * w,
            "softmax": depth * b * s["heads"] * T * T,
            "attention_scale": depth * b * s["heads"] * T * T,
            "gelu": depth * n * m,
            "residual": n * w + depth * 2 * n * w,  # the position embedding's add, then two per block
            "dropout": dropped,
        }

    def check(self, label: str, fail) -> None:
        s = self.spec
        if s["width"] % s["heads"]:
            fail(
                f"workloads.{label}.heads",
                f"{s['heads']} heads do not divide the width {s['width']}",
                f"use a number of heads that divides {s['width']}, e.g. 4 with width 64",
            )
        if IMAGE_SIDE % s["patch"]:
            fail(
                f"workloads.{label}.patch",
                f"a patch of {s['patch']} pixels does not divide the {IMAGE_SIDE}-pixel side",
                "use a patch side that divides 28: 1, 2, 4, 7, 14 or 28, e.g. 4",
            )
        if isinstance(s["dropout"], list):
            fail(f"workloads.{label}.dropout", f"{s['dropout']!r} is a list", "give one rate, e.g. dropout: 0.1")


WORKLOADS = {"vit": Vit}
