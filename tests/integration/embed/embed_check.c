/* The embedding path across processes (tests/integration): an orchestrator that is not a
 * rank calls weft_get_unique_id, execs fresh workers and hands them the id through a pipe;
 * each worker calls weft_comm_init_rank with no launcher environment at all.
 *
 *   embed_check run N      one job of N workers
 *   embed_check two        two jobs from two ids at once, with different data
 *   embed_check corrupt    corrupt ids are refused with WEFT_ERR_INVALID_ARG
 *   embed_check badtoken   a changed token fails with WEFT_ERR_AUTH; the job then runs
 *   embed_check --worker EXPECT NRANKS RANK SALT   (internal: reads the id on stdin) */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

#define WORKER_DEADLINE_S 60
#define MAX_WORKERS 8

static const char *self_path;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Nothing of a launcher may leak into the workers: the id is all they get. */
static void clear_launcher_env(void)
{
	static const char *const vars[] = {"RANK",
					   "WORLD_SIZE",
					   "LOCAL_RANK",
					   "LOCAL_WORLD_SIZE",
					   "GROUP_RANK",
					   "MASTER_ADDR",
					   "MASTER_PORT",
					   "WEFT_JOB_TOKEN",
					   "SLURM_PROCID",
					   "SLURM_NTASKS",
					   "SLURM_LOCALID",
					   "SLURM_NTASKS_PER_NODE",
					   "OMPI_COMM_WORLD_RANK",
					   "OMPI_COMM_WORLD_SIZE",
					   "OMPI_COMM_WORLD_LOCAL_RANK",
					   "OMPI_COMM_WORLD_LOCAL_SIZE",
					   "WEFT_SOCKET_ADDR",
					   NULL};

	for (int i = 0; vars[i] != NULL; i++)
		unsetenv(vars[i]);
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void check_allreduce(weft_comm_t *comm, int salt)
{
	int rank = weft_comm_rank(comm), size = weft_comm_size(comm);
	const size_t n = 100003; /* above eager sizes: exercises the large-message path */
	int64_t *v = malloc(n * sizeof(*v));
	float *f = malloc(n * sizeof(*f));
	weft_request_t *req = NULL;

	CHECK(v != NULL && f != NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		v[i] = (int64_t)rank * 1000003 + (int64_t)i * (salt + 1);
		f[i] = (float)((rank + 1) * ((i % 7) + salt));
	}
	CHECK(weft_allreduce(v, v, n, WEFT_INT64, WEFT_SUM, comm, NULL) == WEFT_OK,
	      "allreduce int64: %s", weft_comm_last_error(comm));
	CHECK(weft_allreduce(f, f, n, WEFT_FLOAT32, WEFT_SUM, comm, &req) == WEFT_OK,
	      "allreduce float32 start: %s", weft_comm_last_error(comm));
	CHECK(weft_wait(&req) == WEFT_OK && req == NULL, "allreduce float32 wait");
	for (size_t i = 0; i < n; i++) {
		int64_t want = (int64_t)size * (int64_t)i * (salt + 1) +
			       (int64_t)1000003 * size * (size - 1) / 2;
		float fwant = (float)(size * (size + 1) / 2 * (int)((i % 7) + salt));
		CHECK(v[i] == want, "allreduce int64 [%zu]: %lld, expected %lld", i,
		      (long long)v[i], (long long)want);
		CHECK(f[i] == fwant, "allreduce float32 [%zu]: %g, expected %g", i, f[i], fwant);
	}
	free(v);
	free(f);
}

static void check_allgather_bcast(weft_comm_t *comm, int salt)
{
	int rank = weft_comm_rank(comm), size = weft_comm_size(comm);
	const size_t n = 777;
	int32_t *mine = malloc(n * sizeof(*mine));
	int32_t *all = malloc(n * (size_t)size * sizeof(*all));
	unsigned char buf[5000];
	int root = size - 1;

	CHECK(mine != NULL && all != NULL, "out of memory");
	for (size_t i = 0; i < n; i++)
		mine[i] = rank * 100000 + (int32_t)i + salt;
	CHECK(weft_allgather(mine, all, n, WEFT_INT32, comm, NULL) == WEFT_OK, "allgather: %s",
	      weft_comm_last_error(comm));
	for (int r = 0; r < size; r++) {
		for (size_t i = 0; i < n; i++) {
			int32_t want = r * 100000 + (int32_t)i + salt;
			CHECK(all[(size_t)r * n + i] == want, "allgather block %d [%zu]: %d != %d",
			      r, i, all[(size_t)r * n + i], want);
		}
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rank == root ? (unsigned char)(i * 31 + salt) : 0xee;
	CHECK(weft_broadcast(buf, sizeof(buf), WEFT_UINT8, root, comm, NULL) == WEFT_OK,
	      "broadcast: %s", weft_comm_last_error(comm));
	for (size_t i = 0; i < sizeof(buf); i++)
		CHECK(buf[i] == (unsigned char)(i * 31 + salt), "broadcast [%zu]: %u", i, buf[i]);
	CHECK(weft_barrier(comm, NULL) == WEFT_OK, "barrier: %s", weft_comm_last_error(comm));
	free(mine);
	free(all);
}

static weft_status_t expect_status(const char *name)
{
	if (strcmp(name, "ok") == 0)
		return WEFT_OK;
	if (strcmp(name, "invalid") == 0)
		return WEFT_ERR_INVALID_ARG;
	if (strcmp(name, "auth") == 0)
		return WEFT_ERR_AUTH;
	CHECK(0, "unknown expectation '%s'", name);
	return WEFT_OK;
}

static int worker_main(int argc, char **argv)
{
	weft_unique_id_t id;
	weft_comm_t *comm = NULL;
	weft_status_t want, st;
	int nranks, rank, salt;

	CHECK(argc == 6, "worker: expected EXPECT NRANKS RANK SALT");
	want = expect_status(argv[2]);
	nranks = atoi(argv[3]);
	rank = atoi(argv[4]);
	salt = atoi(argv[5]);
	CHECK(getenv("RANK") == NULL && getenv("MASTER_ADDR") == NULL &&
		  getenv("MASTER_PORT") == NULL && getenv("WEFT_JOB_TOKEN") == NULL,
	      "worker %d: launcher variables leaked into the environment", rank);
	CHECK(read_full(0, &id, sizeof(id)) == 0, "worker %d: short read of the id", rank);
	st = weft_comm_init_rank(&comm, nranks, &id, rank);
	CHECK(st == want, "worker %d: weft_comm_init_rank gave %d (%s), expected %d (%s)", rank, st,
	      weft_strerror(st), want, weft_strerror(want));
	if (want != WEFT_OK) {
		CHECK(comm == NULL, "worker %d: failed init left a communicator", rank);
		return 0;
	}
	CHECK(weft_comm_rank(comm) == rank && weft_comm_size(comm) == nranks,
	      "worker %d: comm says rank %d of %d", rank, weft_comm_rank(comm),
	      weft_comm_size(comm));
	for (int round = 0; round < 3; round++) {
		check_allreduce(comm, salt + round);
		check_allgather_bcast(comm, salt + round);
	}
	CHECK(weft_comm_destroy(comm) == WEFT_OK, "worker %d: destroy", rank);
	return 0;
}

typedef struct {
	pid_t pid;
	const char *what;
} worker_t;

/* Exec a fresh worker and hand it the id through a pipe on its stdin. */
static pid_t spawn(const weft_unique_id_t *id, const char *expect, int nranks, int rank, int salt)
{
	char a_n[16], a_r[16], a_s[16];
	int fds[2];
	pid_t pid;

	CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
	snprintf(a_n, sizeof(a_n), "%d", nranks);
	snprintf(a_r, sizeof(a_r), "%d", rank);
	snprintf(a_s, sizeof(a_s), "%d", salt);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *args[] = {(char *)self_path, "--worker", (char *)expect, a_n, a_r, a_s, NULL};
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		execv(self_path, args);
		_exit(127);
	}
	close(fds[0]);
	CHECK(write(fds[1], id, sizeof(*id)) == (ssize_t)sizeof(*id), "writing the id");
	close(fds[1]);
	return pid;
}

/* Wait for every worker, killing all of them if any outlives the deadline. */
static int reap(pid_t *pids, int n)
{
	time_t end = time(NULL) + WORKER_DEADLINE_S;
	int left = n, bad = 0;

	while (left > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);
		if (p > 0) {
			for (int i = 0; i < n; i++) {
				if (pids[i] != p)
					continue;
				pids[i] = 0;
				left--;
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
					fprintf(stderr, "worker %d failed (status 0x%x)\n", i,
						status);
					bad = 1;
				}
			}
			continue;
		}
		if (time(NULL) > end) {
			fprintf(stderr, "workers still running after %d s: killing them\n",
				WORKER_DEADLINE_S);
			for (int i = 0; i < n; i++) {
				if (pids[i] > 0) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
				}
			}
			return 1;
		}
		usleep(20000);
	}
	return bad;
}

