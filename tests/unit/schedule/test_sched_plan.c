/* Plan builder validation, the plan cache and executor edge cases: cancel, errors from
 * the network, long chains, zero-length steps (tests/unit/schedule). */
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

static wt_sched_args_t args_of(size_t count, int rank, int size, int in_place)
{
	return st_args(WT_COLL_ALLREDUCE, count, WEFT_INT32, WEFT_SUM, rank, size, in_place, 0);
}

static void test_builder_numbering(void **state)
{
	wt_sched_args_t a = args_of(16, 1, 4, 0);
	wt_sched_plan_t *p = wt_sched_plan_new(&a);
	int s0, s1, r0, r1, s3, f, c, deps[2];
	uint32_t n;
	const uint32_t *succ;
	char *text = NULL;
	size_t textlen = 0;
	FILE *mem;

	(void)state;
	assert_non_null(p);
	s0 = wt_sched_send(p, 2, WT_SCHED_BUF_SEND, 0, 32, 0, NULL);
	r0 = wt_sched_recv(p, 0, WT_SCHED_BUF_SCRATCH, 0, 32, 0, NULL);
	deps[0] = s0;
	deps[1] = r0;
	s1 = wt_sched_send(p, 2, WT_SCHED_BUF_RECV, 32, 32, 2, deps);
	r1 = wt_sched_recv_reduce(p, 0, WT_SCHED_BUF_RECV, 0, 32, 1, &r0);
	s3 = wt_sched_send(p, 3, WT_SCHED_BUF_RECV, 0, 0, 0, NULL);
	f = wt_sched_fence(p);
	c = wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, 16, 1, &f);
	wt_sched_scratch(p, 32);
	wt_sched_scratch(p, 8); /* never shrinks */
	assert_int_equal(s0, 0);
	assert_int_equal(c, 6);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_true(wt_sched_plan_ready(p));
	assert_int_equal(wt_sched_plan_scratch_bytes(p), 32);
	assert_int_equal(wt_sched_plan_buf_bytes(p, WT_SCHED_BUF_SEND), 64);
	assert_int_equal(wt_sched_plan_buf_bytes(p, WT_SCHED_BUF_RECV), 64);
	assert_int_equal(wt_sched_plan_step(p, s0)->msg, 0);
	assert_int_equal(wt_sched_plan_step(p, s1)->msg, 1);
	assert_int_equal(wt_sched_plan_step(p, r0)->msg, 0);
	assert_int_equal(wt_sched_plan_step(p, r1)->msg, 1);
	assert_int_equal(wt_sched_plan_step(p, s3)->msg, 0);
	assert_int_equal(wt_sched_plan_step(p, f)->type, WT_SCHED_NOP);
	assert_int_equal(wt_sched_plan_step(p, f)->ndeps, 5);
	assert_null(wt_sched_plan_step(p, 7));
	succ = wt_sched_plan_succ(p, (size_t)r0, &n);
	assert_int_equal(n, 3);
	assert_int_equal(succ[0], s1);
	assert_int_equal(succ[1], r1);
	assert_int_equal(succ[2], f);
	succ = wt_sched_plan_succ(p, (size_t)c, &n);
	assert_int_equal(n, 0);
	/* Frozen: no more steps. */
	assert_int_equal(wt_sched_send(p, 2, WT_SCHED_BUF_RECV, 0, 4, 0, NULL), -1);
	assert_int_equal(wt_sched_plan_nsteps(p), 7);
	mem = open_memstream(&text, &textlen);
	assert_non_null(mem);
	wt_sched_plan_dump(p, mem);
	fclose(mem);
	assert_non_null(strstr(text, "RECV_REDUCE peer 0 msg 1 RECV[0+32] deps 1"));
	assert_non_null(strstr(text, "COPY"));
	assert_non_null(strstr(text, "<- SCRATCH[0]"));
	free(text);
	wt_sched_plan_unref(p);
}

/* A second fence depends on the first and the steps after it only. */
static void test_fences(void **state)
{
	wt_sched_args_t a = args_of(4, 0, 2, 1);
	wt_sched_plan_t *p = wt_sched_plan_new(&a);
	int f1, f2;

	(void)state;
	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 16, 0, NULL);
	f1 = wt_sched_fence(p);
	wt_sched_recv(p, 1, WT_SCHED_BUF_RECV, 0, 16, 1, &f1);
	f2 = wt_sched_fence(p);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_int_equal(wt_sched_plan_step(p, f1)->ndeps, 1);
	assert_int_equal(wt_sched_plan_step(p, f2)->ndeps, 2);
	assert_int_equal(wt_sched_plan_deps(p)[wt_sched_plan_step(p, f2)->dep_start], f1);
	wt_sched_plan_unref(p);
}

typedef void (*bad_fn_t)(wt_sched_plan_t *p);

