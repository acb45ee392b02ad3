/* The direct allreduce on the simulated network with slots and peers' buffers
 * (tests/unit/schedule): rank counts 1..9, counts around the rank count (empty shares) and
 * across several pieces, every dtype and op, in place or not and mixed between ranks, the
 * peers' buffers mapped, copied or both; the plan rules for peer steps; a peer whose
 * counts differ; a failed copy reported on the failing rank and, through the drains, on
 * every other. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layers/schedule/exec.h"
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"
#include "tests/unit/schedule/schedtest.h"
#include "tests/unit/schedule/simnet.h"

#define REGION ((size_t)64 * 1024)
#define TAG(k) ((uint64_t)(0x500 + (k)) << WT_SCHED_TAG_MSG_BITS)

typedef struct {
	int n;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int in_place; /* 0 none, 1 all, 2 odd ranks */
	int mode;     /* SIMNET_PEERS_* */
	uint64_t seed;
} cfg_t;

static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	return st_exact_input(st_hash((uint64_t)(r + 1) * 7919u, i), r, i, op, dt);
}

static int ip_of(const cfg_t *c, int r)
{
	return c->in_place == 1 || (c->in_place == 2 && (r & 1));
}

static const wt_sched_algo_t *direct_algo(int n)
{
	wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, 4, WEFT_INT32, WEFT_SUM, 0, n, 0, 0);
	const wt_sched_algo_t *algo;

	a.slot_bytes = wt_sched_slot_capacity(REGION);
	algo = wt_sched_algo_select(&a, "direct");
	assert_non_null(algo);
	assert_string_equal(algo->name, "direct");
	return algo;
}

static void run_cfg(const cfg_t *c)
{
	st_execs_t x = {.n = c->n, .sim = simnet_new(c->n, c->seed)};
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	uint8_t *send[ST_MAX_RANKS], *recv[ST_MAX_RANKS], *want = st_alloc(bytes + 1);
	int order[ST_MAX_RANKS];
	uint64_t rng = c->seed * 31 + 7;
	char name[200];

	snprintf(name, sizeof(name), "direct n=%d count=%zu %s %s in_place=%d mode=%d seed=%llu",
		 c->n, c->count, wt_util_dtype_name(c->dt), wt_util_op_name(c->op), c->in_place,
		 c->mode, (unsigned long long)c->seed);
	simnet_enable_slots(x.sim, REGION, 100 + c->seed);
	simnet_enable_peers(x.sim, c->mode);
	for (int r = 0; r < c->n; r++) {
		wt_sched_args_t a =
		    st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, r, c->n, ip_of(c, r), 0);

		a.slot_bytes = wt_sched_slot_capacity(REGION);
		st_build(&a, direct_algo(c->n), name, &x.plan[r]);
		recv[r] = st_alloc(bytes + 1);
		send[r] = ip_of(c, r) ? recv[r] : st_alloc(bytes + 1);
		for (size_t i = 0; i < c->count; i++)
			st_store(send[r] + i * es, c->dt, input(r, i, c->op, c->dt));
		if (!ip_of(c, r))
			memset(recv[r], 0xa5, bytes + 1);
	}
	st_random_order(order, c->n, &rng);
	for (int k = 0; k < c->n; k++) {
		st_start(&x, order[k], TAG(0), send[order[k]], recv[order[k]]);
		for (uint64_t s = simnet_rand(&rng) % 4; s > 0 && simnet_step(x.sim); s--)
			;
	}
	st_run_checked(&x, &rng, 5, 0);
	for (size_t i = 0; i < c->count; i++)
		st_reduce_ref(input, c->n, i, c->op, c->dt, want + i * es);
	for (int r = 0; r < c->n; r++) {
		st_check_done(&x, r, name);
		st_check_bytes(name, r, "RECV", recv[r], want, bytes, es);
		if (!ip_of(c, r)) {
			for (size_t i = 0; i < c->count; i++) {
				uint8_t orig[8];

				st_store(orig, c->dt, input(r, i, c->op, c->dt));
				assert_memory_equal(send[r] + i * es, orig, es);
			}
			free(send[r]);
		}
		/* nothing past the end was written */
		if (!ip_of(c, r))
			assert_int_equal(recv[r][bytes], 0xa5);
		if (c->n > 1 && c->count >= (size_t)c->n && c->mode == SIMNET_PEERS_MAP)
			assert_int_equal(simnet_peer_copies(x.sim, r), 0);
		if (c->n > 1 && c->count >= (size_t)c->n && c->mode == SIMNET_PEERS_COPY)
			assert_int_equal(simnet_peer_maps(x.sim, r), 0);
		st_release(&x, r, 1);
		free(recv[r]);
	}
	free(want);
	simnet_free(x.sim);
}

