/* A fast unwinder for the stacks of sampled allocation calls, lock waits and CPU samples (x86-64).
 *
 * libgcc's _Unwind_Backtrace finds each frame's FDE, parses its CIE, runs its call-frame
 * instructions and updates a context of every register: about 2,000 instructions a frame, 4 us
 * for a stack of ten frames, which at the default sampling rates would be half of what the
 * interposer costs an allocation-bound program (docs/STACKS.md). A frame's rule for the canonical frame
 * address (CFA) and for where its return address and rbp are saved depends on nothing but the pc,
 * so this unwinder keeps the rule of every pc it has seen in a table shared by all threads, and
 * unwinds a frame it knows in a few loads.
 *
 * Rules are found like libgcc finds them: _dl_find_object gives the object's .eh_frame_hdr, whose
 * sorted table gives the FDE; the CIE's and the FDE's instructions are run up to the pc. Only what
 * compilers emit for ordinary code is understood: a CFA of rsp or rbp plus an offset, the return
 * address and rbp saved at an offset from the CFA. Anything else (a signal frame, a CFA computed
 * by an expression, a realigned stack, a PLT stub) makes the caller fall back to libgcc for the
 * whole stack, as does any address that is not inside the thread's stack: every load this
 * unwinder makes is checked against the stack's bounds first. A pc without unwind information
 * ends the stack, as it does for libgcc. libgcc's unwinder is there only where the program has
 * it loaded already (every C++ and Rust program); elsewhere (a C program) the interposer maps no
 * library for it, and such a stack is kept as far as this unwinder got (docs/STACKS.md).
 *
 * The interposer's own frames (compiled with frame pointers) are walked through rbp and left out.
 * Cached rules are forgotten when an object is unloaded (ss_fast_unwind_forget). */
#include "ss_internal.h"

#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

int ss_fast_unwind_on;

#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE) /* glibc 2.35 and later */

/* Pointer encodings of .eh_frame (the LSB's DW_EH_PE_*). */
#define SS_PE_OMIT 0xff
#define SS_PE_ULEB128 0x01
#define SS_PE_UDATA2 0x02
#define SS_PE_UDATA4 0x03
#define SS_PE_UDATA8 0x04
#define SS_PE_SLEB128 0x09
#define SS_PE_SDATA2 0x0a
#define SS_PE_SDATA4 0x0b
#define SS_PE_SDATA8 0x0c
#define SS_PE_PCREL 0x10
#define SS_PE_DATAREL 0x30
#define SS_PE_INDIRECT 0x80

/* DWARF register numbers on x86-64. */
#define SS_DW_RBP 6
#define SS_DW_RSP 7
#define SS_DW_RA 16

/* A rule, packed in 64 bits (0: none known):
 *   bits 0-1   kind: 1 a frame to unwind, 2 the end of the stack, 3 not understood
 *   bit 2      the CFA is rbp + offset (else rsp + offset)
 *   bit 3      rbp is saved at CFA + rbp offset (else it keeps its value)
 *   bits 8-39  CFA offset (signed)
 *   bits 40-51 rbp offset (signed, in bytes)
 *   bits 52-63 return address offset (signed, in bytes) */
#define SS_RULE_FRAME 1u
#define SS_RULE_END 2u
#define SS_RULE_UNKNOWN 3u
#define SS_RULE_CFA_RBP 4u
#define SS_RULE_RBP_SAVED 8u

static inline uint64_t ss_rule_pack(int cfa_rbp, int64_t cfa_off, int rbp_saved, int64_t rbp_off, int64_t ra_off) {
    if (cfa_off < INT32_MIN || cfa_off > INT32_MAX || rbp_off < -2048 || rbp_off > 2047 || ra_off < -2048 ||
        ra_off > 2047)
        return SS_RULE_UNKNOWN;
    return SS_RULE_FRAME | (cfa_rbp ? SS_RULE_CFA_RBP : 0) | (rbp_saved ? SS_RULE_RBP_SAVED : 0) |
           ((uint64_t)(uint32_t)(int32_t)cfa_off << 8) | ((uint64_t)((uint64_t)rbp_off & 0xfff) << 40) |
           ((uint64_t)((uint64_t)ra_off & 0xfff) << 52);
}

