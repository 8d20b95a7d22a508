/* Writing the profile: the file, the periodic flush from a background thread, and the final flush.
 * Nothing here is on the hot path; it still never allocates through the program's allocator.
 *
 * Descriptors: the flusher thread gives itself a descriptor table of its own (unshare
 * CLONE_FILES) and closes its copies of the program's descriptors at once, so that the profile,
 * the /proc files it reads and the supervisor's index never take a number from the program's
 * table (nor count against its RLIMIT_NOFILE, which is per table), and the program's closing or
 * reusing descriptors cannot touch them. The final flush (exit, _exit, exec) is handed to the
 * flusher and waited for. Without a flusher (a fork child at its exit) a flush opens the file,
 * writes and closes it at once. If the kernel refuses a table of its own, the flusher keeps one
 * descriptor in the program's table, moved high and checked before each write. */
#include "ss_internal.h"
#include "ss_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <dlfcn.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

extern char *program_invocation_short_name;

enum { SS_FD_NONE = 0, SS_FD_PRIVATE = 1, SS_FD_SHARED = 2 };
SS_FORK_STATE static int ss_fd = -1;
SS_FORK_STATE static int ss_fd_mode;     /* where ss_fd lives: the flusher's own table, or the program's */
SS_FORK_STATE static char ss_path[1200]; /* the profile this image writes ("": not created yet) */
static dev_t ss_file_dev;  /* and its identity, to notice when the program closed our descriptor */
static ino_t ss_file_ino;
SS_FORK_STATE static int ss_file_failed;
SS_FORK_STATE static int ss_flushing; /* one flush at a time: the flusher thread or an exiting thread */
SS_FORK_STATE static int ss_finished; /* the final flush was written */
SS_FORK_STATE static uint64_t ss_flush_seq;
SS_FORK_STATE static int ss_flusher_started;
SS_FORK_STATE static pid_t ss_flusher_pid;      /* the process whose flusher runs (0: none) */
static uint32_t ss_flusher_word;  /* futex: bumped to wake the flusher */
uint32_t ss_flush_requested;
static int ss_early_flush; /* the flush being written is an early one (the flusher's own) */
static uint32_t ss_flusher_ready; /* futex: 1 the flusher is set up, 2 it could not create the file */
SS_FORK_STATE static uint32_t ss_final_state;   /* futex: 1 a final flush is asked for, 2 it is done */
static uint32_t ss_final_how;
static int32_t ss_final_status;
static SS_TLS int ss_is_flusher;
/* A credential change (creds.c): the flusher leaves, and the next one takes over its descriptor. */
static uint32_t ss_flusher_stop;   /* 1: the flusher is asked to leave */
static uint32_t ss_flusher_left;   /* futex: 1 once it has left its loop */
static pid_t ss_flusher_tid;
static int ss_handover_fd = -1;    /* the profile, in the program's table, for the next flusher */
SS_FORK_STATE static int ss_child_pending; /* a fork child whose lazy set-up has not run yet */
SS_FORK_STATE static uint64_t ss_child_start[3]; /* realtime, mono, ticks at fork */
SS_FORK_STATE static int ss_pack_short; /* an entry of ours in the pack is cut short */
/* A fork child: the launched process's own path (ss_config.output) is not its own. A flag here
 * rather than a store into ss_config: the child writes no page it need not (copied for it). */
SS_FORK_STATE static int ss_output_dropped;

static const char *ss_output(void) { return ss_output_dropped ? "" : ss_config.output; }
static void ss_file_header(struct ss_file_header *fh);
static struct ss_file_header ss_header_template; /* the same for every file: a fork child's bare pack copies it */
static uint32_t ss_crc_table[256];
static struct ss_process_record ss_process;
extern uint64_t ss_process_start_mono_ns;
SS_FORK_STATE static struct ss_buf ss_out;
SS_FORK_STATE struct ss_buf ss_fold_out;

static long ss_futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout) {
    return ss_futex_own(word, op | FUTEX_PRIVATE_FLAG, val, timeout);
}

