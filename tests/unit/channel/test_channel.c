/* Unit tests of the channel layer (tests/unit/channel): two channels in one process, rank
 * 0 and rank 1 of a size-2 job, joined by a real link driver (shm or tcp). */
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

#define EAGER 8192
#define MIB (1024 * 1024)
#define WAIT_S 90.0

static void fab_open(ct_fab_t *f, const char *driver, size_t eager_limit)
{
	const ct_opts_t o = {.job_prefix = "chant",
			     .token = "channel-test-token",
			     .chan = {.eager_limit = eager_limit},
			     .wait_s = WAIT_S,
			     .poll_ms = 2};

	ct_open(f, driver, &o);
}

static void pump_rounds(ct_fab_t *f, int rounds)
{
	for (int i = 0; i < rounds; i++)
		ct_pump_once(f, 3);
}

/* Progress one end only for a while (the other stays silent). */
static void pump_one(ct_fab_t *f, int r, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		if (wt_chan_progress(f->ch[r]) == 0)
			wt_util_sleep_ns(200000);
	}
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 12345u;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static void check(const uint8_t *p, size_t n, unsigned seed)
{
	uint8_t *want = malloc(n ? n : 1);

	assert_non_null(want);
	fill(want, n, seed);
	if (memcmp(p, want, n) != 0) {
		size_t i = 0;

		while (p[i] == want[i])
			i++;
		free(want);
		fail_msg("content differs at byte %zu of %zu (seed %u)", i, n, seed);
	}
	free(want);
}

static void post_send1(ct_fab_t *f, int from, uint64_t tag, const void *buf, size_t len,
		       ct_done_t *d, wt_chan_op_t **op)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	assert_int_equal(wt_chan_post_send(f->ch[from], 1 - from, tag, &iov, 1, ct_on_done, d, op),
			 WEFT_OK);
}

static void post_recv1(ct_fab_t *f, int at, uint64_t tag, void *buf, size_t len,
		       const wt_chan_reduce_t *red, ct_done_t *d, wt_chan_op_t **op)
{
	assert_int_equal(
	    wt_chan_post_recv(f->ch[at], 1 - at, tag, buf, len, red, ct_on_done, d, op), WEFT_OK);
}

/* One message from -> to of len bytes; recv posted first (expected) or after the send
 * has reached the peer (unexpected). stream: the receive stores around the caches
 * (wt_chan_reduce_t.stream), into a destination 3 bytes off a line. */
static void exchange_ex(ct_fab_t *f, int from, size_t len, int unexpected, unsigned seed,
			int stream)
{
	uint8_t *src = malloc(len + 1), *base = malloc(len + 4), *dst = base + (stream ? 3 : 0);
	ct_done_t ds = {0}, dr = {0};
	uint64_t tag = 0xabc0000000000000ull | seed;
	wt_chan_reduce_t streamed = {.stream = 1};
	const wt_chan_reduce_t *red = stream ? &streamed : NULL;

	assert_non_null(src);
	assert_non_null(base);
	fill(src, len, seed);
	memset(dst, 0xee, len + 1);
	if (!unexpected)
		post_recv1(f, 1 - from, tag, dst, len, red, &dr, NULL);
	post_send1(f, from, tag, src, len, &ds, NULL);
	if (unexpected) {
		pump_rounds(f, 50);
		assert_int_equal(dr.fired, 0);
		post_recv1(f, 1 - from, tag, dst, len, red, &dr, NULL);
	}
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	assert_int_equal(ds.fired, 1);
	assert_int_equal(dr.fired, 1);
	assert_int_equal(ds.st, WEFT_OK);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(dr.bytes, len);
	assert_int_equal(ds.bytes, len);
	check(dst, len, seed);
	assert_int_equal(dst[len], 0xee);
	free(src);
	free(base);
}

static void exchange(ct_fab_t *f, int from, size_t len, int unexpected, unsigned seed)
{
	exchange_ex(f, from, len, unexpected, seed, 0);
}

static const size_t sizes[] = {0, 1, EAGER, EAGER + 1, MIB, 16 * MIB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void run_sizes(const char *drv, int unexpected)
{
	ct_fab_t f;

	fab_open(&f, drv, EAGER);
	for (size_t i = 0; i < NSIZES; i++) {
		exchange(&f, 0, sizes[i], unexpected, (unsigned)i + 1);
		exchange(&f, 1, sizes[i], unexpected, (unsigned)i + 100);
	}
	ct_close(&f);
}

static void test_sizes(void **state)
{
	run_sizes(*state, 0);
}

/* Streamed receives land the same bytes, eager or rendezvous, expected or not. */
static void test_stream_sizes(void **state)
{
	ct_fab_t f;

	fab_open(&f, *state, EAGER);
	for (size_t i = 0; i < NSIZES; i++)
		for (int unexpected = 0; unexpected < 2; unexpected++)
			exchange_ex(&f, (int)i % 2, sizes[i] + 5, unexpected,
				    (unsigned)(i + 200 + 10 * unexpected), 1);
	ct_close(&f);
}

static void test_unexpected(void **state)
{
	run_sizes(*state, 1);
}

/* A send of several pieces: no GET possible, so it goes by CTS and data frames. */
static void test_iov_pieces(void **state)
{
	ct_fab_t f;
	size_t len = 3 * MIB + 123;
	uint8_t *src = malloc(len), *dst = malloc(len);
	ct_done_t ds = {0}, dr = {0}, es = {0}, er = {0};
	uint8_t edst[1000];
	struct iovec iov[11];
	size_t off = 0;

	fill(src, len, 77);
	for (int i = 0; i < 11; i++) {
		size_t n = i == 10 ? len - off : (size_t)(i + 1) * 17011;

		iov[i].iov_base = src + off;
		iov[i].iov_len = n;
		off += n;
	}
	fab_open(&f, *state, EAGER);
	post_recv1(&f, 1, 5, dst, len, NULL, &dr, NULL);
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 5, iov, 11, ct_on_done, &ds, NULL), WEFT_OK);
	/* an eager message in 10 small pieces (more than fit in one frame's iov) */
	struct iovec small[10];

	for (int i = 0; i < 10; i++) {
		small[i].iov_base = src + (size_t)i * 100;
		small[i].iov_len = 100;
	}
	post_recv1(&f, 1, 6, edst, sizeof(edst), NULL, &er, NULL);
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 6, small, 10, ct_on_done, &es, NULL),
			 WEFT_OK);
	ct_pump_until(&f, &dr.fired, 1);
	ct_pump_until(&f, &ds.fired, 1);
	ct_pump_until(&f, &er.fired, 1);
	ct_pump_until(&f, &es.fired, 1);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(ds.st, WEFT_OK);
	assert_int_equal(er.st, WEFT_OK);
	assert_int_equal(er.bytes, 1000);
	assert_memory_equal(edst, src, 1000);
	check(dst, len, 77);
	ct_close(&f);
	free(src);
	free(dst);
}

/* Several messages with one tag arrive in send order; a mix of eager and rendezvous. */
static void test_ordering(void **state)
{
	ct_fab_t f;
	enum { N = 12 };
	size_t len[N];
	uint8_t *src[N], *dst[N];
	ct_done_t ds[N] = {0}, dr[N] = {0};
	int sends = 0, recvs = 0;

	fab_open(&f, *state, EAGER);
	for (int i = 0; i < N; i++) {
		len[i] = (i % 3 == 0) ? (size_t)300000 + (size_t)i : (size_t)(i * 500);
		src[i] = malloc(len[i] + 1);
		dst[i] = malloc(len[i] + 1);
		fill(src[i], len[i], (unsigned)i + 7);
	}
	/* half the receives before the sends, half after */
	for (int i = 0; i < N / 2; i++)
		post_recv1(&f, 1, 42, dst[i], len[i], NULL, &dr[i], NULL);
	for (int i = 0; i < N; i++)
		post_send1(&f, 0, 42, src[i], len[i], &ds[i], NULL);
	pump_rounds(&f, 20);
	for (int i = N / 2; i < N; i++)
		post_recv1(&f, 1, 42, dst[i], len[i], NULL, &dr[i], NULL);
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	while (sends < N || recvs < N) {
		ct_pump_once(&f, 3);
		sends = recvs = 0;
		for (int i = 0; i < N; i++) {
			sends += ds[i].fired;
			recvs += dr[i].fired;
		}
		assert_false(wt_util_deadline_passed(dl));
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(ds[i].fired, 1);
		assert_int_equal(dr[i].fired, 1);
		assert_int_equal(dr[i].st, WEFT_OK);
		assert_int_equal(dr[i].bytes, len[i]);
		check(dst[i], len[i], (unsigned)i + 7);
		free(src[i]);
		free(dst[i]);
	}
	ct_close(&f);
}

