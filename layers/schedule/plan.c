/* The plan builder, validation (finalize), read accessors and reference counting
 * (layers/schedule). Algorithms see only the builder calls declared in plan.h. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layers/schedule/plan.h"
#include "layers/schedule/exec.h" /* WT_SCHED_TAG_MSG_BITS */
#include "lib/util/dtype.h"
#include "lib/util/log.h"

#define WT_SCHED_ERR_LEN 256
#define WT_SCHED_ALGO_LEN 32

struct wt_sched_plan {
	wt_sched_args_t args;
	atomic_int refs;
	int finalized;
	weft_status_t err;
	char errmsg[WT_SCHED_ERR_LEN];
	char algo[WT_SCHED_ALGO_LEN];

	size_t elem; /* dtype size, 0 when args are bad */
	size_t send_bytes, recv_bytes;
	size_t scratch;

	wt_sched_step_t *steps;
	size_t nsteps, steps_cap;
	uint32_t *deps;
	size_t ndeps, deps_cap;
	uint32_t *succ_start; /* nsteps + 1 offsets into succ */
	uint32_t *succ;
	uint32_t *pending0; /* per step: ndeps; then the sources */
	wt_sched_plan_view_t view;
	_Atomic(void *) spare; /* an execution block for reuse (exec.c) */
	int last_fence;	       /* vertex id of the last fence, -1 if none */
	int uses_slots;	       /* a slot step was added */
	int slot_turn;	       /* the SLOT_FREE on our own rank, -1 until made */
	unsigned slot_part;    /* the part new slot steps belong to */
	unsigned slot_parts;   /* parts: the highest part of a slot step + 1 */
	int uses_peers;	       /* a peer step was added */
	size_t slot_extent;
};

const char *wt_sched_step_type_name(wt_sched_step_type_t type)
{
	static const char *const names[] = {"SEND",	    "RECV",	  "RECV_REDUCE",
					    "REDUCE",	    "COPY",	  "DIV",
					    "NOP",	    "NARROW",	  "WIDEN",
					    "REDUCE_WIDEN", "SLOT_FREE",  "SLOT_PUT",
					    "SLOT_WAIT",    "SLOT_COPY",  "SLOT_REDUCE",
					    "SLOT_DONE",    "PEER_READ",  "PEER_REDUCE",
					    "PEER_WRITE",   "SLOT_DRAIN", "PEER_REDUCE_OUT"};

	if ((unsigned)type >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[type];
}

const char *wt_sched_buf_name(wt_sched_buf_t buf)
{
	switch (buf) {
	case WT_SCHED_BUF_SEND:
		return "SEND";
	case WT_SCHED_BUF_RECV:
		return "RECV";
	case WT_SCHED_BUF_SCRATCH:
		return "SCRATCH";
	case WT_SCHED_BUF_SLOT:
		return "SLOT";
	default:
		return "?";
	}
}

/* The extent (in elements) a counts/displacements pair covers; SIZE_MAX on overflow. */
static size_t vector_extent(const size_t *counts, const size_t *displs, int n)
{
	size_t ext = 0;

	for (int i = 0; i < n; i++) {
		if (counts[i] > SIZE_MAX - displs[i])
			return SIZE_MAX;
		if (counts[i] > 0 && counts[i] + displs[i] > ext)
			ext = counts[i] + displs[i];
	}
	return ext;
}

static const char *vector_check(const wt_sched_args_t *a)
{
	size_t elem = wt_util_dtype_size(a->dtype);

	if (!a->sendcounts || !a->sdispls || !a->recvcounts || !a->rdispls)
		return "alltoallv without count or displacement vectors";
	if (vector_extent(a->sendcounts, a->sdispls, a->size) > SIZE_MAX / elem ||
	    vector_extent(a->recvcounts, a->rdispls, a->size) > SIZE_MAX / elem)
		return "alltoallv counts + displacements overflow";
	return NULL;
}

size_t wt_sched_args_buf_bytes(const wt_sched_args_t *a, wt_sched_buf_t buf)
{
	size_t es = wt_util_dtype_size(a->dtype);
	size_t one = a->count * es, all = one * (size_t)a->size;
	int root = a->rank == a->root, send = buf == WT_SCHED_BUF_SEND;

	if (buf != WT_SCHED_BUF_SEND && buf != WT_SCHED_BUF_RECV)
		return 0;
	switch (a->coll) {
	case WT_COLL_ALLREDUCE:
	case WT_COLL_BROADCAST:
		return one;
	case WT_COLL_ALLGATHER:
		return send ? one : all;
	case WT_COLL_REDUCE_SCATTER:
		return send ? all : one;
	case WT_COLL_REDUCE:
		return send || root ? one : 0;
	case WT_COLL_GATHER:
		return send ? one : root ? all : 0;
	case WT_COLL_SCATTER:
		return send ? (root ? all : 0) : one;
	case WT_COLL_ALLTOALL:
		return all;
	case WT_COLL_ALLTOALLV:
		if (send)
			return vector_extent(a->sendcounts, a->sdispls, a->size) * es;
		return vector_extent(a->recvcounts, a->rdispls, a->size) * es;
	case WT_COLL_SEND:
		return send ? one : 0;
	case WT_COLL_RECV:
		return send ? 0 : one;
	default:
		return 0;
	}
}

int wt_sched_compress_wire(const wt_sched_args_t *a, weft_dtype_t *wire)
{
	if (a->coll != WT_COLL_ALLREDUCE || a->dtype != WEFT_FLOAT32)
		return 0;
	switch (a->compress) {
	case WT_SCHED_COMPRESS_BF16:
		*wire = WEFT_BFLOAT16;
		return 1;
	case WT_SCHED_COMPRESS_FP16:
		*wire = WEFT_FLOAT16;
		return 1;
	default:
		return 0;
	}
}

static const char *const compress_names[] = {"none", "bf16", "fp16"};

const char *wt_sched_compress_name(int compress)
{
	if (compress < 0 || compress > WT_SCHED_COMPRESS_FP16)
		return "?";
	return compress_names[compress];
}

int wt_sched_compress_from_name(const char *name)
{
	for (int i = 0; name && i <= WT_SCHED_COMPRESS_FP16; i++)
		if (strcasecmp(name, compress_names[i]) == 0)
			return i;
	return -1;
}

weft_status_t wt_sched_args_check(const wt_sched_args_t *a, char *err, size_t errlen)
{
	const char *why = NULL;
	size_t elem = a ? wt_util_dtype_size(a->dtype) : 0;

	if (!a) {
		why = "no arguments";
	} else if ((unsigned)a->coll >= WT_COLL_COUNT_) {
		why = "unknown collective";
	} else if (!wt_util_dtype_valid(a->dtype) || !elem) {
		why = "unknown dtype";
	} else if (!wt_util_op_valid(a->op)) {
		why = "unknown reduction op";
	} else if (a->size < 1) {
		why = "communicator size below 1";
	} else if (a->rank < 0 || a->rank >= a->size) {
		why = "rank outside the communicator";
	} else if (a->root < 0 || a->root >= a->size) {
		why = "root outside the communicator";
	} else if (a->compress < WT_SCHED_COMPRESS_NONE || a->compress > WT_SCHED_COMPRESS_FP16) {
		why = "unknown compression";
	} else if (a->count > SIZE_MAX / elem / (size_t)a->size) {
		why = "count * dtype size * ranks overflows";
	} else if ((a->coll == WT_COLL_SEND || a->coll == WT_COLL_RECV) &&
		   (a->peer < 0 || a->peer >= a->size || a->peer == a->rank)) {
		why = "peer outside the communicator or equal to the rank";
	} else if (a->coll == WT_COLL_ALLTOALLV) {
		why = vector_check(a);
	}
	if (!why)
		return WEFT_OK;
	if (err && errlen)
		snprintf(err, errlen, "schedule args: %s", why);
	return WEFT_ERR_INVALID_ARG;
}

wt_sched_plan_t *wt_sched_plan_new(const wt_sched_args_t *args)
{
	wt_sched_plan_t *p;
	char why[128];

	if (!args)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->args = *args;
	atomic_init(&p->refs, 1);
	atomic_init(&p->spare, NULL);
	p->last_fence = -1;
	p->slot_turn = -1;
	if (wt_sched_args_check(args, why, sizeof(why)) != WEFT_OK) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "%s", why);
		return p;
	}
	p->elem = wt_util_dtype_size(args->dtype);
	p->send_bytes = wt_sched_args_buf_bytes(args, WT_SCHED_BUF_SEND);
	p->recv_bytes = wt_sched_args_buf_bytes(args, WT_SCHED_BUF_RECV);
	return p;
}

