# SPDX-License-Identifier: Apache-2.0
"""`python3 -m sluice ARGS` and the `sluice` console script of the wheel: run the `sluice` tool
built with this package (its _lib/ folder) with ARGS. The tool is a C program; this only finds it
and replaces the Python process with it, so its exit status and signals are the tool's own. The
`wds2idx` console script (DALI's command of that name) is `sluice wds2idx ARGS`, and
`tfrecord2idx` (DALI's too) is `sluice index ARGS`."""

import os
import sys


def tool_path():
    """The `sluice` executable that belongs to this package: SLUICE_TOOL if set, else the one in
    the package's _lib/ (a wheel, an editable install), else a source checkout's build/sluice."""
    env = os.environ.get("SLUICE_TOOL")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "_lib", "sluice")]
    root = os.path.dirname(os.path.dirname(here))
    if os.path.exists(os.path.join(root, "CMakeLists.txt")):  # python/sluice of a checkout
        candidates.append(os.path.join(root, "build", "sluice"))
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise FileNotFoundError("the sluice tool is not built (looked at %s); install the package "
                            "with pip, or set SLUICE_TOOL" % ", ".join(candidates))


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        path = tool_path()
    except FileNotFoundError as e:
        print("sluice: %s" % e, file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["sluice"] + args)
    return 127  # not reached: execv returns only by raising


def wds2idx(argv=None):
    """The `wds2idx` console script: `sluice wds2idx ARCHIVE [INDEX]`, DALI's wds2idx command line
    (the index of a WebDataset tar file, for readers.webdataset's index_paths)."""
    return main(["wds2idx"] + (sys.argv[1:] if argv is None else list(argv)))


def tfrecord2idx(argv=None):
    """The `tfrecord2idx` console script: `sluice index TFRECORD [INDEX]`, DALI's tfrecord2idx
    command line (the index of a TFRecord file, for readers.tfrecord's index_path)."""
    return main(["index"] + (sys.argv[1:] if argv is None else list(argv)))


if __name__ == "__main__":
    sys.exit(main())
