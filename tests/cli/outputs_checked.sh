#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Output that cannot be written is a failure, named with its file and cause, and leaves no half
# file behind:
#  - `sluice run --json` and `sluice ops --json` to a full device (/dev/full): "standard output:
#    No space left on device", exit status 1;
#  - `sluice train --metrics /dev/full` and `sluice run --trace /dev/full`: the file and "No space
#    left on device", exit status 1;
#  - --metrics, --checkpoint (train and run) and --dump in a folder that does not exist are refused
#    before any epoch runs;
#  - on a full file system (a 512 KiB tmpfs; root only, else skipped): --dump, --trace and
#    --checkpoint fail with "No space left on device" and leave no temporary file, no empty or
#    half .npy, trace or checkpoint; what was written before (the dumps of earlier batches, an
#    earlier checkpoint) is whole.
#  - files written well replace the old ones whole: --metrics holds one line per epoch, also
#    over a file that was there; a symbolic link (/dev/stdout, a link to the metrics file) is
#    written through, not replaced.
set -euo pipefail
tool=$1
work=$(mktemp -d)
mnt=""
cleanup() {
    if [ -n "$mnt" ]; then umount "$mnt" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
mkdir "$work/data"
ln -s "$data" "$work/data/training"
ln -s "$data" "$work/data/testing"
cat > "$work/p.py" << 'PY'
@data_iterator(output_map=["images", "labels"], reader_name="r")
def p(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return images, labels
PY
run() { "$tool" run "$work/p.py" --arg data_path="$data" --devices cpu --batch-size 64 "$@"; }
train() { "$tool" train --data "$work/data" --devices cpu --hidden 16 --batch-size 64 "$@"; }
# expect_fail NAME PATTERN: the last command's status (in $st) is 1 and $work/e matches PATTERN
expect_fail() {
    [ "$st" -eq 1 ] || fail "$1: exit status $st, 1 wanted; stderr: $(cat "$work/e")"
    grep -q -- "$2" "$work/e" || fail "$1: no '$2' in: $(cat "$work/e")"
}

st=0; run --json > /dev/full 2> "$work/e" || st=$?
expect_fail "run --json > /dev/full" "standard output: No space left on device"
st=0; "$tool" ops --json > /dev/full 2> "$work/e" || st=$?
expect_fail "ops --json > /dev/full" "standard output: No space left on device"
st=0; train --epochs 1 --metrics /dev/full > /dev/null 2> "$work/e" || st=$?
expect_fail "train --metrics /dev/full" "/dev/full: No space left on device"
st=0; run --trace /dev/full 2> "$work/e" || st=$?
expect_fail "run --trace /dev/full" "/dev/full: No space left on device"

# unwritable paths: refused before the first epoch
for opt in --metrics --checkpoint; do
    st=0; train --epochs 1 $opt "$work/no/such/dir/f" > "$work/o" 2> "$work/e" || st=$?
    expect_fail "train $opt in a missing folder" "$opt $work/no/such/dir/f: cannot create"
    ! grep -q "Epoch" "$work/o" || fail "train $opt: refused only after training: $(cat "$work/o")"
done
st=0; run --checkpoint "$work/no/ck" --checkpoint-at 1 2> "$work/e" || st=$?
expect_fail "run --checkpoint in a missing folder" "--checkpoint $work/no/ck: cannot create"
! grep -q "Epoch" "$work/e" || fail "run --checkpoint: refused only after running"
touch "$work/file"
st=0; run --dump "$work/file/d" 2> "$work/e" || st=$?
expect_fail "run --dump under a file" "--dump $work/file/d: Not a directory"

# written well: whole files, one metrics line per epoch, also over an old file
echo "old" > "$work/m"
train --epochs 2 --metrics "$work/m" > /dev/null 2> "$work/e" || fail "train: $(cat "$work/e")"
[ "$(wc -l < "$work/m")" -eq 2 ] || fail "metrics: $(cat "$work/m")"
! grep -q old "$work/m" || fail "metrics kept the old file's line"
ls "$work" | grep '^m\.' > /dev/null && fail "a temporary metrics file is left: $(ls "$work")"
# a symbolic link is written through, not replaced: /dev/stdout to a file, a link to the metrics
run --trace /dev/stdout > "$work/tout" 2> "$work/e" || fail "trace to stdout: $(cat "$work/e")"
[ -L /dev/stdout ] || fail "/dev/stdout is no longer a symbolic link"
[ "$(grep -c $'^0\t' "$work/tout")" -eq 256 ] || fail "trace to stdout: $(head -3 "$work/tout")"
ln -s m "$work/mlink"
train --epochs 1 --metrics "$work/mlink" > /dev/null 2> "$work/e" || fail "train: $(cat "$work/e")"
[ -L "$work/mlink" ] && [ "$(wc -l < "$work/m")" -eq 1 ] || fail "metrics through a link"

if [ "$(id -u)" != 0 ]; then
    echo "outputs_checked: not root: the full file system cases (tmpfs) are skipped"
    exit 0
fi
mnt="$work/full"
mkdir "$mnt"
if ! mount -t tmpfs -o size=512k tmpfs "$mnt" 2> "$work/e"; then
    mnt=""
    echo "outputs_checked: cannot mount a tmpfs ($(cat "$work/e")): the full file system cases are skipped"
    exit 0
fi
# --dump: 4 steps of images (64 x 784 floats, 200 KiB each) and labels: the third images file
# finds the file system full
st=0; run --dump "$mnt/d" 2> "$work/e" || st=$?
expect_fail "run --dump on a full file system" "No space left on device"
python3 - "$mnt/d" << 'PY' || fail "dumps"
import os, sys
d = sys.argv[1]
names = os.listdir(d)
assert names, "nothing dumped before the file system filled"
for n in names:
    assert n.endswith(".npy") and not n.startswith("."), "left behind: %s" % n
    b = open(os.path.join(d, n), "rb").read()
    assert b[:6] == b"\x93NUMPY", "%s: %d bytes, not a .npy" % (n, len(b))
    hl = b[8] | b[9] << 8
    hdr = b[10:10 + hl].decode()
    shape = eval(hdr)["shape"]
    size = {"<f4": 4, "<i4": 4, "|u1": 1, "<i8": 8}[eval(hdr)["descr"]]
    count = 1
    for s in shape:
        count *= s
    assert len(b) == 10 + hl + count * size, "%s: %d bytes, half a file" % (n, len(b))
PY
rm -rf "$mnt/d"
# a trace that does not fit: the file system is filled first, leaving 4 KiB
dd if=/dev/zero of="$mnt/fill" bs=4k count=127 2> /dev/null || true
st=0; run --epochs 20 --trace "$mnt/t" 2> "$work/e" || st=$?
expect_fail "run --trace on a full file system" "No space left on device"
[ -z "$(ls "$mnt" | grep -v '^fill$')" ] || fail "trace: left behind: $(ls "$mnt")"
rm -f "$mnt/fill"
# a checkpoint where an earlier one is: the earlier one stays whole
run --checkpoint "$mnt/ck" --checkpoint-at 1 2> "$work/e" || fail "checkpoint: $(cat "$work/e")"
cp "$mnt/ck" "$work/ck"
dd if=/dev/zero of="$mnt/fill" bs=4k count=128 2> /dev/null || true
st=0; run --checkpoint "$mnt/ck" --checkpoint-at 2 2> "$work/e" || st=$?
expect_fail "run --checkpoint on a full file system" "No space left on device"
cmp -s "$mnt/ck" "$work/ck" || fail "the earlier checkpoint was changed"
[ -z "$(ls "$mnt" | grep -v '^fill$' | grep -v '^ck$')" ] || fail "checkpoint: left behind: $(ls "$mnt")"
exit 0