static void bad_recv_range(wt_sched_plan_t *p)
{
	wt_sched_recv(p, 1, WT_SCHED_BUF_RECV, 60, 8, 0, NULL);
}

static void bad_off_overflow(wt_sched_plan_t *p)
{
	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, SIZE_MAX, 8, 0, NULL);
}

static void bad_recv_into_send(wt_sched_plan_t *p)
{
	wt_sched_recv(p, 1, WT_SCHED_BUF_SEND, 0, 8, 0, NULL);
}

static void bad_copy_into_send(wt_sched_plan_t *p)
{
	wt_sched_copy(p, WT_SCHED_BUF_SEND, 0, WT_SCHED_BUF_RECV, 0, 8, 0, NULL);
}

static void bad_div_send(wt_sched_plan_t *p)
{
	wt_sched_div(p, WT_SCHED_BUF_SEND, 0, 8, 0, NULL);
}

static void bad_dep_self(wt_sched_plan_t *p)
{
	int d = 1;

	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 0, NULL);
	assert_int_equal(wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 1, &d), -1);
}

static void bad_dep_negative(wt_sched_plan_t *p)
{
	int d = -1;

	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 1, &d);
}

static void bad_dep_list(wt_sched_plan_t *p)
{
	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 2, NULL);
}

static void bad_peer(wt_sched_plan_t *p)
{
	wt_sched_send(p, 4, WT_SCHED_BUF_RECV, 0, 8, 0, NULL);
}

static void bad_peer_self(wt_sched_plan_t *p)
{
	wt_sched_recv(p, 0, WT_SCHED_BUF_RECV, 0, 8, 0, NULL);
}

static void bad_scratch_range(wt_sched_plan_t *p)
{
	wt_sched_scratch(p, 8);
	wt_sched_recv(p, 1, WT_SCHED_BUF_SCRATCH, 4, 8, 0, NULL);
}

static void bad_reduce_overlap(wt_sched_plan_t *p)
{
	wt_sched_reduce(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_RECV, 4, 8, 0, NULL);
}

/* A receive combining a source into its own buffer, or reading past the source's end. */
static void bad_recv_from_self(wt_sched_plan_t *p)
{
	wt_sched_recv_reduce_from(p, 1, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_RECV, 8, 8, 0, NULL);
}

static void bad_recv_from_range(wt_sched_plan_t *p)
{
	wt_sched_recv_reduce_from(p, 1, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 60, 8, 0, NULL);
}

/* A send's copy (WT_SCHED_SEND_COPY) into SEND, over the bytes it sends, past the end of
 * its destination, or with a hint that is not a copy's. */
static void bad_send_copy_into_send(wt_sched_plan_t *p)
{
	wt_sched_send_copy(p, 1, WT_SCHED_BUF_RECV, 0, 8, WT_SCHED_BUF_SEND, 8, 0, 0, NULL);
}

static void bad_send_copy_overlap(wt_sched_plan_t *p)
{
	wt_sched_send_copy(p, 1, WT_SCHED_BUF_RECV, 0, 16, WT_SCHED_BUF_RECV, 8, 1, 0, NULL);
}

static void bad_send_copy_range(wt_sched_plan_t *p)
{
	wt_sched_send_copy(p, 1, WT_SCHED_BUF_SEND, 0, 16, WT_SCHED_BUF_RECV, 56, 0, 0, NULL);
}

static void bad_send_copy_slot(wt_sched_plan_t *p)
{
	wt_sched_send_copy(p, 1, WT_SCHED_BUF_SEND, 0, 8, WT_SCHED_BUF_SLOT, 0, 0, 0, NULL);
}

static void bad_send_hint(wt_sched_plan_t *p)
{
	int id =
	    wt_sched_send_copy(p, 1, WT_SCHED_BUF_SEND, 0, 8, WT_SCHED_BUF_RECV, 0, 0, 0, NULL);

	/* a SEND carrying a hint of another step type */
	((wt_sched_step_t *)wt_sched_plan_step(p, (size_t)id))->wire = WT_SCHED_RECV_FROM_SRC;
}

static void bad_partial_element(wt_sched_plan_t *p)
{
	wt_sched_recv_reduce(p, 1, WT_SCHED_BUF_RECV, 0, 6, 0, NULL);
}

static void bad_buffer_id(wt_sched_plan_t *p)
{
	wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, (wt_sched_buf_t)7, 0, 8, 0, NULL);
}

static void bad_explicit_fail(wt_sched_plan_t *p)
{
	wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 0, NULL);
	wt_sched_fail(p, WEFT_ERR_UNSUPPORTED, "refused: %d", 42);
	assert_int_equal(wt_sched_send(p, 1, WT_SCHED_BUF_RECV, 0, 8, 0, NULL), -1);
}

