# SPDX-License-Identifier: Apache-2.0
"""Run by test_jax_sharding.py in a process of its own (XLA's flags are read once, when JAX starts):
the seed's reader and decoder through sluice.plugin.jax's data_iterator on this process's CPU
devices, sharded over every device of every process. Writes, per step, each addressable shard's
images and labels with the global device index it belongs to.

    jax_shards.py OUT.npz LMDB STEPS [PROCESS_ID NUM_PROCESSES COORDINATOR]"""

import sys

import jax
import numpy as np

if len(sys.argv) > 4:
    jax.distributed.initialize(coordinator_address=sys.argv[6], num_processes=int(sys.argv[5]),
                               process_id=int(sys.argv[4]))

import sluice.fn as fn  # noqa: E402
import sluice.types as types  # noqa: E402
from sluice.plugin.jax import data_iterator  # noqa: E402

out, lmdb, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
mesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))


@data_iterator(output_map=["images", "labels"], reader_name="r", sharding=sharding)
def shards(path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=path, num_shards=num_shards, shard_id=shard_id,
                                      random_shuffle=True, name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return images, labels.gpu()


it = shards(batch_size=8 * jax.device_count(), num_threads=2, seed=5, path=lmdb)
got = {"len": np.array(len(it)), "ndev": np.array(jax.device_count())}
for step, batch in zip(range(steps), it):
    assert batch["images"].shape == (8 * jax.device_count(), 28, 28, 1), batch["images"].shape
    for name in ("images", "labels"):
        for s in batch[name].addressable_shards:
            g = jax.devices().index(s.device)
            got["%s_%d_%d" % (name, step, g)] = np.asarray(s.data)
np.savez(out, **got)
print("ok", jax.process_index(), len(jax.local_devices()), jax.device_count())
