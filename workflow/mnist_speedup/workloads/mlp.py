"""The article's network: TensorLayer's MNIST multilayer perceptron."""

from __future__ import annotations

from mnist_speedup.spec.workloads import N_CLASSES, N_INPUTS, Layer, Product, Workload, dense, dense_products


class Mlp(Workload):
    """TensorLayer's MNIST multilayer perceptron (tutorial_mnist_mlp):
    Input 784 -> Dropout -> Dense ReLU ... -> Dropout -> Dense 10."""

    type = "mlp"
    family, marker = "MLP", "o"

    def __init__(self, spec: dict):
        super().__init__(spec)
        if self.spec["dropout"] is None:  # the original's rates: 0.2 on the input, 0.5 after each hidden layer
            self.spec["dropout"] = [0.2] + [0.5] * len(self.spec["hidden"])

    @property
    def layers(self) -> list[tuple[int, int]]:
        widths = [N_INPUTS, *self.spec["hidden"], N_CLASSES]
        return list(zip(widths[:-1], widths[1:]))

    def words(self) -> str:
        sizes = "-".join(str(w) for w in (N_INPUTS, *self.spec["hidden"], N_CLASSES))
        return f"MLP {sizes}"

    def products(self, batch_size: int) -> list[Product]:
        return dense_products(batch_size, self.layers, first_needs_input_grad=False)

    def network(self) -> list[Layer]:
        out, last = [], len(self.layers) - 1
        for n, ((i, o), rate) in enumerate(zip(self.layers, self.spec["dropout"])):
            if rate > 0:
                out.append(Layer("dropout", rate=rate))
            out.append(dense(i, o, relu=n < last))
        return out

    def n_parameters(self) -> int:
        return sum(i * o + o for i, o in self.layers)

    def activations(self, b: int) -> dict[str, int]:
        hidden = sum(self.spec["hidden"])
        dropped = sum(w for w, r in zip((N_INPUTS, *self.spec["hidden"]), self.spec["dropout"]) if r > 0)
        return {"bias": b * (hidden + N_CLASSES), "relu": b * hidden, "dropout": b * dropped, "pool": 0}

    def check(self, label: str, fail) -> None:
        hidden, dropout = self.spec["hidden"], self.spec["dropout"]
        if not isinstance(dropout, list):
            fail(
                f"workloads.{label}.dropout",
                f"{dropout!r} is one rate, and an MLP takes one per layer",
                f"give a list of rates: the input's, then one after each hidden layer, e.g. {[0.2] + [0.5] * len(hidden)}",
            )
        if len(dropout) != len(hidden) + 1:
            fail(
                f"workloads.{label}.dropout",
                f"has {len(dropout)} rates for {len(hidden)} hidden layers",
                f"give {len(hidden) + 1} rates: one for the input and one after each hidden layer, "
                f"e.g. {[0.2] + [0.5] * len(hidden)}",
            )


WORKLOADS = {"mlp": Mlp}
