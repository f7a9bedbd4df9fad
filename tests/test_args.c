/* SPDX-License-Identifier: Apache-2.0 */
/* Operator arguments: literal parsing, schema checking, defaults, conversions, suggestions. */
#include "check.h"
#include "operator/op.h"

#include <string.h>

static const sl__arg_schema demo_args[] = {
    {"num_classes", SL_ARG_INT, "0", "classes", 0, NULL},
    {"std", SL_ARG_FLOATS, "[1.0]", "std", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "out type", 0, NULL},
    {"output_type", SL_ARG_ENUM, "types.RGB", "color", 0, "RGB|BGR|GRAY"},
    {"path", SL_ARG_STRS, NULL, "paths", SL_ARGF_REQUIRED, NULL},
    {"mirror", SL_ARG_INT, "0", "flip", SL_ARGF_PER_SAMPLE, NULL},
    {"random_shuffle", SL_ARG_BOOL, "False", "shuffle", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__op_def demo = {.name = "demo", .args = demo_args};

int main(void) {
    sl_err e;
    sl__val v;
    CHECK_OK(sl__val_parse("[255.0, 2, -3e-1]", &v, &e), &e);
    CHECK_EQ_INT(v.kind, SL_VAL_LIST);
    CHECK_EQ_INT(v.n, 3);
    CHECK_EQ_INT(v.items[1].kind, SL_VAL_INT);
    CHECK_NEAR(v.items[2].f, -0.3, 1e-15);
    char buf[128];
    CHECK_STR(sl__val_format(&v, buf, sizeof buf), "[255.0, 2, -0.3]");
    sl__val_free(&v);
    CHECK_OK(sl__val_parse("types.GRAY", &v, &e), &e);
    CHECK_EQ_INT(v.kind, SL_VAL_ENUM);
    CHECK_STR(v.s, "GRAY");
    sl__val_free(&v);
    CHECK_OK(sl__val_parse("'CHW'", &v, &e), &e);
    CHECK_STR(v.s, "CHW");
    sl__val_free(&v);
    CHECK_FAILS(sl__val_parse("[1, 2", &v, &e), SL_ESYNTAX, &e, "expected");
    /* numbers no argument can hold are refused, not turned into inf or a clamped integer */
    CHECK_FAILS(sl__val_parse("3E999", &v, &e), SL_ESYNTAX, &e, "out of range");
    CHECK_FAILS(sl__val_parse("[1, -1e400]", &v, &e), SL_ESYNTAX, &e, "out of range");
    CHECK_FAILS(sl__val_parse("99999999999999999999", &v, &e), SL_ESYNTAX, &e, "out of range");
    /* a nested list that fails half-way frees what it had read (the ASan run checks) */
    CHECK_FAILS(sl__val_parse("[[1, (2\xcd\xdf"
                              "3)], None]",
                              &v, &e),
                SL_ESYNTAX, &e, "expected");
    CHECK_OK(sl__val_parse("1e300", &v, &e), &e);
    CHECK_STR(sl__val_format(&v, buf, sizeof buf), "1e+300");

    const char *names[4] = {"path", "std", "output_type", "num_classes"};
    sl__val vals[4];
    CHECK_OK(sl__val_parse("\"/data\"", &vals[0], &e), &e);
    CHECK_OK(sl__val_parse("255", &vals[1], &e), &e);
    CHECK_OK(sl__val_parse("types.GRAY", &vals[2], &e), &e);
    CHECK_OK(sl__val_parse("10", &vals[3], &e), &e);
    sl__args a;
    CHECK_OK(sl__args_build(&demo, 4, names, vals, &a, &e), &e);
    const double *std;
    CHECK_EQ_INT(sl__args_floats(&a, "std", &std), 1); /* scalar -> list of one, int -> float */
    CHECK_NEAR(std[0], 255.0, 0);
    CHECK_EQ_INT(sl__args_int(&a, "num_classes"), 10);
    CHECK_EQ_INT(sl__args_dtype(&a, "dtype"), SL_DTYPE_F32); /* default */
    CHECK_STR(sl__args_str(&a, "output_type"), "GRAY");
    const char *const *paths;
    CHECK_EQ_INT(sl__args_strs(&a, "path", &paths), 1);
    CHECK_STR(paths[0], "/data");
    CHECK(sl__args_given(&a, "std") && !sl__args_given(&a, "dtype"));
    CHECK(!sl__args_bool(&a, "random_shuffle"));
    CHECK_EQ_INT(sl__args_node(&a, "mirror"), -1);
    sl__args_free(&a);

    /* misspelt name: suggestion */
    const char *bad_names[2] = {"path", "num_clases"};
    sl__val bad_vals[2] = {vals[0], vals[3]};
    CHECK_FAILS(sl__args_build(&demo, 2, bad_names, bad_vals, &a, &e), SL_EINVAL, &e,
                "did you mean 'num_classes'?");
    /* missing required */
    CHECK_FAILS(sl__args_build(&demo, 1, names + 1, vals + 1, &a, &e), SL_EINVAL, &e,
                "path is required");
    /* wrong type and bad choice */
    sl__val s;
    CHECK_OK(sl__val_parse("\"x\"", &s, &e), &e);
    const char *nc[2] = {"path", "num_classes"};
    sl__val pair[2] = {vals[0], s};
    CHECK_FAILS(sl__args_build(&demo, 2, nc, pair, &a, &e), SL_EINVAL, &e, "wants int");
    sl__val_free(&s);
    CHECK_OK(sl__val_parse("types.HSV", &s, &e), &e);
    const char *ot[2] = {"path", "output_type"};
    sl__val pair2[2] = {vals[0], s};
    CHECK_FAILS(sl__args_build(&demo, 2, ot, pair2, &a, &e), SL_EINVAL, &e, "HSV is not one of");
    sl__val_free(&s);
    /* `seed` is taken by the pipeline when the op's schema has no such argument */
    const char *seeded[2] = {"path", "seed"};
    sl__val sv[2] = {vals[0], vals[3]};
    CHECK_OK(sl__args_build(&demo, 2, seeded, sv, &a, &e), &e);
    sl__args_free(&a);
    /* None is "not given" (as in DALI): the default, and a required argument is missing */
    sl__val none;
    memset(&none, 0, sizeof none);
    const char *nn[2] = {"path", "dtype"};
    sl__val with_none[2] = {vals[0], none};
    CHECK_OK(sl__args_build(&demo, 2, nn, with_none, &a, &e), &e);
    CHECK_EQ_INT(sl__args_dtype(&a, "dtype"), SL_DTYPE_F32);
    CHECK(!sl__args_given(&a, "dtype"));
    sl__args_free(&a);
    CHECK_FAILS(sl__args_build(&demo, 1, nn, &none, &a, &e), SL_EINVAL, &e, "path is required");
    for (int i = 0; i < 4; i++) sl__val_free(&vals[i]);
    CHECK_EQ_INT(sl__op_distance("one_hot", "onehot"), 1);
    return check_done();
}
