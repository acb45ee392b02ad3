/* Unit tests of the dpdk link driver (tests/unit/drivers), beyond what test_links checks
 * for every driver: probe failures (each in a child process, since the EAL starts once
 * per process), address validation, multi-packet and zero-copy frames, the RoCEv2 packets
 * a hand-made peer sees and sends, backpressure, and the named-port path over a net_ring
 * loopback port. Exits 77 when the EAL cannot start here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "drivers/dpdk/dpdk_int.h"
#include "drivers/dpdk/roce.h"
#include "drivers/link.h"
#include "lib/util/bytes.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"

#define MAX_EV 64
#define WAIT_S 30.0
#define BLOB_LEN 56
#define MSG_MAX 640

static const wt_link_ops_t *ops;
static int job_counter;

/* ---- helpers ---- */

static void new_job(char *job, size_t len)
{
	snprintf(job, len, "d%d-%d", (int)getpid(), job_counter++);
}

static wt_link_config_t make_cfg(int rank, int size, const char *job, const char *host)
{
	wt_link_config_t c;

	memset(&c, 0, sizeof(c));
	c.rank = rank;
	c.size = size;
	c.job_id = job;
	c.host_id = host;
	wt_util_key_from_token(&c.key, "tok");
	c.connect_timeout = WAIT_S;
	return c;
}

static wt_link_t *open_link(int rank, int size, const char *job, const char *host)
{
	wt_link_config_t c = make_cfg(rank, size, job, host);
	wt_link_t *l = NULL;

	assert_int_equal(ops->open(&c, &l), WEFT_OK);
	return l;
}

static size_t get_blob(wt_link_t *l, uint8_t *b)
{
	size_t len = WT_LINK_ADDR_MAX;

	assert_int_equal(ops->address(l, b, &len), WEFT_OK);
	return len;
}

static void connect_all(wt_link_t **l, int n)
{
	uint8_t b[8][WT_LINK_ADDR_MAX];
	size_t len[8];

	for (int i = 0; i < n; i++)
		len[i] = get_blob(l[i], b[i]);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			if (i != j)
				assert_int_equal(ops->connect(l[i], j, b[j], len[j]), WEFT_OK);
		}
	}
}

static void fill(uint8_t *p, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(tag * 131u + i * 7u + (i >> 8));
}

static int check(const uint8_t *p, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != (uint8_t)(tag * 131u + i * 7u + (i >> 8)))
			return 0;
	}
	return 1;
}

static wt_link_stats_t stats_of(wt_link_t *l, int peer)
{
	wt_link_stats_t s;

	memset(&s, 0, sizeof(s));
	ops->stats(l, peer, &s);
	return s;
}

/* ---- probe failures, each in a child ---- */

struct child_out {
	int st1, st2;
	char msg1[MSG_MAX], msg2[MSG_MAX];
};

/* Runs probe twice in a child with the given environment (NULL-terminated name, value
 * pairs); the child's own exit must be clean. */
static void child_probe(const char *const *env, struct child_out *out)
{
	int fd[2];
	pid_t pid;
	int status;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct child_out o;

		close(fd[0]);
		for (int i = 0; env[i] != NULL; i += 2)
			setenv(env[i], env[i + 1], 1);
		memset(&o, 0, sizeof(o));
		o.st1 = ops->probe(o.msg1, sizeof(o.msg1));
		o.st2 = ops->probe(o.msg2, sizeof(o.msg2));
		if (write(fd[1], &o, sizeof(o)) != (ssize_t)sizeof(o))
			_exit(3);
		_exit(0);
	}
	close(fd[1]);
	memset(out, 0, sizeof(*out));
	assert_int_equal(read(fd[0], out, sizeof(*out)), (ssize_t)sizeof(*out));
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	print_message("probe said: %s\n", out->msg1);
}

static void expect_no_device(const char *const *env, const char *needle)
{
	struct child_out o;

	child_probe(env, &o);
	assert_int_equal(o.st1, WEFT_ERR_NO_DEVICE);
	assert_int_equal(o.st2, WEFT_ERR_NO_DEVICE); /* the outcome is remembered */
	assert_non_null(strstr(o.msg1, needle));
	assert_string_equal(o.msg1, o.msg2);
}

static void test_probe_bad_eal_args(void **state)
{
	const char *env[] = {"WEFT_DPDK_EAL_ARGS",
			     "--no-huge -m 64 --no-pci --no-shconf --no-telemetry "
			     "--this-is-not-an-eal-option",
			     NULL};

	(void)state;
	expect_no_device(env, "the DPDK EAL did not start");
}

