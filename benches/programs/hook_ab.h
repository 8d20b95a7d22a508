/* Included by a workload built with -DHOOK_AB (benches/programs/hook_ab.c): its malloc and free
 * calls go through the functions the driver has switched to. */
#include <stddef.h>
#include <stdint.h>
extern void *(*hook_ab_malloc)(size_t);
extern void (*hook_ab_free)(void *);
#define malloc(n) hook_ab_malloc(n)
#define free(p) hook_ab_free(p)
