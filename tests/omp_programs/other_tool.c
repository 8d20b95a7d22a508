/* A user's own OMPT tool (loaded by libomp from OMP_TOOL_LIBRARIES): it must start, and
 * stallscope's ompt_start_tool must stand aside for it. It says so on stderr when libomp
 * initializes it, and counts parallel regions. (The OMPT types it needs are defined here:
 * omp-tools.h comes with clang's headers only.) */
#include <stdint.h>
#include <stdio.h>

typedef union {
    uint64_t value;
    void *ptr;
} tool_data;
typedef void (*interface_fn)(void);
typedef interface_fn (*lookup_fn)(const char *);
typedef int (*set_callback_fn)(int, interface_fn);
typedef struct {
    int (*initialize)(lookup_fn, int, tool_data *);
    void (*finalize)(tool_data *);
    tool_data data;
} start_tool_result;

static unsigned long regions;

static void parallel_begin(tool_data *task, const void *frame, tool_data *parallel, unsigned n, int flags,
                           const void *ra) {
    __atomic_fetch_add(&regions, 1, __ATOMIC_RELAXED);
}

static int initialize(lookup_fn lookup, int device, tool_data *data) {
    set_callback_fn set = (set_callback_fn)lookup("ompt_set_callback");
    set(3 /* ompt_callback_parallel_begin */, (interface_fn)parallel_begin);
    fprintf(stderr, "other tool initialized\n");
    return 1;
}

static void finalize(tool_data *data) { fprintf(stderr, "other tool saw %lu regions\n", regions); }

start_tool_result *ompt_start_tool(unsigned int version, const char *runtime) {
    static start_tool_result result = {initialize, finalize, {0}};
    return &result;
}