uint32_t ss_crc32(uint32_t crc, const void *data, size_t len) {
    const unsigned char *p = data;
    crc = ~crc;
    while (len--) crc = ss_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* Programs close or reuse descriptors they did not open (daemons close them all at start-up). Before
 * writing, make sure ours is still our file; if not, never touch that number again (it may be the
 * program's now) and reopen the profile by its path. */
static int ss_check_descriptor(void) {
    struct stat st;
    if (fstat(ss_fd, &st) == 0 && st.st_dev == ss_file_dev && st.st_ino == ss_file_ino) return 0;
    int fd = open(ss_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return -1;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    ss_file_dev = st.st_dev;
    ss_file_ino = st.st_ino;
    ss_fd = fd;
    return 0;
}

static int ss_write_all(int fd, const void *data, size_t len) {
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- output buffers: records are assembled here, then written with one write() ---- */

static int ss_buf_reserve(struct ss_buf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1u << 16;
    while (cap < b->len + more) cap *= 2;
    unsigned char *p = ss_map_wiped(cap);
    if (!p) return -1;
    if (b->p) {
        memcpy(p, b->p, b->len);
        ss_unmap(b->p, b->cap);
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Appends a record made of up to three payload parts; returns -1 when out of memory. */
int ss_buf_record3(struct ss_buf *b, uint32_t type, const void *a, size_t alen, const void *x, size_t xlen,
                   const void *c, size_t clen) {
    size_t size = alen + xlen + clen, padded = (size + 7) & ~(size_t)7;
    if (ss_buf_reserve(b, sizeof(struct ss_record_header) + padded) != 0) return -1;
    struct ss_record_header h = {type, (uint32_t)size, 0, 0};
    unsigned char *payload = b->p + b->len + sizeof h;
    if (alen) memcpy(payload, a, alen);
    if (xlen) memcpy(payload + alen, x, xlen);
    if (clen) memcpy(payload + alen + xlen, c, clen);
    memset(payload + size, 0, padded - size);
    h.crc = ss_crc32(ss_crc32(0, &h, 8), payload, size); /* covers type and size too */
    memcpy(b->p + b->len, &h, sizeof h);
    b->len += sizeof h + padded;
    return 0;
}

struct ss_buf *ss_out_buf(void) { return &ss_out; }

int ss_out_record3(uint32_t type, const void *a, size_t alen, const void *b, size_t blen, const void *c,
                   size_t clen) {
    return ss_buf_record3(&ss_out, type, a, alen, b, blen, c, clen);
}

int ss_out_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
    return ss_out_record3(type, a, alen, b, blen, NULL, 0);
}

/* For records made elsewhere (phases.c); a record that does not fit in memory is dropped. */
void ss_out_append(uint32_t type, const void *payload, size_t size) { (void)ss_out_record(type, payload, size, NULL, 0); }

/* ---- the process record ---- */

/* The process record, but for what is known only when the file is made (pid, ppid, CPUs). */
static void ss_fill_process(uint64_t realtime_ns, uint64_t mono_ns, uint64_t ticks) {
    memset(&ss_process, 0, sizeof ss_process);
    ss_process.start_realtime_ns = realtime_ns;
    ss_process.start_mono_ns = mono_ns;
    ss_process.start_ticks = ticks;
    ss_process.ticks_per_sec = ss_ticks_per_sec;
    ss_process.timing = ss_config.timing;
    ss_process.timing_period = ss_config.period;
    strncpy(ss_process.libc_version, gnu_get_libc_version(), sizeof ss_process.libc_version - 1);
    Dl_info info;
    const char *allocator = ss_object_path((void *)ss_real.malloc);
    if (allocator && !*allocator && dladdr((void *)ss_real.malloc, &info) && info.dli_fname)
        allocator = info.dli_fname; /* the program's own: dladdr names it as the loader does */
    if (!allocator) allocator = "unknown";
    strncpy(ss_process.allocator, allocator, sizeof ss_process.allocator - 1);
}

/* argv[0]'s base name and the whole command line as the program started, copied at
 * initialisation (before main): a program that rewrites its title (PostgreSQL's backends,
 * setproctitle) overwrites the argument area, which program_invocation_short_name points into
 * and /proc/self/cmdline shows, with its title and zeros. Its profile names it by how it was
 * started: its file after its program, its command the original argv (a fork child's is its
 * parent's, as it started), never the title followed by the zeroed rest as empty arguments. */
static char ss_short_name[256];
static char ss_argv[65536];
static size_t ss_argv_len;

/* The command line in `buf` as /proc/self/cmdline has it now, without the NUL that ends the last
 * argument; `title_safe`: without any NUL at its end (zeros after a title are no arguments). */
static size_t ss_read_cmdline(char *buf, size_t cap, int title_safe) {
    size_t len = ss_read_file("/proc/self/cmdline", buf, cap);
    /* One NUL ends the last argument; any before it belong to empty arguments (`--save ""`). */
    if (len > 0 && buf[len - 1] == 0) len--;
    while (title_safe && len > 0 && buf[len - 1] == 0) len--;
    return len;
}

/* The command line the process started with, as its PROCESS record holds it (title.c). */
SS_FORK_TEXT const char *ss_writer_original_argv(size_t *len) {
    *len = ss_argv_len;
    return ss_argv;
}

void ss_writer_init(void) {
    if (program_invocation_short_name)
        strncpy(ss_short_name, program_invocation_short_name, sizeof ss_short_name - 1);
    /* Loaded into a running process by attach: it may have rewritten its title already. */
    ss_argv_len = ss_read_cmdline(ss_argv, sizeof ss_argv, ss_injected);
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        ss_crc_table[i] = c;
    }
    ss_file_header(&ss_header_template);
    ss_fill_process(ss_realtime_ns(), ss_mono_ns(), ss_ticks());
    ss_process_start_mono_ns = ss_process.start_mono_ns;
}

/* ---- the file ---- */

static void ss_append_name(struct ss_str *s, const char *name) {
    for (; *name && s->len + 1 < s->cap; name++) {
        char c = *name;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-' || c == '+';
        s->p[s->len++] = ok ? c : '_';
    }
    s->p[s->len] = 0;
}

static void ss_note_in_index(const char *path) {
    if (!ss_config.index[0]) return;
    int fd = open(ss_config.index, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    char line[1200];
    struct ss_str s = {line, 0, sizeof line};
    ss_str_u64(&s, (uint64_t)getpid());
    ss_str_cat(&s, " ");
    ss_str_u64(&s, (uint64_t)ss_parent_pid);
    ss_str_cat(&s, " ");
    ss_str_cat(&s, path);
    ss_str_cat(&s, "\n");
    ss_write_all(fd, line, s.len); /* one short O_APPEND write: lines from processes never interleave */
    close(fd);
}

static int ss_write_head(int fd);
static struct ss_buf *ss_build_head(void);

/* Creates the profile file exclusively, never overwriting, and writes its header; returns its
 * descriptor (in the calling thread's table) or -1. */
/* The profile's path for the given attempt (0: the first choice); 0 if it does not fit. */
SS_FORK_TEXT static int ss_profile_path(char *path, size_t cap, int attempt) {
    struct ss_str s = {path, 0, cap};
    if (ss_output()[0]) {
        ss_str_cat(&s, ss_output());
        if (attempt > 0) { /* an exec'd image of the launched process: FILE.1, FILE.2, ... */
            ss_str_cat(&s, ".");
            ss_str_u64(&s, (uint64_t)attempt);
        }
    } else {
        if (ss_config.dir[0]) {
            ss_str_cat(&s, ss_config.dir);
            ss_str_cat(&s, "/");
        }
        ss_str_cat(&s, "stallscope-");
        /* The name the program started with (see ss_short_name); without one (argv[0] empty, or
         * zeroed by a title before we looked), the executable's, never `stallscope--366.prof`. */
        const char *name = ss_short_name;
        if (!name[0]) {
            static char exe[4096];
            name = "program";
            if (ss_main_program(exe, sizeof exe) > 0) {
                const char *base = strrchr(exe, '/');
                base = base ? base + 1 : exe;
                if (base[0]) name = base;
            }
        }
        ss_append_name(&s, name);
        ss_str_cat(&s, "-");
        ss_str_u64(&s, (uint64_t)SS_RAW(SYS_getpid, 0, 0, 0));
        if (attempt > 0) {
            ss_str_cat(&s, ".");
            ss_str_u64(&s, (uint64_t)attempt);
        }
        ss_str_cat(&s, ".prof");
    }
    return s.len + 1 < s.cap;
}

/* Creates the profile file exclusively, never overwriting, and writes its header; returns its
 * descriptor (in the calling thread's table) or -1. */
static int ss_create_profile(void) {
    char path[1200];
    int fd = -1, made_dir = 0;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        if (!ss_profile_path(path, sizeof path, attempt)) break;
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        /* The run's directory for the other processes is made by the first of them that writes
         * there (`stallscope run` makes none: most runs start no other process, and a directory
         * made and removed costs a start a tenth of a millisecond on ext4). The same attempt again. */
        if (fd < 0 && errno == ENOENT && !made_dir && !ss_output()[0] && ss_config.dir[0]) {
            made_dir = 1;
            if (mkdir(ss_config.dir, 0777) == 0) {
                /* Under the umask of whichever process came first: one without owner write or
                 * search (umask 0277) would shut every process out, itself included. */
                struct stat st;
                if (stat(ss_config.dir, &st) == 0 && (st.st_mode & 0700) != 0700)
                    chmod(ss_config.dir, (st.st_mode & 07777) | 0700);
            } else if (errno != EEXIST) {
                break;
            }
            attempt--;
            continue;
        }
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return -1;
    memcpy(ss_path, path, sizeof ss_path);
    if (ss_write_head(fd) != 0) {
        close(fd);
        return -1;
    }
    ss_note_in_index(path);
    return fd;
}

/* A window's file (attach.c): the record that says which part of the process's life it holds. */
static struct ss_attach_record ss_attach_rec;
static int ss_attach_on;

/* The file header and the first batch (PROCESS, ATTACH in a window's file, FLUSH), assembled in
 * a buffer of its own (a flush may be under way in ss_out); NULL if it cannot be. */
static void ss_file_header(struct ss_file_header *fh) {
    memset(fh, 0, sizeof *fh);
    memcpy(fh->magic, SS_MAGIC, 8);
    fh->version = SS_VERSION;
    fh->header_size = sizeof *fh;
    fh->byte_order = SS_BYTE_ORDER_MARK;
    fh->crc = ss_crc32(0, fh, offsetof(struct ss_file_header, crc));
}

/* The executable and the CPUs, found at the first head (a fork child's are its parent's). */
static char ss_exe[4096];
static ssize_t ss_exe_len = -1;
static uint32_t ss_ncpus;

/* The process record's fields known when its file is made. */
SS_FORK_TEXT static void ss_process_fields(struct ss_process_record *p, size_t cmd_len) {
    p->ncpus = ss_ncpus;
    p->flags = (ss_fork_child ? SS_PROCESS_FORKED : 0u) |
               (ss_config.rwlock_steps ? SS_PROCESS_RWLOCK_STEPS : 0u) |
               (ss_config.mutex_steps ? SS_PROCESS_MUTEX_STEPS : 0u) |
               (ss_stacks_no_unwinder ? SS_PROCESS_NO_UNWINDER : 0u) | (ss_attach_on ? SS_PROCESS_ATTACHED : 0u) |
               (ss_heap_unchecked ? SS_PROCESS_HEAP_UNCHECKED : 0u) |
               (ss_arena_reads_off ? SS_PROCESS_ARENAS_UNREAD : 0u) | (ss_fast_bytes ? SS_PROCESS_SMALL_BY_COUNT : 0u) |
               (ss_config.timed_before_longer ? SS_PROCESS_TIMING_LONGER : 0u);
    p->pid = (uint32_t)SS_RAW(SYS_getpid, 0, 0, 0);
    p->ppid = (uint32_t)ss_parent_pid;
    p->cmdline_len = (uint32_t)cmd_len;
    p->exe_len = (uint32_t)ss_exe_len;
}

static struct ss_buf *ss_build_head(void) {
    struct ss_file_header fh;
    ss_file_header(&fh);

    /* The command line as the program started (ss_argv), or without /proc then, as it is now;
     * the executable and the CPUs are the same until exec: a fork child reuses them. */
    static char cmdline[65536];
    const char *cmd = ss_argv;
    size_t cmd_len = ss_argv_len;
    if (cmd_len == 0) {
        cmd_len = ss_read_cmdline(cmdline, sizeof cmdline, 1);
        cmd = cmdline;
    }
    if (ss_exe_len < 0) ss_exe_len = (ssize_t)ss_main_program(ss_exe, sizeof ss_exe);
    if (ss_exe_len < 0) ss_exe_len = 0;
    if (!ss_ncpus) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ss_ncpus = n > 0 ? (uint32_t)n : 1;
    }
    ss_process_fields(&ss_process, cmd_len);

    static struct ss_buf head;
    head.len = 0;
    static unsigned char strings[65536 + 4096];
    memcpy(strings, cmd, cmd_len);
    memcpy(strings + cmd_len, ss_exe, (size_t)ss_exe_len);
    /* A flush record ends even this first batch, so that a file cut short is never taken whole. */
    struct ss_flush_record fl = {0, ss_mono_ns(), ss_ticks(), 0};
    if (ss_buf_reserve(&head, sizeof fh) != 0) return NULL;
    memcpy(head.p, &fh, sizeof fh);
    head.len = sizeof fh;
    if (ss_buf_record3(&head, SS_REC_PROCESS, &ss_process, sizeof ss_process, strings, cmd_len + (size_t)ss_exe_len,
                       NULL, 0) != 0 ||
        (ss_attach_on &&
         ss_buf_record3(&head, SS_REC_ATTACH, &ss_attach_rec, sizeof ss_attach_rec, NULL, 0, NULL, 0) != 0) ||
        ss_buf_record3(&head, SS_REC_FLUSH, &fl, sizeof fl, NULL, 0, NULL, 0) != 0)
        return NULL;
    return &head;
}

static int ss_write_head(int fd) {
    struct ss_buf *head = ss_build_head();
    if (!head || ss_write_all(fd, head->p, head->len) != 0) return -1;
    struct stat st;
    if (fstat(fd, &st) == 0) {
        ss_file_dev = st.st_dev;
        ss_file_ino = st.st_ino;
    }
    return 0;
}

/* A descriptor of the profile for the calling thread, creating the file if needed; *transient
 * says the caller closes it after its write. The flusher keeps its own; any other thread (no
 * flusher in this process, or one that does not answer) opens one for this write only. */
static int ss_profile_fd(int *transient) {
    *transient = 0;
    if (ss_fd >= 0 && (ss_fd_mode == SS_FD_SHARED || (ss_fd_mode == SS_FD_PRIVATE && ss_is_flusher))) {
        if (ss_fd_mode == SS_FD_SHARED && ss_check_descriptor() != 0) return -1;
        return ss_fd;
    }
    if (ss_file_failed) return -1;
    int fd = ss_path[0] ? open(ss_path, O_WRONLY | O_APPEND | O_CLOEXEC) : ss_create_profile();
    if (fd < 0) {
        ss_file_failed = 1; /* stay silent: the program's output must not change; run reports it */
        return -1;
    }
    if (!ss_is_flusher) {
        *transient = 1;
        return fd;
    }
    if (ss_fd_mode == SS_FD_SHARED) {
        /* No table of our own: keep the descriptor away from the numbers programs expect to control. */
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
        if (high >= 0) {
            close(fd);
            fd = high;
        }
    }
    ss_fd = fd;
    return fd;
}

/* Before exec: the launched process's explicit output path belongs to its last image, which the
 * user asked about; an earlier image (a wrapper script that execs) moves to PATH.exec-N. */
void ss_writer_before_exec(void) {
    if (!ss_path[0] || !ss_output()[0] || strcmp(ss_path, ss_output()) != 0) return;
    for (uint64_t n = 1; n < 100; n++) {
        char moved[1200];
        struct ss_str s = {moved, 0, sizeof moved};
        ss_str_cat(&s, ss_output());
        ss_str_cat(&s, ".exec-");
        ss_str_u64(&s, n);
        if (s.len + 1 >= s.cap) return;
        if (link(ss_path, moved) == 0) { /* link, unlike rename, never replaces a file */
            unlink(ss_path);
            memcpy(ss_path, moved, sizeof ss_path);
            ss_note_in_index(moved);
            return;
        }
        if (errno != EEXIST) return;
    }
}

/* exec failed: the process goes on, and later flushes follow the END record. */
void ss_writer_exec_failed(void) {
    ss_finished = 0;
    __atomic_store_n(&ss_final_state, 0, __ATOMIC_RELEASE);
}

/* After fork the child writes its own file (created at its first flush) and has no flusher. Only
 * a few stores here: the rest waits until the child records or writes (ss_writer_child_setup). */
SS_FORK_TEXT void ss_writer_after_fork_child(void) {
    if (ss_fd >= 0 && ss_fd_mode == SS_FD_SHARED) close(ss_fd); /* our copy in the program's table */
    /* A descriptor of the parent's flusher's own table is no descriptor here: never close it. */
    ss_fd = -1;
    ss_fd_mode = SS_FD_NONE;
    ss_path[0] = 0;
    ss_file_failed = 0;
    ss_flushing = 0;
    ss_finished = 0;
    ss_flush_seq = 0;
    ss_flusher_started = 0;
    ss_flusher_pid = 0;
    ss_final_state = 0;
    ss_out.len = 0;
    ss_fold_out.len = 0;
    ss_pack_short = 0;
    ss_output_dropped = 1; /* the launched process's own path */
    ss_child_start[0] = ss_raw_clock_ns(CLOCK_REALTIME);
    ss_child_start[1] = ss_raw_clock_ns(CLOCK_MONOTONIC);
    ss_child_start[2] = ss_ticks();
    ss_child_pending = 1;
    ss_title_after_fork_child();
}

/* This module's steps, walked by the lifecycle (lifecycle.c). */
const struct ss_steps ss_writer_steps = {.name = "writer", .on_fork_child = ss_writer_after_fork_child};
/* When the fork child began (monotonic ns): its one thread's life and CPU clock start there. */
uint64_t ss_writer_child_start_mono(void) { return ss_child_start[1]; }

/* The child's set-up, once it records or writes: its process record, fresh stack tables. */
void ss_writer_child_setup(void) {
    if (!ss_child_pending) return;
    ss_child_pending = 0;
    /* The strings (glibc's version, the allocator) are the parent's: only the times differ. */
    ss_process.start_realtime_ns = ss_child_start[0];
    ss_process.start_mono_ns = ss_child_start[1];
    ss_process.start_ticks = ss_child_start[2];
    ss_stacks_child_setup();
}

/* ---- flushing ---- */

SS_FORK_TEXT int ss_flush_try_lock(void) {
    int expected = 0;
    return __atomic_compare_exchange_n(&ss_flushing, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

SS_FORK_TEXT void ss_flush_unlock(void) { __atomic_store_n(&ss_flushing, 0, __ATOMIC_RELEASE); }

/* A fork child that ends before it has a file (one that only exits, or lived too briefly for its
 * flusher's first write) under `stallscope run` creates none: making a file is most of what such
 * a child costs (an inode on the profile's file system: 300-400 us of a 500 us fork on ext4).
 * Its whole profile, the same bytes, goes with one O_APPEND writev into the supervisor's pack
 * (INDEX-pack, made by `stallscope run`), as "PID PPID LEN PATH\n" and LEN bytes; the supervisor
 * writes the file at PATH (or PATH's next free name) when the launched process has ended
 * (src/run.rs, Session::unpack). No pack (it is gone once the supervisor has read it, or there
 * is no supervisor): the child creates its file as before. */
SS_FORK_TEXT static int ss_packable(void) {
    return ss_fork_child && !ss_path[0] && ss_fd < 0 && !ss_file_failed && ss_config.index[0] &&
           !ss_output()[0] && !ss_pack_short;
}

static int ss_pack_write(void) {
    char pack[1200], name[1200], line[1400];
    struct ss_str ps = {pack, 0, sizeof pack};
    ss_str_cat(&ps, ss_config.index);
    ss_str_cat(&ps, "-pack");
    if (ps.len + 1 >= ps.cap || !ss_profile_path(name, sizeof name, 0) || strchr(name, '\n')) return -1;
    struct ss_buf *head = ss_build_head();
    if (!head) return -1;
    struct ss_str l = {line, 0, sizeof line};
    ss_str_u64(&l, (uint64_t)getpid());
    ss_str_cat(&l, " ");
    ss_str_u64(&l, (uint64_t)ss_parent_pid);
    ss_str_cat(&l, " ");
    ss_str_u64(&l, (uint64_t)(head->len + ss_out.len));
    ss_str_cat(&l, " ");
    ss_str_cat(&l, name);
    ss_str_cat(&l, "\n");
    if (l.len + 1 >= l.cap) return -1;
    int fd = open(pack, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return -1;
    struct iovec iov[3] = {{line, l.len}, {head->p, head->len}, {ss_out.p, ss_out.len}};
    ssize_t want = (ssize_t)(l.len + head->len + ss_out.len), n;
    do n = writev(fd, iov, 3); /* one write: entries from processes never interleave */
    while (n < 0 && errno == EINTR);
    close(fd);
    return n == want ? 0 : -1; /* a short entry is one the supervisor drops */
}

/* A record appended in place to `b`, a buffer of the caller's that never grows: its payload is
 * written at the pointer returned (zeroed, NULL when it does not fit), then sealed. */
static void *ss_bare_payload(struct ss_buf *b, size_t size) {
    size_t padded = (size + 7) & ~(size_t)7;
    if (b->len + sizeof(struct ss_record_header) + padded > b->cap) return NULL;
    unsigned char *p = b->p + b->len + sizeof(struct ss_record_header);
    ss_raw_zero(p, padded);
    return p;
}

SS_FORK_TEXT static void ss_bare_seal(struct ss_buf *b, uint32_t type, size_t size) {
    struct ss_record_header h = {type, (uint32_t)size, 0, 0}; /* the supervisor computes the CRC */
    ss_raw_copy(b->p + b->len, &h, sizeof h);
    b->len += sizeof h + ((size + 7) & ~(size_t)7);
}

/* The whole profile of a packable fork child that made no call we interpose (one that only
 * exits): the records the full path writes for it (PROCESS, FLUSH, SAMPLING, its one THREAD,
 * END), assembled on this stack from what its parent left, and written into the pack, their
 * checksums left to the supervisor (src/run.rs; they were a tenth of such a child's CPU time). The full
 * path would attach its thread, reset its node and assemble in the output buffers: pages of the
 * interposer's that the kernel must give the child (copied or zeroed) for one write, about twenty
 * of a child's sixty page faults. Returns -1 when it cannot (the full path then runs). */
SS_FORK_TEXT static int ss_pack_bare(uint32_t how, int32_t status) {
    if (ss_argv_len == 0 || ss_exe_len < 0 || !ss_ncpus || ss_attach_on || ss_fold_out.len || ss_lifecycle()->bare_pending() ||
        !ss_title_unchanged())
        return -1;
    char pack[1200], line[1400];
    struct ss_str ps = {pack, 0, sizeof pack};
    ss_str_cat(&ps, ss_config.index);
    ss_str_cat(&ps, "-pack");
    if (ps.len + 1 >= ps.cap) return -1;
    uint64_t now = ss_raw_clock_ns(CLOCK_MONOTONIC), ticks = ss_ticks();

    struct {
        struct ss_file_header fh;
        struct ss_record_header h;
        struct ss_process_record p;
    } head;
    _Static_assert(sizeof head == sizeof head.fh + sizeof head.h + sizeof head.p, "no padding in the head");
    head.fh = ss_header_template;
    head.p = ss_process;
    head.p.start_realtime_ns = ss_child_start[0];
    head.p.start_mono_ns = ss_child_start[1];
    head.p.start_ticks = ss_child_start[2];
    ss_process_fields(&head.p, ss_argv_len);
    size_t psize = sizeof head.p + ss_argv_len + (size_t)ss_exe_len;
    head.h = (struct ss_record_header){SS_REC_PROCESS, (uint32_t)psize, 0, 0};

    /* The process record's padding, then the other records (their payloads are multiples of 8). */
    uint64_t tail_words[384];
    _Static_assert(sizeof tail_words >= 7 + 4 * sizeof(struct ss_record_header) + sizeof(struct ss_flush_record) +
                                            sizeof(struct ss_sampling_record) + sizeof(struct ss_thread_record) +
                                            sizeof(struct ss_end_record),
                   "the bare pack's records fit");
    struct ss_buf tail = {(unsigned char *)tail_words, ((psize + 7) & ~(size_t)7) - psize, sizeof tail_words};
    ss_raw_zero(tail.p, tail.len);
    struct ss_flush_record *fl = ss_bare_payload(&tail, sizeof *fl);
    if (!fl) return -1;
    *fl = (struct ss_flush_record){0, now, ticks, 0};
    ss_bare_seal(&tail, SS_REC_FLUSH, sizeof *fl);
    struct ss_sampling_record sampling;
    if (ss_lifecycle()->bare_sampling(&sampling)) {
        struct ss_sampling_record *r = ss_bare_payload(&tail, sizeof *r);
        if (!r) return -1;
        *r = sampling;
        ss_bare_seal(&tail, SS_REC_SAMPLING, sizeof *r);
    }
    struct ss_thread_record *rec = ss_bare_payload(&tail, sizeof *rec);
    if (!rec) return -1;
    ss_lifecycle()->bare_thread(rec, ss_child_start[1], now);
    ss_bare_seal(&tail, SS_REC_THREAD, sizeof *rec);
    struct ss_end_record *end = ss_bare_payload(&tail, sizeof *end);
    if (!end) return -1;
    *end = (struct ss_end_record){how, status, now, ticks};
    ss_bare_seal(&tail, SS_REC_END, sizeof *end);

    size_t len = sizeof head + ss_argv_len + (size_t)ss_exe_len + tail.len;
    struct ss_str l = {line, 0, sizeof line};
    ss_str_u64(&l, (uint64_t)SS_RAW(SYS_getpid, 0, 0, 0));
    ss_str_cat(&l, " ");
    ss_str_u64(&l, (uint64_t)ss_parent_pid);
    ss_str_cat(&l, " ");
    ss_str_u64(&l, (uint64_t)len);
    ss_str_cat(&l, "+ "); /* "+": the records' checksums are the supervisor's to compute (src/run.rs) */
    if (!ss_profile_path(line + l.len, l.cap - l.len - 1, 0) || ss_raw_has_newline(line + l.len)) return -1;
    l.len += ss_raw_strlen(line + l.len);
    line[l.len++] = '\n';
    /* System calls of its own, not libc's: see ss_raw.h. */
    int fd = (int)SS_RAW(SYS_openat, AT_FDCWD, pack, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return -1;
    struct iovec iov[5] = {{line, l.len}, {&head, sizeof head}, {ss_argv, ss_argv_len}, {ss_exe, (size_t)ss_exe_len},
                           {tail.p, tail.len}};
    ssize_t want = (ssize_t)(l.len + len), n;
    do n = SS_RAW(SYS_writev, fd, iov, 5); /* one write: entries from processes never interleave */
    while (n == -EINTR);
    SS_RAW(SYS_close, fd, 0, 0);
    if (n >= 0 && n != want) ss_pack_short = 1; /* the supervisor drops it: the full path makes a file */
    return n == want ? 0 : -1;
}

/* Assembles one batch and writes it. The caller holds the flush lock. */
SS_FORK_TEXT static void ss_flush_now(int final, uint32_t how, int32_t status) {
    if (ss_finished && !final) return;
    if (final && how != SS_END_EXEC && ss_child_pending && ss_packable() && ss_lifecycle()->fork_child_untouched() &&
        ss_pack_bare(how, status) == 0) {
        ss_finished = 1;
        return;
    }
    /* A fork child's first image that execs (the usual fork-exec) leaves no profile. */
    if (final && how == SS_END_EXEC && !ss_path[0]) return;
    ss_writer_child_setup();
    if (final) ss_lifecycle()->batch_final_pending(); /* a fork child that made no call we interpose */
    int transient = 0, packed = final && ss_packable();
    int fd = packed ? -1 : ss_profile_fd(&transient);
    if (fd < 0 && !packed) return;
    ss_out.len = 0;
    ss_lifecycle()->batch_begin(final);
    int ok = 1, had_fold_samples = ss_fold_out.len > 0;
    if (ss_fold_out.len) { /* samples of folded threads, gathered since the last flush */
        ok = ss_buf_reserve(&ss_out, ss_fold_out.len) == 0;
        if (ok) {
            memcpy(ss_out.p, ss_fold_out.p, ss_fold_out.len);
            ss_out.len = ss_fold_out.len;
        }
        ss_fold_out.len = 0;
    }
    ok = ok && ss_lifecycle()->batch_records(final, had_fold_samples) == 0 && ss_title_write() == 0;
    if (ok) {
        if (final) {
            struct ss_end_record end = {how, status, ss_mono_ns(), ss_ticks()};
            ok = ss_out_record(SS_REC_END, &end, sizeof end, NULL, 0) == 0;
        } else {
            struct ss_flush_record fl = {++ss_flush_seq, ss_mono_ns(), ss_ticks(), 0};
            ok = ss_out_record(SS_REC_FLUSH, &fl, sizeof fl, NULL, 0) == 0;
        }
    }
    if (ok && packed && ss_pack_write() != 0) fd = ss_profile_fd(&transient); /* no pack: a file */
    if (ok && fd >= 0 && ss_write_all(fd, ss_out.p, ss_out.len) != 0) ss_file_failed = 1;
    if (transient) close(fd);
    ss_lifecycle()->batch_end(!ss_early_flush);
    /* After END nothing more is written (a flush between an exec's END and the exec itself would
     * make the image look cut short), unless the exec fails (ss_writer_exec_failed). */
    if (final) ss_finished = 1;
}

static void ss_flush_locked(int final, uint32_t how, int32_t status) {
    int waited_ms = 0;
    while (!ss_flush_try_lock()) {
        if (!final || waited_ms++ > 2000) return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL); /* a flush is being written; the final flush waits for it */
    }
    ss_flush_now(final, how, status);
    ss_flush_unlock();
}

int ss_on_flusher(void) { return ss_is_flusher; }

SS_FORK_TEXT int ss_flusher_running(void) { return ss_flusher_pid != 0 && ss_flusher_pid == ss_pid; }

void ss_wake_flusher(void) {
    if (!ss_flusher_running()) return;
    __atomic_add_fetch(&ss_flusher_word, 1, __ATOMIC_RELEASE);
    ss_futex(&ss_flusher_word, FUTEX_WAKE, 1, NULL);
}

/* The last flush of this image (exit, _exit, exec): the flusher writes it, in its own descriptor
 * table, while the caller waits; without a flusher the caller writes it. */
SS_FORK_TEXT void ss_final_flush(uint32_t how, int32_t status) {
    if (ss_flusher_running() && !ss_is_flusher) {
        uint32_t expected = 0; /* 3 while this thread fills in the request, then 1 */
        if (__atomic_compare_exchange_n(&ss_final_state, &expected, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            ss_final_how = how;
            ss_final_status = status;
            __atomic_store_n(&ss_final_state, 1, __ATOMIC_RELEASE);
            ss_wake_flusher();
        }
        /* Bounded: a flusher that does not answer leaves a partial profile, never a hung program. */
        for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
            uint32_t state = __atomic_load_n(&ss_final_state, __ATOMIC_ACQUIRE);
            if (state == 2) return;
            struct timespec ts = {0, 10 * 1000000L};
            ss_futex(&ss_final_state, FUTEX_WAIT, state, &ts);
        }
        return;
    }
    ss_flush_locked(1, how, status);
}

/* ---- the flusher thread ---- */

/* Closes a descriptor the table lists, but the listing's own and the one to keep. */
static int ss_close_listed_fd(uint64_t fd, void *ctx) {
    const int *skip = ctx;
    if (fd != UINT64_MAX && (int)fd != skip[0] && (int)fd != skip[1]) close((int)fd);
    return 1;
}

/* Gives the calling thread a descriptor table of its own, holding none of the program's
 * descriptors (its copies would keep the program's pipes and sockets open). */
static int ss_own_descriptor_table(int keep) {
    if (syscall(SYS_unshare, CLONE_FILES) != 0) return 0;
    if (keep < 0 && syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return 1;
    /* `keep`: the profile's descriptor handed over by the caller of ss_flusher_pause. */
    if (keep >= 0 && (keep == 0 || syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0) &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return 1;
    /* Before Linux 5.9: close what the table lists. */
    int dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 1; /* nothing can be listed: then nothing was open but what we cannot see */
    int skip[2] = {dir, keep};
    ss_each_dir_number(dir, ss_close_listed_fd, skip);
    close(dir);
    return 1;
}

static void ss_flusher_serve_final(void) {
    if (__atomic_load_n(&ss_final_state, __ATOMIC_ACQUIRE) != 1) return;
    ss_flush_locked(1, ss_final_how, ss_final_status);
    __atomic_store_n(&ss_final_state, 2, __ATOMIC_RELEASE);
    ss_futex(&ss_final_state, FUTEX_WAKE, 1 << 30, NULL);
}

/* The flusher is not real-time. It inherits the scheduling of the thread that made it: in a
 * program run at real-time priority (chrt -f), a flusher at the program's priority that wakes for
 * a tick takes a CPU and keeps it until it sleeps again (threads of equal real-time priority do not
 * preempt one another), so a program thread woken meanwhile waits for it: two threads handing a
 * mutex over go to sleep and wake less often (docs/PERFORMANCE.md, "Faithfulness: the sampler").
 * At normal priority it runs when a CPU is free of the program's real-time threads, or in the share
 * the kernel keeps for other threads (sched_rt_runtime_us). A look it takes late weighs the time
 * since the previous one (wall samples lose no time, only resolution); CPU samples wait in their
 * threads' rings meanwhile (a full ring drops samples and counts them). Each flusher thread leaves
 * it as it starts (a fork child's flusher, and a new one after a credential change, are new threads). */
static void ss_flusher_leave_realtime(void) {
    int policy = sched_getscheduler(0); /* 0: the calling thread */
    if (policy != SCHED_FIFO && policy != SCHED_RR) return;
    struct sched_param normal = {0};
    sched_setscheduler(0, SCHED_OTHER, &normal);
}

static void *ss_flusher_main(void *arg) {
    (void)arg;
    ss_busy = 1; /* this thread is invisible: its own calls are never recorded */
    ss_is_flusher = 1;
    ss_flusher_leave_realtime();
    prctl(PR_SET_NAME, "stallscope", 0, 0, 0);
    ss_flusher_tid = (pid_t)syscall(SYS_gettid);
    int handover = ss_handover_fd;
    ss_fd_mode = ss_own_descriptor_table(handover) ? SS_FD_PRIVATE : SS_FD_SHARED;
    ss_lifecycle()->flusher_started(ss_fd_mode == SS_FD_PRIVATE);
    if (handover >= 0) ss_fd = handover; /* the same number in this table (or the program's) */
    uint32_t ready = 1;
    if (ss_paused) { /* no file until `stallscope attach` opens a window (attach.c) */
        if (ss_fd_mode == SS_FD_PRIVATE) ss_lifecycle()->flusher_listen();
    } else if (!ss_fork_child) { /* a fork child's file appears at its first flush */
        int transient;
        if (ss_profile_fd(&transient) < 0) ready = 2;
    }
    __atomic_store_n(&ss_flusher_ready, ready, __ATOMIC_RELEASE);
    ss_futex(&ss_flusher_ready, FUTEX_WAKE, 1 << 30, NULL);
    if (ready != 1) return NULL;
    /* Ticks as often as wall samples are taken (at most every 50 ms). */
    uint32_t tick_ms = ss_config.wall_hz > 20 ? 1000 / ss_config.wall_hz : 50;
    if (tick_ms == 0) tick_ms = 1;
    uint64_t last_tick = ss_mono_ns(), last_flush = last_tick, last_periodic = last_tick;
    uint32_t idle_ticks = 0;
    /* A fork child flushes at its first tick, then at periods that double up to the flush
     * period: a worker that its parent kills (a pool's terminate(), SIGTERM a second after the
     * fork) writes no final flush, and had left no profile at all when it died before its first
     * periodic flush; now it leaves what it recorded up to its last doubling. */
    uint64_t period_ns = (uint64_t)ss_config.flush_ms * 1000000ull;
    uint64_t child_period_ns = ss_fork_child && !ss_paused ? 0 : period_ns;
    for (;;) {
        uint32_t seen = __atomic_load_n(&ss_flusher_word, __ATOMIC_ACQUIRE);
        ss_flusher_serve_final();
        if (__atomic_load_n(&ss_flusher_stop, __ATOMIC_ACQUIRE)) break;
        if (ss_paused) {
            ss_lifecycle()->flusher_poll(); /* opens or closes a window (attach.c) */
            if (!__atomic_load_n(&ss_window_open, __ATOMIC_ACQUIRE)) {
                /* Paused: nothing recorded, nothing written; a look for `stallscope attach` every
                 * 100 ms. The process would end but for this thread when main called
                 * pthread_exit and every other thread has gone: end it as glibc would. */
                /* The hot calls go straight to the C library until a window opens; a process
                 * attach loaded us into gets the hooks that must stay (sigaction, ...). Once
                 * ready (the thread that started us may hold the loader's lock until then: its
                 * dlopen), then every second for slots bound and objects loaded since. */
                ss_lifecycle()->flusher_paused_tick(idle_ticks++);
                struct timespec idle = {0, 100 * 1000000L};
                ss_futex(&ss_flusher_word, FUTEX_WAIT, seen, &idle);
                last_tick = last_flush = last_periodic = ss_mono_ns();
                continue;
            }
        }
        uint64_t now = ss_mono_ns();
        uint64_t next = last_tick + (uint64_t)tick_ms * 1000000ull;
        if (now < next) {
            struct timespec ts = {(time_t)((next - now) / 1000000000ull), (long)((next - now) % 1000000000ull)};
            ss_futex(&ss_flusher_word, FUTEX_WAIT, seen, &ts);
            ss_flusher_serve_final();
            if (__atomic_load_n(&ss_flusher_stop, __ATOMIC_ACQUIRE)) break;
            ss_lifecycle()->flusher_woken(); /* woken early: many threads ended */
            now = ss_mono_ns();
            if (now < next) continue;
        }
        uint32_t elapsed_ms = (uint32_t)((now - last_tick) / 1000000ull);
        last_tick = now;
        ss_lifecycle()->flusher_tick(now, elapsed_ms);
        ss_py_names_tick(now);
        /* Early when a thread's wait ring fills faster than the period empties it: a pipeline
         * that blocks 10,000 times a second a thread had lost most of its waits, and its wait-for
         * graph and critical path with them.
         * An early flush recycles no ended thread's node: that waits for the periodic one, as
         * before, so that a join soon after a thread ended still finds its node (its tid). */
        int periodic = now - last_periodic >= child_period_ns;
        if (periodic && child_period_ns < period_ns) {
            child_period_ns = child_period_ns ? child_period_ns * 2 : (uint64_t)SS_EARLY_FLUSH_MS * 1000000ull;
            if (child_period_ns > period_ns) child_period_ns = period_ns;
        }
        int early = !periodic && __atomic_load_n(&ss_flush_requested, __ATOMIC_RELAXED) &&
                    now - last_flush >= (uint64_t)SS_EARLY_FLUSH_MS * 1000000ull;
        if (periodic || early) {
            __atomic_store_n(&ss_flush_requested, 0, __ATOMIC_RELAXED);
            last_flush = now;
            if (periodic) last_periodic = now;
            ss_early_flush = early;
            ss_flush_locked(0, 0, 0);
            ss_early_flush = 0;
        }
    }
    /* A window open when the flusher leaves (a credential change) ends here: the attach's
     * connection is in this thread's table, which goes with it. */
    if (ss_paused) ss_lifecycle()->flusher_leaving();
    /* Asked to leave (ss_flusher_pause): its descriptor table, and the profile's descriptor in
     * it, go with it; what the rings hold waits for the next flusher. */
    if (ss_fd >= 0 && ss_fd_mode == SS_FD_SHARED) close(ss_fd); /* ours, in the program's table */
    ss_fd = -1;
    ss_fd_mode = SS_FD_NONE;
    ss_flusher_pid = 0;
    __atomic_store_n(&ss_flusher_left, 1, __ATOMIC_RELEASE);
    ss_futex(&ss_flusher_left, FUTEX_WAKE, 1 << 30, NULL);
    return NULL;
}

/* Starts the flusher; in the launched process (not a fork child), or when `wait`, waits until it
 * is set up, and turns the interposer off if it could not create the profile. */
static void ss_start_flusher_waiting(int wait) {
    if (ss_flusher_started || !(ss_active || ss_paused)) return;
    ss_flusher_started = 1;
    __atomic_store_n(&ss_flusher_ready, 0, __ATOMIC_RELEASE);
    sigset_t all, old;
    sigfillset(&all);
    /* The new thread inherits a mask blocking everything: signals meant for the program must
     * never be delivered to it. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int keep_single = ss_single_before_create();
    int started = ss_real.pthread_create(&th, &attr, ss_flusher_main, NULL) == 0;
    ss_single_after_create(started && keep_single);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        ss_flusher_started = 0; /* flushes happen at exit only, each with a descriptor of its own */
        return;
    }
    ss_flusher_pid = ss_pid;
    if (!wait) return; /* a fork child's file appears at its first flush: no need to wait */
    /* Bounded wait: the flusher needs nothing this thread holds, but never hang the program. */
    for (int waited_ms = 0; waited_ms < 2000; waited_ms += 10) {
        uint32_t ready = __atomic_load_n(&ss_flusher_ready, __ATOMIC_ACQUIRE);
        if (ready == 2) {
            ss_flusher_pid = 0;
            __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
            return;
        }
        if (ready == 1) return;
        struct timespec ts = {0, 10 * 1000000L};
        ss_futex(&ss_flusher_ready, FUTEX_WAIT, 0, &ts);
    }
}

/* Called on the sampled path of allocation calls while a fork child has no flusher yet: starts it
 * once it is due. */
void ss_child_flusher_check(void) {
    uint64_t due = __atomic_load_n(&ss_child_flusher_due, __ATOMIC_RELAXED);
    if (!due || ss_mono_ns() < due) return;
    if (!__atomic_compare_exchange_n(&ss_child_flusher_due, &due, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    SS_GUARD_BEGIN(saved);
    ss_start_flusher();
    SS_GUARD_END(saved);
}

void ss_start_flusher(void) { ss_start_flusher_waiting(!ss_fork_child); }

/* Asks the flusher to leave and waits, bounded (a flush under way ends first), until its task is
 * gone: glibc's broadcast of a credential change cannot reach it on its way out, and a seccomp
 * filter installed next cannot meet any call of its. Returns 1 when it is gone. */
static int ss_flusher_leave(void) {
    __atomic_store_n(&ss_flusher_left, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_flusher_stop, 1, __ATOMIC_RELEASE);
    ss_wake_flusher();
    int gone = 0;
    for (int waited_ms = 0; waited_ms < 5000 && !gone; waited_ms++) {
        if (__atomic_load_n(&ss_flusher_left, __ATOMIC_ACQUIRE))
            gone = syscall(SYS_tgkill, getpid(), ss_flusher_tid, 0) != 0 && errno == ESRCH;
        if (!gone) {
            struct timespec ts = {0, 1000000L};
            if (__atomic_load_n(&ss_flusher_left, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
            else ss_futex(&ss_flusher_left, FUTEX_WAIT, 0, &ts);
        }
    }
    if (gone) ss_flusher_tid = 0;
    return gone;
}

/* Before a seccomp filter (lifecycle.c, after the final flush): the flusher leaves for good, and
 * none starts after it. Returns 1 when it is gone (or there was none). */
int ss_flusher_end(void) {
    ss_flusher_started = 1; /* no flusher after it: a fork child's or a credential change's */
    if (!ss_flusher_running() || ss_is_flusher || ss_flusher_tid <= 0) return !ss_flusher_running();
    return ss_flusher_leave();
}

/* Before a credential change (creds.c): the flusher leaves (glibc then has no thread of ours to
 * make the change in), and the caller, still with the old credentials, opens a descriptor of the
 * profile for the next flusher, at 500 or above in the program's table until that one has it.
 * Returns 1 when the flusher has left. */
int ss_flusher_pause(void) {
    if (!ss_flusher_running() || ss_is_flusher || ss_flusher_tid <= 0) return 0;
    int fd = -1;
    if (ss_path[0]) {
        fd = open(ss_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        int high = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 500) : -1;
        if (high >= 0) {
            close(fd);
            fd = high;
        }
    }
    int gone = ss_flusher_leave();
    if (!gone) { /* stuck in a write: it leaves when it can, and no flusher follows it */
        if (fd >= 0) close(fd);
        return 0;
    }
    ss_handover_fd = fd;
    return 1;
}

/* After the change: a new flusher, made by the thread that changed its credentials (so it has
 * the same), takes the descriptor over. */
void ss_flusher_resume(void) {
    int fd = ss_handover_fd;
    __atomic_store_n(&ss_flusher_stop, 0, __ATOMIC_RELEASE);
    ss_flusher_started = 0;
    ss_start_flusher_waiting(1);
    int in_use = fd >= 0 && ss_flusher_running() && ss_fd == fd && ss_fd_mode == SS_FD_SHARED;
    if (fd >= 0 && !in_use) close(fd); /* the flusher has its own copy, in its own table */
    ss_handover_fd = -1;
}

/* ---- windows (attach.c): the flusher of a paused process, holding the flush lock ---- */

uint64_t ss_process_start_mono_ns;

/* A window opens: `fd` (received from `stallscope attach`, in the flusher's table) is its file,
 * `path` its name (for a thread that must open it itself). Returns 0 once the file's first batch
 * is written. */
int ss_writer_window_begin(int fd, const char *path, uint64_t process_start_mono_ns, uint32_t window) {
    if (ss_fd_mode == SS_FD_SHARED) { /* no table of our own: keep it high in the program's */
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
        if (high >= 0) {
            close(fd);
            fd = high;
        }
    }
    size_t n = strlen(path);
    if (n >= sizeof ss_path) n = 0; /* too long to open again: only the flusher writes it */
    memcpy(ss_path, path, n);
    ss_path[n] = 0;
    ss_file_failed = 0;
    ss_finished = 0;
    ss_flush_seq = 0;
    __atomic_store_n(&ss_final_state, 0, __ATOMIC_RELEASE);
    ss_out.len = 0;
    ss_fold_out.len = 0;
    uint64_t realtime = ss_realtime_ns(), mono = ss_mono_ns(), ticks = ss_ticks();
    uint32_t keep_flags = ss_process.flags;
    ss_fill_process(realtime, mono, ticks);
    ss_process.flags = keep_flags;
    ss_attach_rec = (struct ss_attach_record){process_start_mono_ns, mono,
                                              ss_injected ? SS_ATTACH_INJECTED : SS_ATTACH_PAUSED, window};
    ss_attach_on = 1;
    if (ss_write_head(fd) != 0) {
        close(fd);
        ss_path[0] = 0;
        return -1;
    }
    ss_fd = fd;
    return 0;
}

/* The window closed (after its final flush, END how DETACH, or the process's own END): its
 * file is closed; nothing more is written until the next window. */
void ss_writer_window_end(void) {
    if (!ss_finished) ss_flush_locked(1, SS_END_DETACH, 0);
    if (ss_fd >= 0) close(ss_fd);
    ss_fd = -1;
    ss_path[0] = 0;
    ss_file_failed = 1; /* nothing to write into until the next window */
    ss_attach_on = 0;
}
