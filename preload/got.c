/* The PLT slots of the loaded objects, for a paused process (attach.c).
 *
 * A paused process records nothing, but its hooked calls would still pass through the hooks
 * (their fast parts find no record and go to the slow parts, which forward): measured, a
 * malloc/free/lock/unlock loop ran at half its unprofiled speed. So while no window is open, each
 * object's PLT slots that the dynamic linker bound to a hot hook (allocator, locks, condition
 * variables, semaphores, join) are pointed at the C library's function the hook forwards to, and
 * the calls go straight there: the unprofiled speed. A window points them back at the hooks.
 * (Not under run --push, ss_config.continuous: its windows follow one another, and a process
 * forked between two of them reaches the hooks and listens for its own.)
 * The flusher looks again every second while paused: a slot the linker binds lazily, or an object
 * loaded later, goes to the hooks first.
 *
 * Only slots that hold exactly the hook's address (or, when pointed back, exactly the function's)
 * are changed, and slots not bound yet (lazy binding), which are bound to the function as the
 * linker would have bound them without the interposer (or to the hook, as it would have with
 * the interposer preloaded); PLT slots only (R_X86_64_JUMP_SLOT), not GLOB_DAT (a function's address taken by
 * the program keeps its value), but in a process a ptrace attach loaded us into, where the hooks
 * are bound nowhere and calls through the GOT would otherwise never reach them; never the dynamic
 * linker's, the vDSO's or our own. Slots under
 * RELRO (read-only after start) are made writable for the store and read-only again. Everything
 * runs inside dl_iterate_phdr's callback, which holds the loader's lock: no object is unloaded
 * meanwhile. The flusher thread only, outside any hook. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

/* The hot hooks first; then, from SS_GOT_FIRST_KEEP, the hooks a process attach loaded us into
 * keeps once they are in place (the sampling signal's disposition, threads, credentials, the end
 * of the process, unloading, a seccomp filter), never pointed back at the C library. */
static const struct {
    const char *name, *version; /* the version the hook forwards to (NULL: the default) */
} ss_got_names[] = {
    {"malloc", NULL},
    {"calloc", NULL},
    {"realloc", NULL},
    {"reallocarray", NULL},
    {"free", NULL},
    {"posix_memalign", NULL},
    {"aligned_alloc", NULL},
    {"memalign", NULL},
    {"valloc", NULL},
    {"pvalloc", NULL},
    {"malloc_usable_size", NULL},
    {"pthread_mutex_lock", NULL},
    {"pthread_mutex_trylock", NULL},
    {"pthread_mutex_timedlock", NULL},
    {"pthread_mutex_clocklock", NULL},
    {"pthread_mutex_unlock", NULL},
    {"pthread_rwlock_rdlock", NULL},
    {"pthread_rwlock_tryrdlock", NULL},
    {"pthread_rwlock_timedrdlock", NULL},
    {"pthread_rwlock_clockrdlock", NULL},
    {"pthread_rwlock_wrlock", NULL},
    {"pthread_rwlock_trywrlock", NULL},
    {"pthread_rwlock_timedwrlock", NULL},
    {"pthread_rwlock_clockwrlock", NULL},
    {"pthread_rwlock_unlock", NULL},
    {"pthread_spin_lock", NULL},
    {"pthread_spin_trylock", NULL},
    {"pthread_spin_unlock", NULL},
    {"pthread_cond_wait", "GLIBC_2.3.2"},
    {"pthread_cond_timedwait", "GLIBC_2.3.2"},
    {"pthread_cond_clockwait", NULL},
    {"pthread_cond_signal", "GLIBC_2.3.2"},
    {"pthread_cond_broadcast", "GLIBC_2.3.2"},
    {"sem_post", NULL},
    {"sem_wait", NULL},
    {"sem_timedwait", NULL},
    {"pthread_join", NULL},
#define SS_GOT_FIRST_KEEP 37u
    {"sigaction", NULL},
    {"signal", NULL},
    {"pthread_create", NULL},
    {"dlclose", NULL},
    {"exit", NULL},
    {"_exit", NULL},
    {"_Exit", NULL},
    {"setuid", NULL},
    {"setgid", NULL},
    {"seteuid", NULL},
    {"setegid", NULL},
    {"setreuid", NULL},
    {"setregid", NULL},
    {"setresuid", NULL},
    {"setresgid", NULL},
    {"setgroups", NULL},
    {"initgroups", NULL},
    {"prctl", NULL}, /* a seccomp filter's installation (sandbox.c) */
    {"syscall", NULL},
};
_Static_assert(SS_GOT_FIRST_KEEP == 37u, "the hot hooks come first");
#define SS_GOT_NAMES (sizeof ss_got_names / sizeof ss_got_names[0])

