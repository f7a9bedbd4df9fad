#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sluice convert --from folder on a user's image folder (3 classes, JPEGs and PNGs of several
# sizes, copied from the fixtures): labels.txt beside data.mdb holds the class names in label
# order; records are keyed by their relative path (class/file), in byte order -- "dog-big/..."
# sorts before "dog/..." though class dog comes first -- and every record's label is its class's
# line in labels.txt; readers.caffe2 reads the string keys shuffled and sharded (`sluice run
# --trace`: each key exactly once per epoch over 2 shards) and the labels it gives match the keys.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

fx=$SL_FIXTURES/dali_extra
mkdir -p "$work/imgs/bird" "$work/imgs/dog" "$work/imgs/dog-big" "$work/imgs/empty"
cp "$fx"/jpeg/padlock-406986_640.jpg "$work/imgs/bird/b1.jpg"
cp "$fx"/png/cat-111793_640.png "$work/imgs/bird/b2.png"
cp "$fx"/jpeg/site-1534685_1280.jpg "$work/imgs/bird/b3.jpg"
cp "$fx"/jpeg/snail-4291306_1280.jpg "$work/imgs/dog/d1.jpg"
cp "$fx"/png/cat-3113513_640.png "$work/imgs/dog/d2.png"
cp "$fx"/jpeg/swan-3584559_640.jpg "$work/imgs/dog/d3.jpg"
cp "$fx"/jpeg/swan-3584559_640.jpg "$work/imgs/dog/d4.jpg"
cp "$fx"/jpeg/padlock-406986_640.jpg "$work/imgs/dog-big/g1.jpg"
cp "$fx"/png/cat-111793_640.png "$work/imgs/dog-big/g2.png"
cp "$fx"/jpeg/site-1534685_1280.jpg "$work/imgs/dog-big/g3.jpg"
cp "$fx"/jpeg/snail-4291306_1280.jpg "$work/imgs/dog-big/g4.jpg"
cp "$fx"/png/cat-3113513_640.png "$work/imgs/dog-big/g5.png"

"$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/db" > "$work/log"
[ -f "$work/db/labels.txt" ] || fail "no labels.txt: $(ls "$work/db")"
[ "$(cat "$work/db/labels.txt")" = "$(printf 'bird\ndog\ndog-big\nempty')" ] ||
    fail "labels.txt: $(cat "$work/db/labels.txt")"
json=$("$tool" inspect "$work/db" --json)
grep -q '"records": 12, "labels": {"0": 3, "1": 4, "2": 5}' <<< "$json" || fail "histogram: $json"
grep -q '"first": \[{"key": "bird/b1.jpg", .*"height": 426, "width": 640' <<< "$json" ||
    fail "first key: $json"
grep -q '"key": "bird/b2.png", "bytes": [0-9]*, "image": "png"' <<< "$json" ||
    fail "second key: $json"
grep -q '"key": "dog-big/g1.jpg"' <<< "$json" || fail "byte order of keys: $json"
grep -q '"classes": \["bird", "dog", "dog-big", "empty"\]' <<< "$json" || fail "classes: $json"
text=$("$tool" inspect "$work/db")
case $text in *"0(bird):3 1(dog):4 2(dog-big):5"*) ;; *) fail "inspect classes: $text" ;; esac

# readers.caffe2 over the string keys: shuffled, 2 shards, each key once per epoch; labels match
cat > "$work/pipe.py" << 'EOF'
@data_iterator(output_map=["labels"], reader_name="r", sharding=sharding)
def it(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="r",
                                      num_shards=num_shards, shard_id=shard_id)
    return labels
EOF
"$tool" run "$work/pipe.py" --arg data_path="$work/db" --devices cpu:2 --batch-size 6 \
    --epochs 2 --trace "$work/trace" --dump "$work/dump" 2> "$work/log" ||
    fail "run: $(cat "$work/log")"
python3 - "$work/trace" "$work/dump" "$work/db/labels.txt" "$work/imgs" << 'EOF' ||
import collections, os, struct, sys
def load_i32(path):  # a little-endian int32 .npy, flattened
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0] if b[6] == 1 else struct.unpack("<I", b[8:12])[0]
    off = (10 if b[6] == 1 else 12) + hl
    assert b"'<i4'" in b[:off], b[:off]
    return struct.unpack("<%di" % ((len(b) - off) // 4), b[off:])
trace, dump, labels, imgs = sys.argv[1:]
names = open(labels).read().split("\n")[:-1]
want = sorted(c + "/" + f for c in names for f in os.listdir(os.path.join(imgs, c)))
per_epoch = collections.defaultdict(list)
for line in open(trace):
    if line.startswith("#"):  # the header line
        continue
    epoch, step, dev, slot, key = line.rstrip("\n").split("\t")
    per_epoch[epoch].append(key)
    got = load_i32(os.path.join(dump, "labels_%s_%s_%s.npy" % (epoch, step, dev)))[int(slot)]
    if names[got] != key.split("/")[0]:
        sys.exit("key %s came with label %d (%s)" % (key, got, names[got]))
assert len(per_epoch) == 2, per_epoch.keys()
for e, keys in per_epoch.items():
    if sorted(keys) != want:
        sys.exit("epoch %s read %s, not each of %s once" % (e, sorted(keys), want))
EOF
    fail "trace/labels check"

# an IDX conversion keeps its numbered keys and writes no labels.txt
src=/usr/share/datasets/fashion-mnist
"$tool" convert --from idx --images $src/t10k-images-idx3-ubyte.gz \
    --labels $src/t10k-labels-idx1-ubyte.gz --to caffe2 --out "$work/idx" > /dev/null
[ ! -e "$work/idx/labels.txt" ] || fail "labels.txt for an IDX conversion"
grep -q '"first": \[{"key": "00000000"' < <("$tool" inspect "$work/idx" --json) || fail "idx keys"
echo "cli convert folder: ok"
