#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TFRecord from the command line: `sluice convert --to tfrecord` from IDX files and from an image
# folder writes TensorFlow's image-classification layout, in the same record order as the LMDB
# conversion, with the same JPEG bytes (so `sluice run` over readers.tfrecord dumps the same
# decoded images and labels as over readers.caffe2); `sluice index` writes what DALI's
# tfrecord2idx would (checked against a reimplementation of it here), and a pipeline reading with
# that index gives the same batches; `sluice inspect` recognises the file and lists the first
# Example's features; --order global gives the same batches on 1 and 3 devices; a corrupt record
# makes index, inspect and run fail naming file and offset.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

src=/usr/share/datasets/fashion-mnist
head_idx() { # the first $2 items of IDX file $1 (gzip), as a plain IDX file $3
    python3 - "$1" "$2" "$3" << 'EOF'
import gzip, struct, sys
b = gzip.open(sys.argv[1]).read()
n = int(sys.argv[2])
rank = b[3]
dims = list(struct.unpack(">%dI" % rank, b[4:4 + 4 * rank]))
item = 1
for d in dims[1:]:
    item *= d
body = b[4 + 4 * rank:4 + 4 * rank + n * item]
open(sys.argv[3], "wb").write(b[:4] + struct.pack(">I", n) + b[8:4 + 4 * rank] + body)
EOF
}
head_idx $src/t10k-images-idx3-ubyte.gz 300 "$work/img.idx"
head_idx $src/t10k-labels-idx1-ubyte.gz 300 "$work/lab.idx"
"$tool" convert --from idx --images "$work/img.idx" --labels "$work/lab.idx" --to caffe2 \
    --out "$work/db" > /dev/null
"$tool" convert --from idx --images "$work/img.idx" --labels "$work/lab.idx" --to tfrecord \
    --out "$work/t.tfrecord" > "$work/log"
grep -q "wrote 300 tfrecord records to $work/t.tfrecord" "$work/log" || fail "log: $(cat "$work/log")"

# inspect: format, records, the features of the first Example
json=$("$tool" inspect "$work/t.tfrecord" --json)
grep -q '"format": "tfrecord"' <<< "$json" || fail "format: $json"
grep -q '"records": 300' <<< "$json" || fail "records: $json"
grep -q '"features": \[{"name": "image/encoded", "kind": "bytes_list", "values": 1}, {"name": "image/class/label", "kind": "int64_list", "values": 1}\]' <<< "$json" ||
    fail "features: $json"
grep -q '"first": \[{"key": "0", "bytes": [0-9]*, "image": "jpeg", "height": 28, "width": 28' <<< "$json" ||
    fail "first: $json"
[ "$(echo "$json" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["labels"].values()))')" = 300 ] ||
    fail "labels: $json"
grep -q "verified: tfrecord, 300 records" < <("$tool" inspect --verify "$work/t.tfrecord") ||
    fail "verify"

# index: DALI's tfrecord2idx format, byte for byte
"$tool" index "$work/t.tfrecord" "$work/t.idx" 2> /dev/null
"$tool" index "$work/t.tfrecord" > "$work/t.idx2"
cmp -s "$work/t.idx" "$work/t.idx2" || fail "index to a file and to stdout differ"
python3 - "$work/t.tfrecord" "$work/t.idx" << 'EOF' || fail "index differs from tfrecord2idx's"
import struct, sys
out = []
with open(sys.argv[1], "rb") as f:  # what DALI's tfrecord2idx does
    while True:
        cur = f.tell()
        n = f.read(8)
        if not n:
            break
        f.read(4)
        f.read(struct.unpack("q", n)[0])
        f.read(4)
        out.append("%d %d\n" % (cur, f.tell() - cur))
assert len(out) == 300
got = open(sys.argv[2]).read()
assert got == "".join(out), (got[:200], out[:3])
EOF

