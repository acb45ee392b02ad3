/* Unit tests for WEFT_FAULT injection (tests/unit/drivers): the parser, and the wrapper
 * over real tcp links in one process (plus a fake link whose sends complete later). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "drivers/fault.h"
#include "drivers/link.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"

#define MAX_EV 64
#define WAIT_S 30.0 /* generous: a loaded 2-core machine */
#define MAX_RANKS 3
#define SENTINEL 0xffffffffu

static const wt_link_ops_t *tcp;
static int job_counter;

/* ---- received frames ---- */

struct rxlog {
	int n, cap;
	uint8_t **data;
	size_t *len;
	int *from;
	uint64_t *t_ns;
	int errors;
};

static void rx_add(struct rxlog *r, int from, const void *d, size_t len)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->data = realloc(r->data, (size_t)r->cap * sizeof(*r->data));
		r->len = realloc(r->len, (size_t)r->cap * sizeof(*r->len));
		r->from = realloc(r->from, (size_t)r->cap * sizeof(*r->from));
		r->t_ns = realloc(r->t_ns, (size_t)r->cap * sizeof(*r->t_ns));
		assert_true(r->data && r->len && r->from && r->t_ns);
	}
	r->data[r->n] = malloc(len ? len : 1);
	assert_non_null(r->data[r->n]);
	memcpy(r->data[r->n], d, len);
	r->len[r->n] = len;
	r->from[r->n] = from;
	r->t_ns[r->n] = wt_util_time_ns();
	r->n++;
}

static void rx_free(struct rxlog *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->data[i]);
	free(r->data);
	free(r->len);
	free(r->from);
	free(r->t_ns);
	memset(r, 0, sizeof(*r));
}

static uint32_t rx_seq(const struct rxlog *r, int i)
{
	uint32_t s;

	assert_true(r->len[i] >= 4);
	memcpy(&s, r->data[i], 4);
	return s;
}

static int rx_has_sentinel(const struct rxlog *r, int from)
{
	for (int i = r->n - 1; i >= 0; i--) {
		if (r->from[i] == from && r->len[i] == 4 && rx_seq(r, i) == SENTINEL)
			return 1;
	}
	return 0;
}

/* ---- frames: a sequence number, then a pattern ---- */

static size_t frame_len(uint32_t seq)
{
	return 8 + ((seq * 2654435761u) >> 9) % 200;
}

static void frame_fill(uint8_t *buf, uint32_t seq, size_t len)
{
	memcpy(buf, &seq, 4);
	for (size_t j = 4; j < len; j++)
		buf[j] = (uint8_t)(seq * 131u + j * 7u);
}

static int frame_ok(const struct rxlog *r, int i, uint32_t seq)
{
	uint8_t want[256];
	size_t len = frame_len(seq);

	if (r->len[i] != len)
		return 0;
	frame_fill(want, seq, len);
	return memcmp(want, r->data[i], len) == 0;
}

static weft_status_t send_seq(wt_link_t *l, int peer, uint32_t seq)
{
	uint8_t buf[256];
	size_t len = frame_len(seq);
	struct iovec iov[2] = {{buf, 4}, {buf + 4, len - 4}};

	frame_fill(buf, seq, len);
	return wt_link_ops(l)->send(l, peer, iov, 2, NULL);
}

/* ---- a world of real tcp links, some wrapped ---- */

struct world {
	int n;
	char job[32];
	wt_link_t *l[MAX_RANKS]; /* the tcp links */
	wt_link_t *w[MAX_RANKS]; /* their wrappers, or NULL */
	struct rxlog rx[MAX_RANKS];
};

static wt_link_t *top(struct world *w, int r)
{
	return w->w[r] ? w->w[r] : w->l[r];
}

static void world_open(struct world *w, int n)
{
	uint8_t blob[MAX_RANKS][WT_LINK_ADDR_MAX];
	size_t len[MAX_RANKS];

	memset(w, 0, sizeof(*w));
	w->n = n;
	snprintf(w->job, sizeof(w->job), "f%d-%d", (int)getpid(), job_counter++);
	for (int r = 0; r < n; r++) {
		wt_link_config_t c;

		memset(&c, 0, sizeof(c));
		c.rank = r;
		c.size = n;
		c.job_id = w->job;
		wt_util_key_from_token(&c.key, "tok");
		c.connect_timeout = WAIT_S;
		assert_int_equal(tcp->open(&c, &w->l[r]), WEFT_OK);
		len[r] = WT_LINK_ADDR_MAX;
		assert_int_equal(tcp->address(w->l[r], blob[r], &len[r]), WEFT_OK);
	}
	for (int r = 0; r < n; r++) {
		for (int p = 0; p < n; p++) {
			if (p != r)
				assert_int_equal(tcp->connect(w->l[r], p, blob[p], len[p]),
						 WEFT_OK);
		}
	}
}

static void world_wrap(struct world *w, int r, const char *spec)
{
	wt_fault_config_t cfg;
	char err[256];

	assert_int_equal(wt_fault_parse(spec, &cfg, err, sizeof(err)), WEFT_OK);
	assert_int_equal(cfg.enabled, 1);
	assert_int_equal(wt_fault_wrap(w->l[r], &cfg, r, &w->w[r]), WEFT_OK);
}

static void world_close(struct world *w)
{
	for (int r = 0; r < w->n; r++) {
		if (w->w[r])
			wt_link_ops(w->w[r])->close(w->w[r]);
		tcp->close(w->l[r]);
		rx_free(&w->rx[r]);
	}
}

