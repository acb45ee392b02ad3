/* Helpers shared by the channel tests (tests/unit/channel): see chantest.h. Test support
 * only; failures go through cmocka. */
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "drivers/fault.h"
#include "layers/channel/rel.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"
#include "tests/unit/channel/chantest.h"

static int job_counter;

void ct_on_done(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	ct_done_t *d = arg;

	d->fired++;
	d->st = st;
	d->bytes = bytes;
	snprintf(d->msg, sizeof(d->msg), "%s", msg != NULL ? msg : "");
	if (st != WEFT_OK)
		assert_non_null(msg);
	else
		assert_null(msg);
}

/* As the API does: the fault injector under WEFT_FAULT, then the reliability layer on
 * whatever is not reliable. */
static void stack_up(ct_fab_t *f, int r, const ct_opts_t *o)
{
	wt_fault_config_t fc;
	char err[200];

	assert_int_equal(wt_fault_parse(getenv("WEFT_FAULT"), &fc, err, sizeof(err)), WEFT_OK);
	if (fc.enabled) {
		assert_int_equal(wt_fault_wrap(f->link[r], &fc, r, &f->link[r]), WEFT_OK);
		f->stack[r][f->depth[r]++] = f->link[r];
	}
	if (wt_link_ops(f->link[r])->caps & WT_LINK_CAP_RELIABLE)
		return;
	wt_rel_config_t rc = {.rank = r, .size = 2};

	f->lossy = 1;

	wt_util_key_from_token(&rc.key, o->token);
	assert_int_equal(wt_rel_wrap(f->link[r], &rc, &f->link[r]), WEFT_OK);
	f->stack[r][f->depth[r]++] = f->link[r];
}

static void open_links(ct_fab_t *f, const ct_opts_t *o)
{
	uint8_t blob[2][WT_LINK_ADDR_MAX];
	size_t blen[2];
	char job[64];

	snprintf(job, sizeof(job), "%s%d-%d", o->job_prefix, (int)getpid(), job_counter++);
	for (int r = 0; r < 2; r++) {
		wt_link_config_t cfg = {.rank = r,
					.size = 2,
					.job_id = job,
					.connect_timeout = 10,
					.bind_addr = "127.0.0.1"};

		wt_util_key_from_token(&cfg.key, o->token);
		assert_int_equal(f->ops->open(&cfg, &f->link[r]), WEFT_OK);
		f->stack[r][0] = f->link[r];
		f->depth[r] = 1;
		stack_up(f, r, o);
		blen[r] = sizeof(blob[r]);
		assert_int_equal(wt_link_ops(f->link[r])->address(f->link[r], blob[r], &blen[r]),
				 WEFT_OK);
	}
	assert_int_equal(wt_link_ops(f->link[0])->connect(f->link[0], 1, blob[1], blen[1]),
			 WEFT_OK);
	assert_int_equal(wt_link_ops(f->link[1])->connect(f->link[1], 0, blob[0], blen[0]),
			 WEFT_OK);
}

void ct_open(ct_fab_t *f, const char *driver, const ct_opts_t *o)
{
	char msg[256] = "";

	memset(f, 0, sizeof(*f));
	f->driver = driver;
	f->wait_s = o->wait_s;
	f->poll_ms = o->poll_ms;
	f->ops = wt_link_find(driver);
	if (f->ops == NULL) {
		print_message("driver %s not built\n", driver);
		skip();
	}
	if (f->ops->probe(msg, sizeof(msg)) != WEFT_OK) {
		print_message("driver %s cannot run here: %s\n", driver, msg);
		skip();
	}
	f->reliable_driver = (f->ops->caps & WT_LINK_CAP_RELIABLE) != 0;
	open_links(f, o);
	for (int r = 0; r < 2; r++) {
		wt_chan_config_t cc = o->chan;

		cc.rank = r;
		cc.size = 2;
		assert_int_equal(wt_chan_create(&cc, &f->ch[r]), WEFT_OK);
		assert_int_equal(wt_chan_set_link(f->ch[r], 1 - r, f->link[r]), WEFT_OK);
	}
}

void ct_close(ct_fab_t *f)
{
	for (int r = 0; r < 2; r++) {
		if (f->ch[r] != NULL) {
			assert_int_equal(wt_chan_outstanding(f->ch[r]), 0);
			wt_chan_destroy(f->ch[r]);
		}
	}
	for (int r = 0; r < 2; r++) {
		if (f->link[r] != NULL)
			ct_close_link(f, r);
	}
}

void ct_close_link(ct_fab_t *f, int r)
{
	for (int d = f->depth[r] - 1; d >= 0; d--)
		wt_link_ops(f->stack[r][d])->close(f->stack[r][d]);
	f->depth[r] = 0;
	f->link[r] = NULL;
}

int ct_pump_once(ct_fab_t *f, int mask)
{
	struct pollfd pfd[8];
	int n = 0, nfd = 0, busy = 0;

	for (int r = 0; r < 2; r++) {
		if (mask & (1 << r))
			n += wt_chan_progress(f->ch[r]);
	}
	if (n > 0)
		return n;
	for (int r = 0; r < 2; r++) {
		int fds[4];

		if (!(mask & (1 << r)))
			continue;
		int k = wt_chan_fds(f->ch[r], fds, 4);

		assert_true(k >= 0 && k <= 4);
		for (int i = 0; i < k; i++)
			pfd[nfd++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		busy |= wt_chan_arm(f->ch[r]);
	}
	int ms = f->poll_ms;

	for (int r = 0; r < 2; r++) {
		int t = (mask & (1 << r)) ? wt_chan_timer_ms(f->ch[r]) : -1;

		if (t >= 0 && t < ms)
			ms = t; /* the reliability layer's timers run inside progress */
	}
	if (!busy && nfd > 0)
		poll(pfd, (nfds_t)nfd, ms);
	for (int r = 0; r < 2; r++) {
		if (mask & (1 << r))
			wt_chan_disarm(f->ch[r]);
	}
	return 0;
}

void ct_pump_until(ct_fab_t *f, const int *count, int target)
{
	uint64_t dl = wt_util_deadline_in(f->wait_s);

	while (*count < target) {
		ct_pump_once(f, 3);
		if (wt_util_deadline_passed(dl))
			fail_msg("%s: timed out waiting (%d of %d done)", f->driver, *count,
				 target);
	}
}
