/* Unit tests of channel heartbeats and peer-failure reports (tests/unit/channel): two
 * channels in one process, ranks 0 and 1 of a size-2 job, over a real shm or tcp link. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/link.h"
#include "layers/channel/channel.h"
#include "layers/channel/wire.h"
#include "lib/util/time.h"
#include "tests/unit/channel/chantest.h"

#define WAIT_S 60.0

static int seq; /* orders callbacks across ops and peer-fail reports */

typedef struct {
	int fired;
	int at;
	weft_status_t st;
	char msg[256];
} done_t;

typedef struct {
	int fired;
	int at;
	int peer;
	weft_status_t st;
	char why[256];
} pfail_t;

static void on_done(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	done_t *d = arg;

	(void)bytes;
	d->fired++;
	d->at = ++seq;
	d->st = st;
	snprintf(d->msg, sizeof(d->msg), "%s", msg != NULL ? msg : "");
}

static void on_peer_fail(void *arg, int peer, weft_status_t st, const char *why)
{
	pfail_t *p = arg;

	p->fired++;
	p->at = ++seq;
	p->peer = peer;
	p->st = st;
	assert_non_null(why);
	snprintf(p->why, sizeof(p->why), "%s", why);
}

static void fab_open(ct_fab_t *f, const char *driver, double peer_timeout)
{
	const ct_opts_t o = {.job_prefix = "chanhb",
			     .token = "heartbeat-test-token",
			     .chan = {.peer_timeout = peer_timeout},
			     .wait_s = WAIT_S,
			     .poll_ms = 3};

	ct_open(f, driver, &o);
}

/* Pump for secs, or until *until becomes non-zero (when until != NULL). Returns the sum
 * of what progress reported. */
static int pump_for(ct_fab_t *f, int mask, double secs, const int *until)
{
	uint64_t dl = wt_util_deadline_in(secs);
	int work = 0;

	while (!wt_util_deadline_passed(dl) && (until == NULL || *until == 0))
		work += ct_pump_once(f, mask);
	return work;
}

/* One message from -> to, so both ends have heard each other. */
static void exchange(ct_fab_t *f, int from, uint64_t tag)
{
	char out[32] = "ping", in[32] = "";
	struct iovec iov = {out, sizeof(out)};
	done_t ds = {0}, dr = {0};

	assert_int_equal(
	    wt_chan_post_recv(f->ch[1 - from], from, tag, in, sizeof(in), NULL, on_done, &dr, NULL),
	    WEFT_OK);
	assert_int_equal(wt_chan_post_send(f->ch[from], 1 - from, tag, &iov, 1, on_done, &ds, NULL),
			 WEFT_OK);
	ct_pump_until(f, &ds.fired, 1);
	ct_pump_until(f, &dr.fired, 1);
	assert_int_equal(ds.st, WEFT_OK);
	assert_int_equal(dr.st, WEFT_OK);
	assert_string_equal(in, "ping");
}

static void hb_counts(ct_fab_t *f, int r, uint64_t *sent, uint64_t *recv)
{
	wt_chan_heartbeat_counts(f->ch[r], sent, recv);
}

/* An idle pair with a 1 s timeout keeps each other alive by heartbeats alone, which do
 * not count as work; while data flows no heartbeats are needed. */
