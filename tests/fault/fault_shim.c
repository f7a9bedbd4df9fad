/* SPDX-License-Identifier: Apache-2.0 */
/* A test-only LD_PRELOAD library that makes a chosen call of one output function fail (or it and
 * every later one), so that a test can see what a program leaves behind when a write, a sync, a
 * close or a rename fails part-way.
 * It is built for the tests only and never linked into libsluice or the tool.
 *
 *   SL_FAULT=FUNC:N:ERRNO   the N-th call (from 1) of FUNC fails with ERRNO (a name: ENOSPC, EIO,
 *                           EDQUOT, EFBIG, EROFS, EINTR, or a number); N = 0 fails nothing;
 *                           N+ fails the N-th call and every one after it (a disk that stays full)
 *   SL_FAULT_REPORT=PATH    a line is appended there: "fired FUNC N" when the fault fires (for
 *                           close, "fired close N synced" when nothing was written to the file
 *                           since it was last synced, or ever: a failure that loses nothing);
 *                           "unsynced rename FROM" when a file written and not synced since is
 *                           renamed (after a crash the new name could lead to lost bytes); and
 *                           at a normal exit "count FUNC TOTAL" for every FUNC that was called,
 *                           and "undurable rename TO" for every rename whose folder was not
 *                           synced after it (a crash could bring the old name back)
 *
 * FUNC names a family of calls, counted together:
 *   write      write, writev                 pwrite     pwrite, pwrite64, pwritev
 *   fsync      fsync                         fdatasync  fdatasync
 *   close      close, fclose                 rename     rename
 *   fwrite     stdio output: fwrite, fputs, fputc, putc, fprintf, vfprintf, printf, vprintf,
 *              puts, putchar, __fprintf_chk, __vfprintf_chk, __printf_chk
 *   fflush     fflush
 *   alloc      malloc, calloc, realloc (to a larger size than 0), posix_memalign, aligned_alloc,
 *              memalign: counted from the program's main on (what the libraries' constructors
 *              allocate before it is not), and failed with ENOMEM whatever ERRNO says
 * Only calls on regular files open for writing count (so that reading the input, pipes, sockets,
 * terminals and standard error do not move N), except fsync and fdatasync, which count on any
 * descriptor (a folder is synced to make a rename last), and rename, which always counts.
 *
 * A call that fails does not do its work: a write writes nothing, a sync does not sync, a rename
 * does not rename. close and fclose do close the descriptor (as Linux does) and then fail. A stdio
 * call that fails also sets the stream's error flag, as a failed write underneath it would. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
    F_WRITE,
    F_PWRITE,
    F_FSYNC,
    F_FDATASYNC,
    F_CLOSE,
    F_RENAME,
    F_FWRITE,
    F_FFLUSH,
    F_ALLOC,
    F_COUNT
};
static const char *const fam_names[F_COUNT] = {"write",  "pwrite", "fsync",  "fdatasync", "close",
                                               "rename", "fwrite", "fflush", "alloc"};

static int target = -1;    /* the family that fails, or -1 */
static long target_n;      /* its call that fails */
static int target_errno;   /* with this errno */
static int sticky;         /* and every call after it */
static const char *report; /* SL_FAULT_REPORT */
static atomic_long counts[F_COUNT];
static atomic_int ready;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_close)(int);
static int (*real_fclose)(FILE *);
static int (*real_rename)(const char *, const char *);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);
static int (*real_fputs)(const char *, FILE *);
static int (*real_fputc)(int, FILE *);
static int (*real_putc)(int, FILE *);
static int (*real_vfprintf)(FILE *, const char *, va_list);
static int (*real_vfprintf_chk)(FILE *, int, const char *, va_list);
static int (*real_puts)(const char *);
static int (*real_putchar)(int);
static int (*real_fflush)(FILE *);

static const struct {
    const char *name;
    int value;
} errnos[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EDQUOT", EDQUOT},
              {"EFBIG", EFBIG},   {"EROFS", EROFS},   {"EINTR", EINTR},
              {"EBADF", EBADF},   {"EACCES", EACCES}, {"ENOMEM", ENOMEM}};

/* memcpy: ISO C has no cast from an object pointer to a function pointer */
#define RESOLVE(var, name)                                                                         \
    do {                                                                                           \
        void *sym_ = dlsym(RTLD_NEXT, name);                                                       \
        memcpy(&var, &sym_, sizeof var);                                                           \
    } while (0)

