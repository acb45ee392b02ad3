/* Unit tests for the link drivers (tests/unit/drivers): two links of one driver in one
 * process play ranks 0 and 1 of a job; argv[1] names the driver ("shm", "tcp", "udp" or
 * "dpdk"). */
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
#include "tests/unit/drivers/fd_io.h"
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

/* Without RELIABLE a driver may lose frames under overload; the common tests send it only
 * a little traffic on loopback, far below its socket buffers, where nothing is lost. */
static int reliable(void)
{
	return (ops->caps & WT_LINK_CAP_RELIABLE) != 0;
}

/* A batching driver (udp) hands queued frames to the kernel in poll() and arm(); a
 * progress engine always calls one of them before it sleeps. */
static void push(wt_link_t *l)
{
	if (ops->arm(l) == 0)
		ops->disarm(l);
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

/* Set by test_shm_big_frames: mostly frames near the largest, with small ones between, so
 * the producer keeps leaving its hot window (shm.c) with large frames at every offset. */
static int big_frames;

static size_t frame_len(uint32_t seq, size_t max_frame)
{
	if (big_frames)
		return seq % 3 == 2 ? 8 + seq % 61 : max_frame - (seq * 2654435761u) % 40000;
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
	/* Datagram drivers are bounded by the MTU; their own tests check the exact value. */
	assert_true(wt_link_max_frame(p.l[0]) >= (reliable() ? 65536 : 512));
	exchange(&p, 50);
	pair_close(&p);
	/* DPDK 22.11's net_memif keeps the listening socket of a detached server port open
	 * (and registered with the EAL's interrupt thread, so weft cannot close it). */
	if (strcmp(ops->name, "dpdk") == 0)
		assert_true(count_fds() <= fds + 1);
	else
		assert_int_equal(count_fds(), fds);
}

static void test_many_frames(void **state)
{
	struct pair p;

	(void)state;
	if (!reliable())
		skip(); /* may lose frames by design; test_udp_stream is the lossy version */
	pair_open(&p, "tok", "tok", WAIT_S);
	/* About 150 MB each way: the shm ring wraps dozens of times. */
	exchange(&p, 100000);
	pair_close(&p);
}

/* ---- shm only (the large-frame ring walk) ---- */

static void test_shm_big_frames(void **state)
{
	struct pair p;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	/* ~160 MB each way in frames of up to 256 KiB: the ring goes back to its start past
	 * the hot window (shm.c) some hundred times, each frame checked byte for byte. */
	big_frames = 1;
	exchange(&p, 1200);
	big_frames = 0;
	pair_close(&p);
}

/* WEFT_SHM_STORES fixes how large frames are written into the rings: each way carries the
 * big-frame walk byte for byte, and a value that is not a way fails the open. */
static void test_shm_stores_setting(void **state)
{
	static const char *const ways[] = {"stream", "plain", "auto"};
	static const char *const bad[] = {"nt", "Stream", "plain ", "auto1"};
	struct pair p;

	(void)state;
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		setenv("WEFT_SHM_STORES", ways[i], 1);
		pair_open(&p, "tok", "tok", WAIT_S);
		big_frames = 1;
		exchange(&p, 300);
		big_frames = 0;
		pair_close(&p);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wt_link_config_t c = make_cfg(0, 2, "bad-stores", "tok", WAIT_S);
		wt_link_t *l = NULL;

		setenv("WEFT_SHM_STORES", bad[i], 1);
		assert_int_equal(ops->open(&c, &l), WEFT_ERR_INVALID_ARG);
		assert_null(l);
	}
	unsetenv("WEFT_SHM_STORES");
}

/* A receiver going to sleep releases what its last poll delivered: a producer out of room
 * must not wait for the receiver's next wake-up (which only the producer's data would
 * bring). */
