/* CPython's frames in stacks (docs/STACKS.md, "Python frames").
 *
 * In a process that runs CPython 3.8 to 3.13, a stack taken in a thread (a CPU sample's, in the
 * signal handler; an allocation's or a lock wait's, in the hook) also takes the thread's Python
 * frames: the interpreter's structures are read as its own headers lay them out, version by
 * version (a table of offsets for 3.8-3.12, the interpreter's own `_Py_DebugOffsets` for 3.13),
 * from its exported symbols (`_PyRuntime`). Nothing calls into the interpreter after start-up,
 * and every read is a `process_vm_readv` of the process itself: an address that is no longer
 * mapped gives an error, never a fault. Per frame only the code object's address and the
 * instruction offset are taken; the flusher turns each code object into its name, file, first
 * line and line table (PY_CODE records) once per file, and the report decodes the line.
 *
 * The thread's state is found by its `thread_id` (pthread_self()) in the interpreters' thread
 * lists and kept in the thread's TLS, checked again at each use. A build whose version is not
 * known here, or a free-threaded one, leaves stacks native, and the PYTHON record says why. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SS_PY_NONE UINT32_MAX /* a field the version does not have */

/* Where the interpreter keeps what the walk reads, in bytes (x86-64, default builds). */
struct ss_py_layout {
    uint32_t rt_interp_head; /* _PyRuntime.interpreters.head */
    uint32_t interp_next, interp_threads;
    uint32_t ts_next, ts_frame, ts_cframe_frame, ts_thread_id; /* cframe_frame: 3.11/3.12's indirection */
    uint32_t fr_back, fr_code, fr_instr, fr_is_entry, fr_owner;
    uint32_t instr_kind; /* 0: f_lasti in bytes (int); 1: f_lasti in code units (int); 2: instruction pointer */
    uint32_t co_filename, co_name, co_qualname, co_firstlineno, co_table, co_adaptive;
    uint32_t uni_state, uni_length, ascii_size, compact_size;
    uint32_t bytes_size, bytes_data;
};

static const struct ss_py_layout ss_py_38 = {32, 0, 8, 8, 24, SS_PY_NONE, 176, 24, 32, 104, SS_PY_NONE, SS_PY_NONE, 0,
                                             104, 112, SS_PY_NONE, 40, 120, SS_PY_NONE, 32, 16, 48, 72, 16, 32};
static const struct ss_py_layout ss_py_310 = {32, 0, 8, 8, 24, SS_PY_NONE, 176, 24, 32, 96, SS_PY_NONE, SS_PY_NONE, 1,
                                              104, 112, SS_PY_NONE, 40, 120, SS_PY_NONE, 32, 16, 48, 72, 16, 32};
static const struct ss_py_layout ss_py_311 = {40, 0, 16, 8, 56, 8, 152, 48, 32, 56, 68, 69, 2,
                                              112, 120, 128, 72, 136, 184, 32, 16, 48, 72, 16, 32};
static const struct ss_py_layout ss_py_312 = {40, 0, 72, 8, 56, 0, 136, 8, 0, 56, SS_PY_NONE, 70, 2,
                                              112, 120, 128, 68, 136, 192, 32, 16, 40, 56, 16, 32};

/* The head of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first field of
 * _PyRuntime, filled in statically: stable within a minor version. */
struct ss_py_debug_offsets {
    char cookie[8];
    uint64_t version, free_threaded;
    struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil, gil_runtime_state,
            gil_enabled, gil_locked, gil_holder;
    } interpreter_state;
    struct { uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status; } thread_state;
    struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
            co_code_adaptive;
    } code_object;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
    struct { uint64_t size, ob_item, ob_size; } tuple_object, list_object;
    struct { uint64_t size, ma_keys, ma_values; } dict_object;
    struct { uint64_t size, ob_fval; } float_object;
    struct { uint64_t size, lv_tag, ob_digit; } long_object;
    struct { uint64_t size, ob_size, ob_sval; } bytes_object;
    struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};

static struct ss_py_layout ss_py;
static int ss_py_on;            /* stacks take Python frames */
static uint32_t ss_py_version;  /* PY_VERSION_HEX, 0: not known */
static uint32_t ss_py_flags;    /* SS_PYTHON_*: what the PYTHON record says (0: no CPython) */
static uint64_t ss_py_runtime;  /* &_PyRuntime */
static uint64_t ss_py_code_type, ss_py_unicode_type, ss_py_bytes_type;
static uint32_t ss_py_ts_read, ss_py_fr_read, ss_py_co_read; /* bytes read of a thread state, frame, code object */
static SS_TLS uint64_t ss_py_tstate; /* the calling thread's state, as last found */

/* Code objects copied at first sight (below, "code objects, copied at first sight"). */
#define SS_PY_SEEN_SLOTS 16384u
#define SS_PY_ARENA (8u << 20)
struct ss_py_seen {
    uint64_t key;   /* the address and fingerprint mixed; 0: free */
    uint64_t code, fp;
    uint32_t ready; /* its copy is whole (1), or could not be made (2) */
    uint32_t at;    /* its copy in the arena: struct ss_py_copy, then its bytes */
};
struct ss_py_copy {
    int32_t first_line;
    uint32_t name_len, qualname_len, file_len, table_len, pad;
};
static struct ss_py_seen *ss_py_seen;
static uint8_t *ss_py_arena;
static uint32_t ss_py_arena_used;
static uint8_t *ss_py_written; /* by slot: its PY_CODE record is in the file (the flusher's) */