static int world_poll(struct world *w)
{
	wt_link_event_t ev[MAX_EV];
	int total = 0;

	for (int r = 0; r < w->n; r++) {
		wt_link_t *l = top(w, r);
		int n = wt_link_ops(l)->poll(l, ev, MAX_EV);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == WT_LINK_EV_FRAME)
				rx_add(&w->rx[r], ev[i].peer, ev[i].data, ev[i].len);
			else if (ev[i].type == WT_LINK_EV_PEER_ERROR)
				w->rx[r].errors++;
		}
		assert_int_equal(w->rx[r].errors, 0);
		total += n;
	}
	return total;
}

/* Polls every rank, sleeping briefly when idle, until rank has count frames. */
static void world_pump_until(struct world *w, int rank, int count)
{
	uint64_t deadline = wt_util_deadline_in(WAIT_S);

	while (w->rx[rank].n < count) {
		if (world_poll(w) == 0)
			wt_util_sleep_ns(200000);
		assert_false(wt_util_deadline_passed(deadline));
	}
}

static void world_pump_for(struct world *w, double seconds)
{
	uint64_t deadline = wt_util_deadline_in(seconds);

	while (!wt_util_deadline_passed(deadline)) {
		if (world_poll(w) == 0)
			wt_util_sleep_ns(200000);
	}
}

/* A frame sent on the bare tcp link behind everything the wrapper gave it: once it
 * arrives (tcp is ordered), every earlier frame on that stream has arrived too. */
static void world_fence(struct world *w, int from, int to)
{
	uint32_t s = SENTINEL;
	struct iovec iov = {&s, 4};
	uint64_t deadline = wt_util_deadline_in(WAIT_S);

	assert_int_equal(tcp->send(w->l[from], to, &iov, 1, NULL), WEFT_OK);
	while (!rx_has_sentinel(&w->rx[to], from)) {
		if (world_poll(w) == 0)
			wt_util_sleep_ns(200000);
		assert_false(wt_util_deadline_passed(deadline));
	}
}

static void send_all(struct world *w, int from, int to, uint32_t first, uint32_t count)
{
	uint64_t deadline = wt_util_deadline_in(WAIT_S);

	for (uint32_t s = first; s < first + count;) {
		weft_status_t st = send_seq(top(w, from), to, s);

		if (st == WT_AGAIN) {
			world_poll(w);
			assert_false(wt_util_deadline_passed(deadline));
			continue;
		}
		assert_int_equal(st, WEFT_OK);
		s++;
	}
}

static wt_link_stats_t stats_of(wt_link_t *l, int peer)
{
	wt_link_stats_t st;

	memset(&st, 0, sizeof(st));
	assert_non_null(wt_link_ops(l)->stats);
	wt_link_ops(l)->stats(l, peer, &st);
	return st;
}

/* ---- parser ---- */

