/* SPDX-License-Identifier: Apache-2.0 */
/* sluice: command-line entry point. Dispatches to the subcommands and installs a log callback that
 * prints the library's warnings to stderr (the library itself never prints). */
#include "cli.h"

#include "sluice/sluice.h"
#include "sluice/train.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"convert", sl_cli_convert,
     "write Caffe2/Caffe LMDBs or TFRecords from IDX files or image folders"},
    {"index", sl_cli_index, "write a TFRecord file's index (DALI's tfrecord2idx format)"},
    {"inspect", sl_cli_inspect, "show a record store's format, size, labels and first records"},
    {"train", sl_cli_train, "train the seed's MLP data-parallel on the devices (make demo)"},
    {"run", sl_cli_run, "run a pipeline file on every device: samples/s, traces, dumps"},
    {"ops", sl_cli_ops, "list the operators and their arguments"},
    {"version", sl_cli_version, "the version, the commit and the back ends built in (--version)"},
};

static void log_to_stderr(sl_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= SL_LOG_WARN)
        fprintf(stderr, "sluice: %s: %s\n", level == SL_LOG_WARN ? "warning" : "error", msg);
}

static int usage(FILE *f) {
    fprintf(f, "sluice %s: feeds training data to many GPUs fast, and trains on them\n\n",
            SLUICE_VERSION_STRING);
    fprintf(f, "usage: sluice <command> [options]   (sluice <command> --help for its options)\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    return f == stdout ? 0 : 2;
}

int sl_cli_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "sluice %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

bool sl_cli_interactive(void) {
    return isatty(STDERR_FILENO);
}

void sl_cli_progress(const char *label, long long done, long long total) {
    if (!sl_cli_interactive() || total <= 0) return;
    int width = 40, fill = (int)(done * width / total);
    fprintf(stderr, "\r%s [", label);
    for (int i = 0; i < width; i++) fputc(i < fill ? '=' : i == fill ? '>' : ' ', stderr);
    fprintf(stderr, "] %lld/%lld", done, total);
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
}

/* OpenBLAS 0.3.21 does not know recent Xeons and falls back to generic kernels, about 3x slower;
 * it reads OPENBLAS_CORETYPE only when it loads, so the tool sets it and starts itself again. */
static void fix_blas_core(char **argv) {
    const char *core, *suggested;
    if (getenv("OPENBLAS_CORETYPE") || getenv("SLUICE_NO_REEXEC")) return;
    sl_mlp_blas_info(&core, &suggested);
    if (!suggested) return;
    setenv("OPENBLAS_CORETYPE", suggested, 1);
    setenv("SLUICE_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the generic kernels */
}

/* What went to standard output must have reached it (a full disk, a closed pipe): checked once
 * at the end, where what is still buffered is written; a failure is an error of the command. */
static int check_stdout(const char *cmd, int rc) {
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    if (!bad && !ferror(stdout)) return rc;
    fprintf(stderr, "sluice%s%s: standard output: %s\n", cmd ? " " : "", cmd ? cmd : "",
            e ? strerror(e) : "write error");
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    fix_blas_core(argv);
    sl_log_set_callback(log_to_stderr, NULL);
    if (argc < 2) return usage(stderr);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return check_stdout(NULL, usage(stdout));
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
        return check_stdout("version", sl_cli_version(argc - 1, argv + 1));
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return check_stdout(commands[i].name, commands[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
