/* bench/dpdk_raw: the bare DPDK baseline for the dpdk driver (issue 7), no weft code. Two
 * processes joined by net_memif; one streams N bytes as RoCE-sized frames with bursts and
 * backpressure, the other counts them and answers DONE; both print GB/s (1e9 bytes/s).
 *
 *   dpdk_raw [--frames 1K,2K,4K,8K] [--modes copy,nocopy,gather] [--reps 5]   (forks the pair)
 *   dpdk_raw --role server ...  then  dpdk_raw --role client ...          (one side each)
 *
 * Usage and what was measured: bench/README.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_mempool.h>

#define MAX_BURST 256
#define MAX_LIST 8
#define MAX_REPS 1000
#define POOL_MBUFS 4095
#define POOL_CACHE 256
#define ROCE_LEN 54	  /* Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 */
#define MAGIC 0x52415744u /* "RAWD" */
#define PING_NS 1000000ull
#define LINK_RETRY_NS 200000000ull
#define LINGER_NS 2000000000ull

enum kind { K_PING = 1, K_PONG, K_DATA, K_DONE, K_BYE, K_BYE_ACK };
enum mode { M_COPY, M_NOCOPY, M_EXTBUF, M_GATHER, M_COUNT };
enum cleanup { C_NONE, C_NOW, C_WAIT };
static const char *const mode_names[M_COUNT] = {"copy", "nocopy", "extbuf", "gather"};

static bool two_segs(enum mode md)
{
	return md == M_EXTBUF || md == M_GATHER;
}

/* Behind the RoCE-shaped prefix, where weft puts what does not fit the BTH. */
struct bench_hdr {
	uint32_t magic;
	uint16_t kind;
	uint16_t rep;
	uint32_t seq;
	uint32_t errs; /* DONE: sequence gaps + bad payloads the receiver saw */
	uint64_t off;  /* DATA: payload offset; DONE: bytes received */
	uint64_t ns;   /* DONE: receiver's first-to-last time */
} __attribute__((packed));

#define HDR_LEN (ROCE_LEN + (int)sizeof(struct bench_hdr))

struct opts {
	const char *role; /* NULL: fork both */
	bool server_sends;
	char sock[108];
	size_t bytes;
	size_t frames[MAX_LIST];
	int nframes;
	enum mode modes[MAX_LIST];
	int nmodes;
	int reps, warmup, burst, rsize, runs;
	unsigned bsize; /* 0: fit the frame */
	enum cleanup cleanup;
	int wait_ms, close_delay_ms;
	bool verify, probe_intr, quiet, yield;
	bool start_retry;
	double timeout_s;
};

/* What a side measured; in pair mode the children write it into shared memory. */
struct side_result {
	int valid;
	double gbps[MAX_REPS];
	int nreps;
	uint64_t tx_full, alloc_fail, errs, segs_max, stray, linger_timeouts, start_retries;
};

struct port {
	uint16_t id;
	struct rte_mempool *pool, *ext_pool;
	struct rte_mbuf_ext_shared_info shinfo;
	unsigned bsize;
	uint64_t tx_full, alloc_fail, errs, segs_max, stray, linger_timeouts, start_retries;
};

static const struct opts *g_o;
static uint8_t *g_src; /* the 64 MiB a real sender sends from; the receiver's reference */
static uint64_t g_deadline;
static int g_ready_fd = -1; /* pair mode: the server writes one byte once started */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* An empty poll: spin on (bare DPDK), or with --yield give the CPU to whoever shares it,
 * maybe the peer (2 CPUs and a third busy process: pure spinning loses 5-10x). */
static void idle_poll(void)
{
	if (g_o->yield)
		sched_yield();
}

static bool late(const char *who, const char *what)
{
	if (now_ns() < g_deadline)
		return false;
	fprintf(stderr, "dpdk_raw %s: timed out %s\n", who, what);
	return true;
}

static const char *role_name(bool sender)
{
	return sender ? "sender" : "receiver";
}

/* ---- frames ---- */

/* Ethernet II, IPv4 to UDP 4791, a BTH: what the dpdk driver puts in front of a payload
 * (no checksums; their cost belongs to weft). */
