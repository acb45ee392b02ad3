/* Shared-memory link driver (drivers/): per ordered pair of ranks on one host a
 * single-producer single-consumer byte ring in the receiver's memfd segment, doorbells on
 * abstract unix datagram sockets so idle receivers sleep, CMA (process_vm_readv) get, and a
 * slot area per rank that the other ranks map read only. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include "drivers/link.h"
#include "drivers/shm/shm_layout.h"
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/place.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"

#define SHM_LIVENESS_NS 100000000ull /* how often poll() checks that peers are alive */
/* poll() reads the clock for that only every this many calls (a power of two): a caller
 * spinning on poll makes millions of calls a second, one that sleeps arms, which checks. */
#define SHM_LIVENESS_POLLS 64u
/* How often poll() shares the cores' placement with the peers (place_share). */
#define SHM_PLACE_NS 1000000ull
/* Frames from this size carry a stamp for the placement (the size stores are chosen for),
 * and every SHM_STAMP_EVERY-th frame to a peer of any size: a broadcast's root receives
 * only its peers' small rendezvous answers, and a clock read on every small frame would
 * cost the latency path 20 ns each way. */
#define SHM_STAMP_MIN WT_UTIL_STORES_MIN_COPY
#define SHM_STAMP_EVERY 8u
/* and each of the first frames to a peer, so the placement is known early */
#define SHM_STAMP_FIRST 64u
/* One-way streams go in frames of a quarter of the message, not below this (link.h
 * pipe_min): a 2-rank broadcast's receiver otherwise waits while the root writes the whole
 * message into the ring, then copies it out while the root waits. In one process
 * alternating frame sizes (vCPUs near): 64 KiB 4.1-4.5 us in 16-32 KiB frames against 5.1
 * whole, 256 KiB 12.0 in 64 KiB frames against 16.5, 512 KiB 38 in 128 KiB against 43.
 * Exchanges gain nothing, both sides being busy (2-rank allgather of 256 KiB: 13.0 us in
 * 32 KiB frames, 12.1 whole), and from 1 MiB frames of 256 KiB are already a quarter.
 * Not below the size stores are chosen for: frames under it take plain stores, which run at
 * a tenth of the speed while the vCPUs are far (broadcast of 128 KiB in 16 KiB frames: 44 us
 * against 16 whole). */
#define SHM_PIPE_MIN WT_UTIL_STORES_MIN_COPY
#define SHM_MAX_RANKS (1 << 16)
#define SHM_BELL_DRAIN_MAX 256
/* The first frame of at least this size to or from a peer maps its whole ring in at once:
 * from 8 KiB (the eager limit) a frame covers two or more pages, and a ring of such
 * frames would fault on both sides for its whole first lap (a 16 KiB allreduce took 20 us
 * instead of 4 for its first 256 calls). */
#define SHM_WARM_FRAME (8u << 10)
/* Until a ring carries a frame of SHM_WARM_FRAME (which maps and touches the hot window),
 * its producer keeps to the first 64 KiB, which both sides touch as they connect: a frame
 * of a few KiB would otherwise start a page of the window every few frames, and each page's
 * first touch costs 30-40 us here (both sides, see ring_warm), so a 2-rank exchange of
 * 1 KiB messages stalled on every fourth call for the ring's first 2 MiB (the first 1900
 * calls: 20 us a call on average, 0.6 us after). The small window is a preference, not a
 * limit: a producer whose consumer lags goes on past it (small_wrap), as far as the ring
 * has room, rather than wait. */
#define SHM_SMALL_WINDOW ((uint64_t)WT_SHM_SMALL_WINDOW)

extern const wt_link_ops_t wt_shm_ops;

/* A peer's weft_mem region mapped here (shm_mem_map); a few per peer, least recently used
 * replaced. */
#define SHM_UMAPS 16
/* Largest region mapped: far beyond any buffer, and a bound on what a bad descriptor asks. */
#define SHM_UMAP_MAX ((uint64_t)1 << 40)

struct shm_umap {
	uint64_t region; /* the owner's id; 0 = empty */
	int fd;		 /* the owner's fd number of it */
	uint8_t *base;
	size_t len;
	uint64_t used; /* umap_tick at the last use */
};

enum shm_peer_state {
	SHM_PEER_NONE = 0, /* connect() not called yet */
	SHM_PEER_UP,	   /* rings mapped both ways */
	SHM_PEER_DYING,	   /* process gone: drain what it published, then report */
	SHM_PEER_FAILED,   /* reported (or never attached); sends fail with status */
};

struct shm_peer {
	int state;
	uint64_t dying_seq; /* when it was found gone (order of mark_dead), 0 while up */
	int drained;	    /* DYING, and everything it published has been read */
	weft_status_t status;
	pid_t pid;
	int pidfd; /* -1 when the kernel has no pidfd_open: liveness falls back to kill() */
	int bell;  /* datagram socket connected to the peer's doorbell */
	/* Transmit: our ring inside the peer's segment. */
	struct wt_shm_seg_hdr *tx_hdr;
	struct wt_shm_ring_ctl *tx_ctl;
	uint8_t *tx_data;
	uint64_t tx_head;	/* private copy: a hostile peer cannot move it */
	uint64_t tx_tail_cache; /* last tail read from the peer */
	/* Receive: the peer's ring inside our segment. */
	struct wt_shm_ring_ctl *rx_ctl;
	uint8_t *rx_data;
	uint64_t rx_tail;	   /* consumed (delivered) up to here */
	uint64_t rx_tail_pub;	   /* published to the producer up to here */
	uint64_t tx_warm, rx_warm; /* bytes of the ring populated (see ring_warm) */
	int rx_idle;		   /* the last look at the ring found nothing new */
	wt_util_stores_t tx_way;   /* plain or streaming stores for large frames */
	const uint8_t *slot;	   /* its slot area, mapped read only */
	struct shm_umap *umaps;	   /* its weft_mem regions we mapped (SHM_UMAPS), or NULL */
	uint64_t umap_tick;
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
};

struct wt_link {
	wt_link_base_t base;
	int rank;
	int size;
	char job_id[WT_SHM_JOB_ID_MAX + 1];
	wt_util_key_t key;
	uint8_t nonce[WT_UTIL_NONCE_LEN];
	int memfd;
	uint64_t seg_size;
	struct wt_shm_seg_hdr *hdr;
	uint8_t *slot; /* our slot area (writable) */
	int bell_fd;
	char bell_name[WT_SHM_BELL_NAME_MAX];
	int epfd;
	struct shm_peer *peers;
	int *active; /* peers in state UP or DYING, scanned by poll() */
	int nactive;
	int rr;
	wt_link_errq_t errq; /* peers with a PEER_ERROR to report */
	struct pollfd *pfds;
	uint64_t next_live_ns;
	uint64_t next_place_ns; /* when poll() next shares placement (place_due) */
	/* A core per local rank: placement is shared (place_share). With ranks sharing cores,
	 * consumers are seldom looking when a stamp lands: on near vCPUs 4 ranks' estimates
	 * were 105-370 ns, and timing chooses the stores instead. */
	int place_on;
	unsigned polls;
	uint64_t dying_seq; /* peers found gone so far */
	int ndying;	    /* peers DYING now: report_dying has work only then */
	/* Our process registered for membarrier(GLOBAL_EXPEDITED) and we call it before we
	 * sleep (hdr->asym says so to the peers): see shm_asym_setup. */
	int asym;
};

static uint64_t round8(uint64_t x)
{
	return (x + 7u) & ~(uint64_t)7u;
}

static uint64_t slot_off_for(int size)
{
	return WT_SHM_RING_OFF + (uint64_t)size * WT_SHM_RING_STRIDE;
}

static uint64_t seg_size_for(int size)
{
	return slot_off_for(size) + WT_SHM_SLOT_BYTES;
}