static void test_shm_arm_releases(void **state)
{
	struct pair p;
	struct rxcheck rc = {0};
	uint8_t *buf;
	uint32_t sent;
	int n = 0;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	exchange(&p, 2);
	buf = malloc(wt_link_max_frame(p.l[0]));
	assert_non_null(buf);
	big_frames = 1;
	sent = rc.next_seq = 2;
	while (send_seq(p.l[0], 1, sent, buf) == WEFT_OK)
		sent++;
	assert_true(sent > 4 && sent - 2 < MAX_EV);
	push(p.l[0]);
	/* One poll takes every frame (they stay in the ring until released)... */
	for (uint64_t dl = wt_util_deadline_in(WAIT_S); n == 0;) {
		n = pump(p.l[1], 0, &rc);
		assert_false(wt_util_deadline_passed(dl));
	}
	assert_int_equal(rc.frames, sent - 2);
	assert_int_equal(send_seq(p.l[0], 1, sent, buf), WT_AGAIN);
	/* ...and arming to sleep gives the room back without another poll. */
	assert_int_equal(ops->arm(p.l[1]), 0);
	assert_int_equal(send_seq(p.l[0], 1, sent, buf), WEFT_OK);
	ops->disarm(p.l[1]);
	big_frames = 0;
	free(buf);
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
	if (!reliable())
		skip(); /* an unreliable receiver that does not poll drops, it does not push back */
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
	push(p.l[0]);
	assert_int_equal(poll(&pfd, 1, (int)(WAIT_S * 1000)), 1);
	ops->disarm(p.l[1]);
	n = ops->poll(p.l[1], ev, MAX_EV);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, WT_LINK_EV_FRAME);
	assert_int_equal(ev[0].len, sizeof(buf));
	assert_memory_equal(ev[0].data, buf, sizeof(buf));
	/* A frame already waiting: arm() says so, or the fd is readable at once. */
	assert_int_equal(ops->send(p.l[0], 1, &iov, 1, NULL), WEFT_OK);
	push(p.l[0]);
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
	if (!reliable())
		skip(); /* no handshake in the driver: the reliability layer proves the token */
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
	if (!reliable())
		skip(); /* no connection to lose: the reliability layer's heartbeats notice */
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

