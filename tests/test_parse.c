/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser, layer one (text -> program; no operator table): the seed's three
 * pipeline files parse to the expected statements and decorator settings; binding rules; the
 * accepted syntax; errors with exact line, column and caret; and every truncation and many random
 * mutations of the seed files fail cleanly or parse (run under ASan by `make check`). */
#include "check.h"
#include "text/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line per statement, then the outputs:
 *   op decoders.image(0) device=mixed -> 2 | output_type=GRAY
 *   gpu(1) -> 5
 *   return images=4 labels=6 */
static const char *dump(const sl__parse_prog *prog) {
    static char out[8192];
    size_t n = 0;
    out[0] = '\0';
#define ADD(...) n += (size_t)snprintf(out + n, sizeof out - n, __VA_ARGS__)
    for (int i = 0; i < prog->num_stmts && n < sizeof out; i++) {
        const sl__parse_stmt *s = &prog->stmts[i];
        if (s->kind == SL__PARSE_TRANSFER) {
            ADD("%s(%d) -> %d\n", s->op, s->inputs[0], s->first_output);
            continue;
        }
        ADD("op %s(", s->op);
        for (int k = 0; k < s->num_inputs; k++) ADD("%s%d", k ? "," : "", s->inputs[k]);
        ADD(")");
        if (s->device[0]) ADD(" device=%s", s->device);
        ADD(" ->");
        for (int k = 0; k < s->num_outputs; k++) ADD(" %d", s->first_output + k);
        if (s->num_args) ADD(" |");
        for (int k = 0; k < s->num_args; k++) {
            char v[256];
            sl_err e;
            if (s->args[k].val.kind == SL_VAL_NODE)
                snprintf(v, sizeof v, "<%d>", s->args[k].val.node);
            else if (sl__parse_format_val(&s->args[k].val, v, sizeof v, &e))
                snprintf(v, sizeof v, "?");
            ADD(" %s=%s", s->args[k].name, v);
        }
        ADD("\n");
    }
    ADD("return");
    for (int k = 0; k < prog->num_outputs; k++)
        ADD(" %s=%d", prog->output_names[k], prog->outputs[k]);
#undef ADD
    return out;
}

static const sl_pipeline_bind seed_binds[] = {
    {"image_size", "28"}, {"num_classes", "10"}, {"data_path", "data/training"},
    {"num_shards", "2"},  {"shard_id", "1"},
};

static const char *const training_dump =
    "op readers.caffe2() -> 0 1 | path=\"data/training\" random_shuffle=True "
    "name=\"mnist_caffe2_reader\" num_shards=2 shard_id=1\n"
    "op decoders.image(0) device=mixed -> 2 | output_type=GRAY\n"
    "op crop_mirror_normalize(2) -> 3 | dtype=FLOAT std=[255.0] output_layout=\"CHW\"\n"
    "op reshape(3) -> 4 | shape=[784]\n"
    "gpu(1) -> 5\n"
    "op one_hot(5) -> 6 | num_classes=10\n"
    "return images=4 labels=6";

static const char *const validation_dump =
    "op readers.caffe2() -> 0 1 | path=\"data/training\" random_shuffle=False "
    "name=\"mnist_caffe2_reader\"\n"
    "op decoders.image(0) device=mixed -> 2 | output_type=GRAY\n"
    "op crop_mirror_normalize(2) -> 3 | dtype=FLOAT std=[255.0] output_layout=\"CHW\"\n"
    "op reshape(3) -> 4 | shape=[784]\n"
    "gpu(1) -> 5\n"
    "return images=4 labels=5";

static void test_seed_files(void) {
    const char *files[3] = {"seed_training_sharding.py", "seed_training_devices.py",
                            "seed_validation.py"};
    for (int f = 0; f < 3; f++) {
        char *text = check_read_text(tool_pipeline(files[f]));
        CHECK_MSG(text != NULL, "cannot read %s", tool_pipeline(files[f]));
        if (!text) continue;
        sl__parse_prog *prog = NULL;
        sl_err e;
        CHECK_OK(sl__parse_program(text, "seed.py", 5, seed_binds, &prog, &e), &e);
        if (prog) {
            CHECK_STR(dump(prog), f < 2 ? training_dump : validation_dump);
            const sl_pipeline_decorator *d = &prog->deco;
            CHECK(d->present);
            CHECK_STR(d->func_name,
                      f < 2 ? "mnist_training_iterator" : "mnist_validation_iterator");
            CHECK_EQ_INT(d->num_outputs, 2);
            CHECK_STR(d->output_map[0], "images");
            CHECK_STR(d->output_map[1], "labels");
            CHECK_STR(d->reader_name, "mnist_caffe2_reader");
            CHECK_EQ_INT(d->layout, f == 0   ? SL_LAYOUT_SHARDED
                                    : f == 1 ? SL_LAYOUT_STACKED
                                             : SL_LAYOUT_NONE);
            CHECK_EQ_INT(d->size, -1);
            CHECK_EQ_INT(d->last_batch_policy, SL_LAST_BATCH_FILL);
            CHECK(!d->last_batch_padded && d->prepare_first_batch && !d->auto_reset);
            CHECK_EQ_INT(d->num_params, f < 2 ? 3 : 1);
            CHECK_STR(d->params[0], "data_path");
            if (f < 2) CHECK_STR(d->params[2], "shard_id");
            CHECK_EQ_INT(d->batch_size, -1);
            CHECK_EQ_INT(d->seed, -1);
            /* positions: the decoder call is on line 14 (training) / 8 (validation), column 14 */
            CHECK_EQ_INT(prog->stmts[1].pos.line, f < 2 ? 14 : 8);
            CHECK_EQ_INT(prog->stmts[1].pos.col, 14);
            CHECK_STR(prog->stmts[1].written, "fn.decoders.image");
        }
        sl__parse_prog_free(prog);

        /* the header alone, through the public call, needs no binds */
        sl_pipeline_decorator d;
        CHECK_OK(sl_pipeline_text_decorator(text, "seed.py", &d, &e), &e);
        CHECK(d.present);
        CHECK_EQ_INT(d.num_outputs, 2);
        CHECK_STR(d.output_map[1], "labels");
        CHECK_EQ_INT(d.layout, f == 0   ? SL_LAYOUT_SHARDED
                               : f == 1 ? SL_LAYOUT_STACKED
                                        : SL_LAYOUT_NONE);
        CHECK_EQ_INT(d.num_params, f < 2 ? 3 : 1);
        sl_pipeline_decorator_clear(&d);

        /* without data_path bound: the parameter is named */
        CHECK_FAILS(sl__parse_program(text, "seed.py", 2, seed_binds, &prog, &e), SL_EINVAL, &e,
                    "parameter 'data_path' is not bound; pass --arg data_path=VALUE");
        CHECK(prog == NULL);
        /* without image_size: a free name */
        sl_pipeline_bind no_size[4] = {seed_binds[1], seed_binds[2], seed_binds[3], seed_binds[4]};
        CHECK_FAILS(sl__parse_program(text, "seed.py", 4, no_size, &prog, &e), SL_EINVAL, &e,
                    "name 'image_size' is not defined");
        free(text);
    }
}

