# SPDX-License-Identifier: Apache-2.0
"""The Flax ResNet-50 and its jitted training step that bench/soak_jax.py trains: linen modules on
NHWC images, bf16 compute with float32 parameters, BatchNorm statistics updated every step, SGD
with momentum through optax. A module of its own so that the soak script's top level imports no
JAX: the DataLoader's spawned workers import that script and need none of it."""
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class Bottleneck(nn.Module):
    """1x1, 3x3 (strided, as torchvision's ResNet-50), 1x1 x4; a projection where shapes differ."""
    width: int
    strides: int = 1

    @nn.compact
    def __call__(self, x, train):
        conv = functools.partial(nn.Conv, use_bias=False, dtype=jnp.bfloat16)
        norm = functools.partial(nn.BatchNorm, use_running_average=not train, momentum=0.9,
                                 epsilon=1e-5, dtype=jnp.bfloat16)
        y = nn.relu(norm()(conv(self.width, (1, 1))(x)))
        y = nn.relu(norm()(conv(self.width, (3, 3), self.strides)(y)))
        # the last norm's scale starts at zero: each block starts as the identity
        y = norm(scale_init=nn.initializers.zeros)(conv(4 * self.width, (1, 1))(y))
        if x.shape != y.shape:
            x = norm()(conv(4 * self.width, (1, 1), self.strides)(x))
        return nn.relu(x + y)


class ResNet50(nn.Module):
    """ResNet-50 on NHWC images: bf16 compute, float32 parameters (Flax's default param_dtype)."""
    num_classes: int = 1000

    @nn.compact
    def __call__(self, x, train):
        x = nn.Conv(64, (7, 7), (2, 2), padding=[(3, 3), (3, 3)], use_bias=False,
                    dtype=jnp.bfloat16)(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5,
                         dtype=jnp.bfloat16)(x)
        x = nn.max_pool(nn.relu(x), (3, 3), strides=(2, 2), padding="SAME")
        for stage, blocks in enumerate((3, 4, 6, 3)):
            for b in range(blocks):
                x = Bottleneck(width=64 * 2 ** stage,
                               strides=2 if stage > 0 and b == 0 else 1)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes, dtype=jnp.bfloat16)(x)


def make_step(model, tx):
    """The jitted training step: (params, batch_stats, opt_state), images, labels -> the next
    state, the loss. No in_shardings given: jit takes the arguments' own (the batch split by rows,
    the state replicated), so the batch stays where the feed put it. The state is donated."""
    def loss_fn(params, batch_stats, x, y):
        logits, changed = model.apply({"params": params, "batch_stats": batch_stats}, x,
                                      train=True, mutable=["batch_stats"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), y)
        return loss.mean(), changed["batch_stats"]

    def step(state, x, y):
        params, batch_stats, opt_state = state
        y = y.reshape(-1) % 1000  # the reader's labels are (batch, 1)
        (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, batch_stats, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), batch_stats, opt_state), loss

    return jax.jit(step, donate_argnums=0)