const wt_sched_args_t *wt_sched_plan_args(const wt_sched_plan_t *p)
{
	return &p->args;
}

void wt_sched_fail(wt_sched_plan_t *p, weft_status_t st, const char *fmt, ...)
{
	va_list ap;

	if (!p || p->finalized || p->err)
		return;
	p->err = wt_util_is_err(st) ? st : WEFT_ERR_INVALID_ARG;
	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
}

static int plan_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -1;
		ncap *= 2;
	}
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -1;
	*arr = n;
	*cap = ncap;
	return 0;
}

/* Appends a step; all builder calls go through here so checks live in one place. */
static int plan_add(wt_sched_plan_t *p, const wt_sched_step_t *tmpl, int ndeps, const int *deps)
{
	size_t id;
	wt_sched_step_t *s;

	if (!p)
		return -1;
	if (p->finalized) {
		WT_ERROR("schedule: step added to a finalized plan (%s)", p->algo);
		return -1;
	}
	if (p->err)
		return -1;
	id = p->nsteps;
	if (id >= INT32_MAX || p->ndeps + (size_t)(ndeps > 0 ? ndeps : 0) >= UINT32_MAX) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "plan too large (%zu steps)", id);
		return -1;
	}
	if (ndeps < 0 || (ndeps > 0 && !deps)) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: bad dependency list (%d)", id,
			      ndeps);
		return -1;
	}
	for (int i = 0; i < ndeps; i++) {
		if (deps[i] < 0 || (size_t)deps[i] >= id) {
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
				      "step %zu: dependency %d is not an earlier step", id,
				      deps[i]);
			return -1;
		}
	}
	if (plan_grow((void **)&p->steps, &p->steps_cap, id + 1, sizeof(*p->steps)) ||
	    plan_grow((void **)&p->deps, &p->deps_cap, p->ndeps + (size_t)ndeps,
		      sizeof(*p->deps))) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory at step %zu", id);
		return -1;
	}
	s = &p->steps[id];
	*s = *tmpl;
	s->dep_start = (uint32_t)p->ndeps;
	s->ndeps = (uint32_t)ndeps;
	for (int i = 0; i < ndeps; i++)
		p->deps[p->ndeps++] = (uint32_t)deps[i];
	p->nsteps++;
	return (int)id;
}

static int plan_add_net(wt_sched_plan_t *p, wt_sched_step_type_t type, int peer, wt_sched_buf_t buf,
			size_t off, size_t len, int ndeps, const int *deps)
{
	wt_sched_step_t s = {0};

	s.type = (uint8_t)type;
	s.buf = (uint8_t)buf;
	s.src_buf = (uint8_t)buf;
	s.peer = peer;
	s.off = off;
	s.src_off = off;
	s.len = len;
	return plan_add(p, &s, ndeps, deps);
}

static int plan_add_local(wt_sched_plan_t *p, wt_sched_step_type_t type, wt_sched_buf_t dst,
			  size_t dst_off, wt_sched_buf_t src, size_t src_off, size_t len, int ndeps,
			  const int *deps)
{
	wt_sched_step_t s = {0};

	s.type = (uint8_t)type;
	s.buf = (uint8_t)dst;
	s.src_buf = (uint8_t)src;
	s.peer = -1;
	s.off = dst_off;
	s.src_off = src_off;
	s.len = len;
	return plan_add(p, &s, ndeps, deps);
}

/* Marks step id (when it was added) with a hint for the executor (the step's wire field:
 * WT_SCHED_COPY_STREAM, WT_SCHED_PEER_FROM_SEND). */
static int with_hint(wt_sched_plan_t *p, int id, unsigned hint)
{
	if (id >= 0)
		p->steps[id].wire = (uint8_t)hint;
	return id;
}

int wt_sched_send(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		  int ndeps, const int *deps)
{
	return plan_add_net(p, WT_SCHED_SEND, peer, buf, off, len, ndeps, deps);
}

int wt_sched_send_copy(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		       wt_sched_buf_t dst, size_t dst_off, int stream, int ndeps, const int *deps)
{
	int id = plan_add_net(p, WT_SCHED_SEND, peer, buf, off, len, ndeps, deps);

	if (id >= 0) {
		p->steps[id].src_buf = (uint8_t)dst;
		p->steps[id].src_off = dst_off;
	}
	return with_hint(p, id, WT_SCHED_SEND_COPY | (stream ? WT_SCHED_COPY_STREAM : 0));
}

int wt_sched_recv(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		  int ndeps, const int *deps)
{
	return plan_add_net(p, WT_SCHED_RECV, peer, buf, off, len, ndeps, deps);
}

int wt_sched_recv_stream(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
			 int ndeps, const int *deps)
{
	return with_hint(p, wt_sched_recv(p, peer, buf, off, len, ndeps, deps),
			 WT_SCHED_COPY_STREAM);
}

int wt_sched_recv_reduce(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
			 int ndeps, const int *deps)
{
	return plan_add_net(p, WT_SCHED_RECV_REDUCE, peer, buf, off, len, ndeps, deps);
}

int wt_sched_recv_reduce_from(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off,
			      wt_sched_buf_t src_buf, size_t src_off, size_t len, int ndeps,
			      const int *deps)
{
	int id = wt_sched_recv_reduce(p, peer, buf, off, len, ndeps, deps);

	if (id >= 0) {
		p->steps[id].src_buf = (uint8_t)src_buf;
		p->steps[id].src_off = src_off;
	}
	return with_hint(p, id, WT_SCHED_RECV_FROM_SRC);
}

int wt_sched_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		    size_t src_off, size_t len, int ndeps, const int *deps)
{
	return plan_add_local(p, WT_SCHED_REDUCE, dst, dst_off, src, src_off, len, ndeps, deps);
}

int wt_sched_copy(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		  size_t src_off, size_t len, int ndeps, const int *deps)
{
	return plan_add_local(p, WT_SCHED_COPY, dst, dst_off, src, src_off, len, ndeps, deps);
}

int wt_sched_copy_stream(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
			 size_t src_off, size_t len, int ndeps, const int *deps)
{
	return with_hint(p, wt_sched_copy(p, dst, dst_off, src, src_off, len, ndeps, deps),
			 WT_SCHED_COPY_STREAM);
}

static int plan_add_conv(wt_sched_plan_t *p, wt_sched_step_type_t type, wt_sched_buf_t dst,
			 size_t dst_off, wt_sched_buf_t src, size_t src_off, size_t len,
			 weft_dtype_t wire, int ndeps, const int *deps)
{
	wt_sched_step_t s = {0};

	s.type = (uint8_t)type;
	s.buf = (uint8_t)dst;
	s.src_buf = (uint8_t)src;
	/* Out-of-range formats are kept visibly wrong for finalize to name. */
	s.wire = (unsigned)wire <= UINT8_MAX ? (uint8_t)wire : UINT8_MAX;
	s.peer = -1;
	s.off = dst_off;
	s.src_off = src_off;
	s.len = len;
	return plan_add(p, &s, ndeps, deps);
}

int wt_sched_narrow(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		    size_t src_off, size_t len, weft_dtype_t wire, int ndeps, const int *deps)
{
	return plan_add_conv(p, WT_SCHED_NARROW, dst, dst_off, src, src_off, len, wire, ndeps,
			     deps);
}

