/* The public entry points (layers/api): argument checking, then a plan execution per
 * collective. Nothing here ends the host process; every failure is a status plus a
 * message in weft_comm_last_error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/dtype.h"
#include "lib/util/log.h"
#include "lib/util/umem.h"
#include "layers/api/api_int.h"

#define WT_API_STR_(x) #x
#define WT_API_STR(x) WT_API_STR_(x)

WEFT_API const char *weft_version(void)
{
	return WT_API_STR(WEFT_VERSION_MAJOR) "." WT_API_STR(WEFT_VERSION_MINOR) "." WT_API_STR(
	    WEFT_VERSION_PATCH);
}

WEFT_API weft_status_t weft_mem_alloc(void **ptr, size_t bytes)
{
	return wt_util_umem_alloc(bytes, ptr);
}

WEFT_API weft_status_t weft_mem_free(void *ptr)
{
	return wt_util_umem_free(ptr);
}

WEFT_API const char *weft_strerror(weft_status_t status)
{
	switch (status) {
	case WEFT_OK:
		return "success";
	case WEFT_INPROGRESS:
		return "operation in progress";
	case WEFT_ERR_INVALID_ARG:
		return "invalid argument";
	case WEFT_ERR_NO_MEMORY:
		return "out of memory";
	case WEFT_ERR_UNSUPPORTED:
		return "operation not supported";
	case WEFT_ERR_SYSTEM:
		return "system call failed";
	case WEFT_ERR_TIMEOUT:
		return "timed out";
	case WEFT_ERR_PEER_FAILED:
		return "peer failed";
	case WEFT_ERR_ABORTED:
		return "aborted";
	case WEFT_ERR_PROTOCOL:
		return "protocol error";
	case WEFT_ERR_AUTH:
		return "authentication failed";
	case WEFT_ERR_MISMATCH:
		return "mismatched arguments or sizes";
	case WEFT_ERR_NO_DEVICE:
		return "no device";
	}
	if (status == WT_AGAIN)
		return "resource temporarily unavailable";
	return "unknown status";
}

weft_status_t wt_api_world_comm(wt_api_ctx_t *ctx, weft_comm_t **world)
{
	weft_comm_t *comm = calloc(1, sizeof(*comm));

	if (comm != NULL)
		comm->world = malloc(sizeof(int) * (size_t)ctx->size);
	if (comm == NULL || comm->world == NULL) {
		WT_ERROR("rank %d: out of memory for the world communicator", ctx->rank);
		ctx->ncomms = 1;
		wt_api_ctx_release(ctx);
		free(comm);
		return WEFT_ERR_NO_MEMORY;
	}
	for (int r = 0; r < ctx->size; r++)
		comm->world[r] = r;
	comm->ctx = ctx;
	comm->id = ctx->next_comm_id++;
	comm->rank = ctx->rank;
	comm->size = ctx->size;
	comm->cost = wt_api_comm_cost(ctx, comm->world, comm->size);
	ctx->ncomms = 1;
	if (wt_api_slots_world(comm) != WEFT_OK) {
		wt_api_ctx_release(ctx);
		free(comm->world);
		free(comm);
		return WEFT_ERR_NO_MEMORY;
	}
	wt_api_comm_register(comm);
	*world = comm;
	return WEFT_OK;
}

WEFT_API weft_status_t weft_init(weft_comm_t **world)
{
	wt_api_ctx_t *ctx = NULL;
	char err[WT_API_ERR_LEN] = "";
	weft_status_t st;

	if (world == NULL)
		return WEFT_ERR_INVALID_ARG;
	*world = NULL;
	st = wt_api_ctx_create(&ctx, err, sizeof(err));
	if (st != WEFT_OK)
		return st;
	return wt_api_world_comm(ctx, world);
}

WEFT_API int weft_comm_rank(const weft_comm_t *comm)
{
	return comm != NULL ? comm->rank : -1;
}

WEFT_API int weft_comm_size(const weft_comm_t *comm)
{
	return comm != NULL ? comm->size : -1;
}

WEFT_API const char *weft_comm_last_error(const weft_comm_t *comm)
{
	return comm != NULL ? comm->last_error : "";
}

WEFT_API weft_status_t weft_comm_destroy(weft_comm_t *comm)
{
	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	/* Calls deferred to a group that never ended: withdraw them before the context may go. */
	for (size_t i = 0; i < comm->ngroup; i++)
		wt_api_req_abandon(comm->group[i]);
	free(comm->group);
	wt_api_comm_log_stats(comm);
	wt_api_comm_unregister(comm);
	wt_api_slots_detach(comm);
	wt_api_comm_memo_drop(comm);
	wt_api_ctx_release(comm->ctx);
	free(comm->world);
	free(comm);
	return WEFT_OK;
}

