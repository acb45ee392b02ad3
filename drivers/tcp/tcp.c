/* TCP link driver (drivers/): one authenticated stream per pair of ranks (the higher rank
 * dials the lower), length-prefixed frames, non-blocking sockets behind one epoll fd. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>
#include "drivers/link.h"
#include "lib/util/bytes.h"
#include "lib/util/log.h"
#include "lib/util/time.h"

#define TCP_MAX_FRAME (256u << 10)
/* A length word no frame has: a rank closing its link says goodbye with it, so that a peer
 * finding several connections gone at once reports the ranks that died (no goodbye) before
 * those that left (a survivor that heard of a death, finished and exited). */
#define TCP_BYE_LEN 0xffffffffu
#define TCP_OUTQ_MAX (8u << 20) /* queued bytes per peer before send says WT_AGAIN */
#define TCP_RX_INIT (64u << 10)
#define TCP_MAX_RANKS (1 << 20)
#define TCP_JOB_ID_MAX 64
#define TCP_MAX_PENDING 64 /* unauthenticated incoming connections at once */
#define TCP_HS_TIMEOUT_NS (10ull * 1000000000ull)
#define TCP_ACCEPT_GRACE_NS (2ull * 1000000000ull)
#define TCP_BACKOFF_MIN_NS (10ull * 1000000ull)
#define TCP_BACKOFF_MAX_NS (500ull * 1000000ull)
#define TCP_DEFAULT_TIMEOUT_S 30.0
#define TCP_EPOLL_BATCH 64
#define TCP_IOV_BATCH 64
#define TCP_ACCEPT_BATCH 16
#define TCP_VERSION 1u
#define TCP_BLOB_MAGIC 0x50435457u /* "WTCP" */
#define TCP_LABEL_ACCEPT "weft-tcp-accept-v1"
#define TCP_LABEL_DIAL "weft-tcp-dial-v1"

/* Handshake messages: big-endian integers, fixed sizes. */
#define TCP_HELLO_LEN (8 + 16 + WT_UTIL_NONCE_LEN)
#define TCP_ACK_LEN (8 + 8 + WT_UTIL_NONCE_LEN + WT_UTIL_MAC_LEN)
#define TCP_FIN_LEN (8 + WT_UTIL_MAC_LEN)
#define TCP_HS_BUF 96

extern const wt_link_ops_t wt_tcp_ops;

enum tcp_kind {
	TCP_K_LISTEN = 1,
	TCP_K_TIMER,
	TCP_K_PEER,
	TCP_K_PENDING,
};

enum tcp_peer_state {
	TCP_NONE = 0,
	TCP_DIAL_WAIT,	 /* dialer: backing off before the next attempt */
	TCP_CONNECTING,	 /* dialer: non-blocking connect in flight */
	TCP_HANDSHAKE,	 /* dialer: HELLO sent, waiting for ACK */
	TCP_ACCEPT_WAIT, /* acceptor: waiting for the peer to dial us */
	TCP_UP,
	TCP_FAILED,
};

struct tcp_blob {
	uint32_t magic;
	uint16_t version;
	uint16_t family; /* 4 or 6 */
	uint32_t rank;
	uint32_t size;
	uint16_t port; /* network order */
	uint16_t pad;
	uint8_t addr[16];
};

struct tcp_chunk {
	struct tcp_chunk *next;
	size_t len;
	size_t off;
	uint8_t data[];
};

struct tcp_peer {
	int state;
	int connected; /* connect() was called */
	weft_status_t status;
	int fd;
	uint32_t ev_mask;
	struct sockaddr_storage sa;
	socklen_t salen;
	char addr_str[64];
	uint64_t deadline;
	uint64_t retry_at;
	uint64_t backoff;
	uint8_t nonce_d[WT_UTIL_NONCE_LEN];
	uint8_t hs[TCP_HS_BUF];
	size_t hs_fill;
	uint8_t *rx;
	size_t rx_cap;
	size_t rx_off;
	size_t rx_fill;
	int rx_ready;	  /* socket readable or complete frames buffered */
	int in_rxq;	  /* listed in link->rxq */
	int bye;	  /* the peer said goodbye (TCP_BYE_LEN) before closing */
	int tx_dead;	  /* a send found the connection gone: the receive side reports it */
	int rx_delivered; /* frames handed out this poll: buffer must not move */
	struct tcp_chunk *txq;
	struct tcp_chunk *txq_tail;
	size_t txq_bytes;
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
};

struct tcp_pending {
	int fd;	   /* -1 when free */
	int stage; /* 0: waiting HELLO, 1: waiting FIN */
	uint32_t claimed;
	uint64_t deadline;
	uint8_t nonces[2 * WT_UTIL_NONCE_LEN]; /* dialer's then ours */
	uint8_t buf[TCP_HS_BUF];
	size_t fill;
	char addr_str[64];
};

struct wt_link {
	wt_link_base_t base;
	int rank;
	int size;
	char job_id[TCP_JOB_ID_MAX + 1];
	wt_util_key_t key;
	double timeout_s;
	int lfd;
	int tfd;
	int epfd;
	struct tcp_blob self;
	struct tcp_peer *peers;
	struct tcp_pending pend[TCP_MAX_PENDING];
	int ntimed; /* peers with a connect deadline running */
	uint64_t next_timer;
	int *rxq; /* peers with rx_ready */
	int nrxq;
	int *deliv; /* peers whose buffers hold frames handed out by the last poll */
	int ndeliv;
	wt_link_errq_t errq; /* peers with a PEER_ERROR to report */
	wt_link_errq_t byeq; /* ... of peers that said goodbye: reported after errq's */
};

/* ---- small helpers ---- */

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void addr_format(const struct sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		port = ntohs(s4->sin_port);
		snprintf(out, len, "%s:%d", ip, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		port = ntohs(s6->sin6_port);
		snprintf(out, len, "[%s]:%d", ip, port);
	} else {
		snprintf(out, len, "(unknown)");
	}
}