static void check_rejected(const wt_sched_args_t *a, bad_fn_t fn, weft_status_t want)
{
	wt_sched_plan_t *p = wt_sched_plan_new(a);
	wt_sched_exec_t *ex = NULL;
	simnet_t *sim = simnet_new(4, 1);
	int32_t buf[16] = {0};

	assert_non_null(p);
	fn(p);
	assert_int_equal(wt_sched_plan_finalize(p), want);
	assert_int_equal(wt_sched_plan_finalize(p), want); /* idempotent */
	assert_false(wt_sched_plan_ready(p));
	assert_true(strlen(wt_sched_plan_error(p)) > 0);
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), 0, buf, buf, st_on_done, NULL, &ex),
	    WEFT_ERR_INVALID_ARG);
	assert_null(ex);
	simnet_free(sim);
	wt_sched_plan_unref(p);
}

static void test_finalize_rejects(void **state)
{
	static const bad_fn_t bad[] = {
	    bad_recv_range,
	    bad_off_overflow,
	    bad_recv_into_send,
	    bad_copy_into_send,
	    bad_div_send,
	    bad_dep_self,
	    bad_dep_negative,
	    bad_dep_list,
	    bad_peer,
	    bad_peer_self,
	    bad_scratch_range,
	    bad_reduce_overlap,
	    bad_partial_element,
	    bad_buffer_id,
	    bad_recv_from_self,
	    bad_recv_from_range,
	    bad_send_copy_into_send,
	    bad_send_copy_overlap,
	    bad_send_copy_range,
	    bad_send_copy_slot,
	    bad_send_hint,
	};
	wt_sched_args_t a = args_of(16, 0, 4, 0), ip = args_of(16, 0, 4, 1), bad_args = a;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_rejected(&a, bad[i], WEFT_ERR_INVALID_ARG);
	check_rejected(&a, bad_explicit_fail, WEFT_ERR_UNSUPPORTED);
	/* In place, reading SEND is allowed (in-place reduce_scatter reads the whole input
	 * through it); writing it never is. */
	check_rejected(&ip, bad_peer_self, WEFT_ERR_INVALID_ARG);
	check_rejected(&ip, bad_recv_range, WEFT_ERR_INVALID_ARG);
	{
		wt_sched_plan_t *p = wt_sched_plan_new(&ip);

		wt_sched_send(p, 1, WT_SCHED_BUF_SEND, 0, 8, 0, NULL);
		assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
		wt_sched_plan_unref(p);
		/* the same receive from SEND's last 8 bytes is fine */
		p = wt_sched_plan_new(&a);
		wt_sched_recv_reduce_from(p, 1, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 56, 8, 0,
					  NULL);
		assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
		wt_sched_plan_unref(p);
		/* a send's copy to another buffer, or beside the bytes sent in the same one */
		p = wt_sched_plan_new(&a);
		wt_sched_send_copy(p, 1, WT_SCHED_BUF_SEND, 0, 16, WT_SCHED_BUF_RECV, 48, 1, 0,
				   NULL);
		wt_sched_send_copy(p, 2, WT_SCHED_BUF_RECV, 0, 16, WT_SCHED_BUF_RECV, 16, 0, 0,
				   NULL);
		assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
		wt_sched_plan_unref(p);
		p = wt_sched_plan_new(&ip);
		wt_sched_copy(p, WT_SCHED_BUF_SEND, 0, WT_SCHED_BUF_RECV, 8, 8, 0, NULL);
		assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
		assert_non_null(strstr(wt_sched_plan_error(p), "SEND"));
		wt_sched_plan_unref(p);
	}
	bad_args.dtype = (weft_dtype_t)99;
	check_rejected(&bad_args, bad_recv_range, WEFT_ERR_INVALID_ARG);
	bad_args = a;
	bad_args.rank = 4;
	check_rejected(&bad_args, bad_recv_range, WEFT_ERR_INVALID_ARG);
	bad_args = a;
	bad_args.count = SIZE_MAX / 2;
	check_rejected(&bad_args, bad_recv_range, WEFT_ERR_INVALID_ARG);
}