/* Rank counts, counts (empty shares, odd splits, several 64 KiB pieces), in place or not
 * or mixed, each way of reaching the peers. */
static void test_ranks_counts(void **state)
{
	static const int ns[] = {1, 2, 3, 4, 5, 8, 9};
	static const size_t counts[] = {0, 1, 2, 3, 7, 37, 40000};
	uint64_t seed = 1;

	(void)state;
	for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
		for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
			for (int ip = 0; ip < 3; ip++)
				for (int mode = 0; mode < 3; mode++) {
					cfg_t c = {.n = ns[ni],
						   .count = counts[k],
						   .dt = WEFT_INT32,
						   .op = WEFT_SUM,
						   .in_place = ip,
						   .mode = mode,
						   .seed = seed++};

					if (counts[k] == 40000 && ns[ni] > 4 && mode != 1)
						continue;
					run_cfg(&c);
				}
}

/* Calls of 16 MiB and more fuse the last term with the writes (PEER_REDUCE_OUT, streamed):
 * every way of reaching the peers, in place or not, 2 and 3 ranks, and a count whose share
 * ends mid-block. */
static void test_streamed(void **state)
{
	static const struct {
		int n, in_place, mode;
		weft_dtype_t dt;
		size_t count;
	} cases[] = {
	    {2, 0, SIMNET_PEERS_MAP, WEFT_FLOAT32, (4u << 20) + 13},
	    {2, 1, SIMNET_PEERS_MIXED, WEFT_INT32, (4u << 20) + 1},
	    {3, 2, SIMNET_PEERS_MIXED, WEFT_INT8, (16u << 20) + 5},
	    {3, 0, SIMNET_PEERS_COPY, WEFT_FLOAT64, (2u << 20) + 3},
	};
	uint64_t seed = 500;

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		cfg_t c = {.n = cases[k].n,
			   .count = cases[k].count,
			   .dt = cases[k].dt,
			   .op = k == 3 ? WEFT_MAX : WEFT_SUM,
			   .in_place = cases[k].in_place,
			   .mode = cases[k].mode,
			   .seed = seed++};

		run_cfg(&c);
	}
}

static void test_dtypes_ops(void **state)
{
	static const weft_dtype_t dts[] = {WEFT_INT8,	 WEFT_UINT8,  WEFT_INT32,   WEFT_UINT32,
					   WEFT_INT64,	 WEFT_UINT64, WEFT_FLOAT16, WEFT_BFLOAT16,
					   WEFT_FLOAT32, WEFT_FLOAT64};
	uint64_t seed = 1000;

	(void)state;
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
		for (int op = 0; op < WEFT_OP_COUNT_; op++)
			for (int n = 2; n <= 4; n++) {
				cfg_t c = {.n = n,
					   .count = 29,
					   .dt = dts[d],
					   .op = (weft_op_t)op,
					   .in_place = (int)(seed % 3),
					   .mode = SIMNET_PEERS_MIXED,
					   .seed = seed++};

				run_cfg(&c);
			}
}

