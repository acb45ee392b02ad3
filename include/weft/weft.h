/* weft public API: collective communication between host processes.
 * This is the only header programs include; it compiles alone as C11 and C++. */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

/* Status: WEFT_OK is 0, "in progress" is positive, errors are negative. */
typedef enum {
	WEFT_OK = 0,
	WEFT_INPROGRESS = 1,
	WEFT_ERR_INVALID_ARG = -1,
	WEFT_ERR_NO_MEMORY = -2,
	WEFT_ERR_UNSUPPORTED = -3,
	WEFT_ERR_SYSTEM = -4,
	WEFT_ERR_TIMEOUT = -5,
	WEFT_ERR_PEER_FAILED = -6,
	WEFT_ERR_ABORTED = -7,
	WEFT_ERR_PROTOCOL = -8,
	WEFT_ERR_AUTH = -9,
	WEFT_ERR_MISMATCH = -10,
	WEFT_ERR_NO_DEVICE = -11,
} weft_status_t;

typedef enum {
	WEFT_INT8 = 0,
	WEFT_UINT8 = 1,
	WEFT_INT32 = 2,
	WEFT_UINT32 = 3,
	WEFT_INT64 = 4,
	WEFT_UINT64 = 5,
	WEFT_FLOAT16 = 6,
	WEFT_BFLOAT16 = 7,
	WEFT_FLOAT32 = 8,
	WEFT_FLOAT64 = 9,
	WEFT_DTYPE_COUNT_ = 10 /* not a type; one past the last */
} weft_dtype_t;

/* WEFT_AVG divides the sum by the communicator size; on integers it truncates toward
 * zero. FLOAT16 and BFLOAT16 are computed in float32 and rounded once per operation. */
typedef enum {
	WEFT_SUM = 0,
	WEFT_PROD = 1,
	WEFT_MIN = 2,
	WEFT_MAX = 3,
	WEFT_AVG = 4,
	WEFT_OP_COUNT_ = 5 /* not an op; one past the last */
} weft_op_t;

typedef struct weft_comm weft_comm_t;
typedef struct weft_request weft_request_t;

/* Thread safety: different communicators may be used from different threads at once
 * (including communicators derived from one another, which share a context); one
 * communicator must be used by one thread at a time. Requests may be waited on from any
 * thread, one thread per request. weft_comm_abort and weft_comm_get_async_error may be
 * called from any thread at any time, also while another thread waits on that
 * communicator.
 *
 * WEFT_CHECK=1 (every rank must set the same value): before each collective (not
 * send/recv) the ranks exchange its signature (collective, count, dtype, op, root,
 * sequence number) in a blocking exchange inside the call, even for async calls and
 * inside groups, which takes one collective sequence number. If any rank's differs from
 * rank 0's, every rank returns WEFT_ERR_MISMATCH without running the collective, and
 * weft_comm_last_error names the first rank that differs and how. Without it, mismatched
 * calls end in an error or WEFT_TIMEOUT, never in memory corruption. */

WEFT_API const char *weft_version(void);
WEFT_API const char *weft_strerror(weft_status_t status);

/* The world communicator from the environment: RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT (LOCAL_RANK, LOCAL_WORLD_SIZE when set); SLURM_PROCID/SLURM_NTASKS and
 * OMPI_COMM_WORLD_RANK/SIZE as fallbacks. */
WEFT_API weft_status_t weft_init(weft_comm_t **world);
WEFT_API int weft_comm_rank(const weft_comm_t *comm);
WEFT_API int weft_comm_size(const weft_comm_t *comm);
WEFT_API weft_status_t weft_comm_destroy(weft_comm_t *comm);
/* Detailed message of the last failure on comm ("" if none). */
WEFT_API const char *weft_comm_last_error(const weft_comm_t *comm);

/* sendbuf == recvbuf means in place. req == NULL blocks until done; otherwise the call
 * returns at once and *req completes later (weft_wait / weft_test). */
WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
				      weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
				      weft_request_t **req);

/* The other collectives. Every call takes counts in elements and a trailing req (NULL
 * blocks; otherwise *req completes later). All ranks of comm must make the same
 * collective calls in the same order with the same count, dtype, op and root. A count of
 * 0 is a valid no-op. Buffers a rank does not use (root-only buffers elsewhere) may be
 * NULL. Sizes below: n = communicator size, es = element size. */

/* recvbuf (n * sendcount elements) receives every rank's sendbuf in rank order. In place:
 * sendbuf == recvbuf + rank * sendcount * es. */
WEFT_API weft_status_t weft_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
				      weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req);

/* sendbuf holds n blocks of recvcount elements; rank r receives the reduction of every
 * rank's block r. In place: recvbuf == sendbuf + rank * recvcount * es. */
WEFT_API weft_status_t weft_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
					   weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
					   weft_request_t **req);