static void put_prefix(uint8_t *p, size_t paylen)
{
	static const uint8_t mac[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
	size_t ip_len = 20 + 8 + 12 + sizeof(struct bench_hdr) + paylen;

	memcpy(p, mac, 12);
	p[12] = 0x08;
	p[13] = 0x00;
	p += 14;
	memset(p, 0, 20);
	p[0] = 0x45;
	p[2] = (uint8_t)(ip_len >> 8);
	p[3] = (uint8_t)ip_len;
	p[8] = 64;
	p[9] = 17;
	p[12] = 198, p[13] = 18, p[14] = 0, p[15] = 1;
	p[16] = 198, p[17] = 18, p[18] = 0, p[19] = 2;
	p += 20;
	p[0] = 0xc0, p[1] = 0x00, p[2] = 0x12, p[3] = 0xb7; /* 49152 -> 4791 */
	p[4] = (uint8_t)((ip_len - 20) >> 8);
	p[5] = (uint8_t)(ip_len - 20);
	p[6] = p[7] = 0;
	p += 8;
	memset(p, 0, 12);
	p[0] = 0x07; /* RDMA WRITE middle */
	p[2] = p[3] = 0xff;
}

static void put_hdr(uint8_t *p, enum kind k, uint16_t rep, uint32_t seq, uint64_t off, size_t len)
{
	struct bench_hdr h = {
	    .magic = MAGIC, .kind = (uint16_t)k, .rep = rep, .seq = seq, .off = off};

	put_prefix(p, len);
	memcpy(p + ROCE_LEN, &h, sizeof(h));
}

static int get_hdr(const struct rte_mbuf *m, struct bench_hdr *h)
{
	if (rte_pktmbuf_data_len(m) < HDR_LEN)
		return -1;
	memcpy(h, rte_pktmbuf_mtod_offset(m, const uint8_t *, ROCE_LEN), sizeof(*h));
	return h->magic == MAGIC ? 0 : -1;
}

/* Sends one small control packet, retrying while the ring is full. */
static int send_ctl(struct port *p, enum kind k, uint16_t rep, uint32_t errs, uint64_t off,
		    uint64_t ns)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct bench_hdr h = {
	    .magic = MAGIC, .kind = (uint16_t)k, .rep = rep, .errs = errs, .off = off, .ns = ns};
	uint8_t *d;

	if (m == NULL) {
		fprintf(stderr, "dpdk_raw: no mbuf for a control packet\n");
		return -1;
	}
	d = (uint8_t *)rte_pktmbuf_append(m, HDR_LEN);
	put_prefix(d, 0);
	memcpy(d + ROCE_LEN, &h, sizeof(h));
	while (rte_eth_tx_burst(p->id, 0, &m, 1) == 0) {
		if (late("control", "sending a control packet")) {
			rte_pktmbuf_free(m);
			return -1;
		}
	}
	return 0;
}

/* ---- sender ---- */

static void ext_free_cb(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
}

/* Fills one frame of len payload bytes from g_src + off as the mode says. */
static struct rte_mbuf *build(struct port *p, struct rte_mbuf *m, enum mode md, uint16_t rep,
			      uint32_t seq, uint64_t off, size_t len)
{
	uint8_t *d;

	if (!two_segs(md)) {
		d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(HDR_LEN + len));
		put_hdr(d, K_DATA, rep, seq, off, len);
		if (md == M_COPY)
			rte_memcpy(d + HDR_LEN, g_src + off, len);
		return m;
	}
	/* Header in a pool mbuf, payload attached in place: two segments. */
	struct rte_mbuf *x = rte_pktmbuf_alloc(p->ext_pool);

	if (x == NULL) {
		p->alloc_fail++;
		return NULL;
	}
	d = (uint8_t *)rte_pktmbuf_append(m, HDR_LEN);
	put_hdr(d, K_DATA, rep, seq, off, len);
	rte_mbuf_ext_refcnt_update(&p->shinfo, 1);
	rte_pktmbuf_attach_extbuf(x, g_src + off, RTE_BAD_IOVA, (uint16_t)len, &p->shinfo);
	x->data_len = (uint16_t)len;
	x->pkt_len = (uint32_t)len;
	if (rte_pktmbuf_chain(m, x) != 0) {
		rte_pktmbuf_free(x);
		return NULL;
	}
	return m;
}

/* Waits for a packet of kind k (and rep, for DONE); drops everything else. */
static int wait_for(struct port *p, enum kind k, uint16_t rep, struct bench_hdr *out, bool ping)
{
	struct rte_mbuf *pkts[MAX_BURST];
	uint64_t next_ping = 0;
	int found = 0;

	while (!found) {
		uint16_t n = rte_eth_rx_burst(p->id, 0, pkts, (uint16_t)g_o->burst);

		for (uint16_t i = 0; i < n; i++) {
			struct bench_hdr h;

			if (!found && get_hdr(pkts[i], &h) == 0 && h.kind == k &&
			    (k != K_DONE || h.rep == rep)) {
				*out = h;
				found = 1;
			} else {
				p->stray++;
			}
		}
		rte_pktmbuf_free_bulk(pkts, n);
		if (found)
			break;
		if (ping && now_ns() >= next_ping) {
			if (send_ctl(p, K_PING, 0, 0, 0, 0) != 0)
				return -1;
			next_ping = now_ns() + PING_NS;
		}
		if (n == 0)
			idle_poll();
		if (n == 0 && late("sender", k == K_PONG   ? "waiting for PONG"
					     : k == K_DONE ? "waiting for DONE"
							   : "waiting for BYE_ACK"))
			return -1;
	}
	return 0;
}

