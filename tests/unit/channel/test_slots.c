/* Shared slot areas and waits through the channel (tests/unit/channel): two channels in one
 * process, ranks 0 and 1, over a real link. Over shm each rank's area is readable by the
 * other and a wait on a peer's word completes once it gets there, also for a rank asleep
 * on its fds (the doorbell wakes it); over links without areas (tcp, udp, anything under
 * WEFT_FAULT) there are none. Waits on our own word work on every link; a wait is
 * cancelled like a receive and fails with its peer. */
#include <pthread.h>
#include <sched.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/link.h"
#include "layers/channel/channel.h"
#include "lib/util/time.h"
#include "tests/unit/channel/chantest.h"

#define WAIT_S 30.0

typedef struct {
	int fired;
	weft_status_t st;
	char msg[256];
} done_t;

static void on_done(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	done_t *d = arg;

	assert_int_equal(bytes, 0);
	d->fired++;
	d->st = st;
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
}

static void fab_open(ct_fab_t *f, const char *driver, int poll_ms)
{
	const ct_opts_t o = {.job_prefix = "chansl",
			     .token = "slot-test-token",
			     .wait_s = WAIT_S,
			     .poll_ms = poll_ms};

	ct_open(f, driver, &o);
}

/* Slot areas exist where the link is shm itself (not under the fault injector). */
static int has_areas(const ct_fab_t *f)
{
	return (wt_link_ops(f->link[0])->caps & WT_LINK_CAP_SLOTS) != 0;
}

static void test_areas(void **state)
{
	ct_fab_t f;
	size_t b00 = 0, b01 = 0, b10 = 0;
	uint8_t *a00, *a01, *a10;

	fab_open(&f, *state, 2);
	a00 = wt_chan_slot_area(f.ch[0], 0, &b00);
	a01 = wt_chan_slot_area(f.ch[0], 1, &b01);
	a10 = wt_chan_slot_area(f.ch[1], 0, &b10);
	if (!has_areas(&f)) {
		assert_null(a00);
		assert_null(a01);
		assert_null(a10);
		ct_close(&f);
		return;
	}
	assert_non_null(a00);
	assert_non_null(a01);
	assert_non_null(a10);
	assert_true(b00 >= 64 * 1024);
	assert_int_equal(b00, b01);
	assert_int_equal(b00, b10);
	assert_true(a00 != a10); /* two mappings of one area */
	assert_int_equal((uintptr_t)a00 % 64, 0);
	/* what rank 0 stores in its area, rank 1 reads in its mapping of it */
	for (size_t i = 0; i < 4096; i += 512)
		a00[i] = (uint8_t)(i / 512 + 1);
	for (size_t i = 0; i < 4096; i += 512)
		assert_int_equal(a10[i], (uint8_t)(i / 512 + 1));
	assert_int_equal(a00[b00 - 1], a10[b00 - 1]);
	/* no area beyond the world, none through the wrong rank */
	assert_null(wt_chan_slot_area(f.ch[0], 2, &b00));
	assert_null(wt_chan_slot_area(f.ch[0], -1, &b00));
	/* waking nobody, or ranks out of range, is harmless */
	wt_chan_slot_wake(f.ch[0], (const int[]){0, 1, 7, -3}, 4);
	ct_close(&f);
}

/* A wait on the peer's word: not before the word gets there, then once. */
static void test_wait_peer(void **state)
{
	ct_fab_t f;
	done_t d = {0}, early = {0};
	wt_chan_op_t *op = NULL;
	_Atomic uint64_t *word;

	fab_open(&f, *state, 2);
	if (!has_areas(&f)) {
		ct_close(&f);
		skip();
	}
	word = (_Atomic uint64_t *)wt_chan_slot_area(f.ch[0], 0, NULL);
	atomic_store(word, 3);
	assert_int_equal(
	    wt_chan_post_wait(f.ch[1], 0,
			      (const _Atomic uint64_t *)wt_chan_slot_area(f.ch[1], 0, NULL), 5,
			      on_done, &d, &op),
	    WEFT_OK);
	assert_non_null(op);
	/* met at once: completes, but only inside progress */
	assert_int_equal(
	    wt_chan_post_wait(f.ch[1], 0,
			      (const _Atomic uint64_t *)wt_chan_slot_area(f.ch[1], 0, NULL), 3,
			      on_done, &early, NULL),
	    WEFT_OK);
	assert_int_equal(early.fired, 0);
	for (int i = 0; i < 20; i++)
		ct_pump_once(&f, 3);
	assert_int_equal(early.fired, 1);
	assert_int_equal(early.st, WEFT_OK);
	assert_int_equal(d.fired, 0);
	assert_int_equal(wt_chan_outstanding(f.ch[1]), 1);
	atomic_store(word, 5);
	wt_chan_slot_wake(f.ch[0], (const int[]){1}, 1);
	ct_pump_until(&f, &d.fired, 1);
	assert_int_equal(d.st, WEFT_OK);
	for (int i = 0; i < 5; i++)
		ct_pump_once(&f, 3);
	assert_int_equal(d.fired, 1);
	assert_int_equal(wt_chan_outstanding(f.ch[1]), 0);
	ct_close(&f);
}