/* root's buf is copied to every rank's buf (always in place). */
WEFT_API weft_status_t weft_broadcast(void *buf, size_t count, weft_dtype_t dtype, int root,
				      weft_comm_t *comm, weft_request_t **req);

/* The reduction of every rank's sendbuf lands in root's recvbuf (unused and possibly NULL
 * on the other ranks). In place at root: sendbuf == recvbuf. */
WEFT_API weft_status_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
				   weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t *comm,
				   weft_request_t **req);

/* root's recvbuf (n * sendcount elements, root only) receives every rank's sendbuf in
 * rank order. */
WEFT_API weft_status_t weft_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
				   weft_dtype_t dtype, int root, weft_comm_t *comm,
				   weft_request_t **req);

/* Block r of root's sendbuf (n * recvcount elements, root only) lands in rank r's
 * recvbuf. */
WEFT_API weft_status_t weft_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
				    weft_dtype_t dtype, int root, weft_comm_t *comm,
				    weft_request_t **req);

/* Block j (count elements) of rank i's sendbuf lands in block i of rank j's recvbuf; both
 * buffers hold n * count elements. In place: sendbuf == recvbuf. */
WEFT_API weft_status_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count,
				     weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req);

/* As alltoall with per-peer counts and displacements (elements, n entries each): rank i
 * sends sendcounts[j] elements from sendbuf + sdispls[j] to rank j, which must expect
 * exactly that many in recvcounts[i] at recvbuf + rdispls[i]. No in-place form. */
WEFT_API weft_status_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts,
				      const size_t *sdispls, void *recvbuf,
				      const size_t *recvcounts, const size_t *rdispls,
				      weft_dtype_t dtype, weft_comm_t *comm, weft_request_t **req);

/* Completes on a rank once every rank of comm has entered it. */
WEFT_API weft_status_t weft_barrier(weft_comm_t *comm, weft_request_t **req);

/* Point to point. tag is any int (negative too); messages between one pair of ranks with
 * the same tag are received in the order they were sent, and never match a collective.
 * A receive of count elements accepts a message of at most that many (a shorter message
 * fills the front of buf); a longer message fails the receive with WEFT_ERR_MISMATCH and
 * both sizes in weft_comm_last_error. peer == own rank is invalid. count 0 sends and
 * receives nothing (no message is exchanged, so both sides must agree). A blocking send
 * of a message up to the eager limit (WEFT_EAGER_LIMIT, 8 KiB by default) does not wait
 * for the matching receive (what the link cannot take is copied); a blocking send of a
 * large message waits for it: post rings of sends and receives inside a group, or with
 * requests. */
WEFT_API weft_status_t weft_send(const void *buf, size_t count, weft_dtype_t dtype, int peer,
				 int tag, weft_comm_t *comm, weft_request_t **req);
WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype, int peer, int tag,
				 weft_comm_t *comm, weft_request_t **req);

/* Groups batch calls as ncclGroupStart/End do. Between start and end, a call with
 * req == NULL does not block: it is started at once and completes by weft_group_end,
 * which waits for every such call, and returns the first error among them (including
 * errors the calls themselves returned). Calls with a req behave as usual. Groups nest:
 * only the outermost end waits. So a ring of blocking-style sends and receives inside a
 * group cannot deadlock. weft_group_end without a start is WEFT_ERR_INVALID_ARG. */
WEFT_API weft_status_t weft_group_start(weft_comm_t *comm);
WEFT_API weft_status_t weft_group_end(weft_comm_t *comm);

/* ---- communicators ---- */

/* The color that leaves a rank out of weft_comm_split (its *newcomm is NULL). */
#define WEFT_UNDEFINED (-1)

/* As MPI_Comm_split / ncclCommSplit: every rank of comm calls it; ranks with the same
 * color form one communicator, ordered by key, then by rank in comm. Derived
 * communicators share their parent's context, links and progress thread. */
WEFT_API weft_status_t weft_comm_split(weft_comm_t *comm, int color, int key,
				       weft_comm_t **newcomm);
/* Called by every rank of comm with the same list (as torch's new_group): the members get
 * a communicator whose rank i is ranks[i], the others NULL. A list that differs between
 * callers fails with WEFT_ERR_MISMATCH on every caller. */
WEFT_API weft_status_t weft_comm_create_group(weft_comm_t *comm, const int *ranks, int n,
					      weft_comm_t **newcomm);
WEFT_API weft_status_t weft_comm_dup(weft_comm_t *comm, weft_comm_t **newcomm);

/* The embedding path (NCCL's shape): weft_get_unique_id starts the rendezvous store in
 * the calling process (which need not be a rank) and returns its address and a fresh
 * token; the host hands the id to every rank by its own means; each rank calls
 * weft_comm_init_rank. The store serves until the process ends. Ranks dial the address
 * WEFT_SOCKET_ADDR names (an IP literal), else MASTER_ADDR, else 127.0.0.1: jobs spanning
 * hosts need WEFT_SOCKET_ADDR. An id serves one communicator; treat it as a secret. No
 * launcher variable is read (WEFT_* settings apply). As there is no communicator yet,
 * failures of these two calls are explained in the log (a corrupt id: INVALID_ARG; a
 * changed token: AUTH). */
