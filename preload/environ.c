/* The run's settings: the STALLSCOPE_ variables `stallscope run` passes are the interposer's, not
 * the program's. They are copied and taken out of `environ` before the program runs (so getenv,
 * setenv, clearenv, putenv and a walk of environ see the program's own environment, but for
 * LD_PRELOAD), and put back into the environment of a program it executes that still carries our
 * LD_PRELOAD entry (so the run's other processes are profiled, and an environment the program
 * cleared, `env -i` or sudo's, stays cleared).
 *
 * Two ways out do not go through a call we see: system() and popen() (glibc spawns /bin/sh with
 * `environ` internally) and raw execve system calls. A process that starts with our preload but
 * without settings reads them from its parent's initial environment (/proc/PPID/environ, which
 * still holds them: the kernel's copy never changes), as long as that parent lives.
 *
 * The parent's pid: a process learns its parent at fork (the forking process), or from
 * STALLSCOPE_PARENT=PID:PPID, which the exec wrappers add for the new image, so that a process
 * whose parent ends at once still names the right one (getppid() would then say 1 or a
 * subreaper). */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define SS_PREFIX "STALLSCOPE_"
#define SS_PREFIX_LEN (sizeof SS_PREFIX - 1)
#define SS_PARENT_NAME "STALLSCOPE_PARENT="
#define SS_SETTINGS_MAX 40

static char ss_settings_text[16384];
static size_t ss_settings_used;
static const char *ss_settings[SS_SETTINGS_MAX];
static size_t ss_settings_count;
static char ss_library[1024]; /* our path, as LD_PRELOAD names it */
SS_FORK_STATE pid_t ss_parent_pid;

/* The interposer's settings: the options table's variables, and the parent's pid. Other
 * STALLSCOPE_ variables are the program's (STALLSCOPE_THREADS, which `bench --threads` sets for
 * programs that read their thread count from it) and stay where they are. */
static const char *const ss_setting_names[] = {
#define SS_OPTION(id, env, kind, def, lo, hi, doc) env,
#include "ss_options.def"
#undef SS_OPTION
    "STALLSCOPE_PARENT",
};

static int ss_is_setting(const char *e) {
    if (strncmp(e, SS_PREFIX, SS_PREFIX_LEN) != 0) return 0;
    for (size_t i = 0; i < sizeof ss_setting_names / sizeof ss_setting_names[0]; i++) {
        size_t n = strlen(ss_setting_names[i]);
        if (strncmp(e, ss_setting_names[i], n) == 0 && e[n] == '=') return 1;
    }
    return 0;
}

static pid_t ss_parse_pid(const char **p, char end) {
    uint64_t v = 0;
    const char *s = *p;
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9' && v < (1u << 30)) v = v * 10 + (uint64_t)(*s++ - '0');
    if (*s != end) return 0;
    *p = s + 1;
    return (pid_t)v;
}

/* Keeps a copy of one setting (STALLSCOPE_PARENT, which is about one process, is read, not
 * kept); `trusted_parent`: whether a PARENT entry is this process's own. */
static void ss_keep_setting(const char *e, size_t len, int trusted_parent) {
    if (strncmp(e, SS_PARENT_NAME, sizeof SS_PARENT_NAME - 1) == 0) {
        const char *p = e + sizeof SS_PARENT_NAME - 1;
        pid_t pid = ss_parse_pid(&p, ':'), ppid = pid ? ss_parse_pid(&p, 0) : 0;
        if (trusted_parent && pid == getpid() && ppid > 0) ss_parent_pid = ppid;
        return;
    }
    for (size_t i = 0; i < ss_settings_count; i++) {
        const char *eq = strchr(ss_settings[i], '=');
        size_t name = eq ? (size_t)(eq - ss_settings[i]) + 1 : 0;
        if (name && len >= name && memcmp(ss_settings[i], e, name) == 0) return; /* first one wins */
    }
    if (ss_settings_count == SS_SETTINGS_MAX || ss_settings_used + len + 1 > sizeof ss_settings_text) return;
    char *copy = ss_settings_text + ss_settings_used;
    memcpy(copy, e, len);
    copy[len] = 0;
    ss_settings_used += len + 1;
    ss_settings[ss_settings_count++] = copy;
}

