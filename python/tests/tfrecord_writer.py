# SPDX-License-Identifier: Apache-2.0
"""A TFRecord writer that is not sluice's: tf.train.Example built with the protobuf library
(Debian's python3-protobuf) from a descriptor made here, in code, with no .proto file -- or, where
that library is missing, encoded by hand -- and framed with a CRC-32C computed here. `WRITER` says
which one is in use."""

import struct

try:
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf import message_factory
except ImportError:  # pragma: no cover - depends on the machine
    descriptor_pb2 = None


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload):
    """One TFRecord record: length, its masked CRC, the data, its masked CRC."""
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", masked(n)) + payload + struct.pack("<I", masked(payload))


def _example_class():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="sluice_test_example.proto",
                                             package="sluice_test", syntax="proto3")

    def message(name, parent=None):
        m = (parent.nested_type if parent else fdp.message_type).add()
        m.name = name
        return m

    def field(m, name, num, typ, label=F.LABEL_OPTIONAL, type_name=None, oneof=None):
        f = m.field.add(name=name, number=num, type=typ, label=label)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof

    for name, typ in (("BytesList", F.TYPE_BYTES), ("FloatList", F.TYPE_FLOAT),
                      ("Int64List", F.TYPE_INT64)):
        field(message(name), "value", 1, typ, F.LABEL_REPEATED)
    feat = message("Feature")
    feat.oneof_decl.add(name="kind")
    for k, (name, typ) in enumerate((("bytes_list", "BytesList"), ("float_list", "FloatList"),
                                     ("int64_list", "Int64List"))):
        field(feat, name, k + 1, F.TYPE_MESSAGE, type_name=".sluice_test." + typ, oneof=0)
    feats = message("Features")
    entry = message("FeatureEntry", feats)
    entry.options.map_entry = True
    field(entry, "key", 1, F.TYPE_STRING)
    field(entry, "value", 2, F.TYPE_MESSAGE, type_name=".sluice_test.Feature")
    field(feats, "feature", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED,
          ".sluice_test.Features.FeatureEntry")
    ex = message("Example")
    field(ex, "features", 1, F.TYPE_MESSAGE, type_name=".sluice_test.Features")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("sluice_test.Example")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


# ---- by hand, where the protobuf library is missing ----

def _varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _len_field(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _hand_example(features):
    feats = b""
    for name, (kind, values) in features.items():
        if kind == "bytes":
            lst = b"".join(_len_field(1, v) for v in values)
            f = _len_field(1, lst)
        elif kind == "float":
            f = _len_field(2, _len_field(1, b"".join(struct.pack("<f", v) for v in values))
                           if values else b"")
        else:
            f = _len_field(3, _len_field(1, b"".join(_varint(v) for v in values))
                           if values else b"")
        feats += _len_field(1, _len_field(1, name.encode()) + _len_field(2, f))
    return _len_field(1, feats)


if descriptor_pb2 is not None:
    Example = _example_class()
    WRITER = "protobuf %s" % __import__("google.protobuf").protobuf.__version__
else:  # pragma: no cover
    Example = None
    WRITER = "hand-encoded protobuf"


def example(features):
    """A serialised tf.train.Example of features: {name: (kind, [values])}, kind one of "bytes",
    "float", "int64"."""
    if Example is None:  # pragma: no cover
        return _hand_example(features)
    ex = Example()
    for name, (kind, values) in features.items():
        f = ex.features.feature[name]
        getattr(f, {"bytes": "bytes_list", "float": "float_list", "int64": "int64_list"}[kind]
                ).value.extend(values)
    return ex.SerializeToString()


def write(path, records):
    """Writes the records (each a dict as example() takes) to a TFRecord file; returns the
    frames' (offset, length)."""
    spans = []
    with open(path, "wb") as f:
        for r in records:
            data = frame(example(r))
            spans.append((f.tell(), len(data)))
            f.write(data)
    return spans


def dali_index(path):
    """What DALI's tfrecord2idx writes for path: "offset length" per record, walking the length
    fields only."""
    lines = []
    with open(path, "rb") as f:
        while True:
            cur = f.tell()
            n = f.read(8)
            if not n:
                break
            f.read(4)
            f.read(struct.unpack("<q", n)[0])
            f.read(4)
            lines.append("%d %d\n" % (cur, f.tell() - cur))
    return "".join(lines)
