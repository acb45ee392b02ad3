/* Sleeping waiters are woken (tests/integration, issue 5): with WEFT_SPIN_US=0 and
 * WEFT_YIELD_US=0 every wait of a blocking call sleeps on the links at once, beside the
 * progress thread, which sleeps on the same fds between calls. Each call must end when its
 * peer's data is there, not when a sleep times out: a thread leaving the fds must not
 * take the doorbell (or the sleeping flag) from another still asleep. Results are checked
 * exactly; a call that took longer than --max-ms fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

#include "../common/report.h"

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int calls = 2000, comms = 4;
	double max_ms = 60, worst = 0;
	weft_comm_t *world;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--calls") == 0)
			calls = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--max-ms") == 0)
			max_ms = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--comms") == 0)
			comms = atoi(argv[i + 1]);
	}
	if (weft_init(&world) != WEFT_OK) {
		fprintf(stderr, "weft_init failed\n");
		return 1;
	}
	g_rank = weft_comm_rank(world);
	int n = weft_comm_size(world);

	/* Fresh communicators too: each starts its slots and its first calls anew. */
	int errors = 0, slow = 0;

	/* Slow calls are counted, not stopped at, so that every rank makes every call. */
	for (int c = 0; c < comms && !errors; c++) {
		weft_comm_t *comm = world;

		if (c > 0 && weft_comm_dup(world, &comm) != WEFT_OK) {
			fail("comm %d: dup failed: %s", c, weft_comm_last_error(world));
			break;
		}
		for (int i = 0; i < calls && !errors; i++) {
			int32_t in[2] = {g_rank + i, 1}, out[2] = {-1, -1};
			double t0 = now_ms(), dt;
			weft_status_t st =
			    weft_allreduce(in, out, 2, WEFT_INT32, WEFT_SUM, comm, NULL);

			dt = now_ms() - t0;
			if (st != WEFT_OK) {
				fail("comm %d call %d: %s: %s", c, i, weft_strerror(st),
				     weft_comm_last_error(comm));
				errors++;
			} else if (out[0] != n * i + n * (n - 1) / 2 || out[1] != n)
				fail("comm %d call %d: got %d %d, want %d %d", c, i, out[0], out[1],
				     n * i + n * (n - 1) / 2, n);
			if (dt > worst)
				worst = dt;
			if (dt > max_ms && slow++ < 5)
				fail("comm %d call %d took %.1f ms (more than %.0f): a sleeper was "
				     "not "
				     "woken",
				     c, i, dt, max_ms);
		}
		/* Then a run of broadcasts of one shape, which after the first call take the
		 * replay's quick path (no lock; at 2 ranks no fence before the wake-up either):
		 * its flags must wake readers and a root that sleep. */
		for (int i = 0; i < calls && !errors; i++) {
			int32_t b[2] = {-1, -1};
			double t0 = now_ms(), dt;
			weft_status_t st;

			if (g_rank == 0) {
				b[0] = i;
				b[1] = c;
			}
			st = weft_broadcast(b, 2, WEFT_INT32, 0, comm, NULL);
			dt = now_ms() - t0;
			if (st != WEFT_OK) {
				fail("comm %d broadcast %d: %s: %s", c, i, weft_strerror(st),
				     weft_comm_last_error(comm));
				errors++;
			} else if (b[0] != i || b[1] != c)
				fail("comm %d broadcast %d: got %d %d, want %d %d", c, i, b[0],
				     b[1], i, c);
			if (dt > worst)
				worst = dt;
			if (dt > max_ms && slow++ < 5)
				fail(
				    "comm %d broadcast %d took %.1f ms (more than %.0f): a sleeper "
				    "was not woken",
				    c, i, dt, max_ms);
		}
		if (comm != world)
			weft_comm_destroy(comm);
	}
	printf("rank %d: %d x 2 x %d calls, slowest %.2f ms, %d slower than %.0f ms\n", g_rank,
	       comms, calls, worst, slow, max_ms);
	if (slow > 5)
		fail("%d calls in all took more than %.0f ms", slow, max_ms);
	weft_comm_destroy(world);
	return g_fail ? 1 : 0;
}
