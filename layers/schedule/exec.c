/* The plan executor (layers/schedule): per-step pending counts and a FIFO ready queue;
 * network steps go to the wt_sched_net_t table, local steps run inline. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/schedule/exec.h"
#include "lib/util/dtype.h"
#include "lib/util/log.h"

#define WT_SCHED_EXEC_ERR_LEN 256

enum { OP_IDLE = 0, OP_POSTED, OP_DONE, OP_CANCELLED };

/* The callback argument of one network step; stable for the execution's lifetime. */
typedef struct {
	wt_sched_exec_t *ex;
	uint32_t step;
	uint8_t state;
	void *handle;
} exec_op_t;

struct wt_sched_exec {
	wt_sched_plan_t *plan;
	wt_sched_net_t net;
	uint64_t tag_base;
	uint8_t *bufs[3]; /* by wt_sched_buf_t */
	uint8_t *scratch;
	weft_dtype_t dtype;
	weft_op_t wire_op; /* the plan's op with AVG turned into SUM */
	size_t elem;
	int size;

	uint32_t *pending;
	uint32_t *ready;
	size_t rhead, rtail;
	exec_op_t *ops;
	size_t nsteps, ndone, outstanding;
	int running;

	weft_status_t err, status;
	wt_sched_exec_done_fn_t done;
	void *done_arg;
	char errmsg[WT_SCHED_EXEC_ERR_LEN]; /* last: start leaves it uninitialised but [0] */
};