static inline int64_t ss_rule_cfa_off(uint64_t r) { return (int32_t)(uint32_t)(r >> 8); }
static inline int64_t ss_rule_rbp_off(uint64_t r) { return (int64_t)(r << 12) >> 52; }
static inline int64_t ss_rule_ra_off(uint64_t r) { return (int64_t)r >> 52; }

/* ---- reading .eh_frame ---- */

struct ss_reader {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t ss_uleb(struct ss_reader *r) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (r->p >= r->end || shift > 63) {
            r->bad = 1;
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

static int64_t ss_sleb(struct ss_reader *r) {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (r->p >= r->end || shift > 63) {
            r->bad = 1;
            return 0;
        }
        b = *r->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
    return v;
}

static uint64_t ss_fixed(struct ss_reader *r, unsigned size) {
    if ((size_t)(r->end - r->p) < size) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, size); /* little-endian */
    r->p += size;
    return v;
}

/* A pointer in encoding `enc`; pc-relative ones are relative to where they are stored, data-relative
 * ones to `datarel`. Indirect pointers are not followed (only personality routines use them, and
 * they are only skipped). */
static uint64_t ss_encoded(struct ss_reader *r, uint8_t enc, uint64_t datarel) {
    if (enc == SS_PE_OMIT) return 0;
    uint64_t at = (uint64_t)(uintptr_t)r->p, v;
    switch (enc & 0x0f) {
    case 0x00: v = ss_fixed(r, 8); break; /* absptr */
    case SS_PE_ULEB128: v = ss_uleb(r); break;
    case SS_PE_UDATA2: v = ss_fixed(r, 2); break;
    case SS_PE_UDATA4: v = ss_fixed(r, 4); break;
    case SS_PE_UDATA8: v = ss_fixed(r, 8); break;
    case SS_PE_SLEB128: v = (uint64_t)ss_sleb(r); break;
    case SS_PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)ss_fixed(r, 2); break;
    case SS_PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)ss_fixed(r, 4); break;
    case SS_PE_SDATA8: v = ss_fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case SS_PE_PCREL: v += at; break;
    case SS_PE_DATAREL: v += datarel; break;
    default: r->bad = 1; return 0;
    }
    return v;
}

/* ---- running call-frame instructions ---- */

/* How a register is recovered. */
enum { SS_HOW_SAME = 0, SS_HOW_OFFSET = 1, SS_HOW_UNDEFINED = 2, SS_HOW_UNKNOWN = 3 };

struct ss_row {
    int cfa_reg; /* SS_DW_RSP or SS_DW_RBP; -1: not understood */
    int64_t cfa_off;
    int rbp_how, ra_how;
    int64_t rbp_off, ra_off;
};

struct ss_cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    int has_z; /* its FDEs have an augmentation data length before their instructions */
    const uint8_t *insns, *insns_end;
};

static void ss_set_reg(struct ss_row *row, uint64_t reg, int how, int64_t off) {
    if (reg == SS_DW_RBP) {
        row->rbp_how = how;
        row->rbp_off = off;
    } else if (reg == SS_DW_RA) {
        row->ra_how = how;
        row->ra_off = off;
    }
}

#define SS_STATE_STACK 8

/* Runs instructions [p, end) from location `loc` until the row for `target` is complete; `init`
 * is the row after the CIE's instructions (for DW_CFA_restore). Returns 0, or -1 if an
 * instruction is not understood. */