static void test_probe_help_refused(void **state)
{
	const char *h1[] = {"WEFT_DPDK_EAL_ARGS", "--no-huge --help", NULL};
	const char *h2[] = {"WEFT_DPDK_EAL_ARGS", "-h", NULL};

	(void)state;
	expect_no_device(h1, "--help is refused");
	expect_no_device(h2, "-h is refused");
}

static void test_probe_arg_limits(void **state)
{
	char many[400] = "", long_arg[320], ctl[] = "--no-huge \x01";
	const char *e1[] = {"WEFT_DPDK_EAL_ARGS", many, NULL};
	const char *e2[] = {"WEFT_DPDK_EAL_ARGS", long_arg, NULL};
	const char *e3[] = {"WEFT_DPDK_EAL_ARGS", ctl, NULL};

	(void)state;
	for (int i = 0; i < 40; i++)
		strcat(many, "-v ");
	memset(long_arg, 'x', sizeof(long_arg) - 1);
	long_arg[0] = '-';
	long_arg[sizeof(long_arg) - 1] = '\0';
	expect_no_device(e1, "too many arguments");
	expect_no_device(e2, "longer than");
	expect_no_device(e3, "non-printable");
}

static void test_probe_missing_iface(void **state)
{
	const char *env[] = {"WEFT_DPDK_PORT", "net_af_packet0,iface=weftnosuch0", NULL};

	(void)state;
	expect_no_device(env, "attaching the device failed");
}

static void test_probe_bad_port_settings(void **state)
{
	const char *name[] = {"WEFT_DPDK_PORT", "net ring0", NULL};
	const char *noip[] = {"WEFT_DPDK_PORT", "net_ring0", NULL};
	const char *badip[] = {"WEFT_DPDK_PORT", "net_ring0", "WEFT_DPDK_IP", "224.1.2.3", NULL};
	const char *nodrv[] = {"WEFT_DPDK_PORT", "net_weftnosuchpmd0", NULL};

	(void)state;
	expect_no_device(name, "is not a device name");
	expect_no_device(noip, "set WEFT_DPDK_IP");
	expect_no_device(badip, "is not a unicast IPv4 address");
	expect_no_device(nodrv, "attaching the device failed");
}

static void test_split_args(void **state)
{
	char store[256], why[128];
	char *argv[8];

	(void)state;
	assert_int_equal(wt_dpdk_split_args("  -m 64\t--no-pci\n", store, sizeof(store), argv, 8,
					    why, sizeof(why)),
			 4);
	assert_string_equal(argv[0], "weft");
	assert_string_equal(argv[1], "-m");
	assert_string_equal(argv[2], "64");
	assert_string_equal(argv[3], "--no-pci");
	assert_null(argv[4]);
	assert_int_equal(wt_dpdk_split_args("", store, sizeof(store), argv, 8, why, sizeof(why)),
			 1);
	assert_int_equal(
	    wt_dpdk_split_args("a b c d e f g h", store, sizeof(store), argv, 8, why, sizeof(why)),
	    -1);
}

/* ---- the named port: net_ring loops every packet back into the same process ---- */

static int ring_exchange(wt_link_t **l, int from, int to, size_t len, uint32_t tag)
{
	static uint8_t buf[65536];
	struct iovec iov[2];
	wt_link_event_t ev[MAX_EV];
	uint64_t deadline = wt_util_deadline_in(WAIT_S);
	size_t head = len < 100 ? len : 100;

	fill(buf, len, tag);
	iov[0].iov_base = buf;
	iov[0].iov_len = head;
	iov[1].iov_base = buf + head;
	iov[1].iov_len = len - head;
	if (ops->send(l[from], to, iov, 2, NULL) != WEFT_OK)
		return 10;
	while (!wt_util_deadline_passed(deadline)) {
		int n;

		ops->poll(l[from], ev, MAX_EV);
		n = ops->poll(l[to], ev, MAX_EV);
		for (int i = 0; i < n; i++) {
			if (ev[i].type != WT_LINK_EV_FRAME || ev[i].peer != from)
				return 11;
			return ev[i].len == len && check(ev[i].data, len, tag) ? 0 : 12;
		}
		wt_util_sleep_ns(100000);
	}
	return 13;
}

/* Ranks 0 and 1 on host A (a memif pair between them), rank 2 on host B (through the
 * port); every pair both ways, frames across packet boundaries. Returns 0 or a code. */
