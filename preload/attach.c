/* Windows of recording in a process started with `stallscope run --paused`.
 *
 * Such a process loads the interposer with recording off: every hook forwards (no thread has a
 * record), no timer samples, no file is written. Its flusher thread listens on an abstract Unix
 * socket, `stallscope-attach-PID`, in its own descriptor table (the program's table never holds
 * it), and looks at it every 100 ms: nothing the program can see, no signal, no change to a mask.
 * `stallscope attach PID` connects, sends the profile's descriptor (it creates the file with its
 * own rights), and a window opens: the tables of the last window are cleared, and the threads get
 * records at their next call. The window closes when attach asks (its duration, Ctrl-C), when its
 * connection goes (attach killed), or when the flusher leaves (a credential change): timers
 * deleted, the final batch written (END, how DETACH), the file closed, every hook forwarding
 * again. A process that ends during a window writes its own END, and attach finds the connection
 * closed.
 *
 * Only the flusher thread runs this file. A peer is accepted when its user is the process's
 * (real or effective) or root. */
#include "ss_internal.h"

#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>


static int ss_listen_fd = -1; /* in the flusher's own descriptor table */
static int ss_conn_fd = -1;   /* the attach holding the window open */
static uint32_t ss_windows_opened;

/* The request `stallscope attach` sends, with the profile's descriptor (SCM_RIGHTS). */
#define SS_ATTACH_MAGIC "SSATTACH"
#define SS_ATTACH_PROTOCOL 1u
struct ss_attach_request {
    char magic[8];
    uint32_t protocol;
    uint32_t path_len; /* then the profile's absolute path */
};

static void ss_send_text(int fd, const char *a, uint64_t n, int with_n) {
    char line[256];
    struct ss_str s = {line, 0, sizeof line};
    ss_str_cat(&s, a);
    if (with_n) ss_str_u64(&s, n);
    ss_str_cat(&s, "\n");
    (void)send(fd, line, s.len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void ss_attach_listen(void) {
    if (ss_listen_fd >= 0) return;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    struct ss_str s = {addr.sun_path + 1, 0, sizeof addr.sun_path - 1};
    ss_str_cat(&s, "stallscope-attach-");
    ss_str_u64(&s, (uint64_t)ss_pid);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + s.len);
    if (bind(fd, (struct sockaddr *)&addr, len) != 0 || listen(fd, 4) != 0) {
        close(fd);
        return;
    }
    ss_listen_fd = fd;
}

static int ss_peer_allowed(int fd) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
    return cred.uid == 0 || cred.uid == getuid() || cred.uid == geteuid();
}

/* Reads the request and the descriptor it carries (at most 2 s: a peer that sends nothing
 * keeps the flusher no longer). Returns the descriptor or -1. */
static int ss_read_request(int fd, char *path, size_t cap) {
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    struct ss_attach_request req;
    struct iovec iov = {&req, sizeof req};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    int got = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n > 0 && c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&got, CMSG_DATA(c), sizeof got);
    if (n != (ssize_t)sizeof req || memcmp(req.magic, SS_ATTACH_MAGIC, 8) != 0 || req.protocol != SS_ATTACH_PROTOCOL ||
        req.path_len == 0 || req.path_len >= cap || got < 0) {
        if (got >= 0) close(got);
        return -1;
    }
    size_t have = 0;
    while (have < req.path_len) {
        ssize_t r = recv(fd, path + have, req.path_len - have, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            close(got);
            return -1;
        }
        have += (size_t)r;
    }
    path[have] = 0;
    return got;
}

/* Opens a window into the file `fd`; recording starts when this returns 0. */
static int ss_window_begin(int fd, const char *path) {
    while (!ss_flush_try_lock()) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    /* A fork child's own set-up (its fresh stack tables) before its first window records, not at
     * the window's first flush, which would drop the stacks taken until then. */
    ss_writer_child_setup();
    ss_threads_window_reset();
    ss_stacks_window_reset();
    ss_sampler_window_reset();
    ss_alloc_window_reset();
    uint32_t window = ss_windows_opened + 1;
    int rc = ss_writer_window_begin(fd, path, ss_process_start_mono_ns, window);
    if (rc == 0) {
        ss_windows_opened = window;
        __atomic_add_fetch(&ss_window, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&ss_window_open, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&ss_active, 1, __ATOMIC_RELEASE);
    }
    ss_flush_unlock();
    if (rc == 0) {
        ss_got_point(SS_GOT_HOOKS);  /* the hot calls reach the hooks again (got.c) */
        ss_threads_cover_existing(); /* and every thread running has a CPU timer from now on */
    }
    return rc;
}