static int sender(struct port *p, enum mode md, size_t frame, struct side_result *r)
{
	const struct opts *o = g_o;
	struct rte_mbuf *pkts[MAX_BURST];
	struct bench_hdr h;

	if (wait_for(p, K_PONG, 0, &h, true) != 0)
		return -1;
	for (int rep = 0; rep < o->warmup + o->reps; rep++) {
		uint64_t off = 0, t0 = now_ns();
		uint32_t seq = 0;

		while (off < o->bytes) {
			size_t left = o->bytes - off;
			int n = (int)((left + frame - 1) / frame);
			int built = 0, sent = 0;

			n = n < o->burst ? n : o->burst;
			if (rte_pktmbuf_alloc_bulk(p->pool, pkts, (unsigned)n) != 0) {
				p->alloc_fail++;
				if (late("sender", "allocating mbufs"))
					return -1;
				continue;
			}
			for (; built < n; built++) {
				size_t len = o->bytes - off < frame ? o->bytes - off : frame;

				if (build(p, pkts[built], md, (uint16_t)rep, seq, off, len) == NULL)
					break;
				off += len;
				seq++;
			}
			/* Frames not built (no ext mbuf) are built again next round. */
			if (built < n)
				rte_pktmbuf_free_bulk(pkts + built, (unsigned)(n - built));
			while (sent < built) {
				uint16_t k = rte_eth_tx_burst(p->id, 0, pkts + sent,
							      (uint16_t)(built - sent));

				if (k < built - sent)
					p->tx_full++;
				sent += k;
				if (k == 0)
					idle_poll();
				if (k == 0 && late("sender", "waiting for tx ring space")) {
					rte_pktmbuf_free_bulk(pkts + sent,
							      (unsigned)(built - sent));
					return -1;
				}
			}
		}
		if (wait_for(p, K_DONE, (uint16_t)rep, &h, false) != 0)
			return -1;
		p->errs += h.errs;
		if (h.off != o->bytes) {
			fprintf(stderr,
				"dpdk_raw sender: receiver counted %" PRIu64 " bytes of %zu\n",
				h.off, o->bytes);
			p->errs++;
		}
		if (rep >= o->warmup)
			r->gbps[r->nreps++] = (double)o->bytes / (double)(now_ns() - t0);
	}
	/* Close only once the receiver has read everything: a memif peer that sees the
	 * disconnect stops reading, and what was still in its ring is lost. */
	if (send_ctl(p, K_BYE, 0, 0, 0, 0) != 0)
		return -1;
	return wait_for(p, K_BYE_ACK, 0, &h, false);
}

/* ---- receiver ---- */

/* Compares a received payload, segment by segment, with the sender's source. */
static bool payload_ok(const struct rte_mbuf *m, uint64_t off, size_t len)
{
	size_t skip = HDR_LEN, done = 0;

	if (off > g_o->bytes || len > g_o->bytes - off)
		return false;
	for (; m != NULL && done < len; m = m->next) {
		size_t dl = rte_pktmbuf_data_len(m), n;

		if (skip >= dl) {
			skip -= dl;
			continue;
		}
		n = dl - skip < len - done ? dl - skip : len - done;
		if (memcmp(rte_pktmbuf_mtod_offset(m, const uint8_t *, skip), g_src + off + done,
			   n) != 0)
			return false;
		done += n;
		skip = 0;
	}
	return done == len;
}

/* After the last word, waits (at most LINGER_NS) for the peer to close first, so that it
 * reads the BYE_ACK before our close stops it. */
static void linger(struct port *p)
{
	uint64_t end = now_ns() + LINGER_NS;
	struct rte_eth_link link;
	struct rte_mbuf *pkts[MAX_BURST];

	while (now_ns() < end) {
		uint16_t n = rte_eth_rx_burst(p->id, 0, pkts, (uint16_t)g_o->burst);

		rte_pktmbuf_free_bulk(pkts, n);
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN)
			return;
		nap_ms(1);
	}
	p->linger_timeouts++;
}

static int receiver(struct port *p, struct side_result *r)
{
	const struct opts *o = g_o;
	struct rte_mbuf *pkts[MAX_BURST];
	int rep = 0, total = o->warmup + o->reps;
	uint64_t got = 0, t_first = 0;
	uint32_t expect = 0, errs = 0;
	unsigned idle = 0;

	for (;;) {
		uint16_t n = rte_eth_rx_burst(p->id, 0, pkts, (uint16_t)o->burst);
		bool bye = false;

		if (n == 0) {
			idle_poll();
			if ((++idle & 1023) == 0 && late("receiver", "waiting for data"))
				return -1;
			continue;
		}
		idle = 0;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *m = pkts[i];
			struct bench_hdr h;

			if (get_hdr(m, &h) != 0) {
				p->stray++;
				continue;
			}
			if (m->nb_segs > p->segs_max)
				p->segs_max = m->nb_segs;
			if (h.kind == K_PING) {
				if (send_ctl(p, K_PONG, 0, 0, 0, 0) != 0)
					return -1;
				continue;
			}
			if (h.kind == K_BYE) {
				bye = true;
				continue;
			}
			if (h.kind != K_DATA || h.rep != rep) {
				p->stray++;
				continue;
			}
			size_t len = rte_pktmbuf_pkt_len(m) - HDR_LEN;

			if (got == 0) {
				t_first = now_ns();
				expect = 0;
			}
			if (h.seq != expect)
				errs++;
			expect = h.seq + 1;
			if (o->verify && !payload_ok(m, h.off, len))
				errs++;
			got += len;
			if (got >= o->bytes) {
				uint64_t ns = now_ns() - t_first;

				if (send_ctl(p, K_DONE, (uint16_t)rep, errs, got, ns) != 0)
					return -1;
				if (rep >= o->warmup)
					r->gbps[r->nreps++] = (double)got / (double)ns;
				p->errs += errs;
				errs = 0;
				got = 0;
				rep++;
			}
		}
		rte_pktmbuf_free_bulk(pkts, n);
		if (bye) {
			if (rep < total)
				fprintf(stderr, "dpdk_raw receiver: BYE after %d of %d transfers\n",
					rep, total);
			if (send_ctl(p, K_BYE_ACK, 0, 0, 0, 0) != 0)
				return -1;
			linger(p);
			return rep == total ? 0 : -1;
		}
	}
}

