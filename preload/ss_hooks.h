/* The hooks' inline helpers: the common case of a call of theirs into a module of their own
 * layer or the services below, kept inline so that a hook's fast part makes no call (ss_internal.h
 * declares the functions; this header is the hooks' layer, included by the hooks and the layers
 * above them: tests/preload_layers.rs). */
#ifndef SS_HOOKS_H
#define SS_HOOKS_H

#include "ss_internal.h"

/* An allocation stack (ss_stack_sample, stacks.c) with the common case inline: a timed call
 * whose count-based stack countdown does not fire (K-1 of every K timed calls) only decrements it. */
static inline uint32_t ss_stack_sample_if(struct ss_thread *t, enum ss_fn fn, size_t bytes, int timed,
                                          int byte_fired) {
    if (SS_LIKELY(!byte_fired) && SS_LIKELY(t->stacks.countdown > 1)) {
        if (timed) t->stacks.countdown--;
        return 0;
    }
    return (timed | byte_fired) ? ss_stack_sample(t, fn, bytes, timed, byte_fired) : 0;
}

/* What the thread left to record at a release that will not come (its end, exit, exec) (locks.c). */
static inline void ss_locks_flush_pending(struct ss_thread *t) {
    if (t && (t->locks.pending_cond != 0 || t->locks.pending_lock != 0)) ss_locks_record_pending(t);
}

/* Locks a runtime reports (locks.c): the object's slot, the last one used first, and an
 * acquisition the hook's own step took. */
static inline struct ss_lock_stats *ss_runtime_slot_cached(struct ss_thread *t, const void *object, uint32_t kind) {
    if (SS_LIKELY(t->locks.last[kind].address == (uintptr_t)object)) return t->locks.last[kind].slot;
    return ss_runtime_slot(t, object, kind);
}
static inline void ss_runtime_took(struct ss_thread *t, const void *object, struct ss_lock_stats *l) {
    SS_INC(l->acquisitions, 1);
    if (SS_UNLIKELY(ss_dec_is_zero(&t->locks.countdown))) ss_runtime_hold(t, object, l, 0);
}

#endif