static uint64_t ring_off_for(int rank)
{
	return WT_SHM_RING_OFF + (uint64_t)rank * WT_SHM_RING_STRIDE;
}

static void seg_descriptor(char *buf, size_t len, const char *job_id, int rank, int size)
{
	snprintf(buf, len, "%s|%d|%d|%u", job_id, rank, size, (unsigned)WT_SHM_RING_CAP);
}

static void seg_mac(const wt_util_key_t *key, const uint8_t *nonce, const char *job_id, int rank,
		    int size, uint8_t mac[WT_UTIL_MAC_LEN])
{
	char desc[WT_SHM_JOB_ID_MAX + 64];

	seg_descriptor(desc, sizeof(desc), job_id, rank, size);
	wt_util_mac(key, WT_SHM_MAC_LABEL, nonce, WT_UTIL_NONCE_LEN, desc, strlen(desc), mac);
}

static int seg_mac_ok(const wt_util_key_t *key, const uint8_t *nonce, const char *job_id, int rank,
		      int size, const uint8_t mac[WT_UTIL_MAC_LEN])
{
	char desc[WT_SHM_JOB_ID_MAX + 64];

	seg_descriptor(desc, sizeof(desc), job_id, rank, size);
	return wt_util_mac_verify(key, WT_SHM_MAC_LABEL, nonce, WT_UTIL_NONCE_LEN, desc,
				  strlen(desc), mac);
}

static void umaps_drop(struct shm_peer *p);

static void push_error(wt_link_t *l, int peer, weft_status_t st)
{
	struct shm_peer *p = &l->peers[peer];

	if (p->state == SHM_PEER_FAILED)
		return;
	if (p->state == SHM_PEER_DYING)
		l->ndying--;
	p->state = SHM_PEER_FAILED;
	/* Its regions are mapped no longer: mem_map refuses a failed peer, and every net op
	 * (the executor's copies included) runs under the caller's lock, as poll does. */
	umaps_drop(p);
	p->status = st;
	wt_link_errq_push(&l->errq, peer, st);
}

