/* Internal state of the API layer (layers/api): the context (one per process and
 * rendezvous: links, channel, progress thread), communicators (views onto a context)
 * and requests. Never included from below. */
#ifndef WT_API_INT_H
#define WT_API_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <weft/weft.h>
#include "lib/util/crypto.h"
#include "lib/boot/store.h"
#include "drivers/link.h"
#include "drivers/fault.h"
#include "layers/channel/channel.h"
#include "layers/schedule/plan.h"
#include "layers/schedule/exec.h"

#define WT_API_ERR_LEN 512
#define WT_API_HOSTID_MAX 300 /* a host identity string, with its NUL */
/* Shared slots (slots.c): the channel's slot area of each rank is cut into regions of this
 * many bytes, one per communicator that uses slots, at most 64: four slots of 1025 KiB, the
 * small ring's 32 of 8 KiB + 64 and the tiny ring's 128 of 320 bytes (exec.h). */
#define WT_API_SLOT_REGION WT_SCHED_SLOT_REGION
/* Regions lie this far apart in an area; each rank's starts (world rank % 64) lines into its
 * place, so that the same slot of two ranks never shares an L1 set (or 4 KiB alias): with
 * every rank's slot b at one page offset, 2-rank loops of tiny calls fell into a mode twice
 * as slow (1200 cycles a call against 500), depending on how many calls they had made. */
#define WT_API_SLOT_SPACING (WT_API_SLOT_REGION + 4096)
#define WT_API_SLOT_STAGGER_LINES 64
_Static_assert(WT_API_SLOT_STAGGER_LINES * 64 <= WT_API_SLOT_SPACING - WT_API_SLOT_REGION,
	       "a staggered region stays inside its spacing");
/* The longest a blocking collective watches slot flags inside its start (request.c). */
#define WT_API_INLINE_SPIN_US 5
/* Async requests (context.c): for this long after the caller started one, the progress
 * thread leaves it to the caller (who mostly comes back to wait within microseconds) and
 * looks again itself, rather than being woken at each start; within WT_API_ASYNC_RECENT_MS
 * of the last start it sleeps no longer than that. */
#define WT_API_ASYNC_LAZY_US 250
/* While a caller drives (waits), the thread's looks back off to this. */
#define WT_API_ASYNC_LAZY_MAX_US 8000
#define WT_API_ASYNC_RECENT_MS 100
#define WT_API_SLOT_MAX_REGIONS 64
/* Plans a communicator memoises (request.c). */
#define WT_API_MEMO 4
/* A message between ranks of a host with more ranks than cores waits for its receiver to be
 * scheduled: without WEFT_COST_SHM the shm alpha is this many times larger then (4 ranks on
 * 2 cores: rabenseifner's four rounds measured 45 us for 16 KiB, alpha ~10 us). */
#define WT_API_OVERSUB_ALPHA 6.5
/* ... and plain receives from this size read the sender's buffer by get (channel.c). */
#define WT_API_OVERSUB_GET_MIN ((size_t)512 << 10)
/* ... and the receives of an exchange from this size (an alltoall's; channel.c), for which
 * an alltoall leaves the slots (plan.h xchg_get_min). */
#define WT_API_OVERSUB_XCHG_GET_MIN ((size_t)128 << 10)
/* With a core per rank, messages of an exchange from this size read by get while the
 * vCPUs are far apart (channel.c rndv_use_get); 32 KiB ones gained nothing so (2-rank
 * alltoall of 64 KiB far: 8.7 us either way). */
#define WT_API_FAR_GET_MIN ((size_t)64 << 10)
/* The pipeline segment of a 2-rank communicator on one host without WEFT_SEG_SIZE
 * (args_init in api.c). */
#define WT_API_SHM_PAIR_SEG_BYTES ((size_t)1 << 20)
/* ... and bytes read out of peers' slots cost this share of gamma (see wt_sched_cost_t). */
#define WT_API_OVERSUB_SLOT_READ 0.3

typedef struct wt_api_ctx wt_api_ctx_t;

