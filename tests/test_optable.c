/* SPDX-License-Identifier: Apache-2.0 */
/* The public operator table (sluice/ops.h) against the registry it reads: every op, in order, found
 * by name with and without "fn.", its flags and schema as the registry has them, the nine type
 * names, errors for unknown names and out-of-range indices, and the common arguments (which the
 * pipeline really accepts on any op). */
#include "check.h"
#include "operator/op.h"
#include "ops/registry.h"

#include "sluice/ops.h"
#include "sluice/sluice.h"

#include <stdio.h>
#include <string.h>

static bool known_type(const char *t) {
    static const char *const types[] = {"bool", "int",  "float",  "str",  "dtype",
                                        "enum", "ints", "floats", "strs", "features"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (t && !strcmp(t, types[i])) return true;
    return false;
}

static void test_ops(void) {
    int n;
    const sl__op_def *const *all = sl__registry_all(&n);
    CHECK(n > 30);
    CHECK_EQ_INT(sl_op_count(), n);
    sl_err e;
    const char *prev = "";
    for (int i = 0; i < n; i++) {
        sl_op_info op, byname, byfn;
        CHECK_OK(sl_op_get(i, &op, &e), &e);
        if (check_failures) return;
        CHECK_STR(op.name, all[i]->name);
        CHECK_MSG(strcmp(prev, op.name) < 0, "%s before %s", prev, op.name);
        prev = op.name;
        CHECK(op.doc != NULL);
        CHECK_EQ_INT(op.min_inputs, all[i]->min_inputs);
        CHECK_EQ_INT(op.max_inputs, all[i]->max_inputs);
        CHECK_EQ_INT(op.devices, all[i]->devices);
        CHECK(op.devices != 0 &&
              (op.devices & ~(unsigned)(SL_OP_CPU | SL_OP_MIXED | SL_OP_GPU)) == 0);
        CHECK_EQ_INT(op.is_reader, (all[i]->flags & SL_OPF_READER) != 0);
        CHECK_EQ_INT(op.is_random, (all[i]->flags & SL_OPF_RANDOM) != 0);
        CHECK_EQ_INT(op.no_copy, (all[i]->flags & SL_OPF_NOCOPY) != 0);
        /* the executor counts a decoder's time by its trait; every decoder carries it */
        CHECK_MSG(!strncmp(op.name, "decoders.", 9) == !!(all[i]->flags & SL_OPF_DECODER),
                  "%s: SL_OPF_DECODER %s", op.name,
                  all[i]->flags & SL_OPF_DECODER ? "set" : "missing");

        CHECK_OK(sl_op_find(op.name, &byname, &e), &e);
        CHECK(memcmp(&byname, &op, sizeof op) == 0);
        char fn[128];
        snprintf(fn, sizeof fn, "fn.%s", op.name);
        CHECK_OK(sl_op_find(fn, &byfn, &e), &e);
        CHECK(memcmp(&byfn, &op, sizeof op) == 0);
        /* each alias finds this op, and no alias is another op's name */
        CHECK(op.aliases != NULL);
        for (const char *p = op.aliases; *p;) {
            const char *end = strchr(p, '|');
            char alias[128];
            snprintf(alias, sizeof alias, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
            sl_op_info byalias;
            CHECK_OK(sl_op_find(alias, &byalias, &e), &e);
            CHECK_MSG(byalias.name == op.name, "%s: alias %s finds %s", op.name, alias,
                      byalias.name);
            p = end ? end + 1 : p + strlen(p);
        }

        int nargs = 0;
        while (all[i]->args && all[i]->args[nargs].name) nargs++;
        CHECK_EQ_INT(op.num_args, nargs);
        for (int a = 0; a < op.num_args; a++) {
            sl_op_arg_info arg;
            const sl__arg_schema *s = &all[i]->args[a];
            CHECK_OK(sl_op_get_arg(op.name, a, &arg, &e), &e);
            CHECK_STR(arg.name, s->name);
            CHECK_MSG(known_type(arg.type), "%s.%s: type %s", op.name, arg.name,
                      arg.type ? arg.type : "(null)");
            CHECK_STR(arg.type_doc, sl__arg_type_name(s->type));
            CHECK(arg.def == s->def);
            CHECK(arg.doc != NULL);
            CHECK(arg.choices == s->choices);
            CHECK_EQ_INT(!strcmp(arg.type, "enum"), s->type == SL_ARG_ENUM);
            CHECK_EQ_INT(arg.required, (s->flags & SL_ARGF_REQUIRED) != 0);
            CHECK_EQ_INT(arg.per_sample, (s->flags & SL_ARGF_PER_SAMPLE) != 0);
            CHECK_EQ_INT(arg.per_frame, (s->flags & SL_ARGF_PER_FRAME) != 0);
            /* a per-frame argument is a per-sample one, of an op that takes sequences */
            CHECK_MSG(!arg.per_frame || (arg.per_sample && op.sequences), "%s.%s", op.name,
                      arg.name);
        }
        CHECK_EQ_INT(op.sequences, (all[i]->flags & SL_OPF_SEQUENCE) != 0);
        /* frames run as samples of one batch: an op drawing per sample would draw per frame */
        CHECK_MSG(!(op.sequences && op.is_random), "%s", op.name);
        CHECK_MSG(!(op.sequences && op.is_reader), "%s", op.name);
        CHECK_FAILS(sl_op_get_arg(op.name, op.num_args, &(sl_op_arg_info){0}, &e), SL_EINVAL, &e,
                    op.name);
        CHECK_FAILS(sl_op_get_arg(op.name, -1, &(sl_op_arg_info){0}, &e), SL_EINVAL, &e, op.name);
    }
    sl_op_info op;
    CHECK_FAILS(sl_op_get(-1, &op, &e), SL_EINVAL, &e, "operator -1");
    CHECK_FAILS(sl_op_get(n, &op, &e), SL_EINVAL, &e, "operator");
    CHECK_FAILS(sl_op_find("decoders.imag", &op, &e), SL_ENOENT, &e,
                "no operator 'decoders.imag'; did you mean 'decoders.image'?");
    CHECK_FAILS(sl_op_find("fn.decoders.imag", &op, &e), SL_ENOENT, &e, "'decoders.image'");
    CHECK_FAILS(sl_op_find("qqqqqqqqqqqq", &op, &e), SL_ENOENT, &e, "no operator 'qqqqqqqqqqqq'");
    CHECK(strstr(e.msg, "did you mean") == NULL);
    CHECK_FAILS(sl_op_find(NULL, &op, &e), SL_EINVAL, &e, "NULL");
    CHECK_FAILS(sl_op_get_arg("decoders.imag", 0, &(sl_op_arg_info){0}, &e), SL_ENOENT, &e,
                "did you mean 'decoders.image'?");
}

/* readers.caffe2's schema as written: path is a required list of strings with no default */
static void test_caffe2(void) {
    sl_op_info op;
    sl_err e;
    CHECK_OK(sl_op_find("fn.readers.caffe2", &op, &e), &e);
    CHECK_STR(op.name, "readers.caffe2");
    CHECK(op.is_reader && !op.no_copy);
    CHECK_EQ_INT(op.min_inputs, 0);
    CHECK_EQ_INT(op.max_inputs, 0);
    bool path = false, shuffle = false;
    for (int a = 0; a < op.num_args; a++) {
        sl_op_arg_info arg;
        CHECK_OK(sl_op_get_arg("readers.caffe2", a, &arg, &e), &e);
        if (!strcmp(arg.name, "path")) {
            path = true;
            CHECK(arg.required);
            CHECK_STR(arg.type, "strs");
            CHECK_STR(arg.type_doc, "str or list of str");
            CHECK(arg.def == NULL);
            CHECK(arg.choices == NULL);
        }
        if (!strcmp(arg.name, "random_shuffle")) {
            shuffle = true;
            CHECK(!arg.required);
            CHECK_STR(arg.type, "bool");
            CHECK_STR(arg.def, "False");
        }
    }
    CHECK(path && shuffle);
    /* an enum: decoders.image's output_type carries its choices */
    bool output_type = false;
    CHECK_OK(sl_op_find("decoders.image", &op, &e), &e);
    for (int a = 0; a < op.num_args; a++) {
        sl_op_arg_info arg;
        CHECK_OK(sl_op_get_arg("decoders.image", a, &arg, &e), &e);
        if (strcmp(arg.name, "output_type")) continue;
        output_type = true;
        CHECK_STR(arg.type, "enum");
        CHECK(arg.choices && strstr(arg.choices, "GRAY"));
    }
    CHECK(output_type);
    /* DALI's deprecated names, its experimental.* names ('|'-separated), one since promoted */
    CHECK_OK(sl_op_find("fn.image_decoder", &op, &e), &e);
    CHECK_STR(op.name, "decoders.image");
    CHECK_STR(op.aliases, "image_decoder|experimental.decoders.image");
    CHECK_OK(sl_op_find("experimental.filter", &op, &e), &e);
    CHECK_STR(op.name, "filter");
}

static void test_common(void) {
    int n = sl_op_num_common_args();
    CHECK_EQ_INT(n, 5);
    sl_err e;
    bool device = false, name = false, seed = false, preserve = false, hint = false;
    for (int i = 0; i < n; i++) {
        sl_op_arg_info a;
        CHECK_OK(sl_op_common_arg(i, &a, &e), &e);
        if (check_failures) return;
        CHECK(known_type(a.type));
        CHECK(a.doc && a.doc[0]);
        CHECK(!a.required && !a.per_sample);
        if (!strcmp(a.name, "device")) {
            device = true;
            CHECK_STR(a.type, "str");
            CHECK_STR(a.choices, "cpu|mixed|gpu");
            CHECK(a.def == NULL);
        } else if (!strcmp(a.name, "name")) {
            name = true;
            CHECK_STR(a.type, "str");
        } else if (!strcmp(a.name, "seed")) {
            seed = true;
            CHECK_STR(a.type, "int");
            CHECK(a.def == NULL);
            CHECK(strstr(a.doc, "pipeline seed") != NULL);
        } else if (!strcmp(a.name, "preserve")) {
            preserve = true;
            CHECK_STR(a.type, "bool");
            CHECK_STR(a.def, "False");
        } else if (!strcmp(a.name, "bytes_per_sample_hint")) {
            hint = true;
            CHECK_STR(a.type, "ints");
            CHECK_STR(a.def, "[0]");
        }
    }
    CHECK(device && name && seed && preserve && hint);
    sl_op_arg_info a;
    CHECK_FAILS(sl_op_common_arg(n, &a, &e), SL_EINVAL, &e, "common argument");
    CHECK_FAILS(sl_op_common_arg(-1, &a, &e), SL_EINVAL, &e, "common argument");

    /* the pipeline takes every common argument on an op whose schema lacks it (flip: no seed,
     * no preserve) */
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    sl_pipeline *p;
    CHECK_OK(sl_pipeline_create(&cfg, &p, &e), &e);
    if (check_failures) return;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "readers.caffe2");
    sl_pipeline_op_arg(op, "path", "\"nowhere\"");
    int rd[2], out;
    CHECK_OK(sl_pipeline_op_end(op, rd, 2, NULL), NULL);
    op = sl_pipeline_op_begin(p, "flip");
    sl_pipeline_op_input(op, rd[0]);
    sl_pipeline_op_arg(op, "device", "\"cpu\"");
    sl_pipeline_op_arg(op, "name", "\"f\"");
    sl_pipeline_op_arg(op, "seed", "7");
    sl_pipeline_op_arg(op, "preserve", "True");
    sl_pipeline_op_arg(op, "bytes_per_sample_hint", "[64]");
    CHECK_OK(sl_pipeline_op_end(op, &out, 1, NULL), NULL);
    CHECK_MSG(!sl_pipeline_errmsg(p)[0], "%s", sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}

int main(void) {
    test_ops();
    test_caffe2();
    test_common();
    return check_done();
}
