/* bench/ (outside the library): the machine's limits that bound every collective here:
 * memcpy and float32 add bandwidth on 64 MiB with 1 and 2 threads, TCP over 127.0.0.1, and
 * how long a cache line takes from CPU 0 to CPU 1 (`limits --pingpong` measures only that). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (64u << 20)
#define NFLOATS (BUF_BYTES / sizeof(float))
#define TCP_CHUNK (1u << 20)

enum kernel { K_MEMCPY, K_ADD3, K_ADD2 };

struct slice {
	enum kernel k;
	float *a, *b, *c;
	size_t n;
	int reps;
	pthread_barrier_t *start;
	double t0, t1; /* this thread's own start and end of its reps */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The kernels are written out so the compiler vectorises them with -O3 -march=native. */
static void add3(float *restrict c, const float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i] = a[i] + b[i];
}

static void add2(float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] += b[i];
}

static void *work(void *arg)
{
	struct slice *s = arg;

	pthread_barrier_wait(s->start);
	s->t0 = now_s();
	for (int r = 0; r < s->reps; r++) {
		switch (s->k) {
		case K_MEMCPY:
			memcpy(s->c, s->a, s->n * sizeof(float));
			break;
		case K_ADD3:
			add3(s->c, s->a, s->b, s->n);
			break;
		case K_ADD2:
			add2(s->a, s->b, s->n);
			break;
		}
	}
	s->t1 = now_s();
	return NULL;
}

/* One pass over the whole 64 MiB split between nthreads; returns the best seconds per pass
 * of a few tries, so a descheduled try does not count. Each thread clocks its own work and a
 * try lasts from the first start to the last end: the main thread, asleep in a barrier on a
 * 2-core machine, used to be woken after the workers had run for a while, which made 2-thread
 * passes look up to 3x shorter than they were. */
static double time_kernel(enum kernel k, int nthreads, float *a, float *b, float *c)
{
	pthread_t th[2];
	struct slice sl[2];
	pthread_barrier_t bar;
	double best = 1e30;
	const int reps = 4;

	for (int tries = 0; tries < 5; tries++) {
		pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
		for (int t = 0; t < nthreads; t++) {
			size_t per = NFLOATS / (size_t)nthreads, off = per * (size_t)t;

			sl[t] = (struct slice){k, a + off, b + off, c + off, per, reps, &bar, 0, 0};
			if (pthread_create(&th[t], NULL, work, &sl[t]) != 0) {
				fprintf(stderr, "limits: pthread_create failed\n");
				exit(1);
			}
		}
		pthread_barrier_wait(&bar);
		double t0 = 1e30, t1 = 0;
		for (int t = 0; t < nthreads; t++) {
			pthread_join(th[t], NULL);
			t0 = sl[t].t0 < t0 ? sl[t].t0 : t0;
			t1 = sl[t].t1 > t1 ? sl[t].t1 : t1;
		}
		double dt = (t1 - t0) / reps;
		pthread_barrier_destroy(&bar);
		best = dt < best ? dt : best;
	}
	return best;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The child drains the socket; the parent writes 1 MiB chunks for about `secs` seconds. */
static double tcp_loopback(double secs)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0), fd;
	char *buf = malloc(TCP_CHUNK);
	unsigned long long sent = 0;
	double t0, dt;
	pid_t pid;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || buf == NULL || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(ls, 1) != 0 || getsockname(ls, (struct sockaddr *)&sa, &len) != 0) {
		perror("limits: tcp listen on 127.0.0.1");
		if (ls >= 0)
			close(ls);
		free(buf);
		return -1;
	}
	memset(buf, 0x5a, TCP_CHUNK);
	pid = fork();
	if (pid == 0) {
		int c = accept(ls, NULL, NULL);

		while (c >= 0 && read(c, buf, TCP_CHUNK) > 0)
			;
		_exit(0);
	}
	close(ls);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (pid < 0 || fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("limits: tcp connect to 127.0.0.1");
		if (fd >= 0)
			close(fd);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		free(buf);
		return -1;
	}
	t0 = now_s();
	do {
		if (write_all(fd, buf, TCP_CHUNK) != 0)
			break;
		sent += TCP_CHUNK;
	} while (now_s() - t0 < secs);
	close(fd);
	waitpid(pid, NULL, 0); /* the reader has drained everything once it exits */
	dt = now_s() - t0;
	free(buf);
	return (double)sent / dt / 1e9;
}