static void test_parse_ok(void **state)
{
	wt_fault_config_t c;
	char err[256];

	(void)state;
	assert_int_equal(
	    wt_fault_parse("drop=0.05,dup=0.01,reorder=0.02,delay_us=200,corrupt=0.001,seed=7", &c,
			   err, sizeof(err)),
	    WEFT_OK);
	assert_int_equal(c.enabled, 1);
	assert_true(c.drop == 0.05 && c.dup == 0.01 && c.reorder == 0.02 && c.corrupt == 0.001);
	assert_int_equal(c.delay_us, 200);
	assert_int_equal(c.seed, 7);
	assert_int_equal(c.peer, -1);
	assert_string_equal(err, "");

	assert_int_equal(wt_fault_parse("seed=18446744073709551615,peer=3,drop=1,corrupt=0", &c,
					err, sizeof(err)),
			 WEFT_OK);
	assert_true(c.seed == UINT64_MAX && c.peer == 3 && c.drop == 1.0 && c.corrupt == 0.0);
	assert_int_equal(c.delay_us, 0);
	assert_true(c.dup == 0.0 && c.reorder == 0.0);

	assert_int_equal(
	    wt_fault_parse("delay_us=10000000,dup=1e-3,reorder=.5,drop=1.0E0", &c, NULL, 0),
	    WEFT_OK);
	assert_true(c.delay_us == 10000000 && c.dup == 0.001 && c.reorder == 0.5 && c.drop == 1.0);
	assert_int_equal(wt_fault_parse("drop=0.00000000000000000000000000001", &c, NULL, 0),
			 WEFT_OK);
	assert_true(c.drop > 0.0 && c.drop < 1e-28);

	/* Unset or empty: no faults. */
	c.enabled = 5;
	assert_int_equal(wt_fault_parse(NULL, &c, err, sizeof(err)), WEFT_OK);
	assert_int_equal(c.enabled, 0);
	c.enabled = 5;
	assert_int_equal(wt_fault_parse("", &c, err, sizeof(err)), WEFT_OK);
	assert_int_equal(c.enabled, 0);
	assert_int_equal(c.peer, -1);
	/* Non-empty with all rates zero still enables the wrapper. */
	assert_int_equal(wt_fault_parse("seed=1", &c, err, sizeof(err)), WEFT_OK);
	assert_int_equal(c.enabled, 1);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *spec;
		const char *names; /* must appear in the message */
	} bad[] = {
	    {"drop=1.5", "drop"},
	    {"drop=-0.1", "-0.1"},
	    {"drop=abc", "abc"},
	    {"drop=0.1x", "0.1x"},
	    {"drop=", "drop"},
	    {"drop", "'drop'"},
	    {"frob=1", "frob"},
	    {"drop=0.1,drop=0.2", "drop"},
	    {"drop=0.1,", "offset 9"},
	    {",drop=0.1", "offset 0"},
	    {"drop=0.1,,dup=0.1", "offset 9"},
	    {"delay_us=10000001", "delay_us"},
	    {"delay_us=1.5", "1.5"},
	    {"delay_us=-1", "delay_us"},
	    {"seed=18446744073709551616", "seed"},
	    {"seed=-1", "seed"},
	    {"seed=0x10", "0x10"},
	    {"peer=-1", "peer"},
	    {"peer=1048576", "peer"},
	    {"drop=nan", "nan"},
	    {"drop=inf", "inf"},
	    {"drop=1e", "1e"},
	    {"drop=2e-1e", "2e-1e"},
	    {" drop=0.1", "' drop'"},
	    {"drop=0.1 ", "0.1 "},
	    {"DROP=0.1", "DROP"},
	    {"drop=0.1;dup=0.1", "0.1;dup=0.1"},
	    {"corrupt=1.0000001", "corrupt"},
	    {"reorder=10e-1x", "reorder"},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wt_fault_config_t c = {.drop = 0.25, .seed = 99, .peer = 4, .enabled = 1};

		err[0] = '\0';
		if (wt_fault_parse(bad[i].spec, &c, err, sizeof(err)) != WEFT_ERR_INVALID_ARG)
			fail_msg("'%s' was accepted", bad[i].spec);
		if (strstr(err, "WEFT_FAULT") == NULL || strstr(err, bad[i].names) == NULL)
			fail_msg("'%s': message '%s' does not name '%s'", bad[i].spec, err,
				 bad[i].names);
		/* Outputs are written only on success. */
		assert_true(c.drop == 0.25 && c.seed == 99 && c.peer == 4 && c.enabled == 1);
	}
	/* Too long, and a tiny error buffer is still terminated. */
	{
		char *big = malloc(2000);
		wt_fault_config_t c;

		assert_non_null(big);
		memset(big, 'x', 1999);
		big[1999] = '\0';
		assert_int_equal(wt_fault_parse(big, &c, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
		assert_non_null(strstr(err, "longer"));
		assert_int_equal(wt_fault_parse("frob=1", &c, err, 4), WEFT_ERR_INVALID_ARG);
		assert_int_equal(strlen(err), 3);
		free(big);
	}
}

/* ---- the wrapper over tcp ---- */

static void test_caps(void **state)
{
	struct world w;
	const wt_link_ops_t *o;
	wt_fault_config_t cfg = {.peer = -1, .enabled = 1};
	wt_link_t *x = NULL;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "drop=0,seed=3");
	o = wt_link_ops(w.w[0]);
	assert_ptr_not_equal(o, tcp);
	assert_int_equal(o->size, sizeof(wt_link_ops_t));
	assert_string_equal(o->name, "tcp");
	assert_int_equal(o->caps & (WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED), 0);
	assert_int_equal(o->caps, tcp->caps & ~(WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED));
	assert_true(o->caps & WT_LINK_CAP_HAS_FD);
	assert_int_equal(wt_link_max_frame(w.w[0]), wt_link_max_frame(w.l[0]));
	assert_int_equal(o->fd(w.w[0]), tcp->fd(w.l[0]));
	assert_null(o->get);
	assert_true(wt_fault_is(w.w[0]));
	assert_false(wt_fault_is(w.l[0]));
	assert_false(wt_fault_is(NULL));
	/* Nothing held: no timer of its own, and tcp has none either. */
	assert_int_equal(o->timer_ms(w.w[0]), tcp->timer_ms ? tcp->timer_ms(w.l[0]) : -1);
	/* Bad configs and arguments are refused. */
	cfg.drop = 1.5;
	assert_int_equal(wt_fault_wrap(w.l[1], &cfg, 1, &x), WEFT_ERR_INVALID_ARG);
	cfg.drop = NAN;
	assert_int_equal(wt_fault_wrap(w.l[1], &cfg, 1, &x), WEFT_ERR_INVALID_ARG);
	cfg.drop = 0;
	cfg.delay_us = 10000001;
	assert_int_equal(wt_fault_wrap(w.l[1], &cfg, 1, &x), WEFT_ERR_INVALID_ARG);
	cfg.delay_us = 0;
	assert_int_equal(wt_fault_wrap(NULL, &cfg, 1, &x), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_fault_wrap(w.l[1], &cfg, -1, &x), WEFT_ERR_INVALID_ARG);
	assert_null(x);
	/* Invalid sends reach tcp, which refuses them. */
	{
		uint8_t b = 1;
		struct iovec iov = {&b, 1};

		assert_int_equal(o->send(w.w[0], 5, &iov, 1, NULL), WEFT_ERR_INVALID_ARG);
		assert_int_equal(o->send(w.w[0], 1, NULL, 1, NULL), WEFT_ERR_INVALID_ARG);
	}
	/* A clean wrapper passes frames through, in order, both ways. */
	send_all(&w, 0, 1, 0, 50);
	send_all(&w, 1, 0, 0, 50);
	world_pump_until(&w, 1, 50);
	world_pump_until(&w, 0, 50);
	for (int i = 0; i < 50; i++) {
		assert_true(frame_ok(&w.rx[1], i, (uint32_t)i));
		assert_true(frame_ok(&w.rx[0], i, (uint32_t)i));
	}
	world_close(&w);
}