static int ss_run_cfa(const uint8_t *p, const uint8_t *end, const struct ss_cie *cie, uint64_t loc,
                      uint64_t target, struct ss_row *row, const struct ss_row *init) {
    struct ss_reader r = {p, end, 0};
    struct ss_row saved[SS_STATE_STACK];
    unsigned nsaved = 0;
    while (r.p < r.end && !r.bad) {
        uint8_t op = *r.p++;
        uint64_t reg, delta;
        switch (op >> 6) {
        case 1: /* advance_loc */
            loc += (uint64_t)(op & 0x3f) * cie->code_align;
            if (loc > target) return 0;
            continue;
        case 2: /* offset */
            ss_set_reg(row, op & 0x3f, SS_HOW_OFFSET, (int64_t)ss_uleb(&r) * cie->data_align);
            continue;
        case 3: /* restore */
            reg = op & 0x3f;
            if (reg == SS_DW_RBP) row->rbp_how = init->rbp_how, row->rbp_off = init->rbp_off;
            if (reg == SS_DW_RA) row->ra_how = init->ra_how, row->ra_off = init->ra_off;
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01:        /* set_loc */
            loc = ss_encoded(&r, cie->fde_enc, 0);
            if (loc > target) return 0;
            break;
        case 0x02: /* advance_loc1, 2, 4 */
        case 0x03:
        case 0x04:
            delta = ss_fixed(&r, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
            loc += delta * cie->code_align;
            if (loc > target) return 0;
            break;
        case 0x05: /* offset_extended */
            reg = ss_uleb(&r);
            ss_set_reg(row, reg, SS_HOW_OFFSET, (int64_t)ss_uleb(&r) * cie->data_align);
            break;
        case 0x06: /* restore_extended */
            reg = ss_uleb(&r);
            if (reg == SS_DW_RBP) row->rbp_how = init->rbp_how, row->rbp_off = init->rbp_off;
            if (reg == SS_DW_RA) row->ra_how = init->ra_how, row->ra_off = init->ra_off;
            break;
        case 0x07: /* undefined */
            ss_set_reg(row, ss_uleb(&r), SS_HOW_UNDEFINED, 0);
            break;
        case 0x08: /* same_value */
            ss_set_reg(row, ss_uleb(&r), SS_HOW_SAME, 0);
            break;
        case 0x09: /* register: saved in another register */
            reg = ss_uleb(&r);
            (void)ss_uleb(&r);
            ss_set_reg(row, reg, SS_HOW_UNKNOWN, 0);
            break;
        case 0x0a: /* remember_state */
            if (nsaved == SS_STATE_STACK) return -1;
            saved[nsaved++] = *row;
            break;
        case 0x0b: /* restore_state: the whole row, the CFA included (as libgcc does, and as
                      compilers expect around an epilogue in the middle of a function) */
            if (nsaved == 0) return -1;
            *row = saved[--nsaved];
            break;
        case 0x0c: /* def_cfa */
            row->cfa_reg = (int)ss_uleb(&r);
            row->cfa_off = (int64_t)ss_uleb(&r);
            break;
        case 0x0d: /* def_cfa_register */
            row->cfa_reg = (int)ss_uleb(&r);
            break;
        case 0x0e: /* def_cfa_offset */
            row->cfa_off = (int64_t)ss_uleb(&r);
            break;
        case 0x0f: /* def_cfa_expression */
            row->cfa_reg = -1;
            delta = ss_uleb(&r);
            if (delta > (uint64_t)(r.end - r.p)) return -1;
            r.p += delta;
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = ss_uleb(&r);
            delta = ss_uleb(&r);
            if (delta > (uint64_t)(r.end - r.p)) return -1;
            r.p += delta;
            ss_set_reg(row, reg, SS_HOW_UNKNOWN, 0);
            break;
        case 0x11: /* offset_extended_sf */
            reg = ss_uleb(&r);
            ss_set_reg(row, reg, SS_HOW_OFFSET, ss_sleb(&r) * cie->data_align);
            break;
        case 0x12: /* def_cfa_sf */
            row->cfa_reg = (int)ss_uleb(&r);
            row->cfa_off = ss_sleb(&r) * cie->data_align;
            break;
        case 0x13: /* def_cfa_offset_sf */
            row->cfa_off = ss_sleb(&r) * cie->data_align;
            break;
        case 0x14: /* val_offset, val_offset_sf: the register's value is the CFA plus an offset */
        case 0x15:
            reg = ss_uleb(&r);
            if (op == 0x14) (void)ss_uleb(&r);
            else (void)ss_sleb(&r);
            ss_set_reg(row, reg, SS_HOW_UNKNOWN, 0);
            break;
        case 0x2e: /* GNU_args_size */
            (void)ss_uleb(&r);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = ss_uleb(&r);
            ss_set_reg(row, reg, SS_HOW_OFFSET, -(int64_t)ss_uleb(&r) * cie->data_align);
            break;
        default: return -1;
        }
    }
    return r.bad ? -1 : 0;
}

/* Parses the CIE at `p`; returns 0, or -1 if it is not one this unwinder understands. */
static int ss_parse_cie(const uint8_t *p, struct ss_cie *cie) {
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu) return -1;
    struct ss_reader r = {p + 4, p + 4 + len, 0};
    if (ss_fixed(&r, 4) != 0) return -1; /* a CIE's id in .eh_frame */
    uint8_t version = (uint8_t)ss_fixed(&r, 1);
    if (version != 1 && version != 3) return -1;
    const char *aug = (const char *)r.p;
    size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
    if (aug_len == (size_t)(r.end - r.p)) return -1;
    r.p += aug_len + 1;
    cie->code_align = ss_uleb(&r);
    cie->data_align = ss_sleb(&r);
    uint64_t ra = version == 1 ? ss_fixed(&r, 1) : ss_uleb(&r);
    if (ra != SS_DW_RA) return -1;
    cie->fde_enc = 0;
    cie->has_z = aug[0] == 'z';
    if (aug[0] == 'z') {
        uint64_t n = ss_uleb(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p)) return -1;
        struct ss_reader a = {r.p, r.p + n, 0};
        for (const char *c = aug + 1; *c; c++) {
            if (*c == 'R') cie->fde_enc = (uint8_t)ss_fixed(&a, 1);
            else if (*c == 'L') (void)ss_fixed(&a, 1);
            else if (*c == 'P') {
                uint8_t enc = (uint8_t)ss_fixed(&a, 1);
                (void)ss_encoded(&a, enc & (uint8_t)~SS_PE_INDIRECT, 0); /* skipped, not followed */
            } else {
                return -1; /* 'S' (a signal frame) among others */
            }
        }
        if (a.bad) return -1;
        r.p += n;
    } else if (aug[0] != 0) {
        return -1;
    }
    if (r.bad) return -1;
    cie->insns = r.p;
    cie->insns_end = r.end;
    return 0;
}