/* Closes the window: recording off, timers deleted, the final batch written. */
static void ss_window_end(void) {
    if (!__atomic_load_n(&ss_window_open, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&ss_window_open, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&ss_window, 1, __ATOMIC_ACQ_REL); /* every node is stale from now on */
    __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
    /* And straight to the C library again, unless the next window follows at once (run --push):
     * a process forked meanwhile must reach the hooks to listen for windows of its own. */
    if (!ss_config.continuous) ss_got_point(SS_GOT_LIBC);
    ss_sampler_stop_timers();
    ss_writer_window_end();
}

static void ss_accept_one(void) {
    int c = accept4(ss_listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) return;
    if (!ss_peer_allowed(c)) {
        ss_send_text(c, "ERR not allowed: the process belongs to another user", 0, 0);
        close(c);
        return;
    }
    if (__atomic_load_n(&ss_window_open, __ATOMIC_ACQUIRE)) {
        ss_send_text(c, "ERR busy: another stallscope attach is recording this process", 0, 0);
        close(c);
        return;
    }
    char path[1200];
    int fd = ss_read_request(c, path, sizeof path);
    if (fd < 0) {
        ss_send_text(c, "ERR bad request", 0, 0);
        close(c);
        return;
    }
    if (ss_window_begin(fd, path) != 0) {
        ss_send_text(c, "ERR the profile could not be written", 0, 0);
        close(c);
        return;
    }
    ss_send_text(c, "OK ", ss_windows_opened, 1);
    int flags = fcntl(c, F_GETFL);
    if (flags >= 0) fcntl(c, F_SETFL, flags | O_NONBLOCK);
    ss_conn_fd = c;
}

static void ss_attach_poll(void) {
    if (ss_listen_fd < 0) return;
    if (ss_conn_fd >= 0) {
        char b[16];
        ssize_t n = recv(ss_conn_fd, b, sizeof b, MSG_DONTWAIT);
        int stop = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                   (n > 0 && memchr(b, 'S', (size_t)n));
        if (stop) {
            ss_window_end();
            if (n > 0) ss_send_text(ss_conn_fd, "DONE", 0, 0);
            close(ss_conn_fd);
            ss_conn_fd = -1;
        }
    }
    ss_accept_one();
}

static void ss_attach_close(void) {
    ss_window_end();
    if (ss_conn_fd >= 0) {
        ss_send_text(ss_conn_fd, "DONE", 0, 0);
        close(ss_conn_fd);
    }
    if (ss_listen_fd >= 0) close(ss_listen_fd);
    ss_conn_fd = ss_listen_fd = -1;
}

/* In a fork child: the parent's listener and connection are in its flusher's table, not here. */
static void ss_attach_after_fork_child(void) {
    ss_conn_fd = ss_listen_fd = -1;
    ss_window_open = 0;
    ss_windows_opened = 0;
    __atomic_add_fetch(&ss_window, 1, __ATOMIC_ACQ_REL);
}

/* In a fork child: only a paused process's has a listener of its parent's to drop (a recording
 * process has none). */
SS_FORK_TEXT static void ss_attach_fork_child(void) {
    if (ss_paused) ss_attach_after_fork_child();
}

/* Attach's steps, walked by the lifecycle (lifecycle.c): the flusher of a paused process listens
 * for `stallscope attach`, opens and closes windows, and closes them as it leaves; a paused
 * process's fork child listens afresh. */
SS_STEPS(ss_attach_steps) = {
    .name = "attach",
    .on_fork_child = ss_attach_fork_child,
    .on_flusher_listen = ss_attach_listen,
    .on_flusher_poll = ss_attach_poll,
    .on_flusher_leave = ss_attach_close,
};