static void ring_bell(int sock)
{
	char b = 1;

	/* EAGAIN means the doorbell already holds a byte: the receiver will wake anyway. */
	(void)send(sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* ---- open / address / close ---- */

static weft_status_t seg_create(wt_link_t *l)
{
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	void *m;

	l->seg_size = seg_size_for(l->size);
	l->memfd = memfd_create("weft-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (l->memfd < 0) {
		WT_ERROR("shm: memfd_create failed: %s", strerror(errno));
		return wt_util_status_from_errno(errno);
	}
	if (ftruncate(l->memfd, (off_t)l->seg_size) != 0) {
		WT_ERROR("shm: sizing the %llu-byte segment failed: %s",
			 (unsigned long long)l->seg_size, strerror(errno));
		return wt_util_status_from_errno(errno);
	}
	/* Sealed so a peer can never shrink it under our mappings (SIGBUS). */
	if (fcntl(l->memfd, F_ADD_SEALS, seals) != 0) {
		WT_ERROR("shm: sealing the segment failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	m = mmap(NULL, WT_SHM_ALIGN, PROT_READ | PROT_WRITE, MAP_SHARED, l->memfd, 0);
	if (m == MAP_FAILED) {
		WT_ERROR("shm: mapping the segment header failed: %s", strerror(errno));
		return wt_util_status_from_errno(errno);
	}
	l->hdr = m;
	memcpy(l->hdr->magic, WT_SHM_MAGIC, sizeof(l->hdr->magic));
	l->hdr->version = WT_SHM_VERSION;
	l->hdr->rank = (uint32_t)l->rank;
	l->hdr->size = (uint32_t)l->size;
	l->hdr->ring_cap = WT_SHM_RING_CAP;
	l->hdr->ring_off = WT_SHM_RING_OFF;
	l->hdr->ring_stride = WT_SHM_RING_STRIDE;
	l->hdr->seg_size = l->seg_size;
	l->hdr->slot_off = slot_off_for(l->size);
	l->hdr->slot_bytes = WT_SHM_SLOT_BYTES;
	m = mmap(NULL, WT_SHM_SLOT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, l->memfd,
		 (off_t)slot_off_for(l->size));
	if (m == MAP_FAILED) {
		WT_ERROR("shm: mapping the slot area failed: %s", strerror(errno));
		return wt_util_status_from_errno(errno);
	}
	l->slot = m;
	wt_util_random(l->nonce, sizeof(l->nonce));
	memcpy(l->hdr->nonce, l->nonce, sizeof(l->nonce));
	seg_mac(&l->key, l->nonce, l->job_id, l->rank, l->size, l->hdr->mac);
	atomic_store(&l->hdr->sleeping, 0);
	atomic_store(&l->hdr->closed, 0);
	atomic_store(&l->hdr->asym, 0);
	atomic_store(&l->hdr->cpu, sched_getcpu());
	return WEFT_OK;
}

static void bell_addr(const char *name, struct sockaddr_un *sa, socklen_t *salen)
{
	size_t n = strlen(name);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract namespace: no file to leak when a rank is killed. */
	memcpy(sa->sun_path + 1, name, n);
	*salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static weft_status_t bell_create(wt_link_t *l)
{
	struct sockaddr_un sa;
	socklen_t salen;

	l->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->bell_fd < 0) {
		WT_ERROR("shm: doorbell socket failed: %s", strerror(errno));
		return wt_util_status_from_errno(errno);
	}
	for (int attempt = 0; attempt < 8; attempt++) {
		char hex[17];

		wt_util_random_hex(hex, 8);
		snprintf(l->bell_name, sizeof(l->bell_name), "weft-%s-%d-%s", l->job_id, l->rank,
			 hex);
		bell_addr(l->bell_name, &sa, &salen);
		if (bind(l->bell_fd, (struct sockaddr *)&sa, salen) == 0)
			return WEFT_OK;
		if (errno != EADDRINUSE)
			break;
	}
	WT_ERROR("shm: binding doorbell '%s' failed: %s", l->bell_name, strerror(errno));
	return WEFT_ERR_SYSTEM;
}

static weft_status_t epoll_setup(wt_link_t *l)
{
	struct epoll_event e = {.events = EPOLLIN, .data.fd = l->bell_fd};

	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->bell_fd, &e) != 0) {
		WT_ERROR("shm: epoll setup failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	return WEFT_OK;
}

static void umap_drop(struct shm_umap *u)
{
	if (u->region != 0)
		munmap(u->base, u->len);
	memset(u, 0, sizeof(*u));
}

static void umaps_drop(struct shm_peer *p)
{
	for (int k = 0; p->umaps != NULL && k < SHM_UMAPS; k++)
		umap_drop(&p->umaps[k]);
	free(p->umaps);
	p->umaps = NULL;
}

static void peer_unmap(struct shm_peer *p)
{
	umaps_drop(p);
	if (p->tx_hdr)
		munmap(p->tx_hdr, WT_SHM_ALIGN);
	if (p->tx_ctl)
		munmap(p->tx_ctl, WT_SHM_RING_STRIDE);
	if (p->rx_ctl)
		munmap(p->rx_ctl, WT_SHM_RING_STRIDE);
	if (p->slot)
		munmap((void *)(uintptr_t)p->slot, WT_SHM_SLOT_BYTES);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->bell >= 0)
		close(p->bell);
	p->tx_hdr = NULL;
	p->tx_ctl = NULL;
	p->rx_ctl = NULL;
	p->slot = NULL;
	p->pidfd = -1;
	p->bell = -1;
}

static void announce_close(wt_link_t *l)
{
	if (l->hdr == NULL)
		return;
	atomic_store(&l->hdr->closed, 1);
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; l->peers && i < l->size; i++) {
		if (l->peers[i].bell >= 0)
			ring_bell(l->peers[i].bell);
	}
}

static void shm_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	announce_close(l);
	if (l->peers) {
		for (int i = 0; i < l->size; i++)
			peer_unmap(&l->peers[i]);
	}
	if (l->hdr)
		munmap(l->hdr, WT_SHM_ALIGN);
	if (l->slot)
		munmap(l->slot, WT_SHM_SLOT_BYTES);
	if (l->memfd >= 0)
		close(l->memfd);
	if (l->bell_fd >= 0)
		close(l->bell_fd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->peers);
	free(l->active);
	wt_link_errq_free(&l->errq);
	free(l->pfds);
	free(l);
}

static weft_status_t shm_alloc(const wt_link_config_t *cfg, wt_link_t **out)
{
	wt_link_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return WEFT_ERR_NO_MEMORY;
	l->memfd = -1;
	l->bell_fd = -1;
	l->epfd = -1;
	l->rank = cfg->rank;
	l->size = cfg->size;
	l->key = cfg->key;
	snprintf(l->job_id, sizeof(l->job_id), "%s", cfg->job_id);
	l->peers = calloc((size_t)cfg->size, sizeof(*l->peers));
	l->active = calloc((size_t)cfg->size, sizeof(*l->active));
	l->pfds = calloc((size_t)cfg->size, sizeof(*l->pfds));
	*out = l;
	if (wt_link_errq_init(&l->errq, cfg->size) != WEFT_OK || !l->peers || !l->active ||
	    !l->pfds) {
		WT_ERROR("shm: out of memory for %d peers", cfg->size);
		return WEFT_ERR_NO_MEMORY;
	}
	for (int i = 0; i < cfg->size; i++) {
		l->peers[i].pidfd = -1;
		l->peers[i].bell = -1;
	}
	return WEFT_OK;
}

/* ---- asymmetric fences ----
 * A sender stores a frame's head or a slot flag and then looks at its receiver's sleeping
 * flag; the receiver raises that flag and then looks at its rings and slots. One of the two
 * must see the other's store, which takes a full fence on each side, and the sender's comes
 * in every call: on this VM it waited 100-200 ns for the store's cache line to leave the
 * receiver that polls it, most of a tiny broadcast. With membarrier(2) the receiver about
 * to sleep makes every running thread of the registered processes pass a full barrier, so
 * the senders of those processes need none (the kernel's asymmetric Dekker). Every rank
 * registers where the kernel offers it and the host has a core for each of its ranks
 * (WEFT_SHM_MEMBARRIER=0: never), says so in its header, and calls it in shm_arm; a sender
 * skips its fence towards peers whose header says so, and only if its own process
 * registered. With more ranks than cores they sleep often, and each sleep's barrier
 * interrupts the other cores (8 ranks on 2 cores, 1 MiB allreduce: 1.1-1.5 ms with
 * fences, 1.7-1.9 with the barrier). */
static weft_status_t shm_asym_setup(const wt_link_config_t *cfg, int *asym)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char err[160];
	int on = 1;
	long q;

	*asym = 0;
	if (wt_util_env_bool("WEFT_SHM_MEMBARRIER", 1, &on, err, sizeof(err)) != WEFT_OK) {
		WT_ERROR("shm: %s", err);
		return WEFT_ERR_INVALID_ARG;
	}
	if (!on || cfg->local_size <= 0 || ncpu <= 0 || cfg->local_size > ncpu)
		return WEFT_OK;
	q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
	    !(q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
		return WEFT_OK;
	*asym = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
	return WEFT_OK;
}

/* The sleeper's side: after raising `sleeping`, before the last look. */
static void asym_barrier(wt_link_t *l)
{
	if (l->asym && syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0)
		return;
	if (l->asym) {
		/* Never seen; the peers that read our flag before this may miss one wake-up,
		 * which the bounded sleeps of the waits absorb. */
		WT_WARN("shm: membarrier failed (%s); senders fence from now on", strerror(errno));
		l->asym = 0;
		atomic_store(&l->hdr->asym, 0);
	}
	atomic_thread_fence(memory_order_seq_cst);
}

/* Whether the peer's barrier before it sleeps serves us: it runs one, and our process is
 * registered, so it reaches us. */
static int asym_covers(const wt_link_t *l, const struct wt_shm_seg_hdr *peer)
{
	return l->asym && atomic_load_explicit(&peer->asym, memory_order_relaxed);
}

/* The sender's side, before it looks at a peer's `sleeping`: a fence unless the peer runs
 * the barrier for us. */
static void asym_fence(const wt_link_t *l, const struct wt_shm_seg_hdr *peer)
{
	if (!asym_covers(l, peer))
		atomic_thread_fence(memory_order_seq_cst);
}

static weft_status_t shm_open_link(const wt_link_config_t *cfg, wt_link_t **link)
{
	wt_link_t *l = NULL;
	weft_status_t st;
	int stores;

	if (cfg == NULL || link == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = wt_link_config_check("shm", cfg, SHM_MAX_RANKS, WT_SHM_JOB_ID_MAX, "/");
	if (st != WEFT_OK)
		return st;
	char err[160];

	st = wt_util_stores_setting(&stores, err, sizeof(err));
	if (st != WEFT_OK) {
		WT_ERROR("shm: %s", err);
		return st;
	}
	int asym;

	st = shm_asym_setup(cfg, &asym);
	if (st != WEFT_OK)
		return st;
	st = shm_alloc(cfg, &l);
	for (int i = 0; st == WEFT_OK && i < l->size; i++)
		l->peers[i].tx_way.forced = stores;
	if (st == WEFT_OK)
		st = seg_create(l);
	if (st == WEFT_OK)
		st = bell_create(l);
	if (st == WEFT_OK)
		st = epoll_setup(l);
	if (st != WEFT_OK) {
		shm_close(l);
		return st;
	}
	l->base.ops = &wt_shm_ops;
	l->base.max_frame = WT_SHM_MAX_FRAME;
	l->next_live_ns = wt_util_time_ns() + SHM_LIVENESS_NS;
	l->asym = asym;
	atomic_store(&l->hdr->asym, (uint32_t)l->asym);
	l->place_on = cfg->local_size > 0 && sysconf(_SC_NPROCESSORS_ONLN) >= cfg->local_size;
	wt_util_place_self_touch();
	*link = l;
	return WEFT_OK;
}

static weft_status_t shm_address(wt_link_t *l, void *blob, size_t *len)
{
	struct wt_shm_blob b;

	if (l == NULL || blob == NULL || len == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (*len < sizeof(b)) {
		WT_ERROR("shm: address buffer of %zu bytes is smaller than %zu", *len, sizeof(b));
		return WEFT_ERR_INVALID_ARG;
	}
	memset(&b, 0, sizeof(b));
	b.magic = WT_SHM_BLOB_MAGIC;
	b.version = WT_SHM_VERSION;
	b.rank = (uint32_t)l->rank;
	b.size = (uint32_t)l->size;
	b.pid = (int32_t)getpid();
	b.memfd = l->memfd;
	memcpy(b.nonce, l->nonce, sizeof(b.nonce));
	b.name_len = (uint32_t)strlen(l->bell_name);
	memcpy(b.name, l->bell_name, b.name_len);
	memcpy(blob, &b, sizeof(b));
	*len = sizeof(b);
	return WEFT_OK;
}

/* ---- connect ---- */

static int blob_name_ok(const struct wt_shm_blob *b)
{
	if (b->name_len < 6 || b->name_len >= WT_SHM_BELL_NAME_MAX)
		return 0;
	if (memcmp(b->name, "weft-", 5) != 0)
		return 0;
	for (uint32_t i = 0; i < b->name_len; i++) {
		if (b->name[i] <= ' ' || b->name[i] > '~')
			return 0;
	}
	for (uint32_t i = b->name_len; i < WT_SHM_BELL_NAME_MAX; i++) {
		if (b->name[i] != 0)
			return 0;
	}
	return 1;
}

static weft_status_t blob_parse(wt_link_t *l, int peer, const void *blob, size_t len,
				struct wt_shm_blob *b)
{
	const char *why = NULL;

	if (blob == NULL || len != sizeof(*b)) {
		WT_ERROR("shm: address of peer rank %d has %zu bytes, expected %zu", peer,
			 blob ? len : 0, sizeof(*b));
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(b, blob, sizeof(*b));
	if (b->magic != WT_SHM_BLOB_MAGIC || b->version != WT_SHM_VERSION)
		why = "bad magic or version";
	else if (b->rank != (uint32_t)peer)
		why = "rank does not match";
	else if (b->size != (uint32_t)l->size)
		why = "world size does not match";
	else if (b->pid <= 0)
		why = "bad pid";
	else if (b->memfd < 0)
		why = "bad segment fd";
	else if (!blob_name_ok(b))
		why = "bad doorbell name";
	if (why) {
		WT_ERROR("shm: address of peer rank %d is malformed: %s", peer, why);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

static void *map_region(int fd, uint64_t off, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);

	return m == MAP_FAILED ? NULL : m;
}

/* Checks that the header the peer wrote into its segment is the one its address names,
 * made with the job key. Logs and returns the status to report for the peer. */
static weft_status_t seg_verify(wt_link_t *l, int peer, const struct wt_shm_blob *b,
				const struct wt_shm_seg_hdr *h)
{
	struct wt_shm_seg_hdr c;

	memcpy(&c, h, offsetof(struct wt_shm_seg_hdr, sleeping));
	if (memcmp(c.magic, WT_SHM_MAGIC, sizeof(c.magic)) != 0 || c.version != WT_SHM_VERSION ||
	    c.rank != (uint32_t)peer || c.size != (uint32_t)l->size ||
	    c.ring_cap != WT_SHM_RING_CAP || c.ring_off != WT_SHM_RING_OFF ||
	    c.ring_stride != WT_SHM_RING_STRIDE || c.seg_size != l->seg_size ||
	    c.slot_off != slot_off_for(l->size) || c.slot_bytes != WT_SHM_SLOT_BYTES) {
		WT_ERROR("shm: segment of peer rank %d (pid %d) has a bad header", peer,
			 (int)b->pid);
		return WEFT_ERR_PROTOCOL;
	}
	if (memcmp(c.nonce, b->nonce, sizeof(c.nonce)) != 0 ||
	    !seg_mac_ok(&l->key, c.nonce, l->job_id, peer, l->size, c.mac)) {
		WT_ERROR("shm: segment of peer rank %d (pid %d) failed authentication with the "
			 "job key; refusing it",
			 peer, (int)b->pid);
		return WEFT_ERR_AUTH;
	}
	return WEFT_OK;
}

static weft_status_t open_peer_seg(wt_link_t *l, int peer, const struct wt_shm_blob *b, int *fd)
{
	char path[64];
	struct stat stbuf;
	int seals;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)b->pid, (int)b->memfd);
	*fd = open(path, O_RDWR | O_CLOEXEC);
	if (*fd < 0) {
		int err = errno;

		WT_ERROR("shm: opening segment %s of peer rank %d failed: %s", path, peer,
			 strerror(err));
		return err == ENOENT || err == ESRCH ? WEFT_ERR_PEER_FAILED : WEFT_ERR_SYSTEM;
	}
	seals = fcntl(*fd, F_GET_SEALS);
	if (fstat(*fd, &stbuf) != 0 || !S_ISREG(stbuf.st_mode) ||
	    (uint64_t)stbuf.st_size != l->seg_size || seals < 0 || !(seals & F_SEAL_SHRINK)) {
		WT_ERROR("shm: %s of peer rank %d is not a sealed segment of %llu bytes", path,
			 peer, (unsigned long long)l->seg_size);
		return WEFT_ERR_PROTOCOL;
	}
	return WEFT_OK;
}

static weft_status_t bell_connect(int peer, const struct wt_shm_blob *b, int *sock)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char name[WT_SHM_BELL_NAME_MAX];

	memcpy(name, b->name, b->name_len);
	name[b->name_len] = '\0';
	bell_addr(name, &sa, &salen);
	*sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*sock < 0 || connect(*sock, (struct sockaddr *)&sa, salen) != 0) {
		WT_ERROR("shm: doorbell '%s' of peer rank %d is unreachable (another network "
			 "namespace?): %s",
			 name, peer, strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	return WEFT_OK;
}

/* Touches every page of data[from, to) once (see ring_warm): read, or with
 * MADV_POPULATE_WRITE read and stored back. */
static void ring_touch(uint8_t *data, uint64_t from, uint64_t to, int advice)
{
	(void)madvise(data + from, to - from, advice);
	for (uint64_t off = from; off < to; off += 4096) {
		uint8_t v = __atomic_load_n(data + off, __ATOMIC_RELAXED);

		if (advice == MADV_POPULATE_WRITE)
			__atomic_store_n(data + off, v, __ATOMIC_RELAXED);
	}
}

static weft_status_t peer_attach(wt_link_t *l, int peer, const struct wt_shm_blob *b)
{
	struct shm_peer *p = &l->peers[peer];
	weft_status_t st;
	int fd = -1;

	/* The pidfd is taken first: if the segment then verifies, it names the same process. */
	p->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)b->pid, 0);
	p->pid = (pid_t)b->pid;
	st = open_peer_seg(l, peer, b, &fd);
	if (st == WEFT_OK) {
		p->tx_hdr = map_region(fd, 0, WT_SHM_ALIGN);
		p->tx_ctl = map_region(fd, ring_off_for(l->rank), WT_SHM_RING_STRIDE);
		p->slot = mmap(NULL, WT_SHM_SLOT_BYTES, PROT_READ, MAP_SHARED, fd,
			       (off_t)slot_off_for(l->size));
		if (p->slot == MAP_FAILED)
			p->slot = NULL;
		if (!p->tx_hdr || !p->tx_ctl || !p->slot) {
			WT_ERROR("shm: mapping the segment of peer rank %d failed: %s", peer,
				 strerror(errno));
			st = WEFT_ERR_SYSTEM;
		}
	}
	if (fd >= 0)
		close(fd);
	if (st == WEFT_OK)
		st = seg_verify(l, peer, b, p->tx_hdr);
	if (st == WEFT_OK) {
		p->rx_ctl = map_region(l->memfd, ring_off_for(peer), WT_SHM_RING_STRIDE);
		if (p->rx_ctl == NULL) {
			WT_ERROR("shm: mapping our ring for peer rank %d failed: %s", peer,
				 strerror(errno));
			st = WEFT_ERR_SYSTEM;
		}
	}
	if (st == WEFT_OK)
		st = bell_connect(peer, b, &p->bell);
	if (st == WEFT_OK && p->pidfd >= 0) {
		struct epoll_event e = {.events = EPOLLIN, .data.fd = p->pidfd};

		/* A peer that dies while we sleep wakes us. */
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, p->pidfd, &e) != 0) {
			WT_ERROR("shm: epoll add of peer rank %d failed: %s", peer,
				 strerror(errno));
			st = WEFT_ERR_SYSTEM;
		}
	}
	return st;
}

