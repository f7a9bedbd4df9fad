# SPDX-License-Identifier: Apache-2.0
# The seed's program -- "Training with multiple GPUs" of DALI's JAX tutorials -- on sluice. What
# changed from the original, and nothing else:
#  - the imports: sluice.plugin.jax, sluice.fn and sluice.types in place of nvidia.dali's;
#  - JAX 0.11 has no PositionalSharding: the same (devices, 1) mesh as a NamedSharding whose first
#    axis splits the batch's rows, which is what PositionalSharding(mesh) did;
#  - JAX 0.11 has no jax.tree_map: jax.tree.map.
# Run: DALI_EXTRA_PATH=DIR python3 examples/jax_multigpu.py, where DIR/db/MNIST/training and
# DIR/db/MNIST/testing are Caffe2 LMDBs (make data writes them as data/training and data/testing).
# model.py (beside this file) is the seed's model.
import jax
from jax.sharding import NamedSharding, PartitionSpec, Mesh
from jax.experimental import mesh_utils


mesh = mesh_utils.create_device_mesh((jax.device_count(), 1))
sharding = NamedSharding(Mesh(mesh, ("batch", "model")), PartitionSpec("batch"))

print(sharding)

from sluice.plugin.jax import data_iterator
import sluice.fn as fn
import sluice.types as types


image_size = 28
num_classes = 10


@data_iterator(
    output_map=["images", "labels"],
    reader_name="mnist_caffe2_reader",
    sharding=sharding,
)
def mnist_training_iterator(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(
        path=data_path,
        random_shuffle=True,
        name="mnist_caffe2_reader",
        num_shards=num_shards,
        shard_id=shard_id,
    )
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, std=[255.0], output_layout="CHW"
    )
    images = fn.reshape(images, shape=[image_size * image_size])

    labels = labels.gpu()
    labels = fn.one_hot(labels, num_classes=num_classes)

    return images, labels


@data_iterator(
    output_map=["images", "labels"], reader_name="mnist_caffe2_reader"
)
def mnist_validation_iterator(data_path):
    jpegs, labels = fn.readers.caffe2(
        path=data_path, random_shuffle=False, name="mnist_caffe2_reader"
    )
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, std=[255.0], output_layout="CHW"
    )
    images = fn.reshape(images, shape=[image_size * image_size])

    labels = labels.gpu()

    return images, labels


import os

training_data_path = os.path.join(
    os.environ["DALI_EXTRA_PATH"], "db/MNIST/training/"
)
validation_data_path = os.path.join(
    os.environ["DALI_EXTRA_PATH"], "db/MNIST/testing/"
)

batch_size = 200
num_epochs = 5


training_iterator = mnist_training_iterator(
    batch_size=batch_size, data_path=training_data_path
)
print(f"Number of batches in training iterator = {len(training_iterator)}")

validation_iterator = mnist_validation_iterator(
    batch_size=batch_size, data_path=validation_data_path
)
print(f"Number of batches in validation iterator = {len(validation_iterator)}")

from model import init_model, accuracy
from model import update

model = init_model()

for epoch in range(num_epochs):
    for it, batch in enumerate(training_iterator):
        model = update(model, batch)

    model_on_one_device = jax.tree.map(
        lambda x: jax.device_put(x, jax.devices()[0]), model
    )
    test_acc = accuracy(model_on_one_device, validation_iterator)

    print(f"Epoch {epoch} sec")
    print(f"Test set accuracy {test_acc}")


@data_iterator(
    output_map=["images", "labels"],
    reader_name="mnist_caffe2_reader",
    devices=jax.devices(),
)
def mnist_training_iterator(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(
        path=data_path,
        random_shuffle=True,
        name="mnist_caffe2_reader",
        num_shards=num_shards,
        shard_id=shard_id,
    )
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, std=[255.0], output_layout="CHW"
    )
    images = fn.reshape(images, shape=[image_size * image_size])

    labels = labels.gpu()
    labels = fn.one_hot(labels, num_classes=num_classes)

    return images, labels


print("Creating training iterator")
training_iterator = mnist_training_iterator(
    batch_size=batch_size, data_path=training_data_path
)

print(f"Number of batches in training iterator = {len(training_iterator)}")

print(f"Number of batches in validation iterator = {len(validation_iterator)}")

import jax.numpy as jnp
from model import init_model, accuracy


model = init_model()
model = jax.tree.map(lambda x: jnp.array([x] * jax.device_count()), model)

from model import update_parallel


for epoch in range(num_epochs):
    for it, batch in enumerate(training_iterator):
        model = update_parallel(model, batch)

    test_acc = accuracy(
        jax.tree.map(lambda x: x[0], model), validation_iterator
    )

    print(f"Epoch {epoch} sec")
    print(f"Test set accuracy {test_acc}")
