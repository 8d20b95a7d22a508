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
pid_t ss_parent_pid;

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

/* Before main: anything that put them back meanwhile (nothing should) goes again. */
void ss_strip_settings_again(void) { ss_strip_environ(0); }

const char *ss_setting(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < ss_settings_count; i++)
        if (strncmp(ss_settings[i], name, n) == 0 && ss_settings[i][n] == '=') return ss_settings[i] + n + 1;
    return NULL;
}

/* ---- at exec ---- */

/* Whether envp has an LD_PRELOAD with our entry in it: the program passed its environment on. */
static int ss_carries_preload(char *const envp[]) {
    size_t n = strlen(ss_library);
    if (!n || !envp) return 0;
    for (; *envp; envp++) {
        if (strncmp(*envp, "LD_PRELOAD=", 11) != 0) continue;
        const char *value = *envp + 11;
        for (const char *p = value; (p = strstr(p, ss_library)) != NULL; p += n) {
            int starts = p == value || p[-1] == ':' || p[-1] == ' ';
            int ends = p[n] == 0 || p[n] == ':' || p[n] == ' ';
            if (starts && ends) return 1;
        }
    }
    return 0;
}

size_t ss_env_room(char *const envp[]) {
    ss_ensure_resolved();
    if (!ss_settings_count || !ss_carries_preload(envp)) return 0;
    size_t n = 0;
    while (envp[n]) n++;
    return n + ss_settings_count + 2;
}

char *const *ss_env_for_exec(char *const envp[], size_t room, char **on_stack, char *parent_entry) {
    if (!room) return envp;
    char **out = on_stack;
    if (room > SS_ENV_STACK_MAX) { /* unmapped by SS_ENV_RELEASE when the call returns */
        void *p = mmap(NULL, room * sizeof(char *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return envp;
        out = p;
    }
    size_t k = 0;
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
    SS_ENV_FOR_EXEC(envp, env, 0);
    int rc = ss_real.posix_spawn(pid, path, actions, attr, argv, env);
    SS_ENV_RELEASE(envp, env);
    return rc;
}

SS_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 0);
    int rc = ss_real.posix_spawnp(pid, file, actions, attr, argv, env);
    SS_ENV_RELEASE(envp, env);
    return rc;
}