/* Settings read from WEFT_* once per context. */
typedef struct {
	double timeout;		 /* WEFT_TIMEOUT: every blocking wait */
	double connect_timeout;	 /* WEFT_CONNECT_TIMEOUT */
	char links[40];		 /* WEFT_LINKS as given: auto, DRIVER or LOCAL,REMOTE */
	char link_local[16];	 /* driver between ranks of one host */
	char link_remote[16];	 /* driver between ranks of different hosts */
	wt_fault_config_t fault; /* WEFT_FAULT: injected at every link's boundary */
	char algo[256];		 /* WEFT_ALGO: spec ("ring", "allreduce:ring,...") or "" */
	size_t seg_bytes;	 /* WEFT_SEG_SIZE: pipeline segment (0 = algorithm default) */
	size_t eager_limit;	 /* WEFT_EAGER_LIMIT (0 = channel default) */
	int progress_thread;	 /* WEFT_PROGRESS_THREAD */
	int spin_us;		 /* WEFT_SPIN_US: busy-poll budget before sleeping */
	int yield_us;		 /* WEFT_YIELD_US: sched_yield-poll budget after spinning */
	int xcore_spin_us; /* WEFT_XCORE_SPIN_US: spin before a yield owed by other CPUs only */
	int compress;	   /* WEFT_COMPRESS: wt_sched_compress_t for float32 allreduce */
	int shm_stores;	   /* WEFT_SHM_STORES: WT_UTIL_STORES_*, for slot publishes */
	wt_sched_cost_t cost_shm; /* WEFT_COST_SHM: alpha-beta-gamma of shm links */
	int cost_shm_set;	  /* WEFT_COST_SHM was given (else oversubscription scales it) */
	wt_sched_cost_t cost_tcp; /* WEFT_COST_TCP: of tcp (and every other) link */
	int check;		  /* WEFT_CHECK: compare collective arguments across ranks */
} wt_api_config_t;

/* Ids [lo, hi) a communicator creation on this context is about to hand out. */

struct wt_api_ctx {
	int rank, size;
	int local_rank, local_size;
	char job_id[24];
	char host_id[WT_API_HOSTID_MAX]; /* this rank's host identity (host_identity()) */
	wt_util_key_t key;
	wt_api_config_t cfg;

	wt_boot_server_t *server; /* on world rank 0 */
	wt_boot_store_t *store;

	wt_link_t *links[4]; /* what the channel uses: the top of each link's stack */
	/* Each link's stack, bottom (the driver) first: + fault injector (WEFT_FAULT) +
	 * reliability layer (when the link below is not reliable). Closed top first. */
	wt_link_t *link_stack[4][3];
	int stack_depth[4];
	const char *link_names[4];
	int nlinks;
	int *peer_link; /* index into links per world rank; -1 = self */
	wt_chan_t *chan;
	wt_sched_cache_t *cache;

	pthread_mutex_t store_lock; /* the store client is used by one thread at a time */
	pthread_mutex_t lock;	    /* serialises the channel, executors and requests */
	pthread_cond_t done_cv;	    /* broadcast whenever a request completes */
	pthread_t thread;
	int thread_started;
	atomic_int stop;
	int wake_fd; /* eventfd: wakes whoever sleeps in epoll */
	int epfd;    /* epoll over the channel fds and wake_fd */
	/* Waiting (context.c, request.c). A blocked caller drives progress itself and sleeps
	 * on the fds; the progress thread parks while any caller waits, so a message costs one
	 * wake-up, not two. One thread at a time drives (driver, under lock); other waiters
	 * sleep on done_cv. */
	atomic_int in_epoll;	 /* a thread (caller or progress thread) is in epoll_wait */
	atomic_int thread_epoll; /* the progress thread is in epoll_wait */
	atomic_int parked;	 /* the progress thread is parked on park_cv */
	/* When the caller last started an async request (wt_api_async_started), and whether
	 * the progress thread sleeps for at most WT_API_ASYNC_LAZY_US (then a start need not
	 * wake it). */
	_Atomic uint64_t last_async_ns;
	atomic_int thread_short;
	atomic_int waiters;	/* callers inside wt_api_wait_one */
	atomic_int active;	/* requests in flight */
	atomic_int backlog;	/* the channel had queued frames at the last progress */
	int driver;		/* a waiter is driving progress (under lock) */
	int unpark;		/* under lock: async work needs the progress thread */
	pthread_cond_t park_cv; /* the progress thread waits here while callers drive */
	int oversubscribed;	/* more local ranks than cores: never busy-spin */
	/* request.c: net-op records for reuse (under lock). */
	void *netop_free;
	/* One finished request kept for the next call (a loop of blocking calls allocates
	 * none); exchanged atomically, as requests start and end outside the lock. */
	_Atomic(struct weft_request *) spare_req;