/* ---- one side: EAL, port, run, close ---- */

static int start_port(struct port *p, const struct rte_eth_conf *conf)
{
	int rc = rte_eth_dev_configure(p->id, 1, 1, conf);

	if (rc == 0)
		rc = rte_eth_rx_queue_setup(p->id, 0, 1024, rte_eth_dev_socket_id(p->id), NULL,
					    p->pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(p->id, 0, 1024, rte_eth_dev_socket_id(p->id), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(p->id);
	return rc;
}

/* Tries the client's connection again: stop (unless the start failed) and start. */
static int restart_port(struct port *p, bool failed)
{
	p->start_retries++;
	if (!failed)
		rte_eth_dev_stop(p->id);
	return rte_eth_dev_start(p->id);
}

static int setup_port(struct port *p, bool server, enum mode md)
{
	const struct opts *o = g_o;
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	unsigned room;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.txmode.offloads = two_segs(md) ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
	if (o->probe_intr)
		conf.intr_conf.rxq = 1;
	if (rte_eth_dev_count_avail() < 1) {
		fprintf(stderr, "dpdk_raw: no port after rte_eal_init\n");
		return -1;
	}
	p->id = 0;
	/* memif's fast paths want every mbuf's data room equal to its buffer size: tx then
	 * copies each segment into a descriptor of its own. gather makes the rooms larger, so
	 * tx takes the path that packs a whole chain into one descriptor. */
	room = p->bsize + RTE_PKTMBUF_HEADROOM + (md == M_GATHER ? 128 : 0);
	p->pool = rte_pktmbuf_pool_create("raw_pool", POOL_MBUFS, POOL_CACHE, 0, (uint16_t)room,
					  (int)rte_socket_id());
	if (p->pool == NULL) {
		fprintf(stderr, "dpdk_raw: mbuf pool of %u x %u bytes: %s\n", POOL_MBUFS, room,
			rte_strerror(rte_errno));
		return -1;
	}
	if (two_segs(md)) {
		p->ext_pool = rte_pktmbuf_pool_create("raw_ext", POOL_MBUFS, POOL_CACHE, 0, 0,
						      (int)rte_socket_id());
		if (p->ext_pool == NULL) {
			fprintf(stderr, "dpdk_raw: ext mbuf pool: %s\n", rte_strerror(rte_errno));
			return -1;
		}
		p->shinfo.free_cb = ext_free_cb;
		p->shinfo.fcb_opaque = NULL;
		rte_mbuf_ext_refcnt_set(&p->shinfo, 1);
	}
	rc = start_port(p, &conf);
	/* A client started before its server listens fails to connect. */
	while (rc != 0 && !server && o->start_retry && !late("client", "retrying the start")) {
		nap_ms(10);
		rc = restart_port(p, true);
	}
	if (rc == 0 && server && g_ready_fd >= 0) {
		if (write(g_ready_fd, "s", 1) != 1)
			rc = -EIO;
		close(g_ready_fd);
		g_ready_fd = -1;
	}
	if (rc != 0) {
		fprintf(stderr, "dpdk_raw %s: configuring or starting the port: %s\n",
			server ? "server" : "client", rte_strerror(-rc));
		return -1;
	}
	if (o->probe_intr) {
		int e = rte_eth_dev_rx_intr_enable(p->id, 0);
		int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(p->id, 0);

		printf("PROBE %s rx_intr_enable=%d (%s) rx_intr_fd=%d\n",
		       server ? "server" : "client", e, e < 0 ? rte_strerror(-e) : "ok", fd);
	}
	/* A client that connects before the server's port is started is told "ID not found"
	 * and never tries again by itself: its link stays down. */
	for (uint64_t retry_at = now_ns() + LINK_RETRY_NS;;) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			break;
		if (late(server ? "server" : "client", "waiting for link up"))
			return -1;
		if (!server && o->start_retry && now_ns() > retry_at) {
			rc = restart_port(p, false);
			if (rc != 0 && rc != -EIO)
				fprintf(stderr, "dpdk_raw client: restarting: %s\n",
					rte_strerror(-rc));
			retry_at = now_ns() + LINK_RETRY_NS;
		}
		nap_ms(1);
	}
	return 0;
}

static int close_port(struct port *p)
{
	int rc = rte_eth_dev_stop(p->id);

	if (rc == 0)
		rc = rte_eth_dev_close(p->id);
	if (rc != 0)
		fprintf(stderr, "dpdk_raw: closing the port: %s\n", rte_strerror(-rc));
	return rc;
}

static unsigned auto_bsize(size_t frame, enum mode md)
{
	size_t need = md == M_EXTBUF ? (frame > (size_t)HDR_LEN ? frame : (size_t)HDR_LEN)
				     : frame + (size_t)HDR_LEN;

	return (unsigned)((need + 63) / 64 * 64);
}

/* Runs one side; returns the process exit status. */
static int run_side(bool server, size_t frame, enum mode md, struct side_result *r)
{
	const struct opts *o = g_o;
	bool sends = server == o->server_sends;
	char prefix[64], vdev[256], bsz[32];
	char *argv[32];
	int argc = 0, rc;
	struct port p;
	const char *extra = getenv("DPDK_RAW_EAL_ARGS");
	char *extra_copy = NULL;

	memset(&p, 0, sizeof(p));
	p.bsize = o->bsize != 0 ? o->bsize : auto_bsize(frame, md);
	snprintf(prefix, sizeof(prefix), "--file-prefix=dpdk_raw_%d", (int)getpid());
	snprintf(bsz, sizeof(bsz), "%u", p.bsize);
	snprintf(vdev, sizeof(vdev),
		 "--vdev=net_memif0,role=%s,socket=%s,socket-abstract=no,bsize=%s,rsize=%d",
		 server ? "server" : "client", o->sock, bsz, o->rsize);
	argv[argc++] = (char *)"dpdk_raw";
	argv[argc++] = (char *)"--no-huge";
	argv[argc++] = (char *)"-m";
	argv[argc++] = (char *)"256";
	argv[argc++] = (char *)"--no-pci";
	argv[argc++] = (char *)"--no-shconf";
	argv[argc++] = (char *)"--no-telemetry";
	argv[argc++] = (char *)"--lcores=0@(0,1)";
	argv[argc++] = prefix;
	argv[argc++] = vdev;
	if (o->quiet)
		argv[argc++] = (char *)"--log-level=warning";
	if (extra != NULL && (extra_copy = strdup(extra)) != NULL) {
		for (char *t = strtok(extra_copy, " "); t != NULL && argc < 30;
		     t = strtok(NULL, " "))
			argv[argc++] = t;
	}
	argv[argc] = NULL;
	g_deadline = now_ns() + (uint64_t)(o->timeout_s * 1e9);
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "dpdk_raw %s: rte_eal_init: %s\n", server ? "server" : "client",
			rte_strerror(rte_errno));
		free(extra_copy);
		return 1;
	}
	rc = setup_port(&p, server, md);
	if (rc == 0)
		rc = sends ? sender(&p, md, frame, r) : receiver(&p, r);
	if (rc == 0) {
		r->tx_full = p.tx_full;
		r->alloc_fail = p.alloc_fail;
		r->errs = p.errs;
		r->segs_max = p.segs_max;
		r->stray = p.stray;
		r->linger_timeouts = p.linger_timeouts;
		r->start_retries = p.start_retries;
		r->valid = 1;
	}
	if (o->close_delay_ms > 0)
		nap_ms(o->close_delay_ms);
	if (close_port(&p) != 0)
		rc = -1;
	switch (o->cleanup) {
	case C_NONE:
		break;
	case C_WAIT:
		nap_ms(o->wait_ms);
		/* fall through */
	case C_NOW:
		rte_eal_cleanup();
		break;
	}
	free(extra_copy);
	return rc == 0 ? 0 : 1;
}

