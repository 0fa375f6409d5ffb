"""PyTorch's side of the precisions (spec/precisions.py says what they mean), and the calibration's products.

Mixed precision as PyTorch defines it: ``torch.autocast`` runs each product
(``Linear``, ``Conv2d``) in bfloat16 or float16 with the float32 weights cast on
the fly, the logits go back to float32 for the loss, and float16 scales the loss
with ``torch.amp.GradScaler`` (start 2**15, halve and skip on an overflow,
double after 2000 good steps: the same schedule as the other frameworks).
"""

from __future__ import annotations

import contextlib

from mnist_speedup.spec import precisions


def autocast(torch, target, precision: str, cache: bool = True):
    """The context the forward pass runs in: autocast to the precision's dtype, or nothing for float32 and TF32.
    ``cache``: autocast's cache of cast weights, which a CUDA graph's capture must go without (PyTorch's
    CUDA-graph notes: ``cache_enabled=False``)."""
    if not precisions.of(precision).casts:
        return contextlib.nullcontext()
    dtype = getattr(torch, precisions.compute_dtype(precision))
    return torch.autocast(device_type=target.type, dtype=dtype, cache_enabled=cache)


def scaler(torch, target, precision: str):
    """float16's dynamic loss scaling (None: the precision needs none)."""
    if not precisions.scales_loss(precision):
        return None
    return torch.amp.GradScaler(
        target.type, init_scale=precisions.INITIAL_SCALE, growth_interval=precisions.GROWTH_STEPS
    )


def operands(torch, shapes, target, dtype: str):
    """Random operands made once on the device, in ``dtype``."""
    generator = torch.Generator(device=target).manual_seed(0)
    return [torch.randn(shape, generator=generator, device=target).to(getattr(torch, dtype)) for shape in shapes]


def product(torch, p, target, dtype: str):
    """A thunk that runs product ``p`` (spec/workloads.py's Product) once on operands made once."""
    kind = p.of_kind
    if kind.einsum is not None:  # any sum: the framework needs no code for a new kind
        ops = operands(torch, kind.operand_shapes(p.shape), target, dtype)
        if kind.matmul_form:
            return lambda: ops[0] @ ops[1]
        return lambda: torch.einsum(kind.einsum, *ops)
    batch, side, cin, cout, kernel = p.shape
    pad = kernel // 2  # SAME for an odd kernel (an even one gains a row and a column: the same products, nearly)
    out_side = side + 2 * pad - kernel + 1
    x, w, dy = operands(
        torch, [(batch, cin, side, side), (cout, cin, kernel, kernel), (batch, cout, out_side, out_side)], target, dtype
    )
    if p.kind == "conv":
        return lambda: torch.nn.functional.conv2d(x, w, padding=pad)
    mask = [p.kind == "conv_input", p.kind == "conv_filter", False]  # which gradients: input, weight, bias

    def backward():
        return torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask)

    return backward