	/* slots.c, under lock: the regions of our slot area (0: no area), which ones live
	 * communicators use, which ones creations in flight have offered, and for regions whose
	 * last communicator is gone, the world ranks that may still read what we published. */
	int slot_nregions;
	uint64_t slot_used, slot_offered;
	struct wt_api_slot_quar *slot_quar[WT_API_SLOT_MAX_REGIONS];

	int ncomms; /* communicators alive on this context */
	uint16_t next_comm_id;
	/* Under lock (comm.c): every live communicator, ids being agreed on, and whether an
	 * abort or a failed peer means the last destroy must not wait for the others. */
	struct weft_comm *comms;
	int broken;
	char init_err[WT_API_ERR_LEN];
};

/* What makes two blocking collectives of one communicator the same call for its plan:
 * the rest of wt_sched_args_t is the communicator's and the context's (rank, size,
 * segment and slot sizes, compression), which do not change. */
typedef struct {
	wt_sched_plan_t *plan; /* borrowed from the memo; NULL: nothing to replay */
	int quick; /* the plan may run by wt_sched_exec_quick (wt_sched_exec_quick_plan) */
	size_t count;
	wt_sched_coll_t coll;
	weft_dtype_t dtype;
	weft_op_t op;
	int root, in_place, mem;
} wt_api_replay_t;

struct weft_comm {
	wt_api_ctx_t *ctx;
	uint16_t id;
	int rank, size;
	int *world;	      /* comm rank -> world rank */
	uint32_t seq;	      /* collective sequence (tags carry its low 23 bits) */
	uint32_t p2p_seq;     /* numbers sends and receives in messages only */
	wt_sched_cost_t cost; /* of the slowest link class among its peers */
	/* Shared slots (slots.c): the region every member uses (-1: none), each member's as
	 * mapped here, the last slot call number (under ctx->lock), and the slot size plans
	 * may publish (args.slot_bytes; 0 without slots). */
	int slot_region;
	void **slot_regions;
	uint64_t slot_seq[WT_SCHED_RINGS]; /* per ring (WT_SCHED_RING_*) */
	size_t slot_bytes;
	size_t slot_warm; /* bytes of every member's large slots warmed here (see net_slots) */
	wt_util_stores_t slot_stores; /* how our large publishes are stored (under ctx->lock) */
	/* request.c: the last WT_API_MEMO plans picked and their args (the memo holds a
	 * reference to each), so loops of a few shapes (a gradient allreduce and a barrier, a
	 * timed loop and its reduction of the times) skip the cost model and the cache's
	 * hashing. Only the thread using the communicator touches it: no lock. */
	wt_sched_args_t memo_args[WT_API_MEMO];
	wt_sched_plan_t *memo_plan[WT_API_MEMO];
	unsigned memo_last, memo_next; /* the entry that hit last; the one to replace next */
	/* The execution memory of blocking calls (same thread, plan kept by the memo). */
	wt_sched_exec_keep_t exec_keep;
	/* request.c: the shape of the last blocking collective that ran from the memo, so a
	 * loop of the same call skips the checks, the args and the memo lookup (see
	 * wt_api_replay_hit). Same thread as the memo: no lock. */
	wt_api_replay_t replay;
	int group_depth;	/* weft_group_start nesting */
	weft_request_t **group; /* calls deferred to the outermost weft_group_end */
	size_t ngroup, group_cap;
	weft_status_t group_err; /* first error a call inside the group returned */
	char group_msg[WT_API_ERR_LEN];
	char last_error[WT_API_ERR_LEN];
	/* Under ctx->lock (comm.c): the context's list, the unfinished requests, and what
	 * broke the communicator in the background (abort, a failed member). */
	struct weft_comm *cnext, *cprev;
	int registered;
	weft_request_t *reqs;
	int aborted;
	weft_status_t async_err;
	char fail_msg[WT_API_ERR_LEN];
};