/* ---- argument checks: each names the call and what is wrong ---- */

static weft_status_t check_dtype(weft_comm_t *comm, const char *what, weft_dtype_t dtype,
				 size_t count, size_t *esize)
{
	size_t total;

	if (!wt_util_dtype_valid(dtype)) {
		wt_api_set_error(comm, "%s: unknown dtype %d", what, (int)dtype);
		return WEFT_ERR_INVALID_ARG;
	}
	*esize = wt_util_dtype_size(dtype);
	/* Every buffer of every call is at most size * count elements (multiplied, not divided:
	 * two divisions cost more than the rest of a tiny call's checks). */
	if (__builtin_mul_overflow(count, *esize * (size_t)(comm->size > 0 ? comm->size : 1),
				   &total)) {
		wt_api_set_error(comm, "%s: count %zu of %s overflows the address space", what,
				 count, wt_util_dtype_name(dtype));
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

static weft_status_t check_op(weft_comm_t *comm, const char *what, weft_op_t op)
{
	if (wt_util_op_valid(op))
		return WEFT_OK;
	wt_api_set_error(comm, "%s: unknown op %d", what, (int)op);
	return WEFT_ERR_INVALID_ARG;
}

/* A buffer this rank uses must exist when there is something to move. */
static weft_status_t check_buf(weft_comm_t *comm, const char *what, const char *name,
			       const void *buf, size_t count)
{
	if (buf != NULL || count == 0)
		return WEFT_OK;
	wt_api_set_error(comm, "%s: %s is NULL with count %zu on rank %d", what, name, count,
			 comm->rank);
	return WEFT_ERR_INVALID_ARG;
}

/* The dtype and both buffers of a call whose ranks all use both. */
static weft_status_t check_both(weft_comm_t *comm, const char *what, weft_dtype_t dtype,
				size_t count, const void *sendbuf, const void *recvbuf,
				size_t *esize)
{
	weft_status_t st = check_dtype(comm, what, dtype, count, esize);

	if (st == WEFT_OK)
		st = check_buf(comm, what, "sendbuf", sendbuf, count);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "recvbuf", recvbuf, count);
	return st;
}

static weft_status_t check_rank(weft_comm_t *comm, const char *what, const char *name, int r)
{
	if (r >= 0 && r < comm->size)
		return WEFT_OK;
	wt_api_set_error(comm, "%s: %s %d is outside the communicator (size %d)", what, name, r,
			 comm->size);
	return WEFT_ERR_INVALID_ARG;
}

static void args_init(wt_sched_args_t *args, const weft_comm_t *comm, wt_sched_coll_t coll,
		      size_t count, weft_dtype_t dtype, weft_op_t op, int root)
{
	memset(args, 0, sizeof(*args));
	args->coll = coll;
	args->count = count;
	args->dtype = dtype;
	args->op = op;
	args->root = root;
	args->rank = comm->rank;
	args->size = comm->size;
	args->seg_bytes = comm->ctx->cfg.seg_bytes;
	/* Two ranks of one host with a core each (shm, slots): 1 MiB segments halve the
	 * rendezvous hand-shakes of large calls. 2 ranks, five alternating pairs of weft-perf
	 * runs, 256 KiB / 1 MiB segments: allreduce 4 MiB 457-518 / 364-396 us, 16 MiB
	 * 2.48-2.99 / 2.28-2.77 ms, allgather 4 MiB 237-277 / 221-236 us, the rest alike. With
	 * 4 ranks on 2 cores it measured no better, and more ranks were not measured. */
	if (args->seg_bytes == 0 && comm->size == 2 && comm->slot_bytes > 0 &&
	    !comm->ctx->oversubscribed)
		args->seg_bytes = WT_API_SHM_PAIR_SEG_BYTES;
	args->slot_bytes = comm->slot_bytes;
	/* Only float32 allreduce plans compress; elsewhere the field would only split the
	 * plan cache. */
	if (coll == WT_COLL_ALLREDUCE && dtype == WEFT_FLOAT32)
		args->compress = comm->ctx->cfg.compress;
}

static int at_offset(const void *a, const void *base, size_t off)
{
	return base != NULL && a == (const void *)((const char *)base + off);
}

/* ---- running a call: blocking, async, or deferred to the end of a group ---- */

static weft_status_t group_reserve(weft_comm_t *comm)
{
	weft_request_t **g;
	size_t cap;

	if (comm->ngroup < comm->group_cap)
		return WEFT_OK;
	cap = comm->group_cap ? comm->group_cap * 2 : 16;
	g = realloc(comm->group, cap * sizeof(*g));
	if (g == NULL) {
		wt_api_set_error(comm, "group: out of memory for %zu deferred calls", cap);
		return WEFT_ERR_NO_MEMORY;
	}
	comm->group = g;
	comm->group_cap = cap;
	return WEFT_OK;
}

/* Every call starts here: no stale request is left in *req on failure, and a NULL
 * communicator (which has nowhere to record why) is refused. */
static weft_status_t enter(weft_comm_t *comm, weft_request_t **req)
{
	if (req != NULL)
		*req = NULL;
	return comm != NULL ? WEFT_OK : WEFT_ERR_INVALID_ARG;
}

/* Every call ends here: inside a group, the first failure is also weft_group_end's. */
static weft_status_t note(weft_comm_t *comm, weft_status_t st)
{
	if (st < 0 && comm != NULL && comm->group_depth > 0 && comm->group_err == WEFT_OK) {
		comm->group_err = st;
		snprintf(comm->group_msg, sizeof(comm->group_msg), "%s", comm->last_error);
	}
	return st;
}

/* noop: nothing to move on any rank (every rank passes the same count). */
static weft_status_t run_ex(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
			    void *recvbuf, int tag, int noop, weft_request_t **req)
{
	int defer = req == NULL && comm->group_depth > 0;
	weft_request_t *r = NULL;
	weft_status_t st;

	if (defer) {
		st = group_reserve(comm);
		if (st != WEFT_OK)
			return st;
	}
	/* The executor binds SEND even where the plan has no bytes of it. */
	if (sendbuf == NULL)
		sendbuf = recvbuf;
	if (comm->ctx->cfg.check && args->coll != WT_COLL_SEND && args->coll != WT_COLL_RECV) {
		st = wt_api_check_args(comm, args);
		if (st != WEFT_OK)
			return st;
	}
	/* A blocking call waits at once: it drives progress itself, so starting it need not
	 * wake the progress thread. */
	if (!noop && req == NULL && !defer)
		return wt_api_coll_run(comm, args, sendbuf, recvbuf, tag);
	if (noop)
		st = wt_api_req_done_now(comm, args->coll, &r);
	else
		/* a group's own calls are driven by weft_group_end's waits: waking the
		 * thread for each would have it fight the caller for the lock and a core */
		st = wt_api_coll_start(comm, args, sendbuf, recvbuf, tag, !defer, &r);
	if (st != WEFT_OK)
		return st;
	if (req != NULL) {
		*req = r;
		return WEFT_OK;
	}
	if (defer) {
		comm->group[comm->ngroup++] = r;
		return WEFT_OK;
	}
	return wt_api_wait_own(&r);
}

static weft_status_t run(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
			 void *recvbuf, int tag, int noop, weft_request_t **req)
{
	return run_ex(comm, args, sendbuf, recvbuf, tag, noop, req);
}

/* ---- the calls ---- */

/* A blocking call on a communicator, with both its buffers: one that may replay the last
 * (wt_api_replay_hit says whether it does). */
static int may_replay(const weft_comm_t *comm, weft_request_t **req, const void *sendbuf,
		      const void *recvbuf)
{
	return req == NULL && comm != NULL && sendbuf != NULL && recvbuf != NULL;
}

/* Whether a is the rank's block of count elements in base (the in-place forms of allgather
 * and reduce_scatter). */
static int rank_block(const weft_comm_t *comm, const void *a, const void *base, size_t count,
		      weft_dtype_t dtype)
{
	return at_offset(a, base, (size_t)comm->rank * count * wt_util_dtype_size(dtype));
}

/* args.mem of an allreduce: both buffers in weft_mem_alloc memory, where the slots are. */
static int allreduce_mem(const weft_comm_t *comm, const void *sendbuf, const void *recvbuf,
			 size_t bytes)
{
	return comm->slot_bytes > 0 && wt_util_umem_contains(recvbuf, bytes) &&
	       (sendbuf == recvbuf || wt_util_umem_contains(sendbuf, bytes));
}

static weft_status_t allreduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			       weft_op_t op, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "allreduce";
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_both(comm, what, dtype, count, sendbuf, recvbuf, &es);
	if (st == WEFT_OK)
		st = check_op(comm, what, op);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_ALLREDUCE, count, dtype, op, 0);
	args.in_place = sendbuf == recvbuf;
	args.mem = allreduce_mem(comm, sendbuf, recvbuf, count * es);
	return run(comm, &args, sendbuf, recvbuf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
				      weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
				      weft_request_t **req)
{
	if (may_replay(comm, req, sendbuf, recvbuf) &&
	    wt_api_replay_hit(comm, WT_COLL_ALLREDUCE, count, dtype, op, 0, sendbuf == recvbuf) &&
	    allreduce_mem(comm, sendbuf, recvbuf, count * wt_util_dtype_size(dtype)) ==
		comm->replay.mem)
		return wt_api_replay(comm, sendbuf, recvbuf);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, allreduce(sendbuf, recvbuf, count, dtype, op, comm, req));
}