int wt_sched_widen(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		   size_t src_off, size_t len, weft_dtype_t wire, int ndeps, const int *deps)
{
	return plan_add_conv(p, WT_SCHED_WIDEN, dst, dst_off, src, src_off, len, wire, ndeps, deps);
}

int wt_sched_reduce_widen(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off,
			  wt_sched_buf_t src, size_t src_off, size_t len, weft_dtype_t wire,
			  int ndeps, const int *deps)
{
	return plan_add_conv(p, WT_SCHED_REDUCE_WIDEN, dst, dst_off, src, src_off, len, wire, ndeps,
			     deps);
}

int wt_sched_div(wt_sched_plan_t *p, wt_sched_buf_t buf, size_t off, size_t len, int ndeps,
		 const int *deps)
{
	return plan_add_local(p, WT_SCHED_DIV, buf, off, buf, off, len, ndeps, deps);
}

/* ---- shared slots ---- */

static int slot_step(wt_sched_plan_t *p, wt_sched_step_type_t type, int peer, wt_sched_buf_t dst,
		     size_t dst_off, wt_sched_buf_t src, size_t src_off, size_t len, int ndeps,
		     const int *deps)
{
	wt_sched_step_t s = {0};
	int id;

	s.type = (uint8_t)type;
	s.buf = (uint8_t)dst;
	s.src_buf = (uint8_t)src;
	s.peer = peer;
	s.part = p ? p->slot_part : 0;
	s.off = dst_off;
	s.src_off = src_off;
	s.len = len;
	id = plan_add(p, &s, ndeps, deps);
	if (id >= 0) {
		p->uses_slots = 1;
		if (p->slot_parts < p->slot_part + 1)
			p->slot_parts = p->slot_part + 1;
	}
	return id;
}

void wt_sched_slot_part(wt_sched_plan_t *p, unsigned part)
{
	if (!p || p->err || p->finalized)
		return;
	if (part < p->slot_part) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "slot part %u after part %u (parts go up)",
			      part, p->slot_part);
		return;
	}
	if (part != p->slot_part)
		p->slot_turn = -1; /* each part waits for its own turn */
	p->slot_part = part;
}

static int slot_free_step(wt_sched_plan_t *p, int peer)
{
	return slot_step(p, WT_SCHED_SLOT_FREE, peer, WT_SCHED_BUF_SLOT, 0, WT_SCHED_BUF_SLOT, 0, 0,
			 0, NULL);
}

/* Our turn: the SLOT_FREE on our own rank (our previous slot call released), made once. */
static int slot_turn(wt_sched_plan_t *p)
{
	if (p->slot_turn < 0)
		p->slot_turn = slot_free_step(p, p->args.rank);
	return p->slot_turn;
}

int wt_sched_slot_put(wt_sched_plan_t *p, wt_sched_buf_t src, size_t src_off, size_t slot_off,
		      size_t len, int ndeps, const int *deps)
{
	int n, *all, k = 0, id;

	if (!p || p->err || p->finalized)
		return slot_step(p, WT_SCHED_SLOT_PUT, -1, WT_SCHED_BUF_SLOT, slot_off, src,
				 src_off, len, ndeps, deps);
	if (ndeps < 0 || (ndeps > 0 && !deps)) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "slot put: bad dependency list (%d)", ndeps);
		return -1;
	}
	n = p->args.size;
	all = malloc(((size_t)n + (size_t)ndeps) * sizeof(*all));
	if (!all) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory for a slot put");
		return -1;
	}
	all[k++] = slot_turn(p);
	for (int i = 1; i < n && all[k - 1] >= 0; i++)
		all[k++] = slot_free_step(p, (p->args.rank + i) % n);
	if (all[k - 1] < 0) {
		free(all);
		return -1;
	}
	for (int i = 0; i < ndeps; i++)
		all[k++] = deps[i];
	id = slot_step(p, WT_SCHED_SLOT_PUT, -1, WT_SCHED_BUF_SLOT, slot_off, src, src_off, len, k,
		       all);
	free(all);
	return id;
}

int wt_sched_slot_wait(wt_sched_plan_t *p, int peer, int ndeps, const int *deps)
{
	return slot_step(p, WT_SCHED_SLOT_WAIT, peer, WT_SCHED_BUF_SLOT, 0, WT_SCHED_BUF_SLOT, 0, 0,
			 ndeps, deps);
}

int wt_sched_slot_copy(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
		       size_t slot_off, size_t len, int ndeps, const int *deps)
{
	return slot_step(p, WT_SCHED_SLOT_COPY, peer, dst, dst_off, WT_SCHED_BUF_SLOT, slot_off,
			 len, ndeps, deps);
}

int wt_sched_slot_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			 size_t slot_off, size_t len, int ndeps, const int *deps)
{
	return slot_step(p, WT_SCHED_SLOT_REDUCE, peer, dst, dst_off, WT_SCHED_BUF_SLOT, slot_off,
			 len, ndeps, deps);
}

static int step_reads_slot(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_SLOT_COPY || s->type == WT_SCHED_SLOT_REDUCE;
}

static int step_is_peer(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_PEER_READ || s->type == WT_SCHED_PEER_REDUCE ||
	       s->type == WT_SCHED_PEER_WRITE || s->type == WT_SCHED_PEER_REDUCE_OUT;
}

static int peer_step(wt_sched_plan_t *p, wt_sched_step_type_t type, int peer, wt_sched_buf_t dst,
		     size_t dst_off, wt_sched_buf_t src, size_t src_off, size_t len, int ndeps,
		     const int *deps)
{
	int id = slot_step(p, type, peer, dst, dst_off, src, src_off, len, ndeps, deps);

	if (id >= 0)
		p->uses_peers = 1;
	return id;
}

int wt_sched_peer_read(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
		       wt_sched_buf_t peer_buf, size_t peer_off, size_t len, int ndeps,
		       const int *deps)
{
	return peer_step(p, WT_SCHED_PEER_READ, peer, dst, dst_off, peer_buf, peer_off, len, ndeps,
			 deps);
}

int wt_sched_peer_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			 wt_sched_buf_t peer_buf, size_t peer_off, size_t len, int ndeps,
			 const int *deps)
{
	return peer_step(p, WT_SCHED_PEER_REDUCE, peer, dst, dst_off, peer_buf, peer_off, len,
			 ndeps, deps);
}

int wt_sched_peer_write(wt_sched_plan_t *p, int peer, size_t peer_off, wt_sched_buf_t src,
			size_t src_off, size_t len, int ndeps, const int *deps)
{
	return peer_step(p, WT_SCHED_PEER_WRITE, peer, WT_SCHED_BUF_RECV, peer_off, src, src_off,
			 len, ndeps, deps);
}

int wt_sched_peer_reduce_send(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			      size_t peer_off, size_t len, int ndeps, const int *deps)
{
	return with_hint(p,
			 wt_sched_peer_reduce(p, dst, dst_off, peer, WT_SCHED_BUF_SEND, peer_off,
					      len, ndeps, deps),
			 WT_SCHED_PEER_FROM_SEND);
}

int wt_sched_peer_write_stream(wt_sched_plan_t *p, int peer, size_t peer_off, wt_sched_buf_t src,
			       size_t src_off, size_t len, int ndeps, const int *deps)
{
	return with_hint(p, wt_sched_peer_write(p, peer, peer_off, src, src_off, len, ndeps, deps),
			 WT_SCHED_COPY_STREAM);
}

int wt_sched_peer_reduce_out(wt_sched_plan_t *p, int peer, size_t off, wt_sched_buf_t src,
			     size_t src_off, size_t len, int stream, int ndeps, const int *deps)
{
	int id = peer_step(p, WT_SCHED_PEER_REDUCE_OUT, peer, WT_SCHED_BUF_RECV, off, src, src_off,
			   len, ndeps, deps);

	return stream ? with_hint(p, id, WT_SCHED_COPY_STREAM) : id;
}