/* The FDE for `pc` through the object's .eh_frame_hdr, or NULL (no FDE: the end of the stack).
 * *unknown is set when the table is not one this unwinder reads. */
static const uint8_t *ss_find_fde(const uint8_t *hdr, uint64_t pc, int *unknown) {
    if (hdr[0] != 1) {
        *unknown = 1;
        return NULL;
    }
    uint8_t ptr_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
    struct ss_reader r = {hdr + 4, hdr + 4 + 16, 0};
    (void)ss_encoded(&r, ptr_enc, (uint64_t)(uintptr_t)hdr);
    uint64_t count = ss_encoded(&r, count_enc, (uint64_t)(uintptr_t)hdr);
    if (r.bad || table_enc != (SS_PE_DATAREL | SS_PE_SDATA4) || count == 0 || count > (1u << 28)) {
        *unknown = r.bad || table_enc != (SS_PE_DATAREL | SS_PE_SDATA4);
        return NULL;
    }
    const uint8_t *table = r.p;
    uint64_t lo = 0, hi = count; /* the last entry whose start is <= pc */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t start;
        memcpy(&start, table + mid * 8, 4);
        if ((uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)start <= pc) lo = mid;
        else hi = mid;
    }
    int32_t start, fde;
    memcpy(&start, table + lo * 8, 4);
    memcpy(&fde, table + lo * 8 + 4, 4);
    if ((uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)start > pc) return NULL;
    return hdr + fde;
}

static int (*ss_find_object)(void *, struct dl_find_object *);