static void test_build_errors(void **state)
{
	wt_sched_args_t a = args_of(16, 0, 4, 0);
	wt_sched_plan_t *p = NULL;
	char err[128] = "";
	size_t n;
	const wt_sched_algo_t *t = wt_sched_algo_table(&n);

	(void)state;
	a.op = (weft_op_t)17;
	assert_int_equal(wt_sched_plan_build(&a, NULL, &p, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	assert_null(p);
	assert_non_null(strstr(err, "op"));
	a.op = WEFT_SUM;
	a.size = 0;
	assert_int_equal(wt_sched_plan_build(&a, t, &p, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	a.size = 4;
	a.coll = WT_COLL_COUNT_;
	assert_int_equal(wt_sched_plan_build(&a, NULL, &p, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	assert_null(p);
}

/* ---- executor ---- */

static void test_exec_local(void **state)
{
	int32_t in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
	wt_sched_args_t a = args_of(5, 0, 1, 0);
	simnet_t *sim = simnet_new(1, 1);
	wt_sched_plan_t *p;
	wt_sched_exec_t *ex;
	st_done_t d = {0};

	(void)state;
	assert_int_equal(wt_sched_plan_build(&a, NULL, &p, NULL, 0), WEFT_OK);
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), 0, in, out, st_on_done, &d, &ex), WEFT_OK);
	/* No network steps: done ran inside start. */
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.st, WEFT_OK);
	assert_int_equal(wt_sched_exec_status(ex), WEFT_OK);
	assert_memory_equal(in, out, sizeof(in));
	wt_sched_exec_cancel(ex, WEFT_ERR_ABORTED, "late");
	assert_int_equal(d.calls, 1);
	assert_int_equal(wt_sched_exec_status(ex), WEFT_OK);
	wt_sched_exec_free(ex);
	/* The executor holds its own reference: the plan outlives our unref until free. */
	assert_int_equal(wt_sched_exec_start(p, simnet_net(sim, 0), 0, in, out, NULL, NULL, &ex),
			 WEFT_OK);
	wt_sched_plan_unref(p);
	assert_int_equal(wt_sched_exec_status(ex), WEFT_OK);
	wt_sched_exec_free(ex);

	a = args_of(0, 2, 4, 0); /* count 0 on several ranks: nothing to do */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wt_sched_plan_build(&a, NULL, &p, NULL, 0), WEFT_OK);
		assert_int_equal(wt_sched_plan_nsteps(p), 0);
		assert_int_equal(
		    wt_sched_exec_start(p, simnet_net(sim, 0), 0, NULL, NULL, st_on_done, &d, &ex),
		    WEFT_OK);
		assert_int_equal(d.calls, 2 + i);
		wt_sched_exec_free(ex);
		wt_sched_plan_unref(p);
		a.op = WEFT_AVG;
	}
	simnet_free(sim);
}

/* A 200000-step chain must not recurse per successor. */
/* A SEND with a copy (WT_SCHED_SEND_COPY): the executor hands it to the network's
 * post_send_copy when there is one, else copies after posting the send. Either way RECV
 * holds the copy once the plan is done. */
static wt_sched_net_t sc_inner; /* the simulated network the wrapper forwards to */
static int sc_calls;

static weft_status_t sc_post_send_copy(void *ctx, int peer, uint64_t tag, const void *buf,
				       size_t len, void *copy_to, unsigned flags,
				       wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	weft_status_t st = sc_inner.post_send(ctx, peer, tag, buf, len, cb, arg, handle);

	sc_calls++;
	assert_int_equal(flags, WT_SCHED_NET_STREAM); /* the plan asks for streaming stores */
	if (st == WEFT_OK)
		memcpy(copy_to, buf, len);
	return st;
}

static void test_exec_send_copy(void **state)
{
	(void)state;
	for (int via_net = 0; via_net < 2; via_net++) {
		simnet_t *sim = simnet_new(2, 7 + (uint64_t)via_net);
		wt_sched_plan_t *p[2];
		wt_sched_exec_t *ex[2];
		st_done_t d[2] = {{0}};
		int32_t in[2][4], out[2][8];

		sc_calls = 0;
		for (int r = 0; r < 2; r++) {
			wt_sched_args_t a = args_of(4, r, 2, 0);
			wt_sched_net_t net = *simnet_net(sim, r);

			a.coll = WT_COLL_ALLGATHER;
			for (int i = 0; i < 4; i++)
				in[r][i] = 100 * r + i;
			memset(out[r], 0, sizeof(out[r]));
			p[r] = wt_sched_plan_new(&a);
			wt_sched_send_copy(p[r], 1 - r, WT_SCHED_BUF_SEND, 0, 16, WT_SCHED_BUF_RECV,
					   (size_t)r * 16, 1, 0, NULL);
			wt_sched_recv(p[r], 1 - r, WT_SCHED_BUF_RECV, (size_t)(1 - r) * 16, 16, 0,
				      NULL);
			assert_int_equal(wt_sched_plan_finalize(p[r]), WEFT_OK);
			if (via_net) {
				sc_inner = net;
				net.post_send_copy = sc_post_send_copy;
			}
			assert_int_equal(wt_sched_exec_start(p[r], &net, 0, in[r], out[r],
							     st_on_done, &d[r], &ex[r]),
					 WEFT_OK);
		}
		simnet_run(sim);
		for (int r = 0; r < 2; r++) {
			assert_int_equal(d[r].calls, 1);
			assert_int_equal(d[r].st, WEFT_OK);
			for (int i = 0; i < 8; i++)
				assert_int_equal(out[r][i], 100 * (i / 4) + i % 4);
			wt_sched_exec_free(ex[r]);
			wt_sched_plan_unref(p[r]);
		}
		assert_int_equal(sc_calls, via_net ? 2 : 0);
		simnet_free(sim);
	}
}

