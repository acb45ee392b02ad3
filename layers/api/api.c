/* The public entry points (layers/api): argument checking, then a plan execution per
 * collective. Nothing here ends the host process; every failure is a status plus a
 * message in weft_comm_last_error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/dtype.h"
#include "lib/util/log.h"
#include "layers/api/api_int.h"

#define WT_API_STR_(x) #x
#define WT_API_STR(x) WT_API_STR_(x)

WEFT_API const char *weft_version(void)
{
	return WT_API_STR(WEFT_VERSION_MAJOR) "." WT_API_STR(WEFT_VERSION_MINOR) "." WT_API_STR(
	    WEFT_VERSION_PATCH);
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

WEFT_API weft_status_t weft_init(weft_comm_t **world)
{
	wt_api_ctx_t *ctx = NULL;
	weft_comm_t *comm;
	char err[WT_API_ERR_LEN] = "";
	weft_status_t st;

	if (world == NULL)
		return WEFT_ERR_INVALID_ARG;
	*world = NULL;
	comm = calloc(1, sizeof(*comm));
	if (comm == NULL)
		return WEFT_ERR_NO_MEMORY;
	st = wt_api_ctx_create(&ctx, err, sizeof(err));
	if (st != WEFT_OK) {
		free(comm);
		return st;
	}
	comm->world = malloc(sizeof(int) * (size_t)ctx->size);
	if (comm->world == NULL) {
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
	ctx->ncomms = 1;
	*world = comm;
	return WEFT_OK;
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
	wt_api_ctx_release(comm->ctx);
	free(comm->world);
	free(comm);
	return WEFT_OK;
}

/* Shared checks of every collective's arguments; names what is wrong. */
static weft_status_t check_buffers(weft_comm_t *comm, const char *what, const void *sendbuf,
				   const void *recvbuf, size_t count, weft_dtype_t dtype,
				   size_t *bytes)
{
	size_t esize;

	if (!wt_util_dtype_valid(dtype)) {
		wt_api_set_error(comm, "%s: unknown dtype %d", what, (int)dtype);
		return WEFT_ERR_INVALID_ARG;
	}
	esize = wt_util_dtype_size(dtype);
	if (count > SIZE_MAX / esize / (size_t)(comm->size > 0 ? comm->size : 1)) {
		wt_api_set_error(comm, "%s: count %zu of %s overflows the address space", what,
				 count, wt_util_dtype_name(dtype));
		return WEFT_ERR_INVALID_ARG;
	}
	if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
		wt_api_set_error(comm, "%s: %s is NULL with count %zu", what,
				 sendbuf == NULL ? "sendbuf" : "recvbuf", count);
		return WEFT_ERR_INVALID_ARG;
	}
	*bytes = count * esize;
	return WEFT_OK;
}

static weft_status_t run(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
			 void *recvbuf, weft_request_t **req)
{
	weft_request_t *r = NULL;
	weft_status_t st;

	st = wt_api_coll_start(comm, args, sendbuf, recvbuf, &r);
	if (st != WEFT_OK)
		return st;
	if (req != NULL) {
		*req = r;
		return WEFT_OK;
	}
	return wt_api_wait_one(&r);
}

WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
				      weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
				      weft_request_t **req)
{
	wt_sched_args_t args;
	size_t bytes;
	weft_status_t st;

	if (req != NULL)
		*req = NULL;
	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = check_buffers(comm, "allreduce", sendbuf, recvbuf, count, dtype, &bytes);
	if (st != WEFT_OK)
		return st;
	if (!wt_util_op_valid(op)) {
		wt_api_set_error(comm, "allreduce: unknown op %d", (int)op);
		return WEFT_ERR_INVALID_ARG;
	}
	memset(&args, 0, sizeof(args));
	args.coll = WT_COLL_ALLREDUCE;
	args.count = count;
	args.dtype = dtype;
	args.op = op;
	args.rank = comm->rank;
	args.size = comm->size;
	args.in_place = sendbuf == recvbuf;
	args.seg_bytes = comm->ctx->cfg.seg_bytes;
	return run(comm, &args, sendbuf, recvbuf, req);
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

	if (reqs == NULL && n > 0)
		return WEFT_ERR_INVALID_ARG;
	for (size_t i = 0; i < n; i++) {
		weft_status_t st;
		if (reqs[i] == NULL)
			continue;
		st = wt_api_wait_one(&reqs[i]);
		if (st != WEFT_OK && first == WEFT_OK)
			first = st;
	}
	return first;
}
