/* Monotonic time (lib/util). */
#ifndef WT_UTIL_TIME_H
#define WT_UTIL_TIME_H

#include <stdint.h>

uint64_t wt_util_time_ns(void);
/* Deadline helpers: absolute monotonic ns; 0 means "none". */
uint64_t wt_util_deadline_in(double seconds);
int wt_util_deadline_passed(uint64_t deadline_ns);
/* Sleep for ns nanoseconds (interrupted sleeps resume). */
void wt_util_sleep_ns(uint64_t ns);

/* One beat of a busy-wait: tells the core (and a hyperthread sibling) that we spin. */
static inline void wt_util_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif
