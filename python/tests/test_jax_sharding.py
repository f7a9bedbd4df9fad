# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.jax's data_iterator with a sharding over several JAX devices: every device's part
of the global batch is what a pipeline of that shard (shard_id = the device's place in the mesh,
process-major) gives on its own. On one process with four CPU devices, and on two processes of two
CPU devices each under jax.distributed (the multi-process layout, which needs no GPU). Needs JAX;
skipped where it is not installed."""

import os
import socket
import subprocess
import sys

import numpy as np

import sluice.fn as fn
import sluice.types as types
from conftest import HERE, LMDB, ROOT, need_jax
from sluice import pipeline_def

STEPS = 3
PER = 8


@pipeline_def(batch_size=PER, num_threads=2, device_id=None, seed=5)
def one_shard(path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=path, num_shards=num_shards, shard_id=shard_id,
                                      random_shuffle=True, name="r")
    return fn.decoders.image(jpegs, output_type=types.GRAY), labels


def run_shards(out, local_devices, *dist):
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=%d" % local_devices,
               PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.Popen([sys.executable, os.path.join(HERE, "jax_shards.py"), str(out), LMDB,
                             str(STEPS)] + [str(a) for a in dist], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def check(parts, ndev):
    for g in range(ndev):
        pipe = one_shard(LMDB, ndev, g)
        for step in range(STEPS):
            images, labels = pipe.run()
            assert parts["images_%d_%d" % (step, g)].tobytes() == \
                np.asarray(images.as_array()).tobytes(), (step, g)
            assert parts["labels_%d_%d" % (step, g)].tobytes() == \
                np.asarray(labels.as_array()).tobytes(), (step, g)


def test_four_cpu_devices(tmp_path):
    need_jax()
    p = run_shards(tmp_path / "s.npz", 4)
    log = p.communicate(timeout=300)[0]
    assert p.returncode == 0, log
    parts = np.load(tmp_path / "s.npz")
    assert int(parts["ndev"]) == 4
    assert int(parts["len"]) == 256 // (4 * PER)
    check(parts, 4)


def test_two_processes(tmp_path):
    need_jax()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [run_shards(tmp_path / ("p%d.npz" % i), 2, i, 2, "127.0.0.1:%d" % port)
             for i in range(2)]
    logs = [p.communicate(timeout=300)[0] for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log
    parts = {}
    for i in range(2):
        got = dict(np.load(tmp_path / ("p%d.npz" % i)))
        assert int(got["ndev"]) == 4
        assert int(got["len"]) == 256 // (4 * PER)
        # each process holds exactly its own two devices' parts: global 2i and 2i + 1
        held = sorted({int(k.rsplit("_", 1)[1]) for k in got if k.startswith("images_")})
        assert held == [2 * i, 2 * i + 1], held
        parts.update(got)
    check(parts, 4)
