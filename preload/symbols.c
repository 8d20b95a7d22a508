/* A function of another object by name, found without the dynamic loader's lock.
 *
 * dlsym (and dladdr, and dlopen with RTLD_NOLOAD) take the lock that dlopen holds while it runs
 * the constructors of the objects it loaded. A hook that resolved its runtime's function with
 * dlsym at its first call therefore waited forever in a thread that such a constructor waits for:
 * a library whose constructor runs an OpenMP parallel region, its team members calling their
 * first `omp critical` while the constructor's thread waits for them at the region's end. The
 * program alone runs on (a lazily bound call does not take that lock). dl_iterate_phdr takes only
 * the lock that guards the list of loaded objects, which dlopen holds a moment while adding to it;
 * the objects' own symbol tables are then read as the loader reads them (GNU or SysV hash, the
 * default version of a versioned symbol). An indirect function (its resolver picks the code) is
 * left to dlsym, as is a name no object defines; neither happens for the OpenMP runtimes' entry
 * points.
 *
 * ss_runtime_symbol answers for one caller, as the dynamic linker binds that caller's reference:
 * the global scope first (the objects loaded at start, after this library), then the runtime the
 * caller's other OpenMP imports were bound to, then the caller's own scope (the object and its
 * dependencies, breadth first). Two copies of a runtime, each loaded
 * with RTLD_LOCAL by its own plugin (Python wheels bundle libgomp under names of their own), are
 * then each called by their own plugin: sent to the other copy, a region ran in one copy's team
 * while the plugin's own omp_get_thread_num asked the other, and every thread computed the whole
 * loop. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <string.h>

uintptr_t ss_dyn_ptr(uintptr_t base, ElfW(Addr) value) {
    /* The dynamic linker relocates these entries in place for most objects, not for all (the
     * vDSO's is read-only): an address below the load base is still file-relative. */
    return value < base ? base + value : value;
}

struct ss_symbol_query {
    const char *name;
    const char *const *runtimes; /* pass 2: objects of these file names, wherever they are */
    uintptr_t self;              /* an address in this library */
    int pass;                    /* 1: the objects after this library; 2: the runtimes' */
    int after_self;
    int index, limit; /* pass 1: only the first `limit` objects of the list */
    void *found;
    int ask_dlsym; /* found, but an indirect function */
};

static uint32_t ss_gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t ss_sysv_hash(const char *s) {
    uint32_t h = 0;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        uint32_t g = h & 0xf0000000u;
        if (g) h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

struct ss_dynsym {
    uintptr_t base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    size_t strsz;
    const uint16_t *versym;
};

/* 1: symbol i is a definition of `name` that dlsym would return; -1: one of an indirect function. */
static int ss_symbol_matches(const struct ss_dynsym *d, uint32_t i, const char *name) {
    const ElfW(Sym) *s = &d->symtab[i];
    if (s->st_name >= d->strsz || strcmp(d->strtab + s->st_name, name) != 0) return 0;
    if (s->st_shndx == SHN_UNDEF) return 0;
    int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return 0;
    if (type == STT_TLS) return 0;
    if (d->versym && (d->versym[i] & 0x8000)) return 0; /* a hidden (non-default) version */
    return type == STT_GNU_IFUNC ? -1 : 1;
}

/* The index of `name`'s definition in one object's symbol table, 0 if none (-index: an indirect
 * function). */
static int64_t ss_lookup_gnu(const struct ss_dynsym *d, const uint32_t *table, const char *name) {
    uint32_t nbuckets = table[0], symoffset = table[1], bloom_size = table[2], bloom_shift = table[3];
    if (!nbuckets || !bloom_size) return 0;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(const void *)&table[4];
    const uint32_t *buckets = (const uint32_t *)(const void *)&bloom[bloom_size];
    const uint32_t *chain = &buckets[nbuckets];
    uint32_t h = ss_gnu_hash(name);
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(h / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % bits));
    if ((word & mask) != mask) return 0;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return 0;
    for (;; i++) {
        uint32_t c = chain[i - symoffset];
        if ((c | 1) == (h | 1)) {
            int m = ss_symbol_matches(d, i, name);
            if (m) return m > 0 ? (int64_t)i : -(int64_t)i;
        }
        if (c & 1) return 0;
    }
}

