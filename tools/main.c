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
#include <sys/resource.h>
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
    {"wds2idx", sl_cli_wds2idx, "write a WebDataset tar file's index (DALI's wds2idx format)"},
};

static void log_to_stderr(sl_log_level level, const char *msg, void *user) {
    (void)user;
    if (level < SL_LOG_WARN) return;
    sl_cli_progress_end();
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
    sl_cli_progress_end();
    fprintf(stderr, "sluice %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* Reads a positive thread count from an environment variable, else 0. */
static int env_threads(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n > 0 && n < 1 << 20 ? (int)n : 0;
}

/* OpenBLAS reads its settings only when it loads, so the tool sets them and starts itself again:
 * - 0.3.21 does not know recent Xeons and falls back to generic kernels, about 3x slower
 *   (OPENBLAS_CORETYPE);
 * - each of its threads maps a work buffer as it loads and retries a mapping that fails for ever,
 *   then its exit waits for that thread: under an address-space limit (ulimit -v, ulimit -d) too
 *   many threads left every command spinning and never exiting. The threads' buffers are kept to
 *   a quarter of the limit (OPENBLAS_NUM_THREADS; a larger count the user set is lowered, and
 *   said). exec ends the threads of this process, stuck or not. */
static void prepare_blas(char **argv) {
    if (getenv("SLUICE_NO_REEXEC")) return;
    int again = 0;
    const char *core, *suggested;
    sl_mlp_blas_info(&core, &suggested);
    if (suggested && !getenv("OPENBLAS_CORETYPE")) {
        setenv("OPENBLAS_CORETYPE", suggested, 1);
        again = 1;
    }
    struct rlimit as, data;
    rlim_t limit = RLIM_INFINITY;
    if (getrlimit(RLIMIT_AS, &as) == 0) limit = as.rlim_cur;
    if (getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur < limit) limit = data.rlim_cur;
    if (limit != RLIM_INFINITY) {
        int threads;
        size_t buffer;
        sl_mlp_blas_threads(&threads, &buffer);
        rlim_t fit = limit / 4 / buffer;
        int fits = fit < 1 ? 1 : fit > 4096 ? 4096 : (int)fit;
        if (threads > fits) {
            const char *set = env_threads("OPENBLAS_NUM_THREADS") ? "OPENBLAS_NUM_THREADS"
                              : env_threads("GOTO_NUM_THREADS")   ? "GOTO_NUM_THREADS"
                              : env_threads("OMP_NUM_THREADS")    ? "OMP_NUM_THREADS"
                                                                  : NULL;
            if (set)
                fprintf(stderr,
                        "sluice: %s=%s: OpenBLAS's %d threads would map %llu MiB of work buffers "
                        "under a memory limit of %llu MiB (ulimit -v/-d); using %d thread(s)\n",
                        set, getenv(set), threads,
                        (unsigned long long)threads * (unsigned long long)(buffer >> 20),
                        (unsigned long long)(limit >> 20), fits);
            char v[16];
            snprintf(v, sizeof v, "%d", fits);
            setenv("OPENBLAS_NUM_THREADS", v, 1);
            again = 1;
        }
    }
    if (!again) return;
    setenv("SLUICE_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on as we are */
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
    prepare_blas(argv);
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