static int run_job(int nranks)
{
	weft_unique_id_t id;
	pid_t pids[MAX_WORKERS];

	CHECK(weft_get_unique_id(&id) == WEFT_OK, "weft_get_unique_id");
	for (int r = 0; r < nranks; r++)
		pids[r] = spawn(&id, "ok", nranks, r, 0);
	CHECK(reap(pids, nranks) == 0, "a worker of the %d-rank job failed", nranks);
	printf("embedded job of %d ranks ok\n", nranks);
	return 0;
}

/* Two jobs at once with different data: crossed traffic would break the sums. */
static int run_two(void)
{
	weft_unique_id_t a, b;
	pid_t pids[MAX_WORKERS];
	int n = 0;

	CHECK(weft_get_unique_id(&a) == WEFT_OK && weft_get_unique_id(&b) == WEFT_OK,
	      "weft_get_unique_id");
	CHECK(memcmp(&a, &b, sizeof(a)) != 0, "two ids are identical");
	for (int r = 0; r < 3; r++)
		pids[n++] = spawn(&a, "ok", 3, r, 0);
	for (int r = 0; r < 2; r++)
		pids[n++] = spawn(&b, "ok", 2, r, 11);
	CHECK(reap(pids, n) == 0, "a worker of the concurrent jobs failed");
	printf("two concurrent embedded jobs ok\n");
	return 0;
}

