/* Unit tests for the link drivers (tests/unit/drivers): two links of one driver in one
 * process play ranks 0 and 1 of a job; argv[1] names the driver ("shm" or "tcp"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include "drivers/link.h"
#include "drivers/shm/shm_layout.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"

#define MAX_EV 64
#define WAIT_S 30.0 /* generous: a loaded 2-core machine */

static const wt_link_ops_t *ops;
static int job_counter;

struct pair {
	wt_link_t *l[2];
	char job[32];
};

/* Per-direction receive checker: frames carry their sequence number and a pattern. */
struct rxcheck {
	uint32_t next_seq;
	uint32_t frames;
	int errors;
	int err_peer;
	weft_status_t err_status;
};

static wt_link_config_t make_cfg(int rank, int size, const char *job, const char *token,
				 double timeout)
{
	wt_link_config_t c;

	memset(&c, 0, sizeof(c));
	c.rank = rank;
	c.size = size;
	c.job_id = job;
	wt_util_key_from_token(&c.key, token);
	c.connect_timeout = timeout;
	c.bind_addr = NULL;
	return c;
}

static void new_job(char *job, size_t len)
{
	snprintf(job, len, "t%d-%d", (int)getpid(), job_counter++);
}

static wt_link_t *open_link(int rank, int size, const char *job, const char *token, double timeout)
{
	wt_link_config_t c = make_cfg(rank, size, job, token, timeout);
	wt_link_t *l = NULL;

	assert_int_equal(ops->open(&c, &l), WEFT_OK);
	assert_non_null(l);
	assert_ptr_equal(wt_link_ops(l), ops);
	return l;
}

static void get_addr(wt_link_t *l, uint8_t *blob, size_t *len)
{
	*len = WT_LINK_ADDR_MAX;
	assert_int_equal(ops->address(l, blob, len), WEFT_OK);
	assert_true(*len > 0 && *len <= WT_LINK_ADDR_MAX);
}

static void pair_connect(struct pair *p)
{
	uint8_t b[2][WT_LINK_ADDR_MAX];
	size_t len[2];

	get_addr(p->l[0], b[0], &len[0]);
	get_addr(p->l[1], b[1], &len[1]);
	assert_int_equal(ops->connect(p->l[0], 1, b[1], len[1]), WEFT_OK);
	assert_int_equal(ops->connect(p->l[1], 0, b[0], len[0]), WEFT_OK);
}

static void pair_open(struct pair *p, const char *tok0, const char *tok1, double timeout)
{
	new_job(p->job, sizeof(p->job));
	p->l[0] = open_link(0, 2, p->job, tok0, timeout);
	p->l[1] = open_link(1, 2, p->job, tok1, timeout);
	pair_connect(p);
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->l[i])
			ops->close(p->l[i]);
		p->l[i] = NULL;
	}
}

static size_t frame_len(uint32_t seq, size_t max_frame)
{
	if (seq % 997 == 3)
		return max_frame;
	return 8 + ((seq * 2654435761u) >> 7) % 3000;
}

static void frame_fill(uint8_t *buf, uint32_t seq, size_t len)
{
	memcpy(buf, &seq, 4);
	for (size_t j = 4; j < len; j++)
		buf[j] = (uint8_t)(seq * 131u + j * 7u);
}

static int frame_ok(const uint8_t *buf, size_t len, uint32_t seq, size_t max_frame)
{
	uint32_t got;

	if (len != frame_len(seq, max_frame) || len < 4)
		return 0;
	memcpy(&got, buf, 4);
	if (got != seq)
		return 0;
	for (size_t j = 4; j < len; j++) {
		if (buf[j] != (uint8_t)(seq * 131u + j * 7u))
			return 0;
	}
	return 1;
}