/* Our own word needs no link: any driver. */
static void test_wait_own(void **state)
{
	ct_fab_t f;
	done_t d = {0};
	_Atomic uint64_t word = 0;

	fab_open(&f, *state, 2);
	assert_int_equal(wt_chan_post_wait(f.ch[0], 0, &word, 2, on_done, &d, NULL), WEFT_OK);
	for (int i = 0; i < 10; i++)
		ct_pump_once(&f, 3);
	assert_int_equal(d.fired, 0);
	atomic_store(&word, 7);
	ct_pump_until(&f, &d.fired, 1);
	assert_int_equal(d.st, WEFT_OK);
	assert_int_equal(wt_chan_outstanding(f.ch[0]), 0);
	/* bad arguments */
	assert_int_equal(wt_chan_post_wait(f.ch[0], 0, NULL, 1, on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_wait(f.ch[0], 5, &word, 1, on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_wait(NULL, 0, &word, 1, on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	ct_close(&f);
}

/* Cancelled: no callback, nothing outstanding, even when the word arrives later. */
static void test_wait_cancel(void **state)
{
	ct_fab_t f;
	done_t d = {0};
	wt_chan_op_t *op = NULL;
	_Atomic uint64_t word = 0;

	fab_open(&f, *state, 2);
	assert_int_equal(wt_chan_post_wait(f.ch[1], 1, &word, 1, on_done, &d, &op), WEFT_OK);
	ct_pump_once(&f, 3);
	wt_chan_cancel(f.ch[1], op);
	assert_int_equal(wt_chan_outstanding(f.ch[1]), 0);
	atomic_store(&word, 1);
	for (int i = 0; i < 10; i++)
		ct_pump_once(&f, 3);
	assert_int_equal(d.fired, 0);
	ct_close(&f);
}

/* A failed peer fails the waits on it, with its reason; waits posted afterwards fail too. */
static void test_wait_peer_fails(void **state)
{
	ct_fab_t f;
	done_t d = {0}, later = {0};
	_Atomic uint64_t word = 0;

	fab_open(&f, *state, 2);
	assert_int_equal(wt_chan_post_wait(f.ch[1], 0, &word, 1, on_done, &d, NULL), WEFT_OK);
	ct_pump_once(&f, 3);
	wt_chan_fail_peer(f.ch[1], 0, WEFT_ERR_PEER_FAILED, "declared dead by the test");
	ct_pump_until(&f, &d.fired, 1);
	assert_int_equal(d.st, WEFT_ERR_PEER_FAILED);
	assert_non_null(strstr(d.msg, "declared dead by the test"));
	assert_int_equal(wt_chan_post_wait(f.ch[1], 0, &word, 1, on_done, &later, NULL), WEFT_OK);
	ct_pump_until(&f, &later.fired, 1);
	assert_int_equal(later.st, WEFT_ERR_PEER_FAILED);
	assert_int_equal(wt_chan_outstanding(f.ch[1]), 0);
	ct_close(&f);
}

typedef struct {
	ct_fab_t *f;
	_Atomic uint64_t *word;
	uint64_t delay_ns;
} storer_t;

static void *store_later(void *arg)
{
	storer_t *s = arg;

	wt_util_sleep_ns(s->delay_ns);
	atomic_store_explicit(s->word, 9, memory_order_release);
	wt_chan_slot_wake(s->f->ch[0], (const int[]){1}, 1);
	return NULL;
}

/* Rank 1 sleeps on its fds (armed: the waits checked after the link raised its flag) while
 * another thread stores rank 0's word and wakes it: the doorbell ends the sleep long before
 * its 20 s timeout. */
static void test_sleeper_woken(void **state)
{
	ct_fab_t f;
	done_t d = {0};
	storer_t s;
	pthread_t t;
	uint64_t t0;
	double took;
	int fds[4], n, armed_busy;

	fab_open(&f, *state, 20000);
	if (!has_areas(&f)) {
		ct_close(&f);
		skip();
	}
	s = (storer_t){.f = &f,
		       .word = (_Atomic uint64_t *)wt_chan_slot_area(f.ch[0], 0, NULL) + 8,
		       .delay_ns = 300000000ull};
	atomic_store(s.word, 0);
	assert_int_equal(
	    wt_chan_post_wait(f.ch[1], 0,
			      (const _Atomic uint64_t *)wt_chan_slot_area(f.ch[1], 0, NULL) + 8, 9,
			      on_done, &d, NULL),
	    WEFT_OK);
	/* settle: the links' greetings and anything pending */
	for (int i = 0; i < 50; i++)
		wt_chan_progress(f.ch[1]);
	n = wt_chan_fds(f.ch[1], fds, 4);
	assert_true(n >= 1);
	t0 = wt_util_time_ns();
	assert_int_equal(pthread_create(&t, NULL, store_later, &s), 0);
	while (d.fired == 0 && (wt_util_time_ns() - t0) < 20000000000ull) {
		struct pollfd pfd[4];

		wt_chan_progress(f.ch[1]);
		if (d.fired)
			break;
		armed_busy = wt_chan_arm(f.ch[1]);
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		if (!armed_busy)
			poll(pfd, (nfds_t)n, 20000);
		wt_chan_disarm(f.ch[1]);
	}
	took = (double)(wt_util_time_ns() - t0) / 1e9;
	pthread_join(t, NULL);
	assert_int_equal(d.fired, 1);
	assert_int_equal(d.st, WEFT_OK);
	if (took > 5.0)
		fail_msg("the sleeper woke after %.2f s: the doorbell did not ring", took);
	assert_true(took >= 0.25);
	ct_close(&f);
}

typedef struct {
	wt_chan_t *ch;
	int peer, cpu, got;
} cpu_ask_t;

/* On CPU a->cpu: ask a->ch whether a->peer shares it (publishing ours). */
static void *cpu_ask(void *arg)
{
	cpu_ask_t *a = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	a->got = -1;
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0)
		a->got = wt_chan_cpu_shared(a->ch, &a->peer, 1);
	return NULL;
}

static int cpu_ask_on(wt_chan_t *ch, int peer, int cpu)
{
	cpu_ask_t a = {.ch = ch, .peer = peer, .cpu = cpu};
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, cpu_ask, &a), 0);
	pthread_join(t, NULL);
	return a.got;
}

/* Whether a peer shares our CPU: over shm each rank tells where it last asked from, so two
 * ranks that asked from one CPU share it and two on different CPUs do not; every other
 * link cannot tell (1). Ourselves and ranks out of range are no one. */
static void test_cpu_shared(void **state)
{
	ct_fab_t f;
	cpu_set_t mine;
	int cpus[2], ncpu = 0;

	fab_open(&f, *state, 2);
	assert_int_equal(wt_chan_cpu_shared(f.ch[0], (const int[]){0, -1, 2}, 3), 0);
	assert_int_equal(wt_chan_cpu_shared(f.ch[0], NULL, 0), 1);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine), 0);
	for (int c = 0; c < CPU_SETSIZE && ncpu < 2; c++)
		if (CPU_ISSET(c, &mine))
			cpus[ncpu++] = c;
	if (!has_areas(&f)) {
		for (int i = 0; i < ncpu; i++) {
			assert_int_equal(cpu_ask_on(f.ch[0], 1, cpus[i]), 1);
			assert_int_equal(cpu_ask_on(f.ch[1], 0, cpus[i]), 1);
		}
		ct_close(&f);
		return;
	}
	/* both ask from the first CPU (rank 0's first answer depends on where rank 1 opened) */
	(void)cpu_ask_on(f.ch[0], 1, cpus[0]);
	assert_int_equal(cpu_ask_on(f.ch[1], 0, cpus[0]), 1);
	assert_int_equal(cpu_ask_on(f.ch[0], 1, cpus[0]), 1);
	if (ncpu < 2) {
		ct_close(&f);
		return;
	}
	/* rank 1 moves to the second CPU: neither shares the other's now */
	assert_int_equal(cpu_ask_on(f.ch[1], 0, cpus[1]), 0);
	assert_int_equal(cpu_ask_on(f.ch[0], 1, cpus[0]), 0);
	/* rank 0 follows it */
	assert_int_equal(cpu_ask_on(f.ch[0], 1, cpus[1]), 1);
	assert_int_equal(cpu_ask_on(f.ch[1], 0, cpus[1]), 1);
	ct_close(&f);
}

#define DRIVER_TESTS(drv)                                                                          \
	cmocka_unit_test_prestate(test_areas, drv),                                                \
	    cmocka_unit_test_prestate(test_wait_peer, drv),                                        \
	    cmocka_unit_test_prestate(test_wait_own, drv),                                         \
	    cmocka_unit_test_prestate(test_wait_cancel, drv),                                      \
	    cmocka_unit_test_prestate(test_wait_peer_fails, drv),                                  \
	    cmocka_unit_test_prestate(test_sleeper_woken, drv),                                    \
	    cmocka_unit_test_prestate(test_cpu_shared, drv)

CT_DRIVER_MAIN("channel slot areas and waits")
