/* One rank of the heartbeat test (tests/integration/heartbeat): every rank allreduces
 * once; then the rank to be stopped idles while the others allreduce again, which can
 * only end with an error naming the stopped rank once heartbeats declare it failed.
 * Every rank stays up until the script kills it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	weft_comm_t *comm = NULL;
	char want[32];

	if (argc < 2) {
		fprintf(stderr, "usage: %s STOPPED_RANK\n", argv[0]);
		return 2;
	}
	int stop = atoi(argv[1]);
	weft_status_t st = weft_init(&comm);

	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init: %s\n", weft_strerror(st));
		return 1;
	}
	int rank = weft_comm_rank(comm), n = weft_comm_size(comm);
	int x = rank + 1, sum = 0;

	st = weft_allreduce(&x, &sum, 1, WEFT_INT32, WEFT_SUM, comm, NULL);
	if (st != WEFT_OK || sum != n * (n + 1) / 2) {
		fprintf(stderr, "rank %d: first allreduce: %s, sum %d\n", rank, weft_strerror(st),
			sum);
		return 1;
	}
	printf("rank %d ready\n", rank);
	fflush(stdout);
	if (rank == stop) {
		sleep(300); /* the script stops, then kills this process */
		return 0;
	}
	double t0 = now_s();

	st = weft_allreduce(&x, &sum, 1, WEFT_INT32, WEFT_SUM, comm, NULL);
	double took = now_s() - t0;
	const char *err = weft_comm_last_error(comm);

	printf("rank %d: second allreduce %s (%s) after %.2f s: %s\n", rank,
	       st == WEFT_OK ? "succeeded" : "failed", weft_strerror(st), took, err);
	fflush(stdout);
	snprintf(want, sizeof(want), "rank %d", stop);
	/* Stay up until the script ends the job: leaving now would close our links and
	 * fail the other survivor for the wrong reason (us, not the stopped rank). */
	sleep(300);
	return st == WEFT_OK || strstr(err, want) == NULL;
}