static void test_exec_long_chain(void **state)
{
	wt_sched_args_t a = args_of(8, 0, 1, 0);
	wt_sched_plan_t *p = wt_sched_plan_new(&a);
	int32_t in[8] = {42, 1, 2, 3, 4, 5, 6, 7}, out[8] = {0};
	simnet_t *sim = simnet_new(1, 1);
	wt_sched_exec_t *ex;
	st_done_t d = {0};
	int prev;

	(void)state;
	prev = wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, 4, 0, NULL);
	for (int i = 1; i < 200000; i++)
		prev = wt_sched_copy(p, WT_SCHED_BUF_RECV, (size_t)(i % 8) * 4, WT_SCHED_BUF_RECV,
				     (size_t)((i - 1) % 8) * 4, 4, 1, &prev);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), 0, in, out, st_on_done, &d, &ex), WEFT_OK);
	assert_int_equal(d.calls, 1);
	for (int i = 0; i < 8; i++)
		assert_int_equal(out[i], 42);
	wt_sched_exec_free(ex);
	wt_sched_plan_unref(p);
	simnet_free(sim);
}

static void test_exec_bad_args(void **state)
{
	wt_sched_args_t a = args_of(4, 0, 2, 0);
	int32_t buf[4] = {0};
	simnet_t *sim = simnet_new(2, 1);
	wt_sched_net_t broken = *simnet_net(sim, 0);
	wt_sched_plan_t *p, *raw = wt_sched_plan_new(&a);
	wt_sched_exec_t *ex = NULL;

	(void)state;
	broken.cancel = NULL;
	assert_int_equal(wt_sched_plan_build(&a, NULL, &p, NULL, 0), WEFT_OK);
	assert_int_equal(wt_sched_exec_start(p, simnet_net(sim, 0), 1, buf, buf, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_exec_start(p, NULL, 0, buf, buf, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_exec_start(p, &broken, 0, buf, buf, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_exec_start(p, simnet_net(sim, 0), 0, NULL, buf, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_exec_start(p, simnet_net(sim, 0), 0, buf, NULL, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	/* Not finalized. */
	assert_int_equal(wt_sched_exec_start(raw, simnet_net(sim, 0), 0, buf, buf, NULL, NULL, &ex),
			 WEFT_ERR_INVALID_ARG);
	assert_null(ex);
	assert_int_equal(simnet_posts(sim, 0), 0);
	wt_sched_plan_unref(raw);
	wt_sched_plan_unref(p);
	simnet_free(sim);
}

/* Ring on 4 ranks with many segments; cancel rank 0 while it has ops outstanding. */
static void test_exec_cancel(void **state)
{
	enum { N = 4, COUNT = 4000 };
	simnet_t *sim = simnet_new(N, 77);
	wt_sched_plan_t *p[N];
	wt_sched_exec_t *ex[N];
	st_done_t d[N] = {0};
	int32_t *buf[N];
	int want[N], got[N];
	size_t nw, ng, cb0;
	wt_sched_args_t a0 = args_of(COUNT, 0, N, 1);
	const wt_sched_algo_t *ring = wt_sched_algo_select(&a0, "ring");

	(void)state;
	for (int r = 0; r < N; r++) {
		wt_sched_args_t a = args_of(COUNT, r, N, 1);

		a.seg_bytes = 256;
		buf[r] = calloc(COUNT, sizeof(int32_t));
		assert_int_equal(wt_sched_plan_build(&a, ring, &p[r], NULL, 0), WEFT_OK);
		assert_int_equal(wt_sched_exec_start(p[r], simnet_net(sim, r), 0, buf[r], buf[r],
						     st_on_done, &d[r], &ex[r]),
				 WEFT_OK);
	}
	for (int i = 0; i < 300; i++)
		assert_true(simnet_step(sim));
	assert_true(simnet_live_ops(sim, 0) > 0);
	nw = simnet_live_recv_peers(sim, 0, want, N);
	ng = wt_sched_exec_owing(ex[0], got, N);
	assert_int_equal(nw, ng);
	assert_true(ng >= 1);
	/* Ring: rank 0 only ever receives from rank 3. */
	assert_int_equal(got[0], N - 1);
	assert_int_equal(wt_sched_exec_owing(ex[0], got, 0), 0);

	wt_sched_exec_cancel(ex[0], WEFT_ERR_TIMEOUT, "timed out waiting");
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[0].st, WEFT_ERR_TIMEOUT);
	assert_string_equal(d[0].msg, "timed out waiting");
	assert_int_equal(wt_sched_exec_status(ex[0]), WEFT_ERR_TIMEOUT);
	assert_int_equal(simnet_live_ops(sim, 0), 0);
	assert_int_equal(wt_sched_exec_owing(ex[0], got, N), 0);
	cb0 = simnet_callbacks(sim, 0);
	wt_sched_exec_cancel(ex[0], WEFT_ERR_ABORTED, "again");
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[0].st, WEFT_ERR_TIMEOUT);

	/* The rest can't finish without rank 0; they drain what they can, then stall. */
	simnet_run(sim);
	assert_int_equal(simnet_callbacks(sim, 0), cb0);
	for (int r = 1; r < N; r++) {
		assert_int_equal(d[r].calls, 0);
		wt_sched_exec_cancel(ex[r], WEFT_OK, NULL); /* not an error: becomes ABORTED */
		assert_int_equal(d[r].calls, 1);
		assert_int_equal(d[r].st, WEFT_ERR_ABORTED);
		assert_int_equal(simnet_live_ops(sim, r), 0);
	}
	assert_int_equal(simnet_run(sim), 0);
	for (int r = 0; r < N; r++) {
		assert_int_equal(d[r].calls, 1);
		wt_sched_exec_free(ex[r]);
		wt_sched_plan_unref(p[r]);
		free(buf[r]);
	}
	simnet_free(sim);
}

/* Two-rank exchange: send A and recv B on rank 0 are both ready at start. */
static wt_sched_plan_t *exchange_plan(int rank)
{
	wt_sched_args_t a = args_of(4, rank, 2, 0);
	wt_sched_plan_t *p = wt_sched_plan_new(&a);
	int peer = 1 - rank, r;

	wt_sched_send(p, peer, WT_SCHED_BUF_SEND, 0, 16, 0, NULL);
	r = wt_sched_recv(p, peer, WT_SCHED_BUF_RECV, 0, 16, 0, NULL);
	wt_sched_send(p, peer, WT_SCHED_BUF_RECV, 0, 16, 1, &r);
	wt_sched_recv(p, peer, WT_SCHED_BUF_SCRATCH, 0, 16, 1, &r);
	wt_sched_scratch(p, 16);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	return p;
}

/* The second post fails: the first (still outstanding) drains before done runs. */
static void test_exec_post_error(void **state)
{
	simnet_t *sim = simnet_new(2, 5);
	wt_sched_plan_t *p[2] = {exchange_plan(0), exchange_plan(1)};
	wt_sched_exec_t *ex[2];
	st_done_t d[2] = {0};
	int32_t in[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, out[2][4];

	(void)state;
	simnet_fail_post(sim, 0, 1, WEFT_ERR_PEER_FAILED);
	for (int r = 0; r < 2; r++)
		assert_int_equal(wt_sched_exec_start(p[r], simnet_net(sim, r), 0, in[r], out[r],
						     st_on_done, &d[r], &ex[r]),
				 WEFT_OK);
	assert_int_equal(d[0].calls, 0);
	assert_int_equal(wt_sched_exec_status(ex[0]), WEFT_INPROGRESS);
	assert_int_equal(simnet_live_ops(sim, 0), 1);
	simnet_run(sim);
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[0].st, WEFT_ERR_PEER_FAILED);
	assert_non_null(strstr(d[0].msg, "peer 1"));
	/* Nothing was posted after the failure. */
	assert_int_equal(simnet_posts(sim, 0), 2);
	/* Rank 1 got rank 0's data but waits forever for the rest. */
	assert_int_equal(d[1].calls, 0);
	assert_memory_equal(out[1], in[0], sizeof(in[0]));
	wt_sched_exec_cancel(ex[1], WEFT_ERR_PEER_FAILED, "peer 0 failed");
	assert_int_equal(d[1].calls, 1);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(simnet_live_ops(sim, r), 0);
		wt_sched_exec_free(ex[r]);
		wt_sched_plan_unref(p[r]);
	}
	simnet_free(sim);

	/* Failing the very first post with nothing outstanding completes inside start. */
	sim = simnet_new(2, 6);
	p[0] = exchange_plan(0);
	d[0].calls = 0;
	simnet_fail_post(sim, 0, 0, WEFT_ERR_NO_MEMORY);
	assert_int_equal(wt_sched_exec_start(p[0], simnet_net(sim, 0), 0, in[0], out[0], st_on_done,
					     &d[0], &ex[0]),
			 WEFT_OK);
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[0].st, WEFT_ERR_NO_MEMORY);
	assert_int_equal(simnet_posts(sim, 0), 1);
	wt_sched_exec_free(ex[0]);
	wt_sched_plan_unref(p[0]);
	simnet_free(sim);
}

/* A receive completes with an error: sticky, drained, later cancel keeps the first. */
static void test_exec_recv_error(void **state)
{
	simnet_t *sim = simnet_new(2, 9);
	wt_sched_plan_t *p[2] = {exchange_plan(0), exchange_plan(1)};
	wt_sched_exec_t *ex[2];
	st_done_t d[2] = {0};
	int32_t in[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, out[2][4];

	(void)state;
	simnet_fail_recv(sim, 0, 0, WEFT_ERR_PEER_FAILED);
	for (int r = 0; r < 2; r++)
		assert_int_equal(wt_sched_exec_start(p[r], simnet_net(sim, r), 0, in[r], out[r],
						     st_on_done, &d[r], &ex[r]),
				 WEFT_OK);
	simnet_run(sim);
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[0].st, WEFT_ERR_PEER_FAILED);
	assert_non_null(strstr(d[0].msg, "RECV from peer 1 (msg 0)"));
	assert_non_null(strstr(d[0].msg, "simulated receive failure"));
	assert_int_equal(simnet_posts(sim, 0), 2);
	assert_int_equal(d[1].calls, 0);
	assert_int_equal(wt_sched_exec_owing(ex[1], (int[2]){0}, 2), 1);
	wt_sched_exec_cancel(ex[1], WEFT_ERR_TIMEOUT, "no answer");
	assert_int_equal(d[1].st, WEFT_ERR_TIMEOUT);
	for (int r = 0; r < 2; r++) {
		wt_sched_exec_free(ex[r]);
		wt_sched_plan_unref(p[r]);
	}
	simnet_free(sim);
}

/* Freeing a running execution withdraws its ops and never calls done. */
static void test_exec_free_running(void **state)
{
	simnet_t *sim = simnet_new(2, 3);
	wt_sched_plan_t *p = exchange_plan(0);
	wt_sched_exec_t *ex;
	st_done_t d = {0};
	int32_t in[4] = {0}, out[4];

	(void)state;
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), 0, in, out, st_on_done, &d, &ex), WEFT_OK);
	assert_int_equal(simnet_live_ops(sim, 0), 2);
	wt_sched_plan_unref(p);
	wt_sched_exec_free(ex);
	assert_int_equal(simnet_live_ops(sim, 0), 0);
	assert_int_equal(simnet_run(sim), 0);
	assert_int_equal(d.calls, 0);
	simnet_free(sim);
}