struct weft_request {
	weft_comm_t *comm;
	wt_sched_exec_t *exec;
	const char *what; /* collective name */
	uint32_t seq;
	int p2p;	   /* send / recv: wire tags come from p2p_tag, not seq */
	uint64_t p2p_tag;  /* comm id | p2p bit | user tag (see make_p2p_tag) */
	uint64_t deadline; /* monotonic ns; 0 until set (at start, or when a blocking call
			    * first has to wait) */
	atomic_int done;
	int on_stack; /* a blocking call's: neither freed nor kept for reuse */
	weft_status_t status;
	char msg[WT_API_ERR_LEN];
	/* In comm->reqs while started and not freed; under ctx->lock. */
	weft_request_t *lnext, *lprev;
	int linked;
};

/* context.c */
/* How a context finds its peers: from the launcher environment (weft_init) or from a
 * unique id (weft_comm_init_rank, embed.c). */
typedef struct {
	int rank, size;
	int local_rank, local_size; /* -1: derived from the host identities at wire-up */
	char host[256];		    /* the rendezvous store to dial */
	int port;
	wt_util_key_t key;  /* job token: store and links */
	int start_server;   /* this rank serves the store on port (weft_init's rank 0) */
	const char *caller; /* names the entry point in log messages */
} wt_api_boot_t;

/* RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, WEFT_JOB_TOKEN and their fallbacks. */
weft_status_t wt_api_boot_from_env(wt_api_boot_t *b, char *err, size_t errlen);
/* Errors are logged (WT_ERROR) as well as written to err. */
weft_status_t wt_api_ctx_create_boot(const wt_api_boot_t *b, wt_api_ctx_t **out, char *err,
				     size_t errlen);
/* wt_api_boot_from_env, then wt_api_ctx_create_boot. */
weft_status_t wt_api_ctx_create(wt_api_ctx_t **out, char *err, size_t errlen);
void wt_api_ctx_release(wt_api_ctx_t *ctx);
/* Drive the channel once (caller holds ctx->lock); returns events handled. */
int wt_api_progress_locked(wt_api_ctx_t *ctx);
/* New work the caller will not wait for at once (an async request, an abort): wake
 * whoever sleeps in epoll and unpark the progress thread if no caller drives. Called
 * without ctx->lock. */
void wt_api_wake(wt_api_ctx_t *ctx);
/* The caller started an async request (after linking it, lock released): wake the progress
 * thread unless it is about to look by itself. */
void wt_api_async_started(wt_api_ctx_t *ctx);
/* Caller holds ctx->lock, which is released while sleeping: sleep until a link or the
 * wake fd has work, at most timeout_ms. */
void wt_api_sleep_fds_locked(wt_api_ctx_t *ctx, int timeout_ms);
/* A caller starts / stops waiting: the progress thread steps aside meanwhile. */
void wt_api_waiter_enter(wt_api_ctx_t *ctx);
void wt_api_waiter_exit(wt_api_ctx_t *ctx);
extern const wt_sched_net_t wt_api_net_template;

/* Link cost of a communicator over these world ranks: the slowest class among the links
 * to its peers (shm when every peer is reached over shm, or there is none). */
wt_sched_cost_t wt_api_comm_cost(const wt_api_ctx_t *ctx, const int *world, int size);

/* api.c */
/* The world communicator of a fresh context (rank i = world rank i). Takes ctx: on
 * failure it is released. */
weft_status_t wt_api_world_comm(wt_api_ctx_t *ctx, weft_comm_t **world);

/* slots.c */
/* After wire-up: how many regions our slot area holds (none without a slot-capable link). */
void wt_api_slots_init(wt_api_ctx_t *ctx);
/* The world communicator: region 0 when every rank's area is reachable (NO_MEMORY fails the
 * world: the ranks cannot agree on anything else). */
weft_status_t wt_api_slots_world(weft_comm_t *world);
/* Creation, step 1: reserve and return the regions this rank can offer (a mask). */
uint64_t wt_api_slots_offer(wt_api_ctx_t *ctx);
/* Creation, step 2: the region the new communicator could use, given the AND of its
 * members' offers; -1 if none (or a member has no reachable area, or no memory). Prepares
 * everything the attach needs, so that it cannot fail. *hw gets our region's high-water
 * call number, which the members' base must exceed. */
int wt_api_slots_candidate(weft_comm_t *comm, uint64_t offers, uint64_t *hw);
/* Creation, step 3, on every member: region is what all of them can use (-1: not all), base
 * above every member's high water. Sets the communicator up (our region reset to base) or
 * drops what the candidate prepared. Then the offer is withdrawn in every case
 * (wt_api_slots_unoffer). */
