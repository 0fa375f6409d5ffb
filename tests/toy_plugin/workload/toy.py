"""A toy workload type: dense 784 -> n (ReLU), a Gram mixing layer over the n units as t x t tokens
(n = t^2), dense n -> 10. It adds a layer kind and two batched product kinds."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mnist_speedup.spec.workloads import (
    N_CLASSES,
    N_INPUTS,
    Layer,
    Product,
    ProductKind,
    Workload,
    dense,
    dense_products,
)


@dataclass(frozen=True)
class Gram(Layer):
    """``y = x + (x x^T) x / t^2`` with ``x`` a sample's ``tokens`` x ``tokens`` matrix; no weights."""

    tokens: int = 0


class Toy(Workload):
    type = "toy"
    family, marker = "Toy", "^"
    product_kinds = (ProductKind("bmm", "bmk,bkn->bmn"), ProductKind("bmm_nt", "bmk,bnk->bmn"))
    #: the Gram layer's scale and residual add, forward and backward, per output element
    elementwise_costs = {"gram": 4}

    @property
    def width(self) -> int:
        return self.spec["hidden"][0]

    @property
    def tokens(self) -> int:
        return math.isqrt(self.width)

    def words(self) -> str:
        return f"Toy 784-{self.width}-gram{self.tokens}x{self.tokens}-10"

    def network(self) -> list[Layer]:
        return [
            dense(N_INPUTS, self.width, relu=True),
            Gram("gram", tokens=self.tokens),
            dense(self.width, N_CLASSES, False),
        ]

    def products(self, b: int) -> list[Product]:
        t = self.tokens
        gram = [Product("bmm_nt", (b, t, t, t)), Product("bmm", (b, t, t, t))]  # forward: G = X X^T, G X
        gram += [Product("bmm_nt", (b, t, t, t))] + [Product("bmm", (b, t, t, t))] * 3  # dG; dX three ways
        return dense_products(b, [(N_INPUTS, self.width), (self.width, N_CLASSES)], False) + gram

    def n_parameters(self) -> int:
        return N_INPUTS * self.width + self.width + self.width * N_CLASSES + N_CLASSES

    def activations(self, b: int) -> dict[str, int]:
        return {"bias": b * (self.width + N_CLASSES), "relu": b * self.width, "gram": b * self.width}

    def check(self, label: str, fail) -> None:
        if len(self.spec["hidden"]) != 1 or self.tokens**2 != self.width:
            fail(f"workloads.{label}.hidden", f"{self.spec['hidden']} is not one square width", "use e.g. [256]")


WORKLOADS = {"toy": Toy}