static void report_line(const char *what, int fam, long n, const char *note) {
    if (!report || !real_write || !real_close) return;
    char line[96];
    int len = snprintf(line, sizeof line, "%s %s %ld%s\n", what, fam_names[fam], n, note);
    int fd = open(report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (real_write(fd, line, (size_t)len) != len) { /* the test sees no line and fails */
    }
    real_close(fd);
}

static void init(void) {
    if (atomic_load(&ready)) return;
    RESOLVE(real_write, "write");
    RESOLVE(real_writev, "writev");
    RESOLVE(real_pwrite, "pwrite");
    RESOLVE(real_pwrite64, "pwrite64");
    RESOLVE(real_pwritev, "pwritev");
    RESOLVE(real_fsync, "fsync");
    RESOLVE(real_fdatasync, "fdatasync");
    RESOLVE(real_close, "close");
    RESOLVE(real_fclose, "fclose");
    RESOLVE(real_rename, "rename");
    RESOLVE(real_fwrite, "fwrite");
    RESOLVE(real_fputs, "fputs");
    RESOLVE(real_fputc, "fputc");
    RESOLVE(real_putc, "putc");
    RESOLVE(real_vfprintf, "vfprintf");
    RESOLVE(real_vfprintf_chk, "__vfprintf_chk");
    RESOLVE(real_puts, "puts");
    RESOLVE(real_putchar, "putchar");
    RESOLVE(real_fflush, "fflush");
    report = getenv("SL_FAULT_REPORT");
    const char *spec = getenv("SL_FAULT");
    if (spec && *spec) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", spec);
        char *n = strchr(buf, ':');
        char *e = n ? strchr(n + 1, ':') : NULL;
        if (n && e) {
            *n++ = '\0';
            *e++ = '\0';
            for (int f = 0; f < F_COUNT; f++)
                if (!strcmp(buf, fam_names[f])) target = f;
            char *end;
            target_n = strtol(n, &end, 10);
            sticky = *end == '+';
            target_errno = (int)strtol(e, NULL, 10);
            for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
                if (!strcmp(e, errnos[i].name)) target_errno = errnos[i].value;
        }
        if (target < 0 || target_n < 0 || target_errno <= 0) {
            static const char msg[] = "fault_shim: SL_FAULT wants FUNC:N:ERRNO, e.g. write:3:ENOSPC"
                                      " (FUNC: write pwrite fsync fdatasync close rename fwrite "
                                      "fflush alloc)\n";
            if (real_write(2, msg, sizeof msg - 1) < 0) {
            }
            _exit(97);
        }
    }
    atomic_store(&ready, 1);
}

/* The folders of renames not yet made to last by a sync of the folder: its path, the name. */
static struct {
    char dir[4096];
    char to[1024];
} renamed[64];
static int nrenamed;
static atomic_flag renamed_lock = ATOMIC_FLAG_INIT;

static void renamed_add(const char *to) {
    char d[1024], real[4096];
    snprintf(d, sizeof d, "%s", to);
    char *slash = strrchr(d, '/');
    if (!slash)
        snprintf(d, sizeof d, ".");
    else if (slash == d)
        d[1] = '\0';
    else
        *slash = '\0';
    if (!realpath(d, real)) return;
    while (atomic_flag_test_and_set(&renamed_lock)) {
    }
    if (nrenamed < (int)(sizeof renamed / sizeof renamed[0])) {
        snprintf(renamed[nrenamed].dir, sizeof renamed[0].dir, "%s", real);
        snprintf(renamed[nrenamed].to, sizeof renamed[0].to, "%s", to);
        nrenamed++;
    }
    atomic_flag_clear(&renamed_lock);
}

/* fd was synced: when it is a folder, the renames in it last now */
static void renamed_synced(int fd) {
    struct stat sb;
    char link[64], path[4096];
    if (fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode)) return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = '\0';
    while (atomic_flag_test_and_set(&renamed_lock)) {
    }
    for (int i = 0; i < nrenamed;)
        if (!strcmp(renamed[i].dir, path))
            renamed[i] = renamed[--nrenamed];
        else
            i++;
    atomic_flag_clear(&renamed_lock);
}

__attribute__((constructor)) static void shim_start(void) {
    init();
}

__attribute__((destructor)) static void shim_end(void) {
    for (int f = 0; f < F_COUNT; f++) {
        long c = atomic_load(&counts[f]);
        if (c) report_line("count", f, c, "");
    }
    for (int i = 0; i < nrenamed && report; i++) {
        char line[1100];
        int len = snprintf(line, sizeof line, "undurable rename %.1000s\n", renamed[i].to);
        int fd = open(report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) continue;
        if (real_write(fd, line, (size_t)len) != len) {
        }
        real_close(fd);
    }
}

