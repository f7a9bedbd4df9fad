#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A FIFO where a data file should be (an image a file list names, a NumPy file, an LMDB's data.mdb,
# a TFRecord file) is refused as "not a regular file" at once, naming it: opening a FIFO for
# reading waits for a writer, for good. (A folder's listing takes its regular files only.)
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jpg="$SL_FIXTURES/dali_extra/jpeg/swan-3584559_640.jpg"
mkdir -p "$work/photos/a" "$work/npy" "$work/lmdb"
cp "$jpg" "$work/photos/a/1.jpg"
mkfifo "$work/photos/a/2.jpg" "$work/npy/x.npy" "$work/lmdb/data.mdb" "$work/f.tfrecord"
cat > "$work/p.py" <<'PY'
def files(root, file_list):
    jpegs, labels = fn.readers.file(file_root=root, file_list=file_list)
    return fn.decoders.image(jpegs), labels

def numpy(root):
    return fn.readers.numpy(file_root=root, files=["x.npy"])

def lmdb(root):
    jpegs, labels = fn.readers.caffe2(path=root)
    return jpegs, labels

def tfrecord(path):
    inputs = fn.readers.tfrecord(path=path, index_path=path,
                                 features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, "")})
    return inputs["image/encoded"]
PY
printf 'a/1.jpg 0\na/2.jpg 1\n' > "$work/list.txt"
check() { # pipeline, binding, the file the message must name, more bindings
    st=0
    timeout 60 "$tool" run "$work/p.py" --pipeline "$1" --arg "$2" ${4:+--arg "$4"} --devices cpu \
        --batch-size 2 --threads 2 > /dev/null 2> "$work/e" || st=$?
    [ $st -ne 124 ] || fail "$1: still waiting on the FIFO after 60 s"
    [ $st -ne 0 ] || fail "$1: a FIFO was read as data"
    grep -q "$3.*not a regular file\|not a regular file.*$3\|$3.*not an LMDB" "$work/e" ||
        fail "$1: the error does not name $3 as no regular file: $(cat "$work/e")"
}
check files root="$work/photos" "2.jpg" file_list="$work/list.txt"
check numpy root="$work/npy" "x.npy"
check lmdb root="$work/lmdb" "$work/lmdb"
check tfrecord path="$work/f.tfrecord" "f.tfrecord"
echo "fifo_inputs: every FIFO refused at once, named"