/* Works out the rule of the frame whose pc (a return address minus one) is `pc`. */
static uint64_t ss_rule_for(uint64_t pc) {
    struct dl_find_object obj;
    if (ss_find_object((void *)(uintptr_t)pc, &obj) != 0 || !obj.dlfo_eh_frame) return SS_RULE_END;
    int unknown = 0;
    const uint8_t *fde = ss_find_fde(obj.dlfo_eh_frame, pc, &unknown);
    if (!fde) return unknown ? SS_RULE_UNKNOWN : SS_RULE_END;
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    if (len == 0 || len == 0xffffffffu) return SS_RULE_UNKNOWN;
    memcpy(&cie_off, fde + 4, 4);
    struct ss_cie cie;
    if (cie_off == 0 || ss_parse_cie(fde + 4 - cie_off, &cie) != 0) return SS_RULE_UNKNOWN;
    struct ss_reader r = {fde + 8, fde + 4 + len, 0};
    uint64_t begin = ss_encoded(&r, cie.fde_enc, 0);
    uint64_t range = ss_encoded(&r, cie.fde_enc & 0x0f, 0);
    if (cie.has_z) {
        uint64_t n = ss_uleb(&r);
        if (!r.bad && n <= (uint64_t)(r.end - r.p)) r.p += n;
        else r.bad = 1;
    }
    if (r.bad) return SS_RULE_UNKNOWN;
    if (pc < begin || pc - begin >= range) return SS_RULE_END; /* between functions */
    /* The CIE's initial instructions, then the FDE's up to the pc. */
    struct ss_row row = {SS_DW_RSP, 8, SS_HOW_SAME, SS_HOW_UNDEFINED, 0, 0};
    if (ss_run_cfa(cie.insns, cie.insns_end, &cie, begin, UINT64_MAX, &row, &row) != 0) return SS_RULE_UNKNOWN;
    struct ss_row init = row;
    if (ss_run_cfa(r.p, r.end, &cie, begin, pc, &row, &init) != 0) return SS_RULE_UNKNOWN;
    if (row.ra_how == SS_HOW_UNDEFINED) return SS_RULE_END;
    if (row.ra_how != SS_HOW_OFFSET || (row.cfa_reg != SS_DW_RSP && row.cfa_reg != SS_DW_RBP) ||
        (row.rbp_how != SS_HOW_SAME && row.rbp_how != SS_HOW_OFFSET))
        return SS_RULE_UNKNOWN;
    return ss_rule_pack(row.cfa_reg == SS_DW_RBP, row.cfa_off, row.rbp_how == SS_HOW_OFFSET, row.rbp_off,
                        row.ra_off);
}

/* ---- the rule cache: pc -> rule, shared by all threads ----
 * Each entry is a small seqlock: a writer takes it by moving its sequence number from even to odd
 * (a writer that finds it taken just does not cache), writes the pc and the rule, and makes the
 * number even again; a reader takes the rule only if it read the same even number before and
 * after the pc and the rule. */

#define SS_RULE_SLOTS 4096u

struct ss_rule_slot {
    uint64_t seq, pc, rule;
};

static struct ss_rule_slot *ss_rules;
static uintptr_t ss_own_lo, ss_own_hi; /* the interposer's code */

static inline struct ss_rule_slot *ss_rule_slot(uint64_t pc) {
    return &ss_rules[(pc * 0x9E3779B97F4A7C15ull) >> 52]; /* 12 bits: SS_RULE_SLOTS */
}

static uint64_t ss_rule(uint64_t pc) {
    struct ss_rule_slot *s = ss_rule_slot(pc);
    uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (!(seq & 1)) {
        uint64_t at = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);
        uint64_t rule = __atomic_load_n(&s->rule, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (at == pc && rule && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) return rule;
    }
    uint64_t rule = ss_rule_for(pc);
    if (!(seq & 1) && __atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        __atomic_store_n(&s->pc, pc, __ATOMIC_RELAXED);
        __atomic_store_n(&s->rule, rule, __ATOMIC_RELAXED);
        __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
    }
    return rule;
}