/* Parses text with binds "a=1"-style strings; returns the dump or the error message. */
static const char *try_parse(const char *text, int nbind, const sl_pipeline_bind *binds,
                             sl_status *st_out) {
    static char msg[SL_ERRMSG_MAX + 16];
    sl__parse_prog *prog = NULL;
    sl_err e;
    sl_status st = sl__parse_program(text, "t.py", nbind, binds, &prog, &e);
    if (st_out) *st_out = st;
    if (st != SL_OK) {
        snprintf(msg, sizeof msg, "%s", e.msg);
        return msg;
    }
    snprintf(msg, sizeof msg, "%s", dump(prog));
    sl__parse_prog_free(prog);
    return msg;
}

#define PARSES(text, want)                                                                         \
    do {                                                                                           \
        sl_status st_;                                                                             \
        const char *got_ = try_parse(text, 0, NULL, &st_);                                         \
        CHECK_MSG(st_ == SL_OK, "%s", got_);                                                       \
        CHECK_STR(got_, want);                                                                     \
    } while (0)

#define FAILS(text, status, want)                                                                  \
    do {                                                                                           \
        sl_status st_;                                                                             \
        const char *got_ = try_parse(text, 0, NULL, &st_);                                         \
        CHECK_MSG(st_ == (status), "got %s: %s", sl_status_name(st_), got_);                       \
        CHECK_STR(got_, want);                                                                     \
    } while (0)

static void test_syntax(void) {
    /* no decorator, no def: statements and return; imports ignored; names from the return line */
    PARSES("from nvidia.dali import fn, types\n"
           "import nvidia.dali.types as types\n"
           "\n"
           "# a comment\n"
           "jpegs, labels = fn.readers.caffe2(path='/x')  # trailing comment\n"
           "images = fn.decoders.image(jpegs, device='cpu')\n"
           "return images, labels\n",
           "op readers.caffe2() -> 0 1 | path=\"/x\"\n"
           "op decoders.image(0) device=cpu -> 2\n"
           "return images=2 labels=1");
    /* nested calls and inline .gpu(), per-sample argument inputs, return [a, b], dali.fn prefix */
    PARSES("@pipeline_def\n"
           "def p():\n"
           "    x = dali.fn.readers.caffe2(path=\"p\")\n"
           "    coin = fn.random.coin_flip(probability=0.5)\n"
           "    y = fn.one_hot(x.gpu(), num_classes=2 * 5)\n"
           "    z = fn.flip(fn.cast(y, dtype=types.DALIDataType.FLOAT), horizontal=coin)\n"
           "    return [y, z]\n",
           "op readers.caffe2() -> 0 | path=\"p\"\n"
           "op random.coin_flip() -> 1 | probability=0.5\n"
           "gpu(0) -> 2\n"
           "op one_hot(2) -> 3 | num_classes=10\n"
           "op cast(3) -> 4 | dtype=FLOAT\n"
           "op flip(4) -> 5 | horizontal=<1>\n"
           "return y=3 z=5");
    /* arithmetic: Python semantics; values: None, bools, tuples, nested lists, strings */
    PARSES(
        "x = fn.readers.caffe2(a=7 // 2, b=-7 // 2, c=7 / 2, d=-7 % 3, e=2 ** 10, f=(1 + 2) * -3,"
        " g=1.5 * 2, h=None, i=(1, 2.5), j=[[1], []], k='a' 'b' + \"c\", l=True, m=.5e1,"
        " n=0x10, o=2 ** -1, p=1_000, q=7.5 // 2, r=-7.5 % 2)\n"
        "return x\n",
        "op readers.caffe2() -> 0 | a=3 b=-4 c=3.5 d=2 e=1024 f=-9 g=3.0 h=None i=[1, 2.5] "
        "j=[[1], []] k=\"abc\" l=True m=5.0 n=16 o=0.5 p=1000 q=3.0 r=0.5\n"
        "return x=0");
    /* implicit line joining, backslash continuation, tabs, CRLF, docstring, pass, annotations,
     * defaults, .cpu() */
    PARSES("def f(a: int = 3, b=[1, 2]) -> None:\r\n"
           "\t\"\"\"Doc\r\n  string.\"\"\"\r\n"
           "\tpass\r\n"
           "\tx = fn.readers.caffe2(\r\n"
           "\t\tpath='p',   # comment inside brackets\r\n"
           "\r\n"
           "\t\tn=a * \\\r\n"
           "\t\t  2, l=b)\r\n"
           "\ty = x.gpu().cpu()\r\n"
           "\treturn (y)\r\n",
           "op readers.caffe2() -> 0 | path=\"p\" n=6 l=[1, 2]\n"
           "gpu(0) -> 1\n"
           "cpu(1) -> 2\n"
           "return y=2");
    /* constants: module-level defaults, local constants, tuple assignment, rebinding */
    PARSES("size = 4\n"
           "def f():\n"
           "    half = size // 2\n"
           "    a, b = 1, half\n"
           "    x = fn.readers.caffe2(n=a + b)\n"
           "    x = fn.reshape(x, shape=[size, half])\n"
           "    return x\n",
           "op readers.caffe2() -> 0 | n=3\n"
           "op reshape(0) -> 1 | shape=[4, 2]\n"
           "return x=1");
    /* a bound value wins over a module-level constant; binds read as literals, else strings */
    sl_pipeline_bind b[6] = {{"size", "8"},        {"path", "data/training"}, {"mode", "GRAY"},
                             {"t", "types.UINT8"}, {"l", "[1, 2.5]"},         {"q", "'quoted'"}};
    sl_status st;
    CHECK_STR(try_parse("size = 4\n"
                        "x = fn.readers.caffe2(n=size, path=path, m=mode, t=t, l=l, q=q)\n"
                        "return x\n",
                        6, b, &st),
              "op readers.caffe2() -> 0 | n=8 path=\"data/training\" m=\"GRAY\" t=UINT8 "
              "l=[1, 2.5] q=\"quoted\"\n"
              "return x=0");
    /* string formatting round trip: quotes inside strings */
    PARSES("x = fn.readers.caffe2(a='say \"hi\"', b=\"it's\", c='tab\\there')\nreturn x\n",
           "op readers.caffe2() -> 0 | a='say \"hi\"' b=\"it's\" c=\"tab\there\"\n"
           "return x=0");
    /* decorator settings */
    sl_pipeline_decorator d;
    sl_err e;
    CHECK_OK(sl_pipeline_text_decorator(
                 "import jax\n"
                 "@nvidia.dali.plugin.jax.data_iterator(output_map=('a',), size=100 * 6,\n"
                 "    last_batch_policy=LastBatchPolicy.DROP, last_batch_padded=True,\n"
                 "    prepare_first_batch=False, auto_reset='yes', batch_size=200,\n"
                 "    num_threads=4, seed=-3, device_id=0, sharding=None, devices=jax.devices())\n"
                 "def it(x, y=2):\n"
                 "    if this_is_not_read: pass\n",
                 "d.py", &d, &e),
             &e);
    CHECK(d.present);
    CHECK_STR(d.func_name, "it");
    CHECK_EQ_INT(d.num_outputs, 1);
    CHECK_STR(d.output_map[0], "a");
    CHECK_EQ_INT(d.size, 600);
    CHECK_EQ_INT(d.last_batch_policy, SL_LAST_BATCH_DROP);
    CHECK(d.last_batch_padded && !d.prepare_first_batch && d.auto_reset);
    CHECK_EQ_INT(d.batch_size, 200);
    CHECK_EQ_INT(d.num_threads, 4);
    CHECK_EQ_INT(d.seed, -3);
    CHECK_EQ_INT(d.layout, SL_LAYOUT_STACKED);
    CHECK_EQ_INT(d.num_params, 2);
    CHECK_STR(d.params[1], "y");
    sl_pipeline_decorator_clear(&d);
    CHECK_OK(sl_pipeline_text_decorator("@pipeline_def\ndef f(): pass\n", "d.py", &d, &e), &e);
    CHECK(d.present && d.num_outputs == 0 && d.layout == SL_LAYOUT_NONE);
    CHECK_OK(sl_pipeline_text_decorator("x = fn.readers.caffe2()\nreturn x\n", "d.py", &d, &e), &e);
    CHECK(!d.present && d.func_name[0] == '\0');
    CHECK_OK(sl_pipeline_text_decorator("@data_iterator(last_batch_policy='PARTIAL', "
                                        "auto_reset=False)\ndef f(): pass\n",
                                        "d.py", &d, &e),
             &e);
    CHECK_EQ_INT(d.last_batch_policy, SL_LAST_BATCH_PARTIAL);
    CHECK(!d.auto_reset);
    /* output names: output_map wins over the return line */
    PARSES("@data_iterator(output_map=['img'])\n"
           "def f():\n"
           "    x = fn.readers.caffe2()\n"
           "    return fn.cast(x)\n",
           "op readers.caffe2() -> 0\n"
           "op cast(0) -> 1\n"
           "return img=1");
}