static int ring_child(void)
{
	const char *host[3] = {"hostA", "hostA", "hostB"};
	static const size_t lens[] = {0, 1, 1023, 1024, 1025, 4097, 16384};
	char why[512], job[32];
	wt_link_t *l[3];
	uint8_t b[3][WT_LINK_ADDR_MAX];
	size_t blen[3];
	int rc;

	if (ops->probe(why, sizeof(why)) != WEFT_OK)
		return 2;
	snprintf(job, sizeof(job), "ring%d", (int)getpid());
	for (int r = 0; r < 3; r++) {
		wt_link_config_t c = make_cfg(r, 3, job, host[r]);

		if (ops->open(&c, &l[r]) != WEFT_OK)
			return 3;
		blen[r] = WT_LINK_ADDR_MAX;
		if (ops->address(l[r], b[r], &blen[r]) != WEFT_OK)
			return 4;
	}
	/* 1024-byte RoCE MTU (1500-byte port), so 16 KiB frames */
	if (wt_link_max_frame(l[0]) != 16384)
		return 5;
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++) {
			if (i != j && ops->connect(l[i], j, b[j], blen[j]) != WEFT_OK)
				return 6;
		}
	}
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++) {
			for (size_t k = 0; i != j && k < sizeof(lens) / sizeof(lens[0]); k++) {
				rc = ring_exchange(l, i, j, lens[k],
						   (uint32_t)(i * 100 + j * 10 + k));
				if (rc != 0)
					return rc;
			}
		}
	}
	{
		wt_link_stats_t s = stats_of(l[2], 0);

		if (s.frames_received != 7 || s.drops != 0 || s.corrupt != 0 || s.rejected != 0)
			return 20;
	}
	for (int r = 0; r < 3; r++)
		ops->close(l[r]);
	return 0;
}

