#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pipeline files as a DALI user writes them: helper functions above the pipeline function, for/if
# on --arg values, ** from a dict. `sluice run` picks the function nobody calls (or --pipeline
# NAME); two candidates, an unknown NAME, a condition on data, recursion and an endless loop are
# errors naming the file, line and column; `sluice train --pipeline NAME` picks in its files.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

cat > "$work/h.py" <<'PY'
import nvidia.dali.fn as fn
import nvidia.dali.types as types


def decode(jpegs, gray=True):
    return fn.decoders.image(jpegs, output_type=types.GRAY if gray else types.RGB)


def read(path, name="r"):
    return fn.readers.caffe2(path=path, random_shuffle=False, name=name)


def mnist(data_path, size=28, flips=0, channels=1):
    jpegs, labels = read(data_path)
    images = decode(jpegs, gray=channels == 1)
    for i in range(flips):
        images = fn.flip(images, horizontal=1)
    norm = {"dtype": types.FLOAT, "std": [255.0]}
    images = fn.crop_mirror_normalize(images, **norm, output_layout="CHW")
    images = fn.reshape(images, shape=[channels * size * size])
    return images, labels
PY
"$tool" run "$work/h.py" --arg data_path="$data" --batch-size 64 --json > "$work/j" 2> "$work/e" ||
    fail "helpers: $(cat "$work/e")"
[ "$(field "$work/j" '[(o["name"], o["shape"]) for o in d["outputs"]]')" = \
    "[('images', [64, 784]), ('labels', [64, 1])]" ] || fail "helpers: $(cat "$work/j")"
"$tool" run "$work/h.py" --arg data_path="$data" --arg flips=2 --arg channels=3 --batch-size 64 \
    --json > "$work/j" 2> "$work/e" || fail "flips=2 channels=3: $(cat "$work/e")"
[ "$(field "$work/j" 'd["outputs"][0]["shape"]')" = "[64, 2352]" ] || fail "channels=3: $(cat "$work/j")"
grep -q '"flip"' "$work/j" || fail "flips=2 built no flip: $(cat "$work/j")"
# --pipeline names the function; an unknown one lists those there are
"$tool" run "$work/h.py" --pipeline mnist --arg data_path="$data" --steps 1 > /dev/null 2>&1 ||
    fail "--pipeline mnist"
if out=$("$tool" run "$work/h.py" --pipeline nope 2>&1); then fail "--pipeline nope ran"; fi
case $out in *"h.py: error: no function 'nope' in the pipeline text (it defines 'decode' (line 5), 'read' (line 9), 'mnist' (line 13))"*) ;;
*) fail "--pipeline nope: $out" ;; esac

# two functions nobody calls: an error listing both, until --pipeline picks one
cat > "$work/two.py" <<'PY'
def train(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r")
    return fn.decoders.image(jpegs), labels

def check(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r")
    return jpegs, labels
PY
if out=$("$tool" run "$work/two.py" --arg data_path="$data" 2>&1); then fail "two candidates ran"; fi
case $out in *"two.py:1:5: error: which function is the pipeline? 'train' (line 1), 'check' (line 5) are called by no other function"*) ;;
*) fail "two candidates: $out" ;; esac
"$tool" run "$work/two.py" --pipeline check --arg data_path="$data" --batch-size 64 --json \
    > "$work/j" 2> "$work/e" || fail "--pipeline check: $(cat "$work/e")"
[ "$(field "$work/j" 'd["outputs"][0]["dtype"]')" = uint8 ] || fail "check's outputs: $(cat "$work/j")"

# refused, naming the line: a condition on data, recursion, a loop without end
expect_error() { # file want
    local out
    if out=$(timeout 60 "$tool" run "$1" --arg data_path="$data" 2>&1); then fail "$1 ran: $out"; fi
    case $out in *"$2"*) ;; *) fail "$1: $out" ;; esac
}
printf 'def p(data_path):\n    jpegs, labels = fn.readers.caffe2(path=data_path)\n    if labels:\n        jpegs = fn.decoders.image(jpegs)\n    return jpegs, labels\n' > "$work/cond.py"
expect_error "$work/cond.py" "cond.py:3:8: error: 'if' on an op output: a condition on data needs @pipeline_def(enable_conditionals=True)"
printf 'def f(x):\n    return f(x)\ndef p(data_path):\n    j, l = fn.readers.caffe2(path=data_path)\n    return f(j), l\n' > "$work/rec.py"
expect_error "$work/rec.py" "rec.py:2:12: error: recursion is not supported in a pipeline: 'f' is called while it runs"
printf 'def p(data_path):\n    j, l = fn.readers.caffe2(path=data_path)\n    for i in range(10**12):\n        j = j\n    return j, l\n' > "$work/loop.py"
expect_error "$work/loop.py" "loop.py:3:5: error: the pipeline takes too long to build"

# sluice train: --pipeline picks in the pipeline files, and needs one
if out=$("$tool" train --data "$work" --pipeline mnist 2>&1); then fail "train --pipeline without a file ran"; fi
case $out in *"--pipeline mnist names a function of a pipeline file"*) ;; *) fail "train: $out" ;; esac
if out=$("$tool" train --data "$work" --train-pipeline "$work/two.py" --pipeline nope 2>&1); then
    fail "train --pipeline nope ran"
fi
case $out in *"no function 'nope' in the pipeline text (it defines 'train' (line 1), 'check' (line 5))"*) ;;
*) fail "train --pipeline nope: $out" ;; esac
echo ok