/* Takes the settings out of environ in place: the array only gets shorter, so nothing is
 * allocated, and an array glibc's setenv made stays its own. */
static void ss_strip_environ(int keep) {
    char **env = environ;
    if (!env) return;
    char **out = env;
    for (char **e = env; *e; e++) {
        if (ss_is_setting(*e)) {
            if (keep) ss_keep_setting(*e, strlen(*e), 1);
            continue;
        }
        if (out != e) *out = *e;
        out++;
    }
    if (*out) *out = NULL;
}

/* Our preload came without settings, and the parent's environment could not be read: the
 * settings were lost on the way (see ss_take_settings), and the process records nothing. */
int ss_settings_lost;

/* The settings from the parent's initial environment, read in pieces (it may be megabytes).
 * Returns 0 when it cannot be read (the parent has gone, or it is another user's). */
static int ss_settings_from_parent(pid_t ppid) {
    static char chunk[8192];
    char path[64];
    struct ss_str s = {path, 0, sizeof path};
    ss_str_cat(&s, "/proc/");
    ss_str_u64(&s, (uint64_t)ppid);
    ss_str_cat(&s, "/environ");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t have = 0;
    int skipping = 0; /* inside an entry longer than the chunk */
    for (;;) {
        ssize_t n = read(fd, chunk + have, sizeof chunk - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++) {
            if (chunk[i]) continue;
            if (!skipping && ss_is_setting(chunk + start)) ss_keep_setting(chunk + start, i - start, 0);
            skipping = 0;
            start = i + 1;
        }
        memmove(chunk, chunk + start, have - start);
        have -= start;
        if (have == sizeof chunk) {
            skipping = 1;
            have = 0;
        }
    }
    close(fd);
    return 1;
}

void ss_take_settings(void) {
    int saved_errno = errno;
    pid_t ppid = getppid();
    ss_parent_pid = ppid;
    ss_strip_environ(1);
    /* Started through a way out we do not see (system, popen, a raw execve): the parent's. A
     * parent whose environment has none either started us by hand (`LD_PRELOAD=... prog`:
     * profiles go to the working directory); one we cannot read (gone, or non-dumpable after it
     * changed user) leaves the settings unknown, and rather than litter the working directory
     * with profiles the process records nothing. */
    if (ss_settings_count == 0 && !ss_settings_from_parent(ppid)) ss_settings_lost = 1;
    Dl_info info;
    if (dladdr((void *)ss_take_settings, &info) && info.dli_fname && strlen(info.dli_fname) < sizeof ss_library)
        strcpy(ss_library, info.dli_fname);
    errno = saved_errno;
}

/* Our path, as the loader names it ("" when unknown). */
const char *ss_library_path(void) { return ss_library; }

/* Before main: anything that put them back meanwhile (nothing should) goes again. */
void ss_strip_settings_again(void) { ss_strip_environ(0); }

const char *ss_setting(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < ss_settings_count; i++)
        if (strncmp(ss_settings[i], name, n) == 0 && ss_settings[i][n] == '=') return ss_settings[i] + n + 1;
    return NULL;
}

/* ---- at exec ---- */

/* A line `stallscope run` shows after the run (its index: "PID PPID #note TEXT"). Only system
 * calls: it may run in a vfork child. */