static void test_drop_all(void **state)
{
	struct world w;
	wt_link_stats_t st;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "drop=1,seed=1");
	send_all(&w, 0, 1, 0, 200);
	send_all(&w, 1, 0, 0, 200); /* the other direction is not wrapped */
	world_fence(&w, 0, 1);
	world_pump_until(&w, 0, 200);
	assert_int_equal(w.rx[1].n, 1); /* only the fence */
	for (int i = 0; i < 200; i++)
		assert_true(frame_ok(&w.rx[0], i, (uint32_t)i));
	st = stats_of(w.w[0], 1);
	assert_int_equal(st.fault_drops, 200);
	assert_int_equal(st.fault_dups + st.fault_reorders + st.fault_delays + st.fault_corrupts,
			 0);
	st = stats_of(w.w[0], 0);
	assert_int_equal(st.fault_drops, 0);
	world_close(&w);
}

static void test_dup_all(void **state)
{
	struct world w;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "dup=1,seed=2");
	send_all(&w, 0, 1, 0, 100);
	world_fence(&w, 0, 1);
	assert_int_equal(w.rx[1].n, 201);
	for (int i = 0; i < 200; i++)
		assert_true(frame_ok(&w.rx[1], i, (uint32_t)(i / 2)));
	assert_int_equal(stats_of(w.w[0], 1).fault_dups, 100);
	world_close(&w);
}

static int bits_differ(const uint8_t *a, const uint8_t *b, size_t len)
{
	int n = 0;

	for (size_t i = 0; i < len; i++)
		n += __builtin_popcount((unsigned)(a[i] ^ b[i]));
	return n;
}

static void test_corrupt_all(void **state)
{
	struct world w;
	uint8_t want[256];
	int first_byte_hits = 0;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "corrupt=1,seed=3");
	send_all(&w, 0, 1, 0, 300);
	world_fence(&w, 0, 1);
	assert_int_equal(w.rx[1].n, 301);
	for (int i = 0; i < 300; i++) {
		size_t len = frame_len((uint32_t)i);

		frame_fill(want, (uint32_t)i, len);
		assert_int_equal(w.rx[1].len[i], len);
		assert_int_equal(bits_differ(want, w.rx[1].data[i], len), 1);
		first_byte_hits += want[0] != w.rx[1].data[i][0];
	}
	/* Offsets are spread over the frame, not always the same byte. */
	assert_true(first_byte_hits < 100);
	assert_int_equal(stats_of(w.w[0], 1).fault_corrupts, 300);
	world_close(&w);
}

static void test_reorder_all(void **state)
{
	static const uint32_t want[11] = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 10};
	struct world w;
	uint64_t t_last;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "reorder=1,seed=4");
	send_all(&w, 0, 1, 0, 10);
	t_last = wt_util_time_ns();
	send_all(&w, 0, 1, 10, 1);
	/* Frame 10 has no successor: it is released after 1 ms. */
	assert_true(wt_link_ops(w.w[0])->timer_ms(w.w[0]) >= 0);
	world_pump_until(&w, 1, 11);
	for (int i = 0; i < 11; i++)
		assert_true(frame_ok(&w.rx[1], i, want[i]));
	assert_true(w.rx[1].t_ns[10] >= t_last + 1000000);
	assert_int_equal(stats_of(w.w[0], 1).fault_reorders, 6);
	assert_int_equal(wt_link_ops(w.w[0])->timer_ms(w.w[0]), -1);
	world_close(&w);
}

/* Sleeps on both links' fds no longer than the wrapper's timer says. */
static void wait_fds(struct world *w, int maxms)
{
	struct pollfd pfd[2];
	int t = wt_link_ops(w->w[0])->timer_ms(w->w[0]);

	for (int r = 0; r < 2; r++) {
		pfd[r].fd = wt_link_ops(top(w, r))->fd(top(w, r));
		pfd[r].events = POLLIN;
	}
	if (t < 0 || t > maxms)
		t = maxms;
	if (wt_link_ops(w->w[0])->arm(w->w[0]) == 0 && tcp->arm(w->l[1]) == 0) {
		poll(pfd, 2, t);
		wt_link_ops(w->w[0])->disarm(w->w[0]);
		tcp->disarm(w->l[1]);
	}
}

static void test_delay(void **state)
{
	struct world w;
	uint64_t sent_ns[50];
	uint64_t deadline;
	int t;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "delay_us=20000,seed=5");
	for (uint32_t s = 0; s < 50; s++) {
		sent_ns[s] = wt_util_time_ns();
		assert_int_equal(send_seq(w.w[0], 1, s), WEFT_OK);
	}
	t = wt_link_ops(w.w[0])->timer_ms(w.w[0]);
	assert_true(t > 0 && t <= 20);
	assert_int_equal(wt_link_ops(w.w[0])->arm(w.w[0]), 0);
	deadline = wt_util_deadline_in(WAIT_S);
	while (w.rx[1].n < 50) {
		world_poll(&w);
		wait_fds(&w, 50);
		assert_false(wt_util_deadline_passed(deadline));
	}
	for (int i = 0; i < 50; i++) {
		assert_true(frame_ok(&w.rx[1], i, (uint32_t)i));
		assert_true(w.rx[1].t_ns[i] >= sent_ns[i] + 20000000ull);
	}
	assert_int_equal(stats_of(w.w[0], 1).fault_delays, 50);
	assert_int_equal(wt_link_ops(w.w[0])->timer_ms(w.w[0]), -1);
	world_close(&w);
}

static void test_peer_filter(void **state)
{
	struct world w;

	(void)state;
	world_open(&w, 3);
	world_wrap(&w, 0, "peer=2,drop=1,seed=6");
	send_all(&w, 0, 1, 0, 100);
	send_all(&w, 0, 2, 0, 100);
	world_fence(&w, 0, 1);
	world_fence(&w, 0, 2);
	assert_int_equal(w.rx[1].n, 101);
	for (int i = 0; i < 100; i++)
		assert_true(frame_ok(&w.rx[1], i, (uint32_t)i));
	assert_int_equal(w.rx[2].n, 1);
	assert_int_equal(stats_of(w.w[0], 1).fault_drops, 0);
	assert_int_equal(stats_of(w.w[0], 2).fault_drops, 100);
	world_close(&w);
}