/* ---- reporting ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_REPS];

	if (n == 0)
		return 0;
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void print_result(bool sends, size_t frame, enum mode md, const struct side_result *r)
{
	const struct opts *o = g_o;
	unsigned bsize = o->bsize != 0 ? o->bsize : auto_bsize(frame, md);

	printf("RESULT role=%s dir=%s mode=%s payload=%zu frame=%zu bsize=%u bytes=%zu reps=%d "
	       "median_gbps=%.3f gbps=",
	       role_name(sends), o->server_sends ? "server->client" : "client->server",
	       mode_names[md], frame, frame + (size_t)HDR_LEN, bsize, o->bytes, r->nreps,
	       median(r->gbps, r->nreps));
	for (int i = 0; i < r->nreps; i++)
		printf("%s%.3f", i ? "," : "", r->gbps[i]);
	printf(" tx_full=%" PRIu64 " alloc_fail=%" PRIu64 " errors=%" PRIu64 " segs_max=%" PRIu64
	       " stray=%" PRIu64 " linger_timeouts=%" PRIu64 " start_retries=%" PRIu64 "\n",
	       r->tx_full, r->alloc_fail, r->errs, r->segs_max, r->stray, r->linger_timeouts,
	       r->start_retries);
	fflush(stdout);
}

/* ---- pair mode: fork the server, wait for its socket, fork the client ---- */

static const char *describe(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, n, "status 0x%x", status);
	return buf;
}

static pid_t spawn(bool server, size_t frame, enum mode md, struct side_result *r)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		exit(run_side(server, frame, md, r));
	return pid;
}

