"""The ``captured`` mode's step: forward, backward and Adam's update as one graph.

On a GPU, a CUDA graph (``torch.cuda.graph``) captured from the step at the epochs' shapes, with Adam's
``capturable`` state on the device, replayed once per batch from static input buffers: one launch per step
instead of some forty from Python. On a CPU, where there are no CUDA graphs, the same whole step compiled by
torch.compile; its graphs and graph breaks are counted (``torch._dynamo.explain``) and recorded.
"""

from __future__ import annotations

#: steps run on a side stream before the capture (PyTorch's documented warm-up for whole-network capture)
WARM_STEPS = 3


class CudaGraphStep:
    """One step as a CUDA graph: ``step(x, y)`` copies the batch into the static inputs and replays it;
    the loss it returns is the graph's static output (read before the next replay, on the same stream)."""

    graphs, breaks = 1, 0
    #: the steps it runs to build its graph (its warm-up on a side stream)
    steps = WARM_STEPS

    def __init__(self, torch, update, zero_grad, xb, yb):
        self.static_x, self.static_y = xb.clone(), yb.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARM_STEPS):
                zero_grad()
                update(self.static_x, self.static_y)
        torch.cuda.current_stream().wait_stream(side)
        zero_grad()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = update(self.static_x, self.static_y)

    def __call__(self, xb, yb):
        self.static_x.copy_(xb)
        self.static_y.copy_(yb)
        self.graph.replay()
        return self.static_loss


class CompiledStep:
    """One step (zeroing the gradients, forward, backward, Adam) through torch.compile, on a CPU."""

    #: the steps it runs to build its graph (the explanation's and the compilation's)
    steps = 2

    def __init__(self, torch, update, zero_grad, xb, yb):
        def whole(x, y):
            zero_grad()
            return update(x, y)

        explained = torch._dynamo.explain(whole)(xb, yb)  # runs one step: the caller restores the weights
        self.graphs, self.breaks = int(explained.graph_count), int(explained.graph_break_count)
        self.step = torch.compile(whole, dynamic=False)
        self.step(xb, yb)  # compiled here, outside the clock

    def __call__(self, xb, yb):
        return self.step(xb, yb)


def captured_step(torch, target, update, zero_grad, xb, yb):
    """The captured step for ``target``, built (and compiled or captured) from one batch."""
    kind = CudaGraphStep if target.type == "cuda" else CompiledStep
    return kind(torch, update, zero_grad, xb, yb)
