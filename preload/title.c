/* The title a process gives itself (SS_REC_TITLE): servers name their processes by rewriting
 * their argument area (PostgreSQL's `postgres: checkpointer`, BSD's setproctitle), which
 * /proc/self/cmdline then shows. The profile's PROCESS record keeps the command line the process
 * started with (writer.c); this adds the title, read when a batch is written, where it differs,
 * so that a report names each process by its program and its role. Only system calls and static
 * buffers: it runs in the flusher and in a fork child's final flush. */
#include "ss_internal.h"

#include <errno.h>
#include <string.h>

static char ss_title_now[SS_TITLE_MAX + 1];
static char ss_title_written[SS_TITLE_MAX];
static size_t ss_title_written_len;

/* Appends a TITLE record to the batch being assembled when the title differs from both the
 * command line the process started with and the last title written. Returns -1 when memory
 * ran out. */
int ss_title_write(void) {
    size_t argv_len;
    const char *argv = ss_writer_original_argv(&argv_len);
    size_t len = ss_read_file("/proc/self/cmdline", ss_title_now, sizeof ss_title_now);
    /* The NULs after a title pad the argument area: they are no arguments. */
    while (len > 0 && ss_title_now[len - 1] == 0) len--;
    if (len > SS_TITLE_MAX) len = SS_TITLE_MAX;
    if (len == 0) return 0;
    int as_started = len == argv_len && memcmp(ss_title_now, argv, len) == 0;
    int as_written = len == ss_title_written_len && memcmp(ss_title_now, ss_title_written, len) == 0;
    if (as_written || (as_started && ss_title_written_len == 0)) return 0;
    struct ss_title_record r = {ss_mono_ns(), (uint32_t)len, 0};
    if (ss_out_record(SS_REC_TITLE, &r, sizeof r, ss_title_now, len) != 0) return -1;
    memcpy(ss_title_written, ss_title_now, len);
    ss_title_written_len = len;
    return 0;
}

/* Whether the argument area still holds the command line the process started with: a fork
 * child that rewrote it (and made no call we interpose) is written by the full path, which
 * records its title. A read of the area, no system call. */
SS_FORK_TEXT int ss_title_unchanged(void) {
    size_t argv_len;
    const char *argv = ss_writer_original_argv(&argv_len);
    const char *area = program_invocation_name;
    if (!area || argv_len == 0) return 1;
    for (size_t i = 0; i < argv_len; i++)
        if (area[i] != argv[i]) return 0;
    return 1;
}

/* A fork child's title is its own: what its parent wrote is not carried over. */
SS_FORK_TEXT void ss_title_after_fork_child(void) { ss_title_written_len = 0; }