static int64_t ss_lookup_sysv(const struct ss_dynsym *d, const uint32_t *table, const char *name) {
    uint32_t nbucket = table[0], nchain = table[1];
    if (!nbucket) return 0;
    const uint32_t *bucket = &table[2], *chain = &bucket[nbucket];
    uint32_t steps = 0;
    for (uint32_t i = bucket[ss_sysv_hash(name) % nbucket]; i && i < nchain && steps < nchain; i = chain[i], steps++) {
        int m = ss_symbol_matches(d, i, name);
        if (m) return m > 0 ? (int64_t)i : -(int64_t)i;
    }
    return 0;
}

static int ss_contains(const struct dl_phdr_info *info, uintptr_t addr) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz) return 1;
    }
    return 0;
}

void ss_object_extent(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi) {
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < *lo) *lo = a;
        if (a + ph->p_memsz > *hi) *hi = a + ph->p_memsz;
    }
}

static int ss_is_runtime(const char *path, const char *const *runtimes) {
    if (!path || !runtimes) return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (; *runtimes; runtimes++)
        if (strcmp(base, *runtimes) == 0) return 1;
    return 0;
}

/* One object's dynamic section (NULL: none). */
static const ElfW(Dyn) *ss_dynamic_of(const struct dl_phdr_info *info) {
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

const char *ss_soname_of(const struct dl_phdr_info *info) {
    const char *strtab = NULL;
    size_t soname = (size_t)-1, strsz = 0;
    for (const ElfW(Dyn) *e = ss_dynamic_of(info); e && e->d_tag != DT_NULL; e++) {
        if (e->d_tag == DT_STRTAB) strtab = (const char *)ss_dyn_ptr(info->dlpi_addr, e->d_un.d_ptr);
        if (e->d_tag == DT_STRSZ) strsz = e->d_un.d_val;
        if (e->d_tag == DT_SONAME) soname = e->d_un.d_val;
    }
    return strtab && soname < strsz ? strtab + soname : NULL;
}

/* `name` defined in this object: 1 (found, or an indirect function: ask_dlsym), else 0. */
static int ss_search_object(struct dl_phdr_info *info, const char *name, void **found, int *ask_dlsym) {
    const ElfW(Dyn) *dyn = ss_dynamic_of(info);
    if (!dyn) return 0;
    uintptr_t base = info->dlpi_addr;
    struct ss_dynsym d = {base, NULL, NULL, 0, NULL};
    const uint32_t *gnu = NULL, *sysv = NULL;
    for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_SYMTAB: d.symtab = (const ElfW(Sym) *)ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_STRTAB: d.strtab = (const char *)ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_STRSZ: d.strsz = e->d_un.d_val; break;
        case DT_VERSYM: d.versym = (const uint16_t *)ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu = (const uint32_t *)ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_HASH: sysv = (const uint32_t *)ss_dyn_ptr(base, e->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!d.symtab || !d.strtab || (!gnu && !sysv)) return 0;
    int64_t i = gnu ? ss_lookup_gnu(&d, gnu, name) : ss_lookup_sysv(&d, sysv, name);
    if (!i) return 0;
    if (i < 0) *ask_dlsym = 1;
    else *found = (void *)(base + d.symtab[i].st_value);
    return 1;
}

static int ss_symbol_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_symbol_query *q = arg;
    if (q->index++ >= q->limit) return 1;
    if (ss_contains(info, q->self)) {
        q->after_self = 1;
        return 0;
    }
    if (q->pass == 1 ? !q->after_self : !ss_is_runtime(info->dlpi_name, q->runtimes)) return 0;
    return ss_search_object(info, q->name, &q->found, &q->ask_dlsym);
}

/* The objects loaded at start, in the list's order (the global scope, which the dynamic linker
 * searches first for every object). Objects opened later with RTLD_GLOBAL are not told apart
 * from those opened with RTLD_LOCAL here: the caller's bound imports tell (ss_bound_symbol). */
static int ss_startup_objects = -1;

static int ss_count_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)info;
    (void)size;
    ++*(int *)arg;
    return 0;
}

uintptr_t ss_library_lo, ss_library_span;

static int ss_self_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    if (!ss_contains(info, (uintptr_t)ss_next_symbol)) return 0;
    uintptr_t lo, hi;
    ss_object_extent(info, &lo, &hi);
    if (hi > lo) {
        ss_library_lo = lo;
        ss_library_span = hi - lo;
    }
    return 1;
}

void ss_symbols_init(void) {
    dl_iterate_phdr(ss_self_cb, NULL);
    int n = 0;
    dl_iterate_phdr(ss_count_cb, &n);
    __atomic_store_n(&ss_startup_objects, n, __ATOMIC_RELEASE);
}

/* The caller's scope, level by level: the caller, then the objects its level's DT_NEEDED entries
 * name (by file name or DT_SONAME), each once; every read inside dl_iterate_phdr's callback. */
