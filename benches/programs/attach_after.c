/* benches/attach_after.sh's program: prints "ready", waits for a byte on stdin, then times a
 * single-threaded loop of malloc, free, mutex lock and unlock (best of 5 runs of 2M iterations)
 * and prints its ns per iteration. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  void *keep[64]={0};
  printf("ready\n"); fflush(stdout);
  char c; if (read(0,&c,1)<0) return 1;   /* go */
  double best=1e9;
  for(int rep=0;rep<5;rep++){
    double t0=now();
    for(int i=0;i<2000000;i++){ void*p=malloc(16+(i&127)); free(keep[i&63]); keep[i&63]=p; pthread_mutex_lock(&m); pthread_mutex_unlock(&m);}
    double dt=now()-t0; if(dt<best)best=dt;
  }
  printf("%.2f ns/iter\n", best/2000000*1e9);
  return 0;
}