static void test_idle_alive(void **state)
{
	ct_fab_t f;
	pfail_t pf[2] = {0};
	uint64_t s0[2], r0[2], s1[2], r1[2];

	fab_open(&f, *state, 1.0);
	for (int r = 0; r < 2; r++)
		wt_chan_set_peer_fail_cb(f.ch[r], on_peer_fail, &pf[r]);
	exchange(&f, 0, 1);
	exchange(&f, 1, 2);
	pump_for(&f, 3, 0.05, NULL); /* let the completions' link events drain */
	for (int r = 0; r < 2; r++)
		hb_counts(&f, r, &s0[r], &r0[r]);
	int work = pump_for(&f, 3, 3.0, NULL);

	for (int r = 0; r < 2; r++) {
		hb_counts(&f, r, &s1[r], &r1[r]);
		print_message("%s: rank %d sent %llu, received %llu heartbeats in 3 s idle\n",
			      f.driver, r, (unsigned long long)(s1[r] - s0[r]),
			      (unsigned long long)(r1[r] - r0[r]));
		assert_int_equal(pf[r].fired, 0);
		/* one every 0.25 s nominally; a loaded machine may stretch that */
		assert_true(s1[r] - s0[r] >= 4);
		assert_true(r1[r] - r0[r] >= 4);
		assert_true(s1[r] - s0[r] <= 40);
	}
	assert_int_equal(work, 0); /* heartbeats alone never keep progress busy */
	/* idle: arming for sleep succeeds although heartbeats fall due later */
	int slept = 0;

	for (int i = 0; i < 50 && !slept; i++) {
		wt_chan_progress(f.ch[0]);
		slept = wt_chan_arm(f.ch[0]) == 0;
		wt_chan_disarm(f.ch[0]);
	}
	assert_true(slept);

	/* steady ping-pong for a second: the data frames are the heartbeats */
	for (int r = 0; r < 2; r++)
		hb_counts(&f, r, &s0[r], NULL);
	uint64_t dl = wt_util_deadline_in(1.0);
	int rounds = 0;

	while (!wt_util_deadline_passed(dl)) {
		exchange(&f, rounds & 1, 100 + (uint64_t)rounds);
		rounds++;
	}
	for (int r = 0; r < 2; r++) {
		hb_counts(&f, r, &s1[r], NULL);
		print_message("%s: rank %d sent %llu heartbeats during %d ping-pongs\n", f.driver,
			      r, (unsigned long long)(s1[r] - s0[r]), rounds);
		assert_true(s1[r] - s0[r] <= 2);
		assert_int_equal(pf[r].fired, 0);
	}
	exchange(&f, 0, 3);
	ct_close(&f);
}

/* Rank 1 stops progressing (a hung process): rank 0 declares it failed after about the
 * timeout, fails the pending receive, then reports the peer once. */
static void test_hung_peer(void **state)
{
	ct_fab_t f;
	pfail_t pf = {0};
	done_t d = {0};
	char buf[16];

	fab_open(&f, *state, 1.0);
	wt_chan_set_peer_fail_cb(f.ch[0], on_peer_fail, &pf);
	exchange(&f, 1, 1);
	assert_int_equal(
	    wt_chan_post_recv(f.ch[0], 1, 7, buf, sizeof(buf), NULL, on_done, &d, NULL), WEFT_OK);
	uint64_t t0 = wt_util_time_ns();

	pump_for(&f, 1, WAIT_S, &pf.fired);
	double took = (double)(wt_util_time_ns() - t0) / 1e9;

	print_message("%s: silent peer declared failed after %.2f s\n", f.driver, took);
	assert_int_equal(pf.fired, 1);
	assert_true(took >= 0.5); /* not before the timeout (minus one heartbeat period) */
	assert_true(took <= 4.0); /* about 1 s; generous for a loaded machine */
	assert_int_equal(pf.peer, 1);
	assert_int_equal(pf.st, WEFT_ERR_PEER_FAILED);
	assert_non_null(strstr(pf.why, "rank 1: no heartbeat for "));
	assert_non_null(strstr(pf.why, " s (WEFT_PEER_TIMEOUT)"));
	assert_int_equal(d.fired, 1);
	assert_int_equal(d.st, WEFT_ERR_PEER_FAILED);
	assert_string_equal(d.msg, pf.why);
	assert_true(d.at < pf.at); /* the ops first, then the peer */
	/* reported once, however long it stays silent or whoever fails it again */
	wt_chan_fail_peer(f.ch[0], 1, WEFT_ERR_ABORTED, "again");
	pump_for(&f, 1, 0.3, NULL);
	assert_int_equal(pf.fired, 1);
	/* rank 1 resumes: its own pause does not make it blame rank 0 at once */
	pfail_t pf1 = {0};

	wt_chan_set_peer_fail_cb(f.ch[1], on_peer_fail, &pf1);
	pump_for(&f, 2, 0.3, NULL);
	assert_int_equal(pf1.fired, 0);
	ct_close(&f);
}