#define SS_SCOPE_NAMES 48u
#define SS_SCOPE_NAME_MAX 96u
#define SS_SCOPE_OBJECTS 96u
struct ss_scope_query {
    const char *name;
    uintptr_t caller;
    int level;
    char want[SS_SCOPE_NAMES][SS_SCOPE_NAME_MAX]; /* this level's names */
    unsigned nwant;
    char next[SS_SCOPE_NAMES][SS_SCOPE_NAME_MAX]; /* the next level's */
    unsigned nnext;
    uintptr_t visited[SS_SCOPE_OBJECTS]; /* by load address */
    unsigned nvisited;
    uintptr_t lo, hi; /* the caller's extent */
    void *found;
    int ask_dlsym, done;
};

static const char *ss_base_name(const char *path) {
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "";
}

static int ss_scope_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_scope_query *q = arg;
    for (unsigned i = 0; i < q->nvisited; i++)
        if (q->visited[i] == info->dlpi_addr) return 0;
    const ElfW(Dyn) *dyn = ss_dynamic_of(info);
    const char *strtab = NULL, *soname = ss_soname_of(info);
    size_t strsz = 0;
    for (const ElfW(Dyn) *e = dyn; e && e->d_tag != DT_NULL; e++) {
        if (e->d_tag == DT_STRTAB) strtab = (const char *)ss_dyn_ptr(info->dlpi_addr, e->d_un.d_ptr);
        if (e->d_tag == DT_STRSZ) strsz = e->d_un.d_val;
    }
    int member = 0;
    if (q->level == 0) {
        member = ss_contains(info, q->caller);
        if (member) ss_object_extent(info, &q->lo, &q->hi);
    } else {
        const char *base = ss_base_name(info->dlpi_name);
        for (unsigned i = 0; !member && i < q->nwant; i++)
            member = strcmp(q->want[i], base) == 0 || (soname && strcmp(q->want[i], soname) == 0);
    }
    if (!member || q->nvisited >= SS_SCOPE_OBJECTS) return 0;
    q->visited[q->nvisited++] = info->dlpi_addr;
    /* never this library's own hook (a call whose return address is in it: a tail call from a
     * body run through the OpenMP trampoline) */
    if (!ss_contains(info, (uintptr_t)ss_next_symbol) && ss_search_object(info, q->name, &q->found, &q->ask_dlsym)) {
        q->done = 1;
        return 1;
    }
    for (const ElfW(Dyn) *e = dyn; e && strtab && e->d_tag != DT_NULL; e++) {
        if (e->d_tag != DT_NEEDED || e->d_un.d_val >= strsz || q->nnext >= SS_SCOPE_NAMES) continue;
        const char *needed = strtab + e->d_un.d_val;
        if (strlen(needed) >= SS_SCOPE_NAME_MAX) continue;
        strcpy(q->next[q->nnext++], needed);
    }
    return 0;
}

/* `name` in the caller's own scope (NULL if none defines it); its extent in *lo, *hi. */
static void *ss_scope_symbol(const char *name, uintptr_t caller, uintptr_t *lo, uintptr_t *hi, int *ask_dlsym) {
    struct ss_scope_query *q = ss_map(sizeof *q); /* 10 KB: not on a program thread's stack; rare */
    if (!q) return NULL;
    q->name = name;
    q->caller = caller;
    for (q->level = 0; q->level < 16 && !q->done; q->level++) {
        dl_iterate_phdr(ss_scope_cb, q);
        if (q->level == 0 && !q->nvisited) break; /* the caller is in no object */
        if (!q->nnext) break;
        memcpy(q->want, q->next, sizeof q->want);
        q->nwant = q->nnext;
        q->nnext = 0;
    }
    *lo = q->lo;
    *hi = q->hi;
    *ask_dlsym = q->ask_dlsym;
    void *found = q->found;
    ss_unmap(q, sizeof *q);
    return found;
}

/* The runtime the dynamic linker bound the caller to, read from the caller's own slots: an OpenMP
 * import of the caller's that the interposer does not define (`omp_get_thread_num`,
 * `GOMP_loop_*`, ...), bound already (Python opens extensions with RTLD_NOW), holds an address in
 * the runtime the caller's calls go to. That answers where the objects opened with RTLD_GLOBAL,
 * which join the global scope, cannot be told from the list of loaded objects. */
struct ss_bound_query {
    uintptr_t caller;
    uintptr_t bound; /* an address the caller's slots hold, in another object */
    const char *name;
    void *found;
    int ask_dlsym;
};