/* Polls link once; checks every frame against the expected sequence. */
static int pump(wt_link_t *l, int from, struct rxcheck *rc)
{
	wt_link_event_t ev[MAX_EV];
	int n = ops->poll(l, ev, MAX_EV);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == WT_LINK_EV_PEER_ERROR) {
			rc->errors++;
			rc->err_peer = ev[i].peer;
			rc->err_status = ev[i].status;
			continue;
		}
		assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
		assert_int_equal(ev[i].peer, from);
		if (!frame_ok(ev[i].data, ev[i].len, rc->next_seq, wt_link_max_frame(l)))
			fail_msg("frame %u from %d: bad length %zu or content", rc->next_seq, from,
				 ev[i].len);
		rc->next_seq++;
		rc->frames++;
	}
	return n;
}

static weft_status_t send_seq(wt_link_t *l, int peer, uint32_t seq, uint8_t *buf)
{
	size_t len = frame_len(seq, wt_link_max_frame(l));
	struct iovec iov = {buf, len};

	frame_fill(buf, seq, len);
	return ops->send(l, peer, &iov, 1, NULL);
}

/* Sends count frames each way, polling both ends, and checks all of them. */
static void exchange(struct pair *p, uint32_t count)
{
	size_t mf = wt_link_max_frame(p->l[0]);
	uint8_t *buf = malloc(mf);
	struct rxcheck rc[2] = {{0}};
	uint32_t sent[2] = {0, 0};
	uint64_t deadline = wt_util_deadline_in(WAIT_S * 4);

	assert_non_null(buf);
	while (rc[0].frames < count || rc[1].frames < count) {
		for (int s = 0; s < 2; s++) {
			for (int k = 0; k < 64 && sent[s] < count; k++) {
				weft_status_t st = send_seq(p->l[s], 1 - s, sent[s], buf);

				if (st == WT_AGAIN)
					break;
				assert_int_equal(st, WEFT_OK);
				sent[s]++;
			}
		}
		pump(p->l[0], 1, &rc[0]);
		pump(p->l[1], 0, &rc[1]);
		assert_int_equal(rc[0].errors + rc[1].errors, 0);
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_int_equal(rc[0].frames, count);
	assert_int_equal(rc[1].frames, count);
	free(buf);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int dev_shm_weft_entries(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, "weft") != NULL;
	closedir(d);
	return n;
}

static weft_status_t other_error; /* first PEER_ERROR seen on the bystander link */

/* Polls l until a PEER_ERROR arrives (frames are ignored) and returns its status; also
 * polls other (its handshakes need it), keeping its first error in other_error. */
static weft_status_t wait_peer_error(wt_link_t *l, int peer, wt_link_t *other, double seconds)
{
	uint64_t deadline = wt_util_deadline_in(seconds);
	wt_link_event_t ev[MAX_EV];

	other_error = WEFT_OK;
	while (!wt_util_deadline_passed(deadline)) {
		int n = ops->poll(l, ev, MAX_EV);
		int m = other ? ops->poll(other, ev + n, MAX_EV - n) : 0;

		assert_true(n >= 0 && m >= 0);
		for (int i = n; i < n + m; i++) {
			if (ev[i].type == WT_LINK_EV_PEER_ERROR && other_error == WEFT_OK)
				other_error = ev[i].status;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].type == WT_LINK_EV_PEER_ERROR) {
				assert_int_equal(ev[i].peer, peer);
				return ev[i].status;
			}
		}
		if (n + m == 0)
			wt_util_sleep_ns(1000000);
	}
	fail_msg("no PEER_ERROR for peer %d within %.0f s", peer, seconds);
	return WEFT_OK;
}

/* ---- tests for both drivers ---- */

static void test_small_both_ways(void **state)
{
	struct pair p;
	int fds = count_fds();

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	assert_true(wt_link_max_frame(p.l[0]) >= 65536);
	exchange(&p, 50);
	pair_close(&p);
	assert_int_equal(count_fds(), fds);
}

