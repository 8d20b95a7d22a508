/* Writing the profile: the file, the periodic flush from a background thread, and the final flush.
 * Nothing here is on the hot path; it still never allocates through the program's allocator. */
#include "ss_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char *program_invocation_short_name;
int ss_process_is_fork_child(void);

static int ss_fd = -1;
static char ss_path[1200]; /* the profile this image writes */
static dev_t ss_file_dev;  /* and its identity, to notice when the program closed our descriptor */
static ino_t ss_file_ino;
static int ss_file_failed;
static int ss_flushing; /* one flush at a time: the flusher thread or an exiting thread */
static int ss_finished; /* the final flush was written */
static uint64_t ss_flush_seq;
static int ss_flusher_started;
static uint32_t ss_crc_table[256];
static struct ss_process_record ss_process;
static unsigned char *ss_out;
static size_t ss_out_len, ss_out_cap;

/* ---- memory and formatting helpers that never touch the program's allocator ---- */

void *ss_map(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void ss_unmap(void *p, size_t size) { munmap(p, size); }

void ss_str_cat(struct ss_str *s, const char *text) {
    while (*text && s->len + 1 < s->cap) s->p[s->len++] = *text++;
    s->p[s->len] = 0;
}

void ss_str_u64(struct ss_str *s, uint64_t v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n > 0 && s->len + 1 < s->cap) s->p[s->len++] = digits[--n];
    s->p[s->len] = 0;
}

uint64_t ss_parse_u64(const char *text, uint64_t fallback) {
    if (!text || !*text) return fallback;
    uint64_t v = 0;
    for (; *text; text++) {
        if (*text < '0' || *text > '9') return fallback;
        v = v * 10 + (uint64_t)(*text - '0');
    }
    return v;
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

/* ---- the output buffer: records are assembled here, then written with one write() ---- */

static int ss_out_reserve(size_t more) {
    if (ss_out_len + more <= ss_out_cap) return 0;
    size_t cap = ss_out_cap ? ss_out_cap : 1u << 16;
    while (cap < ss_out_len + more) cap *= 2;
    unsigned char *p = ss_map(cap);
    if (!p) return -1;
    if (ss_out) {
        memcpy(p, ss_out, ss_out_len);
        ss_unmap(ss_out, ss_out_cap);
    }
    ss_out = p;
    ss_out_cap = cap;
    return 0;
}

/* Appends a record made of up to three payload parts; returns -1 when out of memory. */
int ss_out_record3(uint32_t type, const void *a, size_t alen, const void *b, size_t blen, const void *c,
                   size_t clen) {
    size_t size = alen + blen + clen, padded = (size + 7) & ~(size_t)7;
    if (ss_out_reserve(sizeof(struct ss_record_header) + padded) != 0) return -1;
    struct ss_record_header h = {type, (uint32_t)size, 0, 0};
    unsigned char *payload = ss_out + ss_out_len + sizeof h;
    if (alen) memcpy(payload, a, alen);
    if (blen) memcpy(payload + alen, b, blen);
    if (clen) memcpy(payload + alen + blen, c, clen);
    memset(payload + size, 0, padded - size);
    h.crc = ss_crc32(ss_crc32(0, &h, 8), payload, size); /* covers type and size too */
    memcpy(ss_out + ss_out_len, &h, sizeof h);
    ss_out_len += sizeof h + padded;
    return 0;
}

int ss_out_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
    return ss_out_record3(type, a, alen, b, blen, NULL, 0);
}

/* For records made elsewhere (phases.c); a record that does not fit in memory is dropped. */
void ss_out_append(uint32_t type, const void *payload, size_t size) { (void)ss_out_record(type, payload, size, NULL, 0); }

/* ---- the process record ---- */

static size_t ss_read_file(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t len = 0;
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    return len;
}