static void test_errors(void) {
    /* the documented error shape: message, echoed line, caret under the spot */
    FAILS("def f(data_path):\n"
          "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
          "    return jpegs\n",
          SL_EINVAL,
          "t.py:2:44: error: parameter 'data_path' is not bound; pass --arg data_path=VALUE\n"
          "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
          "                                           ^");
    /* bad indentation */
    FAILS("def f():\n"
          "    x = fn.readers.caffe2()\n"
          "      y = fn.cast(x)\n"
          "    return y\n",
          SL_ESYNTAX,
          "t.py:3:7: error: unexpected indent\n"
          "      y = fn.cast(x)\n"
          "      ^");
    FAILS("def f():\n"
          "    x = fn.readers.caffe2()\n"
          "  return x\n",
          SL_ESYNTAX,
          "t.py:3:3: error: unindent does not match any outer indentation level\n"
          "  return x\n"
          "  ^");
    FAILS("def f():\n"
          "x = fn.readers.caffe2()\n",
          SL_ESYNTAX,
          "t.py:2:1: error: expected an indented block after the def line\n"
          "x = fn.readers.caffe2()\n"
          "^");
    /* unclosed paren: points at the opening bracket */
    FAILS("def f():\n"
          "    x = fn.readers.caffe2(path='p'\n"
          "    return x\n",
          SL_ESYNTAX,
          "t.py:2:26: error: '(' was never closed\n"
          "    x = fn.readers.caffe2(path='p'\n"
          "                         ^");
    FAILS("x = fn.cast(y]\n", SL_ESYNTAX,
          "t.py:1:14: error: closing ']' does not match opening '(' on line 1, column 12\n"
          "x = fn.cast(y]\n"
          "             ^");
    /* unbound / undefined names, with suggestions */
    FAILS("def f():\n"
          "    images = fn.readers.caffe2()\n"
          "    return imagse\n",
          SL_EINVAL,
          "t.py:3:12: error: name 'imagse' is not defined; did you mean 'images'?\n"
          "    return imagse\n"
          "           ^");
    FAILS("x = fn.reshape(fn.readers.caffe2(), shape=[image_size * image_size])\nreturn x\n",
          SL_EINVAL,
          "t.py:1:44: error: name 'image_size' is not defined; bind it with --arg "
          "image_size=VALUE\n"
          "x = fn.reshape(fn.readers.caffe2(), shape=[image_size * image_size])\n"
          "                                           ^");
    /* unsupported syntax */
    FAILS("def f():\n"
          "    x = fn.readers.caffe2()\n"
          "    if x:\n"
          "        x = fn.cast(x)\n"
          "    return x\n",
          SL_EINVAL,
          "t.py:3:8: error: 'if' on an op output: a condition on data needs "
          "@pipeline_def(enable_conditionals=True), as in DALI\n"
          "    if x:\n"
          "       ^");
    FAILS("x = fn.python_function(fn.readers.caffe2(), function=lambda s: s)\n", SL_ESYNTAX,
          "t.py:1:54: error: lambda is not supported in a pipeline\n"
          "x = fn.python_function(fn.readers.caffe2(), function=lambda s: s)\n"
          "                                                     ^");
    FAILS("x = fn.readers.caffe2(path=\"data/train)\nreturn x\n", SL_ESYNTAX,
          "t.py:1:28: error: unterminated string literal\n"
          "x = fn.readers.caffe2(path=\"data/train)\n"
          "                           ^");
    FAILS("x = fn.readers.caffe2(n=1 if a else 2)\n", SL_EINVAL,
          "t.py:1:30: error: name 'a' is not defined; bind it with --arg a=VALUE\n"
          "x = fn.readers.caffe2(n=1 if a else 2)\n"
          "                             ^");
    FAILS("x = fn.readers.caffe2()\ny = x @ 2\nreturn y\n", SL_ESYNTAX,
          "t.py:2:7: error: unsupported operator '@' in a pipeline\n"
          "y = x @ 2\n"
          "      ^");
    /* subscripts of op outputs: DALI's tensor indexing, a tensor_subscript op */
    PARSES("x = fn.readers.caffe2()\nreturn x[1:, -2, ::-3], x[:4][0]\n",
           "op readers.caffe2() -> 0\n"
           "op tensor_subscript(0) -> 1 | mode=[2, 4, 3] lo=[1, -2, 0] hi=[0, 0, 0] "
           "step=[1, 1, -3]\n"
           "op tensor_subscript(0) -> 2 | mode=[1] lo=[0] hi=[4] step=[1]\n"
           "op tensor_subscript(2) -> 3 | mode=[4] lo=[0] hi=[0] step=[1]\n"
           "return out0=1 out1=3");
    /* op outputs as indices, bounds and steps (DALI's runtime indexing): argument inputs at_d,
     * lo_d, hi_d, step_d of the entry, over the constants' placeholders */
    PARSES("x = fn.readers.caffe2()\nn = fn.random.uniform(values=[1, 2])\n"
           "return x[n:, :n, ::n, 1], x[n, n - 1:-1:-n]\n",
           "op readers.caffe2() -> 0\n"
           "op random.uniform() -> 1 | values=[1, 2]\n"
           "op tensor_subscript(0) -> 2 | mode=[2, 1, 3, 4] lo=[0, 0, 0, 1] hi=[0, 0, 0, 0] "
           "step=[1, 1, 1, 1] lo_0=<1> hi_1=<1> step_2=<1>\n"
           "op arithmetic(1) -> 3 | op=\"sub\" constant=1 constant_type=\"int32\" "
           "constant_left=False\n"
           "op arithmetic(1) -> 4 | op=\"minus\"\n"
           "op tensor_subscript(0) -> 5 | mode=[4, 0] lo=[0, 0] hi=[0, -1] step=[1, 1] at_0=<1> "
           "lo_1=<3> step_1=<4>\n"
           "return out0=2 out1=5");
    FAILS("x = fn.readers.caffe2()\nreturn x[]\n", SL_ESYNTAX,
          "t.py:2:10: error: an empty subscript\n"
          "return x[]\n"
          "         ^");
    FAILS("x = fn.readers.caffe2()\nreturn x[::0]\n", SL_EINVAL,
          "t.py:2:12: error: a slice's step cannot be 0 (Step cannot be zero)\n"
          "return x[::0]\n"
          "           ^");
    FAILS("x = fn.readers.caffe2()\nreturn x[0.5]\n", SL_EINVAL,
          "t.py:2:10: error: an op output's subscripts are ints, op outputs and slices of them, "
          "newaxis or ...\n"
          "return x[0.5]\n"
          "         ^");
    /* new dims (DALI's newaxis, None; a named one) and an ellipsis */
    PARSES(
        "x = fn.readers.caffe2()\nreturn x[dali.newaxis, ..., None, 0], x[sluice.newaxis(\"F\")]\n",
        "op readers.caffe2() -> 0\n"
        "op tensor_subscript(0) -> 1 | mode=[16, 32, 16, 4] lo=[0, 0, 0, 0] hi=[0, 0, 0, 0] "
        "step=[1, 1, 1, 1]\n"
        "op tensor_subscript(0) -> 2 | mode=[16] lo=[0] hi=[0] step=[1] names=\"F\"\n"
        "return out0=1 out1=2");
    FAILS("x = fn.readers.caffe2()\nreturn x[..., 0, ...]\n", SL_EINVAL,
          "t.py:2:18: error: an index can only have a single ellipsis ('...')\n"
          "return x[..., 0, ...]\n"
          "                 ^");
    FAILS("x = fn.readers.caffe2()\nreturn x[dali.newaxis(\"FH\")]\n", SL_EINVAL,
          "t.py:2:10: error: newaxis takes one layout letter for the new dim: "
          "dali.newaxis(\"F\")\n"
          "return x[dali.newaxis(\"FH\")]\n"
          "         ^");
    FAILS("x = fn.readers.caffe2(n=[1, 2][0:1])\n", SL_EINVAL,
          "t.py:1:31: error: slices and several subscripts are for op outputs (DALI's tensor "
          "indexing), not list\n"
          "x = fn.readers.caffe2(n=[1, 2][0:1])\n"
          "                              ^");
    FAILS("d = {'a': 1}\nx = fn.readers.caffe2(n=d['b'])\n", SL_EINVAL,
          "t.py:2:27: error: no key 'b' in the dict (its keys: 'a')\n"
          "x = fn.readers.caffe2(n=d['b'])\n"
          "                          ^");
    FAILS("x = fn.readers.caffe2(n=1 / 0)\n", SL_EINVAL,
          "t.py:1:27: error: division by zero\n"
          "x = fn.readers.caffe2(n=1 / 0)\n"
          "                          ^");
    FAILS("x = fn.readers.caffe2(device='tpu')\n", SL_EINVAL,
          "t.py:1:30: error: device must be \"cpu\", \"mixed\" or \"gpu\"\n"
          "x = fn.readers.caffe2(device='tpu')\n"
          "                             ^");
    FAILS("x = fn.readers.caffe2(a=1, a=2)\n", SL_ESYNTAX,
          "t.py:1:28: error: keyword argument repeated: a\n"
          "x = fn.readers.caffe2(a=1, a=2)\n"
          "                           ^");
    FAILS("x = fn.readers.caffe2(a=1, 2)\n", SL_ESYNTAX,
          "t.py:1:28: error: positional argument follows keyword argument\n"
          "x = fn.readers.caffe2(a=1, 2)\n"
          "                           ^");
    FAILS("x = fn.cast(3)\n", SL_EINVAL,
          "t.py:1:13: error: input 0 of fn.cast must be an op output; constants are not supported "
          "as inputs\n"
          "x = fn.cast(3)\n"
          "            ^");
    FAILS("x = fn.readers.caffe2()\nfn.cast(x)\nreturn x\n", SL_ESYNTAX,
          "t.py:2:1: error: expected an assignment (name = fn.op(...)); a bare expression's value "
          "would be lost\n"
          "fn.cast(x)\n"
          "^");
    FAILS("x = fn.readers.caffe2()\nreturn x\ny = x\n", SL_ESYNTAX,
          "t.py:3:1: error: statement after return\n"
          "y = x\n"
          "^");
    FAILS("def f():\n    x = fn.readers.caffe2()\n", SL_EINVAL,
          "t.py:1:5: error: pipeline function 'f' does not return its outputs (return a, b)\n"
          "def f():\n"
          "    ^");
    FAILS("x = fn.readers.caffe2()\n", SL_EINVAL,
          "t.py:1:24: error: the pipeline has no return statement\n"
          "x = fn.readers.caffe2()\n"
          "                       ^");
    FAILS("", SL_EINVAL, "t.py:1:1: error: no pipeline here: expected a def or op calls\n\n^");
    FAILS("@data_iterator(output_map=['a', 'b'])\n"
          "def f():\n"
          "    x = fn.readers.caffe2()\n"
          "    return x\n",
          SL_EINVAL,
          "t.py:4:12: error: output_map names 2 outputs but the pipeline returns 1\n"
          "    return x\n"
          "           ^");
    FAILS("@data_iterator(sharding=s, devices=d)\ndef f():\n    pass\n", SL_EINVAL,
          "t.py:1:28: error: only one of 'sharding' and 'devices' can be given\n"
          "@data_iterator(sharding=s, devices=d)\n"
          "                           ^");
    FAILS("@pipeline(batch_size=1)\ndef f():\n    pass\n", SL_EINVAL,
          "t.py:1:2: error: unknown decorator '@pipeline'; expected @data_iterator(...) or "
          "@pipeline_def(...)\n"
          "@pipeline(batch_size=1)\n"
          " ^");
    FAILS("x = fn.readers.caffe2()\ny = x.shape\nreturn x\n", SL_EINVAL,
          "t.py:2:7: error: unsupported attribute '.shape': only types.* and tfrec.* constants can "
          "be used here\n"
          "y = x.shape\n"
          "      ^");
    FAILS("x = fn.readers.caffe2(n=abs(a))\n", SL_EINVAL,
          "t.py:1:25: error: unsupported call 'abs(...)': only fn.<operator>(...), "
          ".gpu()/.cpu(), range(), len() and functions defined in the text can be called\n"
          "x = fn.readers.caffe2(n=abs(a))\n"
          "                        ^");
    FAILS("a, b = fn.readers.caffe2().gpu()\n", SL_EINVAL,
          "t.py:1:8: error: .gpu() gives one value, not 2\n"
          "a, b = fn.readers.caffe2().gpu()\n"
          "       ^");
    FAILS("x = fn.readers.caffe2(n=f\"{a}\")\n", SL_ESYNTAX,
          "t.py:1:25: error: f-strings are not supported in a pipeline\n"
          "x = fn.readers.caffe2(n=f\"{a}\")\n"
          "                        ^");
    FAILS("x = fn.readers.caffe2(n=9223372036854775807 + 1)\n", SL_EINVAL,
          "t.py:1:45: error: integer overflow in '+'\n"
          "x = fn.readers.caffe2(n=9223372036854775807 + 1)\n"
          "                                            ^");
    FAILS("x = fn.readers.caffe2(n=3 @ 3)\n", SL_ESYNTAX,
          "t.py:1:27: error: unsupported operator '@' in a pipeline\n"
          "x = fn.readers.caffe2(n=3 @ 3)\n"
          "                          ^");
    FAILS("x = fn.readers.caffe2() $\n", SL_ESYNTAX,
          "t.py:1:25: error: unexpected character '$'\n"
          "x = fn.readers.caffe2() $\n"
          "                        ^");
    FAILS("while y:\n    pass\n", SL_ESYNTAX,
          "t.py:1:1: error: 'while' loops are not supported in a pipeline: a loop runs when the "
          "pipeline is built and needs a known bound (for ... in range(...))\n"
          "while y:\n"
          "^");
    FAILS("x = fn.readers.caffe2()\ndef f():\n    return x\n", SL_ESYNTAX,
          "t.py:1:1: error: op calls must be inside the pipeline function\n"
          "x = fn.readers.caffe2()\n"
          "^");
    FAILS("x = fn.readers.caffe2(n=types)\n", SL_EINVAL,
          "t.py:1:25: error: 'types' is a module, not a value\n"
          "x = fn.readers.caffe2(n=types)\n"
          "                        ^");
    FAILS("x = fn.readers.caffe2(n=3 +)\n", SL_ESYNTAX,
          "t.py:1:28: error: expected an expression, got ')'\n"
          "x = fn.readers.caffe2(n=3 +)\n"
          "                           ^");
    FAILS("x = fn.readers.caffe2(n=3\n", SL_ESYNTAX,
          "t.py:1:22: error: '(' was never closed\n"
          "x = fn.readers.caffe2(n=3\n"
          "                     ^");
    FAILS("x = fn.readers.caffe2(n=3 4)\n", SL_ESYNTAX,
          "t.py:1:27: error: expected ',' or ')' in the call, got a number\n"
          "x = fn.readers.caffe2(n=3 4)\n"
          "                          ^");
    FAILS("x += fn.readers.caffe2()\n", SL_ESYNTAX,
          "t.py:1:3: error: augmented assignment is not supported in a pipeline\n"
          "x += fn.readers.caffe2()\n"
          "  ^");

    /* a long line: the echoed line is trimmed around the spot and the whole fits */
    char longtext[4096];
    int n = snprintf(longtext, sizeof longtext, "x = fn.readers.caffe2(");
    for (int i = 0; i < 150; i++)
        n += snprintf(longtext + n, sizeof longtext - (size_t)n, "a%d=1, ", i);
    snprintf(longtext + n, sizeof longtext - (size_t)n, "z=undefined_name, b=2)\nreturn x\n");
    sl_status st;
    const char *msg = try_parse(longtext, 0, NULL, &st);
    CHECK_EQ_INT(st, SL_EINVAL);
    CHECK(strlen(msg) < SL_ERRMSG_MAX);
    CHECK(strstr(msg, "name 'undefined_name' is not defined") != NULL);
    const char *l2 = strchr(msg, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
    CHECK(l2 && l3);
    if (l2 && l3) { /* the caret sits under the 'u' of undefined_name */
        size_t caret = strlen(l3 + 1) - 1;
        CHECK(l3[1 + caret] == '^');
        CHECK(l2[1 + caret] == 'u' && !strncmp(l2 + 1 + caret, "undefined_name", 14));
        CHECK(!strncmp(l2 + 1, "...", 3));
    }
    /* a very long file name: still one message within bounds */
    char fname[600];
    memset(fname, 'f', sizeof fname - 1);
    fname[sizeof fname - 1] = '\0';
    sl__parse_prog *prog;
    sl_err e;
    CHECK_FAILS(sl__parse_program("x = y\n", fname, 0, NULL, &prog, &e), SL_EINVAL, &e, "fff");
    CHECK(strlen(e.msg) < SL_ERRMSG_MAX);
    CHECK_FAILS(sl__parse_program(NULL, "x", 0, NULL, &prog, &e), SL_EINVAL, &e, "no pipeline");
}

/* Every prefix of each seed file, and random mutations: no crash, no leak, OK or a clean error. */
static void test_robustness(void) {
    const char *files[3] = {"seed_training_sharding.py", "seed_training_devices.py",
                            "seed_validation.py"};
    uint64_t rng = 88172645463325252ull;
    int ok = 0, failed = 0;
    for (int f = 0; f < 3; f++) {
        char *text = check_read_text(tool_pipeline(files[f]));
        if (!text) continue;
        size_t len = strlen(text);
        char *buf = malloc(len + 64);
        for (size_t cut = 0; cut <= len; cut++) {
            memcpy(buf, text, cut);
            buf[cut] = '\0';
            sl__parse_prog *prog = NULL;
            sl_err e;
            sl_status st = sl__parse_program(buf, "seed.py", 5, seed_binds, &prog, &e);
            CHECK_MSG(st == SL_OK || st == SL_ESYNTAX || st == SL_EINVAL, "cut %zu: %s", cut,
                      sl_status_name(st));
            if (st == SL_OK) {
                ok++;
                CHECK(prog && prog->num_outputs > 0);
            } else {
                failed++;
                CHECK_MSG(!strncmp(e.msg, "seed.py:", 8) && strstr(e.msg, ": error: ") &&
                              strchr(e.msg, '^'),
                          "cut %zu: %s", cut, e.msg);
                CHECK(prog == NULL);
            }
            sl__parse_prog_free(prog);
            sl_pipeline_decorator d;
            (void)sl_pipeline_text_decorator(buf, "seed.py", &d, &e);
            sl_pipeline_decorator_clear(&d);
        }
        static const char junk[] = "()[]{},:.=+-*/%#'\"\\\n\t @x1_";
        for (int m = 0; m < 3000; m++) {
            memcpy(buf, text, len + 1);
            int edits = 1 + (int)(rng % 3);
            for (int k = 0; k < edits; k++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                size_t at = (size_t)(rng >> 8) % (strlen(buf) + 1);
                int what = (int)(rng % 3);
                size_t cur = strlen(buf);
                if (what == 0 && cur > 0 && at < cur) { /* delete */
                    memmove(buf + at, buf + at + 1, cur - at);
                } else if (what == 1 && at < cur) { /* replace */
                    buf[at] = junk[(rng >> 32) % (sizeof junk - 1)];
                } else if (cur + 1 < len + 64) { /* insert */
                    memmove(buf + at + 1, buf + at, cur - at + 1);
                    buf[at] = junk[(rng >> 32) % (sizeof junk - 1)];
                }
            }
            sl__parse_prog *prog = NULL;
            sl_err e;
            sl_status st = sl__parse_program(buf, "seed.py", 5, seed_binds, &prog, &e);
            CHECK_MSG(st == SL_OK || st == SL_ESYNTAX || st == SL_EINVAL, "%s: %s",
                      sl_status_name(st), buf);
            if (st != SL_OK)
                CHECK_MSG(strstr(e.msg, ": error: ") && strchr(e.msg, '^'), "%s", e.msg);
            sl__parse_prog_free(prog);
        }
        free(buf);
        free(text);
    }
    /* token soup: random sequences of pipeline fragments */
    static const char *const frags[] = {"fn.",
                                        "readers.caffe2",
                                        "decoders.image",
                                        "(",
                                        ")",
                                        "[",
                                        "]",
                                        ",",
                                        "=",
                                        "x",
                                        "y",
                                        "\n",
                                        "    ",
                                        "\t",
                                        "return",
                                        "def ",
                                        "@data_iterator",
                                        ":",
                                        "'s'",
                                        "\"t\"",
                                        "1",
                                        "2.5",
                                        "+",
                                        "*",
                                        "//",
                                        "-",
                                        "types.GRAY",
                                        ".gpu()",
                                        "#c\n",
                                        "\\\n",
                                        "\"\"\"",
                                        "if ",
                                        "lambda",
                                        "None",
                                        "True",
                                        " ",
                                        "data_path",
                                        "image_size",
                                        "**",
                                        "."};
    char soup[512];
    for (int m = 0; m < 20000; m++) {
        size_t n = 0;
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int count = 1 + (int)(rng % 40);
        for (int k = 0; k < count; k++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const char *f = frags[rng % (sizeof frags / sizeof frags[0])];
            size_t l = strlen(f);
            if (n + l + 1 > sizeof soup) break;
            memcpy(soup + n, f, l);
            n += l;
        }
        soup[n] = '\0';
        sl__parse_prog *prog = NULL;
        sl_err e;
        sl_status st = sl__parse_program(soup, "soup.py", 5, seed_binds, &prog, &e);
        CHECK_MSG(st == SL_OK || st == SL_ESYNTAX || st == SL_EINVAL, "%s: %s", sl_status_name(st),
                  soup);
        if (st != SL_OK)
            CHECK_MSG(strstr(e.msg, ": error: ") && strlen(e.msg) < SL_ERRMSG_MAX, "%s", e.msg);
        sl__parse_prog_free(prog);
        sl_pipeline_decorator d;
        (void)sl_pipeline_text_decorator(soup, "soup.py", &d, &e);
        sl_pipeline_decorator_clear(&d);
    }
    /* the whole files parse; most proper prefixes do not */
    CHECK(ok >= 3);
    CHECK(failed > 1000);
}

/* Layer two without any operator: an unknown op is pointed at in the text, in err and in the
 * pipeline's own message. */
static void test_apply_unknown_op(void) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&cfg, &p, &e), &e);
    if (!p) return;
    const char *want = "t.py:2:14: error: unknown operator 'fn.zzqqxx.not_an_op'";
    CHECK_FAILS(sl_pipeline_parse(p,
                                  "def f():\n"
                                  "    images = fn.zzqqxx.not_an_op(device='cpu')\n"
                                  "    return images\n",
                                  "t.py", 0, NULL, &e),
                SL_EINVAL, &e, want);
    CHECK(strstr(e.msg, "\n    images = fn.zzqqxx.not_an_op(device='cpu')\n             ^") !=
          NULL);
    CHECK_STR(sl_pipeline_errmsg(p), e.msg);
    /* layer-one errors come through unchanged */
    CHECK_FAILS(sl_pipeline_parse(p, "x = (\n", "t.py", 0, NULL, &e), SL_ESYNTAX, &e,
                "t.py:1:5: error: '(' was never closed");
    CHECK_EQ_INT(sl_pipeline_parse(p, "x = (\n", "t.py", 0, NULL, NULL), SL_ESYNTAX);
    sl_pipeline_free(p);
}

