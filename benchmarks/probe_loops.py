"""The epoch loop every plain probe shares, one per framework (benchmarks/frameworks_bench.py and
benchmarks/vit_probes.py): a permutation per epoch, one optimizer step per batch, the summed loss read
once after the epoch. Each returns ``epoch()``."""

from __future__ import annotations


def pytorch(torch, net, opt, x, y, batch: int):
    steps = len(x) // batch

    def epoch():
        order = torch.randperm(len(x))[: steps * batch].view(steps, batch)
        total = torch.zeros(())
        for idx in order:
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total = total + loss.detach()
        float(total)

    return epoch


def jax(jax, step, params, opt_state, x, y, batch: int):
    """``step(params, opt_state, xb, yb, key) -> (params, opt_state, loss)``, jitted."""
    holder, steps = {"p": params, "s": opt_state, "k": jax.random.PRNGKey(0)}, len(x) // batch

    def epoch():
        holder["k"], sub = jax.random.split(holder["k"])
        order = jax.random.permutation(sub, len(x))[: steps * batch].reshape(steps, batch)
        total = 0.0
        for i in range(steps):
            holder["k"], sub = jax.random.split(holder["k"])
            holder["p"], holder["s"], loss = step(holder["p"], holder["s"], x[order[i]], y[order[i]], sub)
            total = total + loss
        float(total)

    return epoch


def tensorflow(tf, net, opt, x, y, batch: int):
    steps = len(x) // batch

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, net(xb, training=True)))
        opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
        return loss

    def epoch():
        order = tf.reshape(tf.random.shuffle(tf.range(len(x)))[: steps * batch], (steps, batch))
        total = tf.constant(0.0)
        for i in range(steps):
            total += step(tf.gather(x, order[i]), tf.gather(y, order[i]))
        float(total)

    return epoch