static weft_status_t shm_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	struct shm_peer *p;
	struct wt_shm_blob b;
	weft_status_t st;

	if (l == NULL || peer < 0 || peer >= l->size || peer == l->rank) {
		WT_ERROR("shm: connect to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (p->state != SHM_PEER_NONE) {
		WT_ERROR("shm: connect to peer rank %d called twice", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	st = blob_parse(l, peer, blob, len, &b);
	if (st != WEFT_OK)
		return st;
	st = peer_attach(l, peer, &b);
	if (st != WEFT_OK) {
		/* Reported as an event: one bad peer must not stop the others. */
		peer_unmap(p);
		push_error(l, peer, st);
		return WEFT_OK;
	}
	p->rx_data = (uint8_t *)p->rx_ctl + WT_SHM_ALIGN;
	p->tx_data = (uint8_t *)p->tx_ctl + WT_SHM_ALIGN;
	/* No frame yet: the producer may store back what it reads (SHM_SMALL_WINDOW). */
	ring_touch(p->tx_data, 0, SHM_SMALL_WINDOW, MADV_POPULATE_WRITE);
	ring_touch(p->rx_data, 0, SHM_SMALL_WINDOW, MADV_POPULATE_READ);
	p->state = SHM_PEER_UP;
	l->active[l->nactive++] = peer;
	return WEFT_OK;
}

/* ---- send ---- */

static weft_status_t peer_usable(wt_link_t *l, int peer)
{
	if (l == NULL || peer < 0 || peer >= l->size) {
		WT_ERROR("shm: bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	switch (l->peers[peer].state) {
	case SHM_PEER_UP:
		return WEFT_OK;
	case SHM_PEER_NONE:
		WT_ERROR("shm: peer rank %d is not connected", peer);
		return WEFT_ERR_INVALID_ARG;
	case SHM_PEER_DYING:
		return WEFT_ERR_PEER_FAILED;
	default:
		return l->peers[peer].status;
	}
}

/* The consumer's tail now, into *t and the cache; 0 if it is not one a consumer could have
 * published (the caller reports it). */
static int tail_read(struct shm_peer *p, uint64_t head, uint64_t *t)
{
	*t = atomic_load_explicit(&p->tx_ctl->tail, memory_order_acquire);
	if (head - *t > WT_SHM_RING_CAP || (*t & 7u))
		return 0;
	p->tx_tail_cache = *t;
	return 1;
}

/* Whether need bytes fit after head: 1 yes, 0 no, -1 a bad tail. Reads the consumer's tail
 * only when the cached one says no, and asks the consumer to ring our doorbell when it
 * frees space. */
static int tx_room(wt_link_t *l, int peer, uint64_t head, uint64_t need)
{
	struct shm_peer *p = &l->peers[peer];
	uint64_t t;

	if (WT_SHM_RING_CAP - (head - p->tx_tail_cache) >= need)
		return 1;
	for (int pass = 0; pass < 2; pass++) {
		if (!tail_read(p, head, &t)) {
			WT_ERROR("shm: peer rank %d published a bad ring tail %llu (head %llu)",
				 peer, (unsigned long long)t, (unsigned long long)head);
			push_error(l, peer, WEFT_ERR_PROTOCOL);
			return -1;
		}
		if (WT_SHM_RING_CAP - (head - t) >= need)
			return 1;
		if (pass == 0) {
			atomic_store_explicit(&p->tx_ctl->prod_waiting, 1, memory_order_relaxed);
			atomic_thread_fence(memory_order_seq_cst);
		}
	}
	return 0;
}

/* A ring is touched page by page as the head goes round, so until its first lap every
 * large frame pays a page fault per 4 KiB on each side (about 0.4 ms per MiB, which is most of
 * a 1 MiB allgather). Rings that carry large messages are populated in one call the first time
 * they do; rings that only ever see small frames stay lazily mapped. Failure (kernels before
 * 5.14) only means the faults come one by one as before. */
/* How far into a ring the producer writes before it goes back to the start. The whole
 * ring is the most a producer may run ahead, but a head that walks all of it touches
 * 4 MiB of lines per direction and peer before reusing one, so with several rings the
 * frames go through memory instead of the caches. Measured here (weft-perf, alternating
 * runs): 4 ranks, windows of 4 MiB / 1 MiB: allreduce 1 MiB 605-699 / 447-619 us, 16 MiB
 * 13.2-14.1 / 11.5-12.7 ms, alltoall 16 MiB 7.2-9.0 / 5.5-5.9 ms; 2 ranks, 4 MiB / 2 MiB:
 * alltoall 64 MiB 9.6-10.1 / 8.4-9.0 ms (1 MiB: 10.9-12.3). */
#define SHM_HOT_ONE_PEER ((uint64_t)2 << 20)
#define SHM_HOT_PEERS ((uint64_t)1 << 20)

_Static_assert(SHM_HOT_PEERS >= 2 * ((uint64_t)WT_SHM_MAX_FRAME + WT_SHM_REC_HDR) &&
		   SHM_HOT_ONE_PEER <= WT_SHM_RING_CAP,
	       "the hot window holds two largest frames and lies inside the ring");

static uint64_t hot_window(const wt_link_t *l)
{
	return l->nactive <= 1 ? SHM_HOT_ONE_PEER : SHM_HOT_PEERS;
}

_Static_assert(SHM_SMALL_WINDOW >= 2 * ((uint64_t)SHM_WARM_FRAME + WT_SHM_REC_HDR),
	       "the small window holds two of the frames that keep to it");

static uint64_t tx_window(const wt_link_t *l, const struct shm_peer *p)
{
	return p->tx_warm != 0 ? hot_window(l) : SHM_SMALL_WINDOW;
}

/* Past the small window, with room before the ring's end: whether to go back to the start
 * (total bytes with the skipped end). Only when the consumer keeps up, half the window or
 * less in flight by the tail it has published now: one that lags leaves the producer going
 * on, so the ring still buffers up to its whole size for a consumer that is not there yet
 * (blocking sends of small messages complete as the ring takes them). */
static int small_wrap(struct shm_peer *p, uint64_t head, uint64_t total)
{
	uint64_t t;

	/* a bad tail: tx_room() reports it */
	return tail_read(p, head, &t) && head - t <= SHM_SMALL_WINDOW / 2 &&
	       WT_SHM_RING_CAP - (head - t) >= total;
}

/* Only the hot window is ever written (a frame starting inside it ends inside it: the
 * static check above), so only it is backed: at most 2 of the ring's 4 MiB, and as much as
 * the window is now (1 MiB with several peers; a window that grows later is warmed again).
 * On this VM the first write of a page costs 11-15 us and its first read in another process
 * a few; after MADV_POPULATE_WRITE / _READ, with no fault left to take, the first access
 * still costs 4.5-6 us (the hypervisor maps the page then). So each side also accesses
 * every page once: the producer stores back the byte it reads (only the producer writes a
 * ring's data, and frames not yet consumed keep their bytes), the consumer reads one. 2-rank
 * 256 KiB allgather, per call after the first (which warms): the 14 calls of the first lap
 * 170-260 us with populate alone, 320-490 with neither, 11-22 us with both, as every later
 * call. */
static void ring_warm(const wt_link_t *l, uint8_t *data, uint64_t *warm, int advice)
{
	uint64_t w = hot_window(l);

	if (*warm >= w)
		return;
	ring_touch(data, *warm, w, advice);
	*warm = w;
}

/* The caller has fenced (seq_cst) after its store: pairs with the fence in shm_arm(), so
 * either the sleeper sees the store or we see its flag. */
static void wake_if_sleeping(struct shm_peer *p)
{
	_Atomic uint32_t *flag = &p->tx_hdr->sleeping;

	if (atomic_load_explicit(flag, memory_order_relaxed) == 0)
		return;
	/* Only the sender that clears the flag rings, so a sleep costs one datagram. */
	if (atomic_exchange(flag, 0) != 0)
		ring_bell(p->bell);
}

static void wake_receiver(const wt_link_t *l, struct shm_peer *p)
{
	asym_fence(l, p->tx_hdr);
	wake_if_sleeping(p);
}

/* The low half of the monotonic clock in ns, never 0: a frame's stamp (rx_stamp). */
static uint32_t stamp_now(void)
{
	uint32_t t = (uint32_t)wt_util_time_ns();

	return t ? t : 1u;
}

static weft_status_t shm_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie)
{
	struct shm_peer *p;
	uint64_t head, off, gap, need, total_need;
	size_t len;
	weft_status_t st;
	int room, wrap;

	(void)cookie;
	st = peer_usable(l, peer);
	if (st != WEFT_OK)
		return st;
	if (wt_link_iov_total(iov, iovcnt, WT_SHM_MAX_FRAME, &len) != WEFT_OK) {
		WT_ERROR("shm: bad iov for a frame to peer rank %d (at most %u bytes)", peer,
			 (unsigned)WT_SHM_MAX_FRAME);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (len >= SHM_WARM_FRAME)
		ring_warm(l, p->tx_data, &p->tx_warm, MADV_POPULATE_WRITE);
	head = p->tx_head;
	off = head & (WT_SHM_RING_CAP - 1);
	gap = WT_SHM_RING_CAP - off;
	need = WT_SHM_REC_HDR + round8(len);
	/* Frames are contiguous: when one does not fit before the end, skip to the start; and
	 * skip there once past the window too, when the frame fits before us (else the room
	 * it waits for could never come). Past the small window, a start still in use means
	 * going on instead (SHM_SMALL_WINDOW). */
	wrap = need > gap || (off >= need && off + need > tx_window(l, p));
	if (wrap && need <= gap && p->tx_warm == 0 && !small_wrap(p, head, gap + need))
		wrap = 0;
	total_need = !wrap ? need : gap + need;
	room = tx_room(l, peer, head, total_need);
	if (room < 0)
		return WEFT_ERR_PROTOCOL;
	if (room == 0)
		return WT_AGAIN;
	if (wrap) {
		__atomic_store_n((uint32_t *)(p->tx_data + off), WT_SHM_WRAP, __ATOMIC_RELAXED);
		head += gap;
		off = 0;
	}
	__atomic_store_n((uint32_t *)(p->tx_data + off), (uint32_t)len, __ATOMIC_RELAXED);
	if (wt_util_stores_copyv(&p->tx_way, p->tx_data + off + WT_SHM_REC_HDR, iov, iovcnt, len))
		WT_DEBUG("shm: frames to rank %d now go by %s stores", peer,
			 p->tx_way.nt ? "streaming" : "plain");
	/* Last before the head: the stamp of a large frame, of the first SHM_STAMP_FIRST and of
	 * every SHM_STAMP_EVERY-th (see rx_stamp). */
	__atomic_store_n((uint32_t *)(p->tx_data + off + 4),
			 len >= SHM_STAMP_MIN || p->tx_frames % SHM_STAMP_EVERY == 0 ||
				 p->tx_frames < SHM_STAMP_FIRST
			     ? stamp_now()
			     : 0,
			 __ATOMIC_RELAXED);
	head += need;
	p->tx_head = head;
	atomic_store_explicit(&p->tx_ctl->head, head, memory_order_release);
	wake_receiver(l, p);
	p->tx_frames++;
	p->tx_bytes += len;
	return WEFT_OK;
}

/* ---- poll ---- */

static void rx_publish(wt_link_t *l)
{
	for (int i = 0; i < l->nactive; i++) {
		struct shm_peer *p = &l->peers[l->active[i]];

		if (p->rx_tail == p->rx_tail_pub)
			continue;
		atomic_store_explicit(&p->rx_ctl->tail, p->rx_tail, memory_order_release);
		p->rx_tail_pub = p->rx_tail;
		/* Pairs with the fence in tx_room(): a blocked producer is woken. */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&p->rx_ctl->prod_waiting, memory_order_relaxed) &&
		    atomic_exchange(&p->rx_ctl->prod_waiting, 0))
			ring_bell(p->bell);
	}
}

static void rx_corrupt(wt_link_t *l, int peer, const char *what, uint64_t val)
{
	WT_ERROR("shm: peer rank %d wrote a corrupt ring (%s %llu); dropping the peer", peer, what,
		 (unsigned long long)val);
	push_error(l, peer, WEFT_ERR_PROTOCOL);
}

/* A frame's stamp (0: none), seen now: how long it took to reach us is a sample of the
 * cores' placement (lib/util/place.h). A hostile peer's stamp can only mislead the choice
 * of stores. Returns whether it had one. */
static int rx_stamp(uint32_t stamp)
{
	uint64_t now;

	if (stamp == 0)
		return 0;
	now = wt_util_time_ns();
	wt_util_place_sample(wt_util_place_self(), (uint32_t)now - stamp, now);
	return 1;
}

/* Delivers up to max frames from peer's ring; they stay in place until the next poll. */
static int rx_peer(wt_link_t *l, int peer, wt_link_event_t *ev, int max)
{
	struct shm_peer *p = &l->peers[peer];
	uint64_t head = atomic_load_explicit(&p->rx_ctl->head, memory_order_acquire);
	uint64_t tail = p->rx_tail;
	int n = 0, stamped = 0;

	if (head - tail > WT_SHM_RING_CAP || (head & 7u)) {
		rx_corrupt(l, peer, "head", head);
		return 0;
	}
	while (n < max && tail != head) {
		uint64_t avail = head - tail;
		uint64_t off = tail & (WT_SHM_RING_CAP - 1);
		uint32_t len = __atomic_load_n((uint32_t *)(p->rx_data + off), __ATOMIC_RELAXED);
		uint64_t rec;

		if (len == WT_SHM_WRAP) {
			if (WT_SHM_RING_CAP - off > avail) {
				rx_corrupt(l, peer, "wrap at offset", off);
				break;
			}
			tail += WT_SHM_RING_CAP - off;
			continue;
		}
		rec = WT_SHM_REC_HDR + round8(len);
		if (len > WT_SHM_MAX_FRAME || rec > avail || off + rec > WT_SHM_RING_CAP) {
			rx_corrupt(l, peer, "frame length", len);
			break;
		}
		if (len >= SHM_WARM_FRAME)
			ring_warm(l, p->rx_data, &p->rx_warm, MADV_POPULATE_READ);
		/* the first stamped frame after a look that found none: we were looking when
		 * it came */
		if (p->rx_idle && !stamped)
			stamped = rx_stamp(
			    __atomic_load_n((uint32_t *)(p->rx_data + off + 4), __ATOMIC_RELAXED));
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_FRAME;
		ev[n].peer = peer;
		ev[n].data = p->rx_data + off + WT_SHM_REC_HDR;
		ev[n].len = len;
		n++;
		tail += rec;
		p->rx_frames++;
		p->rx_bytes += len;
	}
	p->rx_tail = tail;
	p->rx_idle = n == 0;
	if (p->state == SHM_PEER_DYING && tail == head)
		p->drained = 1;
	return n;
}

/* Report the drained dying peers in the order they were found gone (report_dying's
 * caller), none before a peer found earlier that still has frames to deliver. */
static void report_dying(wt_link_t *l)
{
	for (;;) {
		struct shm_peer *first = NULL;
		int fi = -1;

		for (int i = 0; i < l->nactive; i++) {
			struct shm_peer *p = &l->peers[l->active[i]];

			if (p->state == SHM_PEER_DYING &&
			    (first == NULL || p->dying_seq < first->dying_seq)) {
				first = p;
				fi = l->active[i];
			}
		}
		if (first == NULL || !first->drained)
			return;
		push_error(l, fi, WEFT_ERR_PEER_FAILED);
	}
}

static void mark_dead(wt_link_t *l, int peer)
{
	struct shm_peer *p = &l->peers[peer];

	if (p->state != SHM_PEER_UP)
		return;
	/* The channel above decides whether this is an error (ops were pending) or the
	 * normal end of a job. */
	WT_INFO("shm: peer rank %d (pid %d) has exited or closed its link", peer, (int)p->pid);
	p->state = SHM_PEER_DYING;
	p->dying_seq = ++l->dying_seq;
	l->ndying++;
	if (p->pidfd >= 0) {
		/* An exited pidfd stays readable: keep it out of the sleep set. */
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
		close(p->pidfd);
		p->pidfd = -1;
	}
}

/* Peers that exited without closing their link (killed, crashed) are found gone before
 * those that closed it in the same look: a rank that hears of a failure may destroy its
 * communicators and leave at once, and within one look (every SHM_LIVENESS_NS) the
 * peers would otherwise be reported as they come in the active list, so that a
 * communicator named the rank that left after the failure instead of the one that
 * failed. */
static void check_liveness(wt_link_t *l)
{
	int n = 0;

	for (int i = 0; i < l->nactive; i++) {
		struct shm_peer *p = &l->peers[l->active[i]];

		if (p->state != SHM_PEER_UP ||
		    atomic_load_explicit(&p->tx_hdr->closed, memory_order_acquire))
			continue;
		if (p->pidfd >= 0) {
			l->pfds[n].fd = p->pidfd;
			l->pfds[n].events = POLLIN;
			l->pfds[n].revents = 0;
			n++;
		} else if (kill(p->pid, 0) != 0 && errno == ESRCH) {
			mark_dead(l, l->active[i]);
		}
	}
	if (n > 0 && poll(l->pfds, (nfds_t)n, 0) > 0) {
		for (int i = 0; i < n; i++) {
			if (!l->pfds[i].revents)
				continue;
			for (int j = 0; j < l->nactive; j++) {
				if (l->peers[l->active[j]].pidfd == l->pfds[i].fd) {
					mark_dead(l, l->active[j]);
					break;
				}
			}
		}
	}
	for (int i = 0; i < l->nactive; i++) {
		struct shm_peer *p = &l->peers[l->active[i]];

		if (p->state == SHM_PEER_UP &&
		    atomic_load_explicit(&p->tx_hdr->closed, memory_order_acquire))
			mark_dead(l, l->active[i]);
	}
}

/* Publish our placement estimate in our header and take the mean of the peers' fresh ones
 * (see lib/util/place.h for why a mean). Returns whether both were known. */
static int place_share(wt_link_t *l, uint64_t now)
{
	wt_util_place_t *pl = wt_util_place_self();
	uint32_t own = wt_util_place_own(pl, now), n = 0;
	uint64_t sum = 0;

	atomic_store_explicit(&l->hdr->place, own ? wt_util_place_word(own, now) : 0,
			      memory_order_relaxed);
	wt_util_place_shared(pl, own);
	for (int i = 0; i < l->nactive; i++) {
		struct shm_peer *p = &l->peers[l->active[i]];
		uint32_t ns;

		if (p->state != SHM_PEER_UP)
			continue;
		ns = wt_util_place_word_ns(
		    atomic_load_explicit(&p->tx_hdr->place, memory_order_relaxed), now);
		if (ns != 0 && ns <= WT_UTIL_PLACE_MAX_SAMPLE_NS) {
			sum += ns;
			n++;
		}
	}
	wt_util_place_set_host(pl, n ? (uint32_t)(sum / n) : 0, n, now);
	return own != 0 && n != 0;
}

/* place_share, at most every SHM_PLACE_NS, and never where ranks share cores (place_on). */
static void place_due(wt_link_t *l, uint64_t now)
{
	if (!l->place_on || now < l->next_place_ns)
		return;
	/* until the placement is known, at every look (a sweep's first calls of a size are
	 * timed too) */
	l->next_place_ns = place_share(l, now) ? now + SHM_PLACE_NS : 0;
}

static void prune_active(wt_link_t *l)
{
	int k = 0;

	for (int i = 0; i < l->nactive; i++) {
		if (l->peers[l->active[i]].state != SHM_PEER_FAILED)
			l->active[k++] = l->active[i];
	}
	l->nactive = k;
}

static int shm_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	uint64_t now;
	int n, start;

	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	rx_publish(l);
	n = l->errq.len ? wt_link_errq_pop(&l->errq, ev, max) : 0;
	if ((++l->polls & (SHM_LIVENESS_POLLS - 1)) == 0) {
		now = wt_util_time_ns();
		if (now >= l->next_live_ns) {
			check_liveness(l);
			l->next_live_ns = now + SHM_LIVENESS_NS;
		}
		place_due(l, now);
	}
	start = l->nactive ? l->rr++ % l->nactive : 0;
	for (int i = 0; i < l->nactive && n < max; i++)
		n += rx_peer(l, l->active[(start + i) % l->nactive], ev + n, max - n);
	if (l->ndying > 0)
		report_dying(l);
	prune_active(l);
	if (l->errq.len)
		n += wt_link_errq_pop(&l->errq, ev + n, max - n);
	return n;
}