static int ss_py_read(uint64_t addr, void *out, size_t n) {
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
    return syscall(SYS_process_vm_readv, ss_pid, &local, 1ul, &remote, 1ul, 0ul) == (long)n ? 0 : -1;
}

/* A pointer the interpreter could have made: not NULL, aligned, in user space. */
static int ss_py_ptr_ok(uint64_t p) { return p >= 4096 && (p & 7) == 0 && p < (1ull << 47); }

static uint64_t ss_py_u64(const uint8_t *b, uint32_t at) {
    uint64_t v;
    memcpy(&v, b + at, 8);
    return v;
}

static int32_t ss_py_i32(const uint8_t *b, uint32_t at) {
    int32_t v;
    memcpy(&v, b + at, 4);
    return v;
}

/* What tells a code object from another that later takes its address: its file and name
 * objects' addresses (co_filename, then co_name, 16 bytes at `p`). */
static uint64_t ss_py_fingerprint(const uint8_t *p) {
    uint64_t fp = ss_py_u64(p, 0) ^ (ss_py_u64(p, 8) * 0x9E3779B97F4A7C15ull);
    return fp ? fp : 1;
}

static uint32_t ss_py_max(uint32_t a, uint32_t b) { return b != SS_PY_NONE && b > a ? b : a; }

/* 3.13's layout from its debug offsets; 0 when they are not what this file knows. */
static int ss_py_from_debug_offsets(const struct ss_py_debug_offsets *d) {
    if (memcmp(d->cookie, "xdebugpy", 8) != 0 || (d->version >> 16) != 0x030d) return 0;
    if (d->free_threaded) {
        ss_py_flags |= SS_PYTHON_FREE_THREADED;
        return 0;
    }
    const uint64_t fields[] = {d->runtime_state.interpreters_head, d->interpreter_state.next,
                               d->interpreter_state.threads_head, d->thread_state.next,
                               d->thread_state.current_frame, d->thread_state.thread_id,
                               d->interpreter_frame.previous, d->interpreter_frame.executable,
                               d->interpreter_frame.instr_ptr, d->interpreter_frame.owner, d->code_object.filename,
                               d->code_object.name, d->code_object.qualname, d->code_object.firstlineno,
                               d->code_object.linetable, d->code_object.co_code_adaptive, d->unicode_object.state,
                               d->unicode_object.length, d->unicode_object.asciiobject_size,
                               d->bytes_object.ob_size, d->bytes_object.ob_sval};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i] > 65536) return 0;
    ss_py = (struct ss_py_layout){(uint32_t)d->runtime_state.interpreters_head,
                                  (uint32_t)d->interpreter_state.next,
                                  (uint32_t)d->interpreter_state.threads_head,
                                  (uint32_t)d->thread_state.next,
                                  (uint32_t)d->thread_state.current_frame,
                                  SS_PY_NONE,
                                  (uint32_t)d->thread_state.thread_id,
                                  (uint32_t)d->interpreter_frame.previous,
                                  (uint32_t)d->interpreter_frame.executable,
                                  (uint32_t)d->interpreter_frame.instr_ptr,
                                  SS_PY_NONE,
                                  (uint32_t)d->interpreter_frame.owner,
                                  2,
                                  (uint32_t)d->code_object.filename,
                                  (uint32_t)d->code_object.name,
                                  (uint32_t)d->code_object.qualname,
                                  (uint32_t)d->code_object.firstlineno,
                                  (uint32_t)d->code_object.linetable,
                                  (uint32_t)d->code_object.co_code_adaptive,
                                  (uint32_t)d->unicode_object.state,
                                  (uint32_t)d->unicode_object.length,
                                  (uint32_t)d->unicode_object.asciiobject_size,
                                  (uint32_t)d->unicode_object.asciiobject_size + 16, /* + utf8_length, utf8 */
                                  (uint32_t)d->bytes_object.ob_size,
                                  (uint32_t)d->bytes_object.ob_sval};
    return 1;
}

/* The interpreter's version: Py_Version (3.11 and later), else Py_GetVersion()'s text, which
 * formats static strings (called here, at start-up, never later). */
static uint32_t ss_py_find_version(void) {
    const unsigned long *v = dlsym(RTLD_DEFAULT, "Py_Version");
    if (v) return (uint32_t)*v;
    const char *(*get)(void) = NULL;
    *(void **)&get = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    const char *s = get ? get() : NULL;
    if (!s || s[0] != '3' || s[1] != '.') return 0;
    uint32_t minor = 0;
    for (const char *p = s + 2; *p >= '0' && *p <= '9' && minor < 100; p++) minor = minor * 10 + (uint32_t)(*p - '0');
    return 0x03000000u | (minor << 16);
}

static void ss_py_names_init(uint32_t minor, const struct ss_py_debug_offsets *rt);

/* At start-up (ss_stacks_init): whether the process runs CPython, and which. Returns whether its
 * frames are taken. */
