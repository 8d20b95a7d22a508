/* stallscope.h: mark phases and take heap snapshots from inside a program.
 *
 * Header-only, for C and C++. Without stallscope these calls do nothing: the functions they
 * forward to are weak references that the dynamic linker binds only when the stallscope
 * interposer is loaded (`stallscope run`), so there is no link dependency and no cost beyond a
 * test of a null pointer.
 *
 *   stallscope_phase_begin("parse");      // phases nest, and are per thread
 *   ...
 *   stallscope_phase_end();
 *   stallscope_heap_snapshot("after load");
 *
 *   { stallscope::Phase phase("insert"); ... }   // C++: ends at the end of the scope
 */
#ifndef STALLSCOPE_H
#define STALLSCOPE_H

#ifdef __cplusplus
extern "C" {
#endif

extern void stallscope_impl_phase_begin(const char *name) __attribute__((weak));
extern void stallscope_impl_phase_end(void) __attribute__((weak));
extern void stallscope_impl_heap_snapshot(const char *label) __attribute__((weak));

/* Begins a phase named `name` (up to 63 bytes are kept) on the calling thread. */
static inline void stallscope_phase_begin(const char *name) {
    if (stallscope_impl_phase_begin) stallscope_impl_phase_begin(name);
}

/* Ends the calling thread's innermost open phase. */
static inline void stallscope_phase_end(void) {
    if (stallscope_impl_phase_end) stallscope_impl_phase_end();
}

/* Records the allocator's heap state now (glibc: mallinfo2 and malloc_info), labelled `label`. */
static inline void stallscope_heap_snapshot(const char *label) {
    if (stallscope_impl_heap_snapshot) stallscope_impl_heap_snapshot(label);
}

#ifdef __cplusplus
}

namespace stallscope {
/* A phase for the lifetime of a scope. */
class Phase {
public:
    explicit Phase(const char *name) { stallscope_phase_begin(name); }
    ~Phase() { stallscope_phase_end(); }
    Phase(const Phase &) = delete;
    Phase &operator=(const Phase &) = delete;
};
} // namespace stallscope
#endif

#endif