static void test_many_frames(void **state)
{
	struct pair p;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	/* About 150 MB each way: the shm ring wraps dozens of times. */
	exchange(&p, 100000);
	pair_close(&p);
}

static void test_backpressure(void **state)
{
	struct pair p;
	struct rxcheck rc = {0}, other = {0};
	uint8_t *buf;
	uint32_t sent = 0, target;
	weft_status_t st = WEFT_OK;
	uint64_t deadline;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	buf = malloc(wt_link_max_frame(p.l[0]));
	assert_non_null(buf);
	/* Connection up, and rank 1 has consumed the frames numbered 0 and 1. */
	exchange(&p, 2);
	sent = rc.next_seq = rc.frames = 2;
	/* The receiver does not poll: the sender must run out of room. */
	for (int i = 0; i < 2000000 && st == WEFT_OK; i++) {
		st = send_seq(p.l[0], 1, sent, buf);
		if (st == WEFT_OK)
			sent++;
		if (i % 64 == 63)
			ops->poll(p.l[0], NULL, 0);
	}
	assert_int_equal(st, WT_AGAIN);
	assert_true(sent > 10);
	/* Nothing was taken: a retry still fails until the receiver drains. */
	assert_int_equal(send_seq(p.l[0], 1, sent, buf), WT_AGAIN);
	/* Once the receiver polls, everything sent arrives and sending resumes. */
	target = sent + 500;
	deadline = wt_util_deadline_in(WAIT_S);
	while (rc.frames < target) {
		if (sent < target && send_seq(p.l[0], 1, sent, buf) == WEFT_OK)
			sent++;
		pump(p.l[0], 1, &other);
		pump(p.l[1], 0, &rc);
		assert_int_equal(rc.errors + other.errors, 0);
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_int_equal(sent, target);
	assert_int_equal(rc.frames, sent);
	free(buf);
	pair_close(&p);
}

static void test_iov_pieces(void **state)
{
	struct pair p;
	const char *a = "alpha-", *b = "", *c = "gamma-", *d = "delta";
	struct iovec iov[4] = {
	    {(void *)a, strlen(a)}, {(void *)b, 0}, {(void *)c, strlen(c)}, {(void *)d, strlen(d)}};
	wt_link_event_t ev[MAX_EV];
	uint64_t deadline;
	int got = 0;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	assert_int_equal(ops->send(p.l[0], 1, iov, 4, NULL), WEFT_OK);
	assert_int_equal(ops->send(p.l[0], 1, iov, 0, NULL), WEFT_OK); /* empty frame */
	deadline = wt_util_deadline_in(WAIT_S);
	while (got < 2) {
		int n;

		ops->poll(p.l[0], ev, MAX_EV);
		n = ops->poll(p.l[1], ev, MAX_EV);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
			if (got == 0) {
				assert_int_equal(ev[i].len, 17);
				assert_memory_equal(ev[i].data, "alpha-gamma-delta", 17);
			} else {
				assert_int_equal(ev[i].len, 0);
			}
			got++;
		}
		assert_false(wt_util_deadline_passed(deadline));
	}
	/* Oversized and malformed iovs are refused. */
	{
		size_t mf = wt_link_max_frame(p.l[0]);
		uint8_t *big = calloc(1, mf + 1);
		struct iovec biov = {big, mf + 1};

		assert_int_equal(ops->send(p.l[0], 1, &biov, 1, NULL), WEFT_ERR_INVALID_ARG);
		assert_int_equal(ops->send(p.l[0], 1, NULL, 1, NULL), WEFT_ERR_INVALID_ARG);
		assert_int_equal(ops->send(p.l[0], 5, iov, 1, NULL), WEFT_ERR_INVALID_ARG);
		free(big);
	}
	pair_close(&p);
}