/* Different tags: receives posted in another order than the sends. */
static void test_tags_out_of_order(void **state)
{
	ct_fab_t f;
	enum { N = 6 };
	static const size_t len[N] = {10, EAGER + 100, 0, 2 * MIB, 4000, 700000};
	static const int order[N] = {3, 5, 0, 4, 1, 2};
	uint8_t *src[N], *dst[N];
	ct_done_t ds[N] = {0}, dr[N] = {0};

	fab_open(&f, *state, EAGER);
	for (int i = 0; i < N; i++) {
		src[i] = malloc(len[i] + 1);
		dst[i] = malloc(len[i] + 1);
		fill(src[i], len[i], (unsigned)i * 3 + 1);
	}
	/* three receives posted before, three after the sends, none in send order */
	for (int k = 0; k < 3; k++)
		post_recv1(&f, 0, 1000 + (uint64_t)order[k], dst[order[k]], len[order[k]], NULL,
			   &dr[order[k]], NULL);
	for (int i = 0; i < N; i++)
		post_send1(&f, 1, 1000 + (uint64_t)i, src[i], len[i], &ds[i], NULL);
	pump_rounds(&f, 20);
	for (int k = 3; k < N; k++)
		post_recv1(&f, 0, 1000 + (uint64_t)order[k], dst[order[k]], len[order[k]], NULL,
			   &dr[order[k]], NULL);
	for (int i = 0; i < N; i++) {
		ct_pump_until(&f, &dr[i].fired, 1);
		ct_pump_until(&f, &ds[i].fired, 1);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(dr[i].st, WEFT_OK);
		assert_int_equal(ds[i].st, WEFT_OK);
		assert_int_equal(dr[i].bytes, len[i]);
		check(dst[i], len[i], (unsigned)i * 3 + 1);
		free(src[i]);
		free(dst[i]);
	}
	ct_close(&f);
}

/* Receive-with-reduce, int32 SUM and float32 MAX, at eager and rendezvous sizes (one not a
 * multiple of the data-frame or get-chunk size). */
/* from_left: the receive combines a separate left operand with the incoming data
 * (wt_chan_reduce_t.left); the destination's own bytes must then not matter. */
static void reduce_one(ct_fab_t *f, size_t count, int fl, int unexpected, int from_left)
{
	size_t len = count * 4;
	int32_t *si = malloc(len + 4), *di = malloc(len + 4), *wi = malloc(len + 4);
	int32_t *li = malloc(len + 4);
	float *sf = (float *)si, *df = (float *)di, *wf = (float *)wi;
	ct_done_t ds = {0}, dr = {0};
	wt_chan_reduce_t red = {
	    .enabled = 1, .dtype = fl ? WEFT_FLOAT32 : WEFT_INT32, .op = fl ? WEFT_MAX : WEFT_SUM};
	uint64_t tag = 77 + count + 1000000u * (unsigned)from_left;

	assert_non_null(li);
	for (size_t i = 0; i < count; i++) {
		if (fl) {
			sf[i] = (float)sin((double)i) * 100.0f;
			df[i] = (float)cos((double)i * 0.7) * 100.0f;
			wf[i] = sf[i] > df[i] ? sf[i] : df[i];
		} else {
			si[i] = (int32_t)(i * 7 + 1);
			di[i] = -(int32_t)(i * 3) + 5;
			wi[i] = si[i] + di[i];
		}
	}
	if (from_left) {
		memcpy(li, di, len);
		memset(di, 0x7f, len);
		red.left = li;
	}
	if (!unexpected)
		post_recv1(f, 1, tag, di, len, &red, &dr, NULL);
	post_send1(f, 0, tag, si, len, &ds, NULL);
	if (unexpected) {
		pump_rounds(f, 30);
		post_recv1(f, 1, tag, di, len, &red, &dr, NULL);
	}
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(ds.st, WEFT_OK);
	assert_int_equal(dr.bytes, len);
	assert_memory_equal(di, wi, len);
	free(si);
	free(di);
	free(wi);
	free(li);
}

static void test_reduce(void **state)
{
	ct_fab_t f;
	static const size_t counts[] = {1, 1000, EAGER / 4, EAGER / 4 + 1, 300001, 4 * MIB / 4};

	fab_open(&f, *state, EAGER);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		for (int fl = 0; fl < 2; fl++)
			for (int left = 0; left < 2; left++) {
				reduce_one(&f, counts[i], fl, 0, left);
				reduce_one(&f, counts[i], fl, 1, left);
			}
	}
	ct_close(&f);
}

/* A message longer than the receive fails it with MISMATCH naming both sizes; a reduce
 * receive needs exactly its length; the channel works afterwards. */
static void mismatch_one(ct_fab_t *f, size_t slen, size_t rlen, int reduce, int unexpected)
{
	uint8_t *src = calloc(1, slen + 1), *dst = calloc(1, rlen + 1);
	ct_done_t ds = {0}, dr = {0};
	wt_chan_reduce_t red = {.enabled = 1, .dtype = WEFT_INT32, .op = WEFT_SUM};
	char want[256];

	if (!unexpected)
		post_recv1(f, 1, 9, dst, rlen, reduce ? &red : NULL, &dr, NULL);
	post_send1(f, 0, 9, src, slen, &ds, NULL);
	if (unexpected) {
		pump_rounds(f, 30);
		post_recv1(f, 1, 9, dst, rlen, reduce ? &red : NULL, &dr, NULL);
	}
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	assert_int_equal(dr.st, WEFT_ERR_MISMATCH);
	snprintf(want, sizeof(want),
		 "message from rank 0 is %zu bytes, receive%s posted for %zu bytes", slen,
		 reduce ? "-with-reduce" : "", rlen);
	assert_string_equal(dr.msg, want);
	/* eager sends were delivered as far as the sender can tell; a rejected rendezvous
	 * send learns of the mismatch */
	if (slen <= EAGER)
		assert_int_equal(ds.st, WEFT_OK);
	else
		assert_int_equal(ds.st, WEFT_ERR_MISMATCH);
	free(src);
	free(dst);
}

static void test_mismatch(void **state)
{
	ct_fab_t f;

	fab_open(&f, *state, EAGER);
	for (int unexp = 0; unexp < 2; unexp++) {
		mismatch_one(&f, 100, 99, 0, unexp);
		mismatch_one(&f, 2 * MIB, 1000, 0, unexp);
		mismatch_one(&f, 2 * MIB, 2 * MIB - 64, 0, unexp);
		mismatch_one(&f, 40, 80, 1, unexp);
		mismatch_one(&f, 2 * MIB, 2 * MIB + 4, 1, unexp);
		exchange(&f, 0, 2 * MIB, unexp, 5);
		exchange(&f, 0, 100, unexp, 6);
	}
	/* shorter than the receive is fine */
	uint8_t src[50], dst[80];
	ct_done_t ds = {0}, dr = {0};

	fill(src, sizeof(src), 3);
	post_recv1(&f, 1, 10, dst, sizeof(dst), NULL, &dr, NULL);
	post_send1(&f, 0, 10, src, sizeof(src), &ds, NULL);
	ct_pump_until(&f, &dr.fired, 1);
	ct_pump_until(&f, &ds.fired, 1);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(dr.bytes, 50);
	assert_memory_equal(dst, src, 50);
	ct_close(&f);
}