static uintptr_t ss_got_hook[SS_GOT_NAMES], ss_got_real[SS_GOT_NAMES];
static uintptr_t ss_own_base;
static int ss_got_ready;

/* The hooks' and the C library's addresses, once (dlopen and dlsym: never from a hook). */
int ss_got_init(void) {
    if (ss_got_ready) return ss_got_ready > 0;
    ss_got_ready = -1;
    Dl_info info;
    if (!dladdr((void *)ss_got_init, &info) || !info.dli_fname) return 0;
    void *self = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!self) return 0;
    ss_own_base = (uintptr_t)info.dli_fbase;
    for (size_t i = 0; i < SS_GOT_NAMES; i++) {
        void *hook = dlsym(self, ss_got_names[i].name);
        /* What the hook forwards to (base.c), the value a slot bound without the hooks holds. */
        void *real = ss_real_sym(ss_got_names[i].name, ss_got_names[i].version);
        /* Only a hook of ours (the loader's name of our object: the same string), and a function
         * elsewhere. */
        if (hook && real && hook != real && ss_object_path(hook) == info.dli_fname) {
            ss_got_hook[i] = (uintptr_t)hook;
            ss_got_real[i] = (uintptr_t)real;
        }
    }
    dlclose(self); /* our own reference from RTLD_NOLOAD; the library stays (nodelete) */
    ss_got_ready = 1;
    return 1;
}

static void ss_got_store(uintptr_t slot, uintptr_t value, uintptr_t relro_lo, uintptr_t relro_hi) {
    if (slot >= relro_lo && slot + sizeof(uintptr_t) <= relro_hi) {
        uintptr_t page = slot & ~(uintptr_t)4095;
        if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0) return;
        __atomic_store_n((uintptr_t *)slot, value, __ATOMIC_RELEASE);
        mprotect((void *)page, 4096, PROT_READ);
        return;
    }
    __atomic_store_n((uintptr_t *)slot, value, __ATOMIC_RELEASE);
}

/* One object's slots, as ss_got_module found them. */
struct ss_got_object {
    uintptr_t base, symtab, strtab;
    size_t strsz;
    uintptr_t relro_lo, relro_hi, lo, hi; /* its RELRO pages, and its segments' extent */
};

/* Points the slots of one relocation table (`count` entries of `type`) that name a hook of
 * `mode`'s and hold what they would hold in the other mode. */