/* The plan for 3 ranks: the PUT publishes, the share's pieces read and write the peers,
 * the DONE and then one drain per peer. */
static void test_plan_shape(void **state)
{
	wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, 300000, WEFT_FLOAT32, WEFT_AVG, 1, 3, 0, 0);
	wt_sched_plan_t *p;
	size_t n, reads = 0, writes = 0, drains = 0, divs = 0, streams = 0, firsts = 0;
	int done_at = -1;

	(void)state;
	a.slot_bytes = wt_sched_slot_capacity(REGION);
	st_build(&a, direct_algo(3), "shape", &p);
	n = wt_sched_plan_nsteps(p);
	for (size_t i = 0; i < n; i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		reads += s->type == WT_SCHED_PEER_REDUCE;
		writes += s->type == WT_SCHED_PEER_WRITE;
		divs += s->type == WT_SCHED_DIV;
		if (s->type == WT_SCHED_SLOT_DONE)
			done_at = (int)i;
		if (s->type == WT_SCHED_SLOT_DRAIN) {
			assert_true(done_at >= 0);
			assert_int_not_equal(s->peer, 1);
			drains++;
		}
		/* a piece is summed in the scratch and leaves it for every RECV */
		if (s->type == WT_SCHED_PEER_WRITE) {
			assert_int_equal(s->buf, WT_SCHED_BUF_RECV);
			assert_int_equal(s->src_buf, WT_SCHED_BUF_SCRATCH);
			assert_true(s->off >= 100000 * 4 && s->off + s->len <= 200000 * 4);
		}
		if (s->type == WT_SCHED_PEER_REDUCE || s->type == WT_SCHED_DIV)
			assert_int_equal(s->buf, WT_SCHED_BUF_SCRATCH);
		/* each piece's first term comes from our SEND in the same pass, no copy */
		if (s->type == WT_SCHED_PEER_REDUCE && s->wire == WT_SCHED_PEER_FROM_SEND) {
			assert_int_equal(s->src_buf, WT_SCHED_BUF_SEND);
			assert_int_equal(s->peer, 2);
			firsts++;
		}
		if (s->type == WT_SCHED_COPY)
			assert_int_not_equal(s->buf, WT_SCHED_BUF_SCRATCH);
		if (s->type == WT_SCHED_COPY && s->buf == WT_SCHED_BUF_RECV) {
			assert_int_equal(s->src_buf, WT_SCHED_BUF_SCRATCH);
			assert_true(s->off >= 100000 * 4 && s->off + s->len <= 200000 * 4);
			streams++;
		}
		/* 1.2 MB stays in cache: plain stores */
		if (s->type == WT_SCHED_COPY || s->type == WT_SCHED_PEER_WRITE)
			assert_int_equal(s->wire, 0);
	}
	assert_int_equal(wt_sched_plan_scratch_bytes(p), 65536);
	assert_int_equal(streams, 7);
	assert_int_equal(firsts, 7);
	/* share 1 of 3 = 400000 bytes in 64 KiB pieces: 7 pieces, 2 peers each */
	assert_int_equal(divs, 7);
	assert_int_equal(reads, 14);
	assert_int_equal(writes, 14);
	assert_int_equal(drains, 2);
	wt_sched_plan_unref(p);

	/* SUM over 3 ranks, 24 MiB (streamed): per piece the first term goes into the
	 * scratch, the last is combined and written to every RECV in one step, and nothing is
	 * copied. */
	a = st_args(WT_COLL_ALLREDUCE, 6 << 20, WEFT_FLOAT32, WEFT_SUM, 1, 3, 0, 0);
	a.slot_bytes = wt_sched_slot_capacity(REGION);
	st_build(&a, direct_algo(3), "shape-sum", &p);
	reads = writes = 0;
	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		assert_true(s->type != WT_SCHED_PEER_WRITE && s->type != WT_SCHED_COPY &&
			    s->type != WT_SCHED_DIV);
		if (s->type == WT_SCHED_PEER_REDUCE) {
			assert_int_equal(s->buf, WT_SCHED_BUF_SCRATCH);
			assert_int_equal(s->wire, WT_SCHED_PEER_FROM_SEND);
			assert_int_equal(s->peer, 2);
			reads++;
		}
		if (s->type == WT_SCHED_PEER_REDUCE_OUT) {
			assert_int_equal(s->buf, WT_SCHED_BUF_RECV);
			assert_int_equal(s->src_buf, WT_SCHED_BUF_SCRATCH);
			assert_int_equal(s->src_off, 0);
			assert_int_equal(s->peer, 0);
			assert_int_equal(s->wire, WT_SCHED_COPY_STREAM);
			assert_true(s->off >= (2u << 20) * 4 && s->off + s->len <= (4u << 20) * 4);
			writes++;
		}
	}
	/* an 8 MiB share in 64 KiB pieces */
	assert_int_equal(reads, 128);
	assert_int_equal(writes, 128);
	assert_int_equal(wt_sched_plan_scratch_bytes(p), 65536);
	wt_sched_plan_unref(p);

	/* 64 MiB over 2 ranks does not stay in cache: every piece is our SEND op the peer's,
	 * streamed into both RECVs in one step, with no scratch at all. */
	a = st_args(WT_COLL_ALLREDUCE, 16 << 20, WEFT_FLOAT32, WEFT_SUM, 0, 2, 0, 0);
	a.slot_bytes = wt_sched_slot_capacity(REGION);
	st_build(&a, direct_algo(2), "shape-big", &p);
	writes = 0;
	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		assert_true(s->type != WT_SCHED_PEER_WRITE && s->type != WT_SCHED_COPY &&
			    s->type != WT_SCHED_PEER_REDUCE);
		if (s->type == WT_SCHED_PEER_REDUCE_OUT) {
			assert_int_equal(s->wire, WT_SCHED_COPY_STREAM);
			assert_int_equal(s->src_buf, WT_SCHED_BUF_SEND);
			assert_int_equal(s->src_off, s->off);
			assert_int_equal(s->peer, 1);
			assert_true(s->off + s->len <= (8u << 20) * 4);
			writes++;
		}
	}
	/* a 32 MiB share in at most 256 pieces */
	assert_int_equal(writes, 256);
	assert_int_equal(wt_sched_plan_scratch_bytes(p), 0);
	wt_sched_plan_unref(p);
}