int wt_sched_slot_put_bufs(wt_sched_plan_t *p, int ndeps, const int *deps)
{
	int id = wt_sched_slot_put(p, WT_SCHED_BUF_RECV, 0, 0, 0, ndeps, deps);

	if (id >= 0)
		p->uses_peers = 1;
	return id;
}

int wt_sched_slot_drain(wt_sched_plan_t *p, int peer, int ndeps, const int *deps)
{
	return slot_step(p, WT_SCHED_SLOT_DRAIN, peer, WT_SCHED_BUF_SLOT, 0, WT_SCHED_BUF_SLOT, 0,
			 0, ndeps, deps);
}

/* After every read, our PUT and our turn: a rank's releases (and so its PUTs) happen in
 * call order even when several calls are in flight. */
int wt_sched_slot_done(wt_sched_plan_t *p)
{
	int *deps = NULL, n = 0, id;

	if (p && !p->err && !p->finalized) {
		int turn = slot_turn(p);

		if (turn < 0)
			return -1;
		deps = malloc((p->nsteps + 1) * sizeof(*deps));
		if (!deps) {
			wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory for a slot release");
			return -1;
		}
		deps[n++] = turn;
		/* the waits, the reads and the PUT of this part (slot call) of the plan: a
		 * release before a wait is met (a barrier reads nothing) would let the peer
		 * publish a call WT_SCHED_SLOT_DEPTH later into the slot we have yet to see,
		 * which a broadcast root running ahead of its readers does */
		for (size_t i = 0; i < p->nsteps; i++)
			if ((step_reads_slot(&p->steps[i]) || step_is_peer(&p->steps[i]) ||
			     p->steps[i].type == WT_SCHED_SLOT_PUT ||
			     p->steps[i].type == WT_SCHED_SLOT_WAIT) &&
			    p->steps[i].part == p->slot_part)
				deps[n++] = (int)i;
	}
	id = slot_step(p, WT_SCHED_SLOT_DONE, -1, WT_SCHED_BUF_SLOT, 0, WT_SCHED_BUF_SLOT, 0, 0, n,
		       deps);
	free(deps);
	return id;
}

int wt_sched_plan_uses_slots(const wt_sched_plan_t *p)
{
	return p && p->uses_slots;
}

size_t wt_sched_plan_slot_extent(const wt_sched_plan_t *p)
{
	return p ? p->slot_extent : 0;
}

/* Depending on the previous fence plus everything after it waits for every step so far
 * (transitively) without an edge per earlier step. */
int wt_sched_fence(wt_sched_plan_t *p)
{
	size_t first, n;
	int *deps, id;

	if (!p || p->err || p->finalized)
		return plan_add_local(p, WT_SCHED_NOP, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_RECV, 0,
				      0, 0, NULL);
	first = p->last_fence < 0 ? 0 : (size_t)p->last_fence;
	n = p->nsteps - first;
	deps = n ? malloc(n * sizeof(*deps)) : NULL;
	if (n && !deps) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory for a fence");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		deps[i] = (int)(first + i);
	id = plan_add_local(p, WT_SCHED_NOP, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_RECV, 0, 0, (int)n,
			    deps);
	free(deps);
	if (id >= 0)
		p->last_fence = id;
	return id;
}

void wt_sched_scratch(wt_sched_plan_t *p, size_t bytes)
{
	if (!p || p->finalized)
		return;
	if (bytes > p->scratch)
		p->scratch = bytes;
}

size_t wt_sched_plan_buf_bytes(const wt_sched_plan_t *p, wt_sched_buf_t buf)
{
	switch (buf) {
	case WT_SCHED_BUF_SEND:
		return p->send_bytes;
	case WT_SCHED_BUF_RECV:
		return p->recv_bytes;
	case WT_SCHED_BUF_SCRATCH:
		return p->scratch;
	case WT_SCHED_BUF_SLOT:
		return p->args.slot_bytes;
	default:
		return 0;
	}
}

/* ---- finalize ---- */

static int range_ok(size_t off, size_t len, size_t size)
{
	return off <= size && len <= size - off;
}

static int step_is_conv(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_NARROW || s->type == WT_SCHED_WIDEN ||
	       s->type == WT_SCHED_REDUCE_WIDEN;
}

/* Conversion steps between the plan's dtype (elem bytes) and a 16-bit format. */
static size_t conv_src_len(const wt_sched_step_t *s, size_t elem)
{
	if (!elem)
		return 0;
	if (s->type == WT_SCHED_NARROW)
		return s->len / 2 * elem;
	return s->len / elem * 2;
}

size_t wt_sched_step_src_len(const wt_sched_plan_t *p, const wt_sched_step_t *s)
{
	switch (s->type) {
	case WT_SCHED_SEND:
	case WT_SCHED_REDUCE:
	case WT_SCHED_COPY:
	case WT_SCHED_SLOT_PUT:
	case WT_SCHED_SLOT_COPY:
	case WT_SCHED_SLOT_REDUCE:
	case WT_SCHED_PEER_READ:
	case WT_SCHED_PEER_REDUCE:
	case WT_SCHED_PEER_WRITE:
	case WT_SCHED_PEER_REDUCE_OUT:
		return s->len;
	case WT_SCHED_NARROW:
	case WT_SCHED_WIDEN:
	case WT_SCHED_REDUCE_WIDEN:
		return conv_src_len(s, p->elem);
	case WT_SCHED_RECV_REDUCE:
		return s->wire == WT_SCHED_RECV_FROM_SRC ? s->len : 0;
	default:
		return 0;
	}
}

static int step_reads(const wt_sched_plan_t *p, const wt_sched_step_t *s, wt_sched_buf_t *buf,
		      size_t *off, size_t *len)
{
	switch (s->type) {
	case WT_SCHED_SEND:
		*buf = s->buf;
		*off = s->off;
		*len = s->len;
		return 1;
	case WT_SCHED_REDUCE:
	case WT_SCHED_COPY:
	case WT_SCHED_NARROW:
	case WT_SCHED_WIDEN:
	case WT_SCHED_REDUCE_WIDEN:
	case WT_SCHED_SLOT_PUT:
	case WT_SCHED_SLOT_COPY:
	case WT_SCHED_SLOT_REDUCE:
	case WT_SCHED_PEER_READ: /* the peer's range, checked against ours of that name */
	case WT_SCHED_PEER_REDUCE:
	case WT_SCHED_PEER_WRITE:
	case WT_SCHED_PEER_REDUCE_OUT: /* ours; the peer's SEND is checked in check_step */
		*buf = s->src_buf;
		*off = s->src_off;
		*len = wt_sched_step_src_len(p, s);
		return 1;
	case WT_SCHED_RECV_REDUCE:
		*buf = s->src_buf;
		*off = s->src_off;
		*len = wt_sched_step_src_len(p, s);
		return s->wire == WT_SCHED_RECV_FROM_SRC;
	default:
		return 0;
	}
}

static int step_is_slot(const wt_sched_step_t *s)
{
	return s->type >= WT_SCHED_SLOT_FREE && s->type <= WT_SCHED_PEER_REDUCE_OUT;
}

/* Slot steps that wait for a peer's word. */
static int is_wait(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_SLOT_FREE || s->type == WT_SCHED_SLOT_WAIT ||
	       s->type == WT_SCHED_SLOT_DRAIN;
}

/* Slot steps that only wait or signal: no buffer range at all. */
static int step_is_slot_sync(const wt_sched_step_t *s)
{
	return is_wait(s) || s->type == WT_SCHED_SLOT_DONE;
}

/* Writes its destination range (a PEER_WRITE's is the peer's, checked like ours). */
static int step_writes(const wt_sched_step_t *s)
{
	return s->type != WT_SCHED_SEND && s->type != WT_SCHED_NOP && !step_is_slot_sync(s);
}

static int step_is_net(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_SEND || s->type == WT_SCHED_RECV ||
	       s->type == WT_SCHED_RECV_REDUCE;
}

