/* weft-demo (tools/): allreduces float32 buffers of several sizes across the world,
 * checks every element and prints size, time, algbw, busbw and the check on rank 0.
 * Usage: weftrun -n 4 weft-demo [max_bytes] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Values small enough that every summation order is exact in float32. */
static float value(int rank, size_t i)
{
	return (float)((int)((i * 7 + (size_t)rank * 13) % 64) - 32);
}

static int run_size(weft_comm_t *comm, size_t count, int iters, double *avg_s, size_t *wrong)
{
	int rank = weft_comm_rank(comm), size = weft_comm_size(comm);
	float *send = malloc(count * sizeof(float) + 1);
	float *recv = malloc(count * sizeof(float) + 1);
	weft_status_t st = WEFT_OK;
	double t0;

	if (send == NULL || recv == NULL) {
		free(send);
		free(recv);
		fprintf(stderr, "rank %d: out of memory for %zu floats\n", rank, count);
		return 1;
	}
	for (size_t i = 0; i < count; i++)
		send[i] = value(rank, i);
	/* Warm-up, then a barrier-like allreduce so every rank starts timing together. */
	st = weft_allreduce(send, recv, count, WEFT_FLOAT32, WEFT_SUM, comm, NULL);
	t0 = now_s();
	for (int it = 0; it < iters && st == WEFT_OK; it++)
		st = weft_allreduce(send, recv, count, WEFT_FLOAT32, WEFT_SUM, comm, NULL);
	*avg_s = (now_s() - t0) / iters;
	if (st != WEFT_OK) {
		fprintf(stderr, "rank %d: allreduce of %zu floats failed: %s: %s\n", rank, count,
			weft_strerror(st), weft_comm_last_error(comm));
		free(send);
		free(recv);
		return 1;
	}
	*wrong = 0;
	for (size_t i = 0; i < count; i++) {
		float expect = 0;
		for (int r = 0; r < size; r++)
			expect += value(r, i);
		if (recv[i] != expect)
			(*wrong)++;
	}
	free(send);
	free(recv);
	return 0;
}

int main(int argc, char **argv)
{
	weft_comm_t *comm = NULL;
	size_t max_bytes = 64u << 20;
	weft_status_t st;
	int rank, size, failed = 0;

	if (argc > 1) {
		char *end;
		unsigned long long v = strtoull(argv[1], &end, 10);
		if (*end != '\0' || v < 4) {
			fprintf(stderr, "usage: %s [max_bytes >= 4]\n", argv[0]);
			return 2;
		}
		max_bytes = (size_t)v;
	}
	st = weft_init(&comm);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	rank = weft_comm_rank(comm);
	size = weft_comm_size(comm);
	if (rank == 0) {
		printf("weft %s allreduce demo: %d ranks, float32 sum\n", weft_version(), size);
		printf("%12s %12s %10s %10s %8s\n", "size(B)", "time(us)", "algbw", "busbw",
		       "check");
		printf("%12s %12s %10s %10s %8s\n", "", "", "(GB/s)", "(GB/s)", "");
	}
	for (size_t bytes = 4; bytes <= max_bytes; bytes *= 8) {
		size_t count = bytes / sizeof(float), wrong = 0, total_wrong = 0;
		int iters = bytes >= (1u << 22) ? 5 : bytes >= (1u << 16) ? 20 : 100;
		double t = 0;
		if (run_size(comm, count, iters, &t, &wrong) != 0) {
			failed = 1;
			break;
		}
		/* Everyone's error count, so rank 0's "check" covers every rank. */
		unsigned long long w = wrong, sum = 0;
		st = weft_allreduce(&w, &sum, 1, WEFT_UINT64, WEFT_SUM, comm, NULL);
		if (st != WEFT_OK) {
			fprintf(stderr, "rank %d: allreduce of error counts failed: %s\n", rank,
				weft_comm_last_error(comm));
			failed = 1;
			break;
		}
		total_wrong = (size_t)sum;
		if (total_wrong != 0)
			failed = 1;
		if (rank == 0) {
			double algbw = (double)bytes / t / 1e9;
			double busbw = algbw * 2.0 * (size - 1) / size;
			printf("%12zu %12.2f %10.3f %10.3f %8s\n", bytes, t * 1e6, algbw, busbw,
			       total_wrong == 0 ? "ok" : "WRONG");
			fflush(stdout);
		}
	}
	weft_comm_destroy(comm);
	if (rank == 0)
		printf(failed ? "demo: FAILED\n" : "demo: all results correct\n");
	return failed;
}