/* A cancelled receive never completes and never receives; the next one does. */
static void test_cancel_recv(void **state)
{
	ct_fab_t f;
	uint8_t *src = malloc(2 * MIB), *dst = malloc(2 * MIB), *junk = malloc(2 * MIB);
	ct_done_t dc = {0}, ds = {0}, dr = {0};
	wt_chan_op_t *op = NULL;

	fab_open(&f, *state, EAGER);
	for (int round = 0; round < 2; round++) {
		size_t len = round ? 2 * MIB : 1000;

		memset(&dc, 0, sizeof(dc));
		memset(&ds, 0, sizeof(ds));
		memset(&dr, 0, sizeof(dr));
		fill(src, len, 11 + (unsigned)round);
		memset(junk, 0x5a, len);
		post_recv1(&f, 1, 3, junk, len, NULL, &dc, &op);
		pump_rounds(&f, 3);
		wt_chan_cancel(f.ch[1], op);
		assert_int_equal(wt_chan_outstanding(f.ch[1]), 0);
		post_send1(&f, 0, 3, src, len, &ds, NULL);
		pump_rounds(&f, 10);
		post_recv1(&f, 1, 3, dst, len, NULL, &dr, NULL);
		ct_pump_until(&f, &dr.fired, 1);
		ct_pump_until(&f, &ds.fired, 1);
		pump_rounds(&f, 10);
		assert_int_equal(dc.fired, 0);
		assert_int_equal(dr.st, WEFT_OK);
		check(dst, len, 11 + (unsigned)round);
		for (size_t i = 0; i < len; i++)
			assert_int_equal(junk[i], 0x5a);
	}
	/* a receive cancelled after its completion was queued but before its callback */
	fill(src, 100, 1);
	memset(&ds, 0, sizeof(ds));
	memset(&dc, 0, sizeof(dc));
	post_send1(&f, 0, 4, src, 100, &ds, NULL);
	pump_rounds(&f, 20);
	post_recv1(&f, 1, 4, dst, 100, NULL, &dc, &op); /* matches the queued message at once */
	wt_chan_cancel(f.ch[1], op);
	ct_pump_until(&f, &ds.fired, 1);
	pump_rounds(&f, 10);
	assert_int_equal(dc.fired, 0);
	/* a rendezvous receive cancelled while its data streams in (two pieces, so no get):
	 * the rest is discarded */
	size_t big = 16 * MIB;
	uint8_t *bsrc = malloc(big), *bjunk = malloc(big);
	struct iovec biov[2] = {{bsrc, big / 2}, {bsrc + big / 2, big / 2}};

	memset(&ds, 0, sizeof(ds));
	memset(&dc, 0, sizeof(dc));
	post_recv1(&f, 1, 8, bjunk, big, NULL, &dc, &op);
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 8, biov, 2, ct_on_done, &ds, NULL), WEFT_OK);
	for (int i = 0; i < 3; i++) {
		wt_chan_progress(f.ch[0]);
		wt_chan_progress(f.ch[1]);
	}
	int cancelled = dc.fired == 0;

	if (cancelled)
		wt_chan_cancel(f.ch[1], op);
	/* Over a lossy link the RTS may arrive only after the cancel: it is then unexpected
	 * and the send waits, as it should, for a receive that matches it. Give it one. */
	uint64_t dl = wt_util_deadline_in(f.lossy ? 1.0 : WAIT_S);

	while (!ds.fired && !wt_util_deadline_passed(dl))
		ct_pump_once(&f, 3);
	if (!ds.fired && f.lossy) {
		ct_done_t dd = {0};

		memset(bjunk, 0, big);
		post_recv1(&f, 1, 8, bjunk, big, NULL, &dd, NULL);
		ct_pump_until(&f, &dd.fired, 1);
		assert_int_equal(dd.st, WEFT_OK);
		assert_memory_equal(bjunk, bsrc, big);
	}
	ct_pump_until(&f, &ds.fired, 1);
	pump_rounds(&f, 10);
	assert_int_equal(ds.st, WEFT_OK);
	if (cancelled)
		assert_int_equal(dc.fired, 0);
	else
		assert_int_equal(dc.st, WEFT_OK);
	free(bsrc);
	free(bjunk);
	exchange(&f, 0, 2 * MIB, 0, 12);
	ct_close(&f);
	free(src);
	free(dst);
	free(junk);
}

/* A cancelled rendezvous send gives no callback; the receive that matches its RTS later
 * either still gets the data or fails with ABORTED, and nothing hangs. */
static void test_cancel_send(void **state)
{
	ct_fab_t f;
	uint8_t *src = malloc(MIB), *dst = malloc(MIB);
	ct_done_t ds = {0}, dr = {0};
	wt_chan_op_t *op = NULL;
	struct iovec iov[2] = {{src, MIB / 2}, {src + MIB / 2, MIB / 2}};

	fab_open(&f, *state, EAGER);
	fill(src, MIB, 21);
	/* two pieces: the receiver must ask for the data, and gets ABORT instead */
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 2, iov, 2, ct_on_done, &ds, &op), WEFT_OK);
	pump_rounds(&f, 20);
	wt_chan_cancel(f.ch[0], op);
	post_recv1(&f, 1, 2, dst, MIB, NULL, &dr, NULL);
	ct_pump_until(&f, &dr.fired, 1);
	assert_int_equal(dr.st, WEFT_ERR_ABORTED);
	assert_non_null(strstr(dr.msg, "rank 0"));
	assert_int_equal(ds.fired, 0);
	/* a receive matched to a queued RTS and cancelled before progress: the sender is
	 * released with ABORTED */
	memset(&ds, 0, sizeof(ds));
	memset(&dr, 0, sizeof(dr));
	post_send1(&f, 0, 3, src, MIB, &ds, NULL);
	pump_rounds(&f, 20);
	post_recv1(&f, 1, 3, dst, MIB, NULL, &dr, &op);
	wt_chan_cancel(f.ch[1], op);
	ct_pump_until(&f, &ds.fired, 1);
	assert_int_equal(ds.st, WEFT_ERR_ABORTED);
	assert_non_null(strstr(ds.msg, "rank 1"));
	assert_int_equal(dr.fired, 0);
	/* a send cancelled while its data frames stream out: the receiver is told */
	size_t big = 16 * MIB;
	uint8_t *bsrc = malloc(big), *bdst = malloc(big);
	struct iovec biov[2] = {{bsrc, big / 2}, {bsrc + big / 2, big / 2}};

	memset(&ds, 0, sizeof(ds));
	memset(&dr, 0, sizeof(dr));
	post_recv1(&f, 1, 4, bdst, big, NULL, &dr, NULL);
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 4, biov, 2, ct_on_done, &ds, &op), WEFT_OK);
	for (int i = 0; i < 3; i++) {
		wt_chan_progress(f.ch[1]);
		wt_chan_progress(f.ch[0]);
	}
	int cancelled = ds.fired == 0;

	if (cancelled)
		wt_chan_cancel(f.ch[0], op);
	ct_pump_until(&f, &dr.fired, 1);
	pump_rounds(&f, 10);
	if (cancelled) {
		assert_int_equal(ds.fired, 0);
		assert_true(dr.st == WEFT_OK || dr.st == WEFT_ERR_ABORTED);
	} else {
		assert_int_equal(dr.st, WEFT_OK);
	}
	free(bsrc);
	free(bdst);
	exchange(&f, 0, MIB, 0, 22);
	exchange(&f, 1, MIB, 0, 23);
	ct_close(&f);
	free(src);
	free(dst);
}