static int step_needs_elems(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_RECV_REDUCE || s->type == WT_SCHED_REDUCE ||
	       s->type == WT_SCHED_DIV || s->type == WT_SCHED_SLOT_REDUCE ||
	       s->type == WT_SCHED_PEER_REDUCE || s->type == WT_SCHED_PEER_REDUCE_OUT;
}

static weft_status_t check_buf(wt_sched_plan_t *p, size_t i, const char *what, unsigned buf,
			       size_t off, size_t len)
{
	if (buf > WT_SCHED_BUF_SLOT) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: unknown %s buffer %u", i, what,
			      buf);
		return p->err;
	}
	if (!range_ok(off, len, wt_sched_plan_buf_bytes(p, (wt_sched_buf_t)buf))) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s range %s[%zu+%zu] exceeds %zu bytes", i, what,
			      wt_sched_buf_name((wt_sched_buf_t)buf), off, len,
			      wt_sched_plan_buf_bytes(p, (wt_sched_buf_t)buf));
		return p->err;
	}
	return WEFT_OK;
}

/* Only float32 <-> fp16 / bf16 has kernels; whole elements on both sides, and the two
 * ranges (of different sizes) may not overlap at all. */
static weft_status_t check_conv(wt_sched_plan_t *p, size_t i)
{
	const wt_sched_step_t *s = &p->steps[i];
	size_t dst_es = s->type == WT_SCHED_NARROW ? 2 : p->elem, slen = conv_src_len(s, p->elem);
	const char *name = wt_sched_step_type_name(s->type);

	if (p->args.dtype != WEFT_FLOAT32) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: %s in a %s plan (float32 only)",
			      i, name, wt_util_dtype_name(p->args.dtype));
		return p->err;
	}
	if (s->wire != WEFT_FLOAT16 && s->wire != WEFT_BFLOAT16) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s with wire format %u (not float16 or bfloat16)", i, name,
			      s->wire);
		return p->err;
	}
	if (s->len % dst_es) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s of %zu bytes is not whole elements", i, name, s->len);
		return p->err;
	}
	if (s->buf == s->src_buf && s->len && slen && s->off < s->src_off + slen &&
	    s->src_off < s->off + s->len) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: %s operands overlap", i, name);
		return p->err;
	}
	return WEFT_OK;
}

/* Where slot steps may point: only PUT writes a slot (ours), only SLOT_COPY / SLOT_REDUCE
 * read one (their peer's), waits name another rank, and everything needs slots. */
static weft_status_t check_slot_step(wt_sched_plan_t *p, size_t i)
{
	const wt_sched_step_t *s = &p->steps[i];
	const char *name = wt_sched_step_type_name(s->type);
	int slot = step_is_slot(s), n = p->args.size, peer = s->peer;
	const char *why = NULL;

	if (!slot) {
		if (s->buf == WT_SCHED_BUF_SLOT || s->src_buf == WT_SCHED_BUF_SLOT)
			why = "names the SLOT buffer, which only slot steps may";
	} else if (p->args.slot_bytes == 0) {
		why = "the plan has no shared slots (args.slot_bytes is 0)";
	} else if (is_wait(s) && (peer < 0 || peer >= n ||
				  (peer == p->args.rank && s->type != WT_SCHED_SLOT_FREE))) {
		why = "waits on a bad peer";
	} else if (step_is_peer(s) && (peer < 0 || peer >= n || peer == p->args.rank)) {
		why = "names the buffers of a bad peer (not another rank of the communicator)";
	} else if ((s->type == WT_SCHED_PEER_READ || s->type == WT_SCHED_PEER_REDUCE) &&
		   (s->src_buf > WT_SCHED_BUF_RECV || s->buf == WT_SCHED_BUF_SLOT)) {
		why = "must read a peer's SEND or RECV into a plan buffer";
	} else if ((s->type == WT_SCHED_PEER_WRITE || s->type == WT_SCHED_PEER_REDUCE_OUT) &&
		   (s->buf != WT_SCHED_BUF_RECV || s->src_buf == WT_SCHED_BUF_SLOT)) {
		why = "must write a plan buffer into a peer's RECV";
	} else if (s->type == WT_SCHED_PEER_REDUCE_OUT && s->src_buf == WT_SCHED_BUF_RECV &&
		   s->len && s->src_off < s->off + s->len && s->off < s->src_off + s->len) {
		why = "reads its left operand from the RECV range it writes";
	} else if (step_reads_slot(s) && (peer < 0 || peer >= n)) {
		why = "reads the slot of a rank outside the communicator";
	} else if (step_reads_slot(s) && peer == p->args.rank) {
		/* Only the peers' releases guard a slot: a later call of ours may be writing it. */
		why = "reads our own slot (take our contribution from the plan's buffers)";
	} else if (step_reads_slot(s) &&
		   (s->src_buf != WT_SCHED_BUF_SLOT || s->buf == WT_SCHED_BUF_SLOT)) {
		why = "must read a slot into a plan buffer";
	} else if (s->type == WT_SCHED_SLOT_PUT &&
		   (s->buf != WT_SCHED_BUF_SLOT || s->src_buf == WT_SCHED_BUF_SLOT)) {
		why = "must copy a plan buffer into our slot";
	}
	if (!why)
		return WEFT_OK;
	wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: %s %s (peer %d, rank %d of %d)", i, name,
		      why, peer, p->args.rank, n);
	return p->err;
}

static weft_status_t check_step(wt_sched_plan_t *p, size_t i)
{
	const wt_sched_step_t *s = &p->steps[i];
	wt_sched_buf_t rb;
	size_t roff, rlen;

	if (s->type > WT_SCHED_PEER_REDUCE_OUT) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: unknown type %u", i, s->type);
		return p->err;
	}
	if (s->type == WT_SCHED_NOP)
		return WEFT_OK;
	if (check_slot_step(p, i))
		return p->err;
	if (step_is_slot_sync(s))
		return WEFT_OK;
	if (step_is_net(s) && (s->peer < 0 || s->peer >= p->args.size || s->peer == p->args.rank)) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG, "step %zu: %s with bad peer %d (rank %d of %d)", i,
		    wt_sched_step_type_name(s->type), (int)s->peer, p->args.rank, p->args.size);
		return p->err;
	}
	if (step_needs_elems(s) && s->len % p->elem) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s of %zu bytes is not whole elements", i,
			      wt_sched_step_type_name(s->type), s->len);
		return p->err;
	}
	if (step_writes(s)) {
		if (s->buf == WT_SCHED_BUF_SEND) {
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
				      "step %zu: %s writes the SEND buffer", i,
				      wt_sched_step_type_name(s->type));
			return p->err;
		}
		if (check_buf(p, i, "destination", s->buf, s->off, s->len))
			return p->err;
	}
	if (step_is_conv(s) && check_conv(p, i))
		return p->err;
	if ((s->type == WT_SCHED_COPY || s->type == WT_SCHED_PEER_WRITE ||
	     s->type == WT_SCHED_PEER_REDUCE_OUT || s->type == WT_SCHED_RECV) &&
	    s->wire != 0 && s->wire != WT_SCHED_COPY_STREAM) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: %s with hint %u", i,
			      wt_sched_step_type_name(s->type), s->wire);
		return p->err;
	}
	if (s->type == WT_SCHED_SEND && s->wire != 0) {
		/* the copy's destination: another buffer than SEND, apart from the source */
		if ((s->wire & ~(unsigned)WT_SCHED_COPY_STREAM) != WT_SCHED_SEND_COPY ||
		    s->src_buf == WT_SCHED_BUF_SEND || s->src_buf == WT_SCHED_BUF_SLOT ||
		    (s->src_buf == s->buf && s->src_off < s->off + s->len &&
		     s->off < s->src_off + s->len)) {
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
				      "step %zu: SEND with hint %u (a copy goes to RECV or "
				      "SCRATCH, apart from the bytes sent)",
				      i, s->wire);
			return p->err;
		}
		if (check_buf(p, i, "copy destination", s->src_buf, s->src_off, s->len))
			return p->err;
	}
	if (s->type == WT_SCHED_RECV_REDUCE && s->wire != 0 &&
	    (s->wire != WT_SCHED_RECV_FROM_SRC || s->src_buf == s->buf ||
	     s->src_buf == WT_SCHED_BUF_SLOT)) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: RECV_REDUCE with hint %u (from a source needs another "
			      "buffer than its destination, not SLOT)",
			      i, s->wire);
		return p->err;
	}
	/* Our own SEND is read at the peer's offset: the same range of a buffer of the same
	 * size, which the peer-range check below covers. */
	if (s->type == WT_SCHED_PEER_REDUCE && s->wire != 0 &&
	    (s->wire != WT_SCHED_PEER_FROM_SEND || s->src_buf != WT_SCHED_BUF_SEND)) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG,
		    "step %zu: PEER_REDUCE with hint %u (from SEND needs the peer's SEND)", i,
		    s->wire);
		return p->err;
	}
	if (step_reads(p, s, &rb, &roff, &rlen) && check_buf(p, i, "source", rb, roff, rlen))
		return p->err;
	/* The right operand: the peer's SEND at the destination's offset. */
	if (s->type == WT_SCHED_PEER_REDUCE_OUT &&
	    check_buf(p, i, "peer source", WT_SCHED_BUF_SEND, s->off, s->len))
		return p->err;
	/* The reduction kernel takes equal or disjoint operands only. */
	if (s->type == WT_SCHED_REDUCE && s->buf == s->src_buf && s->off != s->src_off &&
	    s->off < s->src_off + s->len && s->src_off < s->off + s->len) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: REDUCE operands partly overlap",
			      i);
		return p->err;
	}
	return WEFT_OK;
}

