# SPDX-License-Identifier: Apache-2.0
"""plugin.pytorch.DALIRaggedIterator (DALI's): a detection-style batch of images (dense), boxes
(a different count per image: a list of tensors) and labels (a sparse COO tensor), compared with
the arrays fed, over an epoch of 5 samples in batches of 2 with LastBatchPolicy.PARTIAL; a COO
output of 2-D samples (a hybrid tensor, rows dense); output_types that are not tags refused."""

import numpy as np
import pytest
import torch

import sluice
import sluice.fn as fn
from sluice.plugin.pytorch import DALIRaggedIterator, LastBatchPolicy

COUNTS = (1, 3, 2, 2, 1)
BOXES = [np.arange(4 * n, dtype=np.float32).reshape(n, 4) + 100 * k for k, n in enumerate(COUNTS)]
LABELS = [np.arange(n, dtype=np.int32) + 10 * k for k, n in enumerate(COUNTS)]
IMAGES = [np.full((2, 3), k, np.uint8) for k in range(5)]


def batches(arrs):
    """the epoch in batches of 2, the last one short (then the source starts over)"""
    return [arrs[0:2], arrs[2:4], arrs[4:5] + arrs[0:1]]


@sluice.pipeline_def(batch_size=2, num_threads=1, device_id=None)
def detection():
    return tuple(fn.external_source(source=batches(a), cycle=True) for a in (IMAGES, BOXES, LABELS))


def iterator(types):
    return DALIRaggedIterator(detection(), ["images", "boxes", "labels"], size=5,
                              output_types=types, last_batch_policy=LastBatchPolicy.PARTIAL,
                              auto_reset=True)


def test_dense_list_and_coo_outputs():
    R = DALIRaggedIterator
    it = iterator([R.DENSE_TAG, R.SPARSE_LIST_TAG, R.SPARSE_COO_TAG])
    for epoch in range(2):
        seen = 0
        for (b,) in it:
            n = b["images"].shape[0]
            np.testing.assert_array_equal(b["images"].numpy(), np.stack(IMAGES[seen:seen + n]))
            assert isinstance(b["boxes"], list) and len(b["boxes"]) == n
            for k, x in enumerate(b["boxes"]):
                np.testing.assert_array_equal(x.numpy(), BOXES[seen + k])
            coo = b["labels"].coalesce()
            assert coo.is_sparse and coo.shape == (n, max(COUNTS[seen:seen + n]))
            for k in range(n):
                np.testing.assert_array_equal(coo.to_dense()[k, :COUNTS[seen + k]].numpy(),
                                              LABELS[seen + k])
            seen += n
        assert seen == 5


def test_coo_of_2d_samples_keeps_rows_dense():
    R = DALIRaggedIterator
    it = iterator([R.DENSE_TAG, R.SPARSE_COO_TAG, R.SPARSE_LIST_TAG])
    (b,) = next(it)
    dense = b["boxes"].to_dense()
    assert dense.shape == (2, 3, 4)
    np.testing.assert_array_equal(dense[0, :1].numpy(), BOXES[0])
    np.testing.assert_array_equal(dense[1].numpy(), BOXES[1])
    assert not dense[0, 1:].any()


def test_without_output_types_every_output_is_dense():
    it = DALIRaggedIterator(detection(), ["images", "boxes", "labels"], size=5)
    with pytest.raises(sluice.errors.Error, match=r"'boxes' has samples of different shapes"):
        next(it)


def test_output_types_must_be_tags():
    with pytest.raises(sluice.errors.Error, match=r"one tag per output.*\['dense', 'list'\]"):
        DALIRaggedIterator(detection(), ["images", "boxes"], output_types=["dense", "list"])