/* Zero-length network steps are posted like any other (both sides agree on them). */
static void test_exec_zero_length(void **state)
{
	simnet_t *sim = simnet_new(2, 4);
	wt_sched_plan_t *p[2];
	wt_sched_exec_t *ex[2];
	st_done_t d[2] = {0};
	int32_t buf[2][4] = {{0}};

	(void)state;
	for (int r = 0; r < 2; r++) {
		wt_sched_args_t a = args_of(4, r, 2, 1);

		p[r] = wt_sched_plan_new(&a);
		if (r == 0)
			wt_sched_send(p[r], 1, WT_SCHED_BUF_RECV, 16, 0, 0, NULL);
		else
			wt_sched_recv(p[r], 0, WT_SCHED_BUF_RECV, 16, 0, 0, NULL);
		wt_sched_div(p[r], WT_SCHED_BUF_RECV, 0, 0, 0, NULL);
		assert_int_equal(wt_sched_plan_finalize(p[r]), WEFT_OK);
		assert_int_equal(wt_sched_exec_start(p[r], simnet_net(sim, r), 0, buf[r], buf[r],
						     st_on_done, &d[r], &ex[r]),
				 WEFT_OK);
	}
	simnet_run(sim);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(simnet_posts(sim, r), 1);
		assert_int_equal(d[r].calls, 1);
		assert_int_equal(d[r].st, WEFT_OK);
		wt_sched_exec_free(ex[r]);
		wt_sched_plan_unref(p[r]);
	}
	simnet_free(sim);
}