static size_t blob_ip_offset(size_t len)
{
	if (strcmp(ops->name, "tcp") == 0)
		return 20;
	if (strcmp(ops->name, "udp") == 0)
		return 24;
	return len;
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
	/* The IP (tcp: bytes 20.., udp: 24..) is never corrupted: traffic stays on loopback. */
	for (size_t i = 0; i < blob_ip_offset(len); i++) {
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

static void child_run(const char *job, int to_parent, int from_parent)
{
	wt_link_config_t c = make_cfg(1, 2, job, "tok", WAIT_S);
	wt_link_t *l = NULL;
	int rc = child_link_up(ops, &c, &l, to_parent, from_parent);

	if (rc != 0)
		_exit(rc);
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

/* rank 1's receive ring for rank 0, mapped here (both links live in this process). */
static struct wt_shm_ring_ctl *rx_ring_of(wt_link_t *l)
{
	struct wt_shm_blob b;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;
	char path[64];
	int fd;
	void *ctl;

	get_addr(l, blob, &len);
	assert_int_equal(len, sizeof(b));
	memcpy(&b, blob, sizeof(b));
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", b.pid, b.memfd);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	ctl = mmap(NULL, WT_SHM_RING_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)WT_SHM_RING_OFF);
	assert_true(ctl != MAP_FAILED);
	close(fd);
	return ctl;
}

/* A frame length past the ring end, written into rank 1's receive ring for rank 0. */
static void test_shm_corrupt_ring(void **state)
{
	struct pair p;
	struct wt_shm_ring_ctl *ctl;
	uint8_t *data;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	exchange(&p, 2);
	ctl = rx_ring_of(p.l[1]);
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

static weft_status_t send_small(wt_link_t *l, uint32_t i, size_t len)
{
	uint8_t buf[8192];
	struct iovec iov = {buf, len};

	for (size_t j = 0; j < len; j++)
		buf[j] = (uint8_t)(i * 31u + j);
	return ops->send(l, 1, &iov, 1, NULL);
}

/* Polls rank 1 until it has taken frames up to number upto from rank 0, each checked
 * against send_small. */
static void recv_small(wt_link_t *l, uint32_t *next, uint32_t upto, size_t len)
{
	wt_link_event_t ev[MAX_EV];
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	while (*next < upto) {
		int n = ops->poll(l, ev, MAX_EV);

		assert_true(n >= 0);
		for (int k = 0; k < n; k++) {
			assert_int_equal(ev[k].type, WT_LINK_EV_FRAME);
			assert_int_equal(ev[k].len, len);
			for (size_t j = 0; j < len; j++)
				assert_int_equal(((const uint8_t *)ev[k].data)[j],
						 (uint8_t)(*next * 31u + j));
			(*next)++;
		}
		assert_false(wt_util_deadline_passed(dl));
	}
}

/* A ring that has carried only small frames: while its consumer keeps up, the producer
 * keeps to the first WT_SHM_SMALL_WINDOW bytes (each lap starts at 0 again); a consumer
 * that stops early in a lap leaves it going on to the ring's end rather than waiting at
 * the window; after one large frame it walks the large window. */
static void test_shm_small_window(void **state)
{
	const size_t len = 1000, rec = WT_SHM_REC_HDR + 1000;
	struct pair p;
	struct wt_shm_ring_ctl *ctl;
	uint32_t sent = 0, got = 0;
	uint64_t head, most = 0;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	ctl = rx_ring_of(p.l[1]);
	/* In step: every frame ends inside the small window, lap after lap. */
	for (; sent < 300; sent++) {
		assert_int_equal(send_small(p.l[0], sent, len), WEFT_OK);
		recv_small(p.l[1], &got, sent + 1, len);
		head = atomic_load(&ctl->head);
		assert_true((head & (WT_SHM_RING_CAP - 1)) <= WT_SHM_SMALL_WINDOW);
	}
	assert_true(atomic_load(&ctl->head) / WT_SHM_RING_CAP >= 300 * rec / WT_SHM_SMALL_WINDOW);
	/* On in step to the first frame of a lap, then the consumer stops: with more than half
	 * the window in flight at its end, the producer goes on, and fills the ring. */
	for (;; sent++) {
		assert_int_equal(send_small(p.l[0], sent, len), WEFT_OK);
		recv_small(p.l[1], &got, sent + 1, len);
		if ((atomic_load(&ctl->head) & (WT_SHM_RING_CAP - 1)) == rec)
			break;
		assert_true(sent < 1000);
	}
	sent++;
	/* (the poll after a delivery releases what it delivered, past the lap's start) */
	assert_int_equal(ops->poll(p.l[1], NULL, 0), 0);
	while (send_small(p.l[0], sent, len) == WEFT_OK)
		sent++;
	assert_true((uint64_t)(sent - got) * rec >= WT_SHM_RING_CAP - 2 * WT_SHM_SMALL_WINDOW);
	assert_int_equal(send_small(p.l[0], sent, len), WT_AGAIN);
	recv_small(p.l[1], &got, sent, len);
	/* Drained: after the lap in progress, back to the small window. */
	for (uint32_t k = 0; k < 100; k++, sent++) {
		assert_int_equal(send_small(p.l[0], sent, len), WEFT_OK);
		recv_small(p.l[1], &got, sent + 1, len);
	}
	for (uint32_t k = 0; k < 100; k++, sent++) {
		assert_int_equal(send_small(p.l[0], sent, len), WEFT_OK);
		recv_small(p.l[1], &got, sent + 1, len);
		head = atomic_load(&ctl->head);
		assert_true((head & (WT_SHM_RING_CAP - 1)) <= WT_SHM_SMALL_WINDOW);
	}
	/* One frame of 8 KiB: from then on the producer walks the large window. */
	assert_int_equal(send_small(p.l[0], sent, 8192), WEFT_OK);
	recv_small(p.l[1], &got, ++sent, 8192);
	for (uint32_t k = 0; k < 300; k++, sent++) {
		assert_int_equal(send_small(p.l[0], sent, len), WEFT_OK);
		recv_small(p.l[1], &got, sent + 1, len);
		head = atomic_load(&ctl->head) & (WT_SHM_RING_CAP - 1);
		most = head > most ? head : most;
	}
	assert_true(most > WT_SHM_SMALL_WINDOW + 200 * rec);
	munmap(ctl, WT_SHM_RING_STRIDE);
	pair_close(&p);
}

/* ---- udp only ---- */

#define UDP_LOOPBACK_MAX 65507 /* lo's MTU 65536 is past the largest IPv4 datagram */

static wt_link_stats_t stats_of(wt_link_t *l, int peer)
{
	wt_link_stats_t st;

	memset(&st, 0, sizeof(st));
	assert_non_null(ops->stats);
	ops->stats(l, peer, &st);
	return st;
}

static void pattern_fill(uint8_t *buf, uint32_t tag, size_t len)
{
	for (size_t j = 0; j < len; j++)
		buf[j] = (uint8_t)(tag * 31u + j * 7u + (j >> 8));
}

static int pattern_ok(const uint8_t *buf, uint32_t tag, size_t len)
{
	for (size_t j = 0; j < len; j++) {
		if (buf[j] != (uint8_t)(tag * 31u + j * 7u + (j >> 8)))
			return 0;
	}
	return 1;
}

/* Sleeps on l's fd the way a progress engine does, at most ms. */
static void nap(wt_link_t *l, int ms)
{
	struct pollfd pfd = {.fd = ops->fd(l), .events = POLLIN};

	if (ops->arm(l) == 0)
		poll(&pfd, 1, ms);
	ops->disarm(l);
}

/* Polls l until count frames from peer arrived; checks each against (tags, lens) in order. */
static void expect_frames(wt_link_t *l, int peer, const uint32_t *tags, const size_t *lens,
			  int count)
{
	uint64_t deadline = wt_util_deadline_in(WAIT_S);
	wt_link_event_t ev[MAX_EV];
	int got = 0;

	while (got < count) {
		int n = ops->poll(l, ev, MAX_EV);

		assert_true(n >= 0 && got + n <= count);
		for (int i = 0; i < n; i++, got++) {
			assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
			assert_int_equal(ev[i].peer, peer);
			assert_int_equal(ev[i].len, lens[got]);
			assert_true(pattern_ok(ev[i].data, tags[got], lens[got]));
		}
		if (n == 0)
			nap(l, 50);
		assert_false(wt_util_deadline_passed(deadline));
	}
}

/* Polls l for ms and asserts that no frame arrives. */
static void expect_quiet(wt_link_t *l, int ms)
{
	uint64_t deadline = wt_util_deadline_in(ms / 1000.0);
	wt_link_event_t ev[MAX_EV];

	while (!wt_util_deadline_passed(deadline)) {
		assert_int_equal(ops->poll(l, ev, MAX_EV), 0);
		nap(l, 10);
	}
}

/* Sends a frame of len bytes to peer in three iov pieces (some may be empty). */
static void send_pieces(wt_link_t *l, int peer, uint32_t tag, size_t len, uint8_t *buf)
{
	struct iovec iov[3] = {
	    {buf, len / 3}, {buf + len / 3, len / 3}, {buf + 2 * (len / 3), len - 2 * (len / 3)}};

	pattern_fill(buf, tag, len);
	assert_int_equal(ops->send(l, peer, iov, 3, NULL), WEFT_OK);
}

/* Frames of every size class arrive intact, with the right peer and length, both ways;
 * the counters add up to exactly what crossed. */
static void test_udp_frames(void **state)
{
	struct pair p;
	size_t mf, lens[6], total = 0;
	uint32_t tags[6];
	uint8_t *buf;
	struct pollfd pfd;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	mf = wt_link_max_frame(p.l[0]);
	assert_int_equal(mf, UDP_LOOPBACK_MAX);
	assert_int_equal(wt_link_max_frame(p.l[1]), UDP_LOOPBACK_MAX);
	assert_int_equal(ops->caps, WT_LINK_CAP_HAS_FD);
	buf = malloc(mf);
	assert_non_null(buf);
	lens[0] = 0, lens[1] = 1, lens[2] = 5, lens[3] = 1472, lens[4] = mf - 1, lens[5] = mf;
	for (int s = 0; s < 2; s++) {
		for (int k = 0; k < 6; k++) {
			tags[k] = (uint32_t)(s * 100 + k);
			send_pieces(p.l[s], 1 - s, tags[k], lens[k], buf);
		}
		if (s == 0) {
			/* Batched until poll() or arm(); then queued, arm() says so. */
			push(p.l[0]);
			pfd.fd = ops->fd(p.l[1]);
			pfd.events = POLLIN;
			assert_int_equal(poll(&pfd, 1, (int)(WAIT_S * 1000)), 1);
			assert_int_equal(ops->arm(p.l[1]), 1);
			ops->disarm(p.l[1]);
		}
		ops->poll(p.l[s], NULL, 0);
		expect_frames(p.l[1 - s], s, tags, lens, 6);
	}
	for (int k = 0; k < 6; k++)
		total += lens[k];
	for (int s = 0; s < 2; s++) {
		wt_link_stats_t st = stats_of(p.l[s], 1 - s);

		assert_int_equal(st.frames_sent, 6);
		assert_int_equal(st.bytes_sent, total);
		assert_int_equal(st.frames_received, 6);
		assert_int_equal(st.bytes_received, total);
		assert_int_equal(st.drops, 0);
	}
	free(buf);
	pair_close(&p);
}

static wt_link_t *open_with_mtu(int rank, int size, const char *job, const char *mtu)
{
	wt_link_t *l;

	assert_int_equal(setenv("WEFT_UDP_MTU", mtu, 1), 0);
	l = open_link(rank, size, job, "tok", WAIT_S);
	unsetenv("WEFT_UDP_MTU");
	return l;
}

static void test_udp_max_frame(void **state)
{
	static const char *const bad_mtu[] = {"abc", "575", "65536", "1500x", "-1", " 1500"};
	struct pair p;
	uint8_t *buf = malloc(UDP_LOOPBACK_MAX + 1);
	uint32_t tag = 7;
	size_t len = 5;

	(void)state;
	assert_non_null(buf);
	pair_open(&p, "tok", "tok", WAIT_S);
	/* Past max_frame, whole or in pieces: refused and nothing is sent. */
	{
		struct iovec one = {buf, UDP_LOOPBACK_MAX + 1};
		struct iovec two[2] = {{buf, 1000}, {buf, UDP_LOOPBACK_MAX - 999}};

		assert_int_equal(ops->send(p.l[0], 1, &one, 1, NULL), WEFT_ERR_INVALID_ARG);
		assert_int_equal(ops->send(p.l[0], 1, two, 2, NULL), WEFT_ERR_INVALID_ARG);
	}
	send_pieces(p.l[0], 1, tag, len, buf);
	ops->poll(p.l[0], NULL, 0);
	expect_frames(p.l[1], 0, &tag, &len, 1);
	expect_quiet(p.l[1], 100);
	assert_int_equal(stats_of(p.l[0], 1).frames_sent, 1);
	pair_close(&p);
	/* WEFT_UDP_MTU: rank 0 at 1500, rank 1 on lo's own; each takes the other's frames. */
	new_job(p.job, sizeof(p.job));
	p.l[0] = open_with_mtu(0, 2, p.job, "1500");
	p.l[1] = open_link(1, 2, p.job, "tok", WAIT_S);
	assert_int_equal(wt_link_max_frame(p.l[0]), 1472);
	pair_connect(&p);
	{
		struct iovec over = {buf, 1473};

		assert_int_equal(ops->send(p.l[0], 1, &over, 1, NULL), WEFT_ERR_INVALID_ARG);
	}
	len = 1472;
	send_pieces(p.l[0], 1, tag, len, buf);
	ops->poll(p.l[0], NULL, 0);
	expect_frames(p.l[1], 0, &tag, &len, 1);
	len = UDP_LOOPBACK_MAX;
	send_pieces(p.l[1], 0, tag, len, buf);
	ops->poll(p.l[1], NULL, 0);
	expect_frames(p.l[0], 1, &tag, &len, 1);
	assert_int_equal(stats_of(p.l[0], 1).drops, 0);
	pair_close(&p);
	p.l[0] = open_with_mtu(0, 2, p.job, "576");
	assert_int_equal(wt_link_max_frame(p.l[0]), 548);
	ops->close(p.l[0]);
	for (size_t i = 0; i < sizeof(bad_mtu) / sizeof(bad_mtu[0]); i++) {
		wt_link_config_t c = make_cfg(0, 2, p.job, "tok", WAIT_S);
		wt_link_t *t = NULL;

		assert_int_equal(setenv("WEFT_UDP_MTU", bad_mtu[i], 1), 0);
		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		assert_null(t);
	}
	unsetenv("WEFT_UDP_MTU");
	free(buf);
}

static int udp_socket(struct sockaddr_in *sa)
{
	socklen_t slen = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &slen), 0);
	return fd;
}

/* The link's own address, from its blob (port at 20, IPv4 at 24). */
static struct sockaddr_in link_sockaddr(wt_link_t *l)
{
	struct sockaddr_in sa = {0};
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len;

	get_addr(l, blob, &len);
	sa.sin_family = AF_INET;
	memcpy(&sa.sin_port, blob + 20, 2);
	memcpy(&sa.sin_addr, blob + 24, 4);
	return sa;
}

/* Datagrams from a socket that is no connected peer are dropped, never reported. */
static void test_udp_stranger(void **state)
{
	struct pair p;
	struct sockaddr_in me, to;
	uint8_t buf[2000];
	uint32_t tag = 3;
	size_t len = 50;
	int fd;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	fd = udp_socket(&me);
	to = link_sockaddr(p.l[1]);
	pattern_fill(buf, tag, sizeof(buf));
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    sendto(fd, buf, 100 + 900 * (size_t)i, 0, (struct sockaddr *)&to, sizeof(to)),
		    100 + 900 * i);
	assert_int_equal(sendto(fd, buf, 0, 0, (struct sockaddr *)&to, sizeof(to)), 0);
	send_pieces(p.l[0], 1, tag, len, buf);
	ops->poll(p.l[0], NULL, 0);
	expect_frames(p.l[1], 0, &tag, &len, 1);
	expect_quiet(p.l[1], 100);
	assert_int_equal(ops->arm(p.l[1]), 0); /* the strangers' datagrams are gone too */
	ops->disarm(p.l[1]);
	assert_int_equal(stats_of(p.l[1], 0).frames_received, 1);
	assert_int_equal(stats_of(p.l[1], 0).bytes_received, len);
	close(fd);
	pair_close(&p);
}

static void blob_make(uint8_t *b, uint32_t rank, uint32_t size, uint32_t mf,
		      const struct sockaddr_in *sa)
{
	uint32_t v;
	uint16_t h;

	memset(b, 0, 40);
	memcpy(b, "WUDP", 4);
	h = htons(1);
	memcpy(b + 4, &h, 2);
	h = htons(4);
	memcpy(b + 6, &h, 2);
	v = htonl(rank);
	memcpy(b + 8, &v, 4);
	v = htonl(size);
	memcpy(b + 12, &v, 4);
	v = htonl(mf);
	memcpy(b + 16, &v, 4);
	memcpy(b + 20, &sa->sin_port, 2);
	memcpy(b + 24, &sa->sin_addr, 4);
}

static void blob_refused(wt_link_t *l, int peer, const uint8_t *good, size_t at, uint8_t val)
{
	uint8_t b[40];

	memcpy(b, good, sizeof(b));
	b[at] = val;
	assert_int_equal(ops->connect(l, peer, b, sizeof(b)), WEFT_ERR_INVALID_ARG);
}

/* A hand-made peer (a plain socket with a blob built here): every field is checked, and
 * a datagram longer than what the peer declared is dropped and counted. */
static void test_udp_blob_and_truncation(void **state)
{
	char job[32];
	wt_link_t *l;
	struct sockaddr_in fake, to;
	uint8_t blob[40], buf[3000];
	uint32_t tag = 9;
	size_t len = 1000;
	int fd;

	(void)state;
	new_job(job, sizeof(job));
	l = open_with_mtu(0, 3, job, "1500");
	fd = udp_socket(&fake);
	blob_make(blob, 1, 3, 1472, &fake);
	blob_refused(l, 1, blob, 3, 'X');   /* magic */
	blob_refused(l, 1, blob, 5, 2);	    /* version */
	blob_refused(l, 1, blob, 7, 6);	    /* IPv6 blob for an IPv4 link */
	blob_refused(l, 1, blob, 7, 5);	    /* no such family */
	blob_refused(l, 1, blob, 11, 2);    /* rank */
	blob_refused(l, 1, blob, 15, 4);    /* world size */
	blob_refused(l, 1, blob, 17, 0x01); /* max frame 65537 + ... */
	blob_refused(l, 1, blob, 18, 0);    /* max frame 256 */
	blob_refused(l, 1, blob, 22, 1);    /* padding */
	blob_refused(l, 1, blob, 24, 224);  /* multicast */
	blob_refused(l, 1, blob, 24, 0);    /* 0.0.0.0 */
	blob_refused(l, 1, blob, 30, 1);    /* bytes past an IPv4 address */
	{
		uint8_t b[40];

		memcpy(b, blob, sizeof(b));
		b[20] = b[21] = 0; /* port 0 */
		assert_int_equal(ops->connect(l, 1, b, sizeof(b)), WEFT_ERR_INVALID_ARG);
		assert_int_equal(ops->connect(l, 1, blob, 39), WEFT_ERR_INVALID_ARG);
		assert_int_equal(ops->connect(l, 1, blob, 41), WEFT_ERR_INVALID_ARG);
	}
	assert_int_equal(ops->connect(l, 1, blob, sizeof(blob)), WEFT_OK);
	assert_int_equal(ops->connect(l, 1, blob, sizeof(blob)), WEFT_ERR_INVALID_ARG);
	/* Rank 2 claiming rank 1's address would make its datagrams ambiguous. */
	blob_make(blob, 2, 3, 1472, &fake);
	assert_int_equal(ops->connect(l, 2, blob, sizeof(blob)), WEFT_ERR_INVALID_ARG);
	/* The fake peer declared 1472: 3000 bytes is truncated and dropped, 1000 arrives. */
	to = link_sockaddr(l);
	pattern_fill(buf, tag, sizeof(buf));
	assert_int_equal(sendto(fd, buf, 3000, 0, (struct sockaddr *)&to, sizeof(to)), 3000);
	assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)), len);
	expect_frames(l, 1, &tag, &len, 1);
	expect_quiet(l, 50);
	assert_int_equal(stats_of(l, 1).frames_received, 1);
	assert_int_equal(stats_of(l, 1).drops, 1);
	/* And it is sent to at the address of its blob. */
	send_pieces(l, 1, tag + 1, 700, buf);
	ops->poll(l, NULL, 0);
	{
		uint8_t rx[1000];
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		assert_int_equal(poll(&pfd, 1, (int)(WAIT_S * 1000)), 1);
		assert_int_equal(recv(fd, rx, sizeof(rx), 0), 700);
		assert_true(pattern_ok(rx, tag + 1, 700));
	}
	assert_int_equal(stats_of(l, 1).frames_sent, 1);
	assert_int_equal(stats_of(l, 1).bytes_sent, 700);
	close(fd);
	ops->close(l);
}