void ss_fast_unwind_forget(void) {
    if (!ss_rules) return;
    for (uint32_t i = 0; i < SS_RULE_SLOTS; i++) {
        struct ss_rule_slot *s = &ss_rules[i];
        uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
        /* An entry being written is left to its writer: it holds a rule worked out just now. */
        if (!(seq & 1) && __atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            __atomic_store_n(&s->pc, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->rule, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
        }
    }
}

/* Without another unwinder behind it, a stack this one cannot finish is kept as far as it went
 * rather than left to libgcc's. */
static int ss_walk_partial;

void ss_fast_unwind_init(uintptr_t own_lo, uintptr_t own_hi, int alone) {
    if (!ss_option_num(SS_OPT_FAST_UNWIND)) return; /* 0: libgcc for every stack (comparisons) */
    *(void **)&ss_find_object = dlsym(RTLD_DEFAULT, "_dl_find_object");
    if (!ss_find_object) return;
    ss_rules = ss_map_wiped(SS_RULE_SLOTS * sizeof *ss_rules);
    if (!ss_rules) return;
    ss_own_lo = own_lo;
    ss_own_hi = own_hi;
    ss_walk_partial = alone;
    ss_fast_unwind_on = 1;
}

/* ---- the walk ---- */

extern void *__libc_stack_end; /* the main thread's stack pointer at start (ld.so) */

/* The highest address of the calling thread's stack that may be read: a thread's descriptor sits
 * just above its stack, the main thread's stack ends a little above __libc_stack_end (argv and the
 * environment follow it). 0 if `sp` is on neither (an alternate signal stack). */
static uintptr_t ss_stack_top(uintptr_t sp) {
    uintptr_t self = (uintptr_t)pthread_self();
    if (self > sp && self - sp < (1ull << 30)) return self;
    uintptr_t main_end = (uintptr_t)__libc_stack_end;
    if (main_end > sp && main_end - sp < (1ull << 30)) return main_end;
    return 0;
}

static int ss_walk_frames(uintptr_t pc, uintptr_t sp, uintptr_t rbp, uintptr_t top, int returned, uint64_t *pcs,
                          uint32_t max);

/* Fills `pcs` with the return addresses of the caller's frames, innermost first, the interposer's
 * own frames left out; returns how many, or -1 when the stack needs libgcc's unwinder. */
SS_NOINLINE int ss_fast_backtrace(uint64_t *pcs, uint32_t max) {
    uintptr_t sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    uintptr_t top = ss_stack_top(sp);
    if (!top) return -1;
    /* The interposer's frames, by their frame pointers. */
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0), pc = 0, rbp = 0;
    for (int i = 0;; i++) {
        if (i == 32 || fp < sp || fp > top - 16 || (fp & 7)) return -1;
        uintptr_t ra = ((const uintptr_t *)fp)[1], next = ((const uintptr_t *)fp)[0];
        if (ra < ss_own_lo || ra >= ss_own_hi) {
            pc = ra;
            rbp = next;
            sp = fp + 16;
            break;
        }
        if (next <= fp) return -1;
        fp = next;
    }
    /* The program's frames, by their rules (the interposer's frames among them, such as the
     * trampoline that starts a thread, are unwound but left out). */
    return ss_walk_frames(pc, sp, rbp, top, 1, pcs, max);
}

/* Fills `pcs` with the return addresses of the frames above the frame at `pc` (a return address
 * if `returned`, else the instruction a signal interrupted), whose stack pointer and rbp are `sp`
 * and `rbp` below `top`, the interposer's own frames left out if `returned`; returns how many,
 * or, at a frame it cannot unwind, -1 (for libgcc's unwinder) or how many so far where there is
 * none behind it (ss_walk_partial). */
/* ---- signal frames ----
 * A return into the C library's signal return trampoline (__restore_rt: `mov $15, %rax; syscall`,
 * not exported) has the kernel's signal frame above it, whose ucontext holds the registers of the
 * instruction the signal interrupted; libgcc reads them through the trampoline's expression rules,
 * which this unwinder does not run. Known by its code, once its rule is found not understood. */
static uintptr_t ss_sigreturn;

static int ss_is_sigreturn(uintptr_t pc) {
    static const uint8_t code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    struct dl_find_object obj;
    if (ss_find_object((void *)pc, &obj) != 0) return 0;
    if (pc < (uintptr_t)obj.dlfo_map_start || (uintptr_t)obj.dlfo_map_end - pc < sizeof code) return 0;
    return memcmp((const void *)pc, code, sizeof code) == 0; /* inside a loaded object's text */
}

/* Moves to the interrupted registers of the signal frame at `*sp`; 0 if they are not on this
 * stack (an alternate signal stack, a corrupt frame). */
static int ss_signal_frame(uintptr_t *pc, uintptr_t *sp, uintptr_t *rbp, uintptr_t top) {
    uintptr_t regs = *sp + offsetof(ucontext_t, uc_mcontext.gregs);
    if (regs + sizeof(greg_t) * NGREG > top || (regs & 7)) return 0;
    const greg_t *g = (const greg_t *)regs;
    uintptr_t next_sp = (uintptr_t)g[REG_RSP];
    if (next_sp <= *sp || next_sp >= top) return 0;
    *pc = (uintptr_t)g[REG_RIP];
    *rbp = (uintptr_t)g[REG_RBP];
    *sp = next_sp;
    return 1;
}