static void hs_desc(wt_link_t *l, int dialer, int acceptor, char *buf, size_t len)
{
	snprintf(buf, len, "%s|%d|%d|%d", l->job_id, dialer, acceptor, l->size);
}

static void hs_mac(wt_link_t *l, const char *label, int dialer, int acceptor, const uint8_t *nonces,
		   uint8_t *mac)
{
	char desc[TCP_JOB_ID_MAX + 48];

	hs_desc(l, dialer, acceptor, desc, sizeof(desc));
	wt_util_mac(&l->key, label, nonces, 2 * WT_UTIL_NONCE_LEN, desc, strlen(desc), mac);
}

static int hs_mac_ok(wt_link_t *l, const char *label, int dialer, int acceptor,
		     const uint8_t *nonces, const uint8_t *mac)
{
	char desc[TCP_JOB_ID_MAX + 48];

	hs_desc(l, dialer, acceptor, desc, sizeof(desc));
	return wt_util_mac_verify(&l->key, label, nonces, 2 * WT_UTIL_NONCE_LEN, desc, strlen(desc),
				  mac);
}

static uint64_t ev_tag(int kind, int idx, int fd)
{
	return ((uint64_t)kind << 56) | ((uint64_t)(uint32_t)idx << 32) | (uint32_t)fd;
}

static int ep_set(wt_link_t *l, int op, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event e = {.events = events, .data.u64 = tag};

	if (epoll_ctl(l->epfd, op, fd, &e) == 0)
		return 0;
	WT_ERROR("tcp: epoll_ctl on fd %d failed: %s", fd, strerror(errno));
	return -1;
}