/* a regular file open for writing, other than standard error */
static int counted_fd(int fd) {
    if (fd < 0 || fd == 2) return 0;
    struct stat sb;
    int save = errno, fl = fcntl(fd, F_GETFL);
    int ok = fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    errno = save;
    return ok;
}

static int counted_stream(FILE *f) {
    return f && counted_fd(fileno(f));
}

/* The files written through and not synced since, by device and inode: a close of one of them
 * can lose data, a rename of one can leave its name leading to lost bytes after a crash. */
static struct {
    dev_t dev;
    ino_t ino;
} dirty[1024];
static int ndirty;
static atomic_flag dirty_lock = ATOMIC_FLAG_INIT;

static int dirty_find(const struct stat *sb) {
    for (int i = 0; i < ndirty; i++)
        if (dirty[i].dev == sb->st_dev && dirty[i].ino == sb->st_ino) return i;
    return -1;
}

/* fd's file is written (1) or synced (0) */
static void mark(int fd, int written) {
    struct stat sb;
    int save = errno;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        while (atomic_flag_test_and_set(&dirty_lock)) {
        }
        int i = dirty_find(&sb);
        if (written && i < 0 && ndirty < (int)(sizeof dirty / sizeof dirty[0])) {
            dirty[ndirty].dev = sb.st_dev;
            dirty[ndirty++].ino = sb.st_ino;
        } else if (!written && i >= 0) {
            dirty[i] = dirty[--ndirty];
        }
        atomic_flag_clear(&dirty_lock);
    }
    errno = save;
}

static int is_dirty(const struct stat *sb) {
    while (atomic_flag_test_and_set(&dirty_lock)) {
    }
    int i = dirty_find(sb);
    atomic_flag_clear(&dirty_lock);
    return i >= 0;
}

static const char *dirt(int fd) {
    struct stat sb;
    int save = errno;
    int synced = fd >= 0 && fstat(fd, &sb) == 0 && !is_dirty(&sb);
    errno = save;
    return synced ? " synced" : "";
}

/* counts a call of family fam on descriptor fd (-1: none); 1: this call fails (errno is set) */
static int fault(int fam, int fd) {
    init();
    long n = atomic_fetch_add(&counts[fam], 1) + 1;
    if (fam != target || target_n == 0 || n < target_n || (n > target_n && !sticky)) return 0;
    if (n == target_n) report_line("fired", fam, n, fam == F_CLOSE ? dirt(fd) : "");
    errno = target_errno;
    return 1;
}

static int fault_stream(int fam, FILE *f) {
    if (!counted_stream(f)) return 0;
    if (fam == F_FWRITE) mark(fileno(f), 1);
    if (!fault(fam, fileno(f))) return 0;
    f->_flags |= _IO_ERR_SEEN; /* glibc's ferror flag, as a failed write underneath sets it */
    errno = target_errno;
    return 1;
}