void wt_api_slots_attach(weft_comm_t *comm, int region, uint64_t base);
void wt_api_slots_unoffer(wt_api_ctx_t *ctx, uint64_t offer);
/* Destroy: the region is free again once every member released what we published. */
void wt_api_slots_detach(weft_comm_t *comm);
void wt_api_slots_release(wt_api_ctx_t *ctx);

/* comm.c */
/* Join / leave the context's list of communicators (weft_init, init_rank, destroy). */
void wt_api_comm_register(weft_comm_t *comm);
void wt_api_comm_unregister(weft_comm_t *comm);
/* A started request joins its communicator's list (ctx->lock held); freeing unlinks it. */
void wt_api_comm_link_req_locked(weft_comm_t *comm, weft_request_t *req);
void wt_api_comm_unlink_req(weft_request_t *req);
/* WEFT_OK, or the error that broke comm (aborted, a member failed) with last_error set. */
weft_status_t wt_api_comm_usable_locked(weft_comm_t *comm);
/* The channel's peer-failure callback (arg = ctx). */
void wt_api_on_peer_fail(void *arg, int peer, weft_status_t st, const char *why);
/* 1 once an abort or a failed peer touched the context. */
int wt_api_ctx_broken(wt_api_ctx_t *ctx);
/* The last destroy of a broken context: announce at the store barrier, do not wait. */
void wt_api_fini_broken(wt_api_ctx_t *ctx);
/* WEFT_CHECK: a blocking allgather of the call's signature; MISMATCH names the rank. */
weft_status_t wt_api_check_args(weft_comm_t *comm, const wt_sched_args_t *args);

/* request.c */
/* tag: the user tag of a send / recv (args->coll says which); ignored otherwise. wake:
 * wake the progress engine for the new request (0: its caller waits for it soon and
 * drives progress then, as weft_group_end does for the calls of a group). */
weft_status_t wt_api_coll_start(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
				void *recvbuf, int tag, int wake, weft_request_t **req);
/* Start and wait at once (a blocking call): no wake-up of the progress thread, since the
 * caller drives progress itself. */
weft_status_t wt_api_coll_run(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
			      void *recvbuf, int tag);
/* Whether a blocking call outside a group has the shape of the communicator's last one
 * that ran from the memo: then every check its arguments would pass has passed already
 * (a call of that shape did), except that its buffers are not NULL, and for an
 * allreduce that they are where the last call's were (replay.mem), which the caller
 * checks; wt_api_replay runs it. */
static inline int wt_api_replay_hit(const weft_comm_t *comm, wt_sched_coll_t coll, size_t count,
				    weft_dtype_t dtype, weft_op_t op, int root, int in_place)
{
	const wt_api_replay_t *r = &comm->replay;

	return r->plan != NULL && r->coll == coll && r->count == count && r->dtype == dtype &&
	       r->op == op && r->root == root && r->in_place == in_place && comm->group_depth == 0;
}
/* Run the communicator's last blocking call again, on these buffers. */
weft_status_t wt_api_replay(weft_comm_t *comm, const void *sendbuf, void *recvbuf);
/* A request that is complete already (zero-element calls). */
weft_status_t wt_api_req_done_now(weft_comm_t *comm, wt_sched_coll_t coll, weft_request_t **req);
/* Cancel (if still running) and free, without reporting (destroy of a comm). */
void wt_api_req_abandon(weft_request_t *req);
weft_status_t wt_api_wait_one(weft_request_t **req);
/* The same for a request of a communicator the caller knows is alive (internal waits): its
 * memory is kept for the next call. */
weft_status_t wt_api_wait_own(weft_request_t **req);
weft_status_t wt_api_test_one(weft_request_t **req, int *done);
/* WEFT_LOG_LEVEL=info: one line per peer link of comm with its counters (stats.c). */
void wt_api_comm_log_stats(weft_comm_t *comm);
void wt_api_set_error(weft_comm_t *comm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* ctx_free: drop the reusable net-op records and the memoised plan. */
/* The communicator's memoised plans and kept execution memory go (at destroy). */
void wt_api_comm_memo_drop(weft_comm_t *comm);
void wt_api_req_ctx_release(wt_api_ctx_t *ctx);

#endif