static void ss_fill_process(void) {
    memset(&ss_process, 0, sizeof ss_process);
    ss_process.pid = (uint32_t)getpid();
    ss_process.ppid = (uint32_t)getppid();
    ss_process.start_realtime_ns = ss_realtime_ns();
    ss_process.start_mono_ns = ss_mono_ns();
    ss_process.start_ticks = ss_ticks();
    ss_process.ticks_per_sec = ss_ticks_per_sec;
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    ss_process.ncpus = ncpus > 0 ? (uint32_t)ncpus : 1;
    ss_process.timing = ss_config.timing;
    ss_process.timing_period = ss_config.period;
    strncpy(ss_process.libc_version, gnu_get_libc_version(), sizeof ss_process.libc_version - 1);
    Dl_info info;
    const char *allocator = "unknown";
    if (ss_real.malloc && dladdr((void *)ss_real.malloc, &info) && info.dli_fname) allocator = info.dli_fname;
    strncpy(ss_process.allocator, allocator, sizeof ss_process.allocator - 1);
}

void ss_writer_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        ss_crc_table[i] = c;
    }
    ss_fill_process();
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
    ss_str_u64(&s, (uint64_t)getppid());
    ss_str_cat(&s, " ");
    ss_str_cat(&s, path);
    ss_str_cat(&s, "\n");
    ss_write_all(fd, line, s.len); /* one short O_APPEND write: lines from processes never interleave */
    close(fd);
}

/* Creates the profile file exclusively, never overwriting, and writes its header. */
int ss_open_profile(void) {
    if (ss_fd >= 0) return 0;
    if (ss_file_failed) return -1;
    char path[1200];
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        struct ss_str s = {path, 0, sizeof path};
        if (ss_config.output[0]) {
            ss_str_cat(&s, ss_config.output);
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
            ss_append_name(&s, program_invocation_short_name ? program_invocation_short_name : "program");
            ss_str_cat(&s, "-");
            ss_str_u64(&s, (uint64_t)getpid());
            if (attempt > 0) {
                ss_str_cat(&s, ".");
                ss_str_u64(&s, (uint64_t)attempt);
            }
            ss_str_cat(&s, ".prof");
        }
        if (s.len + 1 >= s.cap) break;
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        ss_file_failed = 1; /* stay silent: the program's output must not change; run reports it */
        __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
        return -1;
    }
    /* Keep the descriptor away from the low numbers programs expect to control. */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    ss_fd = fd;
    memcpy(ss_path, path, sizeof ss_path);
    struct stat st;
    if (fstat(fd, &st) == 0) {
        ss_file_dev = st.st_dev;
        ss_file_ino = st.st_ino;
    }

    struct ss_file_header fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, SS_MAGIC, 8);
    fh.version = SS_VERSION;
    fh.header_size = sizeof fh;
    fh.byte_order = SS_BYTE_ORDER_MARK;
    fh.crc = ss_crc32(0, &fh, offsetof(struct ss_file_header, crc));

    static char cmdline[65536], exe[4096];
    size_t cmd_len = ss_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
    /* One NUL ends the last argument; any before it belong to empty arguments (`--save ""`). */
    if (cmd_len > 0 && cmdline[cmd_len - 1] == 0) cmd_len--;
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe);
    if (exe_len < 0) exe_len = 0;
    ss_process.flags = ss_process_is_fork_child() ? 1u : 0u;
    ss_process.pid = (uint32_t)getpid();
    ss_process.ppid = (uint32_t)getppid();
    ss_process.cmdline_len = (uint32_t)cmd_len;
    ss_process.exe_len = (uint32_t)exe_len;

    ss_out_len = 0;
    if (ss_out_reserve(sizeof fh) != 0) return -1;
    memcpy(ss_out, &fh, sizeof fh);
    ss_out_len = sizeof fh;
    static unsigned char strings[65536 + 4096];
    memcpy(strings, cmdline, cmd_len);
    memcpy(strings + cmd_len, exe, (size_t)exe_len);
    /* A flush record ends even this first batch, so that a file cut short is never taken whole. */
    struct ss_flush_record fl = {0, ss_mono_ns(), ss_ticks(), 0};
    if (ss_out_record(SS_REC_PROCESS, &ss_process, sizeof ss_process, strings, cmd_len + (size_t)exe_len) != 0 ||
        ss_out_record(SS_REC_FLUSH, &fl, sizeof fl, NULL, 0) != 0 || ss_write_all(ss_fd, ss_out, ss_out_len) != 0) {
        ss_file_failed = 1;
        __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
        return -1;
    }
    ss_note_in_index(path);
    return 0;
}