/* Python that is static when the pipeline is built: helper functions, for/if, conditional
 * expressions, comparisons and boolean operators on constants and bound values, unpacking,
 * dicts for ** arguments. */
static void test_static_python(void) {
    static const sl_pipeline_bind b[] = {{"data_path", "d"}, {"n", "2"}, {"mode", "b"}};
    sl_status st;
    /* helpers with positional and keyword arguments, defaults, a tuple return, a multi-output
     * op returned as is (the caller's unpacking counts its outputs) */
    const char *got = try_parse("def normalize(images, scale=255.0):\n"
                                "    return fn.crop_mirror_normalize(images, std=[scale])\n"
                                "\n"
                                "def read(path, shuffle):\n"
                                "    return fn.readers.caffe2(path=path, random_shuffle=shuffle)\n"
                                "\n"
                                "def decode(jpegs, labels):\n"
                                "    return fn.decoders.image(jpegs), labels.gpu()\n"
                                "\n"
                                "def pipe(data_path):\n"
                                "    jpegs, labels = read(data_path, shuffle=True)\n"
                                "    images, labels = decode(jpegs, labels=labels)\n"
                                "    images = normalize(images, scale=2.0)\n"
                                "    return images, labels\n",
                                1, b, &st);
    CHECK_MSG(st == SL_OK, "%s", got);
    CHECK_STR(got, "op readers.caffe2() -> 0 1 | path=\"d\" random_shuffle=True\n"
                   "op decoders.image(0) -> 2\n"
                   "gpu(1) -> 3\n"
                   "op crop_mirror_normalize(2) -> 4 | std=[2.0]\n"
                   "return images=4 labels=3");
    /* for over range() and a literal list, if/elif/else, a conditional expression, and/or/not,
     * comparisons (chained too) on bound values */
    got = try_parse("def pipe(n, mode):\n"
                    "    x = fn.readers.file(file_root='r')\n"
                    "    for i in range(n):\n"
                    "        x = fn.cast(x, k=i)\n"
                    "    for s, t in [(1, 'a'), (3, 'b')]:\n"
                    "        if t == mode:\n"
                    "            x = fn.flip(x, s=s)\n"
                    "    if mode == 'a' and n > 1:\n"
                    "        x = fn.rotate(x)\n"
                    "    elif not mode or 0 < n <= 1:\n"
                    "        x = fn.rotate(x, angle=2)\n"
                    "    else:\n"
                    "        x = fn.resize(x, size=3 if n < 5 else 4, m=mode in ('a', 'b'))\n"
                    "    for i in range(10):\n"
                    "        if i == 1:\n"
                    "            continue\n"
                    "        if i >= 3:\n"
                    "            break\n"
                    "        x = fn.cast(x, k=i)\n"
                    "    return x\n",
                    3, b, &st);
    CHECK_MSG(st == SL_OK, "%s", got);
    CHECK_STR(got, "op readers.file() -> 0 | file_root=\"r\"\n"
                   "op cast(0) -> 1 | k=0\n"
                   "op cast(1) -> 2 | k=1\n"
                   "op flip(2) -> 3 | s=3\n"
                   "op resize(3) -> 4 | size=3 m=True\n"
                   "op cast(4) -> 5 | k=0\n"
                   "op cast(5) -> 6 | k=2\n"
                   "return x=6");
    /* dicts for ** (a literal and a name), device through one; unpacking constants; a helper
     * computing a module-level constant; None and `is` */
    got = try_parse("def double(v):\n"
                    "    return v * 2\n"
                    "size = double(14)\n"
                    "def pipe(seed=None):\n"
                    "    kw = {'a': 1, 'b': 's'}\n"
                    "    lo, hi = 1, size\n"
                    "    x = fn.readers.file(**kw, c=hi, **{'device': 'cpu'})\n"
                    "    if seed is None:\n"
                    "        x = fn.cast(x, lo=lo)\n"
                    "    return x\n",
                    0, NULL, &st);
    CHECK_MSG(st == SL_OK, "%s", got);
    CHECK_STR(got, "op readers.file() device=cpu -> 0 | a=1 b=\"s\" c=28\n"
                   "op cast(0) -> 1 | lo=1\n"
                   "return x=1");
    /* one statement after the ':', is not / not in, len(), range() with a step (and as a list),
     * ** into a helper */
    got = try_parse("def h(x, dx=0, dy=0):\n"
                    "    return fn.crop(x, pos=[dx, dy])\n"
                    "def pipe(mode='a', seed=None):\n"
                    "    x = fn.readers.file(file_root='r')\n"
                    "    if seed is not None: x = fn.cast(x)\n"
                    "    if mode not in ['b', 'c']: x = fn.flip(x, n=len([1, 2]) + len('abc'))\n"
                    "    for i in range(5, 0, -2):\n"
                    "        x = h(x, **{'dy': i})\n"
                    "    return fn.reshape(x, shape=range(3))\n",
                    0, NULL, &st);
    CHECK_MSG(st == SL_OK, "%s", got);
    CHECK_STR(got, "op readers.file() -> 0 | file_root=\"r\"\n"
                   "op flip(0) -> 1 | n=5\n"
                   "op crop(1) -> 2 | pos=[0, 5]\n"
                   "op crop(2) -> 3 | pos=[0, 3]\n"
                   "op crop(3) -> 4 | pos=[0, 1]\n"
                   "op reshape(4) -> 5 | shape=[0, 1, 2]\n"
                   "return out0=5");
    /* top-level code that returns is the pipeline; its functions are helpers */
    got = try_parse("def read():\n"
                    "    return fn.readers.file(file_root='r')\n"
                    "x = read()\n"
                    "return x\n",
                    0, NULL, &st);
    CHECK_MSG(st == SL_OK, "%s", got);
    CHECK_STR(got, "op readers.file() -> 0 | file_root=\"r\"\nreturn x=0");

    /* which function is the pipeline */
    const char *two = "def a():\n    return fn.readers.file(file_root='r')\n"
                      "def b():\n    return fn.readers.file(file_root='s')\n";
    FAILS(two, SL_EINVAL,
          "t.py:1:5: error: which function is the pipeline? 'a' (line 1), 'b' (line 3) are called "
          "by no other function; add @pipeline_def to it, or pick one with --pipeline NAME\n"
          "def a():\n"
          "    ^");
    sl__parse_prog *prog = NULL;
    sl_err e;
    CHECK_OK(sl__parse_program_fn(two, "t.py", "b", 0, NULL, &prog, &e), &e);
    CHECK_STR(dump(prog), "op readers.file() -> 0 | file_root=\"s\"\nreturn out0=0");
    CHECK_STR(prog->deco.func_name, "b");
    sl__parse_prog_free(prog);
    CHECK_FAILS(sl__parse_program_fn(two, "t.py", "c", 0, NULL, &prog, &e), SL_EINVAL, &e,
                "t.py: error: no function 'c' in the pipeline text (it defines 'a' (line 1), 'b' "
                "(line 3))");
    sl_pipeline_decorator d;
    CHECK_OK(sl_pipeline_text_function_decorator(two, "t.py", "a", &d, &e), &e);
    CHECK_STR(d.func_name, "a");
    sl_pipeline_decorator_clear(&d);
    CHECK_FAILS(sl_pipeline_text_decorator(two, "t.py", &d, &e), SL_EINVAL, &e,
                "which function is the pipeline?");
    /* the decorated one, wherever it is; a called function is not a candidate */
    const char *deco = "def helper(x):\n    return fn.cast(x)\n"
                       "@pipeline_def(batch_size=4)\n"
                       "def main(p):\n    return helper(fn.readers.file(file_root=p))\n"
                       "def other():\n    return fn.readers.file(file_root='o')\n";
    CHECK_OK(sl_pipeline_text_decorator(deco, "t.py", &d, &e), &e);
    CHECK(d.present && d.batch_size == 4 && d.num_params == 1);
    CHECK_STR(d.func_name, "main");
    CHECK_OK(sl_pipeline_text_decorator("def helper(x):\n    return fn.cast(x)\n"
                                        "def main(p):\n"
                                        "    return helper(fn.readers.file(file_root=p))\n",
                                        "t.py", &d, &e),
             &e);
    CHECK(!d.present);
    CHECK_STR(d.func_name, "main");
    CHECK_FAILS(sl_pipeline_text_decorator("@pipeline_def\ndef a():\n    pass\n"
                                           "@pipeline_def\ndef b():\n    pass\n",
                                           "t.py", &d, &e),
                SL_EINVAL, &e,
                "t.py:2:5: error: several functions have a pipeline decorator: 'a' (line 2), 'b' "
                "(line 5); pick one with --pipeline NAME");
    CHECK_FAILS(sl_pipeline_text_decorator("def a():\n    return b()\ndef b():\n    return a()\n",
                                           "t.py", &d, &e),
                SL_EINVAL, &e,
                "t.py:1:5: error: no pipeline function: every function here is "
                "called by another");

    /* refused, each naming its line */
    FAILS("def f(x):\n    return f(x)\ndef p():\n    return f(fn.readers.file(file_root='r'))\n",
          SL_EINVAL,
          "t.py:2:12: error: recursion is not supported in a pipeline: 'f' is called while it runs "
          "(line 1); the pipeline is unrolled when it is built\n"
          "    return f(x)\n"
          "           ^");
    FAILS("def p():\n    x = fn.readers.file(file_root='r')\n    for v in x:\n        pass\n"
          "    return x\n",
          SL_EINVAL,
          "t.py:3:14: error: a loop over an op output (data) is not supported: loops run when the "
          "pipeline is built, over range(...), lists and tuples\n"
          "    for v in x:\n"
          "             ^");
    FAILS("x = fn.readers.file(file_root='r')\ny = x if x else x\nreturn y\n", SL_EINVAL,
          "t.py:2:10: error: 'if' on an op output: a condition on data needs "
          "@pipeline_def(enable_conditionals=True), as in DALI\n"
          "y = x if x else x\n"
          "         ^");
    FAILS("x = fn.readers.file(file_root='r')\nif x > 0:\n    pass\nreturn x\n", SL_EINVAL,
          "t.py:2:6: error: 'if' on an op output: a condition on data needs "
          "@pipeline_def(enable_conditionals=True), as in DALI\n"
          "if x > 0:\n"
          "     ^");
    FAILS("def f(a, b=1):\n    return a\nx = f(b=2)\nreturn x\n", SL_EINVAL,
          "t.py:3:5: error: f() missing argument 'a'\nx = f(b=2)\n    ^");
    FAILS("def f(a):\n    return a\nx = f(1, a=2)\nreturn x\n", SL_EINVAL,
          "t.py:3:10: error: f() got multiple values for argument 'a'\nx = f(1, a=2)\n"
          "         ^");
    FAILS("def f(a):\n    return a\nx = f(c=2)\nreturn x\n", SL_EINVAL,
          "t.py:3:7: error: f() got an unexpected keyword argument 'c'\nx = f(c=2)\n      ^");
    FAILS("x = fn.readers.file(**[1])\nreturn x\n", SL_EINVAL,
          "t.py:1:23: error: '**' needs a dict (a dict literal, or a name bound to one), not "
          "list\n"
          "x = fn.readers.file(**[1])\n"
          "                      ^");
    FAILS("x = fn.readers.file(a=1, **{'a': 2})\nreturn x\n", SL_EINVAL,
          "t.py:1:26: error: keyword argument repeated: a\n"
          "x = fn.readers.file(a=1, **{'a': 2})\n"
          "                         ^");
    FAILS("for i in range(3):\n    pass\nbreak\n", SL_ESYNTAX,
          "t.py:3:1: error: 'break' outside a loop\nbreak\n^");
    FAILS("def f():\n    def g():\n        pass\n", SL_ESYNTAX,
          "t.py:2:5: error: nested functions are not supported in a pipeline: define helpers at "
          "the top level\n"
          "    def g():\n"
          "    ^");
    FAILS("def f():\n    pass\ndef f():\n    pass\n", SL_EINVAL,
          "t.py:3:5: error: function 'f' is defined twice (first on line 1)\ndef f():\n    ^");
    FAILS("a, b = 1, 2, 3\n", SL_EINVAL,
          "t.py:1:8: error: cannot unpack 3 values into 2 names\na, b = 1, 2, 3\n       ^");
    FAILS("x = {1: 2}\n", SL_EINVAL,
          "t.py:1:6: error: dict keys must be strings (they become keyword names), not int\n"
          "x = {1: 2}\n"
          "     ^");
    /* build-time work is bounded: a huge loop and a loop building too many ops stop at the for */
    FAILS("x = fn.readers.file(file_root='r')\nfor i in range(10**12):\n    y = i\nreturn x\n",
          SL_EINVAL,
          "t.py:2:1: error: the pipeline takes too long to build: over 2000000 steps in this loop "
          "(loops and helper calls run when the pipeline is built)\n"
          "for i in range(10**12):\n"
          "^");
    FAILS("x = fn.readers.file(file_root='r')\nfor i in range(100000):\n    x = fn.cast(x)\n"
          "return x\n",
          SL_EINVAL,
          "t.py:2:1: error: too many operators: the pipeline would have over 10000 (this loop "
          "builds them)\n"
          "for i in range(100000):\n"
          "^");
    FAILS("s = 'ab'\nfor i in range(40):\n    s = s + s\n", SL_EINVAL,
          "t.py:3:11: error: string too long (over 1048576 bytes)\n    s = s + s\n          ^");
    FAILS("l = []\nfor i in range(1000):\n    l = [l]\n", SL_EINVAL,
          "t.py:3:9: error: lists nested too deeply (over 200 levels)\n    l = [l]\n        ^");
}

