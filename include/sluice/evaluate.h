/* SPDX-License-Identifier: Apache-2.0 */
/* What a training loop over an iterator needs besides the trainer: class ids made one-hot for
 * the trainer's loss (sl_onehot), and a model's accuracy over a validation iterator, each sample
 * scored once (sl_evaluate_accuracy). `sluice train` uses both, as the seed's model.py does:
 *
 *     sl_onehot *oh;
 *     sl_onehot_create(10, &oh, &err);                   // 10 classes
 *     ... per step, per replica k: class ids y[k] (B,) -> (B, 10) f32 on the replica's device
 *     sl_onehot_make(oh, b, k, &y[k], x[k].device, &y[k], &err);
 *     sl_onehot_next(oh);                                 // the next step's buffers
 *     ... after each epoch:
 *     sl_evaluate_accuracy(sl_trainer_model(t, 0), val, NULL, 784, &accuracy, &err);
 */
#ifndef SLUICE_EVALUATE_H
#define SLUICE_EVALUATE_H

#include "sluice/iterator.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "sluice/train.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One-hot labels for up to SL_MAX_DEVICES replicas, each in a ring of SL_ONEHOT_RING buffers on
 * its device: a step the trainer has queued (sl_trainer_step_async) still reads the ring's
 * previous ones. */
#define SL_ONEHOT_RING 4
typedef struct sl_onehot sl_onehot;

/* classes >= 1 (the one-hot width). */
sl_status sl_onehot_create(int64_t classes, sl_onehot **out, sl_err *err);
void sl_onehot_free(sl_onehot *oh);
int64_t sl_onehot_classes(const sl_onehot *oh);
/* Class ids (B,) or (B, 1) of an integer type, on any device, as one-hot (B, classes) f32 on dev
 * in replica k's current buffer (*out: a view of it, valid until the ring comes round again). An
 * id outside 0..classes-1 is SL_EINVAL naming the sample's record key in b (device k's part;
 * b NULL: its row). */
sl_status sl_onehot_make(sl_onehot *oh, const sl_iter_batch *b, int k, const sl_tensor *ids,
                         sl_device dev, sl_tensor *out, sl_err *err);
/* The next step: every replica's next buffer. */
void sl_onehot_next(sl_onehot *oh);

/* The accuracy of m over an epoch of val (one device; outputs 0, the images, as (B, inputs)
 * f32 or any shape of that many values per sample, and 1, the labels: class ids or one-hot):
 * correct / samples scored, each sample once -- the last batch's padding, which the iterator
 * reports through sl_iter_batch_valid under SL_LAST_BATCH_PARTIAL, is not scored. first: NULL,
 * or a batch of this epoch already taken (its shapes looked at), scored first and set to NULL.
 * val is reset after the epoch. */
sl_status sl_evaluate_accuracy(sl_mlp *m, sl_iter *val, const sl_iter_batch **first, int64_t inputs,
                               double *accuracy, sl_err *err);
/* The model's view of a batch's images: (B, inputs), no copy (an iterator's outputs are dense). */
sl_status sl_evaluate_flat(const sl_tensor *images, int64_t inputs, sl_tensor *out, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