static void test_udp_ipv6(void **state)
{
	struct pair p;
	uint8_t b4[WT_LINK_ADDR_MAX], buf[4000];
	size_t len4, lens[5] = {4000, 4000, 4000, 4000, 999};
	uint32_t tags[5] = {11, 12, 13, 14, 15};
	wt_link_t *v4;

	(void)state;
	new_job(p.job, sizeof(p.job));
	p.l[0] = p.l[1] = NULL;
	for (int r = 0; r < 2; r++) {
		wt_link_config_t c = make_cfg(r, 2, p.job, "tok", WAIT_S);

		c.bind_addr = "::1";
		if (ops->open(&c, &p.l[r]) != WEFT_OK) {
			pair_close(&p);
			skip(); /* no IPv6 loopback here */
		}
	}
	/* lo's 65536 minus IPv6 and UDP headers. */
	assert_int_equal(wt_link_max_frame(p.l[0]), 65536 - 48);
	v4 = open_link(1, 2, p.job, "tok", WAIT_S);
	get_addr(v4, b4, &len4);
	assert_int_equal(ops->connect(p.l[0], 1, b4, len4), WEFT_ERR_INVALID_ARG);
	ops->close(v4);
	pair_connect(&p);
	/* Equal frames then a shorter one: one segmented datagram over IPv6. */
	for (int s = 0; s < 2; s++) {
		for (int k = 0; k < 5; k++)
			send_pieces(p.l[s], 1 - s, tags[k], lens[k], buf);
		ops->poll(p.l[s], NULL, 0);
		expect_frames(p.l[1 - s], s, tags, lens, 5);
	}
	pair_close(&p);
}

