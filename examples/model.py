# SPDX-License-Identifier: Apache-2.0
"""The seed's model, in JAX: an MLP 784-1024-1024-10 with tanh hidden layers and a log-softmax
output, trained with plain SGD (learning rate 0.001) on loss = -mean(sum(logprobs * one_hot));
weights from numpy RandomState(0), w = 0.1*randn(in, out) then b = 0.1*randn(out) per layer.
`update` steps one model (jit; inputs may be sharded over devices), `update_parallel` a replicated
model under pmap, averaging the gradients across devices. Used by examples/jax_multigpu.py."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

learning_rate = 0.001


def init_model(layers=(784, 1024, 1024, 10), scale=0.1, rng=None):
    rng = np.random.RandomState(0) if rng is None else rng
    model = []
    for n_in, n_out in zip(layers[:-1], layers[1:]):
        w = jnp.asarray(scale * rng.randn(n_in, n_out), jnp.float32)
        b = jnp.asarray(scale * rng.randn(n_out), jnp.float32)
        model.append((w, b))
    return model


def predict(model, images):
    x = images
    for w, b in model[:-1]:
        x = jnp.tanh(jnp.dot(x, w) + b)
    w, b = model[-1]
    logits = jnp.dot(x, w) + b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def loss(model, batch):
    preds = predict(model, batch["images"])
    return -jnp.mean(jnp.sum(preds * batch["labels"], axis=1))


def _sgd(model, grads):
    return [(w - learning_rate * dw, b - learning_rate * db)
            for (w, b), (dw, db) in zip(model, grads)]


@jax.jit
def update(model, batch):
    return _sgd(model, jax.grad(loss)(model, batch))


@partial(jax.pmap, axis_name="data")
def update_parallel(model, batch):
    grads = jax.grad(loss)(model, batch)
    grads = jax.tree.map(lambda g: jax.lax.pmean(g, "data"), grads)
    return _sgd(model, grads)


@jax.jit
def _correct(model, images, labels):
    return jnp.sum(jnp.argmax(predict(model, images), axis=1) == labels.ravel())


def accuracy(model, iterator):
    correct = 0
    for batch in iterator:
        correct += _correct(model, batch["images"], batch["labels"])
    return float(correct / iterator.size)