int ss_py_init(void) {
    if (!ss_option_num(SS_OPT_PYTHON_FRAMES)) return 0; /* 0: native stacks only (comparisons) */
    void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!rt) return 0;
    ss_py_runtime = (uintptr_t)rt;
    ss_py_version = ss_py_find_version();
    uint32_t minor = (ss_py_version >> 24) == 3 ? (ss_py_version >> 16) & 0xff : 0;
    int known = 1;
    if (minor == 8 || minor == 9) ss_py = ss_py_38;
    else if (minor == 10) ss_py = ss_py_310;
    else if (minor == 11) ss_py = ss_py_311;
    else if (minor == 12) ss_py = ss_py_312;
    else if (minor == 13) known = ss_py_from_debug_offsets(rt);
    else known = 0;
    ss_py_code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    ss_py_unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    ss_py_bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    if (!ss_py_code_type || !ss_py_unicode_type || !ss_py_bytes_type) known = 0;
    if (!known) {
        if (!(ss_py_flags & SS_PYTHON_FREE_THREADED)) ss_py_flags |= SS_PYTHON_UNKNOWN_VERSION;
        return 0;
    }
    uint64_t probe = 0;
    if (ss_py_read(ss_py_runtime, &probe, sizeof probe) != 0) { /* a sandbox's seccomp profile */
        ss_py_flags |= SS_PYTHON_NO_READ;
        return 0;
    }
    ss_py_ts_read = ss_py_max(ss_py_max(ss_py.ts_next, ss_py.ts_frame), ss_py.ts_thread_id) + 8;
    ss_py_fr_read = ss_py_max(ss_py_max(ss_py_max(ss_py.fr_back, ss_py.fr_code), ss_py.fr_instr), ss_py.fr_owner) + 8;
    ss_py_fr_read = ss_py_max(ss_py_fr_read, ss_py.fr_is_entry + 1);
    ss_py_co_read = ss_py_max(ss_py_max(ss_py_max(ss_py.co_filename, ss_py.co_name), ss_py.co_qualname),
                              ss_py_max(ss_py.co_firstlineno, ss_py.co_table)) + 8;
    if (ss_py_ts_read > 512 || ss_py_fr_read > 256 || ss_py_co_read > 512 || ss_py.co_name != ss_py.co_filename + 8) {
        ss_py_flags |= SS_PYTHON_UNKNOWN_VERSION;
        return 0;
    }
    /* A fork child's tables start empty (ss_py_file_reset): zeroed by the kernel where it can. */
    ss_py_seen = ss_map_wiped(SS_PY_SEEN_SLOTS * sizeof *ss_py_seen);
    ss_py_arena = ss_map(SS_PY_ARENA);
    ss_py_written = ss_map_wiped(SS_PY_SEEN_SLOTS);
    if (!ss_py_seen || !ss_py_arena || !ss_py_written) return 0;
    ss_py_flags |= SS_PYTHON_FRAMES;
    ss_py_on = 1;
    ss_py_names_init(minor, rt);
    return 1;
}

/* The calling thread's state (its first ss_py_ts_read bytes into `ts`), 0 if it has none. */
static uint64_t ss_py_find_tstate(uint64_t self, uint8_t *ts) {
    uint64_t interp = 0;
    if (ss_py_read(ss_py_runtime + ss_py.rt_interp_head, &interp, 8) != 0) return 0;
    for (int i = 0; i < 64 && ss_py_ptr_ok(interp); i++) {
        uint64_t head = 0, next = 0;
        if (ss_py_read(interp + ss_py.interp_threads, &head, 8) != 0) return 0;
        for (int k = 0; k < 4096 && ss_py_ptr_ok(head); k++) {
            if (ss_py_read(head, ts, ss_py_ts_read) != 0) break;
            if (ss_py_u64(ts, ss_py.ts_thread_id) == self) return head;
            head = ss_py_u64(ts, ss_py.ts_next);
        }
        if (ss_py_read(interp + ss_py.interp_next, &next, 8) != 0) return 0;
        interp = next;
    }
    return 0;
}

/* ---- code objects, copied at first sight ----
 *
 * A code object can die before the flusher writes the stacks that name it (an imported module's
 * body, once it ran; every code object at the interpreter's finalization, before the last
 * flush). So the thread that first takes a frame of a code object copies its name, qualified
 * name, file, first line and line table into a shared arena, once: a table keyed by the code
 * object's address and fingerprint, whose slots are claimed by compare-and-swap. The slot's index
 * is the code's id in the file. */


static uint64_t ss_py_key(uint64_t code, uint64_t fp) {
    uint64_t k = (code ^ (fp * 0xbf58476d1ce4e5b9ull)) * 0x94d049bb133111ebull;
    return k ? k : 1;
}

/* A str object's text as UTF-8 into out (at most cap bytes, cut at a character); its length, or
 * -1 when it is not a compact str. */
static int ss_py_string(uint64_t obj, char *out, uint32_t cap) {
    uint8_t h[128];
    if (!ss_py_ptr_ok(obj) || ss_py_read(obj, h, ss_py.compact_size) != 0 || ss_py_u64(h, 8) != ss_py_unicode_type)
        return -1;
    uint32_t state;
    memcpy(&state, h + ss_py.uni_state, 4);
    uint64_t length = ss_py_u64(h, ss_py.uni_length);
    uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || length > (1u << 20)) return -1;
    if (length > cap) length = cap;
    uint64_t data = obj + (ascii ? ss_py.ascii_size : ss_py.compact_size);
    if (ascii) return length && ss_py_read(data, out, length) != 0 ? -1 : (int)length;
    uint8_t raw[512]; /* in pieces: this may run in a signal handler */
    uint32_t n = 0;
    for (uint64_t done = 0; done < length;) {
        uint64_t piece = (length - done) * kind > sizeof raw ? sizeof raw / kind : length - done;
        if (ss_py_read(data + done * kind, raw, piece * kind) != 0) return -1;
        for (uint64_t i = 0; i < piece; i++) {
            uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
                                                         : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                                                               (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
            uint32_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) c = 0xFFFD, len = 3;
            if (n + len > cap) return (int)n;
            if (len == 1) out[n++] = (char)c;
            else if (len == 2) out[n++] = (char)(0xC0 | c >> 6), out[n++] = (char)(0x80 | (c & 63));
            else if (len == 3)
                out[n++] = (char)(0xE0 | c >> 12), out[n++] = (char)(0x80 | ((c >> 6) & 63)), out[n++] = (char)(0x80 | (c & 63));
            else
                out[n++] = (char)(0xF0 | c >> 18), out[n++] = (char)(0x80 | ((c >> 12) & 63)),
                out[n++] = (char)(0x80 | ((c >> 6) & 63)), out[n++] = (char)(0x80 | (c & 63));
        }
        done += piece;
    }
    return (int)n;
}

