/* The reader operators (readers.caffe2, readers.caffe, ...), listed for the op table. */
#include "ops/op.h"

#include <stddef.h>

const sl__op_def *const sl__reader_ops[] = {NULL};