#define PATTERN_N 2000

/* Both ranks wrapped with spec; which of PATTERN_N frames arrived each way. */
static void drop_pattern(const char *spec, uint8_t got01[PATTERN_N], uint8_t got10[PATTERN_N])
{
	struct world w;
	uint8_t *got[2] = {got10, got01}; /* indexed by receiver */

	world_open(&w, 2);
	world_wrap(&w, 0, spec);
	world_wrap(&w, 1, spec);
	send_all(&w, 0, 1, 0, PATTERN_N);
	send_all(&w, 1, 0, 0, PATTERN_N);
	world_fence(&w, 0, 1);
	world_fence(&w, 1, 0);
	for (int r = 0; r < 2; r++) {
		int n = 0;

		memset(got[r], 0, PATTERN_N);
		for (int i = 0; i < w.rx[r].n - 1; i++) {
			uint32_t s = rx_seq(&w.rx[r], i);

			assert_true(s < PATTERN_N && frame_ok(&w.rx[r], i, s));
			assert_int_equal(got[r][s], 0);
			got[r][s] = 1;
			n++;
		}
		assert_int_equal(stats_of(w.w[1 - r], r).fault_drops, PATTERN_N - n);
	}
	world_close(&w);
}

static void test_same_seed(void **state)
{
	static uint8_t a01[PATTERN_N], a10[PATTERN_N], b01[PATTERN_N], b10[PATTERN_N];
	static uint8_t c01[PATTERN_N], c10[PATTERN_N];
	int dropped = 0;

	(void)state;
	drop_pattern("drop=0.3,seed=7", a01, a10);
	drop_pattern("seed=7,drop=0.3", b01, b10);
	drop_pattern("drop=0.3,seed=8", c01, c10);
	assert_memory_equal(a01, b01, PATTERN_N);
	assert_memory_equal(a10, b10, PATTERN_N);
	assert_memory_not_equal(a01, c01, PATTERN_N);
	assert_memory_not_equal(a10, c10, PATTERN_N);
	/* Each direction has a stream of its own. */
	assert_memory_not_equal(a01, a10, PATTERN_N);
	for (int i = 0; i < PATTERN_N; i++)
		dropped += !a01[i];
	assert_true(dropped > 400 && dropped < 800);
}

static void test_rates(void **state)
{
	struct world w;
	wt_link_stats_t st;
	double kept;
	const int n = 5000;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "drop=0.1,dup=0.2,corrupt=0.05,reorder=0.1,seed=11");
	send_all(&w, 0, 1, 0, (uint32_t)n);
	world_pump_for(&w, 0.01); /* a frame held for reorder at the end is released */
	world_fence(&w, 0, 1);
	st = stats_of(w.w[0], 1);
	kept = (double)(n - (int)st.fault_drops);
	assert_true(st.fault_drops >= 0.07 * n && st.fault_drops <= 0.13 * n);
	assert_true(st.fault_dups >= 0.16 * kept && st.fault_dups <= 0.24 * kept);
	assert_true(st.fault_corrupts >= 0.03 * kept && st.fault_corrupts <= 0.07 * kept);
	/* A frame releasing a held one cannot be held itself: 0.1 / 1.1 of the kept. */
	assert_true(st.fault_reorders >= 0.06 * kept && st.fault_reorders <= 0.12 * kept);
	assert_int_equal(st.fault_delays, 0);
	/* Every frame not dropped arrives, duplicates twice; nothing else is invented. */
	assert_int_equal(w.rx[1].n - 1, n - (int)st.fault_drops + (int)st.fault_dups);
	world_close(&w);
}

/* The receiver does not poll: the wrapper's queue and then tcp's fill up; nothing the
 * caller was told was taken is lost, and order survives. */
static void test_backpressure(void **state)
{
	struct world w;
	uint8_t *buf = malloc(64 << 10);
	struct iovec iov = {buf, 60000};
	uint32_t sent = 0;
	int again = 0;
	uint64_t deadline = wt_util_deadline_in(WAIT_S);
	const wt_link_ops_t *o;

	(void)state;
	assert_non_null(buf);
	world_open(&w, 2);
	world_wrap(&w, 0, "delay_us=1000,seed=12");
	o = wt_link_ops(w.w[0]);
	world_fence(&w, 0, 1); /* the connection is up */
	rx_free(&w.rx[1]);
	while (again < 50) {
		weft_status_t st;

		memset(buf, (int)(sent & 0xff), iov.iov_len);
		memcpy(buf, &sent, 4);
		st = o->send(w.w[0], 1, &iov, 1, NULL);
		if (st == WEFT_OK) {
			sent++;
			again = 0;
			continue;
		}
		assert_int_equal(st, WT_AGAIN);
		again++;
		o->poll(w.w[0], NULL, 0); /* hands due frames to tcp until it is full */
		wt_util_sleep_ns(2000000);
		assert_false(wt_util_deadline_passed(deadline));
	}
	assert_true(sent > 16 * 1000000 / 60000);
	assert_true(o->timer_ms(w.w[0]) >= 0); /* still holding what tcp refused */
	world_pump_until(&w, 1, (int)sent);
	for (uint32_t i = 0; i < sent; i++) {
		assert_int_equal(w.rx[1].len[i], 60000);
		assert_int_equal(rx_seq(&w.rx[1], (int)i), i);
		assert_int_equal(w.rx[1].data[i][59999], (uint8_t)(i & 0xff));
	}
	world_pump_for(&w, 0.01);
	assert_int_equal(w.rx[1].n, (int)sent);
	assert_int_equal(o->timer_ms(w.w[0]), -1);
	free(buf);
	world_close(&w);
}