static weft_status_t number_messages(wt_sched_plan_t *p)
{
	uint32_t *nsend = calloc((size_t)p->args.size * 2, sizeof(*nsend)), *nrecv;
	const uint32_t limit = (uint32_t)1 << WT_SCHED_TAG_MSG_BITS;

	if (!nsend) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory numbering messages");
		return p->err;
	}
	nrecv = nsend + p->args.size;
	for (size_t i = 0; i < p->nsteps; i++) {
		wt_sched_step_t *s = &p->steps[i];
		uint32_t *ctr;

		if (!step_is_net(s))
			continue;
		ctr = s->type == WT_SCHED_SEND ? &nsend[s->peer] : &nrecv[s->peer];
		if (*ctr >= limit) {
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
				      "step %zu: more than %u messages with peer %d", i, limit,
				      (int)s->peer);
			break;
		}
		s->msg = (*ctr)++;
	}
	free(nsend);
	return p->err;
}

/* See wt_sched_plan_view_t.in_order; plans of up to 64 steps (ancestors as bit masks). */
static int plan_in_order(const wt_sched_plan_t *p)
{
	uint64_t anc[64], waits = 0;

	if (p->nsteps > 64)
		return 0;
	for (size_t i = 0; i < p->nsteps; i++) {
		const wt_sched_step_t *s = &p->steps[i];

		if (s->type == WT_SCHED_SEND || s->type == WT_SCHED_RECV ||
		    s->type == WT_SCHED_RECV_REDUCE)
			return 0;
		anc[i] = 0;
		for (uint32_t k = 0; k < s->ndeps; k++) {
			uint32_t d = p->deps[s->dep_start + k];

			anc[i] |= anc[d] | (UINT64_C(1) << d);
		}
		if ((s->type == WT_SCHED_SLOT_PUT || s->type == WT_SCHED_SLOT_DONE) &&
		    (waits & ~anc[i]) != 0)
			return 0;
		if (is_wait(s))
			waits |= UINT64_C(1) << i;
	}
	return 1;
}

/* See wt_sched_plan_view_t.slot_ring: from a bound every rank computes alike, above what any
 * slot plan of these args publishes or reads on any rank. */
static int plan_slot_ring(const wt_sched_plan_t *p)
{
	size_t bytes;

	if (!p->uses_slots || __builtin_mul_overflow(p->args.count, p->elem, &bytes) ||
	    __builtin_mul_overflow(bytes, (size_t)(p->args.size > 0 ? p->args.size : 1), &bytes))
		return WT_SCHED_RING_LARGE;
	if (bytes <= WT_SCHED_SLOT_TINY_CAP && p->args.size >= WT_SCHED_SLOT_TINY_RANKS)
		return WT_SCHED_RING_TINY;
	return bytes <= WT_SCHED_SLOT_SMALL_CAP ? WT_SCHED_RING_SMALL : WT_SCHED_RING_LARGE;
}

/* Numbers the finalized plans of the process (wt_sched_plan_view_t.serial). */
static _Atomic uint64_t plan_serials;

/* See wt_sched_plan_view_t.slot_sig. */
static uint64_t plan_slot_sig(const wt_sched_plan_t *p)
{
	uint8_t h = 0x5a;

	for (const char *c = p->algo; *c; c++)
		h = (uint8_t)(h * 31u + (uint8_t)*c);
	return (uint64_t)(p->args.coll & 0xff) | (uint64_t)h << WT_SCHED_SIG_ALGO_SHIFT |
	       (uint64_t)(p->args.dtype & 0xff) << WT_SCHED_SIG_DTYPE_SHIFT |
	       (uint64_t)(p->args.op & 0xff) << WT_SCHED_SIG_OP_SHIFT |
	       (uint64_t)(uint32_t)p->args.root << WT_SCHED_SIG_ROOT_SHIFT;
}

static weft_status_t build_successors(wt_sched_plan_t *p)
{
	uint32_t *fill;

	size_t nsrc = 0;

	p->succ_start = calloc(p->nsteps + 1, sizeof(*p->succ_start));
	p->succ = malloc((p->ndeps ? p->ndeps : 1) * sizeof(*p->succ));
	p->pending0 = malloc((2 * p->nsteps + 1) * sizeof(*p->pending0));
	fill = calloc(p->nsteps + 1, sizeof(*fill));
	if (!p->succ_start || !p->succ || !fill || !p->pending0) {
		free(fill);
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory building successors");
		return p->err;
	}
	for (size_t d = 0; d < p->ndeps; d++)
		p->succ_start[p->deps[d] + 1]++;
	for (size_t i = 0; i < p->nsteps; i++)
		p->succ_start[i + 1] += p->succ_start[i];
	for (size_t i = 0; i < p->nsteps; i++) {
		const wt_sched_step_t *s = &p->steps[i];

		for (uint32_t k = 0; k < s->ndeps; k++) {
			uint32_t d = p->deps[s->dep_start + k];

			p->succ[p->succ_start[d] + fill[d]++] = (uint32_t)i;
		}
	}
	free(fill);
	for (size_t i = 0; i < p->nsteps; i++) {
		p->pending0[i] = p->steps[i].ndeps;
		if (!p->steps[i].ndeps)
			p->pending0[p->nsteps + nsrc++] = (uint32_t)i;
	}
	p->view = (wt_sched_plan_view_t){.steps = p->steps,
					 .nsteps = p->nsteps,
					 .succ_start = p->succ_start,
					 .succ = p->succ,
					 .pending0 = p->pending0,
					 .sources = p->pending0 + p->nsteps,
					 .nsources = nsrc,
					 .args = &p->args,
					 .elem = p->elem,
					 .send_bytes = p->send_bytes,
					 .recv_bytes = p->recv_bytes,
					 .scratch = p->scratch,
					 .uses_slots = p->uses_slots,
					 .uses_peers = p->uses_peers,
					 .in_order = plan_in_order(p),
					 .slot_ring = plan_slot_ring(p),
					 .slot_sig = plan_slot_sig(p),
					 .slot_parts = p->slot_parts ? p->slot_parts : 1,
					 .serial = atomic_fetch_add(&plan_serials, 1) + 1};
	return WEFT_OK;
}

/* part: the slot call of the step the search starts from (see wt_sched_slot_part). */
typedef int (*step_match_fn_t)(const wt_sched_plan_t *p, uint32_t id, int arg, uint32_t part);