void ss_note_unprofiled(const char *text) {
    if (!ss_config.index[0]) return;
    int fd = open(ss_config.index, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    char line[1400];
    struct ss_str s = {line, 0, sizeof line - 1};
    ss_str_u64(&s, (uint64_t)getpid());
    ss_str_cat(&s, " ");
    ss_str_u64(&s, (uint64_t)ss_parent_pid);
    ss_str_cat(&s, " #note ");
    ss_str_cat(&s, text);
    line[s.len++] = '\n';
    for (size_t at = 0; at < s.len;) { /* one short O_APPEND write: lines never interleave */
        ssize_t n = write(fd, line + at, s.len - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        at += (size_t)n;
    }
    close(fd);
}

/* ---- the loader of the program an exec runs ----
 *
 * Our library needs glibc's loader: a program whose interpreter is another (musl's
 * ld-musl-x86_64.so.1, bionic's linker64, a 32-bit loader) fails to start with our entry in
 * LD_PRELOAD ("Error loading shared library ld-linux-x86-64.so.2", relocation errors, or a "wrong
 * ELF class" message). Such an exec gets the environment it would have without stallscope: our
 * entry out of LD_PRELOAD, no settings. A static program ignores LD_PRELOAD and keeps it, so that
 * its children are still profiled; so does a file we cannot read (execute-only), which we cannot
 * judge. Only system calls, into the caller's frame: exec may run in a vfork child. */

#define SS_GLIBC_LOADER "ld-linux-x86-64.so.2"

/* Whether the glibc loader at `path` is older than 2.34, whose symbol versions our library needs
 * (GLIBC_2.34's dlsym and pthread functions in libc.so.6): such a loader refuses to start the
 * program at all ("version `GLIBC_2.34' not found (required by libstallscope-....so)"). A loader
 * of 2.34 or later defines that version, so its name is in the file's dynamic strings. The
 * system's loader (the one we run under) is not read; a file we cannot read is not judged. */
static int ss_loader_too_old(const char *path) {
    if (strcmp(path, "/lib64/ld-linux-x86-64.so.2") == 0 ||
        strcmp(path, "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2") == 0)
        return 0;
    static const char mark[] = "\0GLIBC_2.34"; /* and its own NUL: sizeof mark bytes */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    unsigned char buf[8192];
    size_t keep = 0;
    off_t at = 0;
    int found = 0, read_any = 0;
    for (;;) {
        ssize_t n = pread(fd, buf + keep, sizeof buf - keep, at);
        if (n <= 0) break;
        read_any = 1;
        at += n;
        size_t len = keep + (size_t)n;
        for (size_t i = 0; i + sizeof mark <= len; i++)
            if (buf[i] == 0 && memcmp(buf + i, mark, sizeof mark) == 0) {
                found = 1;
                break;
            }
        if (found) break;
        keep = len < sizeof mark ? len : sizeof mark - 1; /* a mark across two reads */
        memmove(buf, buf + len - keep, keep);
    }
    close(fd);
    return read_any && !found;
}

/* 1: the file takes our preload (glibc's loader, static, a script whose interpreter does, or
 * unknown); 0: it does not, its interpreter (or what it is) in `why`. */
static int ss_fd_takes_preload(int fd, char *why, size_t cap, int depth) {
    unsigned char head[256];
    ssize_t n = pread(fd, head, sizeof head, 0);
    if (n < 4) return 1;
    if (head[0] == '#' && head[1] == '!') {
        if (depth >= 4) return 1;
        size_t i = 2, end;
        while (i < (size_t)n && (head[i] == ' ' || head[i] == '\t')) i++;
        for (end = i; end < (size_t)n && head[end] != ' ' && head[end] != '\t' && head[end] != '\n'; end++) {}
        if (end == i || end == (size_t)n) return 1;
        char interp[256];
        memcpy(interp, head + i, end - i);
        interp[end - i] = 0;
        int ifd = open(interp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (ifd < 0) return 1;
        int takes = ss_fd_takes_preload(ifd, why, cap, depth + 1);
        close(ifd);
        return takes;
    }
    if (n < 64 || memcmp(head, "\177ELF", 4) != 0) return 1; /* not ELF: the kernel's business */
    struct ss_str w = {why, 0, cap};
    if (head[4] != 2 /* ELFCLASS64 */ || head[5] != 1 /* little-endian */) {
        ss_str_cat(&w, "its loader is not glibc's (a 32-bit or big-endian program)");
        return 0;
    }
    uint16_t type, machine, phentsize, phnum;
    uint64_t phoff;
    memcpy(&type, head + 16, 2);
    memcpy(&machine, head + 18, 2);
    memcpy(&phoff, head + 32, 8);
    memcpy(&phentsize, head + 54, 2);
    memcpy(&phnum, head + 56, 2);
    if (machine != 62 /* EM_X86_64 */) {
        ss_str_cat(&w, "its loader is not glibc's (a program for another machine)");
        return 0;
    }
    /* All program headers in one read (programs have about a dozen; more: not judged). */
    if (phentsize != 56 || phnum == 0 || phnum > 32) return 1;
    unsigned char phdrs[32 * 56];
    size_t size = (size_t)phnum * 56;
    if (pread(fd, phdrs, size, (off_t)phoff) != (ssize_t)size) return 1;
    for (uint16_t i = 0; i < phnum; i++) {
        const unsigned char *ph = phdrs + (size_t)i * 56;
        uint32_t ptype;
        uint64_t off, filesz;
        memcpy(&ptype, ph, 4);
        if (ptype != 3 /* PT_INTERP */) continue;
        memcpy(&off, ph + 8, 8);
        memcpy(&filesz, ph + 32, 8);
        char interp[512];
        if (filesz < 2 || filesz > sizeof interp) return 1;
        if (pread(fd, interp, filesz, (off_t)off) != (ssize_t)filesz) return 1;
        interp[filesz - 1] = 0;
        const char *base = strrchr(interp, '/');
        base = base ? base + 1 : interp;
        if (strcmp(base, SS_GLIBC_LOADER) != 0) {
            ss_str_cat(&w, "its loader is not glibc's (");
            ss_str_cat(&w, interp);
            ss_str_cat(&w, ")");
            return 0;
        }
        if (!ss_loader_too_old(interp)) return 1;
        ss_str_cat(&w, "its C library is glibc older than 2.34 (");
        ss_str_cat(&w, interp);
        ss_str_cat(&w, "), and the interposer needs glibc 2.34 or later");
        return 0;
    }
    (void)type;
    return 1; /* static: LD_PRELOAD is ignored, and passed on to its children */
}

/* O_NONBLOCK: a FIFO (which exec refuses anyway) must not block the open. */
static int ss_path_takes_preload(const char *path, char *why, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 1;
    int takes = ss_fd_takes_preload(fd, why, cap, 0);
    close(fd);
    return takes;
}

/* The file execvp would run: the first executable regular file along PATH (glibc's default
 * search path when PATH is unset), into `out`; 0 when none. */
static int ss_search_path(const char *file, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t flen = strlen(file);
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        if (dlen + flen + 2 <= cap) {
            size_t k = 0;
            if (dlen == 0) out[k++] = '.';
            memcpy(out + k, p, dlen);
            k += dlen;
            out[k++] = '/';
            memcpy(out + k, file, flen + 1);
            struct stat st;
            if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return 1;
        }
        if (!end) return 0;
        p = end;
    }
}

/* Whether the program `target` (a path, searched along PATH when `search` and it has no '/', or
 * the descriptor `fd` when path is NULL) takes our preload; when not, notes it in the run's
 * index so that `stallscope run` says so. */
static int ss_target_takes_preload(const char *target, int fd, int search) {
    char why[600], found[4096];
    why[0] = 0;
    int takes = 1;
    const char *shown = target;
    if (!target) {
        /* Read through /proc/self/fd: the descriptor may be O_PATH (fexecve's and execveat's
         * callers open programs so), which pread refuses; else the descriptor itself. */
        struct ss_str p = {found, 0, sizeof found};
        ss_str_cat(&p, "/proc/self/fd/");
        ss_str_u64(&p, (uint64_t)(unsigned)fd);
        int rfd = fd < 0 ? -1 : open(found, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        takes = fd < 0 || ss_fd_takes_preload(rfd >= 0 ? rfd : fd, why, sizeof why, 0);
        if (rfd >= 0) close(rfd);
        shown = "a program run by descriptor";
    } else if (search && !strchr(target, '/')) {
        if (ss_search_path(target, found, sizeof found)) {
            takes = ss_path_takes_preload(found, why, sizeof why);
            shown = found;
        }
    } else {
        takes = ss_path_takes_preload(target, why, sizeof why);
    }
    if (!takes) {
        char line[1200];
        struct ss_str s = {line, 0, sizeof line};
        ss_str_cat(&s, shown);
        ss_str_cat(&s, " ran unprofiled: ");
        ss_str_cat(&s, why);
        ss_note_unprofiled(line);
    }
    return takes;
}

/* The LD_PRELOAD entry of envp that carries our library (NULL: none); *at: where our library's
 * path starts in that entry. */
static char *ss_preload_entry(char *const envp[], size_t *at) {
    size_t n = strlen(ss_library);
    if (!n || !envp) return NULL;
    for (; *envp; envp++) {
        if (strncmp(*envp, "LD_PRELOAD=", 11) != 0) continue;
        const char *value = *envp + 11;
        for (const char *p = value; (p = strstr(p, ss_library)) != NULL; p += n) {
            int starts = p == value || p[-1] == ':' || p[-1] == ' ';
            int ends = p[n] == 0 || p[n] == ':' || p[n] == ' ';
            if (starts && ends) {
                *at = (size_t)(p - *envp);
                return *envp;
            }
        }
    }
    return NULL;
}

/* Whether envp asks glibc's loader to list the program's libraries and stop (ldd runs the loader
 * so: LD_TRACE_LOADED_OBJECTS, whatever its value). Our library would be listed among them, and
 * nothing runs to be profiled. */
static int ss_env_lists_only(char *const envp[]) {
    static const char name[] = "LD_TRACE_LOADED_OBJECTS=";
    for (; *envp; envp++)
        if (strncmp(*envp, name, sizeof name - 1) == 0) return 1;
    return 0;
}

size_t ss_env_room(char *const envp[], const char *target, int fd, int search, int *drop) {
    ss_ensure_resolved();
    *drop = 0;
    size_t at;
    char *entry = ss_preload_entry(envp, &at);
    if (!entry) return 0;
    int saved_errno = errno;
    /* In a seccomp sandbox the new image would start the interposer under the filter: it goes
     * without (and its file is not read, which the filter may forbid). */
    int takes = !__atomic_load_n(&ss_sandboxed, __ATOMIC_ACQUIRE) && !ss_env_lists_only(envp) &&
                ss_target_takes_preload(target, fd, search);
    errno = saved_errno;
    size_t n = 0;
    while (envp[n]) n++;
    if (!takes) {
        /* The array, then the rewritten LD_PRELOAD entry in its tail. */
        *drop = 1;
        return n + 1 + (strlen(entry) + sizeof(char *)) / sizeof(char *);
    }
    if (!ss_settings_count) return 0;
    return n + ss_settings_count + 2;
}

/* The LD_PRELOAD entry without our library (and the separator after or before it) into `out`;
 * 0 when nothing is left of it. */
static int ss_preload_without_us(const char *entry, char *out) {
    size_t at;
    char *const one[2] = {(char *)entry, NULL};
    if (!ss_preload_entry(one, &at)) return 0;
    size_t n = strlen(ss_library), len = strlen(entry);
    size_t cut_from = at, cut_to = at + n;
    if (entry[cut_to] == ':' || entry[cut_to] == ' ')
        cut_to++;
    else if (cut_from > 11)
        cut_from--; /* the separator before us, when we come last */
    memcpy(out, entry, cut_from);
    memcpy(out + cut_from, entry + cut_to, len - cut_to + 1);
    return out[11] != 0;
}

/* Whether the program put settings of its own into the environment it passes: one that is not
 * among ours as we were given them (STALLSCOPE_PARENT aside, which only we write). A `stallscope
 * run` that is itself profiled starts its program with its own run's settings, and a script may
 * preload the interposer by hand; a program that passes on its initial environment as the kernel
 * kept it (/proc/self/environ) passes ours, which are replaced as usual. */
static int ss_env_has_own_settings(char *const envp[]) {
    for (; *envp; envp++) {
        if (!ss_is_setting(*envp) || strncmp(*envp, SS_PARENT_NAME, sizeof SS_PARENT_NAME - 1) == 0) continue;
        int ours = 0;
        for (size_t i = 0; i < ss_settings_count && !ours; i++) ours = strcmp(*envp, ss_settings[i]) == 0;
        if (!ours) return 1;
    }
    return 0;
}

char *const *ss_env_for_exec(char *const envp[], size_t room, char **on_stack, char *parent_entry, int drop) {
    if (!room) return envp;
    /* Its settings, not ours: the new image is profiled as the program asked, as it would be
     * without us (an inner run's profile went into the outer run's directory). Before anything is
     * mapped for a long environment: nothing is left to release. */
    if (!drop && ss_env_has_own_settings(envp)) return envp;
    char **out = on_stack;
    if (room > SS_ENV_STACK_MAX) { /* unmapped by SS_ENV_RELEASE when the call returns */
        void *p = mmap(NULL, room * sizeof(char *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return envp;
        out = p;
    }
    size_t k = 0;
    if (drop) {
        size_t n = 0, at;
        while (envp[n]) n++;
        char *entry = ss_preload_entry(envp, &at);
        char *rewritten = (char *)(out + n + 1);
        int kept = entry && ss_preload_without_us(entry, rewritten);
        for (char *const *e = envp; *e; e++) {
            if (ss_is_setting(*e)) continue;
            if (*e == entry) {
                if (kept) out[k++] = rewritten;
                continue;
            }
            out[k++] = *e;
        }
        out[k] = NULL;
        return out;
    }
    for (char *const *e = envp; *e; e++)
        if (!ss_is_setting(*e)) out[k++] = *e;
    for (size_t i = 0; i < ss_settings_count; i++) out[k++] = (char *)ss_settings[i];
    if (parent_entry) {
        /* This process's parent when it execs itself; the vforking process when a vfork child (which
         * shares our memory) execs. */
        pid_t pid = getpid();
        pid_t parent = pid == ss_pid ? ss_parent_pid : ss_pid;
        if (parent <= 0) parent = getppid();
        struct ss_str s = {parent_entry, 0, SS_PARENT_ENTRY_SIZE};
        ss_str_cat(&s, SS_PARENT_NAME);
        ss_str_u64(&s, (uint64_t)pid);
        ss_str_cat(&s, ":");
        ss_str_u64(&s, (uint64_t)parent);
        out[k++] = parent_entry;
    }
    out[k] = NULL;
    return out;
}

void ss_env_release(char *const envp[], char *const *env, char **on_stack, size_t room) {
    int saved_errno = errno;
    if (env != envp && env != on_stack) munmap((void *)env, room * sizeof(char *));
    errno = saved_errno;
}

/* posix_spawn's child execs from inside glibc: its environment is set here. Its parent is the
 * caller, alive at least until the child has exec'd. */
SS_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 0, path, -1, 0);
    (void)env_profiled; /* a new process: ours goes on */
    int rc = ss_real.posix_spawn(pid, path, actions, attr, argv, env);
    SS_ENV_RELEASE(envp, env);
    return rc;
}

SS_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 0, file, -1, 1);
    (void)env_profiled;
    int rc = ss_real.posix_spawnp(pid, file, actions, attr, argv, env);
    SS_ENV_RELEASE(envp, env);
    return rc;
}