ssize_t write(int fd, const void *buf, size_t n) {
    init();
    if (counted_fd(fd)) {
        mark(fd, 1);
        if (fault(F_WRITE, fd)) return -1;
    }
    return real_write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    init();
    if (counted_fd(fd)) {
        mark(fd, 1);
        if (fault(F_WRITE, fd)) return -1;
    }
    return real_writev(fd, iov, cnt);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    init();
    if (counted_fd(fd)) {
        mark(fd, 1);
        if (fault(F_PWRITE, fd)) return -1;
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    init();
    if (counted_fd(fd)) {
        mark(fd, 1);
        if (fault(F_PWRITE, fd)) return -1;
    }
    return real_pwrite64(fd, buf, n, off);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    init();
    if (counted_fd(fd)) {
        mark(fd, 1);
        if (fault(F_PWRITE, fd)) return -1;
    }
    return real_pwritev(fd, iov, cnt, off);
}

int fsync(int fd) {
    init();
    if (fd >= 0 && fault(F_FSYNC, fd)) return -1;
    int r = real_fsync(fd);
    if (r == 0) {
        int save = errno;
        mark(fd, 0);
        renamed_synced(fd);
        errno = save;
    }
    return r;
}

int fdatasync(int fd) {
    init();
    if (fd >= 0 && fault(F_FDATASYNC, fd)) return -1;
    int r = real_fdatasync(fd);
    if (r == 0) {
        int save = errno;
        mark(fd, 0);
        renamed_synced(fd);
        errno = save;
    }
    return r;
}

int close(int fd) {
    init();
    int fail = counted_fd(fd) && fault(F_CLOSE, fd);
    int r = real_close(fd);
    if (!fail) return r;
    errno = target_errno;
    return -1;
}

int fclose(FILE *f) {
    init();
    int fd = f ? fileno(f) : -1;
    int fail = counted_stream(f) && fault(F_CLOSE, fd);
    int r = real_fclose(f);
    if (!fail) return r;
    errno = target_errno;
    return EOF;
}

int rename(const char *from, const char *to) {
    init();
    if (fault(F_RENAME, -1)) return -1;
    struct stat sb;
    int save = errno;
    if (lstat(from, &sb) == 0 && S_ISREG(sb.st_mode) && is_dirty(&sb) && report) {
        char line[4200];
        int len = snprintf(line, sizeof line, "unsynced rename %s\n", from);
        int fd = open(report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (real_write(fd, line, (size_t)len) != len) {
            }
            real_close(fd);
        }
    }
    errno = save;
    int r = real_rename(from, to);
    if (r == 0) {
        renamed_add(to);
        errno = save;
    }
    return r;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f) {
    init();
    if (fault_stream(F_FWRITE, f)) return 0;
    return real_fwrite(p, size, n, f);
}

int fputs(const char *s, FILE *f) {
    init();
    if (fault_stream(F_FWRITE, f)) return EOF;
    return real_fputs(s, f);
}

int fputc(int c, FILE *f) {
    init();
    if (fault_stream(F_FWRITE, f)) return EOF;
    return real_fputc(c, f);
}

int putc(int c, FILE *f) {
    init();
    if (fault_stream(F_FWRITE, f)) return EOF;
    return real_putc(c, f);
}

int vfprintf(FILE *f, const char *fmt, va_list ap) {
    init();
    if (fault_stream(F_FWRITE, f)) return -1;
    return real_vfprintf(f, fmt, ap);
}

int fprintf(FILE *f, const char *fmt, ...) {
    init();
    if (fault_stream(F_FWRITE, f)) return -1;
    va_list ap;
    va_start(ap, fmt);
    int r = real_vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) {
    init();
    if (fault_stream(F_FWRITE, f)) return -1;
    return real_vfprintf_chk(f, flag, fmt, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
    init();
    if (fault_stream(F_FWRITE, f)) return -1;
    va_list ap;
    va_start(ap, fmt);
    int r = real_vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return r;
}

int printf(const char *fmt, ...) {
    init();
    if (fault_stream(F_FWRITE, stdout)) return -1;
    va_list ap;
    va_start(ap, fmt);
    int r = real_vfprintf(stdout, fmt, ap);
    va_end(ap);
    return r;
}

int __printf_chk(int flag, const char *fmt, ...) {
    init();
    if (fault_stream(F_FWRITE, stdout)) return -1;
    va_list ap;
    va_start(ap, fmt);
    int r = real_vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return r;
}

int vprintf(const char *fmt, va_list ap) {
    init();
    if (fault_stream(F_FWRITE, stdout)) return -1;
    return real_vfprintf(stdout, fmt, ap);
}

int puts(const char *s) {
    init();
    if (fault_stream(F_FWRITE, stdout)) return EOF;
    return real_puts(s);
}

int putchar(int c) {
    init();
    if (fault_stream(F_FWRITE, stdout)) return EOF;
    return real_putchar(c);
}

int fflush(FILE *f) {
    init();
    if (fault_stream(F_FFLUSH, f)) return EOF;
    return real_fflush(f);
}

/* ---- allocations ---------------------------------------------------------------------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_int armed; /* main has started: allocations count */

/* 1: this allocation fails. Takes no lock and calls nothing that allocates before it is armed
 * (dlsym allocates while init runs). */
static int alloc_fault(void) {
    if (!atomic_load(&armed)) return 0;
    if (fault(F_ALLOC, -1)) {
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *malloc(size_t n) {
    if (alloc_fault()) return NULL;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    if (alloc_fault()) return NULL;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    if (n && alloc_fault()) return NULL;
    return __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    if (alloc_fault()) return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n) {
    if (alloc_fault()) return NULL;
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n) {
    if (alloc_fault()) return NULL;
    return __libc_memalign(align, n);
}

/* main, wrapped: allocations count from here */
static int (*real_main)(int, char **, char **);

static int counted_main(int argc, char **argv, char **envp) {
    atomic_store(&armed, 1);
    return real_main(argc, argv, envp);
}

typedef int (*start_fn)(int (*)(int, char **, char **), int, char **, void (*)(void),
                        void (*)(void), void (*)(void), void *);

int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                      void (*init_fn)(void), void (*fini)(void), void (*rtld_fini)(void),
                      void *stack_end) {
    start_fn real_start;
    RESOLVE(real_start, "__libc_start_main");
    real_main = main;
    return real_start(counted_main, argc, argv, init_fn, fini, rtld_fini, stack_end);
}