/* The most bytes a str object's UTF-8 copy takes (at most SS_PY_STRING_MAX), or -1 when it is
 * not a compact str. */
static int64_t ss_py_string_room(uint64_t obj) {
    uint8_t h[128];
    if (!ss_py_ptr_ok(obj) || ss_py_read(obj, h, ss_py.compact_size) != 0 || ss_py_u64(h, 8) != ss_py_unicode_type)
        return -1;
    uint32_t state;
    memcpy(&state, h + ss_py.uni_state, 4);
    uint64_t length = ss_py_u64(h, ss_py.uni_length);
    uint32_t kind = (state >> 2) & 7, ascii = (state >> 6) & 1;
    uint64_t room = length * (ascii ? 1 : kind == 1 ? 2 : kind == 2 ? 3 : 4);
    return room > SS_PY_STRING_MAX ? SS_PY_STRING_MAX : (int64_t)room;
}

/* Copies the code object into the arena (the room it needs, taken there); its offset in the
 * arena, or -1 when it is not a code object or the arena is full. */
static int64_t ss_py_copy_code(uint64_t code, uint64_t fp) {
    uint8_t co[512];
    if (ss_py_read(code, co, ss_py_co_read) != 0 || ss_py_u64(co, 8) != ss_py_code_type ||
        ss_py_fingerprint(co + ss_py.co_filename) != fp)
        return -1;
    uint64_t name_obj = ss_py_u64(co, ss_py.co_name), file_obj = ss_py_u64(co, ss_py.co_filename);
    uint64_t qual_obj = ss_py.co_qualname == SS_PY_NONE ? 0 : ss_py_u64(co, ss_py.co_qualname);
    int64_t rooms[3] = {ss_py_string_room(name_obj), qual_obj ? ss_py_string_room(qual_obj) : 0,
                        ss_py_string_room(file_obj)};
    if (rooms[0] < 0) return -1;
    for (int i = 1; i < 3; i++)
        if (rooms[i] < 0) rooms[i] = 0;
    uint64_t table_size = 0, tobj = ss_py_u64(co, ss_py.co_table);
    uint8_t bh[64];
    if (ss_py_ptr_ok(tobj) && ss_py_read(tobj, bh, ss_py.bytes_data) == 0 && ss_py_u64(bh, 8) == ss_py_bytes_type) {
        table_size = ss_py_u64(bh, ss_py.bytes_size);
        if (table_size > SS_PY_TABLE_MAX) table_size = SS_PY_TABLE_MAX;
    }
    uint64_t want = sizeof(struct ss_py_copy) + (uint64_t)rooms[0] + (uint64_t)rooms[1] + (uint64_t)rooms[2] + table_size;
    want = (want + 7) & ~7ull;
    uint32_t at = __atomic_fetch_add(&ss_py_arena_used, (uint32_t)want, __ATOMIC_RELAXED);
    if ((uint64_t)at + want > SS_PY_ARENA) return -1;
    struct ss_py_copy *c = (struct ss_py_copy *)(ss_py_arena + at);
    char *text = (char *)(c + 1);
    int name = ss_py_string(name_obj, text, (uint32_t)rooms[0]);
    if (name < 0) return -1;
    int qual = rooms[1] ? ss_py_string(qual_obj, text + name, (uint32_t)rooms[1]) : 0;
    if (qual < 0) qual = 0;
    int file = rooms[2] ? ss_py_string(file_obj, text + name + qual, (uint32_t)rooms[2]) : 0;
    if (file < 0) file = 0;
    uint32_t table_len = 0;
    if (table_size && ss_py_read(tobj + ss_py.bytes_data, text + name + qual + file, table_size) == 0)
        table_len = (uint32_t)table_size;
    *c = (struct ss_py_copy){ss_py_i32(co, ss_py.co_firstlineno), (uint32_t)name, (uint32_t)qual, (uint32_t)file,
                             table_len, 0};
    return at;
}