/* Waits for both children until the deadline, then kills what is left (our own pids). */
static void reap(pid_t pids[2], int status[2], double timeout_s)
{
	uint64_t end = now_ns() + (uint64_t)((timeout_s + 10) * 1e9);
	int left = 2;

	while (left > 0) {
		for (int i = 0; i < 2; i++) {
			if (pids[i] <= 0)
				continue;
			pid_t w = waitpid(pids[i], &status[i], WNOHANG);

			if (w == pids[i]) {
				pids[i] = 0;
				left--;
			}
		}
		if (left == 0)
			break;
		if (now_ns() > end) {
			for (int i = 0; i < 2; i++) {
				if (pids[i] > 0) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], &status[i], 0);
					pids[i] = 0;
				}
			}
			break;
		}
		nap_ms(2);
	}
}

/* One launch of the pair; returns 0 when both ended with status 0. */
static int run_pair(size_t frame, enum mode md, struct side_result res[2], bool print)
{
	const struct opts *o = g_o;
	pid_t pids[2] = {0, 0};
	int status[2] = {-1, -1}, bad = 0, ready[2];
	struct pollfd pfd;
	char buf[96], c;

	memset(res, 0, 2 * sizeof(res[0]));
	unlink(o->sock);
	if (pipe(ready) != 0) {
		perror("dpdk_raw: pipe");
		return -1;
	}
	g_ready_fd = ready[1];
	pids[0] = spawn(true, frame, md, &res[0]);
	g_ready_fd = -1;
	close(ready[1]);
	if (pids[0] < 0) {
		perror("dpdk_raw: fork");
		close(ready[0]);
		return -1;
	}
	/* The client may connect only once the server's port is started (its socket file
	 * exists earlier, at probe): the server says so through the pipe. */
	pfd.fd = ready[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, (int)(o->timeout_s * 1000)) == 1 && read(ready[0], &c, 1) == 1)
		pids[1] = spawn(false, frame, md, &res[1]);
	close(ready[0]);
	reap(pids, status, o->timeout_s);
	for (int i = 0; i < 2; i++) {
		if (status[i] != 0) {
			fprintf(stderr, "dpdk_raw: %s (%s) ended with %s\n",
				i ? "client" : "server", role_name((i == 0) == o->server_sends),
				status[i] == -1 ? "never started"
						: describe(status[i], buf, sizeof(buf)));
			bad = 1;
		}
	}
	unlink(o->sock);
	if (print) {
		int s = o->server_sends ? 0 : 1; /* res[0] is the server's */

		if (res[s].valid)
			print_result(true, frame, md, &res[s]);
		if (res[1 - s].valid)
			print_result(false, frame, md, &res[1 - s]);
	}
	return bad ? -1 : 0;
}

static int pair_main(void)
{
	const struct opts *o = g_o;
	size_t shm_len = 2 * sizeof(struct side_result);
	struct side_result *res =
	    mmap(NULL, shm_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double best = 0, table[MAX_LIST][MAX_LIST][2];
	int fails = 0, best_f = 0, best_m = 0;

	if (res == MAP_FAILED) {
		perror("dpdk_raw: mmap");
		return 1;
	}
	if (o->runs > 1) {
		/* The exit test: the same pair again and again, counting clean ends. */
		int clean = 0;

		for (int i = 0; i < o->runs; i++)
			clean += run_pair(o->frames[0], o->modes[0], res, false) == 0;
		printf("EXITS runs=%d clean=%d cleanup=%s\n", o->runs, clean,
		       o->cleanup == C_NONE  ? "none"
		       : o->cleanup == C_NOW ? "now"
					     : "wait");
		return clean == o->runs ? 0 : 1;
	}
	for (int f = 0; f < o->nframes; f++) {
		for (int m = 0; m < o->nmodes; m++) {
			table[f][m][0] = table[f][m][1] = -1;
			if (run_pair(o->frames[f], o->modes[m], res, true) != 0) {
				fails++;
				continue;
			}
			for (int i = 0; i < 2; i++) {
				bool sends = (i == 0) == o->server_sends;

				table[f][m][sends ? 0 : 1] = median(res[i].gbps, res[i].nreps);
				if (res[i].errs != 0)
					fails++;
			}
			if (table[f][m][0] > best) {
				best = table[f][m][0];
				best_f = f;
				best_m = m;
			}
		}
	}
	if (o->nframes * o->nmodes > 1) {
		printf("\n%-8s %-7s %6s %12s %14s\n", "payload", "mode", "frame", "sender GB/s",
		       "receiver GB/s");
		for (int f = 0; f < o->nframes; f++)
			for (int m = 0; m < o->nmodes; m++)
				printf("%-8zu %-7s %6zu %12.2f %14.2f\n", o->frames[f],
				       mode_names[o->modes[m]], o->frames[f] + (size_t)HDR_LEN,
				       table[f][m][0], table[f][m][1]);
		if (best > 0)
			printf("BEST payload=%zu mode=%s sender_gbps=%.3f\n", o->frames[best_f],
			       mode_names[o->modes[best_m]], best);
	}
	munmap(res, shm_len);
	return fails ? 1 : 0;
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: dpdk_raw [options]\n"
	    "Bare DPDK over net_memif: a sender streams --bytes in frames, a receiver counts.\n"
	    "Without --role it forks the server, waits for its socket, then forks the client.\n"
	    "  --role server|client   run one side only (start the server first)\n"
	    "  --sender server|client which side sends (client)\n"
	    "  --sock PATH            memif socket file (/tmp/dpdk_raw.<pid>.sock)\n"
	    "  --bytes N              bytes per transfer, K/M/G suffixes (64M)\n"
	    "  --frames LIST          payload bytes per frame, e.g. 1K,2K,4K,8K (4K); %d header\n"
	    "                         bytes come on top (Ethernet, IPv4, UDP, BTH, bench header)\n"
	    "  --modes LIST           copy: payload copied into the mbuf from a source buffer;\n"
	    "                         nocopy: header only written; extbuf: payload attached in\n"
	    "                         place as a second segment, memif gives each segment a\n"
	    "                         descriptor; gather: the same, but mbuf rooms larger than\n"
	    "                         --bsize so memif packs the chain into one descriptor (copy)\n"
	    "  --reps K               timed transfers, median reported (5)\n"
	    "  --warmup N             untimed transfers first (1)\n"
	    "  --burst N              rx and tx burst (32)\n"
	    "  --bsize N              memif buffer size (0: header + payload, rounded to 64)\n"
	    "  --rsize LOG2           memif ring size, log2 (10)\n"
	    "  --cleanup none|now|wait[=MS]  after closing the port: skip rte_eal_cleanup,\n"
	    "                         call it at once, or MS ms later (wait = wait=100)\n"
	    "  --yield                sched_yield() after an empty rx or tx poll (spin)\n"
	    "  --start-retry          a client whose start fails, or whose link is not up\n"
	    "                         200 ms later, stops and starts its port again\n"
	    "  --close-delay MS       sleep MS ms before closing the port (10)\n"
	    "  --runs N               launch the pair N times and count clean exits\n"
	    "  --verify               the receiver compares every payload byte\n"
	    "  --probe-intr           configure rx interrupts and report what the port says\n"
	    "  --timeout S            give up after S seconds per side (60)\n"
	    "  --quiet                --log-level=warning for the EAL\n"
	    "Environment: DPDK_RAW_EAL_ARGS appends EAL arguments (space separated).\n",
	    HDR_LEN);
}