/* Closing with frames held for reorder and delay frees them (ASan checks the leak). */
static void test_close_frees(void **state)
{
	struct world w;

	(void)state;
	world_open(&w, 2);
	world_wrap(&w, 0, "reorder=1,dup=1,corrupt=0.5,delay_us=100000,seed=13");
	world_wrap(&w, 1, "reorder=1,seed=13");
	send_all(&w, 0, 1, 0, 21);
	send_all(&w, 1, 0, 0, 1);
	assert_int_equal(stats_of(w.w[0], 1).fault_dups, 21);
	assert_int_equal(stats_of(w.w[1], 0).fault_reorders, 1);
	assert_true(wt_link_ops(w.w[0])->timer_ms(w.w[0]) > 0);
	world_close(&w);
}

/* ---- a fake inner link whose sends complete later, and which can be made full ---- */

#define MOCK_MAX 64

struct wt_link {
	wt_link_base_t base;
	int full;
	int nsent;
	uint32_t sent_seq[1024];
	int has_info[1024]; /* the frame came through send_info, with info */
	wt_link_frame_info_t info[1024];
	int npend;
	struct {
		void *cookie;
		const uint8_t *data;
		size_t len;
		uint8_t copy[MOCK_MAX];
	} pend[256];
};

static weft_status_t mock_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			       void *cookie)
{
	(void)peer;
	assert_int_equal(iovcnt, 1);
	assert_true(iov[0].iov_len >= 4 && iov[0].iov_len <= MOCK_MAX);
	if (l->full)
		return WT_AGAIN;
	assert_true(l->npend < 256 && l->nsent < 1024);
	l->pend[l->npend].cookie = cookie;
	l->pend[l->npend].data = iov[0].iov_base;
	l->pend[l->npend].len = iov[0].iov_len;
	memcpy(l->pend[l->npend].copy, iov[0].iov_base, iov[0].iov_len);
	l->npend++;
	l->has_info[l->nsent] = 0;
	memcpy(&l->sent_seq[l->nsent++], iov[0].iov_base, 4);
	return WEFT_INPROGRESS;
}

static weft_status_t mock_send_info(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				    void *cookie, const wt_link_frame_info_t *info)
{
	weft_status_t st = mock_send(l, peer, iov, iovcnt, cookie);

	assert_non_null(info);
	if (st == WEFT_INPROGRESS) {
		l->has_info[l->nsent - 1] = 1;
		l->info[l->nsent - 1] = *info;
	}
	return st;
}

/* Completes every pending send; its bytes must still be intact (ASan: still allocated). */
static int mock_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;

	while (n < max && n < l->npend) {
		assert_memory_equal(l->pend[n].data, l->pend[n].copy, l->pend[n].len);
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_SEND_DONE;
		ev[n].cookie = l->pend[n].cookie;
		n++;
	}
	memmove(l->pend, l->pend + n, (size_t)(l->npend - n) * sizeof(l->pend[0]));
	l->npend -= n;
	return n;
}

static weft_status_t mock_address(wt_link_t *l, void *blob, size_t *len)
{
	(void)l;
	(void)blob;
	*len = 0;
	return WEFT_OK;
}

static weft_status_t mock_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	(void)l;
	(void)peer;
	(void)blob;
	(void)len;
	return WEFT_OK;
}

static int mock_arm(wt_link_t *l)
{
	return l->npend > 0;
}

static void mock_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	(void)peer;
	st->frames_sent += (uint64_t)l->nsent;
}

static void mock_close(wt_link_t *l)
{
	free(l);
}

static const wt_link_ops_t mock_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "mock",
    .caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED,
    .address = mock_address,
    .connect = mock_connect,
    .send = mock_send,
    .poll = mock_poll,
    .arm = mock_arm,
    .stats = mock_stats,
    .close = mock_close,
};

static wt_link_t *mock_open(void)
{
	wt_link_t *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	l->base.ops = &mock_ops;
	l->base.max_frame = MOCK_MAX;
	return l;
}

/* The same mock with send_info. */
static wt_link_ops_t mock_info_ops;

static void mock_give_info(wt_link_t *l)
{
	mock_info_ops = mock_ops;
	mock_info_ops.send_info = mock_send_info;
	l->base.ops = &mock_info_ops;
}

static wt_link_t *mock_open_info(void)
{
	wt_link_t *l = mock_open();

	mock_give_info(l);
	return l;
}

static wt_link_t *mock_wrap(wt_link_t *inner, const char *spec)
{
	wt_fault_config_t cfg;
	wt_link_t *w = NULL;

	assert_int_equal(wt_fault_parse(spec, &cfg, NULL, 0), WEFT_OK);
	assert_int_equal(wt_fault_wrap(inner, &cfg, 0, &w), WEFT_OK);
	return w;
}

/* Sends frame seq through send_info with info, or through send when info is NULL. */
static weft_status_t mock_send_with(wt_link_t *w, uint32_t seq, void *cookie,
				    const wt_link_frame_info_t *info)
{
	/* A frame passed straight through may stay referenced (WEFT_INPROGRESS) until its
	 * SEND_DONE: it must outlive this call. */
	static uint8_t bufs[64][16];
	static unsigned next;
	uint8_t *buf = bufs[next++ % 64];
	struct iovec iov = {buf, 16};

	memset(buf, 0x5a, 16);
	memcpy(buf, &seq, 4);
	if (info != NULL)
		return wt_link_ops(w)->send_info(w, 1, &iov, 1, cookie, info);
	return wt_link_ops(w)->send(w, 1, &iov, 1, cookie);
}

