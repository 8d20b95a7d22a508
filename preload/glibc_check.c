/* The glibc internals the allocator hooks read, checked once at start.
 *
 * With glibc's allocator the hooks read a chunk's size word (the word before the block: the
 * chunk's size, a multiple of 16, with flags in bits 0-2) to time large frees and frees that
 * may consolidate, and follow a non-main arena's chunk to its heap's heap_info (at the chunk's
 * address rounded down to 64 MiB) to see cross-thread frees. Both are glibc's internals, the same
 * from 2.26 to 2.43 (benches/glibc_versions.sh), but not promised. So at start three blocks are
 * allocated and their size words compared with what glibc's request2size gives; if one differs,
 * every allocator call is treated as another allocator's (guarded: no size word is read, large
 * calls always timed) and the profile says so (SS_PROCESS_HEAP_UNCHECKED). Heaps of huge pages
 * (GLIBC_TUNABLES glibc.malloc.hugetlb=SIZE) may be larger than 64 MiB, so their heap_info is
 * not where the hooks would look: cross-thread frees are then not measured
 * (SS_PROCESS_ARENAS_UNREAD). Lock words are checked by lock_steps.c. */
#include "ss_internal.h"

#include <stdlib.h>
#include <string.h>

int ss_heap_unchecked;
int ss_arena_reads_off;

/* glibc's request2size on x86-64: the request plus the size word, rounded up to 16, at least 32. */
static size_t ss_chunk_size_for(size_t request) {
    size_t size = (request + sizeof(size_t) + 15u) & ~(size_t)15u;
    return size < 32u ? 32u : size;
}

/* Whether the block `p` of `request` bytes has the size word glibc's allocator gives it: the
 * chunk size, or, when it was mapped on its own (a lowered M_MMAP_THRESHOLD), whole pages. */
static int ss_chunk_reads_as(const void *p, size_t request) {
    if (!p || ((uintptr_t)p & 15u) != 0) return 0;
    size_t word = ss_chunk_header(p);
    size_t size = word & ~(size_t)SS_CHUNK_FLAG_BITS;
    if (word & SS_CHUNK_MMAPPED) return size % 4096u == 0 && size >= request + 2 * sizeof(size_t);
    return size == ss_chunk_size_for(request);
}

/* Whether GLIBC_TUNABLES asks for heaps of huge pages of a given size ("glibc.malloc.hugetlb=N"
 * with N other than 0 or 1, which keep the default heap size). */
static int ss_huge_page_heaps(void) {
    const char *t = getenv("GLIBC_TUNABLES");
    const char *key = "glibc.malloc.hugetlb=";
    for (const char *at = t ? strstr(t, key) : NULL; at; at = strstr(at + 1, key)) {
        const char *v = at + strlen(key);
        if (!((v[0] == '0' || v[0] == '1') && (v[1] == 0 || v[1] == ':'))) return 1;
    }
    return 0;
}

/* Called once at start, with glibc's allocator (not guarded), before any thread record exists:
 * 1 if the size words read as expected. */
int ss_glibc_heap_check(void) {
    ss_arena_reads_off = ss_huge_page_heaps();
    static const size_t requests[] = {24, 1000, 40000};
    void *blocks[sizeof requests / sizeof *requests];
    int ok = 1;
    for (size_t i = 0; i < sizeof requests / sizeof *requests; i++) {
        blocks[i] = ss_real.malloc(requests[i]);
        ok = ok && ss_chunk_reads_as(blocks[i], requests[i]);
    }
    for (size_t i = sizeof requests / sizeof *requests; i-- > 0;) ss_real.free(blocks[i]);
    ss_heap_unchecked = !ok;
    return ok;
}