static bool parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return false;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end != '\0' || v == 0)
		return false;
	*out = (size_t)v;
	return true;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

static bool parse_frames(char *s, struct opts *o)
{
	o->nframes = 0;
	for (char *t = strtok(s, ","); t != NULL; t = strtok(NULL, ",")) {
		size_t v;

		if (o->nframes == MAX_LIST || !parse_size(t, &v) || v > 60000)
			return false;
		o->frames[o->nframes++] = v;
	}
	return o->nframes > 0;
}

static bool parse_modes(char *s, struct opts *o)
{
	o->nmodes = 0;
	for (char *t = strtok(s, ","); t != NULL; t = strtok(NULL, ",")) {
		int m;

		for (m = 0; m < M_COUNT && strcmp(t, mode_names[m]) != 0; m++)
			;
		if (m == M_COUNT || o->nmodes == MAX_LIST)
			return false;
		o->modes[o->nmodes++] = (enum mode)m;
	}
	return o->nmodes > 0;
}

static bool parse_cleanup(const char *s, struct opts *o)
{
	if (strcmp(s, "none") == 0)
		o->cleanup = C_NONE;
	else if (strcmp(s, "now") == 0)
		o->cleanup = C_NOW;
	else if (strcmp(s, "wait") == 0)
		o->cleanup = C_WAIT;
	else if (strncmp(s, "wait=", 5) == 0 && parse_int(s + 5, 0, 60000, &o->wait_ms))
		o->cleanup = C_WAIT;
	else
		return false;
	return true;
}

enum {
	O_ROLE = 256,
	O_SENDER,
	O_SOCK,
	O_BYTES,
	O_FRAMES,
	O_MODES,
	O_REPS,
	O_WARMUP,
	O_BURST,
	O_BSIZE,
	O_RSIZE,
	O_CLEANUP,
	O_RUNS,
	O_VERIFY,
	O_PROBE,
	O_TIMEOUT,
	O_QUIET,
	O_CLOSE_DELAY,
	O_START_RETRY,
	O_YIELD,
};