static weft_status_t allgather(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			       weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "allgather";
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_both(comm, what, dtype, count, sendbuf, recvbuf, &es);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_ALLGATHER, count, dtype, WEFT_SUM, 0);
	args.in_place = rank_block(comm, sendbuf, recvbuf, count, dtype);
	return run(comm, &args, sendbuf, recvbuf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
				      weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req)
{
	if (may_replay(comm, req, sendbuf, recvbuf) &&
	    wt_api_replay_hit(comm, WT_COLL_ALLGATHER, sendcount, dtype, WEFT_SUM, 0,
			      rank_block(comm, sendbuf, recvbuf, sendcount, dtype)))
		return wt_api_replay(comm, sendbuf, recvbuf);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, allgather(sendbuf, recvbuf, sendcount, dtype, comm, req));
}

static weft_status_t reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
				    weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
				    weft_request_t **req)
{
	const char *what = "reduce_scatter";
	wt_sched_args_t args;
	int inplace;
	size_t es;
	weft_status_t st;

	st = check_both(comm, what, dtype, count, sendbuf, recvbuf, &es);
	if (st == WEFT_OK)
		st = check_op(comm, what, op);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_REDUCE_SCATTER, count, dtype, op, 0);
	/* In place, RECV is the rank's block of SEND: the plans read every block through SEND
	 * and write the rank's block only after reading it. */
	inplace = rank_block(comm, recvbuf, sendbuf, count, dtype);
	args.in_place = inplace;
	return run_ex(comm, &args, sendbuf, recvbuf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
					   weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
					   weft_request_t **req)
{
	if (may_replay(comm, req, sendbuf, recvbuf) &&
	    wt_api_replay_hit(comm, WT_COLL_REDUCE_SCATTER, recvcount, dtype, op, 0,
			      rank_block(comm, recvbuf, sendbuf, recvcount, dtype)))
		return wt_api_replay(comm, sendbuf, recvbuf);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, comm, req));
}