/* 1 if step `from` depends (transitively) on a step that match() accepts. */
static int reaches(const wt_sched_plan_t *p, size_t from, uint8_t *seen, uint32_t *stack,
		   step_match_fn_t match, int arg)
{
	uint32_t part = p->steps[from].part;
	size_t sp = 0;

	memset(seen, 0, p->nsteps);
	stack[sp++] = (uint32_t)from;
	seen[from] = 1;
	while (sp) {
		const wt_sched_step_t *s = &p->steps[stack[--sp]];

		for (uint32_t k = 0; k < s->ndeps; k++) {
			uint32_t d = p->deps[s->dep_start + k];

			if (seen[d])
				continue;
			if (match(p, d, arg, part))
				return 1;
			seen[d] = 1;
			stack[sp++] = d;
		}
	}
	return 0;
}

static int is_wait_for(const wt_sched_plan_t *p, uint32_t id, int peer, uint32_t part)
{
	return p->steps[id].type == WT_SCHED_SLOT_WAIT && p->steps[id].peer == peer &&
	       p->steps[id].part == part;
}

static int is_free_for(const wt_sched_plan_t *p, uint32_t id, int peer, uint32_t part)
{
	return p->steps[id].type == WT_SCHED_SLOT_FREE && p->steps[id].peer == peer &&
	       p->steps[id].part == part;
}

static int is_step(const wt_sched_plan_t *p, uint32_t id, int which, uint32_t part)
{
	(void)p;
	(void)part;
	return id == (uint32_t)which;
}

/* One slot step against the plan's rules (see check_slots). */
static void check_slot_order(wt_sched_plan_t *p, size_t i, size_t put_at, size_t done_at,
			     uint8_t *seen, uint32_t *stack)
{
	const wt_sched_step_t *s = &p->steps[i];
	const char *name = wt_sched_step_type_name(s->type);

	if ((step_reads_slot(s) || step_is_peer(s)) &&
	    !reaches(p, i, seen, stack, is_wait_for, s->peer))
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s of rank %d's %s does not wait for its SLOT_WAIT", i,
			      name, (int)s->peer, step_is_peer(s) ? "buffer" : "slot");
	else if (s->type == WT_SCHED_PEER_REDUCE_OUT) {
		/* it writes every peer's RECV: each of them must have published it */
		for (int q = 0; q < p->args.size && !p->err; q++)
			if (q != p->args.rank && !reaches(p, i, seen, stack, is_wait_for, q))
				wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
					      "step %zu: %s writes rank %d's RECV without waiting "
					      "for its SLOT_WAIT",
					      i, name, q);
	}
	if (p->err)
		return;
	if (s->type == WT_SCHED_SLOT_DRAIN && !reaches(p, i, seen, stack, is_step, (int)done_at))
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: SLOT_DRAIN of rank %d does not wait for our SLOT_DONE", i,
			      (int)s->peer);
	else if ((step_reads_slot(s) || step_is_peer(s) || s->type == WT_SCHED_SLOT_PUT) &&
		 !reaches(p, done_at, seen, stack, is_step, (int)i))
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: %s is not released by the SLOT_DONE", i, name);
	else if (s->type == WT_SCHED_SLOT_PUT) {
		for (int q = 0; q < p->args.size && !p->err; q++)
			if (!reaches(p, put_at, seen, stack, is_free_for, q))
				wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
					      "step %zu: SLOT_PUT does not wait for the SLOT_FREE "
					      "of rank %d",
					      i, q);
	} else if (s->type == WT_SCHED_SLOT_DONE &&
		   !reaches(p, done_at, seen, stack, is_free_for, p->args.rank))
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "step %zu: SLOT_DONE does not wait for our turn (the SLOT_FREE of "
			      "our own rank)",
			      i);
}

/* A plan with peer steps publishes its buffers (a PUT without data: the front of the slot
 * holds them) and drains every other rank: anyone may be using our buffers. */
static weft_status_t check_peer_plan(wt_sched_plan_t *p, size_t nput, size_t put_at)
{
	uint8_t *drained;

	if (nput != 1 || p->steps[put_at].len != 0) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG,
		    "a plan with peer steps needs one SLOT_PUT without data (it publishes "
		    "the plan's buffers)");
		return p->err;
	}
	if (p->args.slot_bytes < WT_SCHED_PEER_DESC_BYTES) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "a plan with peer steps needs slots of %d bytes (has %zu)",
			      WT_SCHED_PEER_DESC_BYTES, p->args.slot_bytes);
		return p->err;
	}
	drained = calloc((size_t)p->args.size, 1);
	if (!drained) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory checking the peer steps");
		return p->err;
	}
	for (size_t i = 0; i < p->nsteps; i++)
		if (p->steps[i].type == WT_SCHED_SLOT_DRAIN)
			drained[p->steps[i].peer] = 1;
	for (int q = 0; q < p->args.size && !p->err; q++)
		if (q != p->args.rank && !drained[q])
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
				      "a plan with peer steps does not drain rank %d", q);
	free(drained);
	return p->err;
}

/* Once per call each rank publishes at most once and releases exactly once, after all its
 * reads; a read of a peer's slot waits for that peer, a read of ours follows our PUT, and
 * the PUT follows a SLOT_FREE of every peer. The executor and the peers' plans rely on it. */
static void check_slots(wt_sched_plan_t *p)
{
	unsigned np = p->slot_parts ? p->slot_parts : 1;
	size_t *at = calloc((size_t)np * 4, sizeof(*at)); /* nput, put_at, ndone, done_at */
	uint8_t *seen = NULL;
	uint32_t *stack = NULL;

	if (!at) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "out of memory checking the slot steps");
		return;
	}
	for (size_t i = 0; i < p->nsteps && !p->err; i++) {
		const wt_sched_step_t *s = &p->steps[i];
		size_t *a = at + (size_t)s->part * 4;

		if (!step_is_slot(s))
			continue;
		if (s->type != WT_SCHED_SLOT_DRAIN && a[2]) {
			wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "step %zu: %s after the SLOT_DONE",
				      i, wt_sched_step_type_name(s->type));
		} else if (s->type == WT_SCHED_SLOT_PUT) {
			a[0]++;
			a[1] = i;
			if (s->off + s->len > p->slot_extent)
				p->slot_extent = s->off + s->len;
		} else if (s->type == WT_SCHED_SLOT_DONE) {
			a[2]++;
			a[3] = i;
		} else if (step_reads_slot(s) && s->src_off + s->len > p->slot_extent) {
			p->slot_extent = s->src_off + s->len;
		}
	}
	for (unsigned k = 0; k < np && !p->err; k++)
		if (at[k * 4] > 1 || at[k * 4 + 2] != 1)
			wt_sched_fail(
			    p, WEFT_ERR_INVALID_ARG,
			    "a slot plan needs at most one SLOT_PUT (has %zu) and exactly "
			    "one SLOT_DONE (has %zu) per slot call (part %u of %u)",
			    at[k * 4], at[k * 4 + 2], k, np);
	if (!p->err && p->uses_peers && np > 1)
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "a plan with peer steps takes one slot call, not %u", np);
	if (!p->err && p->uses_peers)
		(void)check_peer_plan(p, at[0], at[1]);
	if (!p->err) {
		seen = malloc(p->nsteps);
		stack = malloc(p->nsteps * sizeof(*stack));
		if (!seen || !stack)
			wt_sched_fail(p, WEFT_ERR_NO_MEMORY,
				      "out of memory checking the slot steps");
	}
	for (size_t i = 0; i < p->nsteps && !p->err; i++)
		if (step_is_slot(&p->steps[i]))
			check_slot_order(p, i, at[p->steps[i].part * 4 + 1],
					 at[p->steps[i].part * 4 + 3], seen, stack);
	free(at);
	free(seen);
	free(stack);
}

