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
 * points. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
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

static int ss_is_runtime(const char *path, const char *const *runtimes) {
    if (!path || !runtimes) return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (; *runtimes; runtimes++)
        if (strcmp(base, *runtimes) == 0) return 1;
    return 0;
}

static int ss_symbol_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_symbol_query *q = arg;
    if (ss_contains(info, q->self)) {
        q->after_self = 1;
        return 0;
    }
    if (q->pass == 1 ? !q->after_self : !ss_is_runtime(info->dlpi_name, q->runtimes)) return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
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
    int64_t i = gnu ? ss_lookup_gnu(&d, gnu, q->name) : ss_lookup_sysv(&d, sysv, q->name);
    if (!i) return 0;
    if (i < 0) {
        q->ask_dlsym = 1;
        return 1;
    }
    q->found = (void *)(base + d.symtab[i].st_value);
    return 1;
}

void *ss_next_symbol(const char *name, const char *const *runtimes) {
    struct ss_symbol_query q = {name, runtimes, (uintptr_t)ss_next_symbol, 1, 0, NULL, 0};
    dl_iterate_phdr(ss_symbol_cb, &q);
    if (!q.found && !q.ask_dlsym && runtimes) {
        q.pass = 2;
        dl_iterate_phdr(ss_symbol_cb, &q);
    }
    return q.found ? q.found : dlsym(RTLD_NEXT, name);
}