/* wt_chan_fail_peer reports from the next progress call, once, after the ops. */
static void test_fail_peer_cb(void **state)
{
	ct_fab_t f;
	pfail_t pf = {0};
	done_t d = {0};
	char buf[16];
	uint64_t sent, recv;

	fab_open(&f, *state, 0);
	wt_chan_set_peer_fail_cb(f.ch[0], on_peer_fail, &pf);
	exchange(&f, 0, 1);
	assert_int_equal(
	    wt_chan_post_recv(f.ch[0], 1, 7, buf, sizeof(buf), NULL, on_done, &d, NULL), WEFT_OK);
	wt_chan_fail_peer(f.ch[0], 1, WEFT_ERR_PEER_FAILED, "told so");
	wt_chan_fail_peer(f.ch[0], 1, WEFT_ERR_PEER_FAILED, "told twice");
	assert_int_equal(pf.fired, 0); /* never from inside the call */
	assert_int_equal(d.fired, 0);
	assert_int_equal(wt_chan_arm(f.ch[0]), 1); /* a report is due: do not sleep */
	wt_chan_disarm(f.ch[0]);
	assert_true(wt_chan_progress(f.ch[0]) >= 2);
	assert_int_equal(d.fired, 1);
	assert_int_equal(pf.fired, 1);
	assert_true(d.at < pf.at);
	assert_int_equal(pf.peer, 1);
	assert_int_equal(pf.st, WEFT_ERR_PEER_FAILED);
	assert_string_equal(pf.why, "rank 1: told so");
	pump_for(&f, 3, 0.2, NULL);
	assert_int_equal(pf.fired, 1);
	/* no timeout configured: no heartbeat ever */
	for (int r = 0; r < 2; r++) {
		hb_counts(&f, r, &sent, &recv);
		assert_int_equal(sent, 0);
		assert_int_equal(recv, 0);
	}
	ct_close(&f);
}

/* The link loses the peer: one report with the link's status, after the pending op. */
static void test_link_error_cb(void **state)
{
	ct_fab_t f;
	pfail_t pf = {0};
	done_t d = {0};
	char buf[16];

	fab_open(&f, *state, 30.0);
	if (!f.reliable_driver) {
		/* Datagrams carry no connection to lose: silence is the only sign. */
		ct_close(&f);
		skip();
	}
	wt_chan_set_peer_fail_cb(f.ch[0], on_peer_fail, &pf);
	exchange(&f, 0, 1);
	assert_int_equal(
	    wt_chan_post_recv(f.ch[0], 1, 7, buf, sizeof(buf), NULL, on_done, &d, NULL), WEFT_OK);
	wt_chan_destroy(f.ch[1]);
	ct_close_link(&f, 1);
	f.ch[1] = NULL;
	f.link[1] = NULL;
	pump_for(&f, 1, WAIT_S, &pf.fired);
	assert_int_equal(pf.fired, 1);
	assert_int_equal(pf.peer, 1);
	assert_true(pf.st < 0);
	assert_non_null(strstr(pf.why, "rank 1: link "));
	assert_null(strstr(pf.why, "heartbeat"));
	assert_int_equal(d.fired, 1);
	assert_int_equal(d.st, pf.st);
	assert_true(d.at < pf.at);
	pump_for(&f, 1, 0.2, NULL);
	assert_int_equal(pf.fired, 1);
	ct_close(&f);
}

/* Timeouts the clock cannot honour are refused; the heartbeat frame is well-formed. */
static void test_config_and_wire(void **state)
{
	const double bad[] = {-1.0, NAN, INFINITY, 0.01, 2e6};
	wt_chan_t *ch = NULL;
	uint8_t fr[WT_CHAN_HDR_LEN];
	wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION, .type = WT_CHAN_FR_HEARTBEAT}, out;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wt_chan_config_t cc = {.rank = 0, .size = 2, .peer_timeout = bad[i]};

		assert_int_equal(wt_chan_create(&cc, &ch), WEFT_ERR_INVALID_ARG);
	}
	wt_chan_config_t ok = {.rank = 0, .size = 2, .peer_timeout = 0.1};

	assert_int_equal(wt_chan_create(&ok, &ch), WEFT_OK);
	wt_chan_destroy(ch);
	wt_chan_hdr_encode(&h, fr);
	assert_null(wt_chan_hdr_decode(fr, sizeof(fr), &out));
	assert_int_equal(out.type, WT_CHAN_FR_HEARTBEAT);
	assert_string_equal(wt_chan_frame_name(WT_CHAN_FR_HEARTBEAT), "heartbeat");
	h.a = 1;
	wt_chan_hdr_encode(&h, fr);
	assert_string_equal(wt_chan_hdr_decode(fr, sizeof(fr), &out), "heartbeat with fields set");
}

#define DRIVER_TESTS(drv)                                                                          \
	cmocka_unit_test_prestate(test_idle_alive, drv),                                           \
	    cmocka_unit_test_prestate(test_hung_peer, drv),                                        \
	    cmocka_unit_test_prestate(test_fail_peer_cb, drv),                                     \
	    cmocka_unit_test_prestate(test_link_error_cb, drv),                                    \
	    cmocka_unit_test_prestate(test_config_and_wire, drv)

CT_DRIVER_MAIN("heartbeats")
