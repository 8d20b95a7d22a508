/* Writes the Rust side of the contract between the interposer and stallscope, from the C
 * definitions both follow: `generate_rust format` prints the profile format's constants and
 * enumerations (preload/ss_format.h), `generate_rust options` the run options' table
 * (preload/ss_options.def). build.rs compiles and runs it; the output is included by
 * src/profile/format.rs and src/options.rs. Sizes and offsets are the compiler's own, so the
 * Rust reader cannot disagree with the writer. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ss_format.h"

/* MUTEX_KIND -> MutexKind */
static void camel(const char *upper) {
    int start = 1;
    for (const char *p = upper; *p; p++) {
        if (*p == '_') {
            start = 1;
            continue;
        }
        putchar(start ? *p : tolower((unsigned char)*p));
        start = 0;
    }
}

/* nlocks -> NLOCKS */
static void upper(const char *lower) {
    for (const char *p = lower; *p; p++) putchar(toupper((unsigned char)*p));
}

struct entry {
    const char *id;
    unsigned long long value;
    const char *name;
};

/* A Rust enum with its values, names and conversion from the file's number. */
static void rust_enum(const char *type, const char *doc, const struct entry *e, size_t n) {
    printf("/// %s\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n", doc);
    printf("pub enum %s {\n", type);
    for (size_t i = 0; i < n; i++) {
        printf("    ");
        camel(e[i].id);
        printf(" = %llu,\n", e[i].value);
    }
    printf("}\n\nimpl %s {\n    pub const ALL: [%s; %zu] = [", type, type, n);
    for (size_t i = 0; i < n; i++) {
        printf("%s::", type);
        camel(e[i].id);
        printf(i + 1 < n ? ", " : "");
    }
    printf("];\n\n    /// The value the file holds for it.\n    pub fn value(self) -> u32 {\n        self as u32\n    }\n\n");
    printf("    /// The entry with this value in the file, if any.\n    pub fn from_u32(value: u32) -> Option<%s> {\n", type);
    printf("        Self::ALL.into_iter().find(|e| e.value() == value)\n    }\n\n");
    printf("    /// Its name in reports.\n    pub fn name(self) -> &'static str {\n        match self {\n");
    for (size_t i = 0; i < n; i++) {
        printf("            %s::", type);
        camel(e[i].id);
        printf(" => \"%s\",\n", e[i].name);
    }
    printf("        }\n    }\n}\n\n");
}