static void test_named_port_ring(void **state)
{
	pid_t pid = fork();
	int status;

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("WEFT_DPDK_PORT", "net_ring0", 1);
		setenv("WEFT_DPDK_IP", "198.18.9.9", 1);
		_exit(ring_child());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- in this process: address validation ---- */

static void blob_refused(wt_link_t *l, int peer, const uint8_t *good, size_t at, uint8_t val)
{
	uint8_t b[BLOB_LEN];

	memcpy(b, good, BLOB_LEN);
	b[at] = val;
	assert_int_equal(ops->connect(l, peer, b, BLOB_LEN), WEFT_ERR_INVALID_ARG);
}

static void test_blob_validation(void **state)
{
	char job[32];
	wt_link_t *l0, *l1, *la;
	uint8_t good[WT_LINK_ADDR_MAX], b[BLOB_LEN];
	size_t len;

	(void)state;
	new_job(job, sizeof(job));
	l0 = open_link(0, 3, job, NULL);
	l1 = open_link(1, 3, job, NULL);
	len = get_blob(l1, good);
	assert_int_equal(len, BLOB_LEN);
	assert_int_equal(ops->connect(l0, 1, good, len - 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->connect(l0, 1, good, len + 1), WEFT_ERR_INVALID_ARG);
	blob_refused(l0, 1, good, 0, 'X');   /* magic */
	blob_refused(l0, 1, good, 5, 2);     /* version */
	blob_refused(l0, 1, good, 7, 2);     /* unknown flag */
	blob_refused(l0, 1, good, 11, 2);    /* rank */
	blob_refused(l0, 1, good, 15, 4);    /* world size */
	blob_refused(l0, 1, good, 17, 0x02); /* max frame 0x20000 + ... */
	blob_refused(l0, 1, good, 18, 0x03); /* max frame 1023 */
	blob_refused(l0, 1, good, 21, 4);    /* an MTU without the port flag */
	blob_refused(l0, 1, good, 23, 1);    /* padding */
	blob_refused(l0, 1, good, 24, 0x03); /* multicast MAC */
	blob_refused(l0, 1, good, 31, 1);    /* padding */
	blob_refused(l0, 1, good, 32, 0);    /* 0.x.x.x */
	blob_refused(l0, 1, good, 32, 127);  /* loopback */
	blob_refused(l0, 1, good, 32, 230);  /* multicast */
	memcpy(b, good, BLOB_LEN);
	wt_util_put_be32(b + 36, 3); /* QP below 16 */
	assert_int_equal(ops->connect(l0, 1, b, BLOB_LEN), WEFT_ERR_INVALID_ARG);
	wt_util_put_be32(b + 36, (1u << 24) - 2); /* QP range past 24 bits */
	assert_int_equal(ops->connect(l0, 1, b, BLOB_LEN), WEFT_ERR_INVALID_ARG);
	memcpy(b, good, BLOB_LEN);
	memset(b + 24, 0, 6); /* no MAC */
	assert_int_equal(ops->connect(l0, 1, b, BLOB_LEN), WEFT_ERR_INVALID_ARG);
	memcpy(b, good, BLOB_LEN);
	memset(b + 40, 0, 4); /* zero rkey */
	assert_int_equal(ops->connect(l0, 1, b, BLOB_LEN), WEFT_ERR_INVALID_ARG);
	/* A peer on another host is unreachable without a port: said so, not malformed. */
	la = open_link(2, 3, job, "host-A");
	memcpy(b, good, BLOB_LEN);
	wt_util_put_be64(b + 44, 0x1234567890abcdefull);
	assert_int_equal(ops->connect(la, 1, b, BLOB_LEN), WEFT_ERR_NO_DEVICE);
	ops->close(la);
	assert_int_equal(ops->connect(l0, 1, good, len), WEFT_OK);
	assert_int_equal(ops->connect(l0, 1, good, len), WEFT_ERR_INVALID_ARG);
	ops->close(l0);
	ops->close(l1);
	{
		wt_link_config_t c = make_cfg(0, 2, job, NULL);
		wt_link_t *t = NULL;

		setenv("WEFT_DPDK_ICRC", "sometimes", 1);
		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		setenv("WEFT_DPDK_FRAME", "512", 1);
		unsetenv("WEFT_DPDK_ICRC");
		assert_int_equal(ops->open(&c, &t), WEFT_ERR_INVALID_ARG);
		unsetenv("WEFT_DPDK_FRAME");
		assert_null(t);
	}
}

/* ---- multi-packet and zero-copy frames over a memif pair ---- */

struct sent {
	uint8_t *buf;
	size_t len;
	int inprogress, done;
};

static void test_frames(void **state)
{
	static const size_t lens[] = {0,    1,	  72,	 1023,	1024,  4095, 4096,
				      4097, 8195, 12288, 30000, 65535, 65536};
	enum { NL = sizeof(lens) / sizeof(lens[0]), NF = 3 * NL };
	char job[32];
	wt_link_t *l[2];
	struct sent s[NF];
	wt_link_event_t ev[MAX_EV];
	int got = 0, done_next = 0, nip = 0;
	uint64_t deadline;

	(void)state;
	new_job(job, sizeof(job));
	l[0] = open_link(0, 2, job, NULL);
	l[1] = open_link(1, 2, job, NULL);
	connect_all(l, 2);
	assert_int_equal(wt_link_max_frame(l[0]), 65536);
	for (int f = 0; f < NF; f++) {
		size_t len = lens[f % NL], head = len < 72 ? len : 72;
		int shape = f / NL; /* 0: one piece; 1: header + body; 2: many small pieces */
		struct iovec iov[64];
		int n = 0;
		weft_status_t st;

		s[f].buf = malloc(len ? len : 1);
		s[f].len = len;
		s[f].done = 0;
		assert_non_null(s[f].buf);
		fill(s[f].buf, len, (uint32_t)f);
		if (shape == 0) {
			iov[n++] = (struct iovec){s[f].buf, len};
		} else if (shape == 1) {
			iov[n++] = (struct iovec){s[f].buf, head};
			iov[n++] = (struct iovec){s[f].buf + head, len - head};
		} else {
			size_t piece = len / 60 + 1;

			for (size_t off = 0; off < len; off += piece)
				iov[n++] = (struct iovec){s[f].buf + off,
							  len - off < piece ? len - off : piece};
		}
		do {
			st = ops->send(l[0], 1, iov, n, &s[f]);
			if (st == WT_AGAIN)
				ops->poll(l[1], ev, 0);
		} while (st == WT_AGAIN);
		assert_true(st == WEFT_OK || st == WEFT_INPROGRESS);
		s[f].inprogress = st == WEFT_INPROGRESS;
		nip += s[f].inprogress;
		/* Nothing below 1 KiB goes by reference. */
		if (len < 1024)
			assert_int_equal(st, WEFT_OK);
	}
	assert_true(nip > 0);
	deadline = wt_util_deadline_in(WAIT_S);
	while (got < NF || done_next < NF) {
		int n = ops->poll(l[0], ev, MAX_EV);

		for (int i = 0; i < n; i++) {
			/* in send order, once each, only for sends that said INPROGRESS */
			while (done_next < NF && !s[done_next].inprogress)
				done_next++;
			assert_int_equal(ev[i].type, WT_LINK_EV_SEND_DONE);
			assert_true(done_next < NF);
			assert_ptr_equal(ev[i].cookie, &s[done_next]);
			s[done_next].done = 1;
			done_next++;
		}
		while (done_next < NF && !s[done_next].inprogress)
			done_next++;
		n = ops->poll(l[1], ev, MAX_EV);
		for (int i = 0; i < n; i++) {
			assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
			assert_int_equal(ev[i].peer, 0);
			assert_int_equal(ev[i].len, s[got].len);
			assert_true(check(ev[i].data, ev[i].len, (uint32_t)got));
			got++;
		}
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_int_equal(stats_of(l[0], 1).frames_sent, NF);
	assert_int_equal(stats_of(l[1], 0).frames_received, NF);
	for (int f = 0; f < NF; f++)
		free(s[f].buf);
	ops->close(l[0]);
	ops->close(l[1]);
}

/* ---- the wire, seen by a hand-made rank 1 on the other end of the memif pair ---- */

struct fake {
	uint16_t port;
	char name[32], alias[WT_DPDK_PATH_MAX];
	uint32_t qp_base, rkey;
	uint32_t psn;
};

static void fake_blob(const struct fake *f, uint8_t *b)
{
	memset(b, 0, BLOB_LEN);
	wt_util_put_be32(b, 0x5744504bu);
	wt_util_put_be16(b + 4, 1);
	wt_util_put_be32(b + 8, 1);
	wt_util_put_be32(b + 12, 2);
	wt_util_put_be32(b + 16, 65536);
	b[24] = 0x02;
	b[25] = 'W';
	b[26] = 'T';
	b[29] = 1;
	wt_util_put_be32(b + 32, (198u << 24) | (18u << 16) | 2); /* 198.18.0.2 */
	wt_util_put_be32(b + 36, f->qp_base);
	wt_util_put_be32(b + 40, f->rkey);
}

static void fake_open(struct fake *f, const char *job)
{
	char sock[WT_DPDK_PATH_MAX], secret[32], args[512], why[512];
	wt_util_key_t key;
	uint64_t deadline = wt_util_deadline_in(WAIT_S);

	wt_util_key_from_token(&key, "tok");
	wt_dpdk_memif_paths(job, 0, 1, sock, f->alias, sizeof(sock));
	strcat(f->alias, "-fake");
	unlink(f->alias);
	assert_int_equal(symlink(sock, f->alias), 0);
	wt_dpdk_memif_secret(&key, job, 0, 1, secret, sizeof(secret));
	snprintf(args, sizeof(args),
		 "role=client,id=0,socket=%s,socket-abstract=no,bsize=%d,secret=%s", f->alias,
		 WT_DPDK_MEMIF_BSIZE, secret);
	snprintf(f->name, sizeof(f->name), "net_memif_fake%d", job_counter);
	assert_int_equal(wt_dpdk_vdev_open(f->name, args, 1, &f->port, why, sizeof(why)), WEFT_OK);
	while (!wt_dpdk_link_up(f->port)) {
		assert_false(wt_util_deadline_passed(deadline));
		wt_util_sleep_ns(1000000);
	}
}

/* The next packet the link sent, decoded (ICRC checked); payload copied out. */
static void fake_recv(struct fake *f, wt_link_t *l, wt_roce_hdr_t *h, uint8_t *pay, size_t *plen)
{
	uint64_t deadline = wt_util_deadline_in(WAIT_S);
	struct rte_mbuf *m;
	uint8_t raw[8192];
	size_t off = 0;

	for (;;) {
		ops->poll(l, NULL, 0); /* flushes what waits */
		if (rte_eth_rx_burst(f->port, 0, &m, 1) == 1)
			break;
		assert_false(wt_util_deadline_passed(deadline));
		wt_util_sleep_ns(100000);
	}
	assert_true(m->pkt_len <= sizeof(raw));
	{
		const uint8_t *p = rte_pktmbuf_read(m, 0, m->pkt_len, raw);

		assert_non_null(p);
		if (p != raw)
			memcpy(raw, p, m->pkt_len);
	}
	assert_int_equal(wt_roce_parse(raw, m->pkt_len, 1, h, &off, plen), WEFT_OK);
	memcpy(pay, raw + off, *plen);
	rte_pktmbuf_free(m);
}

/* Sends a packet built from h (dst QP, MACs, IPs filled here) with payload; corrupt
 * flips a payload byte after the ICRC was computed. */
static void fake_send(struct fake *f, wt_roce_hdr_t *h, const uint8_t *pay, size_t plen,
		      int corrupt)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(wt_dpdk_pool());
	uint8_t *p;
	uint32_t icrc;
	size_t hl;

	assert_non_null(m);
	p = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(h->src_mac, (uint8_t[]){0x02, 'W', 'T', 0, 0, 1}, 6);
	memcpy(h->dst_mac, (uint8_t[]){0x02, 'W', 'T', 0, 0, 0}, 6);
	if (h->src_ip == 0)
		h->src_ip = (198u << 24) | (18u << 16) | 2;
	h->dst_ip = (198u << 24) | (18u << 16) | 1;
	h->src_port = 0xc001;
	hl = wt_roce_build(h, plen, p, &icrc);
	assert_true(hl > 0);
	memcpy(p + hl, pay, plen);
	icrc = wt_roce_icrc_update(icrc, pay, plen);
	hl += plen;
	hl += wt_roce_trailer(icrc, plen, p + hl);
	if (corrupt)
		p[hl - 10] ^= 0x40;
	m->data_len = (uint16_t)hl;
	m->pkt_len = (uint32_t)hl;
	while (rte_eth_tx_burst(f->port, 0, &m, 1) != 1)
		wt_util_sleep_ns(100000);
}

/* Polls l until it has delivered want frames (checked against tags) or is quiet. */
static int drain(wt_link_t *l, uint8_t expect_first)
{
	wt_link_event_t ev[MAX_EV];
	int frames = 0;

	for (int k = 0; k < 50; k++) {
		int n = ops->poll(l, ev, MAX_EV);

		for (int i = 0; i < n; i++) {
			assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
			assert_int_equal(ev[i].peer, 1);
			assert_true(ev[i].len > 0);
			assert_int_equal(((const uint8_t *)ev[i].data)[0], expect_first);
			frames++;
		}
		wt_util_sleep_ns(1000000);
	}
	return frames;
}

static void test_wire(void **state)
{
	char job[32];
	struct fake f = {.qp_base = 0x123400, .rkey = 0xabcdef01};
	uint8_t blob[BLOB_LEN], lblob[WT_LINK_ADDR_MAX], buf[10000], pay[8192];
	wt_roce_hdr_t h;
	wt_link_t *l;
	size_t plen;
	uint32_t my_qp, my_rkey, psn0;
	wt_link_frame_info_t info;
	struct iovec iov;

	(void)state;
	new_job(job, sizeof(job));
	/* memif pairs skip the ICRC check unless told: this test wants it counted. */
	setenv("WEFT_DPDK_ICRC", "all", 1);
	l = open_link(0, 2, job, NULL);
	unsetenv("WEFT_DPDK_ICRC");
	get_blob(l, lblob);
	my_qp = wt_util_get_be32(lblob + 36);
	my_rkey = wt_util_get_be32(lblob + 40);
	fake_open(&f, job);
	fake_blob(&f, blob);
	assert_int_equal(ops->connect(l, 1, blob, BLOB_LEN), WEFT_OK);
	ops->poll(l, NULL, 0);

	/* A 10000-byte data frame: WRITE FIRST, MIDDLE, LAST of 4096, 4096, 1808 bytes. */
	fill(buf, sizeof(buf), 5);
	iov = (struct iovec){buf, sizeof(buf)};
	info = (wt_link_frame_info_t){.kind = WT_LINK_FRAME_DATA, .seq = 7, .ack_req = 1};
	assert_int_equal(ops->send_info(l, 1, &iov, 1, NULL, &info), WEFT_OK);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_WRITE_FIRST);
	assert_int_equal(h.dst_qp, f.qp_base + 0);
	assert_int_equal(h.rkey, f.rkey);
	assert_int_equal(h.va, 0);
	assert_int_equal(h.dma_len, 10000);
	assert_int_equal(h.ack_req, 0);
	assert_int_equal(plen, 4096);
	assert_int_equal(h.src_ip, (198u << 24) | (18u << 16) | 1);
	assert_int_equal(h.dst_ip, (198u << 24) | (18u << 16) | 2);
	assert_true(check(pay, plen, 5));
	psn0 = h.psn;
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_WRITE_MIDDLE);
	assert_int_equal(h.psn, (psn0 + 1) & 0xffffff);
	assert_int_equal(plen, 4096);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_WRITE_LAST);
	assert_int_equal(h.psn, (psn0 + 2) & 0xffffff);
	assert_int_equal(h.ack_req, 1);
	assert_int_equal(plen, 10000 - 8192);
	/* The next frame's RETH address follows in the byte stream. */
	iov.iov_len = 100;
	assert_int_equal(ops->send(l, 1, &iov, 1, NULL), WEFT_OK);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_WRITE_ONLY);
	assert_int_equal(h.va, 10000);
	assert_int_equal(h.dma_len, 100);
	assert_int_equal(h.psn, (psn0 + 3) & 0xffffff);

	/* The fake sends one good frame: it arrives, and sets the PSN the link acks. */
	memset(&h, 0, sizeof(h));
	h.opcode = WT_ROCE_OP_WRITE_ONLY;
	h.dst_qp = my_qp + 1;
	h.psn = 500;
	h.rkey = my_rkey;
	h.dma_len = 64;
	memset(pay, 0xa1, 64);
	fake_send(&f, &h, pay, 64, 0);
	assert_int_equal(drain(l, 0xa1), 1);

	/* An acknowledgement: ACKNOWLEDGE (AETH, no payload) then the frame as a SEND. */
	info = (wt_link_frame_info_t){.kind = WT_LINK_FRAME_ACK, .ack = 0x1234567};
	iov.iov_len = 72;
	assert_int_equal(ops->send_info(l, 1, &iov, 1, NULL, &info), WEFT_OK);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_ACKNOWLEDGE);
	assert_int_equal(h.syndrome, 0x1f);
	assert_int_equal(h.msn, 0x234567);
	assert_int_equal(h.psn, 500);
	assert_int_equal(plen, 0);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_SEND_ONLY);
	assert_int_equal(plen, 72);
	assert_int_equal(h.psn, (psn0 + 4) & 0xffffff);
	info.kind = WT_LINK_FRAME_CTRL;
	assert_int_equal(ops->send_info(l, 1, &iov, 1, NULL, &info), WEFT_OK);
	fake_recv(&f, l, &h, pay, &plen);
	assert_int_equal(h.opcode, WT_ROCE_OP_SEND_ONLY);

	/* What the link must throw away, and count. */
	memset(pay, 0xb2, sizeof(pay));
	memset(&h, 0, sizeof(h));
	h.opcode = WT_ROCE_OP_WRITE_ONLY;
	h.dst_qp = my_qp + 1;
	h.psn = 501;
	h.rkey = my_rkey;
	h.dma_len = 64;
	fake_send(&f, &h, pay, 64, 1); /* bad ICRC */
	h.psn = 502;
	h.rkey = my_rkey ^ 1;
	fake_send(&f, &h, pay, 64, 0); /* wrong rkey */
	h.psn = 503;
	h.rkey = my_rkey;
	h.dst_qp = my_qp + 0; /* rank 0's own QP: not from rank 1 */
	fake_send(&f, &h, pay, 64, 0);
	h.dst_qp = my_qp + 1;
	h.src_ip = (198u << 24) | (18u << 16) | 77; /* not rank 1's address */
	fake_send(&f, &h, pay, 64, 0);
	h.src_ip = 0;
	/* FIRST, then LAST with a PSN gap: the partial frame is dropped. */
	h.opcode = WT_ROCE_OP_WRITE_FIRST;
	h.psn = 600;
	h.dma_len = 4096 + 64;
	fake_send(&f, &h, pay, 4096, 0);
	h.opcode = WT_ROCE_OP_WRITE_LAST;
	h.psn = 602;
	fake_send(&f, &h, pay, 64, 0);
	assert_int_equal(drain(l, 0xb2), 0);
	{
		wt_link_stats_t s = stats_of(l, 1);

		assert_int_equal(s.frames_received, 1);
		assert_int_equal(s.corrupt, 1);
		assert_int_equal(s.rejected, 3);
		assert_int_equal(s.drops, 1);
	}
	/* And a good multi-packet frame still arrives whole afterwards. */
	memset(pay, 0xc3, sizeof(pay));
	h.opcode = WT_ROCE_OP_WRITE_FIRST;
	h.psn = 700;
	h.dma_len = 4096 + 100;
	fake_send(&f, &h, pay, 4096, 0);
	h.opcode = WT_ROCE_OP_WRITE_LAST;
	h.psn = 701;
	fake_send(&f, &h, pay, 100, 0);
	assert_int_equal(drain(l, 0xc3), 1);
	ops->close(l);
	wt_dpdk_vdev_close(f.port, f.name);
	unlink(f.alias);
}

