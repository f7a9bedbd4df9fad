# SPDX-License-Identifier: Apache-2.0
"""A JAX/Flax ResNet-50 training loop on one GPU fed three ways, in one run: by sluice's
data_iterator (sluice.plugin.jax) with DALI's ResNet-50 training pipeline, by synthetic batches
already on the GPU (the loop's ceiling), and by a torch DataLoader with torchvision's transforms
(the usual peer), its batches put on the GPU with jax.device_put. bench/soak_torch.py is the same
loop in PyTorch. The model trains for real: a Flax linen ResNet-50 (written below) in bf16 with
float32 parameters, BatchNorm statistics updated every step, SGD with momentum, in one jitted step,
so the GPU is busy with the model's work while the pipeline decodes.

    python3 bench/soak_jax.py DIR [--feeds sluice,synthetic,dataloader] [--runs 1] [--steps 60]
        [--warmup 10] [--batch 256] [--threads N] [--hw-load X[,Y...]] [--priority P[,Q...]] [--workers 15]
        [--stall 120] [--inflight 2]

DIR holds one folder of JPEGs per class (bench/make_photos writes them). Each run of a feed builds
its iterator (or loader) afresh and trains --warmup steps (the first compiles the step), then
--steps timed steps, timed from the warm-up's last loss ready to the last one's; sluice's iterator
resets itself at each epoch's end (auto_reset), so a run crosses several epochs. Every feed gives
the same arrays -- images (batch, 224, 224, 3) float16, labels (batch, 1) int32, both split by
rows over a "batch" mesh of jax.devices() -- so one compiled step serves all three. At most
--inflight steps are queued on the GPU at once (0: no bound), about what CUDA's launch queue allows
PyTorch's loop. A run that makes no step for --stall seconds (twice that in the warm-up, which
compiles) is a hang: the script prints every thread's stack and exits with status 1
(faulthandler's). One JSON line per run: feed, run, images/s over the timed steps, the seconds the
loop waited for data, the last loss. --threads and --hw-load left out: sluice's defaults. Several loads (--hw-load 0,0.65,1)
are taken in turn by the sluice runs, so the splits alternate within one run of the script."""
import argparse
import collections
import faulthandler
import json
import sys
import time

import numpy as np

# JAX, Flax and the model are imported in main(), after the DataLoader's workers are forked: a
# process running JAX's threads is not safe to fork, and spawned workers (tried first) hung the
# loop before their first batch

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def sluice_batches(args, sharding):
    import sluice.fn as fn
    import sluice.types as types
    from sluice.plugin.jax import data_iterator

    decoder_args = {}
    if args.hw_load is not None:
        decoder_args["hw_decoder_load"] = args.hw_load
    it_args = {"batch_size": args.batch}
    if args.threads:
        it_args["num_threads"] = args.threads
    if args.priority is not None:
        it_args["default_cuda_stream_priority"] = args.priority

    @data_iterator(output_map=["images", "labels"], reader_name="Reader", sharding=sharding,
                   auto_reset=True)
    def rn50_train(num_shards, shard_id):
        jpegs, labels = fn.readers.file(file_root=args.dir, random_shuffle=True, name="Reader",
                                        num_shards=num_shards, shard_id=shard_id)
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               random_aspect_ratio=[0.75, 4.0 / 3.0],
                                               random_area=[0.08, 1.0], num_attempts=100,
                                               **decoder_args)
        images = fn.resize(images, resize_x=224, resize_y=224)
        # HWC, not the PyTorch example's CHW: XLA's convolutions here take NHWC (Flax's Conv is
        # channels-last), so the batch goes into the model as it comes, with no transpose (one
        # more pass over every image) in the step
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="HWC",
                                          crop=(224, 224), mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels.gpu()

    it = rn50_train(**it_args)
    try:
        while True:  # auto_reset: StopIteration at each epoch's end, then the next epoch
            for batch in it:
                yield batch["images"], batch["labels"]
    finally:
        if hasattr(it, "close"):
            it.close()


def synthetic_batches(args, sharding):
    import jax
    import jax.numpy as jnp
    kx, ky = jax.random.split(jax.random.PRNGKey(1))
    x = jax.device_put(jax.random.normal(kx, (args.batch, 224, 224, 3), jnp.float16), sharding)
    y = jax.device_put(jax.random.randint(ky, (args.batch, 1), 0, 1000, jnp.int32), sharding)
    while True:
        yield x, y


def hwc_half(x):
    """A DataLoader worker's last transform: the CHW float32 image as HWC float16, so that the
    collated batch is the NHWC float16 array the step takes."""
    return x.permute(1, 2, 0).half()