/* Names bound to typed values (the iterator's shard ids): read as they are, over a text bind of
 * the same name, in def parameters and free names alike, and offered when a name is mistyped. */
static void test_typed_binds(void) {
    const char *text = "def p(shard_id, num_shards=1):\n"
                       "    return fn.readers.caffe2(path=path, shard_id=shard_id,\n"
                       "                             num_shards=num_shards, seed=shard_id * 7)\n";
    const sl_pipeline_bind binds[2] = {{"shard_id", "9"}, {"path", "/x"}};
    const sl__parse_bindv vals[2] = {{"shard_id", {.kind = SL_VAL_INT, .i = 3}},
                                     {"num_shards", {.kind = SL_VAL_INT, .i = 4}}};
    sl__parse_prog *prog = NULL;
    sl_err e;
    CHECK_OK(sl__parse_program_vals(text, "t.py", NULL, 2, binds, 2, vals, &prog, &e), &e);
    if (prog)
        CHECK_STR(dump(prog), "op readers.caffe2() -> 0 | path=\"/x\" shard_id=3 num_shards=4 "
                              "seed=21\n"
                              "return out0=0");
    sl__parse_prog_free(prog);
    CHECK_FAILS(sl__parse_program_vals("def p():\n    return fn.cast(num_shard)\n", "t.py", NULL, 0,
                                       NULL, 2, vals, &prog, &e),
                SL_EINVAL, &e, "did you mean 'num_shards'?");
}

int main(void) {
    test_typed_binds();
    test_seed_files();
    test_apply_unknown_op();
    test_syntax();
    test_errors();
    test_static_python();
    test_robustness();
    return check_done();
}