static weft_status_t broadcast(void *buf, size_t count, weft_dtype_t dtype, int root,
			       weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "broadcast";
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, count, &es);
	if (st == WEFT_OK)
		st = check_rank(comm, what, "root", root);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "buf", buf, count);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_BROADCAST, count, dtype, WEFT_SUM, root);
	args.in_place = 1;
	return run(comm, &args, buf, buf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_broadcast(void *buf, size_t count, weft_dtype_t dtype, int root,
				      weft_comm_t *comm, weft_request_t **req)
{
	if (may_replay(comm, req, buf, buf) &&
	    wt_api_replay_hit(comm, WT_COLL_BROADCAST, count, dtype, WEFT_SUM, root, 1))
		return wt_api_replay(comm, buf, buf);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, broadcast(buf, count, dtype, root, comm, req));
}

static weft_status_t reduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			    weft_op_t op, int root, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "reduce";
	int is_root = comm->rank == root;
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, count, &es);
	if (st == WEFT_OK)
		st = check_op(comm, what, op);
	if (st == WEFT_OK)
		st = check_rank(comm, what, "root", root);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "sendbuf", sendbuf, count);
	if (st == WEFT_OK && is_root)
		st = check_buf(comm, what, "recvbuf (at the root)", recvbuf, count);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_REDUCE, count, dtype, op, root);
	args.in_place = is_root && sendbuf == recvbuf;
	/* Off the root recvbuf is no buffer of the plan's; binding sendbuf keeps it unused. */
	return run(comm, &args, sendbuf, is_root ? recvbuf : (void *)(uintptr_t)sendbuf, 0,
		   count == 0, req);
}

