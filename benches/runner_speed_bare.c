/* Baseline for benches/runner_speed.sh: the cheapest way to run a command N times,
 * fork + execvp + wait4 with nothing else, timing each run. Prints the median run
 * and the total elapsed time in nanoseconds.
 * usage: runner_speed_bare N CMD [ARGS...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  int runs = atoi(argv[1]);
  uint64_t *times = calloc((size_t)runs, sizeof *times);
  uint64_t start = now_ns();
  for (int i = 0; i < runs; i++) {
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
      execvp(argv[2], argv + 2);
      _exit(127);
    }
    int status;
    struct rusage usage;
    wait4(pid, &status, 0, &usage);
    times[i] = now_ns() - t0;
  }
  uint64_t total = now_ns() - start;
  qsort(times, (size_t)runs, sizeof *times, by_value);
  printf("%llu %llu\n", (unsigned long long)times[runs / 2], (unsigned long long)total);
  return 0;
}