static void flags(const char *prefix, const char *doc, const struct entry *e, size_t n) {
    unsigned long long all = 0;
    for (size_t i = 0; i < n; i++) {
        printf("pub const %s_%s: u32 = %llu;\n", prefix, e[i].id, e[i].value);
        all |= e[i].value;
    }
    printf("/// %s: every bit this reader knows.\npub const %s_KNOWN: u32 = %llu;\n\n", doc, prefix, all);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void format(void) {
    printf("pub const MAGIC: &[u8; 8] = b\"%s\";\n", SS_MAGIC);
    printf("pub const VERSION: u32 = %u;\n", SS_VERSION);
    printf("pub const BYTE_ORDER_MARK: u32 = %#x;\n\n", SS_BYTE_ORDER_MARK);

    printf("// Records: type numbers and the size of each one's fixed part.\n");
#define SS_X(id, number, size) printf("pub const REC_%s: u32 = %d;\npub const %s_SIZE: usize = %zu;\n", #id, number, #id, (size_t)(size));
    SS_RECORDS(SS_X)
#undef SS_X
    printf("/// Every record type the format defines, with its name.\npub const RECORD_TYPES: &[(u32, &str)] = &[\n");
#define SS_X(id, number, size) printf("    (%d, \"%s\"),\n", number, #id);
    SS_RECORDS(SS_X)
#undef SS_X
    printf("];\n\n// Headers and the entries that follow fixed parts.\n");
#define SS_X(id, type) printf("pub const %s_SIZE: usize = %zu;\n", #id, sizeof(type));
    SS_PARTS(SS_X)
#undef SS_X
    printf("\n// Where the counts and lengths that give a record's size are in its payload.\n");
#define SS_X(rec, type, field)                                                                               \
    printf("pub const %s_", #rec);                                                                           \
    upper(#field);                                                                                           \
    printf("_AT: usize = %zu;\n", offsetof(type, field));
    SS_LENGTH_FIELDS(SS_X)
#undef SS_X

    printf("\npub const SIZE_FINE_BUCKETS: usize = %u;\npub const SIZE_BUCKETS: usize = %u;\n", SS_SIZE_FINE_BUCKETS,
           SS_SIZE_BUCKETS);
    printf("pub const LOCK_TIMING_FACTOR: u32 = %u;\npub const LOCK_PERIOD_MAX: u32 = %u;\n", SS_LOCK_TIMING_FACTOR,
           SS_LOCK_PERIOD_MAX);
    printf("pub const STACK_BYTES_FROM: u64 = %u;\n", SS_STACK_BYTES_FROM);
    printf("pub const TIMING_LONGER_FACTOR: u32 = %u;\n", SS_TIMING_LONGER_FACTOR);
    printf("pub const SYSCALL_UNKNOWN: u16 = %u;\n", SS_SYSCALL_UNKNOWN);
    printf("pub const LAT_BUCKETS: usize = %u;\npub const STACK_MAX_FRAMES: usize = %u;\n", SS_LAT_BUCKETS,
           SS_STACK_MAX_FRAMES);
    printf("pub const BUILD_ID_MAX: usize = %u;\npub const PHASE_NAME_SIZE: usize = %u;\n", SS_BUILD_ID_MAX,
           SS_PHASE_NAME);
    printf("pub const NOTIFY_SEQ_MASK: u16 = %u;\npub const NOTIFY_REWAIT: u16 = %u;\npub const NOTIFY_BROADCAST: u16 = %u;\n",
           SS_NOTIFY_SEQ_MASK, SS_NOTIFY_REWAIT, SS_NOTIFY_BROADCAST);
    printf("pub const WOKEN_US_MAX: u16 = %u;\n", SS_WOKEN_US_MAX);
    printf("pub const HEAP_LABEL_SIZE: usize = %u;\n", SS_HEAP_LABEL);
    printf("pub const PY_MAX_FRAMES: usize = %u;\npub const PY_STRING_MAX: usize = %u;\n", SS_PY_MAX_FRAMES,
           SS_PY_STRING_MAX);
    printf("pub const PY_TABLE_MAX: usize = %u;\npub const PY_CODE_UNKNOWN: u32 = %u;\n", SS_PY_TABLE_MAX,
           SS_PY_CODE_UNKNOWN);
    printf("pub const PY_FRAME_ENTRY: u32 = %u;\n", SS_PY_FRAME_ENTRY);
    printf("pub const TITLE_MAX: usize = %u;\n\n", SS_TITLE_MAX);
    printf("pub const PY_THREAD_NAME_MAX: usize = %u;\n\n", SS_PY_THREAD_NAME_MAX);

    static const char *fn_names[] = {
#define SS_X(id, name, group) name,
        SS_FUNCTIONS(SS_X)
#undef SS_X
    };
    static const char *fn_ids[] = {
#define SS_X(id, name, group) #id,
        SS_FUNCTIONS(SS_X)
#undef SS_X
    };
    static const int fn_group[] = {
#define SS_X(id, name, group) SS_GRP_##group,
        SS_FUNCTIONS(SS_X)
#undef SS_X
    };
    static const char *group_names[] = {
#define SS_X(id, name) name,
        SS_GROUPS(SS_X)
#undef SS_X
    };
    printf("// Allocator functions (enum ss_fn) and the report's groups of them (enum ss_group).\n");
    printf("pub const FN_COUNT: usize = %d;\n", SS_FN_COUNT);
    for (size_t i = 0; i < COUNT(fn_ids); i++) printf("pub const FN_%s: usize = %zu;\n", fn_ids[i], i);
    printf("/// Names of the allocator functions, in the order of `enum ss_fn`.\npub const FN_NAMES: [&str; FN_COUNT] = [");
    for (size_t i = 0; i < COUNT(fn_names); i++) printf("\"%s\"%s", fn_names[i], i + 1 < COUNT(fn_names) ? ", " : "");
    printf("];\npub const GROUP_COUNT: usize = %d;\n", SS_GRP_COUNT);
    printf("/// The report's function groups (`enum ss_group`) and which functions each sums.\n");
    printf("pub const GROUPS: [(&str, &[usize]); GROUP_COUNT] = [\n");
    for (int g = 0; g < SS_GRP_COUNT; g++) {
        printf("    (\"%s\", &[", group_names[g]);
        int first = 1;
        for (size_t f = 0; f < COUNT(fn_group); f++) {
            if (fn_group[f] != g) continue;
            printf("%s%zu", first ? "" : ", ", f);
            first = 0;
        }
        printf("]),\n");
    }
    printf("];\n\n");

    static const struct entry lock_kinds[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_LOCK_KINDS(SS_X)
#undef SS_X
    };
    static const struct entry end_hows[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_END_HOWS(SS_X)
#undef SS_X
    };
    static const struct entry timings[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_TIMINGS(SS_X)
#undef SS_X
    };
    static const struct entry roles[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_LOCK_ROLES(SS_X)
#undef SS_X
    };
    static const struct entry sample_kinds[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_SAMPLE_KINDS(SS_X)
#undef SS_X
    };
    static const struct entry wait_kinds[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_WAIT_KINDS(SS_X)
#undef SS_X
    };
    static const struct entry attach_hows[] = {
#define SS_X(id, value, name) {#id, value, name},
        SS_ATTACH_HOWS(SS_X)
#undef SS_X
    };
    rust_enum("AttachHow", "How a window of a running process came to be recorded (`enum ss_attach_how`).",
              attach_hows, COUNT(attach_hows));
    rust_enum("WaitKind", "What a thread waited for (`enum ss_wait_kind`).", wait_kinds, COUNT(wait_kinds));
    rust_enum("LockKind", "A kind of lock (`enum ss_lock_kind`).", lock_kinds, COUNT(lock_kinds));
    rust_enum("EndHow", "How a process image ended (`enum ss_end_how`).", end_hows, COUNT(end_hows));
    rust_enum("Timing", "How allocator calls were timed (`enum ss_timing`).", timings, COUNT(timings));
    rust_enum("LockRole", "Whose stack a lock site is (`enum ss_lock_role`).", roles, COUNT(roles));
    rust_enum("SampleKind", "The kind of a thread-state sample (`enum ss_sample_kind`).", sample_kinds,
              COUNT(sample_kinds));

    static const struct entry process_flags[] = {
#define SS_X(id, bit) {#id, bit, ""},
        SS_PROCESS_FLAGS(SS_X)
#undef SS_X
    };
    static const struct entry thread_flags[] = {
#define SS_X(id, bit) {#id, bit, ""},
        SS_THREAD_FLAGS(SS_X)
#undef SS_X
    };
    static const struct entry sampling_flags[] = {
#define SS_X(id, bit) {#id, bit, ""},
        SS_SAMPLING_FLAGS(SS_X)
#undef SS_X
    };
    static const struct entry heap_flags[] = {
#define SS_X(id, bit) {#id, bit, ""},
        SS_HEAP_FLAGS(SS_X)
#undef SS_X
    };
    flags("PROCESS", "Process flags", process_flags, COUNT(process_flags));
    flags("THREAD", "Thread flags", thread_flags, COUNT(thread_flags));
    flags("SAMPLING", "Sampling flags", sampling_flags, COUNT(sampling_flags));
    flags("HEAP", "Heap snapshot flags", heap_flags, COUNT(heap_flags));
    static const struct entry python_flags[] = {
#define SS_X(id, bit) {#id, bit, ""},
        SS_PYTHON_FLAGS(SS_X)
#undef SS_X
    };
    flags("PYTHON", "Python flags", python_flags, COUNT(python_flags));
}

static void options(void) {
#define SS_OPTION(id, env, kind, def, lo, hi, doc)                                                           \
    printf("/// %s\npub const %s: RunOption = RunOption {\n    env: \"%s\",\n    kind: OptionKind::", doc, #id, env); \
    camel(#kind);                                                                                            \
    printf(",\n    default: %llu,\n    min: %llu,\n    max: %llu,\n};\n",                                    \
           (unsigned long long)(def), (unsigned long long)(lo), (unsigned long long)(hi));
#include "ss_options.def"
#undef SS_OPTION
    printf("/// Every option, in the table's order.\npub const ALL: &[RunOption] = &[");
#define SS_OPTION(id, env, kind, def, lo, hi, doc) printf("%s, ", #id);
#include "ss_options.def"
#undef SS_OPTION
    printf("];\n");
}

int main(int argc, char **argv) {
    printf("// Generated by build.rs (build/generate_rust.c); do not edit.\n\n");
    if (argc == 2 && strcmp(argv[1], "format") == 0) format();
    else if (argc == 2 && strcmp(argv[1], "options") == 0) options();
    else {
        fprintf(stderr, "usage: generate_rust format|options\n");
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