static void report(const char *name, enum kernel k, int nthreads, float *a, float *b, float *c,
		   int streams, int *first)
{
	double s = time_kernel(k, nthreads, a, b, c);

	printf("%s  \"%s_%dt\": {\"ms\": %.3f, \"buf_gbps\": %.2f, \"traffic_gbps\": %.2f}\n",
	       *first ? "" : ",", name, nthreads, s * 1e3, BUF_BYTES / s / 1e9,
	       streams * (double)BUF_BYTES / s / 1e9);
	*first = 0;
}

/* ---- cache line between two CPUs ---- */

#define PP_ROUNDS 100000
#define PP_MAX_S 0.1 /* at most this long */

static _Alignas(64) atomic_long pp_word;

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *pp_pong(void *arg)
{
	(void)arg;
	if (pin(1) != 0)
		return (void *)1;
	for (long i = 0;; i++) {
		long v;

		while ((v = atomic_load_explicit(&pp_word, memory_order_acquire)) != 2 * i + 1 &&
		       v >= 0)
			;
		if (v < 0)
			break; /* the other side is done */
		atomic_store_explicit(&pp_word, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

/* One-way time of a cache line between CPU 0 and CPU 1 in ns (two threads pinned there
 * hand a counter back and forth), or -1 where the process may not run on both. On a VM it
 * tells whether the hypervisor runs the two vCPUs near each other (tens of ns) or on
 * different core complexes or sockets (a hundred or more). */
static double pingpong_ns(void)
{
	cpu_set_t mine;
	pthread_t t;
	void *ret = NULL;
	double t0, t1;

	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || !CPU_ISSET(0, &mine) ||
	    !CPU_ISSET(1, &mine))
		return -1;
	atomic_store(&pp_word, 0);
	if (pin(0) != 0 || pthread_create(&t, NULL, pp_pong, NULL) != 0)
		return -1;
	long i = 0;

	t0 = now_s();
	while (i < PP_ROUNDS) {
		atomic_store_explicit(&pp_word, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&pp_word, memory_order_acquire) != 2 * i + 2)
			;
		i++;
		/* On a loaded machine each hand-over may wait for a time slice: stop early. */
		if ((i & 1023) == 0 && now_s() - t0 > PP_MAX_S)
			break;
	}
	t1 = now_s();
	atomic_store_explicit(&pp_word, -1, memory_order_release);
	pthread_join(t, &ret);
	(void)sched_setaffinity(0, sizeof(mine), &mine);
	return ret == NULL && i > 0 ? (t1 - t0) / (double)i / 2 * 1e9 : -1;
}

/* Prints one JSON object: per kernel the ms per 64 MiB pass, the 64 MiB buffer's GB/s (as an
 * algbw) and the memory traffic's GB/s (memcpy and a += b: 2 streams, c = a + b: 3). */
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--pingpong") == 0) {
		printf("{\"pingpong_ns\": %.1f}\n", pingpong_ns());
		return 0;
	}
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	float *a = aligned_alloc(64, BUF_BYTES), *b = aligned_alloc(64, BUF_BYTES);
	float *c = aligned_alloc(64, BUF_BYTES);
	int first = 1;

	if (a == NULL || b == NULL || c == NULL) {
		fprintf(stderr, "limits: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < NFLOATS; i++) {
		a[i] = (float)(i % 7);
		b[i] = (float)(i % 5);
		c[i] = 0;
	}
	printf("{\n");
	for (int t = 1; t <= 2; t++) {
		report("memcpy", K_MEMCPY, t, a, b, c, 2, &first);
		report("add_c_eq_a_plus_b", K_ADD3, t, a, b, c, 3, &first);
		report("add_a_plus_eq_b", K_ADD2, t, a, b, c, 2, &first);
	}
	printf(",  \"tcp_loopback_gbps\": %.2f\n", tcp_loopback(secs > 0 ? secs : 3.0));
	printf(",  \"pingpong_ns\": %.1f\n}\n", pingpong_ns());
	free(a);
	free(b);
	free(c);
	return 0;
}