static weft_status_t mock_send_seq(wt_link_t *w, uint32_t seq, void *cookie)
{
	return mock_send_with(w, seq, cookie, NULL);
}

static void test_inprogress(void **state)
{
	wt_link_t *m = mock_open();
	wt_link_t *w = mock_wrap(m, "seed=1");
	const wt_link_ops_t *o = wt_link_ops(w);
	wt_link_event_t ev[MAX_EV];
	int token;
	wt_link_stats_t st;

	(void)state;
	/* Passed straight through: the caller's result and cookie. */
	assert_int_equal(mock_send_seq(w, 1, &token), WEFT_INPROGRESS);
	assert_int_equal(o->poll(w, ev, MAX_EV), 1);
	assert_int_equal(ev[0].type, WT_LINK_EV_SEND_DONE);
	assert_ptr_equal(ev[0].cookie, &token);
	o->close(w);

	/* Copies: taken at once; their completions stay inside. */
	w = mock_wrap(m, "dup=1,seed=1");
	o = wt_link_ops(w);
	assert_int_equal(mock_send_seq(w, 2, &token), WEFT_OK);
	assert_int_equal(m->nsent, 3);
	assert_int_equal(o->poll(w, ev, MAX_EV), 0);
	assert_int_equal(m->npend, 0);
	assert_int_equal(mock_send_seq(w, 3, &token), WEFT_OK);
	assert_int_equal(m->npend, 2);
	assert_int_equal(o->poll(w, ev, 1), 0); /* one per round: all rounds swallowed */
	assert_int_equal(o->poll(w, ev, MAX_EV), 0);
	assert_int_equal(m->npend, 0);

	/* Inner full: the copies wait, further sends are pushed back, nothing is lost. */
	m->full = 1;
	assert_int_equal(mock_send_seq(w, 4, &token), WEFT_OK);
	assert_int_equal(m->nsent, 5);
	assert_int_equal(mock_send_seq(w, 5, &token), WT_AGAIN);
	assert_int_equal(o->arm(w), 0); /* no point waking before the retry time */
	assert_true(o->timer_ms(w) >= 0 && o->timer_ms(w) <= 1);
	assert_int_equal(o->poll(w, ev, MAX_EV), 0);
	assert_int_equal(m->nsent, 5);
	m->full = 0;
	assert_int_equal(o->poll(w, ev, MAX_EV), 0);
	assert_int_equal(m->nsent, 7);
	assert_int_equal(m->sent_seq[5], 4);
	assert_int_equal(m->sent_seq[6], 4);
	assert_int_equal(o->timer_ms(w), -1);
	memset(&st, 0, sizeof(st));
	o->stats(w, 1, &st);
	assert_int_equal(st.frames_sent, 7);
	assert_int_equal(st.fault_dups, 3);
	/* Closing with copies the inner link has not completed frees them. */
	assert_int_equal(mock_send_seq(w, 6, &token), WEFT_OK);
	assert_int_equal(m->npend, 2);
	o->close(w);
	m->npend = 0;
	mock_close(m);
}

/* A frame the inner link refuses gives its draws back: the faults follow the frames
 * taken, not the attempts. */
static void test_again_keeps_pattern(void **state)
{
	wt_link_t *m[2];
	wt_link_t *w[2];

	(void)state;
	for (int run = 0; run < 2; run++) {
		m[run] = mock_open();
		w[run] = mock_wrap(m[run], "dup=0.5,drop=0.2,seed=21");
		for (uint32_t s = 0; s < 200; s++) {
			wt_link_event_t ev[MAX_EV];
			weft_status_t st;

			m[run]->full = run == 1;
			st = mock_send_seq(w[run], s, NULL);
			if (st == WT_AGAIN) {
				m[run]->full = 0;
				wt_link_ops(w[run])->poll(w[run], ev, MAX_EV);
				st = mock_send_seq(w[run], s, NULL);
			}
			assert_true(st == WEFT_OK || st == WEFT_INPROGRESS);
			m[run]->full = 0;
			while (m[run]->npend > 0 || wt_link_ops(w[run])->timer_ms(w[run]) >= 0)
				wt_link_ops(w[run])->poll(w[run], ev, MAX_EV);
		}
	}
	assert_true(m[0]->nsent > 150);
	assert_int_equal(m[0]->nsent, m[1]->nsent);
	assert_memory_equal(m[0]->sent_seq, m[1]->sent_seq, (size_t)m[0]->nsent * 4);
	for (int run = 0; run < 2; run++) {
		wt_link_ops(w[run])->close(w[run]);
		mock_close(m[run]);
	}
}

/* A description that differs in every field from frame to frame, so a swap shows. */
static wt_link_frame_info_t info_for(uint32_t seq)
{
	wt_link_frame_info_t i = {.kind = WT_LINK_FRAME_DATA + (int)(seq % 3),
				  .seq = 1000 + (uint64_t)seq,
				  .ack = 7000 + 3 * (uint64_t)seq,
				  .ack_req = (int)(seq & 1)};

	return i;
}