/* Hand-made plans that break the rules for peer steps are refused at finalize. */
static void test_plan_rules(void **state)
{
	wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, 64, WEFT_INT32, WEFT_SUM, 0, 2, 0, 0);
	char err[256];
	struct {
		int variant;
		const char *want;
	} cases[] = {
	    {0, NULL},
	    {1, "does not wait for its SLOT_WAIT"},
	    {2, "does not drain rank 1"},
	    {3, "does not wait for our SLOT_DONE"},
	    {4, "names the buffers of a bad peer"},
	    {5, "writes the SEND buffer"},
	    {6, "needs one SLOT_PUT without data"},
	    {7, "exceeds"},
	    {8, "must read a peer's SEND or RECV into a plan buffer"},
	};

	(void)state;
	a.slot_bytes = wt_sched_slot_capacity(REGION);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		wt_sched_plan_t *p = wt_sched_plan_new(&a);
		int v = cases[k].variant, put, w, red, done;
		weft_status_t st;

		assert_non_null(p);
		if (v == 6)
			put = wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 8, 0, NULL);
		else
			put = wt_sched_slot_put_bufs(p, 0, NULL);
		w = wt_sched_slot_wait(p, 1, 0, NULL);
		if (v == 6) /* a peer step marks the plan as one with peers */
			wt_sched_peer_read(p, WT_SCHED_BUF_RECV, 0, 1, WT_SCHED_BUF_SEND, 0, 4, 1,
					   &w);
		red =
		    wt_sched_peer_reduce(p, WT_SCHED_BUF_RECV, 0, v == 4 ? 0 : 1, WT_SCHED_BUF_SEND,
					 0, v == 7 ? 260 : 128, v == 1 ? 0 : 1, &w);
		if (v == 5)
			wt_sched_peer_reduce(p, WT_SCHED_BUF_SEND, 0, 1, WT_SCHED_BUF_SEND, 0, 4, 1,
					     &red);
		else if (v == 8)
			wt_sched_peer_read(p, WT_SCHED_BUF_RECV, 0, 1, WT_SCHED_BUF_SCRATCH, 0, 4,
					   1, &red);
		wt_sched_peer_write(p, 1, 0, WT_SCHED_BUF_RECV, 0, 128, 1, &red);
		(void)put;
		if (v == 3) {
			wt_sched_slot_drain(p, 1, 0, NULL);
			wt_sched_slot_done(p);
		} else {
			done = wt_sched_slot_done(p);
			if (v != 2)
				wt_sched_slot_drain(p, 1, 1, &done);
		}
		st = wt_sched_plan_finalize(p);
		snprintf(err, sizeof(err), "%s", wt_sched_plan_error(p));
		if (cases[k].want == NULL) {
			assert_int_equal(st, WEFT_OK);
		} else {
			if (st == WEFT_OK || strstr(err, cases[k].want) == NULL)
				fail_msg("variant %d: status %d, error '%s', wanted '%s'", v, st,
					 err, cases[k].want);
		}
		wt_sched_plan_unref(p);
	}
	/* PEER_REDUCE_OUT writes every rank's RECV: it must follow every peer's SLOT_WAIT, read
	 * its left operand outside the range it writes, and name another rank. */
	for (int v = 0; v < 4; v++) {
		static const char *const want[] = {NULL, "writes rank 2's RECV without waiting",
						   "reads its left operand from the RECV range",
						   "names the buffers of a bad peer"};
		wt_sched_args_t a3 =
		    st_args(WT_COLL_ALLREDUCE, 64, WEFT_INT32, WEFT_SUM, 0, 3, 0, 0);
		wt_sched_plan_t *p;
		int put, w[2], done;
		weft_status_t st;

		a3.slot_bytes = wt_sched_slot_capacity(REGION);
		p = wt_sched_plan_new(&a3);
		assert_non_null(p);
		put = wt_sched_slot_put_bufs(p, 0, NULL);
		w[0] = wt_sched_slot_wait(p, 1, 1, &put);
		w[1] = wt_sched_slot_wait(p, 2, 1, &put);
		wt_sched_peer_reduce_out(p, v == 3 ? 0 : 1, 64,
					 v == 2 ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND,
					 v == 2 ? 96 : 64, 64, 0, v == 1 ? 1 : 2, w);
		done = wt_sched_slot_done(p);
		wt_sched_slot_drain(p, 1, 1, &done);
		wt_sched_slot_drain(p, 2, 1, &done);
		st = wt_sched_plan_finalize(p);
		snprintf(err, sizeof(err), "%s", wt_sched_plan_error(p));
		if (want[v] == NULL)
			assert_int_equal(st, WEFT_OK);
		else if (st == WEFT_OK || strstr(err, want[v]) == NULL)
			fail_msg("PEER_REDUCE_OUT variant %d: status %d, error '%s', wanted '%s'",
				 v, st, err, want[v]);
		wt_sched_plan_unref(p);
	}
	/* Slots too small for the published buffers: the algorithm refuses. */
	a.slot_bytes = WT_SCHED_PEER_DESC_BYTES - 1;
	{
		wt_sched_plan_t *p = NULL;

		assert_int_equal(wt_sched_plan_build(&a, direct_algo(2), &p, err, sizeof(err)),
				 WEFT_ERR_UNSUPPORTED);
		assert_non_null(strstr(err, "cannot reach each other's buffers"));
		wt_sched_plan_unref(p);
	}
}

