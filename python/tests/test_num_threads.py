# SPDX-License-Identifier: Apache-2.0
"""num_threads left out (or -1, or None) is chosen from the machine by the library's rule: the CPUs
this process may run on (its affinity mask, or a lower cgroup quota) shared among the pipelines
that run at once, less one, 1..64; pipe.num_threads says the count, and the built pipeline runs
with it. An explicit count stays as given; bad ones are refused as before. An iterator over
pipelines given no count shares the CPUs among them; data_iterator among its local devices."""

import os
import subprocess
import sys

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from conftest import HERE, LMDB, ROOT
from sluice import Pipeline, _c, errors, pipeline_def
from sluice.pipeline import _gpu_count, default_num_threads
from sluice.plugin.numpy import DALIGenericIterator


def rule(pipelines):
    """The rule, written out: the CPUs over the pipelines, less one, within 1..64."""
    return max(1, min(64, _c.lib.sl_cpu_count() // pipelines - 1))


@pipeline_def(batch_size=4, device_id=None, seed=3)
def labels_of(shard_id=0, num_shards=1):
    _, labels = fn.readers.caffe2(path=LMDB, shard_id=shard_id, num_shards=num_shards, name="r")
    return labels


def built_threads(p):
    p.build()
    return _c.lib.sl_pipeline_num_threads(p._p)


def test_cpu_count_is_the_affinity_mask_or_less():
    cpus = _c.lib.sl_cpu_count()
    assert 1 <= cpus <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("given", ["left out", None, -1, np.int64(-1)])
def test_chosen_from_the_machine(given):
    kw = {} if given == "left out" else {"num_threads": given}
    p = labels_of(**kw)
    # a CPU pipeline has the CPUs to itself: all but one (1 on a 2-core machine)
    assert p.num_threads == rule(1) == default_num_threads(1)
    assert p.num_threads == max(1, min(64, _c.lib.sl_cpu_count() - 1))
    assert built_threads(p) == p.num_threads
    assert len(p.run()[0]) == 4
    plain = Pipeline(batch_size=2, device_id=None)
    assert plain.num_threads == rule(1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, np.int32(5)])
def test_explicit_count_is_kept(n):
    p = labels_of(num_threads=n)
    assert p.num_threads == n
    assert built_threads(p) == n
    assert len(p.run()[0]) == 4

    @pipeline_def(batch_size=4, num_threads=n, device_id=None)
    def decorated():
        _, labels = fn.readers.caffe2(path=LMDB)
        return labels

    assert decorated().num_threads == n
    # a call's num_threads=None overrides the decorator's count: chosen again
    assert decorated(num_threads=None).num_threads == rule(1)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "4", True, 2**31])
def test_bad_counts_refused_as_before(bad):
    with pytest.raises(errors.InvalidArgumentError, match=r"Pipeline: num_threads="):
        Pipeline(batch_size=4, num_threads=bad, device_id=None)


def test_follows_the_affinity_mask():
    cpus = sorted(os.sched_getaffinity(0))
    # in a process of its own, narrowed to one CPU, then to two where there are two
    code = (
        "import os, sys\n"
        "sys.path.insert(0, %r)\n"
        "from sluice import Pipeline, _c\n"
        "for mask in %r:\n"
        "    os.sched_setaffinity(0, mask)\n"
        "    p = Pipeline(batch_size=2, device_id=None)\n"
        "    print(len(mask), _c.lib.sl_cpu_count(), p.num_threads)\n"
        % (os.path.join(ROOT, "python"), [set(cpus[:1])] + ([set(cpus[:2])] if len(cpus) > 1
                                                              else [])))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ), timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [tuple(map(int, line.split())) for line in r.stdout.split("\n") if line]
    assert lines[0] == (1, 1, 1)
    if len(lines) > 1:  # two CPUs (no lower quota here): one thread, one CPU left over
        assert lines[1][0] == 2 and lines[1][1] in (1, 2) and lines[1][2] == 1