/* fail_peer completes every pending op with the peer, and later posts too. */
static void test_fail_peer(void **state)
{
	ct_fab_t f;
	uint8_t *buf = malloc(MIB), *rbuf = malloc(MIB);
	ct_done_t d[4] = {0}, late = {0};

	fab_open(&f, *state, EAGER);
	fill(buf, MIB, 1);
	post_recv1(&f, 0, 1, rbuf, 100, NULL, &d[0], NULL);
	post_recv1(&f, 0, 2, rbuf + 100, MIB / 2, NULL, &d[1], NULL);
	post_send1(&f, 0, 3, buf, MIB, &d[2], NULL); /* waits for a receive that never comes */
	pump_rounds(&f, 10);
	post_recv1(&f, 0, 4, rbuf, 10, NULL, &d[3], NULL);
	wt_chan_fail_peer(f.ch[0], 1, WEFT_ERR_PEER_FAILED, "test says so");
	assert_int_equal(d[0].fired, 0); /* callbacks run only inside progress */
	wt_chan_progress(f.ch[0]);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(d[i].fired, 1);
		assert_int_equal(d[i].st, WEFT_ERR_PEER_FAILED);
		assert_non_null(strstr(d[i].msg, "rank 1"));
		assert_non_null(strstr(d[i].msg, "test says so"));
	}
	post_send1(&f, 0, 5, buf, 10, &late, NULL);
	assert_int_equal(late.fired, 0);
	wt_chan_progress(f.ch[0]);
	assert_int_equal(late.fired, 1);
	assert_int_equal(late.st, WEFT_ERR_PEER_FAILED);
	pump_rounds(&f, 10); /* rank 1 holds the unexpected RTS; nothing waits on it */
	ct_close(&f);

	/* failure with frames still queued (the peer never ran) and unexpected messages */
	enum { NQ = 3000 };
	ct_done_t *dq = calloc(NQ, sizeof(ct_done_t));
	ct_done_t du = {0};

	fab_open(&f, *state, EAGER);
	post_send1(&f, 1, 77, buf, 100, &du, NULL);
	ct_pump_until(&f, &du.fired, 1);
	pump_rounds(&f, 10); /* now unexpected at rank 0 */
	for (int i = 0; i < NQ; i++)
		post_send1(&f, 0, 1, buf, EAGER, &dq[i], NULL);
	pump_one(&f, 0, 20);
	wt_chan_fail_peer(f.ch[0], 1, WEFT_ERR_PEER_FAILED, "gone");
	wt_chan_progress(f.ch[0]);
	int ok = 0, failed = 0;

	for (int i = 0; i < NQ; i++) {
		assert_int_equal(dq[i].fired, 1);
		ok += dq[i].st == WEFT_OK;
		failed += dq[i].st == WEFT_ERR_PEER_FAILED;
	}
	/* 24 MiB cannot all fit in the link: the channel held what it did not take, and the
	 * sends completed as they were posted; a link that holds frames (tcp) fails those */
	assert_int_equal(ok + failed, NQ);
	assert_true(ok > 0);
	memset(&du, 0, sizeof(du));
	post_recv1(&f, 0, 77, rbuf, 100, NULL, &du, NULL); /* the queued message is gone too */
	wt_chan_progress(f.ch[0]);
	assert_int_equal(du.st, WEFT_ERR_PEER_FAILED);
	free(dq);
	/* rank 1 still receives what was taken; it is not drained here */
	for (int r = 0; r < 2; r++)
		wt_chan_destroy(f.ch[r]);
	for (int r = 0; r < 2; r++)
		ct_close_link(&f, r);
	free(buf);
	free(rbuf);
}

/* The peer's link goes away: its pending ops fail with the link's status. */
static void test_peer_lost(void **state)
{
	ct_fab_t f;
	uint8_t rb[64];
	ct_done_t d = {0}, late = {0};

	fab_open(&f, *state, EAGER);
	if (!f.reliable_driver) {
		/* Datagrams carry no connection to lose: heartbeats find such a peer (see
		 * test_heartbeat). */
		ct_close(&f);
		skip();
	}
	exchange(&f, 0, 100, 0, 1);
	post_recv1(&f, 0, 1, rb, sizeof(rb), NULL, &d, NULL);
	wt_chan_destroy(f.ch[1]);
	ct_close_link(&f, 1);
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	while (!d.fired) {
		if (wt_chan_progress(f.ch[0]) == 0)
			wt_util_sleep_ns(1000000);
		if (wt_util_deadline_passed(dl))
			fail_msg("%s: the lost peer was not reported", f.driver);
	}
	assert_true(d.st < 0);
	assert_non_null(strstr(d.msg, "rank 1"));
	post_recv1(&f, 0, 2, rb, sizeof(rb), NULL, &late, NULL);
	wt_chan_progress(f.ch[0]);
	assert_int_equal(late.fired, 1);
	assert_int_equal(late.st, d.st);
	assert_int_equal(wt_chan_outstanding(f.ch[0]), 0);
	wt_chan_destroy(f.ch[0]);
	ct_close_link(&f, 0);
}