static void test_sleeping(void **state)
{
	struct pair p;
	struct rxcheck rc = {0};
	uint8_t buf[16] = "wake up";
	struct iovec iov = {buf, sizeof(buf)};
	struct pollfd pfd;
	wt_link_event_t ev[MAX_EV];
	int n;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	assert_true(ops->caps & WT_LINK_CAP_HAS_FD);
	exchange(&p, 3);
	for (int i = 0; i < 10; i++) {
		pump(p.l[0], 1, &rc);
		pump(p.l[1], 0, &rc);
	}
	assert_int_equal(rc.errors, 0);
	pfd.fd = ops->fd(p.l[1]);
	pfd.events = POLLIN;
	assert_true(pfd.fd >= 0);
	assert_int_equal(ops->arm(p.l[1]), 0);
	assert_int_equal(poll(&pfd, 1, 200), 0); /* idle: nothing wakes it */
	assert_int_equal(ops->send(p.l[0], 1, &iov, 1, NULL), WEFT_OK);
	assert_int_equal(poll(&pfd, 1, (int)(WAIT_S * 1000)), 1);
	ops->disarm(p.l[1]);
	n = ops->poll(p.l[1], ev, MAX_EV);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, WT_LINK_EV_FRAME);
	assert_int_equal(ev[0].len, sizeof(buf));
	assert_memory_equal(ev[0].data, buf, sizeof(buf));
	/* A frame already waiting: arm() says so, or the fd is readable at once. */
	assert_int_equal(ops->send(p.l[0], 1, &iov, 1, NULL), WEFT_OK);
	if (strcmp(ops->name, "shm") == 0)
		assert_int_equal(ops->arm(p.l[1]), 1);
	if (ops->arm(p.l[1]) == 0) {
		assert_int_equal(poll(&pfd, 1, (int)(WAIT_S * 1000)), 1);
		ops->disarm(p.l[1]);
	}
	n = ops->poll(p.l[1], ev, MAX_EV);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].len, sizeof(buf));
	/* Drained again: the fd goes quiet. */
	for (int i = 0; i < 5; i++)
		assert_int_equal(ops->poll(p.l[1], ev, MAX_EV), 0);
	assert_int_equal(ops->arm(p.l[1]), 0);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	ops->disarm(p.l[1]);
	pair_close(&p);
}

static void test_wrong_key(void **state)
{
	struct pair bad, good;
	struct rxcheck rc = {0};
	weft_status_t st;

	(void)state;
	pair_open(&bad, "right", "wrong", 2.0);
	/* The dialer (rank 1) or both ends refuse; no frame ever flows. */
	st = wait_peer_error(bad.l[1], 0, bad.l[0], WAIT_S);
	assert_int_equal(st, WEFT_ERR_AUTH);
	st = other_error;
	if (st == WEFT_OK)
		st = wait_peer_error(bad.l[0], 1, NULL, WAIT_S);
	assert_true(st == WEFT_ERR_AUTH || st == WEFT_ERR_TIMEOUT);
	{
		uint8_t b = 0;
		struct iovec iov = {&b, 1};

		assert_int_equal(ops->send(bad.l[1], 0, &iov, 1, NULL), WEFT_ERR_AUTH);
	}
	pair_close(&bad);
	pair_open(&good, "right", "right", WAIT_S);
	exchange(&good, 20);
	(void)rc;
	pair_close(&good);
}

static void test_peer_closed(void **state)
{
	struct pair p;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	exchange(&p, 5);
	ops->close(p.l[1]);
	p.l[1] = NULL;
	assert_int_equal(wait_peer_error(p.l[0], 1, NULL, WAIT_S), WEFT_ERR_PEER_FAILED);
	{
		uint8_t b = 0;
		struct iovec iov = {&b, 1};

		assert_int_equal(ops->send(p.l[0], 1, &iov, 1, NULL), WEFT_ERR_PEER_FAILED);
	}
	pair_close(&p);
}

