#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Damaged copies of every kind of file the CLI reads, through the commands that read them: the two
# fixture LMDBs (Caffe2 and Caffe; `inspect`, `run`), a NumPy file (`run` with readers.numpy), a
# JPEG and a PNG (`run` with readers.file and the decoder), a TFRecord file (`inspect`, `run` with
# readers.tfrecord), a `sluice run` checkpoint (`run
# --resume`) and a `sluice train` checkpoint (model, optimiser and iterator: `train --resume`).
# Each file is truncated to half, emptied, replaced by random bytes of its size, and bit-flipped in
# 16 places (the same bytes on every run: a fixed seed). A damaged copy must end with exit status 1
# or 2 (never a signal), within a timeout, with a message naming the file, and below a memory
# bound; a bit-flipped copy may also succeed (a flip in pixel data or unused pages changes nothing
# a reader can check), but never crash or hang.
set -uo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
RSS_MAX_KB=$((1536 * 1024)) # the tool runs in ~150 MB; a size taken on trust would need far more

# damage SRC DIR NAME: writes DIR/{half,zero,random,flip}/NAME from SRC
damage() {
    "$py" - "$@" <<'PY'
import os, random, sys
src, out, name = sys.argv[1:4]
data = open(src, "rb").read()
rng = random.Random(20261201)
flipped = bytearray(data)
for k in range(16):
    i = (len(data) * k) // 16 + rng.randrange(max(1, len(data) // 16))
    flipped[min(i, len(data) - 1)] ^= 1 << rng.randrange(8)
for kind, body in (("half", data[: len(data) // 2]), ("zero", b""),
                   ("random", bytes(rng.randrange(256) for _ in range(len(data)))),
                   ("flip", bytes(flipped))):
    os.makedirs(os.path.join(out, kind), exist_ok=True)
    open(os.path.join(out, kind, name), "wb").write(body)
PY
}

# check KIND WHAT NAMED COMMAND...: runs COMMAND under a timeout and a memory measure; it must
# fail cleanly naming NAMED (a flipped copy may also succeed)
check() {
    local kind=$1 what=$2 named=$3
    shift 3
    timeout 120 /usr/bin/time -f "%M" -o "$work/rss" "$@" > "$work/out" 2> "$work/err"
    local rc=$?
    local rss
    rss=$(tail -1 "$work/rss" 2> /dev/null)
    [ $rc -eq 124 ] && fail "$what ($kind): timed out: $*"
    grep -q "Command terminated by signal" "$work/rss" 2> /dev/null &&
        fail "$what ($kind): killed by a signal: $* ($(cat "$work/err"))"
    [ $rc -gt 128 ] && fail "$what ($kind): killed by signal $((rc - 128)): $* ($(cat "$work/err"))"
    case $rss in '' | *[!0-9]*) fail "$what ($kind): no memory figure: $(cat "$work/rss")" ;; esac
    [ "$rss" -le $RSS_MAX_KB ] || fail "$what ($kind): $rss KB resident (bound $RSS_MAX_KB KB)"
    if [ $rc -eq 0 ]; then
        [ "$kind" = flip ] && return 0
        fail "$what ($kind): succeeded: $*"
    fi
    [ $rc -le 2 ] || fail "$what ($kind): exit $rc: $* ($(cat "$work/err"))"
    grep -qF "$named" "$work/err" || fail "$what ($kind): the message does not name $named: $(cat "$work/err")"
}
kinds="half zero random flip"

# ---- the LMDB stores: inspect, then a pipeline that decodes every record
for store in caffe2-fmnist-256:caffe2 caffe-fmnist-64:caffe; do
    name=${store%%:*} reader=${store##*:}
    cat > "$work/$reader.py" <<PY
def pipe(data_path):
    jpegs, labels = fn.readers.$reader(path=data_path)
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return images, labels
PY
    damage "$SL_FIXTURES/$name/data.mdb" "$work/$name" data.mdb
    for k in $kinds; do
        s="$work/$name/$k"
        check "$k" "$name inspect" "$s" "$tool" inspect "$s"
        check "$k" "$name run" "$s" "$tool" run "$work/$reader.py" --arg data_path="$s" \
            --batch-size 16 --devices cpu
    done
done

# ---- a NumPy file
cat > "$work/npy.py" <<'PY'
def pipe(root):
    return fn.readers.numpy(file_root=root)
PY
damage "$SL_FIXTURES/dali_extra/cmn/input0.npy" "$work/npy" input0.npy
for k in $kinds; do
    check "$k" "npy run" input0.npy "$tool" run "$work/npy.py" --arg root="$work/npy/$k" \
        --batch-size 1 --devices cpu
done

# ---- a JPEG and a PNG, each alone in a class folder
cat > "$work/img.py" <<'PY'
def pipe(root):
    files, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(files), labels
PY
for img in jpeg/swan-3584559_640.jpg png/cat-111793_640.png; do
    base=$(basename "$img")
    damage "$SL_FIXTURES/dali_extra/$img" "$work/img-$base" "$base"
    for k in $kinds; do
        root="$work/img-$base/root-$k"
        mkdir -p "$root/a" && mv "$work/img-$base/$k/$base" "$root/a/$base"
        check "$k" "$base run" "$base" "$tool" run "$work/img.py" --arg root="$root" \
            --batch-size 1 --devices cpu
    done
done

# ---- a TFRecord file (sluice convert of two photos in class folders): inspect, and a pipeline
# that reads (its index made by one scan of the file) and decodes every record
mkdir -p "$work/tfin/a" "$work/tfin/b"
cp "$SL_FIXTURES/dali_extra/jpeg/swan-3584559_640.jpg" "$work/tfin/a/"
cp "$SL_FIXTURES/dali_extra/png/cat-111793_640.png" "$work/tfin/b/"
"$tool" convert --from folder --in "$work/tfin" --to tfrecord --out "$work/photos.tfrecord" \
    > /dev/null 2> "$work/err" || fail "convert --to tfrecord: $(cat "$work/err")"
cat > "$work/tf.py" <<'PY'
def pipe(data_path):
    jpegs, labels = fn.readers.tfrecord(path=data_path, index_path=[], features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    return fn.decoders.image(jpegs), labels
PY
damage "$work/photos.tfrecord" "$work/tf" photos.tfrecord
for k in $kinds; do
    f="$work/tf/$k/photos.tfrecord"
    check "$k" "tfrecord inspect" "$f" "$tool" inspect "$f"
    check "$k" "tfrecord run" "$f" "$tool" run "$work/tf.py" --arg data_path="$f" --batch-size 1 \
        --devices cpu
done

# ---- a `sluice run` checkpoint, two steps into the Caffe2 store
good=$(cd "$SL_FIXTURES/caffe2-fmnist-256" && pwd)
"$tool" run "$work/caffe2.py" --arg data_path="$good" --batch-size 16 --devices cpu \
    --checkpoint "$work/run.ck" --checkpoint-at 2 > /dev/null 2> "$work/err" ||
    fail "run --checkpoint: $(cat "$work/err")"
damage "$work/run.ck" "$work/runck" run.ck
for k in $kinds; do
    check "$k" "run --resume" "$work/runck/$k/run.ck" "$tool" run "$work/caffe2.py" \
        --arg data_path="$good" --batch-size 16 --devices cpu --resume "$work/runck/$k/run.ck"
done

# ---- a `sluice train` checkpoint after one epoch (the fixture as training and test set)
mkdir "$work/data"
ln -s "$good" "$work/data/training"
ln -s "$good" "$work/data/testing"
train=("$tool" train --data "$work/data" --devices cpu --batch-size 64 --hidden 32)
"${train[@]}" --epochs 1 --checkpoint "$work/train.ck" > /dev/null 2> "$work/err" ||
    fail "train --checkpoint: $(cat "$work/err")"
damage "$work/train.ck" "$work/trainck" train.ck
for k in $kinds; do
    check "$k" "train --resume" "$work/trainck/$k/train.ck" "${train[@]}" --epochs 2 \
        --resume "$work/trainck/$k/train.ck"
done
echo "hostile_files: ok"