/* Before exec: the launched process's explicit output path belongs to its last image, which the
 * user asked about; an earlier image (a wrapper script that execs) moves to PATH.exec-N. */
void ss_writer_before_exec(void) {
    if (ss_fd < 0 || !ss_config.output[0] || strcmp(ss_path, ss_config.output) != 0) return;
    for (uint64_t n = 1; n < 100; n++) {
        char moved[1200];
        struct ss_str s = {moved, 0, sizeof moved};
        ss_str_cat(&s, ss_config.output);
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

/* After fork the child writes its own file (created at its first flush) and has no flusher. */
void ss_writer_after_fork_child(void) {
    if (ss_fd >= 0) close(ss_fd); /* the parent's descriptor; the file stays open in the parent */
    ss_fd = -1;
    ss_flushing = 0;
    ss_finished = 0;
    ss_flush_seq = 0;
    ss_phases_after_fork_child();
    ss_flusher_started = 0;
    ss_fill_process();
    ss_stacks_after_fork_child();
}

/* ---- flushing ---- */

/* Copies a record another thread is updating, word by word with relaxed atomic loads. */
static void ss_copy_words(void *dst, const void *src, size_t size) {
    const uint64_t *s = src;
    uint64_t *d = dst;
    for (size_t i = 0; i < size / 8; i++) d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static uint64_t ss_thread_signature(const struct ss_thread_record *r) {
    uint64_t sig = r->flags;
    for (int i = 0; i < SS_FN_COUNT; i++) sig += r->fn[i].calls * (uint64_t)(i + 1);
    return sig + r->lock_wait_ticks;
}

static int ss_out_thread(struct ss_thread *t, int final) {
    static struct ss_thread_record rec;
    static struct ss_lock_stats locks[SS_LOCK_SLOTS + 1];
    ss_copy_words(&rec, &t->rec, sizeof rec);
    int ended = (__atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE) & SS_THREAD_ENDED) != 0;
    uint64_t lock_sig = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i <= SS_LOCK_SLOTS; i++) {
        if (__atomic_load_n(&t->locks[i].acquisitions, __ATOMIC_RELAXED) == 0 &&
            __atomic_load_n(&t->locks[i].wait_ticks, __ATOMIC_RELAXED) == 0)
            continue;
        ss_copy_words(&locks[n], &t->locks[i], sizeof locks[n]);
        lock_sig += locks[n].acquisitions;
        n++;
    }
    uint64_t sig = ss_thread_signature(&rec) + lock_sig;
    /* Running threads are rewritten at every flush (their CPU time moves); ended ones once more. */
    if (ended && t->written && sig == t->written_signature && !final) return 0;
    if (!ended) {
        uint64_t cpu = ss_thread_cpu_ns((pid_t)rec.tid);
        rec.cpu_ns = cpu > t->cpu_base_ns ? cpu - t->cpu_base_ns : 0;
        char path[64], name[32];
        struct ss_str s = {path, 0, sizeof path};
        ss_str_cat(&s, "/proc/self/task/");
        ss_str_u64(&s, rec.tid);
        ss_str_cat(&s, "/comm");
        size_t len = ss_read_file(path, name, sizeof name - 1);
        while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == 0)) len--;
        if (len > 0) {
            memset(rec.name, 0, sizeof rec.name);
            memcpy(rec.name, name, len < 15 ? len : 15);
        }
    }
    rec.nlocks = n;
    if (ss_out_record(SS_REC_THREAD, &rec, sizeof rec, locks, n * sizeof(struct ss_lock_stats)) != 0) return -1;
    t->written = 1;
    t->written_signature = sig;
    return 0;
}

static int ss_process_has_activity(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (ss_thread_signature(&t->rec) != 0) return 1;
    return 0;
}