/* ---- sleeping ---- */

static int shm_fd(wt_link_t *l)
{
	return l ? l->epfd : -1;
}

static int rx_pending(wt_link_t *l)
{
	for (int i = 0; i < l->nactive; i++) {
		struct shm_peer *p = &l->peers[l->active[i]];

		if (p->state == SHM_PEER_DYING)
			return 1;
		if (atomic_load_explicit(&p->rx_ctl->head, memory_order_acquire) != p->rx_tail)
			return 1;
	}
	return 0;
}

static int shm_arm(wt_link_t *l)
{
	if (l == NULL)
		return 1;
	if (l->errq.len > 0)
		return 1;
	/* Frames delivered by the last poll are released now, not at the next one: a producer
	 * waiting for room would otherwise wait for our wake-up (and we for its data). */
	rx_publish(l);
	atomic_store_explicit(&l->hdr->sleeping, 1, memory_order_relaxed);
	asym_barrier(l);
	/* Liveness is checked now too: a dead peer would otherwise wake us in a loop. */
	check_liveness(l);
	if (rx_pending(l)) {
		atomic_store_explicit(&l->hdr->sleeping, 0, memory_order_relaxed);
		return 1;
	}
	return 0;
}

static void shm_disarm(wt_link_t *l)
{
	char buf[64];

	if (l == NULL)
		return;
	atomic_store_explicit(&l->hdr->sleeping, 0, memory_order_relaxed);
	for (int i = 0; i < SHM_BELL_DRAIN_MAX; i++) {
		if (recv(l->bell_fd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno != EINTR)
			break;
	}
}

/* ---- get ---- */

/* One-sided read (write = 0) or write of len bytes between local and the peer's
 * remote->addr + off, by cross-memory attach. */
static weft_status_t cma_rw(wt_link_t *l, int peer, void *local, const wt_link_remote_t *remote,
			    size_t off, size_t len, int write)
{
	const char *what = write ? "put" : "get";
	size_t done = 0;
	weft_status_t st = peer_usable(l, peer);

	if (st != WEFT_OK)
		return st;
	if (remote == NULL || (local == NULL && len > 0) || off > remote->len ||
	    len > remote->len - off || remote->addr + off < remote->addr ||
	    remote->addr + off + len < remote->addr + off) {
		WT_ERROR("shm: %s of %zu bytes at offset %zu %s peer rank %d is out of the "
			 "published range",
			 what, len, off, write ? "to" : "from", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	while (done < len) {
		struct iovec lv = {(uint8_t *)local + done, len - done};
		struct iovec rv = {(void *)(uintptr_t)(remote->addr + off + done), len - done};
		ssize_t n = write ? process_vm_writev(l->peers[peer].pid, &lv, 1, &rv, 1, 0)
				  : process_vm_readv(l->peers[peer].pid, &lv, 1, &rv, 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EFAULT;

			WT_ERROR("shm: %s of %zu bytes %s peer rank %d (pid %d) failed after "
				 "%zu bytes: %s",
				 what, len, write ? "to" : "from", peer, (int)l->peers[peer].pid,
				 done, strerror(err));
			if (err == ESRCH)
				return WEFT_ERR_PEER_FAILED;
			return err == EFAULT ? WEFT_ERR_INVALID_ARG : WEFT_ERR_SYSTEM;
		}
		done += (size_t)n;
	}
	return WEFT_OK;
}

static weft_status_t shm_get(wt_link_t *l, int peer, void *local, const wt_link_remote_t *remote,
			     size_t off, size_t len)
{
	return cma_rw(l, peer, local, remote, off, len, 0);
}

static weft_status_t shm_put(wt_link_t *l, int peer, const void *local,
			     const wt_link_remote_t *remote, size_t off, size_t len)
{
	return cma_rw(l, peer, (void *)(uintptr_t)local, remote, off, len, 1);
}

/* ---- peers' weft_mem regions ---- */

static int umap_desc_ok(const wt_util_umem_desc_t *d)
{
	return d->region != 0 && d->fd >= 0 && d->region_len > 0 && d->region_len <= SHM_UMAP_MAX &&
	       d->off <= d->region_len && d->len <= d->region_len - d->off;
}

/* Opens the peer's fd of the region and maps it; the fd must be one of weft_mem's memfds
 * of exactly the described size. */
static weft_status_t umap_open(wt_link_t *l, int peer, const wt_util_umem_desc_t *d,
			       struct shm_umap *u)
{
	const char want[] = "/memfd:" WT_UTIL_UMEM_NAME " (deleted)";
	char path[64], target[sizeof(want) + 1];
	struct stat stbuf;
	ssize_t n;
	void *m;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)l->peers[peer].pid, (int)d->fd);
	n = readlink(path, target, sizeof(target));
	if (n != (ssize_t)sizeof(want) - 1 || memcmp(target, want, sizeof(want) - 1) != 0) {
		WT_DEBUG("shm: %s of peer rank %d is not a weft_mem region", path, peer);
		return WEFT_ERR_INVALID_ARG;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		WT_DEBUG("shm: opening %s of peer rank %d failed: %s", path, peer, strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	if (fstat(fd, &stbuf) != 0 || !S_ISREG(stbuf.st_mode) ||
	    (uint64_t)stbuf.st_size != d->region_len) {
		WT_DEBUG("shm: %s of peer rank %d is not a region of %llu bytes", path, peer,
			 (unsigned long long)d->region_len);
		close(fd);
		return WEFT_ERR_INVALID_ARG;
	}
	m = mmap(NULL, (size_t)d->region_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		 0);
	close(fd);
	if (m == MAP_FAILED) {
		WT_DEBUG("shm: mapping %llu bytes of peer rank %d's region failed: %s",
			 (unsigned long long)d->region_len, peer, strerror(errno));
		return WEFT_ERR_NO_MEMORY;
	}
	u->region = d->region;
	u->fd = d->fd;
	u->base = m;
	u->len = (size_t)d->region_len;
	return WEFT_OK;
}

static void *shm_mem_map(wt_link_t *l, int peer, const wt_util_umem_desc_t *d)
{
	struct shm_peer *p;
	struct shm_umap *u = NULL, *lru = NULL;

	if (l == NULL || d == NULL || peer < 0 || peer >= l->size || peer == l->rank ||
	    !umap_desc_ok(d) || peer_usable(l, peer) != WEFT_OK)
		return NULL;
	p = &l->peers[peer];
	if (p->umaps == NULL && (p->umaps = calloc(SHM_UMAPS, sizeof(*p->umaps))) == NULL)
		return NULL;
	p->umap_tick++;
	for (int k = 0; k < SHM_UMAPS; k++) {
		struct shm_umap *c = &p->umaps[k];

		/* The same fd number under another id: that region is gone (its fd was closed). */
		if (c->region != 0 && c->fd == d->fd && c->region != d->region)
			umap_drop(c);
		if (c->region == d->region && c->fd == d->fd && c->len == d->region_len)
			u = c;
		if (lru == NULL || c->used < lru->used)
			lru = c;
	}
	if (u == NULL) {
		umap_drop(lru);
		if (umap_open(l, peer, d, lru) != WEFT_OK)
			return NULL;
		u = lru;
	}
	u->used = p->umap_tick;
	return u->base + d->off;
}

/* ---- slot areas ---- */

static void *shm_slot_area(wt_link_t *l, int rank, size_t *bytes)
{
	void *a = NULL;

	if (l == NULL || rank < 0 || rank >= l->size)
		return NULL;
	if (rank == l->rank)
		a = l->slot;
	else if (l->peers[rank].state != SHM_PEER_NONE)
		a = (void *)(uintptr_t)l->peers[rank].slot;
	if (a != NULL && bytes != NULL)
		*bytes = WT_SHM_SLOT_BYTES;
	return a;
}

/* Whether r names a connected peer other than ourselves (ranks from the layers above). */
static int peer_up(const wt_link_t *l, int r)
{
	return r >= 0 && r < l->size && r != l->rank && l->peers[r].state == SHM_PEER_UP;
}

/* A sleeping peer armed (flag, barrier, then looked at the slots), so after our store and
 * the fence, or its membarrier (asym_fence), either it saw the store or we see its flag.
 * One fence serves every peer. */
static void shm_slot_wake(wt_link_t *l, const int *peers, int npeers)
{
	int fenced = !l || !l->asym;

	if (l == NULL || peers == NULL)
		return;
	/* calls of slots alone never poll, where placement is shared otherwise */
	if (l->place_on && wt_util_place_take_want(wt_util_place_self()))
		place_due(l, wt_util_time_ns());
	if (fenced)
		atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < npeers; i++) {
		int r = peers[i];

		if (!peer_up(l, r))
			continue;
		if (!fenced && !asym_covers(l, l->peers[r].tx_hdr)) {
			atomic_thread_fence(memory_order_seq_cst);
			fenced = 1;
		}
		wake_if_sleeping(&l->peers[r]);
	}
}

/* Our CPU goes to our header only when it changed: peers read that line. */
static int shm_cpu_shared(wt_link_t *l, const int *peers, int n)
{
	int cpu = sched_getcpu();

	if (l == NULL || peers == NULL || cpu < 0)
		return 1;
	if (atomic_load_explicit(&l->hdr->cpu, memory_order_relaxed) != cpu)
		atomic_store_explicit(&l->hdr->cpu, cpu, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		int r = peers[i];

		if (!peer_up(l, r))
			continue;
		if (atomic_load_explicit(&l->peers[r].tx_hdr->cpu, memory_order_relaxed) == cpu)
			return 1;
	}
	return 0;
}

static weft_status_t shm_probe(char *msg, size_t msglen)
{
	if (access("/proc/self/fd", R_OK) != 0) {
		if (msg && msglen)
			snprintf(msg, msglen, "shm: /proc is not mounted");
		return WEFT_ERR_NO_DEVICE;
	}
	if (msg && msglen)
		msg[0] = '\0';
	return WEFT_OK;
}

static void shm_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	if (l == NULL || st == NULL || peer < 0 || peer >= l->size)
		return;
	const struct shm_peer *p = &l->peers[peer];

	st->frames_sent += p->tx_frames;
	st->bytes_sent += p->tx_bytes;
	st->frames_received += p->rx_frames;
	st->bytes_received += p->rx_bytes;
}

const wt_link_ops_t wt_shm_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "shm",
    .caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED | WT_LINK_CAP_GET | WT_LINK_CAP_HAS_FD |
	    WT_LINK_CAP_SLOTS,
    .probe = shm_probe,
    .open = shm_open_link,
    .address = shm_address,
    .connect = shm_connect,
    .send = shm_send,
    .poll = shm_poll,
    .get = shm_get,
    .fd = shm_fd,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .close = shm_close,
    .stats = shm_stats,
    .slot_area = shm_slot_area,
    .slot_wake = shm_slot_wake,
    .put = shm_put,
    .mem_map = shm_mem_map,
    .cpu_shared = shm_cpu_shared,
    .pipe_min = SHM_PIPE_MIN,
};