static void ss_got_table(const struct ss_got_object *o, const ElfW(Rela) *rel, size_t count, unsigned type,
                         int mode) {
    int to_hooks = mode != SS_GOT_LIBC;
    for (size_t k = 0; k < count; k++) {
        if (ELF64_R_TYPE(rel[k].r_info) != type) continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)o->symtab + ELF64_R_SYM(rel[k].r_info);
        if (sym->st_name >= o->strsz) continue;
        const char *sname = (const char *)o->strtab + sym->st_name;
        if (sname[0] != 'm' && sname[0] != 'c' && sname[0] != 'r' && sname[0] != 'f' && sname[0] != 'p' &&
            sname[0] != 'a' && sname[0] != 'v' && sname[0] != 's' && sname[0] != 'd' && sname[0] != 'e' &&
            sname[0] != '_' && sname[0] != 'i')
            continue;
        size_t first = mode == SS_GOT_KEEP ? SS_GOT_FIRST_KEEP : 0;
        size_t last = mode == SS_GOT_LIBC ? SS_GOT_FIRST_KEEP : SS_GOT_NAMES;
        for (size_t i = first; i < last; i++) {
            if (!ss_got_hook[i] || strcmp(sname, ss_got_names[i].name) != 0) continue;
            uintptr_t slot = o->base + rel[k].r_offset;
            uintptr_t cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
            uintptr_t from = to_hooks ? ss_got_real[i] : ss_got_hook[i];
            uintptr_t to = to_hooks ? ss_got_hook[i] : ss_got_real[i];
            /* A PLT slot not bound yet (lazy binding: it holds its own PLT entry) is bound here to
             * what the linker would have bound it to without the hooks. */
            int unbound = type == R_X86_64_JUMP_SLOT && cur >= o->lo && cur < o->hi;
            if (cur == from || unbound) ss_got_store(slot, to, o->relro_lo, o->relro_hi);
            break;
        }
    }
}

static int ss_got_module(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    int mode = *(int *)arg;
    struct ss_got_object o = {.base = info->dlpi_addr, .lo = UINTPTR_MAX};
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (o.base == ss_own_base || strstr(name, "ld-linux") || strstr(name, "linux-vdso") || strstr(name, "/ld-"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            if (o.base + ph->p_vaddr < o.lo) o.lo = o.base + ph->p_vaddr;
            if (o.base + ph->p_vaddr + ph->p_memsz > o.hi) o.hi = o.base + ph->p_vaddr + ph->p_memsz;
        }
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(o.base + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            /* As the dynamic linker protects it: whole pages only, the start and the end rounded
             * down (a last page shared with writable data stays writable, and so must stay). */
            o.relro_lo = (o.base + ph->p_vaddr) & ~(uintptr_t)4095;
            o.relro_hi = (o.base + ph->p_vaddr + ph->p_memsz) & ~(uintptr_t)4095;
        }
    }
    if (!dyn) return 0;
    uintptr_t jmprel = 0, rela = 0;
    size_t pltrelsz = 0, relasz = 0;
    long pltrel = 0;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: jmprel = ss_dyn_ptr(o.base, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
        case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
        case DT_RELA: rela = ss_dyn_ptr(o.base, d->d_un.d_ptr); break;
        case DT_RELASZ: relasz = d->d_un.d_val; break;
        case DT_SYMTAB: o.symtab = ss_dyn_ptr(o.base, d->d_un.d_ptr); break;
        case DT_STRTAB: o.strtab = ss_dyn_ptr(o.base, d->d_un.d_ptr); break;
        case DT_STRSZ: o.strsz = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!o.symtab || !o.strtab) return 0;
    if (jmprel && pltrel == DT_RELA)
        ss_got_table(&o, (const ElfW(Rela) *)jmprel, pltrelsz / sizeof(ElfW(Rela)), R_X86_64_JUMP_SLOT, mode);
    /* Loaded by a ptrace attach, the hooks are bound nowhere: calls made through the GOT (code
     * built with -fno-plt, which is every Rust program's, or linked with -z now where the
     * function's address is taken too: redis-server's malloc) reach them only through their
     * GLOB_DAT slots. Preloaded, the linker bound those to the hooks at start, and they stay. */
    if (ss_injected && rela)
        ss_got_table(&o, (const ElfW(Rela) *)rela, relasz / sizeof(ElfW(Rela)), R_X86_64_GLOB_DAT, mode);
    return 0;
}

/* Points the slots at the hooks or at the C library (enum in ss_internal.h). */
void ss_got_point(int mode) {
    if (!ss_got_init()) return;
    dl_iterate_phdr(ss_got_module, &mode);
}
