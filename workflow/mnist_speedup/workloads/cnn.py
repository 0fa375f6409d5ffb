"""A LeNet-style convolutional network."""

from __future__ import annotations

from mnist_speedup.spec.workloads import (
    CONV_STDDEV,
    IMAGE_SIDE,
    N_CLASSES,
    Layer,
    Product,
    Workload,
    dense,
    dense_products,
)


class Cnn(Workload):
    """A LeNet-style network: conv kxk (SAME, ReLU) then max-pool per entry
    of ``filters``, flatten, dense ReLU, dropout, dense 10."""

    type = "cnn"
    family, marker = "CNN", "s"
    input_shape = (IMAGE_SIDE, IMAGE_SIDE, 1)

    def sides(self) -> list[int]:
        """The image side entering each conv layer, then after the last pool."""
        sides = [IMAGE_SIDE]
        for _ in self.spec["filters"]:
            sides.append(sides[-1] // self.spec["pool"])  # VALID pooling drops a remainder
        return sides

    @property
    def dense_layers(self) -> list[tuple[int, int]]:
        flat = self.sides()[-1] ** 2 * self.spec["filters"][-1]
        return [(flat, self.spec["dense"]), (self.spec["dense"], N_CLASSES)]

    def _convs(self) -> list[tuple[int, int, int]]:
        """(side, in channels, out channels) of each conv layer."""
        chans = [1, *self.spec["filters"]]
        return [(s, chans[i], chans[i + 1]) for i, s in enumerate(self.sides()[:-1])]

    def words(self) -> str:
        f, k = self.spec["filters"], self.spec["kernel"]
        convs = "-".join(f"conv{k}x{k}x{c}" for c in f)
        return f"CNN {convs}-dense{self.spec['dense']}-10"

    def products(self, b: int) -> list[Product]:
        k = self.spec["kernel"]
        out = []
        for i, (side, cin, cout) in enumerate(self._convs()):
            shape = (b, side, cin, cout, k)
            out += [Product("conv", shape), Product("conv_filter", shape)]
            if i > 0:
                out.append(Product("conv_input", shape))
        return out + dense_products(b, self.dense_layers, first_needs_input_grad=True)

    def network(self) -> list[Layer]:
        k, p = self.spec["kernel"], self.spec["pool"]
        out = []
        for _, cin, cout in self._convs():
            out += [
                Layer("conv", units=cout, inputs=cin, kernel=k, relu=True, stddev=CONV_STDDEV),
                Layer("max_pool", pool=p),
            ]
        (flat, hidden), (_, classes) = self.dense_layers
        out += [Layer("flatten"), dense(flat, hidden, relu=True)]
        if self.spec["dropout"] > 0:
            out.append(Layer("dropout", rate=self.spec["dropout"]))
        return out + [dense(hidden, classes, relu=False)]

    def n_parameters(self) -> int:
        k = self.spec["kernel"]
        conv = sum(k * k * cin * cout + cout for _, cin, cout in self._convs())
        return conv + sum(i * o + o for i, o in self.dense_layers)

    def activations(self, b: int) -> dict[str, int]:
        conv_out = sum(side * side * cout for side, _, cout in self._convs())
        dense = self.spec["dense"]
        pool = sum(side * side * cout for side, (_, _, cout) in zip(self.sides()[1:], self._convs()))
        return {
            "bias": b * (conv_out + dense + N_CLASSES),
            "relu": b * (conv_out + dense),
            "dropout": b * dense if self.spec["dropout"] > 0 else 0,
            "pool": b * pool,
        }

    def check(self, label: str, fail) -> None:
        if isinstance(self.spec["dropout"], list):
            fail(
                f"workloads.{label}.dropout",
                f"{self.spec['dropout']!r} is a list, and a CNN takes one rate (before its last layer)",
                "give one rate, e.g. dropout: 0.5",
            )
        if self.spec["kernel"] > IMAGE_SIDE:
            fail(
                f"workloads.{label}.kernel",
                f"{self.spec['kernel']} is larger than the {IMAGE_SIDE}-pixel image",
                "use a kernel of at most 28, e.g. 5",
            )
        sides = self.sides()
        if sides[-1] < 1:
            fail(
                f"workloads.{label}.filters",
                f"{len(self.spec['filters'])} conv layers, each pooled by {self.spec['pool']}, leave no spatial "
                f"size (28 -> {' -> '.join(str(s) for s in sides[1:])})",
                "use fewer conv layers or a smaller pool, e.g. filters: [32, 64] with pool: 2",
            )


WORKLOADS = {"cnn": Cnn}