weft_status_t wt_sched_plan_finalize(wt_sched_plan_t *p)
{
	if (!p)
		return WEFT_ERR_INVALID_ARG;
	if (p->finalized)
		return p->err;
	if (!p->err) {
		for (size_t i = 0; i < p->nsteps && !p->err; i++) {
			const wt_sched_step_t *s = &p->steps[i];

			for (uint32_t k = 0; k < s->ndeps && !p->err; k++)
				if (p->deps[s->dep_start + k] >= i)
					wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
						      "step %zu: dependency %u is not earlier", i,
						      p->deps[s->dep_start + k]);
			if (!p->err)
				check_step(p, i);
		}
	}
	if (!p->err && p->uses_slots)
		check_slots(p);
	if (!p->err)
		number_messages(p);
	if (!p->err)
		build_successors(p);
	p->view.slot_extent = p->slot_extent;
	p->finalized = 1;
	if (p->err)
		WT_ERROR("schedule: %s plan for %s rank %d of %d (count %zu) rejected: %s",
			 p->algo[0] ? p->algo : "unnamed", wt_sched_coll_name(p->args.coll),
			 p->args.rank, p->args.size, p->args.count, p->errmsg);
	return p->err;
}

int wt_sched_plan_ready(const wt_sched_plan_t *p)
{
	return p && p->finalized && !p->err;
}

const char *wt_sched_plan_error(const wt_sched_plan_t *p)
{
	return p ? p->errmsg : "no plan";
}

size_t wt_sched_plan_nsteps(const wt_sched_plan_t *p)
{
	return p->nsteps;
}

const wt_sched_step_t *wt_sched_plan_step(const wt_sched_plan_t *p, size_t i)
{
	return i < p->nsteps ? &p->steps[i] : NULL;
}

const uint32_t *wt_sched_plan_deps(const wt_sched_plan_t *p)
{
	return p->deps;
}

const uint32_t *wt_sched_plan_succ(const wt_sched_plan_t *p, size_t i, uint32_t *n)
{
	if (!p->finalized || p->err || i >= p->nsteps) {
		*n = 0;
		return NULL;
	}
	*n = p->succ_start[i + 1] - p->succ_start[i];
	return p->succ + p->succ_start[i];
}

size_t wt_sched_plan_scratch_bytes(const wt_sched_plan_t *p)
{
	return p->scratch;
}

const wt_sched_plan_view_t *wt_sched_plan_view(const wt_sched_plan_t *p)
{
	return wt_sched_plan_ready(p) ? &p->view : NULL;
}

void *wt_sched_plan_spare_take(wt_sched_plan_t *p)
{
	if (!p || atomic_load_explicit(&p->spare, memory_order_relaxed) == NULL)
		return NULL;
	return atomic_exchange_explicit(&p->spare, NULL, memory_order_acquire);
}

void *wt_sched_plan_spare_put(wt_sched_plan_t *p, void *blk)
{
	void *none = NULL;

	if (p && atomic_compare_exchange_strong_explicit(
		     &p->spare, &none, blk, memory_order_release, memory_order_relaxed))
		return NULL;
	return blk;
}

const char *wt_sched_plan_algo(const wt_sched_plan_t *p)
{
	return p->algo;
}

void wt_sched_plan_set_algo(wt_sched_plan_t *p, const char *name)
{
	if (!p || p->finalized)
		return;
	snprintf(p->algo, sizeof(p->algo), "%s", name ? name : "");
}

void wt_sched_plan_ref(wt_sched_plan_t *p)
{
	if (p)
		atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

void wt_sched_plan_unref(wt_sched_plan_t *p)
{
	if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(atomic_load_explicit(&p->spare, memory_order_acquire));
	free(p->steps);
	free(p->deps);
	free(p->succ_start);
	free(p->succ);
	free(p->pending0);
	free(p);
}

/* ---- text dump ---- */

static void dump_step(const wt_sched_plan_t *p, size_t i, FILE *out)
{
	const wt_sched_step_t *s = &p->steps[i];

	fprintf(out, "%6zu: %-11s", i, wt_sched_step_type_name(s->type));
	if (step_is_net(s))
		fprintf(out, " peer %d msg %u", (int)s->peer, s->msg);
	if (step_is_slot_sync(s) && s->type != WT_SCHED_SLOT_DONE)
		fprintf(out, " peer %d", (int)s->peer);
	if (s->type == WT_SCHED_PEER_WRITE)
		fprintf(out, " %s of %d[%zu+%zu] <- %s[%zu]", wt_sched_buf_name(s->buf),
			(int)s->peer, s->off, s->len, wt_sched_buf_name(s->src_buf), s->src_off);
	else if (s->type == WT_SCHED_PEER_REDUCE_OUT)
		fprintf(out, " %s of all[%zu+%zu] = %s[%zu] op SEND of %d[%zu]",
			wt_sched_buf_name(s->buf), s->off, s->len, wt_sched_buf_name(s->src_buf),
			s->src_off, (int)s->peer, s->off);
	else if (s->type != WT_SCHED_NOP && !step_is_slot_sync(s))
		fprintf(out, " %s[%zu+%zu]", wt_sched_buf_name(s->buf), s->off, s->len);
	if (s->type == WT_SCHED_PEER_REDUCE && s->wire == WT_SCHED_PEER_FROM_SEND)
		fprintf(out, " = SEND[%zu] op", s->src_off);
	if (s->type == WT_SCHED_RECV_REDUCE && s->wire == WT_SCHED_RECV_FROM_SRC)
		fprintf(out, " = %s[%zu] op", wt_sched_buf_name(s->src_buf), s->src_off);
	if (s->type == WT_SCHED_PEER_READ || s->type == WT_SCHED_PEER_REDUCE)
		fprintf(out, " <- %s of %d[%zu]", wt_sched_buf_name(s->src_buf), (int)s->peer,
			s->src_off);
	if (s->type == WT_SCHED_REDUCE || s->type == WT_SCHED_COPY || s->type == WT_SCHED_SLOT_PUT)
		fprintf(out, " <- %s[%zu]", wt_sched_buf_name(s->src_buf), s->src_off);
	if ((s->type == WT_SCHED_COPY || s->type == WT_SCHED_PEER_WRITE ||
	     s->type == WT_SCHED_PEER_REDUCE_OUT || s->type == WT_SCHED_RECV) &&
	    s->wire == WT_SCHED_COPY_STREAM)
		fputs(" stream", out);
	if (s->type == WT_SCHED_SEND && (s->wire & WT_SCHED_SEND_COPY))
		fprintf(out, " copy -> %s[%zu]%s", wt_sched_buf_name(s->src_buf), s->src_off,
			s->wire & WT_SCHED_COPY_STREAM ? " stream" : "");
	if (step_reads_slot(s))
		fprintf(out, " <- SLOT of %d[%zu]", (int)s->peer, s->src_off);
	if (step_is_conv(s))
		fprintf(out, " <- %s[%zu+%zu] %s", wt_sched_buf_name(s->src_buf), s->src_off,
			wt_sched_step_src_len(p, s), wt_util_dtype_name((weft_dtype_t)s->wire));
	if (step_is_slot(s) && p->slot_parts > 1)
		fprintf(out, " part %u", s->part);
	for (uint32_t k = 0; k < s->ndeps; k++)
		fprintf(out, "%s%u", k ? "," : " deps ", p->deps[s->dep_start + k]);
	fputc('\n', out);
}

void wt_sched_plan_dump(const wt_sched_plan_t *p, FILE *out)
{
	const wt_sched_args_t *a = &p->args;

	fprintf(out,
		"plan %s %s count %zu dtype %s op %s root %d rank %d size %d in_place %d "
		"seg %zu compress %s: %zu steps, scratch %zu%s%s\n",
		p->algo[0] ? p->algo : "-", wt_sched_coll_name(a->coll), a->count,
		wt_util_dtype_name(a->dtype), wt_util_op_name(a->op), a->root, a->rank, a->size,
		a->in_place, a->seg_bytes, wt_sched_compress_name(a->compress), p->nsteps,
		p->scratch, p->err ? ", error: " : "", p->err ? p->errmsg : "");
	for (size_t i = 0; i < p->nsteps; i++)
		dump_step(p, i, out);
}