static int ss_walk_frames(uintptr_t pc, uintptr_t sp, uintptr_t rbp, uintptr_t top, int returned, uint64_t *pcs,
                          uint32_t max) {
    uint32_t n = 0;
    int first = 1, exact = !returned; /* exact: pc is an interrupted instruction, not a return address */
    while (pc != 0 && n < max) {
        /* (The instruction a signal interrupted is the sample's own pc, not a caller.) */
        if (returned ? (pc < ss_own_lo || pc >= ss_own_hi) : !first) pcs[n++] = pc;
        int interrupted = exact;
        first = 0;
        exact = 0;
        int stuck = ss_walk_partial ? (int)n : -1;
        if (pc == __atomic_load_n(&ss_sigreturn, __ATOMIC_RELAXED) && !interrupted) {
            if (!ss_signal_frame(&pc, &sp, &rbp, top)) return stuck;
            exact = 1;
            continue;
        }
        /* A return address is one past its call: its rule is the call's. An interrupted
         * instruction's is its own. */
        uint64_t rule = ss_rule(interrupted ? pc : pc - 1);
        uint32_t kind = rule & 3u;
        if (kind == SS_RULE_END) break;
        if (kind == SS_RULE_UNKNOWN && !interrupted && ss_is_sigreturn(pc)) {
            __atomic_store_n(&ss_sigreturn, pc, __ATOMIC_RELAXED);
            if (!ss_signal_frame(&pc, &sp, &rbp, top)) return stuck;
            exact = 1;
            continue;
        }
        if (kind != SS_RULE_FRAME) return stuck;
        uintptr_t cfa = ((rule & SS_RULE_CFA_RBP) ? rbp : sp) + (uintptr_t)ss_rule_cfa_off(rule);
        uintptr_t ra_at = cfa + (uintptr_t)ss_rule_ra_off(rule);
        if (cfa <= sp || cfa > top || ra_at < sp || ra_at > top - 8 || (ra_at & 7)) return stuck;
        if (rule & SS_RULE_RBP_SAVED) {
            uintptr_t rbp_at = cfa + (uintptr_t)ss_rule_rbp_off(rule);
            /* Interrupted between an epilogue's `pop %rbp` and its `ret`, where compilers leave
             * the rule saying rbp is saved: its slot is below the stack pointer, popped back into
             * the register already, which holds the caller's value. */
            if (!(interrupted && rbp_at < sp)) {
                if (rbp_at < sp || rbp_at > top - 8 || (rbp_at & 7)) return stuck;
                rbp = *(const uintptr_t *)rbp_at;
            }
        }
        pc = *(const uintptr_t *)ra_at;
        sp = cfa;
    }
    return (int)n;
}

/* The callers of the instruction a signal interrupted at `pc`, with its thread's stack pointer
 * and rbp, innermost first, the interposer's own frames kept (a CPU sample inside a hook belongs
 * to the call it wraps); -1 when libgcc's unwinder is needed (a frame this one does not
 * understand, a stack that is not the thread's own, such as a coroutine's). Async-signal-safe:
 * _dl_find_object is, and the rule cache takes no lock. */
int ss_fast_backtrace_from(uint64_t pc, uint64_t sp, uint64_t rbp, uint64_t *pcs, uint32_t max) {
    uintptr_t top = ss_stack_top((uintptr_t)sp);
    if (!top || sp >= top) return -1;
    return ss_walk_frames((uintptr_t)pc, (uintptr_t)sp, (uintptr_t)rbp, top, 0, pcs, max);
}

#else /* no _dl_find_object: libgcc's unwinder for every stack */

void ss_fast_unwind_init(uintptr_t own_lo, uintptr_t own_hi, int alone) {
    (void)own_lo;
    (void)own_hi;
    (void)alone;
}
void ss_fast_unwind_forget(void) {}
int ss_fast_backtrace(uint64_t *pcs, uint32_t max) {
    (void)pcs;
    (void)max;
    return -1;
}
int ss_fast_backtrace_from(uint64_t pc, uint64_t sp, uint64_t rbp, uint64_t *pcs, uint32_t max) {
    (void)pc;
    (void)sp;
    (void)rbp;
    (void)pcs;
    (void)max;
    return -1;
}

#endif