WEFT_API weft_status_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
				   weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t *comm,
				   weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, reduce(sendbuf, recvbuf, count, dtype, op, root, comm, req));
}

static weft_status_t gather(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			    int root, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "gather";
	int is_root = comm->rank == root;
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, count, &es);
	if (st == WEFT_OK)
		st = check_rank(comm, what, "root", root);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "sendbuf", sendbuf, count);
	if (st == WEFT_OK && is_root)
		st = check_buf(comm, what, "recvbuf (at the root)", recvbuf, count);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_GATHER, count, dtype, WEFT_SUM, root);
	return run(comm, &args, sendbuf, is_root ? recvbuf : (void *)(uintptr_t)sendbuf, 0,
		   count == 0, req);
}

WEFT_API weft_status_t weft_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
				   weft_dtype_t dtype, int root, weft_comm_t *comm,
				   weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, gather(sendbuf, recvbuf, sendcount, dtype, root, comm, req));
}

static weft_status_t scatter(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			     int root, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "scatter";
	int is_root = comm->rank == root;
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, count, &es);
	if (st == WEFT_OK)
		st = check_rank(comm, what, "root", root);
	if (st == WEFT_OK && is_root)
		st = check_buf(comm, what, "sendbuf (at the root)", sendbuf, count);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "recvbuf", recvbuf, count);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_SCATTER, count, dtype, WEFT_SUM, root);
	return run(comm, &args, is_root ? sendbuf : NULL, recvbuf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
				    weft_dtype_t dtype, int root, weft_comm_t *comm,
				    weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, scatter(sendbuf, recvbuf, recvcount, dtype, root, comm, req));
}

static weft_status_t alltoall(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
			      weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "alltoall";
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_both(comm, what, dtype, count, sendbuf, recvbuf, &es);
	if (st != WEFT_OK)
		return st;
	args_init(&args, comm, WT_COLL_ALLTOALL, count, dtype, WEFT_SUM, 0);
	args.in_place = sendbuf == recvbuf;
	return run(comm, &args, sendbuf, recvbuf, 0, count == 0, req);
}

WEFT_API weft_status_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count,
				     weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req)
{
	if (may_replay(comm, req, sendbuf, recvbuf) &&
	    wt_api_replay_hit(comm, WT_COLL_ALLTOALL, count, dtype, WEFT_SUM, 0,
			      sendbuf == recvbuf))
		return wt_api_replay(comm, sendbuf, recvbuf);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, alltoall(sendbuf, recvbuf, count, dtype, comm, req));
}