static void expect_local(const weft_unique_id_t *id, int nranks, int rank, weft_status_t want,
			 const char *what)
{
	weft_comm_t *comm = (weft_comm_t *)&comm; /* must be overwritten with NULL */
	weft_status_t st = weft_comm_init_rank(&comm, nranks, id, rank);

	CHECK(st == want, "%s: %s, expected %s", what, weft_strerror(st), weft_strerror(want));
	CHECK(comm == NULL, "%s: *comm not NULL after a failure", what);
}

static int run_corrupt(void)
{
	weft_unique_id_t id, bad;
	pid_t pids[MAX_WORKERS];
	int n = 0;

	CHECK(weft_get_unique_id(&id) == WEFT_OK, "weft_get_unique_id");
	bad = id;
	bad.bytes[0] ^= 0x01; /* magic */
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "flipped magic");
	pids[n++] = spawn(&bad, "invalid", 2, 1, 0);
	bad = id;
	bad.bytes[5] = 16; /* token length: truncated */
	memset(bad.bytes + 16 + 16, 0, 16);
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "truncated token");
	pids[n++] = spawn(&bad, "invalid", 2, 1, 0);
	bad = id;
	bad.bytes[4]++; /* version */
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "unknown version");
	bad = id;
	bad.bytes[6] = 200; /* address length beyond its field */
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "address length");
	bad = id;
	bad.bytes[127] = 1; /* reserved */
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "reserved bytes");
	bad = id;
	bad.bytes[8] = bad.bytes[9] = 0; /* port 0 */
	expect_local(&bad, 2, 0, WEFT_ERR_INVALID_ARG, "port 0");
	memset(&bad, 0, sizeof(bad));
	expect_local(&bad, 1, 0, WEFT_ERR_INVALID_ARG, "all-zero id, one rank");
	memset(&bad, 0xff, sizeof(bad));
	pids[n++] = spawn(&bad, "invalid", 3, 2, 0);
	CHECK(reap(pids, n) == 0, "a worker given a corrupt id did not fail cleanly");
	/* The id itself is still good after all that. */
	for (int r = 0; r < 2; r++)
		pids[r] = spawn(&id, "ok", 2, r, 5);
	CHECK(reap(pids, 2) == 0, "the intact id no longer works");
	printf("corrupt ids refused ok\n");
	return 0;
}

static int run_badtoken(void)
{
	weft_unique_id_t id, bad;
	pid_t pids[MAX_WORKERS];

	/* The refused worker gives up quickly; the good job keeps the default. */
	CHECK(weft_get_unique_id(&id) == WEFT_OK, "weft_get_unique_id");
	bad = id;
	bad.bytes[16] ^= 0x5a;
	bad.bytes[47] ^= 0xa5;
	setenv("WEFT_CONNECT_TIMEOUT", "3", 1);
	pids[0] = spawn(&bad, "auth", 2, 0, 0);
	pids[1] = spawn(&bad, "auth", 2, 1, 0);
	CHECK(reap(pids, 2) == 0, "a worker with a changed token was not refused with AUTH");
	unsetenv("WEFT_CONNECT_TIMEOUT");
	for (int r = 0; r < 2; r++)
		pids[r] = spawn(&id, "ok", 2, r, 3);
	CHECK(reap(pids, 2) == 0, "the job failed after refused intruders");
	printf("wrong token refused ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	self_path = "/proc/self/exe";
	if (argc >= 2 && strcmp(argv[1], "--worker") == 0)
		return worker_main(argc, argv);
	clear_launcher_env();
	if (argc == 3 && strcmp(argv[1], "run") == 0) {
		int n = atoi(argv[2]);
		CHECK(n >= 1 && n <= MAX_WORKERS, "run: N in [1, %d]", MAX_WORKERS);
		return run_job(n);
	}
	if (argc == 2 && strcmp(argv[1], "two") == 0)
		return run_two();
	if (argc == 2 && strcmp(argv[1], "corrupt") == 0)
		return run_corrupt();
	if (argc == 2 && strcmp(argv[1], "badtoken") == 0)
		return run_badtoken();
	fprintf(stderr, "usage: %s run N | two | corrupt | badtoken\n", argv[0]);
	return 2;
}
