/* Monotonic clock, deadlines and sleeping (lib/util). */
#include <errno.h>
#include <math.h>
#include <time.h>
#include "lib/util/time.h"

uint64_t wt_util_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t wt_util_deadline_in(double seconds)
{
	uint64_t now = wt_util_time_ns();
	double ns;

	/* 0 is reserved for "no deadline", so a deadline is always at least now (>0). */
	if (!(seconds > 0))
		return now ? now : 1;
	ns = seconds * 1e9;
	if (ns >= (double)(UINT64_MAX - now - 1))
		return UINT64_MAX;
	return now + (uint64_t)ns;
}

int wt_util_deadline_passed(uint64_t deadline_ns)
{
	if (deadline_ns == 0)
		return 0;
	return wt_util_time_ns() >= deadline_ns;
}

void wt_util_sleep_ns(uint64_t ns)
{
	struct timespec req, rem;

	req.tv_sec = (time_t)(ns / 1000000000ull);
	req.tv_nsec = (long)(ns % 1000000000ull);
	/* clock_nanosleep returns the error instead of setting errno. */
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem) == EINTR)
		req = rem;
}
