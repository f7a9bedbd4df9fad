/* SPDX-License-Identifier: Apache-2.0 */
/* The tool's progress line: "label [=====>    ] done/total unit  rate unit/s  ETA m:ss" on
 * stderr, redrawn in place (a carriage return, then the line padded over the last one) at most
 * four times a second and once more when done reaches total, which ends the line. Nothing is
 * drawn unless stderr is a terminal and SLUICE_NO_PROGRESS is unset or empty, so what the tool
 * writes to a pipe or a file is the same with or without it (as tqdm-style tools do). One line is
 * open at a time: a call with another label, or with done below the last call's, starts a new
 * one (its clock and rate from there); sl_cli_progress_end ends a line left open before
 * anything else is printed (the next redraw, if any, starts a line below); the log callback
 * calls it from any thread, so a lock guards the line. */
#include "cli.h"
#include "common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define INTERVAL_S 0.25 /* between two redraws of one line */
#define BAR_WIDTH  30

static struct {
    char label[64];
    long long first, last; /* done at the line's first call, at its last */
    double t0, drawn_at;
    int width;     /* characters drawn last, to pad over */
    bool open;     /* a line is on the screen, not ended */
    bool begun;    /* a line's clock runs (label and first set) */
    bool finished; /* its done reached its total: later calls for it draw nothing */
} bar;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

bool sl_cli_interactive(void) {
    const char *off = getenv("SLUICE_NO_PROGRESS");
    return isatty(STDERR_FILENO) && !(off && *off);
}

/* The terminal's width, 80 when it does not say. */
static int columns(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

static void end_line(void);

static void draw(const char *unit, long long done, long long total, double now) {
    double secs = now - bar.t0, rate = secs > 0 ? (double)(done - bar.first) / secs : 0;
    char tail[128] = "", count[64];
    if (total > 0)
        snprintf(count, sizeof count, " %lld/%lld %s", done, total, unit);
    else
        snprintf(count, sizeof count, ": %lld %s", done, unit);
    if (rate > 0) {
        size_t n =
            (size_t)snprintf(tail, sizeof tail, "  %.*f %s/s", rate < 100 ? 1 : 0, rate, unit);
        if (total > done) {
            long long eta = (long long)((double)(total - done) / rate + 0.5);
            snprintf(tail + n, sizeof tail - n, "  ETA %lld:%02lld", eta / 60, eta % 60);
        }
    }
    /* the line must not wrap (a carriage return goes back one screen line only): the bar
     * shrinks, then goes, then the tail goes */
    int room = columns() - 1 - (int)strlen(bar.label) - (int)strlen(count);
    if (room - (int)strlen(tail) < 0) tail[0] = '\0';
    room -= (int)strlen(tail);
    int width = total > 0 ? (room - 3 < BAR_WIDTH ? room - 3 : BAR_WIDTH) : 0;
    char line[512];
    int n = snprintf(line, sizeof line, "%s", bar.label);
    if (width >= 10) {
        int fill = (int)(done >= total ? width : done * width / total);
        line[n++] = ' ';
        line[n++] = '[';
        for (int i = 0; i < width; i++) line[n++] = i < fill ? '=' : i == fill ? '>' : ' ';
        line[n++] = ']';
        line[n] = '\0';
    }
    n += snprintf(line + n, sizeof line - (size_t)n, "%s%s", count, tail);
    fprintf(stderr, "\r%s%*s", line, bar.width > n ? bar.width - n : 0, "");
    bar.width = n;
    bar.drawn_at = now;
    bar.open = true;
    if (total > 0 && done >= total) {
        bar.finished = true;
        end_line();
    }
    fflush(stderr);
}

void sl_cli_progress_of(const char *label, const char *unit, long long done, long long total) {
    static int on = -1; /* whether to draw, asked once (a call per training step is cheap) */
    pthread_mutex_lock(&lock);
    if (on < 0) on = sl_cli_interactive();
    if (!on) {
        pthread_mutex_unlock(&lock);
        return;
    }
    double now = sl_cli_now();
    if (!bar.begun || strncmp(bar.label, label, sizeof bar.label - 1) || done < bar.last) {
        end_line();
        snprintf(bar.label, sizeof bar.label, "%s", label);
        bar.first = done;
        bar.t0 = bar.drawn_at = now;
        bar.begun = true;
        bar.finished = false;
    }
    if (!bar.finished) {
        bar.last = done;
        if (now - bar.drawn_at >= INTERVAL_S || (total > 0 && done >= total))
            draw(unit, done, total, now);
    }
    pthread_mutex_unlock(&lock);
}

void sl_cli_progress(const char *label, long long done, long long total) {
    sl_cli_progress_of(label, "steps", done, total);
}

static void end_line(void) {
    if (bar.open) {
        fputc('\n', stderr);
        fflush(stderr);
    }
    bar.open = false;
    bar.width = 0;
}

void sl_cli_progress_end(void) {
    pthread_mutex_lock(&lock);
    end_line();
    pthread_mutex_unlock(&lock);
}