/* Runs of equal frames to one peer leave as one segmented datagram (GSO); runs end at a
 * shorter frame, a change of peer or a full batch. Every frame still arrives alone, with
 * its own length, in order (loopback, far below the socket buffers). */
static void test_udp_batches(void **state)
{
	enum { N = 400 };
	char job[32];
	wt_link_t *l[3];
	uint8_t blob[3][WT_LINK_ADDR_MAX];
	size_t blen[3], lens[2][N];
	uint32_t tags[2][N];
	int cnt[2] = {0, 0};
	uint8_t *buf = malloc(1472);
	uint64_t total[2] = {0, 0};

	(void)state;
	assert_non_null(buf);
	new_job(job, sizeof(job));
	for (int r = 0; r < 3; r++) {
		l[r] = open_with_mtu(r, 3, job, "1500");
		get_addr(l[r], blob[r], &blen[r]);
	}
	for (int a = 0; a < 3; a++) {
		for (int b = 0; b < 3; b++) {
			if (a != b)
				assert_int_equal(ops->connect(l[a], b, blob[b], blen[b]), WEFT_OK);
		}
	}
	for (uint32_t i = 0; i < N; i++) {
		/* Long runs to rank 1, a short frame now and then, stretches alternating. */
		int to = (i / 50) % 4 == 3 ? 2 : (i >= 300 && i % 2 ? 2 : 1);
		size_t len = i % 37 == 36 ? 1 + i % 1000 : 1472;
		int k = cnt[to - 1]++;

		tags[to - 1][k] = i;
		lens[to - 1][k] = len;
		total[to - 1] += len;
		send_pieces(l[0], to, i, len, buf);
		if (i % 150 == 149)
			ops->poll(l[0], NULL, 0);
	}
	ops->poll(l[0], NULL, 0);
	for (int to = 1; to <= 2; to++) {
		wt_link_stats_t st = stats_of(l[0], to);

		expect_frames(l[to], 0, tags[to - 1], lens[to - 1], cnt[to - 1]);
		assert_int_equal(st.frames_sent, cnt[to - 1]);
		assert_int_equal(st.bytes_sent, total[to - 1]);
		assert_int_equal(stats_of(l[to], 0).frames_received, cnt[to - 1]);
		assert_int_equal(stats_of(l[to], 0).bytes_received, total[to - 1]);
	}
	expect_quiet(l[1], 50);
	for (int r = 0; r < 3; r++)
		ops->close(l[r]);
	free(buf);
}

