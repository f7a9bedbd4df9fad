# SPDX-License-Identifier: Apache-2.0
"""A PyTorch ResNet-50 training loop on one GPU fed three ways, in one run: by sluice with DALI's
ResNet-50 training pipeline (as DALI's PyTorch ImageNet example writes it), by synthetic batches
already on the GPU (the loop's ceiling), and by a torch DataLoader with torchvision's transforms
(the usual peer). The model trains for real: torchvision's ResNet-50, bf16 autocast, channels_last,
SGD with momentum, so the GPU is busy with the model's work while the pipeline decodes.

    python3 bench/soak_torch.py DIR [--feeds sluice,synthetic,dataloader] [--runs 1] [--steps 60]
        [--warmup 10] [--batch 256] [--threads N] [--hw-load X[,Y...]] [--priority P[,Q...]]
        [--decoder-arg NAME=VALUE ...] [--workers 15] [--stall 120]

DIR holds one folder of JPEGs per class (bench/make_photos writes them). sluice's feed runs --runs
times, the peers once. Each run of a feed builds its pipeline (or loader) afresh and trains
--warmup steps, then --steps timed steps; sluice's iterator resets itself at each epoch's end
(auto_reset), so a run crosses several epochs. A run that makes no step for --stall seconds is a
hang: the script prints every thread's stack and exits with status 1 (faulthandler's). One JSON
line per run: feed, run, images/s over the timed steps, the seconds the loop waited for data, the
last loss. --threads and --hw-load left out: sluice's defaults. Several loads (--hw-load 0,0.65,1)
are taken in turn by the sluice runs, so the splits alternate within one run of the script."""
import argparse
import ast
import faulthandler
import json
import sys
import time

import torch
import torchvision

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def sluice_batches(args):
    import sluice.fn as fn
    import sluice.types as types
    from sluice import pipeline_def
    from sluice.plugin.pytorch import DALIClassificationIterator

    decoder_args = {}
    if args.hw_load is not None:
        decoder_args["hw_decoder_load"] = args.hw_load
    for kv in args.decoder_arg:
        k, v = kv.split("=", 1)
        decoder_args[k] = ast.literal_eval(v)
    pipe_args = {"batch_size": args.batch, "device_id": 0}
    if args.threads:
        pipe_args["num_threads"] = args.threads
    if args.priority is not None:
        pipe_args["default_cuda_stream_priority"] = args.priority

    @pipeline_def(**pipe_args)
    def rn50_train():
        jpegs, labels = fn.readers.file(file_root=args.dir, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               random_aspect_ratio=[0.75, 4.0 / 3.0],
                                               random_area=[0.08, 1.0], num_attempts=100,
                                               **decoder_args)
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                          crop=(224, 224), mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels.gpu()

    pipe = rn50_train()
    pipe.build()
    it = DALIClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
    try:
        while True:
            for batch in it:
                yield batch[0]["data"], batch[0]["label"].reshape(-1).long()
    finally:
        it.close()


def synthetic_batches(args):
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=torch.float16)
    y = torch.randint(0, 1000, (args.batch,), device="cuda")
    while True:
        yield x, y


def dataloader_batches(args):
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 4.0 / 3.0)),
                    T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])])
    ds = torchvision.datasets.ImageFolder(args.dir, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                     num_workers=args.workers, pin_memory=True, drop_last=True,
                                     persistent_workers=True)
    while True:
        for x, y in dl:
            yield x.cuda(non_blocking=True).half(), y.cuda(non_blocking=True)


FEEDS = {"sluice": sluice_batches, "synthetic": synthetic_batches,
         "dataloader": dataloader_batches}


def train(model, opt, batches, args, feed, run):
    loss_fn = torch.nn.CrossEntropyLoss()
    waited = 0.0
    t0 = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            t0, waited = time.perf_counter(), 0.0
        w0 = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - w0
        faulthandler.dump_traceback_later(args.stall, exit=True)  # re-armed every step
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y % 1000)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    faulthandler.cancel_dump_traceback_later()
    dt = time.perf_counter() - t0
    print(json.dumps({"feed": feed, "run": run, "hw_load": args.hw_load if feed == "sluice" else None,
                      "priority": args.priority if feed == "sluice" else None,
                      "steps": args.steps, "batch": args.batch,
                      "images_per_s": round(args.steps * args.batch / dt, 1),
                      "waited_s": round(waited, 3), "seconds": round(dt, 3),
                      "loss": round(loss.item(), 4)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--feeds", default="sluice,synthetic,dataloader")
    ap.add_argument("--runs", type=int, default=1, help="runs of the sluice feed (the peers: one)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=0, help="sluice's num_threads (0: its default)")
    ap.add_argument("--hw-load", default=None,
                    help="sluice's hw_decoder_load; a comma list: one per run, in turn")
    ap.add_argument("--priority", default=None,
                    help="sluice's default_cuda_stream_priority (lower is more urgent); a comma "
                         "list: taken in turn after each round of --hw-load's values")
    ap.add_argument("--decoder-arg", action="append", default=[], metavar="NAME=VALUE",
                    help="another argument of the decoder (a Python literal)")
    ap.add_argument("--workers", type=int, default=15, help="the DataLoader's worker processes")
    ap.add_argument("--stall", type=float, default=120, help="seconds without a step = a hang")
    args = ap.parse_args()
    loads = [float(x) for x in args.hw_load.split(",")] if args.hw_load else [None]
    prios = [int(x) for x in args.priority.split(",")] if args.priority else [None]
    # a hang prints every thread's stack and exits (the stall timer is re-armed each step)
    faulthandler.enable()
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for feed in args.feeds.split(","):
        for run in range(args.runs if feed == "sluice" else 1):
            faulthandler.dump_traceback_later(args.stall * 2, exit=True)  # start-up included
            args.hw_load = loads[run % len(loads)]
            args.priority = prios[run // len(loads) % len(prios)]
            batches = FEEDS[feed](args)
            train(model, opt, batches, args, feed, run)
            batches.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