static void test_malformed_blob(void **state)
{
	char job[32];
	wt_link_t *l0, *l1;
	uint8_t blob[WT_LINK_ADDR_MAX], bad[WT_LINK_ADDR_MAX];
	size_t len;

	(void)state;
	new_job(job, sizeof(job));
	l0 = open_link(0, 3, job, "tok", WAIT_S);
	l1 = open_link(1, 3, job, "tok", WAIT_S);
	get_addr(l1, blob, &len);
	assert_int_equal(ops->connect(l0, 1, blob, len - 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->connect(l0, 1, NULL, len), WEFT_ERR_INVALID_ARG);
	memcpy(bad, blob, len);
	bad[0] ^= 0xff; /* magic */
	assert_int_equal(ops->connect(l0, 1, bad, len), WEFT_ERR_INVALID_ARG);
	/* The right blob for the wrong rank. */
	assert_int_equal(ops->connect(l0, 2, blob, len), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->connect(l0, 0, blob, len), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->connect(l0, 7, blob, len), WEFT_ERR_INVALID_ARG);
	/* Every single-byte corruption is either refused or harmless to parse. */
	/* tcp: bytes 20.. are the IP, never corrupted: traffic stays on loopback. */
	for (size_t i = 0; i < (strcmp(ops->name, "tcp") == 0 ? 20 : len); i++) {
		wt_link_t *t = open_link(2, 3, job, "tok", 1.0);
		weft_status_t st;

		memcpy(bad, blob, len);
		bad[i] ^= 0x5a;
		st = ops->connect(t, 1, bad, len);
		assert_true(st == WEFT_OK || st == WEFT_ERR_INVALID_ARG);
		ops->close(t);
	}
	/* Bad configurations are refused at open. */
	{
		wt_link_config_t c = make_cfg(3, 3, job, "tok", 1.0);
		wt_link_t *t = NULL;

		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		c = make_cfg(0, 2, "", "tok", 1.0);
		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		c = make_cfg(0, 2, "has space", "tok", 1.0);
		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		assert_null(t);
	}
	ops->close(l0);
	ops->close(l1);
}

/* ---- shm only ---- */

static void test_shm_get(void **state)
{
	struct pair p;
	uint8_t *src = malloc(1 << 20), *dst = malloc(1 << 20);
	wt_link_remote_t rem;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < (1 << 20); i++)
		src[i] = (uint8_t)(i * 13 + 5);
	pair_open(&p, "tok", "tok", WAIT_S);
	rem.addr = (uint64_t)(uintptr_t)src;
	rem.len = 1 << 20;
	memset(dst, 0, 1 << 20);
	assert_int_equal(ops->get(p.l[0], 1, dst, &rem, 4096 + 17, 500000), WEFT_OK);
	assert_memory_equal(dst, src + 4096 + 17, 500000);
	assert_int_equal(ops->get(p.l[1], 0, dst, &rem, 0, 1 << 20), WEFT_OK);
	assert_memory_equal(dst, src, 1 << 20);
	assert_int_equal(ops->get(p.l[0], 1, dst, &rem, 1, 1 << 20), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->get(p.l[0], 1, dst, &rem, (size_t)-1, 2), WEFT_ERR_INVALID_ARG);
	rem.addr = 8; /* unmapped in the peer */
	assert_int_equal(ops->get(p.l[0], 1, dst, &rem, 0, 16), WEFT_ERR_INVALID_ARG);
	pair_close(&p);
	free(src);
	free(dst);
}