/* ---- backpressure: a receiver that does not poll stops the sender, losing nothing ---- */

static void test_backpressure(void **state)
{
	char job[32];
	wt_link_t *l[2];
	static uint8_t buf[65536];
	struct iovec iov = {buf, sizeof(buf)};
	wt_link_event_t ev[MAX_EV];
	uint32_t sent = 0, got = 0, target;
	weft_status_t st = WEFT_OK;
	uint64_t deadline;

	(void)state;
	new_job(job, sizeof(job));
	l[0] = open_link(0, 2, job, NULL);
	l[1] = open_link(1, 2, job, NULL);
	connect_all(l, 2);
	/* One frame first: the memif client must have polled once to give the server
	 * ring buffers to write into. */
	assert_int_equal(ops->send(l[0], 1, &iov, 1, NULL), WEFT_OK);
	deadline = wt_util_deadline_in(WAIT_S);
	while (got < 1) {
		ops->poll(l[0], ev, MAX_EV);
		got += (uint32_t)ops->poll(l[1], ev, MAX_EV);
		assert_false(wt_util_deadline_passed(deadline));
	}
	sent = got = 1;
	for (int i = 0; i < 100000 && st == WEFT_OK; i++) {
		memcpy(buf, &sent, 4);
		st = ops->send(l[0], 1, &iov, 1, NULL);
		if (st == WEFT_OK)
			sent++;
		ops->poll(l[0], ev, MAX_EV);
	}
	assert_int_equal(st, WT_AGAIN);
	print_message("sender stopped after %u frames of 64 KiB\n", sent);
	assert_true(sent > 10);
	assert_int_equal(ops->send(l[0], 1, &iov, 1, NULL), WT_AGAIN);
	/* Everything taken arrives, in order, and sending resumes. */
	deadline = wt_util_deadline_in(WAIT_S);
	target = sent + 100;
	while (got < target) {
		if (sent < target) {
			memcpy(buf, &sent, 4);
			if (ops->send(l[0], 1, &iov, 1, NULL) == WEFT_OK)
				sent++;
		}
		ops->poll(l[0], ev, MAX_EV);
		int n = ops->poll(l[1], ev, MAX_EV);

		for (int i = 0; i < n; i++) {
			uint32_t seq;

			assert_int_equal(ev[i].type, WT_LINK_EV_FRAME);
			assert_int_equal(ev[i].len, sizeof(buf));
			memcpy(&seq, ev[i].data, 4);
			assert_int_equal(seq, got);
			got++;
		}
		if (wt_util_deadline_passed(deadline)) {
			print_message("stuck: sent %u, received %u, receiver drops %llu\n", sent,
				      got, (unsigned long long)stats_of(l[1], 0).drops);
			fail();
		}
	}
	assert_int_equal(got, target);
	assert_int_equal(sent, target);
	assert_int_equal(stats_of(l[1], 0).drops, 0);
	assert_int_equal(stats_of(l[1], 0).frames_received, target);
	ops->close(l[0]);
	ops->close(l[1]);
}