/* Elements a counts/displacements pair spans; names the first entry that overflows. */
static weft_status_t vector_extent(weft_comm_t *comm, const char *which, const size_t *counts,
				   const size_t *displs, size_t es, size_t *ext)
{
	*ext = 0;
	for (int i = 0; i < comm->size; i++) {
		if (counts[i] > SIZE_MAX - displs[i] || counts[i] + displs[i] > SIZE_MAX / es) {
			wt_api_set_error(comm,
					 "alltoallv: %s entry %d (count %zu at displacement %zu) "
					 "overflows the address space",
					 which, i, counts[i], displs[i]);
			return WEFT_ERR_INVALID_ARG;
		}
		if (counts[i] > 0 && counts[i] + displs[i] > *ext)
			*ext = counts[i] + displs[i];
	}
	return WEFT_OK;
}

static weft_status_t alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
			       void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
			       weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = "alltoallv";
	size_t es, sext = 0, rext = 0;
	wt_sched_args_t args;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, 0, &es);
	if (st != WEFT_OK)
		return st;
	if (sendcounts == NULL || sdispls == NULL || recvcounts == NULL || rdispls == NULL) {
		wt_api_set_error(comm, "alltoallv: %s is NULL",
				 sendcounts == NULL   ? "sendcounts"
				 : sdispls == NULL    ? "sdispls"
				 : recvcounts == NULL ? "recvcounts"
						      : "rdispls");
		return WEFT_ERR_INVALID_ARG;
	}
	st = vector_extent(comm, "send", sendcounts, sdispls, es, &sext);
	if (st == WEFT_OK)
		st = vector_extent(comm, "receive", recvcounts, rdispls, es, &rext);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "sendbuf", sendbuf, sext);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "recvbuf", recvbuf, rext);
	if (st != WEFT_OK)
		return st;
	if (sendcounts[comm->rank] != recvcounts[comm->rank]) {
		wt_api_set_error(comm,
				 "alltoallv: rank %d sends itself %zu elements but expects %zu",
				 comm->rank, sendcounts[comm->rank], recvcounts[comm->rank]);
		return WEFT_ERR_INVALID_ARG;
	}
	if (sendbuf != NULL && sendbuf == recvbuf && sext > 0 && rext > 0) {
		wt_api_set_error(comm, "alltoallv: sendbuf == recvbuf, but alltoallv has no "
				       "in-place form");
		return WEFT_ERR_INVALID_ARG;
	}
	args_init(&args, comm, WT_COLL_ALLTOALLV, 0, dtype, WEFT_SUM, 0);
	args.sendcounts = sendcounts;
	args.sdispls = sdispls;
	args.recvcounts = recvcounts;
	args.rdispls = rdispls;
	return run(comm, &args, sendbuf, recvbuf, 0, 0, req);
}

WEFT_API weft_status_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts,
				      const size_t *sdispls, void *recvbuf,
				      const size_t *recvcounts, const size_t *rdispls,
				      weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
				    dtype, comm, req));
}

WEFT_API weft_status_t weft_barrier(weft_comm_t *comm, weft_request_t **req)
{
	wt_sched_args_t args;

	if (req == NULL && comm != NULL &&
	    wt_api_replay_hit(comm, WT_COLL_BARRIER, 0, WEFT_UINT8, WEFT_SUM, 0, 0))
		return wt_api_replay(comm, NULL, NULL);
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	args_init(&args, comm, WT_COLL_BARRIER, 0, WEFT_UINT8, WEFT_SUM, 0);
	return note(comm, run(comm, &args, NULL, NULL, 0, 0, req));
}