/* Bad arguments are refused at post time, with no op created. */
static void test_bad_args(void **state)
{
	ct_fab_t f;
	uint8_t b[16];
	struct iovec iov = {NULL, 4};
	wt_chan_reduce_t red = {.enabled = 1, .dtype = WEFT_INT32, .op = WEFT_SUM};
	wt_chan_reduce_t avg = {.enabled = 1, .dtype = WEFT_INT32, .op = WEFT_AVG};
	/* streaming stores only overwrite; a left operand only combines */
	wt_chan_reduce_t stream_red = {
	    .enabled = 1, .stream = 1, .dtype = WEFT_INT32, .op = WEFT_SUM};
	wt_chan_reduce_t left_copy = {.left = b + 8};
	ct_done_t d = {0};

	fab_open(&f, *state, EAGER);
	assert_int_equal(wt_chan_post_recv(f.ch[0], 2, 1, b, 4, NULL, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_recv(f.ch[0], 0, 1, b, 4, NULL, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG); /* no link to self */
	assert_int_equal(wt_chan_post_recv(f.ch[0], 1, 1, b, 6, &red, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_recv(f.ch[0], 1, 1, b, 8, &avg, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_recv(f.ch[0], 1, 1, b, 8, &stream_red, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_recv(f.ch[0], 1, 1, b, 8, &left_copy, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_send(f.ch[0], 1, 1, &iov, 1, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_post_send(f.ch[0], -1, 1, &iov, 0, ct_on_done, &d, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_chan_outstanding(f.ch[0]), 0);
	pump_rounds(&f, 5);
	assert_int_equal(d.fired, 0);
	ct_close(&f);
}

/* A malformed frame fails the sending peer with PROTOCOL, never crashes. */
static void test_bad_frame(void **state)
{
	ct_fab_t f;
	uint8_t junk[WT_CHAN_HDR_LEN + 16];
	uint8_t rb[32];
	ct_done_t d = {0};

	fab_open(&f, *state, EAGER);
	exchange(&f, 1, 100, 0, 1); /* the connection is up */
	post_recv1(&f, 0, 1, rb, sizeof(rb), NULL, &d, NULL);
	/* a DATA frame naming a receive slot that does not exist */
	wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION,
			   .type = WT_CHAN_FR_DATA,
			   .id = 0x1234500000007ull,
			   .a = 0};

	memset(junk, 0, sizeof(junk));
	wt_chan_hdr_encode(&h, junk);
	struct iovec iov = {junk, sizeof(junk)};
	weft_status_t st;
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	while ((st = wt_link_ops(f.link[1])->send(f.link[1], 0, &iov, 1, NULL)) == WT_AGAIN)
		assert_false(wt_util_deadline_passed(dl));
	assert_true(st == WEFT_OK || st == WEFT_INPROGRESS);
	ct_pump_until(&f, &d.fired, 1);
	assert_int_equal(d.st, WEFT_ERR_PROTOCOL);
	assert_non_null(strstr(d.msg, "rank 1"));
	ct_close(&f);
}

/* Many messages both ways at once, random sizes, receives posted in shuffled order. */
static void test_many(void **state)
{
	ct_fab_t f;
	enum { N = 160 };
	uint8_t *src[2][N], *dst[2][N];
	size_t len[2][N];
	ct_done_t ds[2][N], dr[2][N];
	int perm[N];
	uint32_t rnd = 12345;

	memset(ds, 0, sizeof(ds));
	memset(dr, 0, sizeof(dr));
	fab_open(&f, *state, EAGER);
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < N; i++) {
			rnd = rnd * 1103515245u + 12345u;
			uint32_t k = (rnd >> 8) % 100;

			len[r][i] = k < 60 ? k * 97 : k < 90 ? EAGER + k * 1111 : (size_t)k * 5000;
			src[r][i] = malloc(len[r][i] + 1);
			dst[r][i] = malloc(len[r][i] + 1);
			fill(src[r][i], len[r][i], (unsigned)(r * N + i));
		}
	}
	for (int i = 0; i < N; i++)
		perm[i] = i;
	for (int i = N - 1; i > 0; i--) {
		rnd = rnd * 1103515245u + 12345u;
		int j = (int)((rnd >> 8) % (uint32_t)(i + 1));
		int t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	/* receives for half the messages first, then all sends, then the rest */
	for (int k = 0; k < N; k++) {
		int i = perm[k];

		if (k == N / 2) {
			for (int r = 0; r < 2; r++)
				for (int m = 0; m < N; m++)
					post_send1(&f, r, 500 + (uint64_t)m, src[r][m], len[r][m],
						   &ds[r][m], NULL);
		}
		for (int r = 0; r < 2; r++)
			post_recv1(&f, 1 - r, 500 + (uint64_t)i, dst[r][i], len[r][i], NULL,
				   &dr[r][i], NULL);
		if (k % 16 == 0)
			ct_pump_once(&f, 3);
	}
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < N; i++) {
			ct_pump_until(&f, &dr[r][i].fired, 1);
			ct_pump_until(&f, &ds[r][i].fired, 1);
		}
	}
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(ds[r][i].fired, 1);
			assert_int_equal(dr[r][i].fired, 1);
			assert_int_equal(dr[r][i].st, WEFT_OK);
			assert_int_equal(dr[r][i].bytes, len[r][i]);
			check(dst[r][i], len[r][i], (unsigned)(r * N + i));
			free(src[r][i]);
			free(dst[r][i]);
		}
	}
	ct_close(&f);
}

/* Far more data posted than the link can hold before the peer runs at all. */
static void test_backpressure(void **state)
{
	ct_fab_t f;
	enum { NE = 2000, NR = 6 };
	size_t rlen = 4 * MIB;
	uint8_t *esrc = malloc((size_t)NE * EAGER), *edst = malloc((size_t)NE * EAGER);
	uint8_t *rsrc = malloc(NR * rlen), *rdst = malloc(NR * rlen);
	ct_done_t *ds = calloc(NE + NR, sizeof(ct_done_t)),
		  *dr = calloc(NE + NR, sizeof(ct_done_t));
	int sent = 0, recvd = 0;

	fab_open(&f, *state, EAGER);
	fill(esrc, (size_t)NE * EAGER, 1);
	fill(rsrc, NR * rlen, 2);
	for (int i = 0; i < NE; i++) {
		post_send1(&f, 0, 7, esrc + (size_t)i * EAGER, EAGER, &ds[i], NULL);
		if (i == NE / 2) {
			for (int k = 0; k < NR; k++)
				post_send1(&f, 0, 8, rsrc + (size_t)k * rlen, rlen, &ds[NE + k],
					   NULL);
		}
	}
	pump_one(&f, 0, 200); /* rank 1 is silent: the link fills up */
	for (int k = 0; k < NR; k++)
		post_recv1(&f, 1, 8, rdst + (size_t)k * rlen, rlen, NULL, &dr[NE + k], NULL);
	for (int i = 0; i < NE; i++)
		post_recv1(&f, 1, 7, edst + (size_t)i * EAGER, EAGER, NULL, &dr[i], NULL);
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	while (sent < NE + NR || recvd < NE + NR) {
		ct_pump_once(&f, 3);
		sent = recvd = 0;
		for (int i = 0; i < NE + NR; i++) {
			sent += ds[i].fired;
			recvd += dr[i].fired;
		}
		if (wt_util_deadline_passed(dl))
			fail_msg("backpressure: %d sent, %d received of %d", sent, recvd, NE + NR);
	}
	for (int i = 0; i < NE + NR; i++) {
		assert_int_equal(ds[i].st, WEFT_OK);
		assert_int_equal(dr[i].st, WEFT_OK);
	}
	check(edst, (size_t)NE * EAGER, 1);
	check(rdst, NR * rlen, 2);
	ct_close(&f);
	free(esrc);
	free(edst);
	free(rsrc);
	free(rdst);
	free(ds);
	free(dr);
}

static int fired(const ct_done_t *d, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += d[i].fired;
	return k;
}

/* Eager sends to a rank that posts no receive yet complete all the same, far past what
 * any link buffers (16 MiB): the channel keeps a copy of what its link could not take, so
 * the sender may reuse its buffers at once, and the receiver later gets what was sent.
 * (The receiver progresses meanwhile: a link that holds frames until the peer acknowledges
 * them, udp under the reliability layer, completes those as it does.) */
static void test_eager_held(void **state)
{
	ct_fab_t f;
	enum { NE = 2000 };
	uint8_t *src = malloc((size_t)NE * EAGER), *dst = malloc((size_t)NE * EAGER);
	ct_done_t *ds = calloc(NE, sizeof(ct_done_t)), *dr = calloc(NE, sizeof(ct_done_t));
	int sent, recvd;
	uint64_t dl = wt_util_deadline_in(WAIT_S);

	assert_true(src && dst && ds && dr);
	fab_open(&f, *state, EAGER);
	fill(src, (size_t)NE * EAGER, 31);
	for (int i = 0; i < NE; i++)
		post_send1(&f, 0, 9, src + (size_t)i * EAGER, EAGER, &ds[i], NULL);
	while ((sent = fired(ds, NE)) < NE) { /* rank 1 posts nothing */
		ct_pump_once(&f, 3);
		if (wt_util_deadline_passed(dl))
			fail_msg("held eager sends: %d of %d completed", sent, NE);
	}
	for (int i = 0; i < NE; i++)
		assert_int_equal(ds[i].st, WEFT_OK);
	fill(src, (size_t)NE * EAGER, 32); /* reused: what arrives is what was sent */
	for (int i = 0; i < NE; i++)
		post_recv1(&f, 1, 9, dst + (size_t)i * EAGER, EAGER, NULL, &dr[i], NULL);
	while ((recvd = fired(dr, NE)) < NE) {
		ct_pump_once(&f, 3);
		if (wt_util_deadline_passed(dl))
			fail_msg("held eager sends: %d of %d received", recvd, NE);
	}
	for (int i = 0; i < NE; i++)
		assert_int_equal(dr[i].st, WEFT_OK);
	check(dst, (size_t)NE * EAGER, 31);
	ct_close(&f);
	free(src);
	free(dst);
	free(ds);
	free(dr);
}

/* Callbacks may post new ops and cancel others. */
typedef struct {
	ct_fab_t *f;
	wt_chan_op_t *victim;
	ct_done_t *victim_done;
	uint8_t *buf;
	ct_done_t chained;
	int fired;
} chain_t;

static void on_chain(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	chain_t *c = arg;

	(void)bytes;
	(void)msg;
	assert_int_equal(st, WEFT_OK);
	c->fired++;
	wt_chan_cancel(c->f->ch[1], c->victim);
	post_send1(c->f, 1, 99, c->buf, 5000, &c->chained, NULL);
}

static void test_callback_reentry(void **state)
{
	ct_fab_t f;
	uint8_t a[100], ra[100], b[5000], back[5000], vbuf[10];
	ct_done_t vdone = {0}, ds = {0}, dback = {0};
	chain_t c = {.f = &f, .victim_done = &vdone, .buf = b};

	fab_open(&f, *state, EAGER);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	post_recv1(&f, 1, 50, vbuf, sizeof(vbuf), NULL, &vdone, &c.victim);
	assert_int_equal(wt_chan_post_recv(f.ch[1], 0, 1, ra, sizeof(ra), NULL, on_chain, &c, NULL),
			 WEFT_OK);
	post_recv1(&f, 0, 99, back, sizeof(back), NULL, &dback, NULL);
	post_send1(&f, 0, 1, a, sizeof(a), &ds, NULL);
	ct_pump_until(&f, &dback.fired, 1);
	ct_pump_until(&f, &c.chained.fired, 1);
	ct_pump_until(&f, &ds.fired, 1);
	assert_int_equal(c.fired, 1);
	assert_int_equal(vdone.fired, 0);
	assert_int_equal(dback.st, WEFT_OK);
	assert_memory_equal(back, b, sizeof(b));
	assert_memory_equal(ra, a, sizeof(a));
	ct_close(&f);
}

/* wt_chan_post_send_copy: the bytes sent also land in the copy buffer, whole when the send
 * completes: eager, streamed in fragments from several pieces (around the caches or not),
 * and fetched by the receiver with a get (the sender copies nothing itself there). */
static void send_copy_one(ct_fab_t *f, size_t len, int npieces, unsigned flags, unsigned seed)
{
	uint8_t *src = malloc(len), *dst = malloc(len), *base = malloc(len + 8);
	uint8_t *copy = base + 5; /* off a line: the streaming copy takes any alignment */
	struct iovec iov[12];
	size_t off = 0;
	ct_done_t ds = {0}, dr = {0};

	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(base);
	assert_true(npieces >= 1 && npieces <= 12);
	fill(src, len, seed);
	memset(base, 0xee, len + 8);
	for (int i = 0; i < npieces; i++) {
		size_t n = i == npieces - 1 ? len - off : len / (size_t)npieces + (size_t)i * 7;

		iov[i].iov_base = src + off;
		iov[i].iov_len = n;
		off += n;
	}
	post_recv1(f, 1, 40 + seed, dst, len, NULL, &dr, NULL);
	assert_int_equal(wt_chan_post_send_copy(f->ch[0], 1, 40 + seed, iov, npieces, copy, flags,
						ct_on_done, &ds, NULL),
			 WEFT_OK);
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(ds.st, WEFT_OK);
	check(dst, len, seed);
	check(copy, len, seed);
	/* nothing written around the copy */
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(base[i], 0xee);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(copy[len + i], 0xee);
	free(src);
	free(dst);
	free(base);
}

/* WEFT_RNDV_GET set to v for a test; *had and keep remember what it was, for
 * rndv_env_restore. */
static void rndv_env_set(const char *v, int *had, char keep[16])
{
	const char *was = getenv("WEFT_RNDV_GET");

	*had = was != NULL;
	keep[0] = '\0';
	if (was != NULL)
		snprintf(keep, 16, "%s", was);
	setenv("WEFT_RNDV_GET", v, 1);
}

/* rndv_env_set("auto", ...), then the fabric; returns whether its links can get. */
static int fab_open_auto(ct_fab_t *f, const char *drv, int *had, char keep[16])
{
	rndv_env_set("auto", had, keep);
	fab_open(f, drv, EAGER);
	return (wt_link_ops(f->link[1])->caps & WT_LINK_CAP_GET) != 0;
}

static void rndv_env_restore(int had, const char *keep)
{
	if (had)
		setenv("WEFT_RNDV_GET", keep, 1);
	else
		unsetenv("WEFT_RNDV_GET");
}

static void test_send_copy(void **state)
{
	ct_fab_t f;
	char keep[16];
	int had;

	for (int get = 0; get < 2; get++) {
		rndv_env_set(get ? "1" : "0", &had, keep);
		fab_open(&f, *state, EAGER);
		send_copy_one(&f, 100, 1, 0, 1);			      /* eager */
		send_copy_one(&f, 5000, 3, WT_CHAN_COPY_STREAM, 2);	      /* eager, pieces */
		send_copy_one(&f, 3 * MIB + 123, 1, 0, 3);		      /* rendezvous */
		send_copy_one(&f, 3 * MIB + 123, 11, WT_CHAN_COPY_STREAM, 4); /* pieces */
		send_copy_one(&f, 256 * 1024, 1, WT_CHAN_COPY_STREAM, 5);
		ct_close(&f);
		rndv_env_restore(had, keep);
	}
}

/* One message of len bytes from rank 0 to rank 1 (red: receive with it), checked; returns
 * the bytes rank 0's link sent to rank 1 meanwhile. */
static uint64_t one_message_wire(ct_fab_t *f, size_t len, const wt_chan_reduce_t *red,
				 unsigned seed)
{
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct iovec iov;
	wt_link_stats_t before = {0}, after = {0};
	ct_done_t ds = {0}, dr = {0};
	int sums = red != NULL && red->enabled;

	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < len / 4; i++) {
		float v = (float)(i % 1000);

		memcpy(src + 4 * i, &v, 4);
		v = sums ? (float)(i % 7) : -1.0f;
		memcpy(dst + 4 * i, &v, 4);
	}
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &before);
	iov.iov_base = src;
	iov.iov_len = len;
	post_recv1(f, 1, 70 + seed, dst, len, red, &dr, NULL);
	assert_int_equal(wt_chan_post_send(f->ch[0], 1, 70 + seed, &iov, 1, ct_on_done, &ds, NULL),
			 WEFT_OK);
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(ds.st, WEFT_OK);
	for (size_t i = 0; i < len / 4; i++) {
		float got, want = (float)(i % 1000) + (sums ? (float)(i % 7) : 0.0f);

		memcpy(&got, dst + 4 * i, 4);
		if (got != want)
			fail_msg("seed %u element %zu: %g, want %g", seed, i, got, want);
	}
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &after);
	free(src);
	free(dst);
	return after.bytes_sent - before.bytes_sent;
}

