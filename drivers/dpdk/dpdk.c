/* dpdk link driver (drivers/): weft frames as RoCEv2 packets over DPDK ports. Ranks of one
 * host are joined by a net_memif pair weft creates itself; other hosts are reached through
 * the port WEFT_DPDK_PORT names, shared by every dpdk link of the process. Unreliable and
 * unordered as far as the API is concerned: the channel's reliability layer runs above. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "drivers/dpdk/dpdk_int.h"
#include "drivers/dpdk/roce.h"
#include "drivers/link.h"
#include "lib/util/bytes.h"
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/time.h"

#define DP_FRAME_MAX 65536u
#define DP_FRAME_MIN 1024u
#define DP_PKTS_PER_FRAME 16u /* default max frame: this many path-MTU packets */
#define DP_MAX_RANKS (1 << 16)
#define DP_QP_MIN 16u /* QPs 0 and 1 are special in InfiniBand */
#define DP_QP_SPACE (1u << 24)
#define DP_24 0xffffffu
#define DP_BURST 32
#define DP_BACKLOG 2048 /* packets the PMD did not take yet, per path */
#define DP_ZRECS 4096	/* zero-copy frames in flight per link */
#define DP_ZC_MIN 1024	/* a payload piece this long goes by reference */
#define DP_INBOX 2048	/* named-port packets demultiplexed to one link */
#define DP_HELD 256	/* mbufs handed out as frames until the next poll */
#define DP_STASH DP_BURST
#define DP_SCRATCH 16384 /* a chained packet, made contiguous */
#define DP_RETRY_MIN_NS 1000000ull
#define DP_RETRY_MAX_NS 50000000ull
#define DP_SETTLE_S 0.2 /* how long a closing memif port waits for a handshake */
#define DP_NAP_MS 1	/* how long a sleeper may miss named-port traffic (no fd for it) */
#define DP_BLOB_MAGIC 0x5744504bu /* "WDPK" */
#define DP_BLOB_VERSION 1u
#define DP_BLOB_LEN 56
#define DP_FL_PORT 1u
#define DP_AETH_ACK 0x1f /* ACK, unlimited credits */
#define DP_SRC_PORT_BASE 0xc000u

/* Address blob, big-endian: magic 0, version 4, flags 6, rank 8, world size 12, max frame
 * 16, named-port RoCE MTU 20 (0 = no port), zero 22, MAC 24..29, zero 30, IPv4 32, QP base
 * 36, rkey 40, host hash 44, pid 52. */

extern const wt_link_ops_t wt_dpdk_ops;

struct dp_backlog {
	struct rte_mbuf **m;
	wt_link_t **owner; /* named port: whose packet (a closing link takes its own out) */
	uint32_t head, count, cap;
};

struct dp_memif {
	int created, started, server;
	int seen_up; /* packets went through: the handshake is over */
	uint16_t port;
	char name[32];
	char sock[WT_DPDK_PATH_MAX], alias[WT_DPDK_PATH_MAX];
	uint64_t retry_at, retry_ns, deadline;
	struct dp_backlog bl;
};

struct dp_rbuf {
	struct dp_rbuf *next;
	uint8_t data[DP_FRAME_MAX];
};

/* A frame some of whose bytes the mbufs still reference: SEND_DONE once DPDK let go. */
struct dp_zrec {
	struct rte_mbuf_ext_shared_info shinfo;
	atomic_int released;
	void *cookie;
};

struct dp_peer {
	int connected, local, failed;
	struct dp_memif mf; /* local: the pair's memif port */
	uint8_t mac[6], src_mac[6];
	uint32_t ip, src_ip;
	uint32_t qp;   /* destination QP of our packets: the peer's base + our rank */
	uint32_t rkey; /* the peer's */
	uint32_t pmtu;
	uint32_t tx_psn;
	uint64_t tx_va; /* bytes sent: the RETH virtual address of the next frame */
	uint16_t ip_id, src_port;
	/* receive */
	int rx_psn_valid, orphan;
	uint32_t rx_psn_next, rx_psn_last;
	struct dp_rbuf *as;
	uint32_t as_have, as_total;
	/* doorbell of a local peer */
	atomic_uint *asleep; /* the peer's word: a sender that finds it set clears it and rings */
	struct sockaddr_un bell;
	socklen_t bell_len;
	wt_link_counters_t ctr;
	uint64_t acks_received;
};

/* What the links of a process share about the named port (under its lock). */
struct dp_shared {
	struct dp_backlog bl;
	wt_link_t **links;
	int nlinks, cap;
	uint64_t foreign; /* not RoCE, or for no link of this process */
};

struct wt_link {
	wt_link_base_t base;
	int rank, size;
	char job[WT_DPDK_JOB_MAX + 1];
	wt_util_key_t key;
	double connect_timeout;
	uint64_t host_hash;
	wt_dpdk_port_t *np;
	uint32_t qp_base, rkey;
	uint8_t mac[6];
	uint32_t ip;
	uint8_t blob[DP_BLOB_LEN];
	struct dp_peer *peers;
	wt_link_errq_t errq;
	struct rte_mbuf **pk; /* one frame's packets while it is built */
	uint32_t pk_cap;
	struct dp_zrec *zr;
	uint32_t zr_head, zr_count;
	struct rte_mbuf *held[DP_HELD];
	int nheld;
	struct dp_rbuf *rfree, *rheld;
	struct rte_mbuf *stash[DP_STASH];
	int stash_peer[DP_STASH];
	int nstash;
	struct rte_mbuf **inbox; /* named port, under its lock */
	uint32_t in_head, in_count;
	uint8_t scratch[DP_SCRATCH];
	int bell_fd, armed;
	atomic_uint *asleep;
	char bell_path[WT_DPDK_PATH_MAX], flag_path[WT_DPDK_PATH_MAX];
	int *locals; /* peers reached over memif, in connect order */
	int nlocal, rr;
	int pending;  /* memif clients not started yet */
	int icrc_all; /* verify the ICRC on memif pairs too (WEFT_DPDK_ICRC=all) */
	uint64_t strangers, corrupt, inbox_drops;
};

static atomic_uint memif_seq;

/* ---- small helpers ---- */

static uint64_t host_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (s == NULL || s[0] == '\0')
		return 0;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h ? h : 1;
}

/* Addresses of a rank on a memif pair: locally administered MAC, 198.18.0.0/15. */
static void synth_mac(int rank, uint8_t *mac)
{
	mac[0] = 0x02;
	mac[1] = 'W';
	mac[2] = 'T';
	mac[3] = (uint8_t)(rank >> 16);
	mac[4] = (uint8_t)(rank >> 8);
	mac[5] = (uint8_t)rank;
}

static uint32_t synth_ip(int rank)
{
	return (198u << 24 | 18u << 16) + 1u + (uint32_t)rank % ((1u << 17) - 2u);
}

static weft_status_t backlog_init(struct dp_backlog *b, int owners)
{
	b->m = calloc(DP_BACKLOG, sizeof(*b->m));
	b->owner = owners ? calloc(DP_BACKLOG, sizeof(*b->owner)) : NULL;
	b->head = b->count = 0;
	b->cap = DP_BACKLOG;
	return b->m != NULL && (!owners || b->owner != NULL) ? WEFT_OK : WEFT_ERR_NO_MEMORY;
}

static void backlog_free(struct dp_backlog *b)
{
	while (b->count > 0) {
		rte_pktmbuf_free(b->m[b->head]);
		b->head = (b->head + 1) % b->cap;
		b->count--;
	}
	free(b->m);
	free(b->owner);
	b->m = NULL;
	b->owner = NULL;
}

/* Hands the backlog to the PMD; returns how many packets left. */
static uint32_t backlog_flush(struct dp_backlog *b, uint16_t port)
{
	while (b->count > 0) {
		uint32_t run = b->cap - b->head;
		uint16_t sent;

		if (run > b->count)
			run = b->count;
		if (run > DP_BURST)
			run = DP_BURST;
		sent = rte_eth_tx_burst(port, 0, &b->m[b->head], (uint16_t)run);
		b->head = (b->head + sent) % b->cap;
		b->count -= sent;
		if (sent < run)
			break;
	}
	return b->count;
}