static weft_status_t p2p(wt_sched_coll_t coll, void *buf, size_t count, weft_dtype_t dtype,
			 int peer, int tag, weft_comm_t *comm, weft_request_t **req)
{
	const char *what = wt_sched_coll_name(coll);
	wt_sched_args_t args;
	size_t es;
	weft_status_t st;

	st = check_dtype(comm, what, dtype, count, &es);
	if (st == WEFT_OK)
		st = check_rank(comm, what, "peer", peer);
	if (st == WEFT_OK)
		st = check_buf(comm, what, "buf", buf, count);
	if (st != WEFT_OK)
		return st;
	if (peer == comm->rank) {
		wt_api_set_error(comm, "%s: peer %d is this rank itself", what, peer);
		return WEFT_ERR_INVALID_ARG;
	}
	args_init(&args, comm, coll, count, dtype, WEFT_SUM, 0);
	args.peer = peer;
	return run(comm, &args, buf, buf, tag, count == 0, req);
}

WEFT_API weft_status_t weft_send(const void *buf, size_t count, weft_dtype_t dtype, int peer,
				 int tag, weft_comm_t *comm, weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm,
		    p2p(WT_COLL_SEND, (void *)(uintptr_t)buf, count, dtype, peer, tag, comm, req));
}

WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype, int peer, int tag,
				 weft_comm_t *comm, weft_request_t **req)
{
	if (enter(comm, req) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	return note(comm, p2p(WT_COLL_RECV, buf, count, dtype, peer, tag, comm, req));
}

WEFT_API weft_status_t weft_group_start(weft_comm_t *comm)
{
	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (comm->group_depth == INT32_MAX) {
		wt_api_set_error(comm, "weft_group_start: groups nested too deep");
		return WEFT_ERR_INVALID_ARG;
	}
	if (comm->group_depth++ == 0) {
		comm->group_err = WEFT_OK;
		comm->group_msg[0] = '\0';
	}
	return WEFT_OK;
}

WEFT_API weft_status_t weft_group_end(weft_comm_t *comm)
{
	weft_status_t first;

	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (comm->group_depth == 0) {
		wt_api_set_error(comm, "weft_group_end without a matching weft_group_start");
		return WEFT_ERR_INVALID_ARG;
	}
	if (--comm->group_depth > 0)
		return WEFT_OK;
	first = comm->group_err;
	/* One waiter for the whole group: between two of its waits the progress thread
	 * would otherwise be called back for the calls still running, and fight us for
	 * the lock and a core. */
	wt_api_waiter_enter(comm->ctx);
	for (size_t i = 0; i < comm->ngroup; i++) {
		weft_status_t st = wt_api_wait_own(&comm->group[i]);
		if (st != WEFT_OK && first == WEFT_OK) {
			first = st;
			snprintf(comm->group_msg, sizeof(comm->group_msg), "%s", comm->last_error);
		}
	}
	wt_api_waiter_exit(comm->ctx);
	comm->ngroup = 0;
	comm->group_err = WEFT_OK;
	if (first != WEFT_OK)
		snprintf(comm->last_error, sizeof(comm->last_error), "%s", comm->group_msg);
	return first;
}

WEFT_API weft_status_t weft_wait(weft_request_t **req)
{
	if (req == NULL || *req == NULL)
		return WEFT_ERR_INVALID_ARG;
	return wt_api_wait_one(req);
}

WEFT_API weft_status_t weft_test(weft_request_t **req, int *done)
{
	if (req == NULL || *req == NULL || done == NULL)
		return WEFT_ERR_INVALID_ARG;
	return wt_api_test_one(req, done);
}

WEFT_API weft_status_t weft_waitall(weft_request_t **reqs, size_t n)
{
	weft_status_t first = WEFT_OK;

	wt_api_ctx_t *ctx = NULL;

	if (reqs == NULL && n > 0)
		return WEFT_ERR_INVALID_ARG;
	for (size_t i = 0; i < n; i++) {
		weft_status_t st;
		if (reqs[i] == NULL)
			continue;
		/* one waiter for them all, as weft_group_end (requests of one context; the
		 * first one's is counted) */
		if (ctx == NULL) {
			ctx = reqs[i]->comm->ctx;
			wt_api_waiter_enter(ctx);
		}
		st = wt_api_wait_one(&reqs[i]);
		if (st != WEFT_OK && first == WEFT_OK)
			first = st;
	}
	if (ctx != NULL)
		wt_api_waiter_exit(ctx);
	return first;
}