static void exec_set_error(wt_sched_exec_t *ex, weft_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The first error wins; later ones are consequences and only logged at debug level. */
static void exec_set_error(wt_sched_exec_t *ex, weft_status_t st, const char *fmt, ...)
{
	char buf[WT_SCHED_EXEC_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (ex->err) {
		WT_DEBUG("schedule: further error after the first: %s", buf);
		return;
	}
	ex->err = wt_util_is_err(st) ? st : WEFT_ERR_PROTOCOL;
	memcpy(ex->errmsg, buf, sizeof(buf));
}

static void *bind(const wt_sched_exec_t *ex, unsigned buf, size_t off)
{
	uint8_t *base = ex->bufs[buf];

	return base && off ? base + off : base;
}

static void exec_complete_step(wt_sched_exec_t *ex, uint32_t i)
{
	uint32_t n;
	const uint32_t *succ = wt_sched_plan_succ(ex->plan, i, &n);

	ex->ndone++;
	for (uint32_t k = 0; k < n; k++)
		if (--ex->pending[succ[k]] == 0)
			ex->ready[ex->rtail++] = succ[k];
}

static void exec_run_local(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	void *dst = bind(ex, s->buf, s->off);

	if (!s->len)
		return;
	switch (s->type) {
	case WT_SCHED_COPY:
		memmove(dst, bind(ex, s->src_buf, s->src_off), s->len);
		break;
	case WT_SCHED_REDUCE:
		wt_util_reduce(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem, ex->dtype,
			       ex->wire_op);
		break;
	case WT_SCHED_DIV:
		wt_util_scale_div(dst, s->len / ex->elem, ex->dtype, ex->size);
		break;
	/* Finalize admitted these only for float32 plans with a 16-bit wire format, so the
	 * kernels cannot refuse them. */
	case WT_SCHED_NARROW:
		wt_util_f32_narrow(dst, bind(ex, s->src_buf, s->src_off), s->len / 2,
				   (weft_dtype_t)s->wire);
		break;
	case WT_SCHED_WIDEN:
		wt_util_f32_widen(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem,
				  (weft_dtype_t)s->wire);
		break;
	case WT_SCHED_REDUCE_WIDEN:
		wt_util_f32_reduce_widen(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem,
					 (weft_dtype_t)s->wire, ex->wire_op);
		break;
	default:
		break;
	}
}

static void exec_net_done(void *arg, weft_status_t st, const char *msg);
static void exec_progress(wt_sched_exec_t *ex);

static void exec_post(wt_sched_exec_t *ex, uint32_t i, const wt_sched_step_t *s)
{
	exec_op_t *op = &ex->ops[i];
	uint64_t tag = ex->tag_base | s->msg;
	weft_status_t st;

	op->handle = NULL;
	if (s->type == WT_SCHED_SEND)
		st = ex->net.post_send(ex->net.ctx, s->peer, tag, bind(ex, s->buf, s->off), s->len,
				       exec_net_done, op, &op->handle);
	else
		st = ex->net.post_recv(ex->net.ctx, s->peer, tag, bind(ex, s->buf, s->off), s->len,
				       s->type == WT_SCHED_RECV_REDUCE, ex->dtype, ex->wire_op,
				       exec_net_done, op, &op->handle);
	if (st != WEFT_OK) {
		/* A post must queue; "try again" from below is not something we can retry. */
		exec_set_error(ex, wt_util_is_err(st) ? st : WEFT_ERR_NO_MEMORY,
			       "posting %s of %zu bytes %s peer %d (msg %u) failed: status %d",
			       wt_sched_step_type_name(s->type), s->len,
			       s->type == WT_SCHED_SEND ? "to" : "from", (int)s->peer, s->msg,
			       (int)st);
		WT_ERROR("schedule: %s", ex->errmsg);
		return;
	}
	op->state = OP_POSTED;
	ex->outstanding++;
}

static void exec_maybe_finish(wt_sched_exec_t *ex)
{
	wt_sched_exec_done_fn_t done = ex->done;
	void *arg = ex->done_arg;

	if (ex->status != WEFT_INPROGRESS || ex->running)
		return;
	if (ex->err ? ex->outstanding != 0 : ex->ndone != ex->nsteps)
		return;
	ex->status = ex->err;
	/* done may free ex: nothing touches it afterwards. */
	if (done)
		done(arg, ex->status, ex->err ? ex->errmsg : "");
}

/* A loop over a queue, not recursion over successors: plans can be long chains. */
static void exec_progress(wt_sched_exec_t *ex)
{
	if (ex->running)
		return;
	ex->running = 1;
	while (!ex->err && ex->rhead < ex->rtail) {
		uint32_t i = ex->ready[ex->rhead++];
		const wt_sched_step_t *s = wt_sched_plan_step(ex->plan, i);

		if (s->type == WT_SCHED_SEND || s->type == WT_SCHED_RECV ||
		    s->type == WT_SCHED_RECV_REDUCE) {
			exec_post(ex, i, s);
			continue;
		}
		exec_run_local(ex, s);
		exec_complete_step(ex, i);
	}
	ex->running = 0;
	exec_maybe_finish(ex);
}

static void exec_net_done(void *arg, weft_status_t st, const char *msg)
{
	exec_op_t *op = arg;
	wt_sched_exec_t *ex = op->ex;
	const wt_sched_step_t *s = wt_sched_plan_step(ex->plan, op->step);

	if (op->state != OP_POSTED) {
		WT_ERROR("schedule: completion for step %u that is not outstanding", op->step);
		return;
	}
	op->state = OP_DONE;
	ex->outstanding--;
	if (st != WEFT_OK) {
		exec_set_error(ex, st, "%s %s peer %d (msg %u) failed: %s",
			       wt_sched_step_type_name(s->type),
			       s->type == WT_SCHED_SEND ? "to" : "from", (int)s->peer, s->msg,
			       msg ? msg : "no detail");
	} else {
		exec_complete_step(ex, op->step);
	}
	exec_progress(ex);
}

static int net_ok(const wt_sched_net_t *net)
{
	return net && net->post_send && net->post_recv && net->cancel;
}

static weft_status_t exec_check(const wt_sched_plan_t *p, const wt_sched_net_t *net,
				uint64_t tag_base, const void *sendbuf, const void *recvbuf)
{
	const wt_sched_args_t *a;
	size_t bytes;

	if (!p || !net_ok(net)) {
		WT_ERROR("schedule: execution without a plan or a complete network table");
		return WEFT_ERR_INVALID_ARG;
	}
	a = wt_sched_plan_args(p);
	if (!wt_sched_plan_ready(p)) {
		WT_ERROR("schedule: plan (%s) is not finalized or failed",
			 wt_sched_plan_algo(p)[0] ? wt_sched_plan_algo(p) : "unnamed");
		return WEFT_ERR_INVALID_ARG;
	}
	if (tag_base & (((uint64_t)1 << WT_SCHED_TAG_MSG_BITS) - 1)) {
		WT_ERROR("schedule: tag base %#llx has message bits set",
			 (unsigned long long)tag_base);
		return WEFT_ERR_INVALID_ARG;
	}
	/* A buffer the plan has no bytes of on this rank (root-only buffers elsewhere) may be
	 * NULL; the plan never names it. */
	bytes = wt_sched_plan_buf_bytes(p, WT_SCHED_BUF_RECV);
	if (bytes && !recvbuf) {
		WT_ERROR("schedule: NULL receive buffer for %s of %zu bytes",
			 wt_sched_coll_name(a->coll), bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	bytes = wt_sched_plan_buf_bytes(p, WT_SCHED_BUF_SEND);
	if (bytes && !sendbuf) {
		WT_ERROR("schedule: NULL send buffer for %s of %zu bytes",
			 wt_sched_coll_name(a->coll), bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

/* One block per execution (state, per-step arrays, scratch): a small collective costs one
 * malloc, not five, and the state is not zeroed beyond what start sets. */
static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static wt_sched_exec_t *exec_alloc(size_t nsteps, size_t scratch)
{
	size_t n = nsteps ? nsteps : 1;
	size_t off_pending = align_up(sizeof(wt_sched_exec_t), 8);
	size_t off_ready = off_pending + n * sizeof(uint32_t);
	size_t off_ops = align_up(off_ready + n * sizeof(uint32_t), 8);
	size_t off_scratch = align_up(off_ops + n * sizeof(exec_op_t), 64);
	wt_sched_exec_t *ex;
	uint8_t *base;

	if (n > (SIZE_MAX - 4096) / (2 * sizeof(uint32_t) + sizeof(exec_op_t)) ||
	    scratch > SIZE_MAX - off_scratch)
		return NULL;
	base = malloc(off_scratch + scratch);
	if (!base)
		return NULL;
	ex = (wt_sched_exec_t *)base;
	memset(ex, 0, offsetof(wt_sched_exec_t, errmsg));
	ex->errmsg[0] = '\0';
	ex->pending = (uint32_t *)(base + off_pending);
	ex->ready = (uint32_t *)(base + off_ready);
	ex->ops = (exec_op_t *)(base + off_ops);
	ex->scratch = scratch ? base + off_scratch : NULL;
	return ex;
}

static void exec_release(wt_sched_exec_t *ex)
{
	wt_sched_plan_unref(ex->plan);
	free(ex);
}

weft_status_t wt_sched_exec_start(wt_sched_plan_t *p, const wt_sched_net_t *net, uint64_t tag_base,
				  const void *sendbuf, void *recvbuf, wt_sched_exec_done_fn_t done,
				  void *arg, wt_sched_exec_t **out)
{
	const wt_sched_args_t *a;
	wt_sched_exec_t *ex;
	weft_status_t st;

	if (!out)
		return WEFT_ERR_INVALID_ARG;
	st = exec_check(p, net, tag_base, sendbuf, recvbuf);
	if (st)
		return st;
	a = wt_sched_plan_args(p);
	ex = exec_alloc(wt_sched_plan_nsteps(p), wt_sched_plan_scratch_bytes(p));
	if (!ex)
		goto nomem;
	wt_sched_plan_ref(p);
	ex->plan = p;
	ex->net = *net;
	ex->tag_base = tag_base;
	ex->bufs[WT_SCHED_BUF_RECV] = recvbuf;
	/* Bound as given: in-place forms alias SEND into RECV (allgather: SEND is the rank's
	 * block of RECV; reduce_scatter: RECV is the rank's block of SEND), and plans never
	 * write SEND. */
	ex->bufs[WT_SCHED_BUF_SEND] = (uint8_t *)(uintptr_t)sendbuf;
	ex->dtype = a->dtype;
	ex->wire_op = a->op == WEFT_AVG ? WEFT_SUM : a->op;
	ex->elem = wt_util_dtype_size(a->dtype);
	ex->size = a->size;
	ex->nsteps = wt_sched_plan_nsteps(p);
	ex->status = WEFT_INPROGRESS;
	ex->done = done;
	ex->done_arg = arg;
	ex->bufs[WT_SCHED_BUF_SCRATCH] = ex->scratch;
	for (size_t i = 0; i < ex->nsteps; i++) {
		ex->pending[i] = wt_sched_plan_step(p, i)->ndeps;
		ex->ops[i].ex = ex;
		ex->ops[i].step = (uint32_t)i;
		ex->ops[i].state = OP_IDLE;
		ex->ops[i].handle = NULL;
		if (!ex->pending[i])
			ex->ready[ex->rtail++] = (uint32_t)i;
	}
	*out = ex;
	exec_progress(ex);
	return WEFT_OK;
nomem:
	WT_ERROR("schedule: out of memory starting a %s plan of %zu steps", wt_sched_plan_algo(p),
		 wt_sched_plan_nsteps(p));
	return WEFT_ERR_NO_MEMORY;
}

weft_status_t wt_sched_exec_status(const wt_sched_exec_t *ex)
{
	return ex ? ex->status : WEFT_ERR_INVALID_ARG;
}

static void exec_cancel_outstanding(wt_sched_exec_t *ex)
{
	for (size_t i = 0; i < ex->nsteps && ex->outstanding; i++) {
		exec_op_t *op = &ex->ops[i];

		if (op->state != OP_POSTED)
			continue;
		op->state = OP_CANCELLED;
		ex->outstanding--;
		ex->net.cancel(ex->net.ctx, op->handle);
	}
}

void wt_sched_exec_cancel(wt_sched_exec_t *ex, weft_status_t st, const char *msg)
{
	if (!ex || ex->status != WEFT_INPROGRESS)
		return;
	WT_DEBUG("schedule: cancelling %s plan (status %d): %s", wt_sched_plan_algo(ex->plan),
		 (int)st, msg ? msg : "");
	exec_set_error(ex, wt_util_is_err(st) ? st : WEFT_ERR_ABORTED, "%s",
		       msg ? msg : "cancelled");
	exec_cancel_outstanding(ex);
	exec_maybe_finish(ex);
}

size_t wt_sched_exec_owing(const wt_sched_exec_t *ex, int *peers, size_t max)
{
	size_t n = 0;

	if (!ex)
		return 0;
	for (size_t i = 0; i < ex->nsteps && n < max; i++) {
		const wt_sched_step_t *s;
		size_t k;

		if (ex->ops[i].state != OP_POSTED)
			continue;
		s = wt_sched_plan_step(ex->plan, i);
		if (s->type == WT_SCHED_SEND)
			continue;
		for (k = 0; k < n && peers[k] != s->peer; k++)
			;
		if (k == n)
			peers[n++] = s->peer;
	}
	return n;
}

/* Freeing a running execution withdraws its posted ops without calling done. */
void wt_sched_exec_free(wt_sched_exec_t *ex)
{
	if (!ex)
		return;
	if (ex->status == WEFT_INPROGRESS) {
		WT_DEBUG("schedule: freeing a running %s execution", wt_sched_plan_algo(ex->plan));
		exec_cancel_outstanding(ex);
	}
	exec_release(ex);
}