/* ---- cache ---- */

static wt_sched_plan_t *cache_get(wt_sched_cache_t *c, const wt_sched_args_t *a,
				  const wt_sched_algo_t *algo)
{
	wt_sched_plan_t *p = NULL;
	char err[128];

	assert_int_equal(wt_sched_cache_get(c, a, algo, &p, err, sizeof(err)), WEFT_OK);
	assert_non_null(p);
	return p;
}

static void test_cache_lru(void **state)
{
	wt_sched_cache_t *c = wt_sched_cache_new(2);
	wt_sched_args_t A = args_of(100, 0, 4, 0), B = A, C = A, A2 = A;
	wt_sched_plan_t *pa, *pb, *pc, *p;
	char err[128] = "";

	(void)state;
	B.seg_bytes = 1024;
	C.in_place = 1;
	A2.in_place = 0;
	pa = cache_get(c, &A, NULL);
	assert_int_equal(wt_sched_cache_misses(c), 1);
	/* The default pick and the same algorithm forced share one entry. */
	p = cache_get(c, &A2, wt_sched_algo_select(&A, NULL));
	assert_ptr_equal(p, pa);
	assert_int_equal(wt_sched_cache_hits(c), 1);
	wt_sched_plan_unref(p);
	pb = cache_get(c, &B, NULL);
	assert_ptr_not_equal(pb, pa);
	p = cache_get(c, &A, NULL); /* A is now the most recent */
	assert_ptr_equal(p, pa);
	wt_sched_plan_unref(p);
	pc = cache_get(c, &C, NULL); /* evicts B */
	assert_int_equal(wt_sched_cache_hits(c), 2);
	assert_int_equal(wt_sched_cache_misses(c), 3);
	p = cache_get(c, &A, NULL);
	assert_ptr_equal(p, pa);
	wt_sched_plan_unref(p);
	p = cache_get(c, &B, NULL); /* rebuilt: B was evicted (we still hold the old one) */
	assert_ptr_not_equal(p, pb);
	assert_int_equal(wt_sched_cache_hits(c), 3);
	assert_int_equal(wt_sched_cache_misses(c), 4);
	assert_int_equal(wt_sched_plan_args(p)->seg_bytes, 1024);
	wt_sched_plan_unref(p);
	/* A different algorithm is a different plan. */
	p = cache_get(c, &A, wt_sched_algo_select(&A, "ring"));
	assert_string_equal(wt_sched_plan_algo(p), "ring");
	assert_string_equal(wt_sched_plan_algo(pa), "recursive_doubling");
	wt_sched_plan_unref(p);
	/* Failed builds are reported and not cached. */
	A.rank = 9;
	p = NULL;
	assert_int_equal(wt_sched_cache_get(c, &A, NULL, &p, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_null(p);
	assert_true(strlen(err) > 0);
	assert_int_equal(wt_sched_cache_get(c, &A, NULL, &p, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_cache_hits(c), 3);
	wt_sched_cache_free(c);
	/* Plans we hold survive the cache. */
	assert_int_equal(wt_sched_plan_args(pa)->count, 100);
	assert_int_equal(wt_sched_plan_args(pb)->seg_bytes, 1024);
	assert_int_equal(wt_sched_plan_args(pc)->in_place, 1);
	wt_sched_plan_unref(pa);
	wt_sched_plan_unref(pb);
	wt_sched_plan_unref(pc);

	c = wt_sched_cache_new(0); /* caches nothing */
	p = cache_get(c, &B, NULL);
	pa = cache_get(c, &B, NULL);
	assert_ptr_not_equal(p, pa);
	assert_int_equal(wt_sched_cache_hits(c), 0);
	assert_int_equal(wt_sched_cache_misses(c), 2);
	wt_sched_plan_unref(p);
	wt_sched_plan_unref(pa);
	wt_sched_cache_free(c);
}

/* A cache of one plan serving three ranks: each get evicts the plan a running execution
 * still uses. The executions must finish correctly (and ASan must stay quiet). */
static void test_cache_evict_live(void **state)
{
	enum { N = 3, COUNT = 50 };
	wt_sched_cache_t *c = wt_sched_cache_new(1);
	simnet_t *sim = simnet_new(N, 11);
	wt_sched_exec_t *ex[N];
	st_done_t d[N] = {0};
	int32_t in[N][COUNT], out[N][COUNT];

	(void)state;
	for (int r = 0; r < N; r++) {
		wt_sched_args_t a = args_of(COUNT, r, N, 0);
		wt_sched_plan_t *p = cache_get(c, &a, NULL);

		for (int i = 0; i < COUNT; i++)
			in[r][i] = r * 1000 + i;
		assert_int_equal(wt_sched_exec_start(p, simnet_net(sim, r), 0, in[r], out[r],
						     st_on_done, &d[r], &ex[r]),
				 WEFT_OK);
		wt_sched_plan_unref(p);
	}
	assert_int_equal(wt_sched_cache_misses(c), N);
	wt_sched_cache_free(c);
	simnet_run(sim);
	for (int r = 0; r < N; r++) {
		assert_int_equal(d[r].calls, 1);
		assert_int_equal(d[r].st, WEFT_OK);
		for (int i = 0; i < COUNT; i++)
			assert_int_equal(out[r][i], 3 * i + 3000);
		wt_sched_exec_free(ex[r]);
	}
	simnet_free(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_builder_numbering), cmocka_unit_test(test_fences),
	    cmocka_unit_test(test_finalize_rejects),  cmocka_unit_test(test_build_errors),
	    cmocka_unit_test(test_exec_local),	      cmocka_unit_test(test_exec_send_copy),
	    cmocka_unit_test(test_exec_long_chain),   cmocka_unit_test(test_exec_bad_args),
	    cmocka_unit_test(test_exec_cancel),	      cmocka_unit_test(test_exec_post_error),
	    cmocka_unit_test(test_exec_recv_error),   cmocka_unit_test(test_exec_free_running),
	    cmocka_unit_test(test_exec_zero_length),  cmocka_unit_test(test_cache_lru),
	    cmocka_unit_test(test_cache_evict_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