static void backlog_push(struct dp_backlog *b, struct rte_mbuf *m, wt_link_t *owner)
{
	uint32_t i = (b->head + b->count) % b->cap;

	b->m[i] = m;
	if (b->owner)
		b->owner[i] = owner;
	b->count++;
}

/* Frees the packets of owner (a closing link) still waiting in a shared backlog. */
static void backlog_purge(struct dp_backlog *b, wt_link_t *owner)
{
	uint32_t keep = 0;

	for (uint32_t k = 0; k < b->count; k++) {
		uint32_t i = (b->head + k) % b->cap, j = (b->head + keep) % b->cap;

		if (b->owner[i] == owner) {
			rte_pktmbuf_free(b->m[i]);
			continue;
		}
		b->m[j] = b->m[i];
		b->owner[j] = b->owner[i];
		keep++;
	}
	b->count = keep;
}

/* ---- doorbells: a local peer that sleeps is woken by a datagram ---- */

static weft_status_t bell_open(wt_link_t *l)
{
	struct sockaddr_un sa;
	int fd;
	void *p;

	wt_dpdk_bell_paths(l->job, l->rank, l->bell_path, l->flag_path, sizeof(l->bell_path));
	fd = open(l->flag_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0) {
		WT_ERROR("dpdk: rank %d: creating %s failed: %s", l->rank, l->flag_path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return WEFT_ERR_SYSTEM;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		WT_ERROR("dpdk: rank %d: mapping %s failed: %s", l->rank, l->flag_path,
			 strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	l->asleep = p;
	atomic_store(l->asleep, 0);
	l->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->bell_path);
	unlink(l->bell_path);
	if (l->bell_fd < 0 || bind(l->bell_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		WT_ERROR("dpdk: rank %d: doorbell socket %s failed: %s", l->rank, l->bell_path,
			 strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	return WEFT_OK;
}

static void bell_close(wt_link_t *l)
{
	if (l->bell_fd >= 0) {
		close(l->bell_fd);
		unlink(l->bell_path);
	}
	if (l->asleep != NULL) {
		munmap(l->asleep, 4096);
		unlink(l->flag_path);
	}
}

/* Maps a local peer's "asleep" word; without it the peer is simply never rung (it then
 * notices frames when its sleep times out). */
static void bell_peer(wt_link_t *l, int peer)
{
	struct dp_peer *p = &l->peers[peer];
	char sock[WT_DPDK_PATH_MAX], flag[WT_DPDK_PATH_MAX];
	int fd;
	void *m;

	wt_dpdk_bell_paths(l->job, peer, sock, flag, sizeof(sock));
	fd = open(flag, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		WT_DEBUG("dpdk: rank %d: no doorbell for peer rank %d (%s): %s", l->rank, peer,
			 flag, strerror(errno));
		return;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	p->asleep = m;
	memset(&p->bell, 0, sizeof(p->bell));
	p->bell.sun_family = AF_UNIX;
	snprintf(p->bell.sun_path, sizeof(p->bell.sun_path), "%s", sock);
	p->bell_len = sizeof(p->bell);
}

static void bell_ring(wt_link_t *l, struct dp_peer *p)
{
	/* Pairs with the sleeper's store of its flag and fence before its last rx check:
	 * either it sees our packets or we see it asleep. */
	atomic_thread_fence(memory_order_seq_cst);
	if (p->asleep == NULL || atomic_load_explicit(p->asleep, memory_order_relaxed) == 0)
		return;
	/* One ring per sleep: the first sender to clear the word rings. */
	if (atomic_exchange(p->asleep, 0) == 1)
		sendto(l->bell_fd, "w", 1, MSG_DONTWAIT, (struct sockaddr *)&p->bell, p->bell_len);
}

/* ---- the named port's shared state ---- */

static weft_status_t shared_attach(wt_link_t *l)
{
	wt_dpdk_port_t *np = l->np;
	struct dp_shared *sh;
	weft_status_t st = WEFT_OK;

	pthread_mutex_lock(&np->lock);
	sh = np->data;
	if (sh == NULL) {
		sh = calloc(1, sizeof(*sh));
		if (sh == NULL || backlog_init(&sh->bl, 1) != WEFT_OK) {
			if (sh)
				backlog_free(&sh->bl);
			free(sh);
			pthread_mutex_unlock(&np->lock);
			return WEFT_ERR_NO_MEMORY;
		}
		np->data = sh;
	}
	if (sh->nlinks == sh->cap) {
		int cap = sh->cap ? 2 * sh->cap : 8;
		wt_link_t **n = realloc(sh->links, (size_t)cap * sizeof(*n));

		if (n == NULL)
			st = WEFT_ERR_NO_MEMORY;
		else {
			sh->links = n;
			sh->cap = cap;
		}
	}
	if (st == WEFT_OK)
		sh->links[sh->nlinks++] = l;
	pthread_mutex_unlock(&np->lock);
	return st;
}

static void shared_detach(wt_link_t *l)
{
	struct dp_shared *sh;

	pthread_mutex_lock(&l->np->lock);
	sh = l->np->data;
	for (int i = 0; sh != NULL && i < sh->nlinks; i++) {
		if (sh->links[i] == l) {
			sh->links[i] = sh->links[--sh->nlinks];
			break;
		}
	}
	if (sh != NULL)
		backlog_purge(&sh->bl, l);
	while (l->in_count > 0) {
		rte_pktmbuf_free(l->inbox[l->in_head]);
		l->in_head = (l->in_head + 1) % DP_INBOX;
		l->in_count--;
	}
	pthread_mutex_unlock(&l->np->lock);
}

/* The link a named-port packet is for: by destination QP. Lock held. */
static wt_link_t *shared_owner(struct dp_shared *sh, struct rte_mbuf *m)
{
	uint8_t tmp[WT_ROCE_ETH_LEN + WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + WT_ROCE_BTH_LEN];
	const uint8_t *p = rte_pktmbuf_read(m, 0, sizeof(tmp), tmp);
	uint32_t qp;

	if (p == NULL || wt_util_get_be16(p + 12) != 0x0800 || p[14] != 0x45 || p[23] != 17 ||
	    wt_util_get_be16(p + 36) != WT_ROCE_UDP_PORT)
		return NULL;
	qp = wt_util_get_be32(p + 46) & DP_24;
	for (int i = 0; i < sh->nlinks; i++) {
		wt_link_t *l = sh->links[i];

		if (qp >= l->qp_base && qp - l->qp_base < (uint32_t)l->size)
			return l;
	}
	return NULL;
}

/* One rx burst of the named port, sorted into the links' inboxes. Lock held. */
static void shared_rx(wt_dpdk_port_t *np)
{
	struct dp_shared *sh = np->data;
	struct rte_mbuf *m[DP_BURST];
	uint16_t n = rte_eth_rx_burst(np->port_id, 0, m, DP_BURST);

	for (uint16_t i = 0; i < n; i++) {
		wt_link_t *o = shared_owner(sh, m[i]);

		if (o == NULL) {
			sh->foreign++;
			rte_pktmbuf_free(m[i]);
		} else if (o->in_count == DP_INBOX) {
			o->inbox_drops++;
			rte_pktmbuf_free(m[i]);
		} else {
			o->inbox[(o->in_head + o->in_count) % DP_INBOX] = m[i];
			o->in_count++;
		}
	}
}

/* ---- memif pairs ---- */

static void memif_names(wt_link_t *l, int peer, struct dp_memif *mf)
{
	int lo = l->rank < peer ? l->rank : peer, hi = l->rank < peer ? peer : l->rank;

	wt_dpdk_memif_paths(l->job, lo, hi, mf->sock, mf->alias, sizeof(mf->sock));
	snprintf(mf->name, sizeof(mf->name), "net_memif_wt%u", atomic_fetch_add(&memif_seq, 1));
}

static void memif_args(wt_link_t *l, int peer, const struct dp_memif *mf, char *out, size_t len)
{
	int lo = l->rank < peer ? l->rank : peer, hi = l->rank < peer ? peer : l->rank;
	char secret[24];

	wt_dpdk_memif_secret(&l->key, l->job, lo, hi, secret, sizeof(secret));
	snprintf(out, len, "role=%s,id=0,socket=%s,socket-abstract=no,bsize=%d,rsize=%d,secret=%s",
		 mf->server ? "server" : "client", mf->server ? mf->sock : mf->alias,
		 WT_DPDK_MEMIF_BSIZE, WT_DPDK_MEMIF_RSIZE, secret);
}

/* The lower rank of a pair listens; its socket exists before its address is published. */
static weft_status_t memif_server(wt_link_t *l, int peer)
{
	struct dp_memif *mf = &l->peers[peer].mf;
	char args[384], why[512];
	weft_status_t st;

	memif_names(l, peer, mf);
	mf->server = 1;
	if (mf->bl.m == NULL && backlog_init(&mf->bl, 0) != WEFT_OK)
		return WEFT_ERR_NO_MEMORY;
	memif_args(l, peer, mf, args, sizeof(args));
	unlink(mf->sock); /* left by a process of this job that died */
	st = wt_dpdk_vdev_open(mf->name, args, 1, &mf->port, why, sizeof(why));
	if (st != WEFT_OK) {
		WT_ERROR("dpdk: rank %d: the memif port for peer rank %d: %s%s", l->rank, peer, why,
			 rte_eth_dev_count_total() >= RTE_MAX_ETHPORTS
			     ? " (DPDK allows " RTE_STR(RTE_MAX_ETHPORTS) " ports per process)"
			     : "");
		return st;
	}
	mf->created = mf->started = 1;
	return WEFT_OK;
}

static void memif_try_start(wt_link_t *l, int peer, uint64_t now)
{
	struct dp_memif *mf = &l->peers[peer].mf;
	struct stat sb;
	int r;

	/* Only when the server listens: a failed start makes the PMD log an error. */
	if (stat(mf->sock, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
		r = wt_dpdk_port_start(mf->port);
		if (r == 0) {
			mf->started = 1;
			l->pending--;
			return;
		}
		WT_DEBUG("dpdk: rank %d: memif client to peer rank %d not started yet (%d)",
			 l->rank, peer, r);
	}
	if (now >= mf->deadline) {
		WT_ERROR("dpdk: rank %d: peer rank %d never opened its memif socket %s within "
			 "%.1f s",
			 l->rank, peer, mf->sock, l->connect_timeout);
		l->peers[peer].failed = 1;
		l->pending--;
		wt_link_errq_push(&l->errq, peer, WEFT_ERR_TIMEOUT);
		return;
	}
	mf->retry_at = now + mf->retry_ns;
	mf->retry_ns = mf->retry_ns * 2 > DP_RETRY_MAX_NS ? DP_RETRY_MAX_NS : mf->retry_ns * 2;
}

/* The higher rank connects, through an alias of the server's socket. */
static weft_status_t memif_client(wt_link_t *l, int peer)
{
	struct dp_memif *mf = &l->peers[peer].mf;
	char args[384], why[512];
	weft_status_t st;

	memif_names(l, peer, mf);
	mf->server = 0;
	if (mf->bl.m == NULL && backlog_init(&mf->bl, 0) != WEFT_OK)
		return WEFT_ERR_NO_MEMORY;
	unlink(mf->alias);
	if (symlink(mf->sock, mf->alias) != 0) {
		WT_ERROR("dpdk: rank %d: linking %s to %s failed: %s", l->rank, mf->alias, mf->sock,
			 strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	memif_args(l, peer, mf, args, sizeof(args));
	st = wt_dpdk_vdev_open(mf->name, args, 0, &mf->port, why, sizeof(why));
	if (st != WEFT_OK) {
		WT_ERROR("dpdk: rank %d: the memif port to peer rank %d: %s", l->rank, peer, why);
		unlink(mf->alias);
		return st;
	}
	mf->created = 1;
	mf->retry_ns = DP_RETRY_MIN_NS;
	mf->deadline = wt_util_deadline_in(l->connect_timeout);
	l->pending++;
	memif_try_start(l, peer, wt_util_time_ns());
	return WEFT_OK;
}

/* net_memif in DPDK 22.11 panics in the interrupt thread when one end of a pair goes away
 * while the pair's handshake is still running: give a started handshake time to finish. */
static void memif_settle(const struct dp_memif *mf)
{
	uint64_t deadline = wt_util_deadline_in(DP_SETTLE_S);

	while (!wt_dpdk_link_up(mf->port) && !wt_util_deadline_passed(deadline))
		wt_util_sleep_ns(1000000);
}

static void memif_close(struct dp_memif *mf, int expected)
{
	if (mf->created && mf->started && !mf->seen_up && (expected || !mf->server))
		memif_settle(mf);
	if (mf->created) {
		backlog_free(&mf->bl);
		wt_dpdk_vdev_close(mf->port, mf->name);
		if (mf->server)
			unlink(mf->sock);
		else
			unlink(mf->alias);
	} else {
		free(mf->bl.m);
	}
	mf->created = mf->started = 0;
}

/* ---- open / address / close ---- */

static void zrec_release(void *addr, void *opaque)
{
	struct dp_zrec *r = opaque;

	(void)addr;
	atomic_store_explicit(&r->released, 1, memory_order_release);
}

/* WEFT_DPDK_ICRC: "wire" (default) verifies the ICRC of what arrives on the named port;
 * memif pairs are shared memory written by weft itself, which cannot corrupt a packet,
 * and checking there costs a pass over every byte (the sender always computes it, so the
 * frames stay genuine RoCEv2). "all" verifies everywhere. */
static weft_status_t icrc_setup(wt_link_t *l)
{
	const char *v = wt_util_env_str("WEFT_DPDK_ICRC");

	if (v == NULL || strcmp(v, "wire") == 0)
		return WEFT_OK;
	if (strcmp(v, "all") == 0) {
		l->icrc_all = 1;
		return WEFT_OK;
	}
	WT_ERROR("dpdk: WEFT_DPDK_ICRC='%.40s' is not one of wire, all", v);
	return WEFT_ERR_INVALID_ARG;
}

static weft_status_t max_frame_setup(wt_link_t *l)
{
	char err[160];
	int64_t v;
	uint32_t def = DP_FRAME_MAX;

	if (l->np != NULL && DP_PKTS_PER_FRAME * l->np->pmtu < def)
		def = DP_PKTS_PER_FRAME * l->np->pmtu;
	if (wt_util_env_int("WEFT_DPDK_FRAME", def, DP_FRAME_MIN, DP_FRAME_MAX, &v, err,
			    sizeof(err)) != WEFT_OK) {
		WT_ERROR("dpdk: %s", err);
		return WEFT_ERR_INVALID_ARG;
	}
	l->base.max_frame = (size_t)v;
	/* packets of one frame at the smallest path MTU, and an ACKNOWLEDGE */
	l->pk_cap = (uint32_t)(v + WT_DPDK_IB_MTU_MIN - 1) / WT_DPDK_IB_MTU_MIN + 2;
	return WEFT_OK;
}

static weft_status_t link_alloc(const wt_link_config_t *cfg, wt_link_t **out)
{
	wt_link_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return WEFT_ERR_NO_MEMORY;
	*out = l;
	l->bell_fd = -1;
	l->rank = cfg->rank;
	l->size = cfg->size;
	snprintf(l->job, sizeof(l->job), "%s", cfg->job_id);
	l->key = cfg->key;
	l->connect_timeout = cfg->connect_timeout > 0 ? cfg->connect_timeout : 60;
	l->host_hash = host_hash(cfg->host_id);
	l->peers = calloc((size_t)cfg->size, sizeof(*l->peers));
	l->zr = calloc(DP_ZRECS, sizeof(*l->zr));
	l->inbox = calloc(DP_INBOX, sizeof(*l->inbox));
	l->locals = calloc((size_t)cfg->size, sizeof(*l->locals));
	if (l->peers == NULL || l->zr == NULL || l->inbox == NULL || l->locals == NULL ||
	    wt_link_errq_init(&l->errq, cfg->size) != WEFT_OK) {
		WT_ERROR("dpdk: out of memory for a link of %d peers", cfg->size);
		return WEFT_ERR_NO_MEMORY;
	}
	for (int i = 0; i < DP_ZRECS; i++) {
		l->zr[i].shinfo.free_cb = zrec_release;
		l->zr[i].shinfo.fcb_opaque = &l->zr[i];
	}
	return WEFT_OK;
}

static void blob_build(wt_link_t *l)
{
	uint8_t *b = l->blob;

	memset(b, 0, DP_BLOB_LEN);
	wt_util_put_be32(b, DP_BLOB_MAGIC);
	wt_util_put_be16(b + 4, DP_BLOB_VERSION);
	wt_util_put_be16(b + 6, l->np ? DP_FL_PORT : 0);
	wt_util_put_be32(b + 8, (uint32_t)l->rank);
	wt_util_put_be32(b + 12, (uint32_t)l->size);
	wt_util_put_be32(b + 16, (uint32_t)l->base.max_frame);
	wt_util_put_be16(b + 20, (uint16_t)(l->np ? l->np->pmtu : 0));
	memcpy(b + 24, l->mac, 6);
	wt_util_put_be32(b + 32, l->ip);
	wt_util_put_be32(b + 36, l->qp_base);
	wt_util_put_be32(b + 40, l->rkey);
	wt_util_put_be64(b + 44, l->host_hash);
	wt_util_put_be32(b + 52, (uint32_t)getpid());
}

static void idents_setup(wt_link_t *l)
{
	uint32_t r[2];

	wt_util_random(r, sizeof(r));
	l->qp_base = DP_QP_MIN + r[0] % (DP_QP_SPACE - DP_QP_MIN - (uint32_t)l->size);
	l->rkey = r[1] ? r[1] : 1;
	if (l->np != NULL) {
		memcpy(l->mac, l->np->mac, 6);
		l->ip = l->np->ip;
	} else {
		synth_mac(l->rank, l->mac);
		l->ip = synth_ip(l->rank);
	}
}

static void release_held(wt_link_t *l)
{
	if (l->nheld > 0) {
		rte_pktmbuf_free_bulk(l->held, (unsigned)l->nheld);
		l->nheld = 0;
	}
	while (l->rheld != NULL) {
		struct dp_rbuf *b = l->rheld;

		l->rheld = b->next;
		b->next = l->rfree;
		l->rfree = b;
	}
}

static void rbufs_free(struct dp_rbuf *b)
{
	while (b != NULL) {
		struct dp_rbuf *n = b->next;

		free(b);
		b = n;
	}
}

static void dpdk_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	if (l->np != NULL)
		shared_detach(l);
	for (int i = 0; l->peers != NULL && i < l->size; i++) {
		struct dp_peer *p = &l->peers[i];

		memif_close(&p->mf, p->connected && !p->failed);
		if (p->as != NULL) {
			p->as->next = l->rfree;
			l->rfree = p->as;
		}
		if (p->asleep != NULL)
			munmap(p->asleep, 4096);
	}
	release_held(l);
	if (l->nstash > 0)
		rte_pktmbuf_free_bulk(l->stash, (unsigned)l->nstash);
	bell_close(l);
	if (l->strangers || l->corrupt || l->inbox_drops)
		WT_DEBUG("dpdk: rank %d closed; dropped %llu packets for unknown QPs or sources, "
			 "%llu undecodable, %llu beyond the inbox",
			 l->rank, (unsigned long long)l->strangers, (unsigned long long)l->corrupt,
			 (unsigned long long)l->inbox_drops);
	rbufs_free(l->rfree);
	wt_link_errq_free(&l->errq);
	free(l->pk);
	free(l->zr);
	free(l->inbox);
	free(l->locals);
	free(l->peers);
	free(l);
}

static weft_status_t dpdk_open(const wt_link_config_t *cfg, wt_link_t **link)
{
	char why[512];
	wt_link_t *l = NULL;
	weft_status_t st;

	if (cfg == NULL || link == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = wt_link_config_check("dpdk", cfg, DP_MAX_RANKS, WT_DPDK_JOB_MAX, ",=/\\\"'");
	if (st != WEFT_OK)
		return st;
	st = wt_dpdk_eal_start(why, sizeof(why));
	if (st != WEFT_OK) {
		WT_ERROR("dpdk: cannot open a link: %s", why);
		return st;
	}
	st = link_alloc(cfg, &l);
	if (st == WEFT_OK) {
		st = wt_dpdk_named_port(&l->np, why, sizeof(why));
		if (st != WEFT_OK)
			WT_ERROR("dpdk: cannot open a link: %s", why);
	}
	if (st == WEFT_OK)
		st = max_frame_setup(l);
	if (st == WEFT_OK)
		st = icrc_setup(l);
	if (st == WEFT_OK) {
		l->pk = calloc(l->pk_cap, sizeof(*l->pk));
		st = l->pk ? WEFT_OK : WEFT_ERR_NO_MEMORY;
	}
	if (st == WEFT_OK)
		st = bell_open(l);
	if (st == WEFT_OK && l->np != NULL)
		st = shared_attach(l);
	if (st == WEFT_OK)
		idents_setup(l);
	/* Without a named port every peer is local: listen for the higher ranks now. */
	for (int r = l->rank + 1; st == WEFT_OK && l->np == NULL && r < l->size; r++)
		st = memif_server(l, r);
	if (st != WEFT_OK) {
		dpdk_close(l);
		return st;
	}
	l->base.ops = &wt_dpdk_ops;
	blob_build(l);
	WT_DEBUG("dpdk: rank %d open: %s, max frame %zu, QPs 0x%06x..", l->rank,
		 l->np ? l->np->name : "memif pairs only", l->base.max_frame, l->qp_base);
	*link = l;
	return WEFT_OK;
}

static weft_status_t dpdk_address(wt_link_t *l, void *blob, size_t *len)
{
	if (l == NULL || blob == NULL || len == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (*len < DP_BLOB_LEN) {
		WT_ERROR("dpdk: address buffer of %zu bytes is smaller than %d", *len, DP_BLOB_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(blob, l->blob, DP_BLOB_LEN);
	*len = DP_BLOB_LEN;
	return WEFT_OK;
}

/* ---- connect ---- */

static int mac_ok(const uint8_t *m)
{
	static const uint8_t zero[6];

	return (m[0] & 1) == 0 && memcmp(m, zero, 6) != 0;
}

static int pmtu_ok(uint32_t v)
{
	return v >= WT_DPDK_IB_MTU_MIN && v <= WT_DPDK_IB_MTU_MAX && (v & (v - 1)) == 0;
}

static const char *blob_check(const wt_link_t *l, int peer, const uint8_t *b)
{
	uint16_t flags = wt_util_get_be16(b + 6);
	uint32_t mf = wt_util_get_be32(b + 16), pmtu = wt_util_get_be16(b + 20);
	uint32_t ip = wt_util_get_be32(b + 32), qp = wt_util_get_be32(b + 36);

	if (wt_util_get_be32(b) != DP_BLOB_MAGIC || wt_util_get_be16(b + 4) != DP_BLOB_VERSION)
		return "bad magic or version";
	if ((flags & ~DP_FL_PORT) != 0)
		return "unknown flags";
	if (wt_util_get_be32(b + 8) != (uint32_t)peer ||
	    wt_util_get_be32(b + 12) != (uint32_t)l->size)
		return "rank or world size does not match";
	if (mf < DP_FRAME_MIN || mf > DP_FRAME_MAX)
		return "bad max frame";
	if ((flags & DP_FL_PORT) ? !pmtu_ok(pmtu) : pmtu != 0)
		return "bad RoCE MTU";
	if (wt_util_get_be16(b + 22) != 0 || wt_util_get_be16(b + 30) != 0)
		return "bad padding";
	if (!mac_ok(b + 24))
		return "MAC address is not unicast";
	if ((ip >> 24) == 0 || (ip >> 24) == 127 || (ip >> 24) >= 224)
		return "IPv4 address is not unicast";
	if (qp < DP_QP_MIN || qp > DP_QP_SPACE - (uint32_t)l->size)
		return "QP number out of range";
	if (wt_util_get_be32(b + 40) == 0)
		return "zero rkey";
	return NULL;
}

/* Local: a memif pair; otherwise through the named port. */
static weft_status_t peer_path(wt_link_t *l, int peer, const uint8_t *b, int *local)
{
	uint64_t hh = wt_util_get_be64(b + 44);
	int same = hh != 0 && l->host_hash != 0 && hh == l->host_hash;
	int differ = hh != 0 && l->host_hash != 0 && hh != l->host_hash;

	if (l->np == NULL) {
		if (differ) {
			WT_ERROR("dpdk: rank %d: peer rank %d is on another host and this process "
				 "has no DPDK port to reach it: set WEFT_DPDK_PORT (e.g. "
				 "net_af_packet0,iface=eth0)",
				 l->rank, peer);
			return WEFT_ERR_NO_DEVICE;
		}
		*local = 1;
		return WEFT_OK;
	}
	if (!same && !(wt_util_get_be16(b + 6) & DP_FL_PORT)) {
		WT_ERROR("dpdk: rank %d: peer rank %d is on another host but has no DPDK port "
			 "(WEFT_DPDK_PORT is unset there)",
			 l->rank, peer);
		return WEFT_ERR_NO_DEVICE;
	}
	*local = same;
	return WEFT_OK;
}

static weft_status_t dpdk_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	struct dp_peer *p;
	const uint8_t *b = blob;
	const char *why;
	int local = 0;
	weft_status_t st;

	if (l == NULL || peer < 0 || peer >= l->size || peer == l->rank) {
		WT_ERROR("dpdk: connect to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (p->connected) {
		WT_ERROR("dpdk: connect to peer rank %d called twice", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (blob == NULL || len != DP_BLOB_LEN) {
		WT_ERROR("dpdk: address of peer rank %d has %zu bytes, expected %d", peer,
			 blob ? len : 0, DP_BLOB_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	why = blob_check(l, peer, b);
	if (why != NULL) {
		WT_ERROR("dpdk: address of peer rank %d is malformed: %s", peer, why);
		return WEFT_ERR_INVALID_ARG;
	}
	st = peer_path(l, peer, b, &local);
	if (st != WEFT_OK)
		return st;
	p->local = local;
	p->qp = wt_util_get_be32(b + 36) + (uint32_t)l->rank;
	p->rkey = wt_util_get_be32(b + 40);
	p->src_port = (uint16_t)(DP_SRC_PORT_BASE | ((l->qp_base + (uint32_t)peer) & 0x3fff));
	if (local) {
		synth_mac(peer, p->mac);
		p->ip = synth_ip(peer);
		synth_mac(l->rank, p->src_mac);
		p->src_ip = synth_ip(l->rank);
		p->pmtu = WT_DPDK_IB_MTU_MAX;
		if (!p->mf.created)
			st = peer > l->rank ? memif_server(l, peer) : memif_client(l, peer);
		if (st != WEFT_OK)
			return st;
		bell_peer(l, peer);
		l->locals[l->nlocal++] = peer;
	} else {
		uint32_t pm = wt_util_get_be16(b + 20);

		memcpy(p->mac, b + 24, 6);
		p->ip = wt_util_get_be32(b + 32);
		memcpy(p->src_mac, l->mac, 6);
		p->src_ip = l->ip;
		p->pmtu = pm < l->np->pmtu ? pm : l->np->pmtu;
	}
	p->connected = 1;
	WT_DEBUG("dpdk: rank %d: peer rank %d over %s, QP 0x%06x, %u-byte packets", l->rank, peer,
		 local ? "memif" : l->np->name, p->qp, p->pmtu);
	return WEFT_OK;
}

/* ---- send ---- */

/* One frame's packets while they are built. */
struct dp_build {
	struct rte_mempool *mp;
	int zc;		     /* payload pieces of DP_ZC_MIN bytes and more go by reference */
	struct dp_zrec *rec; /* whose shared info the referencing segments carry */
	uint32_t nref;
	const struct iovec *iov;
	int vi;
	size_t voff;
};

/* Appends len bytes by copy; a new segment when the tail is external or full. */
static int seg_copy(struct dp_build *b, struct rte_mbuf *head, struct rte_mbuf **tail,
		    const uint8_t *src, size_t len)
{
	while (len > 0) {
		struct rte_mbuf *t = *tail;
		size_t room, k;

		if (RTE_MBUF_HAS_EXTBUF(t) || rte_pktmbuf_tailroom(t) == 0) {
			struct rte_mbuf *n = rte_pktmbuf_alloc(b->mp);

			if (n == NULL)
				return -1;
			t->next = n;
			head->nb_segs++;
			*tail = t = n;
		}
		room = rte_pktmbuf_tailroom(t);
		k = len < room ? len : room;
		memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len), src, k);
		t->data_len = (uint16_t)(t->data_len + k);
		head->pkt_len += (uint32_t)k;
		src += k;
		len -= k;
	}
	return 0;
}

/* Appends len bytes of the caller's memory by reference. */
static int seg_ref(struct dp_build *b, struct rte_mbuf *head, struct rte_mbuf **tail,
		   const uint8_t *src, size_t len)
{
	struct rte_mbuf *n = rte_pktmbuf_alloc(b->mp);

	if (n == NULL)
		return -1;
	rte_mbuf_ext_refcnt_update(&b->rec->shinfo, 1);
	b->nref++;
	rte_pktmbuf_attach_extbuf(n, (void *)(uintptr_t)src, RTE_BAD_IOVA, (uint16_t)len,
				  &b->rec->shinfo);
	n->data_len = (uint16_t)len;
	(*tail)->next = n;
	head->nb_segs++;
	head->pkt_len += (uint32_t)len;
	*tail = n;
	return 0;
}

/* Headers, paylen bytes from the iov cursor, pad and ICRC. */
static struct rte_mbuf *pkt_build(struct dp_build *b, const wt_roce_hdr_t *h, size_t paylen)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->mp), *tail = m;
	uint8_t tr[WT_ROCE_TRAILER_MAX];
	uint32_t icrc = 0;
	size_t hl, left = paylen;

	if (m == NULL)
		return NULL;
	hl = wt_roce_build(h, paylen, rte_pktmbuf_mtod(m, uint8_t *), &icrc);
	m->data_len = (uint16_t)hl;
	m->pkt_len = (uint32_t)hl;
	while (hl > 0 && left > 0) {
		const struct iovec *v = &b->iov[b->vi];
		const uint8_t *src = (const uint8_t *)v->iov_base + b->voff;
		size_t k = v->iov_len - b->voff;
		int r;

		if (k == 0) {
			b->vi++;
			b->voff = 0;
			continue;
		}
		if (k > left)
			k = left;
		icrc = wt_roce_icrc_update(icrc, src, k);
		r = b->zc && k >= DP_ZC_MIN ? seg_ref(b, m, &tail, src, k)
					    : seg_copy(b, m, &tail, src, k);
		if (r != 0)
			break;
		b->voff += k;
		left -= k;
	}
	if (hl == 0 || left > 0 || seg_copy(b, m, &tail, tr, wt_roce_trailer(icrc, paylen, tr))) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

static uint8_t data_opcode(uint32_t i, uint32_t n, int kind)
{
	if (n == 1)
		return kind == WT_LINK_FRAME_DATA ? WT_ROCE_OP_WRITE_ONLY : WT_ROCE_OP_SEND_ONLY;
	if (i == 0)
		return WT_ROCE_OP_WRITE_FIRST;
	return i + 1 == n ? WT_ROCE_OP_WRITE_LAST : WT_ROCE_OP_WRITE_MIDDLE;
}

static void hdr_base(const struct dp_peer *p, wt_roce_hdr_t *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->dst_mac, p->mac, 6);
	memcpy(h->src_mac, p->src_mac, 6);
	h->src_ip = p->src_ip;
	h->dst_ip = p->ip;
	h->src_port = p->src_port;
	h->dst_qp = p->qp;
}

/* Builds every packet of the frame into l->pk; returns how many, 0 if mbufs ran out. An
 * acknowledgement goes as an ACKNOWLEDGE (AETH: weft's cumulative ack as the MSN, the
 * last PSN received as the PSN) followed by the frame itself as a SEND. */
static uint32_t frame_build(wt_link_t *l, struct dp_peer *p, struct dp_build *b, size_t total,
			    const wt_link_frame_info_t *info, int kind)
{
	uint32_t n = 0, npay = total <= p->pmtu ? 1 : (uint32_t)((total + p->pmtu - 1) / p->pmtu);
	uint32_t psn = p->tx_psn;
	uint16_t ip_id = p->ip_id;
	wt_roce_hdr_t h;

	if (kind == WT_LINK_FRAME_ACK && npay == 1) {
		hdr_base(p, &h);
		h.opcode = WT_ROCE_OP_ACKNOWLEDGE;
		h.psn = p->rx_psn_last;
		h.syndrome = DP_AETH_ACK;
		h.msn = (uint32_t)(info->ack & DP_24);
		h.ip_id = ip_id++;
		if ((l->pk[n] = pkt_build(b, &h, 0)) == NULL)
			goto fail;
		n++;
	}
	for (uint32_t i = 0; i < npay; i++) {
		size_t off = (size_t)i * p->pmtu;

		hdr_base(p, &h);
		h.opcode =
		    data_opcode(i, npay, kind == WT_LINK_FRAME_ACK ? WT_LINK_FRAME_CTRL : kind);
		h.psn = psn;
		psn = (psn + 1) & DP_24;
		h.ip_id = ip_id++;
		h.ack_req = i + 1 == npay && info != NULL && info->ack_req;
		h.va = p->tx_va;
		h.rkey = p->rkey;
		h.dma_len = (uint32_t)total;
		if ((l->pk[n] = pkt_build(b, &h, total - off < p->pmtu ? total - off : p->pmtu)) ==
		    NULL)
			goto fail;
		n++;
	}
	p->tx_psn = psn;
	p->ip_id = ip_id;
	p->tx_va += total;
	return n;
fail:
	if (n > 0)
		rte_pktmbuf_free_bulk(l->pk, n);
	return 0;
}

static int needs_ref(const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len >= DP_ZC_MIN)
			return 1;
	}
	return 0;
}

/* Hands n built packets to the port after what already waits; the rest wait. */
static void frame_enqueue(wt_link_t *l, struct dp_peer *p, struct dp_backlog *bl, uint16_t port,
			  int ready, uint32_t n)
{
	uint32_t sent = 0;

	if (ready && bl->count == 0)
		sent = rte_eth_tx_burst(port, 0, l->pk, (uint16_t)n);
	for (uint32_t i = sent; i < n; i++)
		backlog_push(bl, l->pk[i], l);
	if (ready && sent == 0 && bl->count > 0) {
		uint32_t before = bl->count;

		sent = before - backlog_flush(bl, port);
	}
	if (sent > 0 && p->local) {
		p->mf.seen_up = 1;
		bell_ring(l, p);
	}
}

static weft_status_t send_frame(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				void *cookie, const wt_link_frame_info_t *info)
{
	struct dp_peer *p;
	struct dp_backlog *bl;
	struct dp_build b = {.mp = wt_dpdk_pool(), .iov = iov};
	uint16_t port;
	int ready, kind = info != NULL ? info->kind : WT_LINK_FRAME_DATA;
	size_t total;
	uint32_t npk, n;

	if (l == NULL || peer < 0 || peer >= l->size || peer == l->rank) {
		WT_ERROR("dpdk: send to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (!p->connected) {
		WT_ERROR("dpdk: send to peer rank %d before connect", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_link_iov_total(iov, iovcnt, l->base.max_frame, &total) != WEFT_OK) {
		WT_ERROR("dpdk: bad iov for a frame to peer rank %d (at most %zu bytes)", peer,
			 l->base.max_frame);
		return WEFT_ERR_INVALID_ARG;
	}
	if (p->failed)
		return WEFT_ERR_PEER_FAILED;
	if (kind < WT_LINK_FRAME_DATA || kind > WT_LINK_FRAME_CTRL)
		kind = WT_LINK_FRAME_DATA;
	npk = (total <= p->pmtu ? 1 : (uint32_t)((total + p->pmtu - 1) / p->pmtu)) +
	      (kind == WT_LINK_FRAME_ACK && total <= p->pmtu);
	if (p->local) {
		bl = &p->mf.bl;
		port = p->mf.port;
		ready = p->mf.started;
		b.zc = 1;
	} else {
		pthread_mutex_lock(&l->np->lock);
		bl = &((struct dp_shared *)l->np->data)->bl;
		port = l->np->port_id;
		ready = 1;
		b.zc = l->np->zero_copy && l->np->multiseg;
	}
	if (ready && bl->count > 0)
		backlog_flush(bl, port);
	/* A caller without a cookie takes no SEND_DONE: its frame is copied. */
	b.zc = b.zc && cookie != NULL && needs_ref(iov, iovcnt);
	if (bl->count + npk > bl->cap || (b.zc && l->zr_count == DP_ZRECS)) {
		if (!p->local)
			pthread_mutex_unlock(&l->np->lock);
		return WT_AGAIN; /* nothing taken */
	}
	if (b.zc) {
		b.rec = &l->zr[(l->zr_head + l->zr_count) % DP_ZRECS];
		atomic_store(&b.rec->released, 0);
		b.rec->cookie = cookie;
		rte_mbuf_ext_refcnt_set(&b.rec->shinfo, 1); /* held while the frame is built */
	}
	n = frame_build(l, p, &b, total, info, kind);
	if (b.zc && rte_mbuf_ext_refcnt_update(&b.rec->shinfo, -1) == 0)
		b.nref = 0; /* no segment references the frame (or none was built) */
	if (n > 0) {
		frame_enqueue(l, p, bl, port, ready, n);
		p->ctr.frames_sent++;
		p->ctr.bytes_sent += total;
	}
	if (!p->local)
		pthread_mutex_unlock(&l->np->lock);
	if (n == 0)
		return WT_AGAIN; /* the mbuf pool is empty for now */
	if (b.nref == 0)
		return WEFT_OK;
	l->zr_count++;
	return WEFT_INPROGRESS;
}

static weft_status_t dpdk_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			       void *cookie)
{
	return send_frame(l, peer, iov, iovcnt, cookie, NULL);
}

static weft_status_t dpdk_send_info(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				    void *cookie, const wt_link_frame_info_t *info)
{
	return send_frame(l, peer, iov, iovcnt, cookie, info);
}

/* ---- receive ---- */

static struct dp_rbuf *rbuf_get(wt_link_t *l)
{
	struct dp_rbuf *b = l->rfree;

	if (b != NULL) {
		l->rfree = b->next;
		return b;
	}
	b = malloc(sizeof(*b));
	if (b == NULL)
		WT_WARN("dpdk: rank %d: out of memory for a %u-byte receive buffer; frame dropped",
			l->rank, DP_FRAME_MAX);
	return b;
}

/* Drops the frame being reassembled from p (a packet of it went missing). */
static void as_abandon(wt_link_t *l, struct dp_peer *p)
{
	if (p->as != NULL) {
		p->as->next = l->rfree;
		l->rfree = p->as;
		p->as = NULL;
		p->ctr.drops++;
	}
	p->orphan = 1;
}

static int deliver(wt_link_t *l, int peer, const uint8_t *data, size_t len, wt_link_event_t *ev)
{
	struct dp_peer *p = &l->peers[peer];

	memset(ev, 0, sizeof(*ev));
	ev->type = WT_LINK_EV_FRAME;
	ev->peer = peer;
	ev->data = data;
	ev->len = len;
	p->ctr.frames_received++;
	p->ctr.bytes_received += len;
	return 1;
}

/* A single-packet frame: handed out from the mbuf, which is kept until the next poll. */
static int rx_single(wt_link_t *l, int peer, struct rte_mbuf *m, const uint8_t *d, size_t plen,
		     wt_link_event_t *ev)
{
	struct dp_rbuf *b;

	if (d >= rte_pktmbuf_mtod(m, const uint8_t *) &&
	    d + plen <= rte_pktmbuf_mtod(m, const uint8_t *) + m->data_len && l->nheld < DP_HELD) {
		l->held[l->nheld++] = m;
		return deliver(l, peer, d, plen, ev);
	}
	b = rbuf_get(l);
	if (b == NULL) {
		l->peers[peer].ctr.drops++;
		rte_pktmbuf_free(m);
		return 0;
	}
	memcpy(b->data, d, plen);
	rte_pktmbuf_free(m);
	b->next = l->rheld;
	l->rheld = b;
	return deliver(l, peer, b->data, plen, ev);
}

/* WRITE FIRST / MIDDLE / LAST: copied into the peer's reassembly buffer. */
static int rx_part(wt_link_t *l, int peer, const wt_roce_hdr_t *h, const uint8_t *d, size_t plen,
		   wt_link_event_t *ev)
{
	struct dp_peer *p = &l->peers[peer];
	int last = h->opcode == WT_ROCE_OP_WRITE_LAST;

	if (h->opcode == WT_ROCE_OP_WRITE_FIRST) {
		as_abandon(l, p);
		p->orphan = 0;
		if (h->dma_len <= plen || h->dma_len > DP_FRAME_MAX || plen == 0) {
			p->ctr.corrupt++;
			return 0;
		}
		p->as = rbuf_get(l);
		if (p->as == NULL) {
			p->ctr.drops++;
			p->orphan = 1;
			return 0;
		}
		memcpy(p->as->data, d, plen);
		p->as_have = (uint32_t)plen;
		p->as_total = h->dma_len;
		return 0;
	}
	if (p->as == NULL) {
		if (!p->orphan)
			p->ctr.drops++; /* its first packet was lost */
		p->orphan = 1;
		return 0;
	}
	if (p->as_have + plen > p->as_total || (last != (p->as_have + plen == p->as_total))) {
		p->ctr.corrupt++;
		as_abandon(l, p);
		return 0;
	}
	memcpy(p->as->data + p->as_have, d, plen);
	p->as_have += (uint32_t)plen;
	if (!last)
		return 0;
	p->as->next = l->rheld;
	l->rheld = p->as;
	p->as = NULL;
	return deliver(l, peer, l->rheld->data, p->as_total, ev);
}

/* A decoded packet from peer; takes m. */
static int rx_roce(wt_link_t *l, int peer, struct rte_mbuf *m, const uint8_t *d,
		   const wt_roce_hdr_t *h, size_t plen, wt_link_event_t *ev)
{
	struct dp_peer *p = &l->peers[peer];
	int n = 0;

	if (h->opcode == WT_ROCE_OP_ACKNOWLEDGE) {
		p->acks_received++;
		rte_pktmbuf_free(m);
		return 0;
	}
	if ((h->opcode == WT_ROCE_OP_WRITE_FIRST || h->opcode == WT_ROCE_OP_WRITE_ONLY) &&
	    h->rkey != l->rkey) {
		p->ctr.rejected++;
		rte_pktmbuf_free(m);
		return 0;
	}
	if (p->rx_psn_valid && h->psn != p->rx_psn_next)
		as_abandon(l, p); /* packets lost between */
	p->rx_psn_valid = 1;
	p->rx_psn_next = (h->psn + 1) & DP_24;
	p->rx_psn_last = h->psn;
	switch (h->opcode) {
	case WT_ROCE_OP_WRITE_ONLY:
	case WT_ROCE_OP_SEND_ONLY:
		as_abandon(l, p);
		p->orphan = 0;
		if (h->opcode == WT_ROCE_OP_WRITE_ONLY && h->dma_len != plen) {
			p->ctr.corrupt++;
			break;
		}
		return rx_single(l, peer, m, d, plen, ev);
	default:
		n = rx_part(l, peer, h, d, plen, ev);
		break;
	}
	rte_pktmbuf_free(m);
	return n;
}

/* One received packet, from the memif port of peer from, or from the named port (-1). */
static int rx_one(wt_link_t *l, struct rte_mbuf *m, int from, wt_link_event_t *ev)
{
	const uint8_t *d = NULL;
	size_t off = 0, plen = 0;
	wt_roce_hdr_t h;
	weft_status_t st = WEFT_ERR_PROTOCOL;
	struct dp_peer *p;
	int peer;

	if (m->nb_segs == 1)
		d = rte_pktmbuf_mtod(m, const uint8_t *);
	else if (m->pkt_len <= DP_SCRATCH)
		d = rte_pktmbuf_read(m, 0, m->pkt_len, l->scratch);
	if (d != NULL)
		st = wt_roce_parse(d, m->pkt_len, from < 0 || l->icrc_all, &h, &off, &plen);
	if (st != WEFT_OK) {
		if (st == WEFT_ERR_UNSUPPORTED)
			l->strangers++; /* somebody else's traffic */
		else if (from >= 0)
			l->peers[from].ctr.corrupt++;
		else
			l->corrupt++;
		rte_pktmbuf_free(m);
		return 0;
	}
	peer = h.dst_qp >= l->qp_base ? (int)(h.dst_qp - l->qp_base) : -1;
	if (peer < 0 || peer >= l->size || peer == l->rank || (from >= 0 && peer != from) ||
	    !l->peers[peer].connected) {
		if (from >= 0)
			l->peers[from].ctr.rejected++;
		else
			l->strangers++;
		rte_pktmbuf_free(m);
		return 0;
	}
	p = &l->peers[peer];
	if (p->local != (from >= 0) || h.src_ip != p->ip || memcmp(h.src_mac, p->mac, 6) != 0) {
		p->ctr.rejected++;
		rte_pktmbuf_free(m);
		return 0;
	}
	return rx_roce(l, peer, m, d + off, &h, plen, ev);
}

static int rx_stash(wt_link_t *l, wt_link_event_t *ev, int n, int max)
{
	int i = 0;

	while (i < l->nstash && n < max) {
		n += rx_one(l, l->stash[i], l->stash_peer[i], &ev[n]);
		i++;
	}
	if (i > 0) {
		memmove(l->stash, l->stash + i, (size_t)(l->nstash - i) * sizeof(l->stash[0]));
		memmove(l->stash_peer, l->stash_peer + i,
			(size_t)(l->nstash - i) * sizeof(l->stash_peer[0]));
		l->nstash -= i;
	}
	return n;
}

static int rx_memif(wt_link_t *l, int peer, wt_link_event_t *ev, int n, int max)
{
	struct rte_mbuf *m[DP_BURST];

	while (n < max) {
		uint16_t want = (uint16_t)(max - n < DP_BURST ? max - n : DP_BURST);
		uint16_t got = rte_eth_rx_burst(l->peers[peer].mf.port, 0, m, want);

		if (got > 0)
			l->peers[peer].mf.seen_up = 1;
		for (uint16_t i = 0; i < got; i++)
			n += rx_one(l, m[i], peer, &ev[n]);
		if (got < want)
			break;
	}
	return n;
}

static int rx_named(wt_link_t *l, wt_link_event_t *ev, int n, int max)
{
	struct rte_mbuf *m[DP_BURST];
	struct dp_shared *sh = l->np->data;
	uint32_t k = 0, want = (uint32_t)(max - n < DP_BURST ? max - n : DP_BURST);

	pthread_mutex_lock(&l->np->lock);
	if (sh->bl.count > 0)
		backlog_flush(&sh->bl, l->np->port_id);
	if (l->in_count < want)
		shared_rx(l->np);
	while (k < want && l->in_count > 0) {
		m[k++] = l->inbox[l->in_head];
		l->in_head = (l->in_head + 1) % DP_INBOX;
		l->in_count--;
	}
	pthread_mutex_unlock(&l->np->lock);
	for (uint32_t i = 0; i < k; i++)
		n += rx_one(l, m[i], -1, &ev[n]);
	return n;
}

/* ---- poll ---- */

/* Memif clients whose server was not listening yet, and what waits for room. */
static void service(wt_link_t *l)
{
	if (l->pending > 0) {
		uint64_t now = wt_util_time_ns();

		for (int i = 0; i < l->nlocal; i++) {
			int peer = l->locals[i];
			struct dp_memif *mf = &l->peers[peer].mf;

			if (mf->created && !mf->started && !l->peers[peer].failed &&
			    now >= mf->retry_at)
				memif_try_start(l, peer, now);
		}
	}
	for (int i = 0; i < l->nlocal; i++) {
		struct dp_peer *p = &l->peers[l->locals[i]];
		uint32_t before = p->mf.bl.count;

		/* A pair whose handshake is over may close without waiting (memif_close). */
		if (p->mf.started && !p->mf.seen_up && wt_dpdk_link_up(p->mf.port))
			p->mf.seen_up = 1;

		if (before > 0 && p->mf.started && backlog_flush(&p->mf.bl, p->mf.port) < before)
			bell_ring(l, p);
	}
}

static int zr_emit(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;

	while (n < max && l->zr_count > 0) {
		struct dp_zrec *r = &l->zr[l->zr_head];

		if (!atomic_load_explicit(&r->released, memory_order_acquire))
			break;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_SEND_DONE;
		ev[n].cookie = r->cookie;
		n++;
		l->zr_head = (l->zr_head + 1) % DP_ZRECS;
		l->zr_count--;
	}
	return n;
}

static int dpdk_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;

	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	release_held(l);
	service(l);
	if (l->np != NULL && max == 0) {
		pthread_mutex_lock(&l->np->lock);
		backlog_flush(&((struct dp_shared *)l->np->data)->bl, l->np->port_id);
		pthread_mutex_unlock(&l->np->lock);
	}
	n += wt_link_errq_pop(&l->errq, ev, max);
	n += zr_emit(l, ev + n, max - n);
	n = rx_stash(l, ev, n, max);
	for (int k = 0; k < l->nlocal && n < max; k++) {
		int peer = l->locals[(l->rr + k) % l->nlocal];

		if (l->peers[peer].mf.started)
			n = rx_memif(l, peer, ev, n, max);
	}
	if (l->nlocal > 0)
		l->rr = (l->rr + 1) % l->nlocal;
	if (l->np != NULL && n < max)
		n = rx_named(l, ev, n, max);
	return n;
}

/* ---- sleeping ---- */

static int dpdk_fd(wt_link_t *l)
{
	return l ? l->bell_fd : -1;
}

static int backlog_waiting(wt_link_t *l)
{
	int w = 0;

	for (int i = 0; i < l->nlocal && !w; i++)
		w = l->peers[l->locals[i]].mf.bl.count > 0;
	if (!w && l->np != NULL) {
		pthread_mutex_lock(&l->np->lock);
		w = ((struct dp_shared *)l->np->data)->bl.count > 0 || l->in_count > 0;
		pthread_mutex_unlock(&l->np->lock);
	}
	return w;
}

/* Peeks at the memif rings (what it takes waits in the stash for the next poll). */
static int rx_peek(wt_link_t *l)
{
	for (int i = 0; i < l->nlocal && l->nstash < DP_STASH; i++) {
		int peer = l->locals[i];
		uint16_t got;

		if (!l->peers[peer].mf.started)
			continue;
		got = rte_eth_rx_burst(l->peers[peer].mf.port, 0, l->stash + l->nstash,
				       (uint16_t)(DP_STASH - l->nstash));
		for (uint16_t k = 0; k < got; k++)
			l->stash_peer[l->nstash++] = peer;
	}
	if (l->np != NULL) {
		int have;

		pthread_mutex_lock(&l->np->lock);
		if (l->in_count == 0)
			shared_rx(l->np);
		have = l->in_count > 0;
		pthread_mutex_unlock(&l->np->lock);
		if (have)
			return 1;
	}
	return l->nstash > 0;
}

/* Leaves the armed state; drains the doorbell only if somebody rang it. */
static void unarm(wt_link_t *l)
{
	char buf[64];

	if (!l->armed)
		return;
	l->armed = 0;
	if (atomic_exchange(l->asleep, 0) == 1)
		return; /* nobody rang */
	while (recv(l->bell_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static int dpdk_arm(wt_link_t *l)
{
	if (l == NULL)
		return 1;
	if (l->errq.len > 0 || l->nstash > 0 ||
	    (l->zr_count > 0 && atomic_load(&l->zr[l->zr_head].released)))
		return 1;
	/* Output waits behind a full ring: nothing rings for it, so the caller naps. */
	if (backlog_waiting(l))
		return 1;
	atomic_store(l->asleep, 1);
	l->armed = 1;
	atomic_thread_fence(memory_order_seq_cst);
	if (rx_peek(l)) {
		unarm(l);
		return 1;
	}
	return 0;
}

static void dpdk_disarm(wt_link_t *l)
{
	if (l != NULL)
		unarm(l);
}

static int dpdk_timer_ms(wt_link_t *l)
{
	int ms = -1;

	if (l == NULL)
		return -1;
	if (l->pending > 0) {
		uint64_t now = wt_util_time_ns(), first = UINT64_MAX;

		for (int i = 0; i < l->nlocal; i++) {
			const struct dp_memif *mf = &l->peers[l->locals[i]].mf;

			if (mf->created && !mf->started && mf->retry_at < first)
				first = mf->retry_at;
		}
		ms = first <= now ? 0 : (int)((first - now + 999999) / 1000000);
	}
	/* The named port has no file descriptor to wake a sleeper. */
	if (l->np != NULL && (ms < 0 || ms > DP_NAP_MS))
		ms = DP_NAP_MS;
	return ms;
}

/* ---- stats, probe ---- */

static void dpdk_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	if (l == NULL || st == NULL || peer < 0 || peer >= l->size)
		return;
	wt_link_counters_add(st, &l->peers[peer].ctr);
}

static weft_status_t dpdk_probe(char *msg, size_t msglen)
{
	char why[512] = "";
	wt_dpdk_port_t *np = NULL;
	weft_status_t st = wt_dpdk_eal_start(why, sizeof(why));

	if (st == WEFT_OK)
		st = wt_dpdk_named_port(&np, why, sizeof(why));
	if (msg != NULL && msglen > 0)
		snprintf(msg, msglen, "%s", st == WEFT_OK ? "" : why);
	return st == WEFT_OK ? WEFT_OK : WEFT_ERR_NO_DEVICE;
}

const wt_link_ops_t wt_dpdk_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "dpdk",
    .caps = WT_LINK_CAP_HAS_FD | WT_LINK_CAP_INTEGRITY,
    .probe = dpdk_probe,
    .open = dpdk_open,
    .address = dpdk_address,
    .connect = dpdk_connect,
    .send = dpdk_send,
    .poll = dpdk_poll,
    .get = NULL,
    .fd = dpdk_fd,
    .arm = dpdk_arm,
    .disarm = dpdk_disarm,
    .close = dpdk_close,
    .stats = dpdk_stats,
    .timer_ms = dpdk_timer_ms,
    .send_info = dpdk_send_info,
};