/* wt_chan_set_get_min with WEFT_RNDV_GET=auto: a plain receive of at least that many bytes
 * reads the sender's buffer by get where the link can (only control frames cross the
 * link); smaller ones, receives with a reduction, receives stored around the caches and
 * every receive without get_min stream their bytes through the link. */
static void test_get_min(void **state)
{
	const size_t big = MIB, small = 256 * 1024;
	const wt_chan_reduce_t sum = {.enabled = 1, .dtype = WEFT_FLOAT32, .op = WEFT_SUM};
	const wt_chan_reduce_t nt = {.stream = 1};
	char keep[16];
	int had;
	ct_fab_t f;

	int get = fab_open_auto(&f, *state, &had, keep);

	/* without get_min: everything streams */
	assert_true(one_message_wire(&f, big, NULL, 1) >= big);
	wt_chan_set_get_min(f.ch[1], 512 * 1024);
	if (get)
		assert_true(one_message_wire(&f, big, NULL, 2) < 4096);
	else
		assert_true(one_message_wire(&f, big, NULL, 2) >= big);
	assert_true(one_message_wire(&f, small, NULL, 3) >= small);
	assert_true(one_message_wire(&f, big, &sum, 4) >= big);
	assert_true(one_message_wire(&f, big, &nt, 5) >= big);
	/* a send with a copy, of get_min or more where the link can get: the copy is made as
	 * the send is posted, while the receiver reads, and what arrives is the same */
	if (get) {
		uint8_t *src = malloc(big), *copy = calloc(1, big), *dst = malloc(big);
		struct iovec iov = {.iov_base = src, .iov_len = big};
		ct_done_t ds = {0}, dr = {0};

		assert_true(src && copy && dst);
		fill(src, big, 7);
		wt_chan_set_get_min(f.ch[0], 512 * 1024);
		assert_int_equal(
		    wt_chan_post_send_copy(f.ch[0], 1, 77, &iov, 1, copy, 0, ct_on_done, &ds, NULL),
		    WEFT_OK);
		check(copy, big, 7);
		post_recv1(&f, 1, 77, dst, big, NULL, &dr, NULL);
		ct_pump_until(&f, &dr.fired, 1);
		ct_pump_until(&f, &ds.fired, 1);
		assert_int_equal(dr.st, WEFT_OK);
		assert_int_equal(ds.st, WEFT_OK);
		check(dst, big, 7);
		check(copy, big, 7);
		wt_chan_set_get_min(f.ch[0], 0);
		free(src);
		free(copy);
		free(dst);
	}
	wt_chan_set_get_min(f.ch[1], 0);
	assert_true(one_message_wire(&f, big, NULL, 6) >= big);
	ct_close(&f);
	rndv_env_restore(had, keep);
}

static int placed_far(void)
{
	return 1;
}

static int placed_near(void)
{
	return 0;
}

/* Bytes rank 0's link carried to rank 1 while the two ranks exchanged len bytes each way
 * (rank 1 sending before rank 0 does), both messages checked byte by byte. */