def make_dataloader(args):
    """The peer's torch DataLoader: torchvision's RandomResizedCrop, flip and normalisation in
    --workers processes, batches of NHWC float16 images and int64 labels. Its workers are
    forked at once and kept (persistent_workers), before main() imports JAX. No pin_memory:
    jax.device_put copies from any host memory."""
    import torch
    import torchvision
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 4.0 / 3.0)),
                    T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD]),
                    T.Lambda(hwc_half)])
    ds = torchvision.datasets.ImageFolder(args.dir, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                     num_workers=args.workers, drop_last=True,
                                     persistent_workers=args.workers > 0)
    return dl, iter(dl)  # (the first epoch's iterator starts the workers)


def dataloader_batches(args, sharding):
    import jax
    dl, first = args.loader
    epoch = first
    while True:
        for x, y in epoch:
            yield (jax.device_put(x.numpy(), sharding),
                   jax.device_put(y.numpy().astype(np.int32).reshape(-1, 1), sharding))
        epoch = iter(dl)


FEEDS = {"sluice": sluice_batches, "synthetic": synthetic_batches,
         "dataloader": dataloader_batches}


def train(step, state, batches, args, feed, run):
    """--warmup then --steps steps of one feed; prints the run's JSON line; the state after."""
    pending = collections.deque()  # the losses of the steps queued on the GPU
    waited, t0, loss = 0.0, None, None
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            if loss is not None:
                loss.block_until_ready()  # the steps run in order: all the warm-up's are done
            pending.clear()
            t0, waited = time.perf_counter(), 0.0
        w0 = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - w0
        # re-armed every step; the warm-up's budget covers the step's compilation
        faulthandler.dump_traceback_later(args.stall * (2 if i < args.warmup else 1), exit=True)
        state, loss = step(state, x, y)
        pending.append(loss)
        if args.inflight and len(pending) > args.inflight:
            pending.popleft().block_until_ready()
    loss.block_until_ready()
    faulthandler.cancel_dump_traceback_later()
    dt = time.perf_counter() - t0
    print(json.dumps({"feed": feed, "run": run, "hw_load": args.hw_load if feed == "sluice" else None,
                      "priority": args.priority if feed == "sluice" else None,
                      "steps": args.steps, "batch": args.batch,
                      "images_per_s": round(args.steps * args.batch / dt, 1),
                      "waited_s": round(waited, 3), "seconds": round(dt, 3),
                      "loss": round(float(loss), 4)}), flush=True)
    return state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--feeds", default="sluice,synthetic,dataloader")
    ap.add_argument("--runs", type=int, default=1, help="runs of the sluice feed (the peers: one)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=256, help="the global batch")
    ap.add_argument("--threads", type=int, default=0, help="sluice's num_threads (0: its default)")
    ap.add_argument("--hw-load", default=None,
                    help="sluice's hw_decoder_load; a comma list: one per run, in turn")
    ap.add_argument("--priority", default=None,
                    help="sluice's default_cuda_stream_priority (lower is more urgent); a comma "
                         "list: taken in turn after each round of --hw-load's values")
    ap.add_argument("--workers", type=int, default=15, help="the DataLoader's worker processes")
    ap.add_argument("--stall", type=float, default=120, help="seconds without a step = a hang")
    ap.add_argument("--inflight", type=int, default=2,
                    help="steps queued on the GPU at most (0: no bound)")
    args = ap.parse_args()
    args.loader = make_dataloader(args) if "dataloader" in args.feeds.split(",") else None
    import jax
    import jax.numpy as jnp
    import optax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from flax_resnet50 import ResNet50, make_step
    loads = [float(x) for x in args.hw_load.split(",")] if args.hw_load else [None]
    prios = [int(x) for x in args.priority.split(",")] if args.priority else [None]
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    # a hang prints every thread's stack and exits (the stall timer is re-armed each step)
    faulthandler.enable()
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))  # the batch's rows over the devices
    model = ResNet50()
    tx = optax.sgd(0.1, momentum=0.9)
    variables = jax.jit(lambda key, x: model.init(key, x, train=False))(
        jax.random.PRNGKey(0), jnp.zeros((1, 224, 224, 3), jnp.float16))
    state = (variables["params"], variables["batch_stats"], tx.init(variables["params"]))
    state = jax.device_put(state, NamedSharding(mesh, PartitionSpec()))  # replicated
    step = make_step(model, tx)
    for feed in args.feeds.split(","):
        for run in range(args.runs if feed == "sluice" else 1):
            faulthandler.dump_traceback_later(args.stall * 2, exit=True)  # start-up included
            args.hw_load = loads[run % len(loads)]
            args.priority = prios[run // len(loads) % len(prios)]
            batches = FEEDS[feed](args, sharding)
            state = train(step, state, batches, args, feed, run)
            batches.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