# the same images and labels as from the LMDB, in the same order
cat > "$work/c2.py" << 'EOF'
@data_iterator(output_map=["images", "labels"], reader_name="r")
def it(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return fn.reshape(images, shape=[784]), labels
EOF
cat > "$work/tf.py" << 'EOF'
import nvidia.dali.tfrecord as tfrec
@data_iterator(output_map=["images", "labels"], reader_name="r")
def it(data_path, index_path, num_shards, shard_id, shuffle=False):
    jpegs, labels = fn.readers.tfrecord(path=data_path, index_path=index_path, name="r",
                                        num_shards=num_shards, shard_id=shard_id,
                                        random_shuffle=shuffle, features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return fn.reshape(images, shape=[784]), fn.cast(labels, dtype=types.INT32)
EOF
"$tool" run "$work/c2.py" --arg data_path="$work/db" --devices cpu:2 --batch-size 64 --epochs 1 \
    --dump "$work/d_c2" > /dev/null 2> "$work/log" || fail "run caffe2: $(cat "$work/log")"
for idx in "[]" "$work/t.idx"; do
    rm -rf "$work/d_tf"
    "$tool" run "$work/tf.py" --arg data_path="$work/t.tfrecord" --arg index_path="$idx" \
        --devices cpu:2 --batch-size 64 --epochs 1 --dump "$work/d_tf" > /dev/null 2> "$work/log" ||
        fail "run tfrecord (index $idx): $(cat "$work/log")"
    n=$(ls "$work/d_c2" | wc -l)
    [ "$n" -ge 10 ] && [ "$(ls "$work/d_tf" | wc -l)" = "$n" ] || fail "dumps: $(ls "$work/d_tf")"
    for f in "$work"/d_c2/*.npy; do
        cmp -s "$f" "$work/d_tf/$(basename "$f")" || fail "$(basename "$f") differs (index $idx)"
    done
done

# global order, shuffled: the same keys in every step on 1 and 3 devices, every record each epoch
for d in cpu cpu:3; do
    "$tool" run "$work/tf.py" --arg data_path="$work/t.tfrecord" --arg index_path="[]" \
        --arg shuffle=True --devices $d --batch-size 24 --epochs 2 --order global --trace "$work/g.$d" \
        > /dev/null 2> "$work/log" || fail "run --order global on $d: $(cat "$work/log")"
done
python3 - "$work/g.cpu" "$work/g.cpu:3" "$work/t.idx" << 'EOF' || fail "global order"
import sys
def steps(path):
    rows = sorted((int(e), int(s), int(d), int(k), key) for e, s, d, k, key in
                  (l.rstrip("\n").split("\t") for l in open(path) if not l.startswith("#")))
    return [(e, s, key) for e, s, d, k, key in rows]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert a == b, "cpu and cpu:3 read other global batches"
offsets = set(l.split()[0] for l in open(sys.argv[3]))
epochs = [[k for e, s, k in a if e == ep] for ep in (0, 1)]
for ep, keys in enumerate(epochs):  # 300 records, 13 steps of 24: the last one filled
    assert set(keys) == offsets, "epoch %d misses records" % ep
    assert len(set(keys[:288])) == 288, "a record twice in epoch %d" % ep
assert epochs[0] != epochs[1], "both epochs in one order"
EOF

# a folder: the LMDB conversion's key order and labels, class names beside the file
fx=$SL_FIXTURES/dali_extra
mkdir -p "$work/imgs/b" "$work/imgs/a"
cp "$fx"/jpeg/padlock-406986_640.jpg "$work/imgs/b/x.jpg"
cp "$fx"/png/cat-111793_640.png "$work/imgs/a/y.png"
cp "$fx"/jpeg/swan-3584559_640.jpg "$work/imgs/a/z.jpg"
"$tool" convert --from folder --in "$work/imgs" --to tfrecord --out "$work/f.tfrecord" > /dev/null
[ "$(cat "$work/f.tfrecord.labels.txt")" = "$(printf 'a\nb')" ] || fail "labels.txt"
json=$("$tool" inspect "$work/f.tfrecord" --json)
grep -q '"labels": {"0": 2, "1": 1}' <<< "$json" || fail "folder labels: $json"
grep -q '"first": \[{"key": "0", "bytes": '"$(stat -c %s "$work/imgs/a/y.png")"', "image": "png"' <<< "$json" ||
    fail "folder order: $json"
"$tool" convert --from idx --images "$work/img.idx" --labels "$work/lab.idx" --to tfrecord \
    --raw --out "$work/r.tfrecord" 2> "$work/log" && fail "--raw --to tfrecord accepted"
grep -q "raw is for the LMDBs" "$work/log" || fail "raw message: $(cat "$work/log")"

# a corrupt record (a byte of record 2's data): index, inspect and run name file and offset
off=$(sed -n 3p "$work/t.idx" | cut -d' ' -f1)
cp "$work/t.tfrecord" "$work/bad.tfrecord"
printf 'X' | dd of="$work/bad.tfrecord" bs=1 seek=$((off + 20)) conv=notrunc status=none
want="$work/bad.tfrecord at offset $off: bad data CRC"
"$tool" index "$work/bad.tfrecord" > /dev/null 2> "$work/log" && fail "index of a corrupt file"
grep -qF "$want" "$work/log" || fail "index message: $(cat "$work/log")"
"$tool" inspect "$work/bad.tfrecord" > /dev/null 2> "$work/log" && fail "inspect of a corrupt file"
grep -qF "$want" "$work/log" || fail "inspect message: $(cat "$work/log")"
"$tool" run "$work/tf.py" --arg data_path="$work/bad.tfrecord" --arg index_path="[]" \
    --devices cpu:1 --batch-size 8 --epochs 1 > /dev/null 2> "$work/log" && fail "run of a corrupt file"
grep -qF "readers.tfrecord: $want" "$work/log" || fail "run message: $(cat "$work/log")"
"$tool" index 2> /dev/null && fail "index without a file"
"$tool" index "$work/nonexistent" 2> "$work/log" && fail "index of nothing"
grep -q "nonexistent" "$work/log" || fail "missing file message"
echo "cli tfrecord: ok"