static const struct option long_opts[] = {
    {"role", required_argument, NULL, O_ROLE},
    {"sender", required_argument, NULL, O_SENDER},
    {"sock", required_argument, NULL, O_SOCK},
    {"bytes", required_argument, NULL, O_BYTES},
    {"frames", required_argument, NULL, O_FRAMES},
    {"frame", required_argument, NULL, O_FRAMES},
    {"modes", required_argument, NULL, O_MODES},
    {"mode", required_argument, NULL, O_MODES},
    {"reps", required_argument, NULL, O_REPS},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"burst", required_argument, NULL, O_BURST},
    {"bsize", required_argument, NULL, O_BSIZE},
    {"rsize", required_argument, NULL, O_RSIZE},
    {"cleanup", required_argument, NULL, O_CLEANUP},
    {"runs", required_argument, NULL, O_RUNS},
    {"verify", no_argument, NULL, O_VERIFY},
    {"probe-intr", no_argument, NULL, O_PROBE},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"quiet", no_argument, NULL, O_QUIET},
    {"close-delay", required_argument, NULL, O_CLOSE_DELAY},
    {"start-retry", no_argument, NULL, O_START_RETRY},
    {"yield", no_argument, NULL, O_YIELD},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad(const char *what, const char *val)
{
	fprintf(stderr, "dpdk_raw: bad %s '%s' (see dpdk_raw --help)\n", what, val);
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c, v;
	size_t sz;

	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case O_ROLE:
			if (strcmp(optarg, "server") != 0 && strcmp(optarg, "client") != 0)
				return bad("--role", optarg);
			o->role = optarg;
			break;
		case O_SENDER:
			if (strcmp(optarg, "server") != 0 && strcmp(optarg, "client") != 0)
				return bad("--sender", optarg);
			o->server_sends = strcmp(optarg, "server") == 0;
			break;
		case O_SOCK:
			if (strlen(optarg) >= sizeof(o->sock))
				return bad("--sock (too long)", optarg);
			snprintf(o->sock, sizeof(o->sock), "%s", optarg);
			break;
		case O_BYTES:
			if (!parse_size(optarg, &o->bytes))
				return bad("--bytes", optarg);
			break;
		case O_FRAMES:
			if (!parse_frames(optarg, o))
				return bad("--frames (1..60000 bytes, at most 8)", optarg);
			break;
		case O_MODES:
			if (!parse_modes(optarg, o))
				return bad("--modes", optarg);
			break;
		case O_REPS:
			if (!parse_int(optarg, 1, MAX_REPS, &o->reps))
				return bad("--reps", optarg);
			break;
		case O_WARMUP:
			if (!parse_int(optarg, 0, 100, &o->warmup))
				return bad("--warmup", optarg);
			break;
		case O_BURST:
			if (!parse_int(optarg, 1, MAX_BURST, &o->burst))
				return bad("--burst", optarg);
			break;
		case O_BSIZE:
			if (!parse_size(optarg, &sz) || sz > 65535 - RTE_PKTMBUF_HEADROOM)
				return bad("--bsize", optarg);
			o->bsize = (unsigned)sz;
			break;
		case O_RSIZE:
			if (!parse_int(optarg, 1, 14, &o->rsize))
				return bad("--rsize", optarg);
			break;
		case O_CLEANUP:
			if (!parse_cleanup(optarg, o))
				return bad("--cleanup", optarg);
			break;
		case O_RUNS:
			if (!parse_int(optarg, 1, 100000, &o->runs))
				return bad("--runs", optarg);
			break;
		case O_VERIFY:
			o->verify = true;
			break;
		case O_PROBE:
			o->probe_intr = true;
			break;
		case O_TIMEOUT:
			if (!parse_int(optarg, 1, 3600, &v))
				return bad("--timeout", optarg);
			o->timeout_s = v;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_YIELD:
			o->yield = true;
			break;
		case O_START_RETRY:
			o->start_retry = true;
			break;
		case O_CLOSE_DELAY:
			if (!parse_int(optarg, 0, 60000, &o->close_delay_ms))
				return bad("--close-delay", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc)
		return bad("argument", argv[optind]);
	if (o->role != NULL && (o->nframes > 1 || o->nmodes > 1 || o->runs > 1)) {
		fprintf(stderr, "dpdk_raw: with --role, one frame size, one mode and no --runs\n");
		return 2;
	}
	for (int f = 0; f < o->nframes; f++) {
		for (int m = 0; m < o->nmodes; m++) {
			unsigned b =
			    o->bsize != 0 ? o->bsize : auto_bsize(o->frames[f], o->modes[m]);

			if (b + RTE_PKTMBUF_HEADROOM + 128 > 65535) {
				fprintf(stderr, "dpdk_raw: frame %zu needs bsize %u, too large\n",
					o->frames[f], b);
				return 2;
			}
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	static struct opts o = {
	    .bytes = 64u << 20,
	    .frames = {4096},
	    .nframes = 1,
	    .modes = {M_COPY},
	    .nmodes = 1,
	    .reps = 5,
	    .warmup = 1,
	    .burst = 32,
	    .rsize = 10,
	    .runs = 1,
	    .cleanup = C_WAIT,
	    .wait_ms = 100,
	    .close_delay_ms = 10,
	    .timeout_s = 60,
	};
	int rc = parse(argc, argv, &o);

	if (rc >= 0)
		return rc;
	if (o.sock[0] == '\0')
		snprintf(o.sock, sizeof(o.sock), "/tmp/dpdk_raw.%d.sock", (int)getpid());
	g_o = &o;
	/* Both sides fill the same source: the sender sends from it, the receiver checks. */
	g_src = malloc(o.bytes);
	if (g_src == NULL) {
		fprintf(stderr, "dpdk_raw: no memory for a %zu-byte source\n", o.bytes);
		return 1;
	}
	for (size_t i = 0; i < o.bytes; i++)
		g_src[i] = (uint8_t)((i * 2654435761u) >> 13);
	if (o.role == NULL) {
		rc = pair_main();
	} else {
		static struct side_result r;
		bool server = strcmp(o.role, "server") == 0;

		rc = run_side(server, o.frames[0], o.modes[0], &r);
		if (r.valid)
			print_result(server == o.server_sends, o.frames[0], o.modes[0], &r);
	}
	free(g_src);
	return rc;
}