int main(void)
{
	const struct CMUnitTest children[] = {
	    cmocka_unit_test(test_split_args),
	    cmocka_unit_test(test_probe_bad_eal_args),
	    cmocka_unit_test(test_probe_help_refused),
	    cmocka_unit_test(test_probe_arg_limits),
	    cmocka_unit_test(test_probe_missing_iface),
	    cmocka_unit_test(test_probe_bad_port_settings),
	    cmocka_unit_test(test_named_port_ring),
	};
	const struct CMUnitTest here[] = {
	    cmocka_unit_test(test_blob_validation),
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_wire),
	    cmocka_unit_test(test_backpressure),
	};
	char why[512] = "";
	int fails;

	if (wt_util_crypto_init() != WEFT_OK)
		return 1;
	ops = wt_link_find("dpdk");
	if (ops == NULL) {
		fprintf(stderr, "the dpdk driver is not built; skipping\n");
		return 77;
	}
	unsetenv("WEFT_DPDK_PORT");
	unsetenv("WEFT_DPDK_EAL_ARGS");
	unsetenv("WEFT_DPDK_IP");
	unsetenv("WEFT_DPDK_FRAME");
	/* Children start their own EALs, so they run before this process starts one; the
	 * first only asks whether an EAL can start here at all. */
	{
		pid_t pid;
		int pfd[2], status, st = WEFT_ERR_NO_DEVICE;

		if (pipe(pfd) != 0 || (pid = fork()) < 0)
			return 1;
		if (pid == 0) {
			st = ops->probe(why, sizeof(why));
			if (write(pfd[1], &st, sizeof(st)) != (ssize_t)sizeof(st) ||
			    write(pfd[1], why, sizeof(why)) != (ssize_t)sizeof(why))
				_exit(1);
			_exit(0);
		}
		close(pfd[1]);
		if (read(pfd[0], &st, sizeof(st)) != (ssize_t)sizeof(st) ||
		    read(pfd[0], why, sizeof(why)) != (ssize_t)sizeof(why))
			st = WEFT_ERR_NO_DEVICE;
		close(pfd[0]);
		waitpid(pid, &status, 0);
		if (st != WEFT_OK) {
			fprintf(stderr, "the DPDK EAL cannot start here: %s; skipping\n", why);
			return 77;
		}
	}
	if (getenv("WT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("WT_TEST_FILTER"));
	fails = cmocka_run_group_tests_name("dpdk_children", children, NULL, NULL);
	if (ops->probe(why, sizeof(why)) != WEFT_OK) {
		fprintf(stderr, "the DPDK EAL did not start in this process: %s\n", why);
		return 1;
	}
	fails += cmocka_run_group_tests_name("dpdk", here, NULL, NULL);
	return fails;
}