typedef struct {
	unsigned char bytes[128];
} weft_unique_id_t;
WEFT_API weft_status_t weft_get_unique_id(weft_unique_id_t *id);
WEFT_API weft_status_t weft_comm_init_rank(weft_comm_t **comm, int nranks,
					   const weft_unique_id_t *id, int rank);

/* Returns within a bounded time without waiting for any peer: every pending request of
 * comm completes with WEFT_ERR_ABORTED; comm can then only be destroyed. */
WEFT_API weft_status_t weft_comm_abort(weft_comm_t *comm);
/* *err: WEFT_OK, or the error that broke comm in the background (WEFT_ERR_PEER_FAILED
 * when a member died or stopped answering, WEFT_ERR_ABORTED after abort). */
WEFT_API weft_status_t weft_comm_get_async_error(weft_comm_t *comm, weft_status_t *err);

/* Counters of the traffic between this rank and one peer of a communicator, as the link
 * carrying it sees them. Set size to sizeof(weft_link_stats_t) before the call: the
 * library fills only the fields that fit in size, so programs built against an older
 * (shorter) struct keep working. Frames and bytes are what crossed the link, including
 * retransmissions and acknowledgements; the protocol counters are non-zero only where
 * weft's reliability protocol runs (udp, dpdk, any link under WEFT_FAULT); the fault_*
 * counters only under WEFT_FAULT. */
typedef struct {
	size_t size;	 /* in: sizeof(weft_link_stats_t) */
	char link[16];	 /* the link driver: "shm", "tcp", "udp", ... */
	int reliability; /* 1: weft's reliability protocol runs on this link */
	uint64_t frames_sent;
	uint64_t bytes_sent;
	uint64_t frames_received;
	uint64_t bytes_received;
	uint64_t retransmits; /* frames sent again (timeouts and fast retransmits) */
	uint64_t timeouts;    /* retransmission timer expiries */
	uint64_t drops;	      /* received frames discarded: outside the window */
	uint64_t duplicates;  /* received frames discarded as already delivered */
	uint64_t corrupt;     /* received frames discarded: bad CRC or header */
	uint64_t rejected;    /* received frames discarded: unknown or stale epoch, bad proof */
	uint64_t rto_us;      /* current retransmission timeout */
	uint64_t srtt_us;     /* smoothed round-trip time */
	uint32_t window;      /* current send window, frames */
	uint32_t in_flight;   /* frames sent and not yet acknowledged */
	uint64_t fault_drops; /* WEFT_FAULT: frames to this peer dropped, duplicated, ... */
	uint64_t fault_dups;
	uint64_t fault_reorders;
	uint64_t fault_delays;
	uint64_t fault_corrupts;
} weft_link_stats_t;
/* peer is a rank of comm other than the caller's own. WEFT_ERR_INVALID_ARG for a NULL
 * argument, a size smaller than the size field, or a peer out of range or equal to us. */
WEFT_API weft_status_t weft_comm_link_stats(weft_comm_t *comm, int peer, weft_link_stats_t *stats);

/* Waits, frees the request, sets *req = NULL and returns the operation's status. */
WEFT_API weft_status_t weft_wait(weft_request_t **req);
/* Sets *done; when done, frees the request, sets *req = NULL and returns its status. */
WEFT_API weft_status_t weft_test(weft_request_t **req, int *done);
/* Waits for all, frees each and sets it to NULL; returns the first error. NULL entries
 * are skipped. */
WEFT_API weft_status_t weft_waitall(weft_request_t **reqs, size_t n);

/* Memory the other ranks of this host can reach directly (like ncclMemAlloc). A collective
 * whose buffers lie in it lets its shared-memory algorithms read and write them in place:
 * a large allreduce among the ranks of one host then moves each byte once instead of
 * through the peers' copies. Any buffer works with every call; this one is faster.
 * *ptr gets at least bytes (rounded up to whole pages), zeroed, page aligned; may be
 * called before weft_init and from any thread. WEFT_ERR_INVALID_ARG for 0 bytes or a NULL
 * ptr, WEFT_ERR_NO_MEMORY / WEFT_ERR_SYSTEM when the host has none to give. */
WEFT_API weft_status_t weft_mem_alloc(void **ptr, size_t bytes);
/* Frees what weft_mem_alloc returned (NULL is a no-op); WEFT_ERR_INVALID_ARG for any other
 * pointer. Not while a collective uses it. The pages go back to the host once every peer
 * that mapped the region has let it go: each keeps its 16 most recently used regions of
 * every peer mapped until the peer fails or the communicator's context ends. */
WEFT_API weft_status_t weft_mem_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