static uint64_t exchange_wire(ct_fab_t *f, size_t len, unsigned seed)
{
	uint8_t *s0 = malloc(len), *s1 = malloc(len), *d0 = malloc(len), *d1 = malloc(len);
	ct_done_t r0 = {0}, r1 = {0}, x0 = {0}, x1 = {0};
	wt_link_stats_t before = {0}, after = {0};

	assert_true(s0 && s1 && d0 && d1);
	fill(s0, len, seed);
	fill(s1, len, seed + 1);
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &before);
	post_recv1(f, 0, 9, d0, len, NULL, &r0, NULL);
	post_send1(f, 1, 9, s1, len, &x1, NULL);
	post_recv1(f, 1, 9, d1, len, NULL, &r1, NULL);
	post_send1(f, 0, 9, s0, len, &x0, NULL);
	ct_pump_until(f, &r0.fired, 1);
	ct_pump_until(f, &r1.fired, 1);
	ct_pump_until(f, &x0.fired, 1);
	ct_pump_until(f, &x1.fired, 1);
	assert_int_equal(r0.st, WEFT_OK);
	assert_int_equal(r1.st, WEFT_OK);
	assert_int_equal(x0.st, WEFT_OK);
	assert_int_equal(x1.st, WEFT_OK);
	check(d1, len, seed);
	check(d0, len, seed + 1);
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &after);
	free(s0);
	free(s1);
	free(d0);
	free(d1);
	return after.bytes_sent - before.bytes_sent;
}

/* wt_chan_set_far_get_min with WEFT_RNDV_GET=auto: while the placement says far, a plain
 * receive of at least that many bytes that is half of an exchange reads by get where the
 * link can (rank 0's message then crosses its link as control frames only); a one-way
 * message, a smaller one, one while near, and every one under WEFT_RNDV_GET=fixed stream. */
static void test_far_get(void **state)
{
	const size_t len = 256 * 1024, small = 32 * 1024;
	char keep[16];
	int had;
	ct_fab_t f;

	int get = fab_open_auto(&f, *state, &had, keep);

	/* far, but no far_get_min: streamed */
	wt_chan_set_far_fn(f.ch[1], placed_far);
	assert_true(exchange_wire(&f, len, 11) >= len);
	wt_chan_set_far_get_min(f.ch[1], 64 * 1024);
	if (get)
		assert_true(exchange_wire(&f, len, 12) < 4096);
	else
		assert_true(exchange_wire(&f, len, 12) >= len);
	assert_true(one_message_wire(&f, len, NULL, 13) >= len);
	assert_true(exchange_wire(&f, small, 14) >= small);
	wt_chan_set_far_fn(f.ch[1], placed_near);
	assert_true(exchange_wire(&f, len, 15) >= len);
	wt_chan_set_far_fn(f.ch[1], NULL);
	ct_close(&f);
	setenv("WEFT_RNDV_GET", "fixed", 1);
	fab_open(&f, *state, EAGER);
	wt_chan_set_far_get_min(f.ch[1], 64 * 1024);
	wt_chan_set_far_fn(f.ch[1], placed_far);
	assert_true(exchange_wire(&f, len, 16) >= len);
	ct_close(&f);
	rndv_env_restore(had, keep);
}

/* wt_chan_set_xchg_get_min with WEFT_RNDV_GET=auto or fixed: a plain receive of at least
 * that many bytes that is half of an exchange reads by get where the link can, wherever the
 * placement says the cores are; a one-way message and a smaller one stream. With
 * WEFT_RNDV_GET=0 the setter reports 0 and everything streams. */
static void test_xchg_get(void **state)
{
	const size_t len = 256 * 1024, small = 64 * 1024;
	static const char *const modes[] = {"auto", "fixed"};
	char keep[16];
	int had;
	ct_fab_t f;

	for (int m = 0; m < 2; m++) {
		rndv_env_set(modes[m], &had, keep);
		fab_open(&f, *state, EAGER);
		int get = (wt_link_ops(f.link[1])->caps & WT_LINK_CAP_GET) != 0;

		wt_chan_set_far_fn(f.ch[1], placed_near);
		assert_true(exchange_wire(&f, len, 21) >= len);
		assert_int_equal(wt_chan_set_xchg_get_min(f.ch[1], 128 * 1024), 128 * 1024);
		if (get)
			assert_true(exchange_wire(&f, len, 22) < 4096);
		else
			assert_true(exchange_wire(&f, len, 22) >= len);
		assert_true(one_message_wire(&f, len, NULL, 23) >= len);
		assert_true(exchange_wire(&f, small, 24) >= small);
		wt_chan_set_far_fn(f.ch[1], NULL);
		ct_close(&f);
		rndv_env_restore(had, keep);
	}
	rndv_env_set("0", &had, keep);
	fab_open(&f, *state, EAGER);
	assert_int_equal(wt_chan_set_xchg_get_min(f.ch[1], 128 * 1024), 0);
	assert_true(exchange_wire(&f, len, 25) >= len);
	ct_close(&f);
	rndv_env_restore(had, keep);
}

/* Frames rank 0 sends for one message of len bytes to rank 1 (its RTS included), checked
 * byte by byte; with busy, rank 0 has a receive of 1 MiB from rank 1 pending meanwhile. */
static uint64_t one_message_frames(ct_fab_t *f, size_t len, int busy, unsigned seed)
{
	uint8_t *src = malloc(len), *dst = malloc(len), *big = malloc(MIB);
	wt_link_stats_t before = {0}, after = {0};
	ct_done_t ds = {0}, dr = {0}, db = {0};
	wt_chan_op_t *bop = NULL;

	assert_true(src && dst && big);
	fill(src, len, seed);
	if (busy)
		post_recv1(f, 0, 900 + seed, big, MIB, NULL, &db, &bop);
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &before);
	post_recv1(f, 1, 800 + seed, dst, len, NULL, &dr, NULL);
	post_send1(f, 0, 800 + seed, src, len, &ds, NULL);
	ct_pump_until(f, &dr.fired, 1);
	ct_pump_until(f, &ds.fired, 1);
	wt_link_ops(f->link[0])->stats(f->link[0], 1, &after);
	assert_int_equal(dr.st, WEFT_OK);
	assert_int_equal(ds.st, WEFT_OK);
	assert_int_equal(dr.bytes, len);
	check(dst, len, seed);
	if (busy) {
		wt_chan_cancel(f->ch[0], bop); /* no callback after a cancel */
		assert_int_equal(db.fired, 0);
	}
	free(src);
	free(dst);
	free(big);
	return after.frames_sent - before.frames_sent;
}

/* A one-way stream goes in frames of a quarter of the message, not below the link's
 * pipe_min, where the link asks for that (shm); a sender with a large receive pending, a
 * message of four largest frames or more, and links that do not ask send whole frames. */
static void test_pipe_frames(void **state)
{
	const char *drv = *state;
	/* frames_sent counts only this message's frames: no reliability layer's acks and
	 * retransmissions (udp, WEFT_FAULT) */
	int exact = strcmp(drv, "udp") != 0 && getenv("WEFT_FAULT") == NULL;
	char keep[16];
	int had;
	ct_fab_t f;

	rndv_env_set("0", &had, keep); /* the bytes go through the link */
	fab_open(&f, drv, EAGER);
	size_t min = wt_link_ops(f.link[0])->pipe_min;
	/* the largest fragment, and the frames of a message sent in such after its RTS */
	size_t frag = (wt_link_max_frame(f.link[0]) - WT_CHAN_HDR_LEN) / WT_CHAN_FRAG_ALIGN *
		      WT_CHAN_FRAG_ALIGN;
	size_t lens[5] = {256 * 1024, 2 * min, 256 * 1024 + 100, 256 * 1024, 4 * frag + 64};
	uint64_t want[5], got[5];

	for (int i = 0; i < 5; i++)
		want[i] = 1 + (lens[i] + frag - 1) / frag;
	if (min != 0) {
		assert_int_equal(min % WT_CHAN_FRAG_ALIGN, 0);
		assert_true(4 * min <= 256 * 1024 && frag >= 256 * 1024);
		want[0] = 1 + 4; /* quarters of 256 KiB */
		want[1] = 1 + 2; /* a quarter of 2 * pipe_min is below it: halves */
		want[2] = 1 + 4; /* quarters rounded up to the alignment, the rest in the last */
	} else {
		lens[1] = 64 * 1024;
		want[1] = 1 + (lens[1] + frag - 1) / frag;
	}
	/* [3]: an exchange (a large receive pending); [4]: four largest frames or more */
	for (int i = 0; i < 5; i++)
		got[i] = one_message_frames(&f, lens[i], i == 3, (unsigned)i + 1);
	ct_close(&f);
	rndv_env_restore(had, keep);
	for (int i = 0; i < 5 && exact; i++) {
		if (got[i] != want[i])
			fail_msg("message %d of %zu bytes: %llu frames, want %llu", i, lens[i],
				 (unsigned long long)got[i], (unsigned long long)want[i]);
	}
}