def test_iterator_shares_the_cpus_among_its_pipelines():
    pipes = [labels_of(d, 2) for d in range(2)]
    assert all(p.num_threads == rule(1) for p in pipes)
    it = DALIGenericIterator(pipes, ["y"], reader_name="r")
    # two pipelines run at once: each gets its share, and says so
    assert it._it.num_threads == rule(2) == default_num_threads(2)
    assert all(p.num_threads == rule(2) for p in pipes)
    assert next(it)["y"].shape[0] == 8
    # explicit counts are the iterator's as given
    it = DALIGenericIterator([labels_of(d, 2, num_threads=3) for d in range(2)], ["y"],
                             reader_name="r")
    assert it._it.num_threads == 3
    # one given, one not: they differ, and are refused as any two different counts
    mixed = [labels_of(0, 2, num_threads=rule(1) + 1), labels_of(1, 2)]
    with pytest.raises(errors.InvalidArgumentError, match="num_threads differ"):
        DALIGenericIterator(mixed, ["y"], reader_name="r")


@pytest.mark.gpu
def test_gpu_pipeline_shares_with_every_visible_gpu():
    if _gpu_count() == 0:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            pytest.fail("no GPU")
        pytest.skip("no GPU")
    p = Pipeline(batch_size=2, device_id=0)
    assert p.num_threads == rule(_gpu_count())


def test_jax_data_iterator_shares_among_local_devices():
    try:
        import jax  # noqa: F401
    except ImportError:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise
        pytest.skip("JAX is not installed")
    code = (
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "import jax, numpy as np\n"
        "import sluice.fn as fn\n"
        "from sluice.pipeline import default_num_threads\n"
        "from sluice.plugin.jax import data_iterator\n"
        "mesh = jax.sharding.Mesh(np.array(jax.devices()), ('batch',))\n"
        "sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('batch'))\n"
        "@data_iterator(output_map=['y'], reader_name='r', sharding=sharding)\n"
        "def it(num_shards, shard_id):\n"
        "    _, labels = fn.readers.caffe2(path=%r, num_shards=num_shards, shard_id=shard_id,\n"
        "                                  name='r')\n"
        "    return labels.gpu()\n"
        "for given in (None, 2):\n"
        "    i = it(batch_size=12, num_threads=given)\n"
        "    next(i)\n"
        "    print(i._it.num_threads, default_num_threads(3))\n"
        % (os.path.join(ROOT, "python"), LMDB))
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=3")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300, cwd=HERE)
    assert r.returncode == 0, r.stdout + r.stderr
    chosen, want = map(int, r.stdout.split("\n")[0].split())
    assert chosen == want  # three local devices, three pipelines at once
    assert r.stdout.split("\n")[1].split()[0] == "2"


def test_light_ops_give_the_same_batches_and_errors_at_any_thread_count():
    """An op whose whole batch is lighter than waking the pool runs on the stage's own thread
    (after a batch on the pool, and back on the pool once in a while to compare): the batches,
    random ones included, and a failing sample's error are the same for any thread count."""
    def src(info):
        n = 5 if (info.iteration == 150 and info.idx_in_batch == 3) else 4
        return np.full((n,), info.idx_in_epoch % 97, np.float32)

    def run(threads):
        @pipeline_def(batch_size=8, num_threads=threads, device_id=None, seed=7)
        def pipe():
            x = fn.external_source(source=src, batch=False)
            y = x * 1.5 + fn.random.uniform(range=[0, 1], shape=[4])
            return fn.reshape(y, shape=[2, 2]), fn.random.coin_flip()

        p = pipe()
        outs = []
        for _ in range(150):
            a, b = p.run()
            outs.append((a.as_array().copy(), b.as_array().copy()))
        with pytest.raises(errors.Error) as e:
            p.run()
        p.close()
        return outs, str(e.value)

    one, err1 = run(1)
    for threads in (2, 5):
        other, err = run(threads)
        assert err == err1 and "sample 3" in err, (err, err1)
        for (a, b), (c, d) in zip(one, other):
            np.testing.assert_array_equal(a, c)
            np.testing.assert_array_equal(b, d)