/* The slot of (code, fp), or NULL; with `claim`, a free one is claimed for it (*mine = 1). */
static struct ss_py_seen *ss_py_slot(uint64_t code, uint64_t fp, int claim, int *mine) {
    uint64_t key = ss_py_key(code, fp);
    for (uint32_t i = 0; i < 64; i++) {
        struct ss_py_seen *s = &ss_py_seen[(uint32_t)((key >> 32) + i) & (SS_PY_SEEN_SLOTS - 1)];
        uint64_t cur = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (cur == 0 && claim &&
            __atomic_compare_exchange_n(&s->key, &cur, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            *mine = 1;
            return s;
        }
        if (cur == 0 && !claim) return NULL;
        if (cur == key) return s;
    }
    return NULL;
}

/* A frame's code object seen: copied if it is new. Async-signal-safe. */
static void ss_py_note(uint64_t code, uint64_t fp) {
    if (!ss_py_seen || !ss_py_arena) return;
    int mine = 0;
    struct ss_py_seen *s = ss_py_slot(code, fp, 1, &mine);
    if (!s || !mine) return;
    s->code = code;
    s->fp = fp;
    int64_t at = ss_py_copy_code(code, fp);
    if (at >= 0) s->at = (uint32_t)at;
    __atomic_store_n(&s->ready, at >= 0 ? 1u : 2u, __ATOMIC_RELEASE);
}

static uint32_t ss_py_walk(uint64_t self, uint64_t *cache, struct ss_py_raw *out, uint32_t max);

/* The calling thread's Python frames, innermost first, into out (at most max, the innermost
 * kept); returns how many. Async-signal-safe; errno is kept. */
uint32_t ss_py_capture(struct ss_py_raw *out, uint32_t max) {
    if (!ss_py_on) return 0;
    return ss_py_walk((uint64_t)pthread_self(), &ss_py_tstate, out, max);
}

/* The Python frames of another thread (`pthread_id`: its pthread_self()), for the flusher's
 * look at a thread blocked in a system call, whose frames stand still while it is blocked (the
 * caller checks that it did not run meanwhile). */
uint32_t ss_py_capture_of(uint64_t pthread_id, struct ss_py_raw *out, uint32_t max) {
    if (!ss_py_on || !pthread_id) return 0;
    uint64_t none = 0;
    return ss_py_walk(pthread_id, &none, out, max);
}

/* The frames of the thread whose pthread_self() is `self` (its state's address cached in
 * *cache). */
static uint32_t ss_py_walk(uint64_t self, uint64_t *cache, struct ss_py_raw *out, uint32_t max) {
    int saved_errno = errno;
    uint8_t ts[512], fr[256];
    uint64_t tstate = *cache;
    if (!tstate || ss_py_read(tstate, ts, ss_py_ts_read) != 0 || ss_py_u64(ts, ss_py.ts_thread_id) != self) {
        tstate = ss_py_find_tstate(self, ts);
        *cache = tstate;
    }
    uint32_t n = 0;
    uint64_t frame = tstate ? ss_py_u64(ts, ss_py.ts_frame) : 0;
    if (frame && ss_py.ts_cframe_frame != SS_PY_NONE)
        if (!ss_py_ptr_ok(frame) || ss_py_read(frame + ss_py.ts_cframe_frame, &frame, 8) != 0) frame = 0;
    for (int depth = 0; depth < 256 && n < max && ss_py_ptr_ok(frame); depth++) {
        if (ss_py_read(frame, fr, ss_py_fr_read) != 0) break;
        uint64_t code = ss_py_u64(fr, ss_py.fr_code), back = ss_py_u64(fr, ss_py.fr_back);
        if (ss_py.fr_owner != SS_PY_NONE && fr[ss_py.fr_owner] == 3) { /* FRAME_OWNED_BY_CSTACK: an entry's shim */
            if (n) out[n - 1].flags |= SS_PY_FRAME_ENTRY;
            frame = back;
            continue;
        }
        int64_t offset;
        if (ss_py.instr_kind == 2) {
            int64_t d = (int64_t)(ss_py_u64(fr, ss_py.fr_instr) - (code + ss_py.co_adaptive));
            offset = d < 0 || d >= (1ll << 30) ? -1 : d;
        } else {
            int32_t lasti = ss_py_i32(fr, ss_py.fr_instr);
            offset = lasti < 0 ? -1 : ss_py.instr_kind == 1 ? 2 * (int64_t)lasti : lasti;
        }
        uint32_t flags = ss_py.instr_kind < 2 || (ss_py.fr_is_entry != SS_PY_NONE && fr[ss_py.fr_is_entry])
                             ? SS_PY_FRAME_ENTRY
                             : 0;
        if (ss_py_ptr_ok(code)) out[n++] = (struct ss_py_raw){code, 0, (int32_t)offset, flags};
        frame = back;
    }
    if (n) out[n - 1].flags |= SS_PY_FRAME_ENTRY;
    /* Each code object's fingerprint, in one read: a code object that dies before the flusher
     * writes it, and whose address another takes, is then not named as the other. */
    struct iovec local[SS_PY_MAX_FRAMES], remote[SS_PY_MAX_FRAMES];
    uint8_t fps[SS_PY_MAX_FRAMES][16];
    for (uint32_t i = 0; i < n; i++) {
        local[i] = (struct iovec){fps[i], 16};
        remote[i] = (struct iovec){(void *)(uintptr_t)(out[i].code + ss_py.co_filename), 16};
    }
    long got = n ? syscall(SYS_process_vm_readv, ss_pid, local, (unsigned long)n, remote, (unsigned long)n, 0ul) : 0;
    for (uint32_t i = 0; i < n; i++) {
        out[i].fp = got >= (long)(16 * (i + 1)) ? ss_py_fingerprint(fps[i]) : 0;
        if (out[i].fp) ss_py_note(out[i].code, out[i].fp);
    }
    errno = saved_errno;
    return n;
}

/* ---- the flusher's part: PYTHON, PY_CODE and PY_STACK records ---- */

static int ss_py_header_written;

/* Writes the PYTHON record to the file being assembled, once per file. */
int ss_py_write_header(void) {
    if (!ss_py_flags || ss_py_header_written) return 0;
    struct ss_python_record r = {ss_py_version, ss_py_flags};
    if (ss_out_record(SS_REC_PYTHON, &r, sizeof r, NULL, 0) != 0) return -1;
    ss_py_header_written = 1;
    return 0;
}

/* The id of a code object's PY_CODE record, written now if it is new to the file;
 * SS_PY_CODE_UNKNOWN when no copy of it was made. -1: the write failed. */
static int64_t ss_py_code_id(uint64_t code, uint64_t fp) {
    if (fp == 0 || !ss_py_seen || !ss_py_written) return SS_PY_CODE_UNKNOWN;
    int mine = 0;
    struct ss_py_seen *s = ss_py_slot(code, fp, 0, &mine);
    if (!s || __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1) return SS_PY_CODE_UNKNOWN;
    uint32_t id = (uint32_t)(s - ss_py_seen);
    if (ss_py_written[id]) return id;
    const struct ss_py_copy *c = (const struct ss_py_copy *)(ss_py_arena + s->at);
    struct ss_py_code_record r = {id, c->first_line, c->name_len, c->qualname_len, c->file_len, c->table_len};
    if (ss_out_record(SS_REC_PY_CODE, &r, sizeof r, c + 1, (size_t)c->name_len + c->qualname_len + c->file_len + c->table_len) != 0)
        return -1;
    ss_py_written[id] = 1;
    return id;
}

/* Writes the PY_STACK record of stack `id` (and the PY_CODE records it needs first). */
int ss_py_write_stack(uint32_t id, const struct ss_py_raw *frames, uint32_t n) {
    if (n == 0) return 0;
    if (ss_py_write_header() != 0) return -1;
    struct ss_py_frame out[SS_PY_MAX_FRAMES];
    if (n > SS_PY_MAX_FRAMES) n = SS_PY_MAX_FRAMES;
    for (uint32_t i = 0; i < n; i++) {
        int64_t code = ss_py_code_id(frames[i].code, frames[i].fp);
        if (code < 0) return -1;
        out[i] = (struct ss_py_frame){(uint32_t)code, frames[i].offset, frames[i].flags, 0};
    }
    struct ss_py_stack_record r = {id, n};
    return ss_out_record(SS_REC_PY_STACK, &r, sizeof r, out, n * sizeof *out);
}

/* A new file (a new window's, or a fork child's: `child`, whose copies are the parent's and
 * start afresh): its code objects are written again. */
void ss_py_file_reset(int child) {
    int used = __atomic_load_n(&ss_py_arena_used, __ATOMIC_RELAXED) != 0;
    if (ss_py_written && used && (!child || !ss_wipe_works)) memset(ss_py_written, 0, SS_PY_SEEN_SLOTS);
    if (child) {
        if (ss_py_seen && used && !ss_wipe_works) memset(ss_py_seen, 0, SS_PY_SEEN_SLOTS * sizeof *ss_py_seen);
        ss_py_arena_used = 0;
    }
    ss_py_header_written = 0;
}

/* ---- threads' names, as the threading module knows them ----
 *
 * Python names its threads (`threading.Thread(name=...)`, a pool's `ThreadPoolExecutor-0_0`) in
 * its own objects only: before 3.14 the kernel's name is the process's. The flusher reads them
 * now and then (ss_py_names_tick), never in a signal handler and never calling the interpreter:
 * sys.modules (the interpreter's `modules`) gives the `threading` module, its dict `_active`, a
 * dict from each thread's ident (pthread_self(), the int key's hash) to its Thread object, whose
 * `_name` attribute is the name. The attribute lives where the version keeps an instance's
 * attributes: a `__dict__` at the type's tp_dictoffset (3.8-3.10), values beside the object
 * keyed by the type's cached keys or a dict pointer before it (3.11, 3.12: a tagged pointer),
 * values inline after the object (3.13). A name read is kept in the thread's node, so a thread
 * that ended keeps the name it had. Every read is a process_vm_readv, as for frames. */

struct ss_py_names_layout {
    uint32_t interp_modules; /* PyInterpreterState.modules (imports.modules from 3.12) */
    uint32_t cached_keys;    /* PyHeapTypeObject.ht_cached_keys */
    uint32_t dict_kind;      /* 0: 3.8-3.10's dict keys; 1: 3.11's and later */
    uint32_t instance;       /* 0: tp_dictoffset; 1: 3.11's values/dict; 2: 3.12's tagged pointer; 3: 3.13's inline values */
};

static struct ss_py_names_layout ss_pyn;
static int ss_pyn_on;
static uint64_t ss_pyn_next_ns; /* the flusher's next look */

#define SS_PYN_TP_FLAGS 168
#define SS_PYN_TP_BASICSIZE 32
#define SS_PYN_TP_DICTOFFSET 288
#define SS_PYN_INLINE_VALUES (1ull << 2)
#define SS_PYN_MANAGED_DICT (1ull << 4)

/* The names' layout of minor version `minor` (13: from the debug offsets at `rt`). */
static void ss_py_names_init(uint32_t minor, const struct ss_py_debug_offsets *rt) {
    switch (minor) {
    case 8: ss_pyn = (struct ss_py_names_layout){56, 872, 0, 0}; break;
    case 9: ss_pyn = (struct ss_py_names_layout){856, 864, 0, 0}; break;
    case 10: ss_pyn = (struct ss_py_names_layout){856, 872, 0, 0}; break;
    case 11: ss_pyn = (struct ss_py_names_layout){888, 872, 1, 1}; break;
    case 12: ss_pyn = (struct ss_py_names_layout){944, 880, 1, 2}; break;
    case 13:
        if (rt->interpreter_state.imports_modules == 0 || rt->interpreter_state.imports_modules > 65536) return;
        ss_pyn = (struct ss_py_names_layout){(uint32_t)rt->interpreter_state.imports_modules, 880, 1, 3};
        break;
    default: return;
    }
    ss_pyn_on = 1;
    ss_py_flags |= SS_PYTHON_THREAD_NAMES;
}

/* A dict's entries: where they start, how many, how big each is and where in it the hash, key
 * and value are; values from `values` instead where it is not 0 (a split dict). */
struct ss_pyn_entries {
    uint64_t at, values;
    uint32_t count, size, hash_at, key_at, value_at;
};

/* The entries of the dict keys object `keys`; 0 when it does not read as one. */
static int ss_pyn_keys(uint64_t keys, uint64_t values, struct ss_pyn_entries *e) {
    uint8_t k[48];
    if (!ss_py_ptr_ok(keys) || ss_py_read(keys, k, sizeof k) != 0) return 0;
    uint64_t n;
    if (ss_pyn.dict_kind == 0) { /* dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices */
        uint64_t size = ss_py_u64(k, 8);
        n = ss_py_u64(k, 32);
        if (size == 0 || size > (1u << 24) || n > size) return 0;
        uint64_t index = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
        *e = (struct ss_pyn_entries){keys + 40 + size * index, values, (uint32_t)n, 24, 0, 8, 16};
        return 1;
    }
    /* dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version, dk_usable, dk_nentries, dk_indices */
    uint32_t log2_index = k[9], kind = k[10];
    n = ss_py_u64(k, 24);
    if (log2_index > 30 || kind > 2 || n > (1u << 24)) return 0;
    uint64_t at = keys + 32 + (1ull << log2_index);
    if (kind == 0) *e = (struct ss_pyn_entries){at, values, (uint32_t)n, 24, 0, 8, 16};
    else *e = (struct ss_pyn_entries){at, values, (uint32_t)n, 16, SS_PY_NONE, 0, 8};
    return 1;
}

/* The entries of the dict object `dict`. */
static int ss_pyn_dict(uint64_t dict, struct ss_pyn_entries *e) {
    uint8_t d[48];
    if (!ss_py_ptr_ok(dict) || ss_py_read(dict, d, sizeof d) != 0) return 0;
    uint64_t values = ss_py_u64(d, 40); /* ma_keys at 32, ma_values at 40 in 3.8-3.13 */
    if (values && ss_pyn.instance == 3) values += 8; /* 3.13's PyDictValues: capacity, size, embedded, valid */
    return ss_pyn_keys(ss_py_u64(d, 32), values, e);
}

/* Calls each(hash, key, value, ctx) on the entries (at most `max`) until it returns 0. */
static void ss_pyn_each(const struct ss_pyn_entries *e, uint32_t max, int (*each)(uint64_t, uint64_t, uint64_t, void *),
                        void *ctx) {
    uint8_t buf[64 * 24];
    uint64_t vals[64];
    uint32_t per = (uint32_t)(sizeof buf / e->size), count = e->count < max ? e->count : max;
    for (uint32_t i = 0; i < count; i += per) {
        uint32_t n = count - i < per ? count - i : per;
        if (ss_py_read(e->at + (uint64_t)i * e->size, buf, (size_t)n * e->size) != 0) return;
        if (e->values && ss_py_read(e->values + 8ull * i, vals, 8ull * n) != 0) return;
        for (uint32_t j = 0; j < n; j++) {
            const uint8_t *en = buf + (size_t)j * e->size;
            uint64_t key = ss_py_u64(en, e->key_at);
            if (!key) continue;
            uint64_t hash = e->hash_at == SS_PY_NONE ? 0 : ss_py_u64(en, e->hash_at);
            uint64_t value = e->values ? vals[j] : ss_py_u64(en, e->value_at);
            if (ss_py_ptr_ok(value) && !each(hash, key, value, ctx)) return;
        }
    }
}

struct ss_pyn_find {
    const char *name;
    uint32_t len;
    uint64_t found;
};

static int ss_pyn_find_one(uint64_t hash, uint64_t key, uint64_t value, void *ctx) {
    (void)hash;
    struct ss_pyn_find *f = ctx;
    char text[32];
    if (ss_py_string(key, text, sizeof text) != (int)f->len || memcmp(text, f->name, f->len) != 0) return 1;
    f->found = value;
    return 0;
}

/* The value of the str key `name` among the entries, 0 if none. */
static uint64_t ss_pyn_find(const struct ss_pyn_entries *e, uint32_t max, const char *name) {
    struct ss_pyn_find f = {name, (uint32_t)strlen(name), 0};
    ss_pyn_each(e, max, ss_pyn_find_one, &f);
    return f.found;
}

/* The attribute `name` of the instance `obj` of a Python class, 0 if it is not found. */
static uint64_t ss_pyn_attribute(uint64_t obj, const char *name) {
    uint64_t type = 0, flags = 0, basic = 0, offset = 0;
    if (ss_py_read(obj + 8, &type, 8) != 0 || !ss_py_ptr_ok(type) || ss_py_read(type + SS_PYN_TP_FLAGS, &flags, 8) != 0)
        return 0;
    struct ss_pyn_entries e;
    uint64_t values = 0, dict = 0;
    if (ss_pyn.instance == 3 && (flags & SS_PYN_INLINE_VALUES)) { /* _PyObject_InlineValues */
        uint8_t head[8];
        if (ss_py_read(type + SS_PYN_TP_BASICSIZE, &basic, 8) != 0 || basic > 65536 ||
            ss_py_read(obj + basic, head, sizeof head) != 0)
            return 0;
        if (head[3]) values = obj + basic + 8; /* valid */
    }
    if (ss_pyn.instance != 0 && (flags & SS_PYN_MANAGED_DICT)) {
        if (ss_pyn.instance == 1 && !values && ss_py_read(obj - 32, &values, 8) != 0) return 0;
        if (!values && ss_py_read(obj - 24, &dict, 8) != 0) return 0;
        if (ss_pyn.instance == 2 && (dict & 1)) values = dict + 1, dict = 0; /* PyDictOrValues */
    } else if (!values) {
        if (ss_py_read(type + SS_PYN_TP_DICTOFFSET, &offset, 8) != 0 || (int64_t)offset <= 0 || offset > 65536 ||
            ss_py_read(obj + offset, &dict, 8) != 0)
            return 0;
    }
    if (values) {
        uint64_t keys = 0;
        if (ss_py_read(type + ss_pyn.cached_keys, &keys, 8) != 0 || !ss_pyn_keys(keys, values, &e)) return 0;
    } else if (!ss_pyn_dict(dict, &e)) {
        return 0;
    }
    return ss_pyn_find(&e, 256, name);
}

/* Names the live node of the thread whose pthread_self() is `ident`. */
static int ss_pyn_name_thread(uint64_t ident, uint64_t key, uint64_t thread, void *ctx) {
    (void)key;
    (void)ctx;
    struct ss_thread *t;
    for (t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->pthread_id == ident && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SS_NODE_LIVE) break;
    if (!t) return 1;
    char name[SS_PY_THREAD_NAME_MAX];
    int len = ss_py_string(ss_pyn_attribute(thread, "_name"), name, sizeof name);
    if (len <= 0) return 1;
    if ((uint32_t)len == __atomic_load_n(&t->py_name_len, __ATOMIC_ACQUIRE) && memcmp(name, t->py_name, (size_t)len) == 0)
        return 1;
    __atomic_store_n(&t->py_name_len, 0, __ATOMIC_RELEASE);
    memcpy(t->py_name, name, (size_t)len);
    __atomic_store_n(&t->py_name_len, (uint32_t)len, __ATOMIC_RELEASE);
    return 1;
}

static uint64_t ss_pyn_active, ss_pyn_dict_type; /* threading._active as last found, and its type */
static uint32_t ss_pyn_looks;                      /* looks since it was last found */
static uint32_t ss_pyn_modules;                    /* the entries of sys.modules at the last search */

/* threading._active, found from sys.modules: the main interpreter's (the last of the list). */
static uint64_t ss_pyn_find_active(void) {
    uint64_t interp = 0, next = 0, modules = 0, module = 0, type = 0, offset = 0, mdict = 0;
    struct ss_pyn_entries e;
    if (ss_py_read(ss_py_runtime + ss_py.rt_interp_head, &interp, 8) != 0) return 0;
    for (int i = 0; i < 64 && ss_py_ptr_ok(interp); i++, interp = next)
        if (ss_py_read(interp + ss_py.interp_next, &next, 8) != 0 || !ss_py_ptr_ok(next)) break;
    if (!ss_py_ptr_ok(interp) || ss_py_read(interp + ss_pyn.interp_modules, &modules, 8) != 0 ||
        !ss_pyn_dict(modules, &e))
        return 0;
    ss_pyn_modules = e.count;
    module = ss_pyn_find(&e, 1u << 16, "threading");
    if (!module || ss_py_read(module + 8, &type, 8) != 0 || !ss_py_ptr_ok(type) ||
        ss_py_read(type + SS_PYN_TP_DICTOFFSET, &offset, 8) != 0 || (int64_t)offset <= 0 || offset > 4096 ||
        ss_py_read(module + offset, &mdict, 8) != 0 || !ss_pyn_dict(mdict, &e))
        return 0;
    uint64_t active = ss_pyn_find(&e, 4096, "_active");
    if (!active || ss_py_read(active + 8, &ss_pyn_dict_type, 8) != 0) return 0;
    return active;
}

/* Reads the names of the threads in threading._active. Returns how many threads it holds. The
 * dict is looked up again every 20 looks (a program may replace it), or when it no longer reads
 * as a dict; between them its address is kept, which spares a look at every module's name. */
static uint32_t ss_py_names_read(void) {
    uint64_t type = 0;
    if (!ss_pyn_active || ++ss_pyn_looks >= 20 || ss_py_read(ss_pyn_active + 8, &type, 8) != 0 ||
        type != ss_pyn_dict_type) {
        ss_pyn_active = ss_pyn_find_active();
        ss_pyn_looks = 0;
    }
    struct ss_pyn_entries e;
    if (!ss_pyn_active || !ss_pyn_dict(ss_pyn_active, &e) || e.hash_at == SS_PY_NONE)
        return 0; /* int keys make a general dict, whose entries keep the hash: the ident */
    ss_pyn_each(&e, 1u << 16, ss_pyn_name_thread, NULL);
    return e.count;
}

/* The time to the next look: 100 ms; longer with many threads (a few reads each), and while the
 * search of sys.modules finds no threading module, with many modules (two reads each). */
static uint64_t ss_pyn_interval_ns(uint32_t threads) {
    uint32_t weight = ss_pyn_active ? threads / 32 : ss_pyn_modules / 512;
    return 100000000ull * (1 + (weight < 50 ? weight : 50));
}

void ss_py_names_tick(uint64_t now_ns) {
    if (!ss_py_on || !ss_pyn_on || now_ns < ss_pyn_next_ns) return;
    int saved_errno = errno;
    ss_pyn_next_ns = now_ns + ss_pyn_interval_ns(ss_py_names_read());
    errno = saved_errno;
}

int ss_py_write_thread(const struct ss_thread *t, uint32_t serial, uint32_t tid) {
    uint32_t len = __atomic_load_n(&t->py_name_len, __ATOMIC_ACQUIRE);
    if (len == 0 || len > SS_PY_THREAD_NAME_MAX) return 0;
    char name[SS_PY_THREAD_NAME_MAX];
    memcpy(name, t->py_name, len);
    struct ss_py_thread_record r = {serial, tid, len, 0};
    return ss_out_record(SS_REC_PY_THREAD, &r, sizeof r, name, len);
}