/* Rank 1 was called with fewer elements than rank 0: each finds the other's buffers of
 * another size and fails naming it, before touching them. */
static void test_count_mismatch(void **state)
{
	st_execs_t x = {.n = 2, .sim = simnet_new(2, 77)};
	int32_t s0[8], r0[8], s1[4], r1[4];
	uint64_t rng = 5;

	(void)state;
	simnet_enable_slots(x.sim, REGION, 10);
	simnet_enable_peers(x.sim, SIMNET_PEERS_MAP);
	for (int r = 0; r < 2; r++) {
		wt_sched_args_t a =
		    st_args(WT_COLL_ALLREDUCE, r == 0 ? 8 : 4, WEFT_INT32, WEFT_SUM, r, 2, 0, 0);

		a.slot_bytes = wt_sched_slot_capacity(REGION);
		st_build(&a, direct_algo(2), "mismatch", &x.plan[r]);
	}
	memset(s0, 1, sizeof(s0));
	memset(s1, 1, sizeof(s1));
	memset(r0, 0x5a, sizeof(r0));
	memset(r1, 0x5a, sizeof(r1));
	st_start(&x, 0, TAG(1), s0, r0);
	st_start(&x, 1, TAG(1), s1, r1);
	st_run_checked(&x, &rng, 3, 0);
	assert_int_equal(x.done[0].calls, 1);
	assert_int_equal(x.done[0].st, WEFT_ERR_MISMATCH);
	assert_non_null(strstr(x.done[0].msg, "rank 1 called allreduce of 4 int32 (op sum, root 0) "
					      "as slot call 11, this rank allreduce of 8 int32"));
	assert_int_equal(x.done[1].calls, 1);
	assert_int_equal(x.done[1].st, WEFT_ERR_MISMATCH);
	assert_non_null(strstr(x.done[1].msg, "rank 0 called allreduce of 8 int32 (op sum, root 0) "
					      "as slot call 11, this rank allreduce of 4 int32"));
	/* Each copied its own input into its scratch only: no RECV was written, ours or the
	 * other's. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(r0[i], 0x5a5a5a5a);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r1[i], 0x5a5a5a5a);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(simnet_live_ops(x.sim, r), 0);
		st_release(&x, r, 1);
	}
	simnet_free(x.sim);
}

/* Ranks that picked different slot algorithms for one call (rank 0's buffers in weft_mem,
 * rank 1's not: direct against slots) both fail at once with a message that says so, in
 * regions with a small ring as without (the call takes the same ring on both), and write
 * no byte of any RECV. */
static void test_mixed_algorithms(void **state)
{
	static const size_t regions[] = {REGION, WT_SCHED_SLOT_REGION};
	const wt_sched_algo_t *slots;

	(void)state;
	for (size_t ri = 0; ri < 2; ri++) {
		st_execs_t x = {.n = 2, .sim = simnet_new(2, 78 + ri)};
		int32_t s[2][8], rv[2][8];
		uint64_t rng = 9;

		simnet_enable_slots(x.sim, regions[ri], 10);
		simnet_enable_peers(x.sim, SIMNET_PEERS_MAP);
		for (int r = 0; r < 2; r++) {
			wt_sched_args_t a =
			    st_args(WT_COLL_ALLREDUCE, 8, WEFT_INT32, WEFT_SUM, r, 2, 0, 0);

			a.slot_bytes = wt_sched_slot_capacity(regions[ri]);
			slots = wt_sched_algo_select(&a, "slots");
			assert_non_null(slots);
			st_build(&a, r == 0 ? direct_algo(2) : slots, "mixed", &x.plan[r]);
			/* the ring does not depend on the algorithm */
			assert_int_equal(wt_sched_plan_view(x.plan[r])->slot_ring,
					 WT_SCHED_RING_SMALL);
			memset(s[r], 1, sizeof(s[r]));
			memset(rv[r], 0x5a, sizeof(rv[r]));
		}
		st_start(&x, 0, TAG(1), s[0], rv[0]);
		st_start(&x, 1, TAG(1), s[1], rv[1]);
		st_run_checked(&x, &rng, 3, 0);
		for (int r = 0; r < 2; r++) {
			char want[160];

			snprintf(
			    want, sizeof(want),
			    "rank %d runs slot call 11 (allreduce of 8) with another algorithm "
			    "than this rank's %s",
			    1 - r, r == 0 ? "direct" : "slots");
			assert_int_equal(x.done[r].calls, 1);
			assert_int_equal(x.done[r].st, WEFT_ERR_MISMATCH);
			if (strstr(x.done[r].msg, want) == NULL)
				fail_msg("rank %d: '%s' lacks '%s'", r, x.done[r].msg, want);
			for (int i = 0; i < 8; i++)
				assert_int_equal(rv[r][i], 0x5a5a5a5a);
			assert_int_equal(simnet_live_ops(x.sim, r), 0);
			st_release(&x, r, 1);
		}
		simnet_free(x.sim);
	}
}

/* A copy that fails on one rank: that rank reports it (naming the step and the peer), the
 * others report the failed share, and the next call runs normally everywhere. */
static void test_copy_failure(void **state)
{
	for (int n = 2; n <= 4; n++)
		for (int victim = 0; victim < n; victim++) {
			st_execs_t x = {.n = n, .sim = simnet_new(n, (uint64_t)(n * 10 + victim))};
			int32_t send[4][40], recv[4][40];
			uint64_t rng = 9;

			(void)state;
			simnet_enable_slots(x.sim, REGION, 20);
			simnet_enable_peers(x.sim, SIMNET_PEERS_COPY);
			simnet_fail_peer_copy(x.sim, victim, 1, WEFT_ERR_PEER_FAILED);
			for (int r = 0; r < n; r++) {
				wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, 40, WEFT_INT32,
							    WEFT_SUM, r, n, 0, 0);

				a.slot_bytes = wt_sched_slot_capacity(REGION);
				st_build(&a, direct_algo(n), "copy failure", &x.plan[r]);
				for (int i = 0; i < 40; i++)
					send[r][i] = r * 1000 + i;
			}
			for (int r = 0; r < n; r++)
				st_start(&x, r, TAG(2), send[r], recv[r]);
			st_run_checked(&x, &rng, 3, 0);
			for (int r = 0; r < n; r++) {
				assert_int_equal(x.done[r].calls, 1);
				assert_int_equal(x.done[r].st, WEFT_ERR_PEER_FAILED);
				if (r == victim)
					assert_non_null(strstr(x.done[r].msg, "PEER_"));
				else
					assert_non_null(strstr(x.done[r].msg, "failed its share"));
				assert_int_equal(simnet_live_ops(x.sim, r), 0);
				st_release(&x, r, 0);
			}
			/* the next call is not held up and is exact */
			memset(x.done, 0, sizeof(x.done));
			for (int r = 0; r < n; r++)
				st_start(&x, r, TAG(3), send[r], recv[r]);
			st_run_checked(&x, &rng, 3, 0);
			for (int r = 0; r < n; r++) {
				st_check_done(&x, r, "after the failure");
				for (int i = 0; i < 40; i++) {
					int32_t want = 0;

					for (int q = 0; q < n; q++)
						want += q * 1000 + i;
					assert_int_equal(recv[r][i], want);
				}
				st_release(&x, r, 1);
			}
			simnet_free(x.sim);
		}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranks_counts),     cmocka_unit_test(test_dtypes_ops),
	    cmocka_unit_test(test_plan_shape),	     cmocka_unit_test(test_plan_rules),
	    cmocka_unit_test(test_count_mismatch),   cmocka_unit_test(test_copy_failure),
	    cmocka_unit_test(test_mixed_algorithms), cmocka_unit_test(test_streamed),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