static void timer_note(wt_link_t *l, uint64_t t)
{
	struct itimerspec its = {0};

	if (t >= l->next_timer)
		return;
	l->next_timer = t;
	its.it_value.tv_sec = (time_t)(t / 1000000000ull);
	its.it_value.tv_nsec = (long)(t % 1000000000ull);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	/* The timer wakes a sleeper for dial retries and deadlines. */
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void push_error(wt_link_t *l, int peer, weft_status_t st)
{
	struct tcp_peer *p = &l->peers[peer];

	if (p->state == TCP_FAILED)
		return;
	p->state = TCP_FAILED;
	p->status = st;
	wt_link_errq_push(p->bye ? &l->byeq : &l->errq, peer, st);
}

static int timed_state(int state)
{
	return state == TCP_DIAL_WAIT || state == TCP_CONNECTING || state == TCP_HANDSHAKE ||
	       state == TCP_ACCEPT_WAIT;
}

static void txq_free(struct tcp_peer *p)
{
	while (p->txq) {
		struct tcp_chunk *c = p->txq;

		p->txq = c->next;
		free(c);
	}
	p->txq_tail = NULL;
	p->txq_bytes = 0;
}

static void peer_close_fd(struct tcp_peer *p)
{
	if (p->fd >= 0)
		close(p->fd); /* also drops it from the epoll set */
	p->fd = -1;
	p->ev_mask = 0;
	p->hs_fill = 0;
	p->rx_ready = 0;
}

/* The peer is unusable: close it and queue one PEER_ERROR. */
static void peer_fail(wt_link_t *l, int peer, weft_status_t st)
{
	struct tcp_peer *p = &l->peers[peer];

	if (p->state == TCP_FAILED)
		return;
	if (timed_state(p->state))
		l->ntimed--;
	peer_close_fd(p);
	txq_free(p);
	push_error(l, peer, st);
}

/* ---- open / address / close ---- */

static weft_status_t listen_setup(wt_link_t *l, const char *bind_addr)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t slen;
	int one = 1;

	if (wt_link_bind_addr("tcp", bind_addr, &ss, &slen) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	l->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->lfd < 0) {
		WT_ERROR("tcp: listen socket failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	setsockopt(l->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->lfd, (struct sockaddr *)&ss, slen) != 0 || listen(l->lfd, SOMAXCONN) != 0 ||
	    getsockname(l->lfd, (struct sockaddr *)&ss, &slen) != 0) {
		WT_ERROR("tcp: listening on %s failed: %s", bind_addr ? bind_addr : "0.0.0.0",
			 strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	l->self.magic = TCP_BLOB_MAGIC;
	l->self.version = TCP_VERSION;
	l->self.rank = (uint32_t)l->rank;
	l->self.size = (uint32_t)l->size;
	wt_link_any_to_loopback(&ss);
	if (ss.ss_family == AF_INET) {
		l->self.family = 4;
		l->self.port = s4->sin_port;
		memcpy(l->self.addr, &s4->sin_addr, 4);
	} else {
		l->self.family = 6;
		l->self.port = s6->sin6_port;
		memcpy(l->self.addr, &s6->sin6_addr, 16);
	}
	return WEFT_OK;
}

static weft_status_t fds_setup(wt_link_t *l)
{
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->epfd < 0 || l->tfd < 0) {
		WT_ERROR("tcp: epoll/timerfd setup failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	if (ep_set(l, EPOLL_CTL_ADD, l->lfd, EPOLLIN, ev_tag(TCP_K_LISTEN, 0, l->lfd)) ||
	    ep_set(l, EPOLL_CTL_ADD, l->tfd, EPOLLIN, ev_tag(TCP_K_TIMER, 0, l->tfd)))
		return WEFT_ERR_SYSTEM;
	return WEFT_OK;
}

static int tx_flush(wt_link_t *l, int peer);

static void tcp_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	/* One last non-blocking push of queued output; whatever does not fit is dropped. Then
	 * a goodbye where everything went out (a peer missing it takes us for dead). */
	for (int i = 0; l->peers && i < l->size; i++) {
		static const uint8_t bye[4] = {0xff, 0xff, 0xff, 0xff};
		struct tcp_peer *p = &l->peers[i];

		if (p->state == TCP_UP && p->txq)
			tx_flush(l, i);
		if (p->state == TCP_UP && p->txq == NULL && !p->tx_dead &&
		    send(p->fd, bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			WT_DEBUG("tcp: goodbye to peer rank %d: %s", i, strerror(errno));
	}
	for (int i = 0; l->peers && i < l->size; i++) {
		peer_close_fd(&l->peers[i]);
		txq_free(&l->peers[i]);
		free(l->peers[i].rx);
	}
	for (int i = 0; i < TCP_MAX_PENDING; i++) {
		if (l->pend[i].fd >= 0)
			close(l->pend[i].fd);
	}
	if (l->lfd >= 0)
		close(l->lfd);
	if (l->tfd >= 0)
		close(l->tfd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->peers);
	free(l->rxq);
	free(l->deliv);
	wt_link_errq_free(&l->errq);
	wt_link_errq_free(&l->byeq);
	free(l);
}

static weft_status_t tcp_alloc(const wt_link_config_t *cfg, wt_link_t **out)
{
	wt_link_t *l = calloc(1, sizeof(*l));
	size_t n = (size_t)cfg->size;

	if (l == NULL)
		return WEFT_ERR_NO_MEMORY;
	*out = l;
	l->lfd = l->tfd = l->epfd = -1;
	for (int i = 0; i < TCP_MAX_PENDING; i++)
		l->pend[i].fd = -1;
	l->rank = cfg->rank;
	l->size = cfg->size;
	l->key = cfg->key;
	snprintf(l->job_id, sizeof(l->job_id), "%s", cfg->job_id);
	l->timeout_s = cfg->connect_timeout;
	if (!(l->timeout_s > 0) || !isfinite(l->timeout_s) || l->timeout_s > 1e6)
		l->timeout_s = TCP_DEFAULT_TIMEOUT_S;
	l->next_timer = UINT64_MAX;
	l->peers = calloc(n, sizeof(*l->peers));
	l->rxq = calloc(n, sizeof(int));
	l->deliv = calloc(n, sizeof(int));
	if (wt_link_errq_init(&l->errq, cfg->size) != WEFT_OK ||
	    wt_link_errq_init(&l->byeq, cfg->size) != WEFT_OK || !l->peers || !l->rxq ||
	    !l->deliv) {
		WT_ERROR("tcp: out of memory for %d peers", cfg->size);
		return WEFT_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++)
		l->peers[i].fd = -1;
	return WEFT_OK;
}

static weft_status_t tcp_open(const wt_link_config_t *cfg, wt_link_t **link)
{
	wt_link_t *l = NULL;
	weft_status_t st;

	if (cfg == NULL || link == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = wt_link_config_check("tcp", cfg, TCP_MAX_RANKS, TCP_JOB_ID_MAX, "");
	if (st != WEFT_OK)
		return st;
	st = tcp_alloc(cfg, &l);
	if (st == WEFT_OK)
		st = listen_setup(l, cfg->bind_addr);
	if (st == WEFT_OK)
		st = fds_setup(l);
	if (st != WEFT_OK) {
		tcp_close(l);
		return st;
	}
	l->base.ops = &wt_tcp_ops;
	l->base.max_frame = TCP_MAX_FRAME;
	*link = l;
	return WEFT_OK;
}

static weft_status_t tcp_address(wt_link_t *l, void *blob, size_t *len)
{
	if (l == NULL || blob == NULL || len == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (*len < sizeof(l->self)) {
		WT_ERROR("tcp: address buffer of %zu bytes is smaller than %zu", *len,
			 sizeof(l->self));
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(blob, &l->self, sizeof(l->self));
	*len = sizeof(l->self);
	return WEFT_OK;
}

/* ---- dialing (the higher rank of a pair) ---- */

static void dial_start(wt_link_t *l, int peer);

static void dial_retry(wt_link_t *l, int peer, const char *why)
{
	struct tcp_peer *p = &l->peers[peer];
	uint64_t now = wt_util_time_ns();

	peer_close_fd(p);
	if (now >= p->deadline) {
		WT_ERROR("tcp: connecting to peer rank %d at %s timed out after %.1f s (last "
			 "error: %s)",
			 peer, p->addr_str, l->timeout_s, why);
		peer_fail(l, peer, WEFT_ERR_TIMEOUT);
		return;
	}
	WT_DEBUG("tcp: peer rank %d at %s: %s; retrying", peer, p->addr_str, why);
	p->backoff = p->backoff ? min64(p->backoff * 2, TCP_BACKOFF_MAX_NS) : TCP_BACKOFF_MIN_NS;
	p->retry_at = min64(now + p->backoff, p->deadline);
	p->state = TCP_DIAL_WAIT;
	timer_note(l, p->retry_at);
}

static int hello_send(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	uint8_t m[TCP_HELLO_LEN];

	memcpy(m, "WTCPHEL1", 8);
	wt_util_put_be32(m + 8, TCP_VERSION);
	wt_util_put_be32(m + 12, (uint32_t)l->size);
	wt_util_put_be32(m + 16, (uint32_t)l->rank);
	wt_util_put_be32(m + 20, (uint32_t)peer);
	wt_util_random(p->nonce_d, sizeof(p->nonce_d));
	memcpy(m + 24, p->nonce_d, sizeof(p->nonce_d));
	/* A fresh socket's send buffer always takes these few bytes whole. */
	if (send(p->fd, m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(m))
		return -1;
	p->state = TCP_HANDSHAKE;
	p->hs_fill = 0;
	p->ev_mask = EPOLLIN;
	return ep_set(l, EPOLL_CTL_MOD, p->fd, EPOLLIN, ev_tag(TCP_K_PEER, peer, p->fd));
}

static void dial_start(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	int one = 1;

	p->fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		dial_retry(l, peer, strerror(errno));
		return;
	}
	setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(p->fd, (struct sockaddr *)&p->sa, p->salen) != 0 && errno != EINPROGRESS) {
		dial_retry(l, peer, strerror(errno));
		return;
	}
	p->state = TCP_CONNECTING;
	p->ev_mask = EPOLLOUT;
	if (ep_set(l, EPOLL_CTL_ADD, p->fd, EPOLLOUT, ev_tag(TCP_K_PEER, peer, p->fd)))
		dial_retry(l, peer, "epoll_ctl failed");
}

static void dial_connected(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	int err = 0;
	socklen_t elen = sizeof(err);

	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
		err = errno;
	if (err != 0) {
		dial_retry(l, peer, strerror(err));
		return;
	}
	if (hello_send(l, peer) != 0)
		dial_retry(l, peer, "sending hello failed");
}

static struct tcp_chunk *chunk_new(size_t len)
{
	struct tcp_chunk *c = malloc(sizeof(*c) + len);

	if (c) {
		c->next = NULL;
		c->len = len;
		c->off = 0;
	}
	return c;
}

static void peer_up(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];

	if (timed_state(p->state))
		l->ntimed--;
	p->state = TCP_UP;
	p->backoff = 0;
	WT_DEBUG("tcp: connection to peer rank %d (%s) is up", peer, p->addr_str);
	tx_flush(l, peer);
}

static void ack_check(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	uint8_t nonces[2 * WT_UTIL_NONCE_LEN];
	struct tcp_chunk *fin;
	const uint8_t *m = p->hs;

	if (memcmp(m, "WTCPACK1", 8) != 0 || wt_util_get_be32(m + 8) != (uint32_t)peer ||
	    wt_util_get_be32(m + 12) != (uint32_t)l->rank) {
		WT_ERROR("tcp: peer rank %d at %s answered with a bad handshake", peer,
			 p->addr_str);
		peer_fail(l, peer, WEFT_ERR_PROTOCOL);
		return;
	}
	memcpy(nonces, p->nonce_d, WT_UTIL_NONCE_LEN);
	memcpy(nonces + WT_UTIL_NONCE_LEN, m + 16, WT_UTIL_NONCE_LEN);
	if (!hs_mac_ok(l, TCP_LABEL_ACCEPT, l->rank, peer, nonces, m + 16 + WT_UTIL_NONCE_LEN)) {
		WT_ERROR("tcp: peer rank %d at %s failed authentication with the job key; "
			 "connection refused",
			 peer, p->addr_str);
		peer_fail(l, peer, WEFT_ERR_AUTH);
		return;
	}
	fin = chunk_new(TCP_FIN_LEN);
	if (fin == NULL) {
		WT_ERROR("tcp: out of memory finishing the handshake with peer rank %d", peer);
		peer_fail(l, peer, WEFT_ERR_NO_MEMORY);
		return;
	}
	memcpy(fin->data, "WTCPFIN1", 8);
	hs_mac(l, TCP_LABEL_DIAL, l->rank, peer, nonces, fin->data + 8);
	/* The proof goes first; frames queued while connecting follow it. */
	fin->next = p->txq;
	p->txq = fin;
	if (p->txq_tail == NULL)
		p->txq_tail = fin;
	p->txq_bytes += fin->len;
	peer_up(l, peer);
}

static void hs_read(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	ssize_t r;

	/* Only the ACK is read: frames may follow it in the stream. */
	r = recv(p->fd, p->hs + p->hs_fill, TCP_ACK_LEN - p->hs_fill, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		dial_retry(l, peer,
			   r == 0 ? "connection closed during handshake" : strerror(errno));
		return;
	}
	p->hs_fill += (size_t)r;
	if (p->hs_fill == TCP_ACK_LEN)
		ack_check(l, peer);
}

/* ---- accepting (the lower rank of a pair) ---- */

static void pend_close(struct tcp_pending *c)
{
	close(c->fd);
	c->fd = -1;
}

static void do_accept(wt_link_t *l)
{
	for (int i = 0; i < TCP_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t slen = sizeof(ss);
		struct tcp_pending *c = NULL;
		int one = 1;
		int fd =
		    accept4(l->lfd, (struct sockaddr *)&ss, &slen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				WT_WARN("tcp: accept failed: %s", strerror(errno));
			return;
		}
		for (int k = 0; k < TCP_MAX_PENDING && c == NULL; k++) {
			if (l->pend[k].fd < 0)
				c = &l->pend[k];
		}
		if (c == NULL) {
			WT_WARN("tcp: too many unauthenticated connections; dropping one");
			close(fd);
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		addr_format((struct sockaddr *)&ss, c->addr_str, sizeof(c->addr_str));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->deadline = wt_util_time_ns() + TCP_HS_TIMEOUT_NS;
		if (ep_set(l, EPOLL_CTL_ADD, fd, EPOLLIN,
			   ev_tag(TCP_K_PENDING, (int)(c - l->pend), fd))) {
			pend_close(c);
			continue;
		}
		timer_note(l, c->deadline);
	}
}

static int hello_check(wt_link_t *l, struct tcp_pending *c)
{
	uint8_t ack[TCP_ACK_LEN];
	const uint8_t *m = c->buf;
	uint32_t dialer = wt_util_get_be32(m + 16);

	if (memcmp(m, "WTCPHEL1", 8) != 0 || wt_util_get_be32(m + 8) != TCP_VERSION ||
	    wt_util_get_be32(m + 12) != (uint32_t)l->size ||
	    wt_util_get_be32(m + 20) != (uint32_t)l->rank || dialer <= (uint32_t)l->rank ||
	    dialer >= (uint32_t)l->size) {
		WT_ERROR("tcp: refused connection from %s: bad handshake hello", c->addr_str);
		return -1;
	}
	c->claimed = dialer;
	memcpy(c->nonces, m + 24, WT_UTIL_NONCE_LEN);
	wt_util_random(c->nonces + WT_UTIL_NONCE_LEN, WT_UTIL_NONCE_LEN);
	memcpy(ack, "WTCPACK1", 8);
	wt_util_put_be32(ack + 8, (uint32_t)l->rank);
	wt_util_put_be32(ack + 12, dialer);
	memcpy(ack + 16, c->nonces + WT_UTIL_NONCE_LEN, WT_UTIL_NONCE_LEN);
	hs_mac(l, TCP_LABEL_ACCEPT, (int)dialer, l->rank, c->nonces, ack + 16 + WT_UTIL_NONCE_LEN);
	if (send(c->fd, ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ack)) {
		WT_WARN("tcp: connection from %s closed during handshake", c->addr_str);
		return -1;
	}
	c->stage = 1;
	c->fill = 0;
	return 0;
}

/* The dialer proved the key: the connection becomes the peer's. */
static void pend_adopt(wt_link_t *l, struct tcp_pending *c)
{
	int peer = (int)c->claimed;
	struct tcp_peer *p = &l->peers[peer];

	if (p->state != TCP_NONE && p->state != TCP_ACCEPT_WAIT) {
		WT_WARN("tcp: second connection from %s for peer rank %d refused", c->addr_str,
			peer);
		pend_close(c);
		return;
	}
	if (ep_set(l, EPOLL_CTL_MOD, c->fd, EPOLLIN, ev_tag(TCP_K_PEER, peer, c->fd))) {
		pend_close(c);
		return;
	}
	p->fd = c->fd;
	p->ev_mask = EPOLLIN;
	c->fd = -1;
	if (!p->connected)
		snprintf(p->addr_str, sizeof(p->addr_str), "%s", c->addr_str);
	peer_up(l, peer);
	/* Frames may already be buffered behind the handshake. */
	p->rx_ready = 1;
	if (!p->in_rxq) {
		p->in_rxq = 1;
		l->rxq[l->nrxq++] = peer;
	}
}

static void fin_check(wt_link_t *l, struct tcp_pending *c)
{
	if (memcmp(c->buf, "WTCPFIN1", 8) != 0 ||
	    !hs_mac_ok(l, TCP_LABEL_DIAL, (int)c->claimed, l->rank, c->nonces, c->buf + 8)) {
		WT_ERROR("tcp: connection from %s claiming rank %u failed authentication with "
			 "the job key; closed",
			 c->addr_str, c->claimed);
		pend_close(c);
		return;
	}
	pend_adopt(l, c);
}

static void pend_read(wt_link_t *l, struct tcp_pending *c)
{
	size_t want = c->stage == 0 ? TCP_HELLO_LEN : TCP_FIN_LEN;
	ssize_t r = recv(c->fd, c->buf + c->fill, want - c->fill, MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		WT_WARN("tcp: connection from %s closed during handshake", c->addr_str);
		pend_close(c);
		return;
	}
	c->fill += (size_t)r;
	if (c->fill < want)
		return;
	if (c->stage == 0) {
		if (hello_check(l, c) != 0)
			pend_close(c);
		return;
	}
	fin_check(l, c);
}

/* ---- connect ---- */

static weft_status_t blob_parse(wt_link_t *l, int peer, const void *blob, size_t len,
				struct tcp_peer *p)
{
	struct tcp_blob b;
	const char *why = NULL;

	if (blob == NULL || len != sizeof(b)) {
		WT_ERROR("tcp: address of peer rank %d has %zu bytes, expected %zu", peer,
			 blob ? len : 0, sizeof(b));
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(&b, blob, sizeof(b));
	if (b.magic != TCP_BLOB_MAGIC || b.version != TCP_VERSION)
		why = "bad magic or version";
	else if (b.rank != (uint32_t)peer || b.size != (uint32_t)l->size)
		why = "rank or world size does not match";
	else if (b.port == 0 || b.pad != 0)
		why = "bad port";
	else if (b.family != 4 && b.family != 6)
		why = "bad address family";
	for (int i = 4; why == NULL && b.family == 4 && i < 16; i++) {
		if (b.addr[i] != 0)
			why = "bad IPv4 address";
	}
	if (why) {
		WT_ERROR("tcp: address of peer rank %d is malformed: %s", peer, why);
		return WEFT_ERR_INVALID_ARG;
	}
	memset(&p->sa, 0, sizeof(p->sa));
	if (b.family == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&p->sa;

		s4->sin_family = AF_INET;
		s4->sin_port = b.port;
		memcpy(&s4->sin_addr, b.addr, 4);
		p->salen = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&p->sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = b.port;
		memcpy(&s6->sin6_addr, b.addr, 16);
		p->salen = sizeof(*s6);
	}
	addr_format((struct sockaddr *)&p->sa, p->addr_str, sizeof(p->addr_str));
	return WEFT_OK;
}

static weft_status_t tcp_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	struct tcp_peer *p;
	struct tcp_peer tmp;
	weft_status_t st;
	uint64_t now;

	if (l == NULL || peer < 0 || peer >= l->size || peer == l->rank) {
		WT_ERROR("tcp: connect to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (p->connected) {
		WT_ERROR("tcp: connect to peer rank %d called twice", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	st = blob_parse(l, peer, blob, len, &tmp);
	if (st != WEFT_OK)
		return st;
	p->connected = 1;
	p->sa = tmp.sa;
	p->salen = tmp.salen;
	memcpy(p->addr_str, tmp.addr_str, sizeof(p->addr_str));
	if (p->state != TCP_NONE)
		return WEFT_OK; /* the peer dialed us before we got here */
	now = wt_util_time_ns();
	l->ntimed++;
	if (l->rank < peer) {
		p->state = TCP_ACCEPT_WAIT;
		p->deadline = now + (uint64_t)(l->timeout_s * 1e9) + TCP_ACCEPT_GRACE_NS;
		timer_note(l, p->deadline);
		return WEFT_OK;
	}
	p->deadline = now + (uint64_t)(l->timeout_s * 1e9);
	timer_note(l, p->deadline);
	dial_start(l, peer);
	return WEFT_OK;
}

/* ---- send ---- */

/* Copies the frame (4-byte length, then iov) from byte skip on into a queue chunk. */
static int txq_append(struct tcp_peer *p, const uint8_t hdr[4], const struct iovec *iov, int iovcnt,
		      size_t total, size_t skip)
{
	struct tcp_chunk *c = chunk_new(4 + total - skip);
	uint8_t *dst;

	if (c == NULL)
		return -1;
	dst = c->data;
	if (skip < 4) {
		memcpy(dst, hdr + skip, 4 - skip);
		dst += 4 - skip;
		skip = 0;
	} else {
		skip -= 4;
	}
	for (int i = 0; i < iovcnt; i++) {
		size_t n = iov[i].iov_len;

		if (skip >= n) {
			skip -= n;
			continue;
		}
		memcpy(dst, (const uint8_t *)iov[i].iov_base + skip, n - skip);
		dst += n - skip;
		skip = 0;
	}
	if (p->txq_tail)
		p->txq_tail->next = c;
	else
		p->txq = c;
	p->txq_tail = c;
	p->txq_bytes += c->len;
	return 0;
}

static void want_out(wt_link_t *l, int peer, int on)
{
	struct tcp_peer *p = &l->peers[peer];
	uint32_t mask = EPOLLIN | (on ? EPOLLOUT : 0);

	if (p->ev_mask == mask || p->fd < 0)
		return;
	if (ep_set(l, EPOLL_CTL_MOD, p->fd, mask, ev_tag(TCP_K_PEER, peer, p->fd)) == 0)
		p->ev_mask = mask;
}

static int is_again(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

static void conn_lost(wt_link_t *l, int peer, const char *why)
{
	/* The channel above decides whether this is an error (ops were pending) or the
	 * normal end of a job. */
	WT_INFO("tcp: connection to peer rank %d (%s) lost: %s", peer, l->peers[peer].addr_str,
		why);
	peer_fail(l, peer, WEFT_ERR_PEER_FAILED);
}

static void rx_mark(wt_link_t *l, int peer);

/* A send found the connection gone (the peer closed or died): drop what is queued and
 * let the receive side report it at the next poll, after reading what the peer sent
 * before it went, its goodbye included (see TCP_BYE_LEN). */
static int send_lost(wt_link_t *l, int peer, int err)
{
	struct tcp_peer *p = &l->peers[peer];

	if (err != EPIPE && err != ECONNRESET && err != ENOTCONN)
		return 0;
	WT_INFO("tcp: send to peer rank %d (%s): %s; reported at the next poll", peer, p->addr_str,
		strerror(err));
	p->tx_dead = 1;
	txq_free(p);
	want_out(l, peer, 0);
	rx_mark(l, peer);
	return 1;
}

/* Writes queued output; returns -1 if the peer failed. */
static int tx_flush(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];

	while (p->txq) {
		struct iovec v[TCP_IOV_BATCH];
		struct msghdr msg = {.msg_iov = v};
		struct tcp_chunk *c = p->txq;
		size_t k = 0;
		ssize_t r;

		for (; c && k < TCP_IOV_BATCH; c = c->next, k++) {
			v[k].iov_base = c->data + c->off;
			v[k].iov_len = c->len - c->off;
		}
		msg.msg_iovlen = k;
		r = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0 && is_again(errno))
			break;
		if (r < 0 && send_lost(l, peer, errno))
			return 0;
		if (r < 0) {
			conn_lost(l, peer, strerror(errno));
			return -1;
		}
		p->txq_bytes -= (size_t)r;
		while (r > 0) {
			c = p->txq;
			if ((size_t)r < c->len - c->off) {
				c->off += (size_t)r;
				break;
			}
			r -= (ssize_t)(c->len - c->off);
			p->txq = c->next;
			free(c);
		}
		if (p->txq == NULL)
			p->txq_tail = NULL;
	}
	want_out(l, peer, p->txq != NULL);
	return 0;
}

static weft_status_t send_direct(wt_link_t *l, int peer, const uint8_t hdr[4],
				 const struct iovec *iov, int iovcnt, size_t total)
{
	struct tcp_peer *p = &l->peers[peer];
	struct iovec v[TCP_IOV_BATCH];
	struct msghdr msg = {.msg_iov = v, .msg_iovlen = (size_t)iovcnt + 1};
	ssize_t r;

	v[0].iov_base = (void *)hdr;
	v[0].iov_len = 4;
	for (int i = 0; i < iovcnt; i++)
		v[i + 1] = iov[i];
	r = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0 && is_again(errno))
		r = 0;
	if (r < 0 && send_lost(l, peer, errno))
		return WEFT_OK; /* the frame is dropped; the loss follows at the next poll */
	if (r < 0) {
		conn_lost(l, peer, strerror(errno));
		return WEFT_ERR_PEER_FAILED;
	}
	if ((size_t)r == 4 + total)
		return WEFT_OK;
	/* Part went out: the rest must follow, so it is queued whatever the bound says. */
	if (txq_append(p, hdr, iov, iovcnt, total, (size_t)r) != 0) {
		WT_ERROR("tcp: out of memory queueing a frame to peer rank %d", peer);
		conn_lost(l, peer, "out of memory");
		return WEFT_ERR_NO_MEMORY;
	}
	want_out(l, peer, 1);
	return WEFT_OK;
}

static weft_status_t send_frame(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				size_t *total_out)
{
	struct tcp_peer *p;
	uint8_t hdr[4];
	size_t total;

	if (l == NULL || peer < 0 || peer >= l->size) {
		WT_ERROR("tcp: send to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	p = &l->peers[peer];
	if (p->state == TCP_FAILED)
		return p->status;
	if (p->state == TCP_NONE) {
		WT_ERROR("tcp: send to peer rank %d before connect", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_link_iov_total(iov, iovcnt, TCP_MAX_FRAME, &total) != WEFT_OK) {
		WT_ERROR("tcp: bad iov for a frame to peer rank %d (at most %u bytes)", peer,
			 (unsigned)TCP_MAX_FRAME);
		return WEFT_ERR_INVALID_ARG;
	}
	*total_out = total;
	wt_util_put_be32(hdr, (uint32_t)total);
	if (p->state == TCP_UP && p->tx_dead)
		return WEFT_OK; /* gone: dropped, the loss is reported at the next poll */
	if (p->state == TCP_UP && p->txq == NULL && iovcnt < TCP_IOV_BATCH)
		return send_direct(l, peer, hdr, iov, iovcnt, total);
	if (p->txq_bytes > 0 && p->txq_bytes + 4 + total > TCP_OUTQ_MAX)
		return WT_AGAIN;
	if (txq_append(p, hdr, iov, iovcnt, total, 0) != 0) {
		WT_ERROR("tcp: out of memory queueing a frame to peer rank %d", peer);
		return WEFT_ERR_NO_MEMORY;
	}
	if (p->state == TCP_UP && tx_flush(l, peer) != 0)
		return p->status;
	return WEFT_OK;
}

static weft_status_t tcp_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie)
{
	size_t total = 0;
	weft_status_t st = send_frame(l, peer, iov, iovcnt, &total);

	(void)cookie;
	if (st == WEFT_OK) {
		l->peers[peer].tx_frames++;
		l->peers[peer].tx_bytes += total;
	}
	return st;
}

/* ---- receive ---- */

static void rx_mark(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];

	p->rx_ready = 1;
	if (!p->in_rxq) {
		p->in_rxq = 1;
		l->rxq[l->nrxq++] = peer;
	}
}

/* Frames handed out by the last poll are released now: keep the partial tail only. */
static void rx_compact(wt_link_t *l)
{
	for (int i = 0; i < l->ndeliv; i++) {
		struct tcp_peer *p = &l->peers[l->deliv[i]];
		size_t rest = p->rx_fill - p->rx_off;

		if (rest && p->rx_off)
			memmove(p->rx, p->rx + p->rx_off, rest);
		p->rx_fill = rest;
		p->rx_off = 0;
		p->rx_delivered = 0;
	}
	l->ndeliv = 0;
}

/* Makes room at the end of the buffer; only when nothing in it was handed out. */
static int rx_room(wt_link_t *l, int peer)
{
	struct tcp_peer *p = &l->peers[peer];
	size_t rest = p->rx_fill - p->rx_off;
	size_t need = TCP_RX_INIT;
	uint8_t *nb;

	if (p->rx_off) {
		memmove(p->rx, p->rx + p->rx_off, rest);
		p->rx_fill = rest;
		p->rx_off = 0;
		if (p->rx_fill < p->rx_cap)
			return 0;
	}
	if (rest >= 4)
		need =
		    4 + (size_t)wt_util_get_be32(p->rx); /* validated against max_frame already */
	if (need <= p->rx_cap)
		need = p->rx_cap * 2;
	if (need > 4 + TCP_MAX_FRAME)
		need = 4 + TCP_MAX_FRAME;
	if (need <= p->rx_cap)
		return 0;
	nb = realloc(p->rx, need);
	if (nb == NULL) {
		WT_ERROR("tcp: out of memory for a %zu-byte receive buffer (peer rank %d)", need,
			 peer);
		peer_fail(l, peer, WEFT_ERR_NO_MEMORY);
		return -1;
	}
	p->rx = nb;
	p->rx_cap = need;
	return 0;
}

static void rx_deliver(wt_link_t *l, int peer, wt_link_event_t *ev, size_t len)
{
	struct tcp_peer *p = &l->peers[peer];

	memset(ev, 0, sizeof(*ev));
	ev->type = WT_LINK_EV_FRAME;
	ev->peer = peer;
	ev->data = p->rx + p->rx_off + 4;
	ev->len = len;
	p->rx_off += 4 + len;
	p->rx_frames++;
	p->rx_bytes += len;
	if (!p->rx_delivered) {
		p->rx_delivered = 1;
		l->deliv[l->ndeliv++] = peer;
	}
}

/* Delivers up to max frames from peer; frames stay in its buffer until the next poll. */
static int rx_peer(wt_link_t *l, int peer, wt_link_event_t *ev, int max)
{
	struct tcp_peer *p = &l->peers[peer];
	int n = 0;

	while (n < max && p->state == TCP_UP) {
		size_t avail = p->rx_fill - p->rx_off;
		ssize_t r;

		if (avail >= 4) {
			uint32_t len = wt_util_get_be32(p->rx + p->rx_off);

			if (len == TCP_BYE_LEN) {
				p->bye = 1;
				p->rx_off += 4;
				continue;
			}
			if (len > TCP_MAX_FRAME) {
				WT_ERROR("tcp: peer rank %d (%s) sent a %u-byte frame (max %u); "
					 "closing",
					 peer, p->addr_str, len, (unsigned)TCP_MAX_FRAME);
				peer_fail(l, peer, WEFT_ERR_PROTOCOL);
				break;
			}
			if (avail >= 4 + (size_t)len) {
				rx_deliver(l, peer, &ev[n++], len);
				continue;
			}
		}
		if (p->rx_fill == p->rx_cap) {
			if (p->rx_delivered)
				break; /* room is made at the next poll */
			if (rx_room(l, peer) != 0)
				break;
		}
		r = recv(p->fd, p->rx + p->rx_fill, p->rx_cap - p->rx_fill, MSG_DONTWAIT);
		if (r > 0) {
			p->rx_fill += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && is_again(errno) && !p->tx_dead) {
			p->rx_ready = 0;
			break;
		}
		if (r == 0)
			conn_lost(l, peer,
				  p->bye ? "closed by the peer after its goodbye"
					 : "closed by the peer");
		else
			conn_lost(l, peer,
				  is_again(errno) ? "a send found it gone" : strerror(errno));
	}
	return n;
}

static int rx_all(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;
	int k = 0;

	for (int i = 0; i < l->nrxq; i++) {
		int peer = l->rxq[i];
		struct tcp_peer *p = &l->peers[peer];

		if (n < max && p->rx_ready && p->state == TCP_UP)
			n += rx_peer(l, peer, ev + n, max - n);
		if (p->rx_ready && p->state == TCP_UP)
			l->rxq[k++] = peer;
		else
			p->in_rxq = 0;
	}
	l->nrxq = k;
	return n;
}

/* ---- timers and events ---- */

static void timers_run(wt_link_t *l, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	uint64_t tick;

	if (read(l->tfd, &tick, sizeof(tick)) < 0 && errno != EAGAIN)
		WT_DEBUG("tcp: timerfd read: %s", strerror(errno));
	for (int i = 0; l->ntimed > 0 && i < l->size; i++) {
		struct tcp_peer *p = &l->peers[i];

		if (!timed_state(p->state))
			continue;
		if (now >= p->deadline) {
			if (p->state == TCP_ACCEPT_WAIT)
				WT_ERROR("tcp: peer rank %d (%s) did not connect within %.1f s", i,
					 p->addr_str, l->timeout_s);
			else
				WT_ERROR("tcp: connecting to peer rank %d at %s timed out after "
					 "%.1f s",
					 i, p->addr_str, l->timeout_s);
			peer_fail(l, i, WEFT_ERR_TIMEOUT);
			continue;
		}
		if (p->state == TCP_DIAL_WAIT && now >= p->retry_at)
			dial_start(l, i);
		if (p->state == TCP_DIAL_WAIT)
			next = min64(next, p->retry_at);
		if (timed_state(p->state))
			next = min64(next, p->deadline);
	}
	for (int i = 0; i < TCP_MAX_PENDING; i++) {
		struct tcp_pending *c = &l->pend[i];

		if (c->fd < 0)
			continue;
		if (now >= c->deadline) {
			WT_WARN("tcp: connection from %s did not finish its handshake in time; "
				"closed",
				c->addr_str);
			pend_close(c);
			continue;
		}
		next = min64(next, c->deadline);
	}
	l->next_timer = UINT64_MAX;
	if (next != UINT64_MAX) {
		timer_note(l, next);
	} else {
		struct itimerspec off = {0};

		timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &off, NULL);
	}
}

static void peer_event(wt_link_t *l, int peer, int fd, uint32_t events)
{
	struct tcp_peer *p;

	if (peer < 0 || peer >= l->size)
		return;
	p = &l->peers[peer];
	if (p->fd != fd)
		return; /* stale: the fd was closed earlier in this batch */
	switch (p->state) {
	case TCP_CONNECTING:
		dial_connected(l, peer);
		break;
	case TCP_HANDSHAKE:
		hs_read(l, peer);
		break;
	case TCP_UP:
		if (events & EPOLLOUT)
			tx_flush(l, peer);
		if (p->state == TCP_UP && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
			rx_mark(l, peer);
		break;
	default:
		break;
	}
}

static void events_run(wt_link_t *l)
{
	struct epoll_event evs[TCP_EPOLL_BATCH];
	int n = epoll_wait(l->epfd, evs, TCP_EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;
		int kind = (int)(tag >> 56);
		int idx = (int)((tag >> 32) & 0xffffff);
		int fd = (int)(uint32_t)tag;

		if (kind == TCP_K_LISTEN) {
			do_accept(l);
		} else if (kind == TCP_K_TIMER) {
			timers_run(l, wt_util_time_ns());
		} else if (kind == TCP_K_PEER) {
			peer_event(l, idx, fd, evs[i].events);
		} else if (kind == TCP_K_PENDING && idx < TCP_MAX_PENDING &&
			   l->pend[idx].fd == fd) {
			pend_read(l, &l->pend[idx]);
		}
	}
}

static int tcp_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n;

	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	rx_compact(l);
	if (l->next_timer != UINT64_MAX) {
		uint64_t now = wt_util_time_ns();

		if (now >= l->next_timer)
			timers_run(l, now);
	}
	events_run(l);
	n = wt_link_errq_pop(&l->errq, ev, max);
	n += rx_all(l, ev + n, max - n);
	n += wt_link_errq_pop(&l->errq, ev + n, max - n);
	if (l->errq.len == 0)
		n += wt_link_errq_pop(&l->byeq, ev + n, max - n);
	return n;
}

/* ---- sleeping ---- */

static int tcp_fd(wt_link_t *l)
{
	return l ? l->epfd : -1;
}

static int tcp_arm(wt_link_t *l)
{
	if (l == NULL)
		return 1;
	if (l->errq.len > 0 || l->byeq.len > 0 || l->nrxq > 0)
		return 1;
	if (l->next_timer != UINT64_MAX && wt_util_time_ns() >= l->next_timer)
		return 1;
	return 0;
}

static void tcp_disarm(wt_link_t *l)
{
	(void)l; /* level-triggered epoll: nothing to drain */
}

static weft_status_t tcp_probe(char *msg, size_t msglen)
{
	if (msg && msglen)
		msg[0] = '\0';
	return WEFT_OK;
}

static void tcp_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	if (l == NULL || st == NULL || peer < 0 || peer >= l->size)
		return;
	const struct tcp_peer *p = &l->peers[peer];

	st->frames_sent += p->tx_frames;
	st->bytes_sent += p->tx_bytes;
	st->frames_received += p->rx_frames;
	st->bytes_received += p->rx_bytes;
}

const wt_link_ops_t wt_tcp_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "tcp",
    .caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED | WT_LINK_CAP_HAS_FD,
    .probe = tcp_probe,
    .open = tcp_open,
    .address = tcp_address,
    .connect = tcp_connect,
    .send = tcp_send,
    .poll = tcp_poll,
    .get = NULL,
    .fd = tcp_fd,
    .arm = tcp_arm,
    .disarm = tcp_disarm,
    .close = tcp_close,
    .stats = tcp_stats,
};