void ss_flush(int final, uint32_t how, int32_t status) {
    int expected = 0;
    int waited_ms = 0;
    while (!__atomic_compare_exchange_n(&ss_flushing, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        expected = 0;
        if (!final || waited_ms++ > 2000) return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL); /* the flusher is mid-write; the final flush waits for it */
    }
    if (ss_finished && !final) goto out;
    if (ss_fd < 0) {
        /* A fork child's file appears only once it has done something worth a profile; one that
         * execs before its first flush (the usual fork-exec) leaves none for its short first image. */
        if (how == SS_END_EXEC || !ss_process_has_activity() || ss_open_profile() != 0) goto out;
    }
    ss_out_len = 0;
    /* Samples first: every stack they name is complete by now, and written just after. */
    if (ss_sampler_write() != 0) goto out;
    if (ss_stacks_write() != 0) goto out;
    if (ss_alloc_write() != 0) goto out;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (ss_out_thread(t, final) != 0) goto out;
    ss_phases_append_pending();
    if (final) {
        struct ss_end_record end = {how, status, ss_mono_ns(), ss_ticks()};
        if (ss_out_record(SS_REC_END, &end, sizeof end, NULL, 0) != 0) goto out;
    } else {
        struct ss_flush_record fl = {++ss_flush_seq, ss_mono_ns(), ss_ticks(), 0};
        if (ss_out_record(SS_REC_FLUSH, &fl, sizeof fl, NULL, 0) != 0) goto out;
    }
    if (ss_check_descriptor() != 0 || ss_write_all(ss_fd, ss_out, ss_out_len) != 0) ss_file_failed = 1;
    if (final) ss_finished = 1;
out:
    /* After an exec that failed the process goes on: let later flushes follow the END record. */
    if (final && how == SS_END_EXEC) ss_finished = 0;
    __atomic_store_n(&ss_flushing, 0, __ATOMIC_RELEASE);
}

/* ---- the flusher thread ---- */

/* Whether any thread other than the caller is still alive (not a zombie). Reads the task
 * directory with getdents64 and a stack buffer: opendir would allocate. */
static int ss_other_threads_alive(void) {
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 1;
    pid_t self = (pid_t)syscall(SYS_gettid);
    char buf[4096];
    int alive = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n && !alive;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            uint64_t tid = ss_parse_u64(d->name, 0);
            if (tid == 0 || (pid_t)tid == self) continue;
            char path[64], stat[512];
            struct ss_str s = {path, 0, sizeof path};
            ss_str_cat(&s, "/proc/self/task/");
            ss_str_u64(&s, tid);
            ss_str_cat(&s, "/stat");
            size_t len = ss_read_file(path, stat, sizeof stat - 1);
            size_t i = len;
            while (i > 0 && stat[i - 1] != ')') i--;
            /* The state follows ") "; a thread that is gone or a zombie does not count. */
            if (len == 0 || i == 0 || i + 1 >= len) continue;
            if (stat[i + 1] != 'Z' && stat[i + 1] != 'X') alive = 1;
        }
        if (alive) break;
    }
    close(dir);
    return alive;
}

/* The main thread called pthread_exit: its record ended while the process goes on. */
static int ss_main_thread_ended(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        uint32_t flags = __atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE);
        if (flags & SS_THREAD_MAIN) return (flags & SS_THREAD_ENDED) != 0;
    }
    return 0;
}

static void *ss_flusher_main(void *arg) {
    (void)arg;
    ss_busy = 1; /* this thread is invisible: its own calls are never recorded */
    prctl(PR_SET_NAME, "stallscope", 0, 0, 0);
    /* Ticks as often as wall samples are taken (at most every 50 ms). */
    uint32_t tick_ms = ss_config.wall_hz > 20 ? 1000 / ss_config.wall_hz : 50, since_flush = 0;
    if (tick_ms == 0) tick_ms = 1;
    for (;;) {
        struct timespec ts = {0, (long)tick_ms * 1000000L};
        nanosleep(&ts, NULL);
        if (ss_pid != getpid()) return NULL;
        /* When the program's last thread has gone after main called pthread_exit, the process
         * would end now but for this thread: end it as glibc would, with exit(0). */
        if (ss_main_thread_ended() && !ss_other_threads_alive()) ss_real.exit(0);
        ss_phases_tick(tick_ms);
        ss_sampler_tick();
        since_flush += tick_ms;
        if (since_flush >= ss_config.flush_ms) {
            since_flush = 0;
            ss_flush(0, 0, 0);
        }
    }
    return NULL;
}

void ss_start_flusher(void) {
    if (ss_flusher_started || !ss_active) return;
    ss_flusher_started = 1;
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
    if (ss_real.pthread_create(&th, &attr, ss_flusher_main, NULL) != 0) ss_flusher_started = 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