static int ss_is_runtime_import(const char *name) {
    return strncmp(name, "omp_", 4) == 0 || strncmp(name, "GOMP_", 5) == 0 || strncmp(name, "__kmpc_", 7) == 0;
}

static int ss_bound_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_bound_query *q = arg;
    if (!ss_contains(info, q->caller)) return 0;
    const ElfW(Dyn) *dyn = ss_dynamic_of(info);
    uintptr_t base = info->dlpi_addr, jmprel = 0, rela = 0, symtab = 0, strtab = 0;
    size_t pltrelsz = 0, relasz = 0, strsz = 0;
    for (const ElfW(Dyn) *e = dyn; e && e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_JMPREL: jmprel = ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = e->d_un.d_val; break;
        case DT_RELA: rela = ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_RELASZ: relasz = e->d_un.d_val; break;
        case DT_SYMTAB: symtab = ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_STRTAB: strtab = ss_dyn_ptr(base, e->d_un.d_ptr); break;
        case DT_STRSZ: strsz = e->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab) return 1;
    const struct {
        uintptr_t at;
        size_t size;
    } tables[] = {{jmprel, pltrelsz}, {rela, relasz}};
    for (size_t t = 0; t < 2; t++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)tables[t].at;
        for (size_t k = 0; r && k < tables[t].size / sizeof *r; k++) {
            unsigned long type = ELF64_R_TYPE(r[k].r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[k].r_info);
            if (!ELF64_R_SYM(r[k].r_info) || sym->st_name >= strsz) continue;
            if (!ss_is_runtime_import((const char *)strtab + sym->st_name)) continue;
            uintptr_t v = __atomic_load_n((const uintptr_t *)(base + r[k].r_offset), __ATOMIC_RELAXED);
            /* not bound yet (its own PLT stub), or bound to a hook of ours */
            if (!v || ss_contains(info, v) || v - ss_library_lo < ss_library_span) continue;
            q->bound = v;
            return 1;
        }
    }
    return 1;
}

static int ss_bound_object_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_bound_query *q = arg;
    if (!ss_contains(info, q->bound)) return 0;
    ss_search_object(info, q->name, &q->found, &q->ask_dlsym);
    return 1;
}

/* `name` in the runtime the caller's bound slots lead to (NULL: none known). */
static void *ss_bound_symbol(const char *name, uintptr_t caller, int *ask_dlsym) {
    struct ss_bound_query q = {caller, 0, name, NULL, 0};
    dl_iterate_phdr(ss_bound_cb, &q);
    if (!q.bound) return NULL;
    dl_iterate_phdr(ss_bound_object_cb, &q);
    *ask_dlsym = q.ask_dlsym;
    return q.found;
}

void *ss_next_symbol(const char *name, const char *const *runtimes) {
    struct ss_symbol_query q = {name, runtimes, (uintptr_t)ss_next_symbol, 1, 0, 0, INT_MAX, NULL, 0};
    dl_iterate_phdr(ss_symbol_cb, &q);
    if (!q.found && !q.ask_dlsym && runtimes) {
        q.pass = 2;
        q.index = 0;
        dl_iterate_phdr(ss_symbol_cb, &q);
    }
    return q.found ? q.found : dlsym(RTLD_NEXT, name);
}

void *ss_runtime_symbol(const char *name, const char *const *runtimes, uintptr_t caller, uintptr_t *lo,
                        uintptr_t *hi) {
    *lo = 0;
    *hi = UINTPTR_MAX;
    int startup = __atomic_load_n(&ss_startup_objects, __ATOMIC_ACQUIRE);
    struct ss_symbol_query q = {name, runtimes, (uintptr_t)ss_next_symbol, 1, 0, 0, startup < 0 ? INT_MAX : startup,
                                NULL, 0};
    dl_iterate_phdr(ss_symbol_cb, &q); /* the global scope */
    if (q.found || q.ask_dlsym || startup < 0) return q.found ? q.found : ss_next_symbol(name, runtimes);
    int ask = 0;
    uintptr_t clo = 0, chi = 0;
    void *f = ss_scope_symbol(name, caller, &clo, &chi, &ask);
    if (chi) { /* the answer holds for the caller's object alone */
        *lo = clo;
        *hi = chi;
    }
    int bound_ask = 0;
    void *bound = chi ? ss_bound_symbol(name, caller, &bound_ask) : NULL; /* the linker's own answer first */
    if (bound || bound_ask) return bound ? bound : dlsym(RTLD_NEXT, name);
    if (f) return f;
    return ask ? dlsym(RTLD_NEXT, name) : ss_next_symbol(name, runtimes);
}
