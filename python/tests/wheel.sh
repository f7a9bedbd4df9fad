#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# python/tests/wheel.sh SOURCE_DIR PYTHON FIXTURES: the Python package as a user installs it. Builds
# a wheel (pip wheel, offline, no build isolation) from a clean copy of SOURCE_DIR (the files git
# tracks and the new ones it does not ignore), installs it into a fresh virtual environment outside
# the tree, and there: imports sluice (the package and its library from the environment, never from
# the tree), runs a pipeline to NumPy batches and through the PyTorch iterator, runs the `sluice`
# console script and `python -m sluice`; then uninstalls it and checks that nothing is left.
set -euo pipefail
src=$(cd "${1:?usage: wheel.sh SOURCE_DIR PYTHON FIXTURES}" && pwd)
py=${2:?usage: wheel.sh SOURCE_DIR PYTHON FIXTURES}
fixtures=${3:?usage: wheel.sh SOURCE_DIR PYTHON FIXTURES}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "wheel: $*" >&2; exit 1; }

mkdir "$work/src"
if git -C "$src" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
        tar --null -T - --ignore-failed-read -cf - 2> /dev/null) | tar -C "$work/src" -xf -
else # a tarball: everything but build outputs
    (cd "$src" && tar --exclude='./build*' --exclude='./python/sluice/_lib' -cf - .) |
        tar -C "$work/src" -xf -
fi
[ -f "$work/src/pyproject.toml" ] || fail "the copy of $src has no pyproject.toml"

echo "wheel: building from a copy of $src"
if ! "$py" -m pip wheel --no-build-isolation --no-deps --no-index -w "$work/dist" "$work/src" \
    > "$work/build.log" 2>&1; then
    tail -40 "$work/build.log" >&2
    fail "pip wheel failed"
fi
whl=$(ls "$work"/dist/sluice-*.whl)
echo "wheel: built $(basename "$whl")"
"$py" - "$whl" "$src" <<'PY'
import re, sys, zipfile
whl, src = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(whl)
names = set(z.namelist())
for need in ["sluice/__init__.py", "sluice/__main__.py", "sluice/py.typed", "sluice/_lib/libsluice.so",
             "sluice/_lib/sluice", "sluice/plugin/pytorch.py", "sluice/plugin/jax/__init__.py",
             "sluice/plugin/jax/clu.py", "wds2idx.py"]:
    assert need in names, "the wheel lacks " + need
info = [n for n in names if n.endswith(".dist-info/METADATA")]
assert len(info) == 1, info
meta = z.read(info[0]).decode()
version = re.search(r"project\(\s*sluice\s+VERSION\s+([0-9.]+)", open(src + "/CMakeLists.txt").read())
assert "Version: %s\n" % version.group(1) in meta, "METADATA's version is not CMakeLists.txt's"
assert "Requires-Python: >=3.10" in meta and "License: Apache-2.0" in meta, meta[:600]
entry = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
assert entry and "sluice = sluice.__main__:main" in z.read(entry[0]).decode(), "no console script"
assert "wds2idx = sluice.__main__:wds2idx" in z.read(entry[0]).decode(), "no wds2idx script"
assert "tfrecord2idx = sluice.__main__:tfrecord2idx" in z.read(entry[0]).decode(), \
    "no tfrecord2idx script"
mode = z.getinfo("sluice/_lib/sluice").external_attr >> 16
assert mode & 0o111, "the tool in the wheel is not executable"
assert not any("/build/" in n or n.startswith("build") for n in names), "build outputs in the wheel"
PY

"$py" -m venv --system-site-packages "$work/venv"
vpy=$work/venv/bin/python
"$vpy" -m pip install --no-deps --no-index -q "$whl" || fail "pip install of the wheel failed"
cd "$work" # outside the source tree
env -u SLUICE_LIBRARY -u SLUICE_TOOL -u PYTHONPATH "$vpy" - "$work/venv" "$fixtures" <<'PY'
import os, sys
venv, fixtures = sys.argv[1], sys.argv[2]
import numpy as np
import sluice
import sluice.fn as fn
import sluice.types as types
assert sluice.__file__.startswith(venv), "sluice imported from " + sluice.__file__
assert sluice._c.lib._name.startswith(venv), "the library loaded from " + sluice._c.lib._name
info = sluice.build_info()
assert "libjpeg-turbo" in info and venv in info, info
print("wheel: import sluice", sluice.__version__, "from", os.path.dirname(sluice.__file__))
print("wheel: built with", info)

@sluice.pipeline_def(batch_size=16, num_threads=2, device_id=None, seed=7)
def fmnist():
    jpegs, labels = fn.readers.caffe2(path=os.path.join(fixtures, "caffe2-fmnist-256"), name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW"), labels

pipe = fmnist()
pipe.build()
images, labels = pipe.run()
x = np.stack([np.asarray(images[i]) for i in range(16)])
assert x.shape == (16, 1, 28, 28) and x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0, (x.shape, x.dtype)
assert x.max() > 0.5, "decoded images are blank"
try:
    import torch
except ImportError:
    print("wheel: torch is not installed here: the PyTorch iterator is not run")
else:
    from sluice.plugin.pytorch import DALIGenericIterator
    it = DALIGenericIterator(fmnist(), ["data", "label"], reader_name="r")
    seen = 0
    for batch in it:
        seen += batch[0]["data"].shape[0]
        assert isinstance(batch[0]["data"], torch.Tensor)
    assert seen == 256, seen
    print("wheel: the PyTorch iterator gave", seen, "samples")
PY
version=$("$work/venv/bin/sluice" --version) || fail "the console script failed"
grep -q "^sluice $("$vpy" -c 'import sluice; print(sluice.__version__)')" <<< "$version" ||
    fail "the console script printed: $version"
ops=$(env -u SLUICE_TOOL "$vpy" -m sluice ops) || fail "python -m sluice ops failed"
grep -q "^decoders.image " <<< "$ops" || fail "python -m sluice ops lists no decoders.image"
"$vpy" -c 'import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    i = tarfile.TarInfo("k.cls")
    i.size = 1
    t.addfile(i, io.BytesIO(b"7"))' "$work/w.tar" || fail "could not write a tar"
"$work/venv/bin/wds2idx" "$work/w.tar" 2> /dev/null || fail "the wds2idx console script failed"
[ "$(cat "$work/w.idx")" = "v1.2 1
cls 512 1 k.cls" ] || fail "wds2idx wrote: $(cat "$work/w.idx")"
rm -f "$work/w.idx"
"$vpy" -c 'import sys; from wds2idx import IndexCreator
with IndexCreator(sys.argv[1], sys.argv[2], verbose=False) as ic:
    ic.create_index()' "$work/w.tar" "$work/w.idx" || fail "wds2idx.IndexCreator failed"
[ "$(cat "$work/w.idx")" = "v1.2 1
cls 512 1 k.cls" ] || fail "IndexCreator wrote: $(cat "$work/w.idx")"
echo "wheel: the sluice and wds2idx console scripts, wds2idx.IndexCreator and python -m sluice run"

"$vpy" -m pip uninstall -y -q sluice || fail "pip uninstall failed"
left=$(find "$work/venv" -iname '*sluice*' | head -5)
[ -z "$left" ] || fail "left after pip uninstall: $left"
! "$vpy" -c "import sluice" 2> /dev/null || fail "import sluice still works after uninstall"
echo "wheel: uninstalled, nothing left"