static void write_all_fd(int fd, const void *buf, size_t len)
{
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

static void read_all_fd(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

static void child_run(const char *job, int to_parent, int from_parent)
{
	wt_link_config_t c = make_cfg(1, 2, job, "tok", WAIT_S);
	wt_link_t *l = NULL;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len = sizeof(blob);
	uint32_t plen;

	if (ops->open(&c, &l) != WEFT_OK || ops->address(l, blob, &len) != WEFT_OK)
		_exit(2);
	plen = (uint32_t)len;
	if (write(to_parent, &plen, 4) != 4 || write(to_parent, blob, len) != (ssize_t)len)
		_exit(3);
	if (read(from_parent, &plen, 4) != 4 || plen > sizeof(blob) ||
	    read(from_parent, blob, plen) != (ssize_t)plen)
		_exit(4);
	if (ops->connect(l, 0, blob, plen) != WEFT_OK)
		_exit(5);
	{
		uint8_t hi[5] = "hello";
		struct iovec iov = {hi, 5};

		if (ops->send(l, 0, &iov, 1, NULL) != WEFT_OK)
			_exit(6);
	}
	if (write(to_parent, "R", 1) != 1)
		_exit(7);
	for (;;)
		pause(); /* killed by the parent */
}

static void test_shm_child_killed(void **state)
{
	int up[2], down[2];
	char job[32];
	pid_t pid;
	wt_link_t *l;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;
	uint32_t plen;
	char r;
	wt_link_event_t ev[MAX_EV];
	uint64_t t0;
	int frames = 0, n;

	(void)state;
	assert_int_equal(dev_shm_weft_entries(), 0);
	new_job(job, sizeof(job));
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		child_run(job, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	/* Opened after fork so the child inherits none of our segment. */
	l = open_link(0, 2, job, "tok", WAIT_S);
	read_all_fd(up[0], &plen, 4);
	assert_true(plen <= sizeof(blob));
	read_all_fd(up[0], blob, plen);
	assert_int_equal(ops->connect(l, 1, blob, plen), WEFT_OK);
	get_addr(l, blob, &len);
	plen = (uint32_t)len;
	write_all_fd(down[1], &plen, 4);
	write_all_fd(down[1], blob, len);
	read_all_fd(up[0], &r, 1);
	assert_int_equal(r, 'R');
	kill(pid, SIGKILL);
	t0 = wt_util_time_ns();
	/* The frame sent before the kill still arrives, then exactly one error. */
	for (;;) {
		n = ops->poll(l, ev, MAX_EV);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == WT_LINK_EV_FRAME) {
				assert_int_equal(ev[i].len, 5);
				assert_memory_equal(ev[i].data, "hello", 5);
				frames++;
				continue;
			}
			assert_int_equal(ev[i].type, WT_LINK_EV_PEER_ERROR);
			assert_int_equal(ev[i].peer, 1);
			assert_int_equal(ev[i].status, WEFT_ERR_PEER_FAILED);
			goto done;
		}
		assert_true(wt_util_time_ns() - t0 < (uint64_t)(WAIT_S * 1e9));
		wt_util_sleep_ns(1000000);
	}
done:
	assert_int_equal(frames, 1);
	for (int i = 0; i < 20; i++) {
		n = ops->poll(l, ev, MAX_EV);
		assert_int_equal(n, 0);
	}
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	ops->close(l);
	close(up[0]);
	close(down[1]);
	assert_int_equal(dev_shm_weft_entries(), 0);
}

/* A frame length past the ring end, written into rank 1's receive ring for rank 0. */
static void test_shm_corrupt_ring(void **state)
{
	struct pair p;
	struct wt_shm_blob b;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;
	char path[64];
	int fd;
	struct wt_shm_ring_ctl *ctl;
	uint8_t *data;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	exchange(&p, 2);
	get_addr(p.l[1], blob, &len);
	assert_int_equal(len, sizeof(b));
	memcpy(&b, blob, sizeof(b));
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", b.pid, b.memfd);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	ctl = mmap(NULL, WT_SHM_RING_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)WT_SHM_RING_OFF);
	assert_true(ctl != MAP_FAILED);
	close(fd);
	data = (uint8_t *)ctl + WT_SHM_ALIGN;
	{
		uint64_t head = atomic_load(&ctl->head);
		uint32_t huge = WT_SHM_RING_CAP - 8;

		memcpy(data + (head & (WT_SHM_RING_CAP - 1)), &huge, 4);
		atomic_store(&ctl->head, head + 64);
	}
	assert_int_equal(wait_peer_error(p.l[1], 0, NULL, WAIT_S), WEFT_ERR_PROTOCOL);
	munmap(ctl, WT_SHM_RING_STRIDE);
	pair_close(&p);
}

/* ---- tcp only ---- */

static void test_tcp_closed_port(void **state)
{
	char job[32];
	wt_link_t *gone, *l;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;
	uint64_t t0;

	(void)state;
	new_job(job, sizeof(job));
	gone = open_link(0, 2, job, "tok", 1.0);
	get_addr(gone, blob, &len);
	ops->close(gone); /* its port is closed now */
	l = open_link(1, 2, job, "tok", 1.0);
	t0 = wt_util_time_ns();
	assert_int_equal(ops->connect(l, 0, blob, len), WEFT_OK);
	assert_int_equal(wait_peer_error(l, 0, NULL, WAIT_S), WEFT_ERR_TIMEOUT);
	assert_true(wt_util_time_ns() - t0 >= 900000000ull);
	ops->close(l);
}

/* Strangers connecting with garbage or the wrong key do not disturb a working pair. */
static void test_tcp_strangers(void **state)
{
	struct pair p;
	wt_link_t *stranger;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;
	struct sockaddr_in sa = {0};
	int raw[3];

	(void)state;
	new_job(p.job, sizeof(p.job));
	p.l[0] = open_link(0, 2, p.job, "tok", WAIT_S);
	get_addr(p.l[0], blob, &len);
	/* Raw sockets: one sends garbage, one a truncated hello, one nothing. */
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(&sa.sin_port, blob + 16, 2);
	for (int i = 0; i < 3; i++) {
		raw[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(raw[i] >= 0);
		assert_int_equal(connect(raw[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	assert_int_equal(write(raw[0],
			       "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			       "xxxxxxxxxxxxxxxxxxxxxxx",
			       74),
			 74);
	assert_int_equal(write(raw[1], "WTCPHEL1", 8), 8);
	stranger = open_link(1, 2, p.job, "not-the-key", WAIT_S);
	assert_int_equal(ops->connect(stranger, 0, blob, len), WEFT_OK);
	assert_int_equal(wait_peer_error(stranger, 0, p.l[0], WAIT_S), WEFT_ERR_AUTH);
	assert_int_equal(other_error, WEFT_OK);
	ops->close(stranger);
	p.l[1] = open_link(1, 2, p.job, "tok", WAIT_S);
	pair_connect(&p);
	exchange(&p, 200);
	for (int i = 0; i < 3; i++)
		close(raw[i]);
	exchange(&p, 10);
	pair_close(&p);
}

/* Plays rank 1 by hand: a correct handshake, one good frame, then a length past
 * max_frame, which must drop the peer with WEFT_ERR_PROTOCOL. */
static void test_tcp_hostile_length(void **state)
{
	char job[32], desc[64];
	wt_link_t *l;
	uint8_t blob[WT_LINK_ADDR_MAX], m[128], nonces[64];
	size_t len;
	struct sockaddr_in sa = {0};
	wt_util_key_t key;
	wt_link_event_t ev[MAX_EV];
	uint32_t v;
	int fd, got = 0;
	uint64_t deadline;

	(void)state;
	new_job(job, sizeof(job));
	l = open_link(0, 2, job, "tok", WAIT_S);
	{
		/* Only for a valid rank-1 address: rank 0 waits to be dialed anyway. */
		wt_link_t *t = open_link(1, 2, job, "tok", WAIT_S);

		get_addr(t, blob, &len);
		assert_int_equal(ops->connect(l, 1, blob, len), WEFT_OK);
		ops->close(t);
	}
	get_addr(l, blob, &len);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(&sa.sin_port, blob + 16, 2);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	memcpy(m, "WTCPHEL1", 8);
	v = htonl(1);
	memcpy(m + 8, &v, 4); /* version */
	v = htonl(2);
	memcpy(m + 12, &v, 4); /* size */
	v = htonl(1);
	memcpy(m + 16, &v, 4); /* dialer */
	v = htonl(0);
	memcpy(m + 20, &v, 4); /* acceptor */
	wt_util_random(nonces, 32);
	memcpy(m + 24, nonces, 32);
	write_all_fd(fd, m, 56);
	deadline = wt_util_deadline_in(WAIT_S);
	for (size_t have = 0; have < 80;) {
		ssize_t r = recv(fd, m + have, 80 - have, MSG_DONTWAIT);

		if (r > 0)
			have += (size_t)r;
		else
			assert_int_equal(ops->poll(l, ev, MAX_EV), 0);
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_memory_equal(m, "WTCPACK1", 8);
	memcpy(nonces + 32, m + 16, 32);
	wt_util_key_from_token(&key, "tok");
	snprintf(desc, sizeof(desc), "%s|1|0|2", job);
	memcpy(m, "WTCPFIN1", 8);
	wt_util_mac(&key, "weft-tcp-dial-v1", nonces, 64, desc, strlen(desc), m + 8);
	v = htonl(3);
	memcpy(m + 40, &v, 4);
	memcpy(m + 44, "abc", 3);
	v = htonl((uint32_t)wt_link_max_frame(l) + 1);
	memcpy(m + 47, &v, 4);
	write_all_fd(fd, m, 51);
	while (got == 0) {
		int n = ops->poll(l, ev, MAX_EV);

		for (int i = 0; i < n; i++) {
			if (ev[i].type == WT_LINK_EV_FRAME) {
				assert_int_equal(ev[i].len, 3);
				assert_memory_equal(ev[i].data, "abc", 3);
				continue;
			}
			assert_int_equal(ev[i].type, WT_LINK_EV_PEER_ERROR);
			assert_int_equal(ev[i].peer, 1);
			assert_int_equal(ev[i].status, WEFT_ERR_PROTOCOL);
			got = 1;
		}
		assert_false(wt_util_deadline_passed(deadline));
	}
	close(fd);
	ops->close(l);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest common[] = {
	    cmocka_unit_test(test_small_both_ways), cmocka_unit_test(test_iov_pieces),
	    cmocka_unit_test(test_sleeping),	    cmocka_unit_test(test_backpressure),
	    cmocka_unit_test(test_many_frames),	    cmocka_unit_test(test_wrong_key),
	    cmocka_unit_test(test_peer_closed),	    cmocka_unit_test(test_malformed_blob),
	};
	const struct CMUnitTest shm_only[] = {
	    cmocka_unit_test(test_shm_get),
	    cmocka_unit_test(test_shm_corrupt_ring),
	    cmocka_unit_test(test_shm_child_killed),
	};
	const struct CMUnitTest tcp_only[] = {
	    cmocka_unit_test(test_tcp_closed_port),
	    cmocka_unit_test(test_tcp_strangers),
	    cmocka_unit_test(test_tcp_hostile_length),
	};
	const char *name = argc > 1 ? argv[1] : "shm";
	int fails;

	if (wt_util_crypto_init() != WEFT_OK)
		return 1;
	ops = wt_link_find(name);
	if (ops == NULL) {
		fprintf(stderr, "driver %s is not built; skipping\n", name);
		return 77;
	}
	assert_int_equal(ops->size, sizeof(wt_link_ops_t));
	if (getenv("WT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("WT_TEST_FILTER"));
	fails =
	    _cmocka_run_group_tests(name, common, sizeof(common) / sizeof(common[0]), NULL, NULL);
	if (strcmp(name, "shm") == 0)
		fails += cmocka_run_group_tests_name("shm_only", shm_only, NULL, NULL);
	else
		fails += cmocka_run_group_tests_name("tcp_only", tcp_only, NULL, NULL);
	return fails;
}
