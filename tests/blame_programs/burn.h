// Shared by the programs of tests/blame_programs: deterministic CPU work and the variant argument.
// BURN is a macro, not an inline function: the debug info of an inlined function names it as a
// frame of its own, and a sample of the loop must be a sample of the function that runs it (the
// `culprit_*` functions, noinline, are the frames a report must name).
#ifndef BLAME_BURN_H
#define BLAME_BURN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// About one microsecond per unit on the 2-core test machine (a dependent chain of divisions,
// 5.6 ns per step there).
#define BURN_STEPS_PER_US 180L

// Turns x into a value after `us` microseconds of work (a statement; x is a double variable). The
// line it is written on is a constant of the loop, so no two functions that use it have the same
// code: GCC's identical code folding would otherwise make culprit_x and other_work one function.
#define BURN(x, us)                                                                                \
    for (long burn_i_ = 0; burn_i_ < (us) * BURN_STEPS_PER_US; burn_i_++)                         \
    (x) = (x) * 1.0000001 + 0.5 / ((x) + (double)__LINE__)

// argv[1]: "balanced" (0) or "unbalanced" (1); anything else is a usage error.
static inline int blame_variant(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "balanced") == 0) return 0;
    if (argc > 1 && strcmp(argv[1], "unbalanced") == 0) return 1;
    fprintf(stderr, "usage: %s balanced|unbalanced\n", argv[0]);
    exit(2);
}
#endif