/* Polls until the wrapper holds nothing and the mock has completed everything. */
static void mock_drain(wt_link_t *w, wt_link_t *m)
{
	const wt_link_ops_t *o = wt_link_ops(w);
	uint64_t deadline = wt_util_deadline_in(WAIT_S);
	wt_link_event_t ev[MAX_EV];

	while (m->npend > 0 || o->timer_ms(w) >= 0) {
		o->poll(w, ev, MAX_EV);
		if (m->npend == 0 && o->timer_ms(w) > 0)
			wt_util_sleep_ns(300000);
		assert_false(wt_util_deadline_passed(deadline));
	}
}

/* send_info: each frame's description reaches the inner link with that frame, through
 * every queue (delay, reorder, duplicates); plain sends stay plain. */
static void test_info(void **state)
{
	static const char *const specs[] = {"seed=1", "dup=1,seed=2", "delay_us=2000,seed=3",
					    "reorder=1,seed=4",
					    "drop=0.2,dup=0.3,reorder=0.3,delay_us=500,seed=5"};
	const uint32_t count = 40;

	(void)state;
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		wt_link_t *m = mock_open_info();
		wt_link_t *w = mock_wrap(m, specs[k]);
		int reordered = 0;
		wt_link_stats_t st;
		weft_status_t r;

		for (uint32_t s = 0; s < count; s++) {
			wt_link_frame_info_t info = info_for(s); /* gone when the call returns */
			r = mock_send_with(w, s, NULL, &info);
			assert_true(r == WEFT_OK || r == WEFT_INPROGRESS);
		}
		r = mock_send_seq(w, count, NULL);
		assert_true(r == WEFT_OK || r == WEFT_INPROGRESS);
		mock_drain(w, m);
		memset(&st, 0, sizeof(st));
		wt_link_ops(w)->stats(w, 1, &st);
		assert_int_equal(m->nsent, count + 1 - st.fault_drops + st.fault_dups);
		for (int i = 0; i < m->nsent; i++) {
			uint32_t seq = m->sent_seq[i];
			wt_link_frame_info_t want = info_for(seq);

			reordered += i > 0 && seq < m->sent_seq[i - 1];
			if (seq == count) { /* the plain one */
				assert_int_equal(m->has_info[i], 0);
				continue;
			}
			assert_true(seq < count);
			assert_int_equal(m->has_info[i], 1);
			assert_int_equal(m->info[i].kind, want.kind);
			assert_int_equal(m->info[i].seq, want.seq);
			assert_int_equal(m->info[i].ack, want.ack);
			assert_int_equal(m->info[i].ack_req, want.ack_req);
		}
		/* the faults did happen to these frames */
		if (k == 1)
			assert_int_equal(st.fault_dups, count + 1);
		if (k == 2)
			assert_int_equal(st.fault_delays, count + 1);
		if (k == 3)
			assert_true(reordered > 0 && st.fault_reorders > 0);
		if (k == 4)
			assert_true(st.fault_drops > 0 && st.fault_dups > 0 && reordered > 0);
		wt_link_ops(w)->close(w);
		mock_close(m);
	}
}

/* An inner link without send_info: the wrapper's send_info sends plainly, copies too. */
static void test_info_plain_inner(void **state)
{
	static const char *const names[] = {"shm", "tcp", "udp"};
	wt_link_t *m = mock_open();
	wt_link_t *w = mock_wrap(m, "dup=1,reorder=1,seed=7");
	wt_link_frame_info_t info = info_for(3);

	(void)state;
	/* the wrapper always offers send_info; the socket and shm drivers do not */
	assert_null(mock_ops.send_info);
	assert_non_null(wt_link_ops(w)->send_info);
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		const wt_link_ops_t *o = wt_link_find(names[k]);

		if (o != NULL)
			assert_null(o->send_info);
	}
	for (uint32_t s = 0; s < 10; s++)
		assert_int_equal(mock_send_with(w, s, NULL, &info), WEFT_OK);
	/* a NULL description is a plain send */
	assert_int_equal(wt_link_ops(w)->send_info(w, 1, &(struct iovec){&info, 16}, 1, NULL, NULL),
			 WEFT_OK);
	mock_drain(w, m);
	assert_int_equal(m->nsent, 22);
	for (int i = 0; i < m->nsent; i++)
		assert_int_equal(m->has_info[i], 0);
	wt_link_ops(w)->close(w);

	/* and over an inner link with send_info, a NULL description is still plain */
	mock_give_info(m);
	w = mock_wrap(m, "seed=8");
	m->nsent = 0;
	assert_int_equal(wt_link_ops(w)->send_info(w, 1, &(struct iovec){&info, 16}, 1, NULL, NULL),
			 WEFT_INPROGRESS);
	assert_int_equal(m->nsent, 1);
	assert_int_equal(m->has_info[0], 0);
	mock_drain(w, m);
	wt_link_ops(w)->close(w);
	mock_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_drop_all),
	    cmocka_unit_test(test_dup_all),
	    cmocka_unit_test(test_corrupt_all),
	    cmocka_unit_test(test_reorder_all),
	    cmocka_unit_test(test_delay),
	    cmocka_unit_test(test_peer_filter),
	    cmocka_unit_test(test_same_seed),
	    cmocka_unit_test(test_rates),
	    cmocka_unit_test(test_backpressure),
	    cmocka_unit_test(test_close_frees),
	    cmocka_unit_test(test_inprogress),
	    cmocka_unit_test(test_again_keeps_pattern),
	    cmocka_unit_test(test_info),
	    cmocka_unit_test(test_info_plain_inner),
	};

	if (wt_util_crypto_init() != WEFT_OK)
		return 1;
	tcp = wt_link_find("tcp");
	if (tcp == NULL) {
		fprintf(stderr, "the tcp driver is not built; skipping\n");
		return 77;
	}
	if (getenv("WT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("WT_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