/* WEFT_RNDV_GET is validated when a channel is created: auto, fixed, a boolean, nothing
 * else. */
static void test_rndv_env(void **state)
{
	wt_chan_config_t cc = {.rank = 0, .size = 2};
	const char *good[] = {"auto", "fixed", "1", "0", "on", "no"};
	wt_chan_t *ch = NULL;
	char keep[16];
	int had;

	(void)state;
	rndv_env_set("auto", &had, keep);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("WEFT_RNDV_GET", good[i], 1);
		assert_int_equal(wt_chan_create(&cc, &ch), WEFT_OK);
		wt_chan_destroy(ch);
		ch = NULL;
	}
	setenv("WEFT_RNDV_GET", "sometimes", 1);
	assert_int_equal(wt_chan_create(&cc, &ch), WEFT_ERR_INVALID_ARG);
	assert_null(ch);
	rndv_env_restore(had, keep);
}

/* A link whose poll itself fails: its peer fails, and the channel stops polling it and no
 * longer lets it hold a sleeper awake or hand out its fd. (Driver-independent: the link
 * is a stub that only fails.) */
struct wt_link {
	wt_link_base_t base;
	int polls, arms;
};

static int bad_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	(void)ev;
	(void)max;
	l->polls++;
	return WEFT_ERR_SYSTEM;
}

static weft_status_t bad_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie)
{
	(void)l;
	(void)peer;
	(void)iov;
	(void)iovcnt;
	(void)cookie;
	return WEFT_ERR_SYSTEM;
}

static int bad_fd(wt_link_t *l)
{
	(void)l;
	return 0; /* stdin: pollable, and must not be handed out once the link is dead */
}

static int bad_arm(wt_link_t *l)
{
	l->arms++;
	return 1;
}

static const wt_link_ops_t bad_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "broken",
    .caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED | WT_LINK_CAP_HAS_FD,
    .send = bad_send,
    .poll = bad_poll,
    .fd = bad_fd,
    .arm = bad_arm,
};

static void on_bad_recv(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	(void)bytes;
	(void)msg;
	*(weft_status_t *)arg = st;
}

static void test_link_poll_fails(void **state)
{
	wt_chan_config_t cc = {.rank = 0, .size = 2};
	struct wt_link bad = {.base = {.ops = &bad_ops, .max_frame = 4096}};
	wt_chan_t *ch = NULL;
	weft_status_t got = WEFT_INPROGRESS;
	char buf[16];
	int fds[4];

	(void)state;
	assert_int_equal(wt_chan_create(&cc, &ch), WEFT_OK);
	assert_int_equal(wt_chan_set_link(ch, 1, (wt_link_t *)&bad), WEFT_OK);
	assert_int_equal(wt_chan_fds(ch, fds, 4), 1);
	assert_int_equal(
	    wt_chan_post_recv(ch, 1, 7, buf, sizeof(buf), NULL, on_bad_recv, &got, NULL), WEFT_OK);
	wt_chan_progress(ch);
	assert_int_equal(bad.polls, 1);
	assert_int_equal(got, WEFT_ERR_SYSTEM);
	for (int i = 0; i < 10; i++)
		wt_chan_progress(ch);
	assert_int_equal(bad.polls, 1);
	assert_int_equal(wt_chan_fds(ch, fds, 4), 0);
	assert_int_equal(wt_chan_arm(ch), 0);
	assert_int_equal(bad.arms, 0);
	assert_int_equal(wt_chan_timer_ms(ch), -1);
	assert_int_equal(wt_chan_outstanding(ch), 0);
	wt_chan_destroy(ch);
}

/* Peers failed in one progress pass are reported in the order they failed, not by rank
 * (a communicator names the first member it lost). */
typedef struct {
	int peers[4];
	int n;
} fail_order_t;

static void on_fail_order(void *arg, int peer, weft_status_t st, const char *why)
{
	fail_order_t *o = arg;

	(void)st, (void)why;
	if (o->n < 4)
		o->peers[o->n] = peer;
	o->n++;
}

static void test_fail_order(void **state)
{
	wt_chan_config_t cc = {.rank = 0, .size = 4};
	wt_chan_t *ch = NULL;
	fail_order_t o = {{0}, 0};

	(void)state;
	assert_int_equal(wt_chan_create(&cc, &ch), WEFT_OK);
	wt_chan_set_peer_fail_cb(ch, on_fail_order, &o);
	wt_chan_fail_peer(ch, 3, WEFT_ERR_PEER_FAILED, "first");
	wt_chan_fail_peer(ch, 1, WEFT_ERR_PEER_FAILED, "second");
	wt_chan_fail_peer(ch, 2, WEFT_ERR_PEER_FAILED, "third");
	assert_int_equal(o.n, 0); /* from progress, never from inside the call */
	wt_chan_progress(ch);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.peers[0], 3);
	assert_int_equal(o.peers[1], 1);
	assert_int_equal(o.peers[2], 2);
	wt_chan_progress(ch);
	assert_int_equal(o.n, 3);
	wt_chan_destroy(ch);
}

#define DRIVER_TESTS(drv)                                                                          \
	cmocka_unit_test_prestate(test_sizes, drv),                                                \
	    cmocka_unit_test_prestate(test_stream_sizes, drv),                                     \
	    cmocka_unit_test_prestate(test_unexpected, drv),                                       \
	    cmocka_unit_test_prestate(test_iov_pieces, drv),                                       \
	    cmocka_unit_test_prestate(test_ordering, drv),                                         \
	    cmocka_unit_test_prestate(test_tags_out_of_order, drv),                                \
	    cmocka_unit_test_prestate(test_reduce, drv),                                           \
	    cmocka_unit_test_prestate(test_mismatch, drv),                                         \
	    cmocka_unit_test_prestate(test_cancel_recv, drv),                                      \
	    cmocka_unit_test_prestate(test_cancel_send, drv),                                      \
	    cmocka_unit_test_prestate(test_fail_peer, drv),                                        \
	    cmocka_unit_test_prestate(test_peer_lost, drv),                                        \
	    cmocka_unit_test_prestate(test_bad_args, drv),                                         \
	    cmocka_unit_test_prestate(test_bad_frame, drv),                                        \
	    cmocka_unit_test_prestate(test_many, drv),                                             \
	    cmocka_unit_test_prestate(test_backpressure, drv),                                     \
	    cmocka_unit_test_prestate(test_eager_held, drv),                                       \
	    cmocka_unit_test_prestate(test_callback_reentry, drv),                                 \
	    cmocka_unit_test_prestate(test_rndv_env, drv),                                         \
	    cmocka_unit_test_prestate(test_get_min, drv),                                          \
	    cmocka_unit_test_prestate(test_far_get, drv),                                          \
	    cmocka_unit_test_prestate(test_xchg_get, drv),                                         \
	    cmocka_unit_test_prestate(test_send_copy, drv),                                        \
	    cmocka_unit_test_prestate(test_pipe_frames, drv),                                      \
	    cmocka_unit_test_prestate(test_link_poll_fails, drv),                                  \
	    cmocka_unit_test_prestate(test_fail_order, drv)

CT_DRIVER_MAIN("channel")