/* Checks every frame of one receive poll: intact, from rank 0, and never seen before. */
static int stream_take(wt_link_t *l, uint8_t *seen, uint32_t sent, size_t mf)
{
	wt_link_event_t ev[MAX_EV];
	int n = ops->poll(l, ev, MAX_EV);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		uint32_t seq;

		assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
		assert_int_equal(ev[i].peer, 0);
		assert_true(ev[i].len >= 4);
		memcpy(&seq, ev[i].data, 4);
		assert_true(seq < sent);
		assert_int_equal(seen[seq], 0);
		seen[seq] = 1;
		assert_true(frame_ok(ev[i].data, ev[i].len, seq, mf));
	}
	return n;
}

/* Bulk traffic, loss-tolerant: whatever arrives is intact and arrives once, and the
 * counters on both ends agree with what was sent and delivered. */
static void test_udp_stream(void **state)
{
	const uint32_t count = 20000;
	struct pair p;
	struct rxcheck idle = {0};
	uint8_t *buf, *seen;
	uint32_t sent = 0, got = 0;
	uint64_t deadline = wt_util_deadline_in(WAIT_S * 4), quiet_until = 0;
	size_t mf;

	(void)state;
	pair_open(&p, "tok", "tok", WAIT_S);
	mf = wt_link_max_frame(p.l[0]);
	buf = malloc(mf);
	seen = calloc(count, 1);
	assert_non_null(buf);
	assert_non_null(seen);
	while (quiet_until == 0 || !wt_util_deadline_passed(quiet_until)) {
		int n;

		for (int k = 0; k < 64 && sent < count; k++) {
			weft_status_t st = send_seq(p.l[0], 1, sent, buf);

			if (st == WT_AGAIN)
				break;
			assert_int_equal(st, WEFT_OK);
			sent++;
		}
		pump(p.l[0], 1, &idle);
		/* Drain: one poll returns at most a batch of what is queued. */
		while ((n = stream_take(p.l[1], seen, sent, mf)) > 0)
			got += (uint32_t)n;
		if (sent == count && quiet_until == 0)
			quiet_until = wt_util_deadline_in(0.3);
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_int_equal(idle.frames + (uint32_t)idle.errors, 0);
	print_message("udp stream: %u of %u frames arrived\n", got, sent);
	assert_true(got > 0);
	assert_int_equal(stats_of(p.l[0], 1).frames_sent, sent);
	assert_int_equal(stats_of(p.l[1], 0).frames_received, got);
	assert_int_equal(stats_of(p.l[1], 0).frames_sent, 0);
	free(seen);
	free(buf);
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
	    cmocka_unit_test(test_shm_big_frames),
	    cmocka_unit_test(test_shm_stores_setting),
	    cmocka_unit_test(test_shm_arm_releases),
	    cmocka_unit_test(test_shm_corrupt_ring),
	    cmocka_unit_test(test_shm_small_window),
	    cmocka_unit_test(test_shm_child_killed),
	};
	const struct CMUnitTest tcp_only[] = {
	    cmocka_unit_test(test_tcp_closed_port),
	    cmocka_unit_test(test_tcp_strangers),
	    cmocka_unit_test(test_tcp_hostile_length),
	};
	const struct CMUnitTest udp_only[] = {
	    cmocka_unit_test(test_udp_frames),	 cmocka_unit_test(test_udp_max_frame),
	    cmocka_unit_test(test_udp_stranger), cmocka_unit_test(test_udp_blob_and_truncation),
	    cmocka_unit_test(test_udp_ipv6),	 cmocka_unit_test(test_udp_batches),
	    cmocka_unit_test(test_udp_stream),
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
	{
		/* Also sets up what a driver keeps for the whole process (dpdk: the EAL), so
		 * the descriptor counts below see only what links own. */
		char why[512] = "";

		if (ops->probe(why, sizeof(why)) != WEFT_OK) {
			fprintf(stderr, "driver %s cannot run here: %s; skipping\n", name, why);
			return 77;
		}
	}
	if (getenv("WT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("WT_TEST_FILTER"));
	fails =
	    _cmocka_run_group_tests(name, common, sizeof(common) / sizeof(common[0]), NULL, NULL);
	if (strcmp(name, "shm") == 0)
		fails += cmocka_run_group_tests_name("shm_only", shm_only, NULL, NULL);
	else if (strcmp(name, "tcp") == 0)
		fails += cmocka_run_group_tests_name("tcp_only", tcp_only, NULL, NULL);
	else if (strcmp(name, "udp") == 0)
		fails += cmocka_run_group_tests_name("udp_only", udp_only, NULL, NULL);
	return fails;
}
