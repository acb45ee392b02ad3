/* The rendezvous store (lib/boot): a key-value server on its own thread (non-blocking
 * sockets + poll) and its client. Both sides prove the job token by HMAC
 * challenge-response before any request; every length read off the wire is checked.
 *
 * Wire format (all integers big-endian):
 *   server hello  : "WEFTSTO1" | server_nonce[32]
 *   client answer : HMAC(key, "weft-store-client", server_nonce, client_nonce) | client_nonce[32]
 *   server answer : HMAC(key, "weft-store-server", client_nonce, server_nonce)
 *   request       : op u8 | 0 u8 | 0 u16 | klen u32 | vlen u32 | arg u32 | key | value
 *   response      : status u8 | 0 u8 | 0 u16 | vlen u32 | value
 * GET's arg is how long (ms) the server waits for the key; ADD's value is an int64 delta
 * and counters are stored as decimal text so that GET can read them too. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lib/boot/store.h"
#include "lib/util/bytes.h"
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/time.h"

#define WT_BOOT_MAGIC "WEFTSTO1"
#define WT_BOOT_MAGIC_LEN 8
#define WT_BOOT_HELLO_LEN (WT_BOOT_MAGIC_LEN + WT_UTIL_NONCE_LEN)
#define WT_BOOT_ANSWER_LEN (WT_UTIL_MAC_LEN + WT_UTIL_NONCE_LEN)
#define WT_BOOT_REQ_LEN 16
#define WT_BOOT_RESP_LEN 8
#define WT_BOOT_HANDSHAKE_S 10.0 /* an unauthenticated connection gets this long */
#define WT_BOOT_OP_S 60.0	 /* SET/ADD answer deadline on the client */
#define WT_BOOT_GET_GRACE_S 10.0 /* client waits this much beyond the server-side wait */
#define WT_BOOT_MAX_CONNS 8192
#define WT_BOOT_REQS_PER_ROUND 32 /* fairness: requests served per connection per poll */
#define WT_BOOT_GET_MS_MAX 0x7fffffffu

enum { WT_BOOT_OP_SET = 1, WT_BOOT_OP_GET = 2, WT_BOOT_OP_ADD = 3 };
enum { WT_BOOT_ST_OK = 0, WT_BOOT_ST_NOTFOUND = 1, WT_BOOT_ST_BADVALUE = 2 };

static const char wt_label_client[] = "weft-store-client";
static const char wt_label_server[] = "weft-store-server";

static void format_addr(const struct sockaddr *sa, char *buf, size_t len, int with_port)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		/* A v4 client of a dual-stack socket shows up as ::ffff:a.b.c.d; print a.b.c.d. */
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
	}
	if (!with_port)
		snprintf(buf, len, "%s", ip);
	else if (strchr(ip, ':'))
		snprintf(buf, len, "[%s]:%d", ip, port);
	else
		snprintf(buf, len, "%s:%d", ip, port);
}

static void format_hostport(const char *host, int port, char *buf, size_t len)
{
	if (host && strchr(host, ':'))
		snprintf(buf, len, "[%s]:%d", host, port);
	else
		snprintf(buf, len, "%s:%d", host ? host : "*", port);
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Requests are small and synchronous; Nagle would only add latency. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void copy_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

/* ======================================================================== server */

typedef struct wt_boot_entry {
	struct wt_boot_entry *next;
	uint8_t *key;
	uint32_t klen;
	uint8_t *val;
	uint32_t vlen;
} wt_boot_entry_t;

enum wt_boot_conn_state {
	WT_CONN_HELLO,	/* hello sent, waiting for the client's answer */
	WT_CONN_HEADER, /* authenticated, reading a request header */
	WT_CONN_BODY,	/* reading key and value */
	WT_CONN_WAIT,	/* GET parked until its key is set or its deadline passes */
	WT_CONN_DEAD,
};

typedef struct {
	int fd;
	enum wt_boot_conn_state state;
	char peer[INET6_ADDRSTRLEN + 8];
	uint8_t snonce[WT_UTIL_NONCE_LEN];
	uint64_t deadline; /* handshake or parked GET; 0 = none */
	uint8_t small[WT_BOOT_ANSWER_LEN];
	size_t have;
	uint8_t op;
	uint32_t klen, vlen, arg;
	uint8_t *body; /* klen + vlen bytes */
	uint8_t *out;
	size_t out_len, out_off;
} wt_boot_conn_t;

struct wt_boot_server {
	int lfd;
	int wake[2];
	int port;
	wt_util_key_t key;
	pthread_t thread;
	atomic_uint_fast64_t clients;
	atomic_uint_fast64_t refused;
	wt_boot_conn_t **conns;
	size_t nconns, capconns;
	struct pollfd *pfds;
	size_t cappfds;
	uint64_t accept_pause_until;
	wt_boot_entry_t **buckets;
	size_t nbuckets, nentries;
};

static uint64_t hash_key(const uint8_t *k, uint32_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (uint32_t i = 0; i < len; i++) {
		h ^= k[i];
		h *= 1099511628211ull;
	}
	return h;
}

static wt_boot_entry_t *table_find(wt_boot_server_t *s, const uint8_t *k, uint32_t klen)
{
	wt_boot_entry_t *e = s->buckets[hash_key(k, klen) & (s->nbuckets - 1)];

	for (; e; e = e->next) {
		if (e->klen == klen && memcmp(e->key, k, klen) == 0)
			return e;
	}
	return NULL;
}

static void table_grow(wt_boot_server_t *s)
{
	size_t n = s->nbuckets * 2;
	wt_boot_entry_t **nb = calloc(n, sizeof(*nb));

	if (!nb) /* keep the old table: slower chains, still correct */
		return;
	for (size_t i = 0; i < s->nbuckets; i++) {
		wt_boot_entry_t *e = s->buckets[i], *next;

		for (; e; e = next) {
			size_t b = hash_key(e->key, e->klen) & (n - 1);

			next = e->next;
			e->next = nb[b];
			nb[b] = e;
		}
	}
	free(s->buckets);
	s->buckets = nb;
	s->nbuckets = n;
}

/* Set key to a copy of val; 0 on success, -1 when out of memory (store unchanged). */
static int table_set(wt_boot_server_t *s, const uint8_t *k, uint32_t klen, const uint8_t *val,
		     uint32_t vlen)
{
	wt_boot_entry_t *e = table_find(s, k, klen);
	uint8_t *v = malloc(vlen ? vlen : 1);
	size_t b;

	if (!v)
		return -1;
	memcpy(v, val, vlen);
	if (e) {
		free(e->val);
		e->val = v;
		e->vlen = vlen;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->key = malloc(klen))) {
		free(e);
		free(v);
		return -1;
	}
	memcpy(e->key, k, klen);
	e->klen = klen;
	e->val = v;
	e->vlen = vlen;
	b = hash_key(k, klen) & (s->nbuckets - 1);
	e->next = s->buckets[b];
	s->buckets[b] = e;
	if (++s->nentries > 2 * s->nbuckets)
		table_grow(s);
	return 0;
}

static void table_free(wt_boot_server_t *s)
{
	for (size_t i = 0; s->buckets && i < s->nbuckets; i++) {
		wt_boot_entry_t *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->key);
			free(e->val);
			free(e);
		}
	}
	free(s->buckets);
	s->buckets = NULL;
}

static void conn_close(wt_boot_conn_t *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->body);
	c->body = NULL;
	free(c->out);
	c->out = NULL;
	c->state = WT_CONN_DEAD;
}

static void conn_drop(wt_boot_conn_t *c, const char *why)
{
	WT_WARN("rendezvous store: dropping client %s: %s", c->peer, why);
	conn_close(c);
}

static void conn_flush(wt_boot_conn_t *c)
{
	while (c->out && c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			WT_DEBUG("rendezvous store: client %s gone while sending: %s", c->peer,
				 strerror(errno));
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
}

/* Queue bytes for the client and try to send them now. */
static void conn_queue(wt_boot_conn_t *c, const uint8_t *hdr, size_t hlen, const uint8_t *val,
		       size_t vlen)
{
	uint8_t *buf = malloc(hlen + vlen);

	if (!buf) {
		conn_drop(c, "out of memory for a response");
		return;
	}
	memcpy(buf, hdr, hlen);
	if (vlen)
		memcpy(buf + hlen, val, vlen);
	c->out = buf;
	c->out_len = hlen + vlen;
	c->out_off = 0;
	conn_flush(c);
}

static void conn_respond(wt_boot_conn_t *c, uint8_t status, const uint8_t *val, uint32_t vlen)
{
	uint8_t hdr[WT_BOOT_RESP_LEN] = {status};

	wt_util_put_be32(hdr + 4, vlen);
	conn_queue(c, hdr, sizeof(hdr), val, vlen);
}

/* Wake every GET parked on this key. */
static void wake_waiters(wt_boot_server_t *s, const wt_boot_entry_t *e)
{
	for (size_t i = 0; i < s->nconns; i++) {
		wt_boot_conn_t *w = s->conns[i];

		if (w->state != WT_CONN_WAIT || w->klen != e->klen ||
		    memcmp(w->body, e->key, e->klen) != 0)
			continue;
		free(w->body);
		w->body = NULL;
		w->state = WT_CONN_HEADER;
		w->deadline = 0;
		conn_respond(w, WT_BOOT_ST_OK, e->val, e->vlen);
	}
}

static void serve_set(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	if (table_set(s, c->body, c->klen, c->body + c->klen, c->vlen) != 0) {
		conn_drop(c, "out of memory storing a value");
		return;
	}
	/* Wake waiters first: responding may close c and free the key we look up by. */
	wake_waiters(s, table_find(s, c->body, c->klen));
	conn_respond(c, WT_BOOT_ST_OK, NULL, 0);
}

static void serve_get(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	wt_boot_entry_t *e = table_find(s, c->body, c->klen);

	if (e) {
		conn_respond(c, WT_BOOT_ST_OK, e->val, e->vlen);
		return;
	}
	if (c->arg == 0) {
		conn_respond(c, WT_BOOT_ST_NOTFOUND, NULL, 0);
		return;
	}
	/* Park: keep the key (body) and answer when it is set or the wait runs out. */
	c->state = WT_CONN_WAIT;
	c->deadline = wt_util_deadline_in((double)c->arg / 1000.0);
}

static int parse_counter(const uint8_t *val, uint32_t vlen, int64_t *out)
{
	char text[32];

	if (vlen == 0 || vlen >= sizeof(text))
		return -1;
	memcpy(text, val, vlen);
	text[vlen] = '\0';
	return wt_util_parse_int(text, INT64_MIN, INT64_MAX, out);
}

static void serve_add(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	int64_t delta = (int64_t)wt_util_get_be64(c->body + c->klen);
	wt_boot_entry_t *e = table_find(s, c->body, c->klen);
	uint8_t reply[8];
	char text[32];
	int64_t cur = 0;
	int len;

	if (e && parse_counter(e->val, e->vlen, &cur) != 0) {
		conn_respond(c, WT_BOOT_ST_BADVALUE, NULL, 0);
		return;
	}
	/* Counters wrap like the unsigned arithmetic they are done in. */
	cur = (int64_t)((uint64_t)cur + (uint64_t)delta);
	len = snprintf(text, sizeof(text), "%lld", (long long)cur);
	if (table_set(s, c->body, c->klen, (const uint8_t *)text, (uint32_t)len) != 0) {
		conn_drop(c, "out of memory storing a counter");
		return;
	}
	wt_util_put_be64(reply, (uint64_t)cur);
	wake_waiters(s, table_find(s, c->body, c->klen));
	conn_respond(c, WT_BOOT_ST_OK, reply, sizeof(reply));
}

/* Validate a request header; on success the connection moves on to reading the body. */
static void parse_header(wt_boot_conn_t *c)
{
	const uint8_t *h = c->small;
	char why[128];

	c->op = h[0];
	c->klen = wt_util_get_be32(h + 4);
	c->vlen = wt_util_get_be32(h + 8);
	c->arg = wt_util_get_be32(h + 12);
	if (h[1] != 0 || h[2] != 0 || h[3] != 0) {
		conn_drop(c, "reserved header bytes are not zero");
		return;
	}
	if (c->op != WT_BOOT_OP_SET && c->op != WT_BOOT_OP_GET && c->op != WT_BOOT_OP_ADD) {
		snprintf(why, sizeof(why), "unknown op %u", c->op);
		conn_drop(c, why);
		return;
	}
	if (c->klen == 0 || c->klen > WT_BOOT_KEY_MAX) {
		snprintf(why, sizeof(why), "key length %u outside 1..%d", c->klen, WT_BOOT_KEY_MAX);
		conn_drop(c, why);
		return;
	}
	if ((c->op == WT_BOOT_OP_SET && c->vlen > WT_BOOT_VALUE_MAX) ||
	    (c->op == WT_BOOT_OP_GET && c->vlen != 0) ||
	    (c->op == WT_BOOT_OP_ADD && c->vlen != 8)) {
		snprintf(why, sizeof(why), "value length %u invalid for op %u", c->vlen, c->op);
		conn_drop(c, why);
		return;
	}
	if (c->op == WT_BOOT_OP_GET && c->arg > WT_BOOT_GET_MS_MAX) {
		conn_drop(c, "GET wait out of range");
		return;
	}
	c->body = malloc((size_t)c->klen + c->vlen);
	if (!c->body) {
		conn_drop(c, "out of memory for a request");
		return;
	}
	c->have = 0;
	c->state = WT_CONN_BODY;
}

static void serve_request(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	c->state = WT_CONN_HEADER;
	c->have = 0;
	if (c->op == WT_BOOT_OP_SET)
		serve_set(s, c);
	else if (c->op == WT_BOOT_OP_GET)
		serve_get(s, c);
	else
		serve_add(s, c);
	if (c->state == WT_CONN_HEADER) {
		free(c->body);
		c->body = NULL;
	}
}

static void check_answer(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	const uint8_t *cmac = c->small;
	const uint8_t *cnonce = c->small + WT_UTIL_MAC_LEN;
	uint8_t smac[WT_UTIL_MAC_LEN];

	if (!wt_util_mac_verify(&s->key, wt_label_client, c->snonce, WT_UTIL_NONCE_LEN, cnonce,
				WT_UTIL_NONCE_LEN, cmac)) {
		atomic_fetch_add(&s->refused, 1);
		WT_WARN("rendezvous store: refused connection from %s: authentication failed "
			"(client does not hold the job token)",
			c->peer);
		conn_close(c);
		return;
	}
	wt_util_mac(&s->key, wt_label_server, cnonce, WT_UTIL_NONCE_LEN, c->snonce,
		    WT_UTIL_NONCE_LEN, smac);
	atomic_fetch_add(&s->clients, 1);
	WT_DEBUG("rendezvous store: client %s authenticated", c->peer);
	c->state = WT_CONN_HEADER;
	c->deadline = 0;
	c->have = 0;
	conn_queue(c, smac, sizeof(smac), NULL, 0);
}

/* Read until the current stage has all its bytes; 1 when complete, 0 when not yet, -1 when
 * the connection is gone. */
static int conn_fill(wt_boot_conn_t *c, uint8_t *dst, size_t need)
{
	while (c->have < need) {
		ssize_t n = recv(c->fd, dst + c->have, need - c->have, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n == 0) {
			if (c->state == WT_CONN_HELLO || c->have > 0)
				WT_WARN("rendezvous store: client %s closed the connection %s",
					c->peer,
					c->state == WT_CONN_HELLO ? "during authentication"
								  : "mid-request");
			conn_close(c);
			return -1;
		}
		if (n < 0) {
			WT_WARN("rendezvous store: receive from client %s failed: %s", c->peer,
				strerror(errno));
			conn_close(c);
			return -1;
		}
		c->have += (size_t)n;
	}
	return 1;
}

static void conn_read(wt_boot_server_t *s, wt_boot_conn_t *c)
{
	for (int round = 0; round < WT_BOOT_REQS_PER_ROUND * 2; round++) {
		/* One response in flight at a time bounds what a client that never reads
		 * can make us buffer. */
		if (c->out || c->state == WT_CONN_WAIT || c->state == WT_CONN_DEAD)
			return;
		if (c->state == WT_CONN_HELLO) {
			if (conn_fill(c, c->small, WT_BOOT_ANSWER_LEN) <= 0)
				return;
			check_answer(s, c);
		} else if (c->state == WT_CONN_HEADER) {
			if (conn_fill(c, c->small, WT_BOOT_REQ_LEN) <= 0)
				return;
			parse_header(c);
		} else if (c->state == WT_CONN_BODY) {
			if (conn_fill(c, c->body, (size_t)c->klen + c->vlen) <= 0)
				return;
			serve_request(s, c);
		}
	}
}

static void accept_one(wt_boot_server_t *s, int fd, const struct sockaddr *sa)
{
	uint8_t hello[WT_BOOT_HELLO_LEN];
	wt_boot_conn_t *c;

	if (s->nconns == s->capconns) {
		size_t n = s->capconns ? s->capconns * 2 : 16;
		wt_boot_conn_t **nc = realloc(s->conns, n * sizeof(*nc));

		if (!nc) {
			WT_WARN("rendezvous store: out of memory accepting a client");
			close(fd);
			return;
		}
		s->conns = nc;
		s->capconns = n;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		WT_WARN("rendezvous store: out of memory accepting a client");
		close(fd);
		return;
	}
	c->fd = fd;
	format_addr(sa, c->peer, sizeof(c->peer), 1);
	c->state = WT_CONN_HELLO;
	c->deadline = wt_util_deadline_in(WT_BOOT_HANDSHAKE_S);
	set_nodelay(fd);
	s->conns[s->nconns++] = c;
	wt_util_random(c->snonce, sizeof(c->snonce));
	memcpy(hello, WT_BOOT_MAGIC, WT_BOOT_MAGIC_LEN);
	memcpy(hello + WT_BOOT_MAGIC_LEN, c->snonce, WT_UTIL_NONCE_LEN);
	conn_queue(c, hello, sizeof(hello), NULL, 0);
}

static void accept_all(wt_boot_server_t *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Pending connections stay in the backlog; without a pause the
				 * listening socket would stay readable and we would spin. */
				WT_WARN("rendezvous store: accept failed: %s; pausing 100 ms",
					strerror(errno));
				s->accept_pause_until = wt_util_deadline_in(0.1);
			}
			return;
		}
		if (s->nconns >= WT_BOOT_MAX_CONNS) {
			WT_WARN("rendezvous store: %d connections open; refusing another",
				WT_BOOT_MAX_CONNS);
			close(fd);
			continue;
		}
		accept_one(s, fd, (struct sockaddr *)&ss);
	}
}

static void expire_deadlines(wt_boot_server_t *s, uint64_t now)
{
	for (size_t i = 0; i < s->nconns; i++) {
		wt_boot_conn_t *c = s->conns[i];

		if (c->deadline == 0 || now < c->deadline)
			continue;
		if (c->state == WT_CONN_HELLO) {
			WT_WARN("rendezvous store: client %s did not authenticate within %.0f s; "
				"closing",
				c->peer, WT_BOOT_HANDSHAKE_S);
			conn_close(c);
		} else if (c->state == WT_CONN_WAIT) {
			c->deadline = 0;
			c->state = WT_CONN_HEADER;
			free(c->body);
			c->body = NULL;
			conn_respond(c, WT_BOOT_ST_NOTFOUND, NULL, 0);
		}
	}
}

static void reap_dead(wt_boot_server_t *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->state == WT_CONN_DEAD)
			free(s->conns[i]);
		else
			s->conns[j++] = s->conns[i];
	}
	s->nconns = j;
}

static int poll_timeout_ms(const wt_boot_server_t *s, uint64_t now)
{
	uint64_t next = s->accept_pause_until, ms;

	for (size_t i = 0; i < s->nconns; i++) {
		uint64_t d = s->conns[i]->deadline;

		if (d && (next == 0 || d < next))
			next = d;
	}
	if (next == 0)
		return -1;
	if (next <= now)
		return 0;
	/* Round up so we never wake just before a deadline and go round again. */
	ms = (next - now + 999999) / 1000000;
	return ms > 60000 ? 60000 : (int)ms;
}

/* 0 on success, -1 if the pollfd array could not grow. */
static int build_pollfds(wt_boot_server_t *s, uint64_t now)
{
	size_t need = s->nconns + 2;

	if (need > s->cappfds) {
		struct pollfd *p = realloc(s->pfds, need * 2 * sizeof(*p));

		if (!p)
			return -1;
		s->pfds = p;
		s->cappfds = need * 2;
	}
	s->pfds[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
	s->pfds[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
	if (s->accept_pause_until && now < s->accept_pause_until)
		s->pfds[1].fd = -1;
	else
		s->accept_pause_until = 0;
	for (size_t i = 0; i < s->nconns; i++) {
		wt_boot_conn_t *c = s->conns[i];
		short ev = 0;

		if (c->out)
			ev |= POLLOUT;
		else if (c->state != WT_CONN_WAIT)
			ev |= POLLIN;
		else
			ev |= POLLRDHUP; /* a parked GET whose client hung up is dropped now */
		s->pfds[i + 2] = (struct pollfd){.fd = c->fd, .events = ev};
	}
	return 0;
}

static void *server_main(void *arg)
{
	wt_boot_server_t *s = arg;

	for (;;) {
		uint64_t now = wt_util_time_ns();
		size_t npolled = s->nconns;
		int n;

		if (build_pollfds(s, now) != 0) {
			WT_WARN("rendezvous store: out of memory polling; retrying in 100 ms");
			wt_util_sleep_ns(100000000ull);
			continue;
		}
		n = poll(s->pfds, npolled + 2, poll_timeout_ms(s, now));
		if (n < 0 && errno != EINTR) {
			WT_ERROR("rendezvous store: poll failed: %s; server stopping",
				 strerror(errno));
			break;
		}
		if (n > 0 && (s->pfds[0].revents & POLLIN))
			break;
		for (size_t i = 0; n > 0 && i < npolled; i++) {
			wt_boot_conn_t *c = s->conns[i];
			short re = s->pfds[i + 2].revents;

			if (re & POLLOUT)
				conn_flush(c);
			if (re & (POLLIN | POLLHUP | POLLERR))
				conn_read(s, c);
			/* A waiting client that hangs up would otherwise wait out its GET. */
			if ((re & (POLLHUP | POLLERR | POLLRDHUP)) && c->state == WT_CONN_WAIT)
				conn_close(c);
		}
		if (n > 0 && (s->pfds[1].revents & POLLIN))
			accept_all(s);
		expire_deadlines(s, wt_util_time_ns());
		reap_dead(s);
	}
	return NULL;
}

static int listen_on(const char *host, int port, char *why, size_t whylen)
{
	struct addrinfo hints = {0}, *res = NULL, *ai;
	char portstr[16];
	int fd = -1, rc, err = 0;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%d", port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc != 0) {
		snprintf(why, whylen, "%s", gai_strerror(rc));
		return -1;
	}
	/* With no host, prefer the IPv6 wildcard in dual-stack mode: one socket, one port,
	 * both families. */
	for (int pass = 0; pass < 2 && fd < 0; pass++) {
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			int one = 1, zero = 0;

			if (!host && (pass == 0) != (ai->ai_family == AF_INET6))
				continue;
			if (host && pass == 1)
				break;
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    ai->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (!host && ai->ai_family == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, whylen, "%s", strerror(err ? err : EADDRNOTAVAIL));
	return fd;
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void server_free(wt_boot_server_t *s)
{
	for (size_t i = 0; i < s->nconns; i++) {
		conn_close(s->conns[i]);
		free(s->conns[i]);
	}
	free(s->conns);
	free(s->pfds);
	table_free(s);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	memset(&s->key, 0, sizeof(s->key));
	free(s);
}

/* Report a start failure: log it, copy it out, free what was built. */
static weft_status_t start_fail(wt_boot_server_t *s, weft_status_t rc, char *err, size_t errlen,
				const char *msg)
{
	WT_ERROR("%s", msg);
	copy_err(err, errlen, msg);
	if (s)
		server_free(s);
	return rc;
}

weft_status_t wt_boot_server_start(const char *host, int port, const wt_util_key_t *key,
				   wt_boot_server_t **srv, char *err, size_t errlen)
{
	char where[300], why[128], msg[512];
	wt_boot_server_t *s;
	int rc;

	if (!key || !srv || port < 0 || port > 65535) {
		snprintf(msg, sizeof(msg), "rendezvous store: invalid arguments (port %d)", port);
		return start_fail(NULL, WEFT_ERR_INVALID_ARG, err, errlen, msg);
	}
	if (wt_util_crypto_init() != WEFT_OK)
		return start_fail(NULL, WEFT_ERR_SYSTEM, err, errlen,
				  "rendezvous store: libsodium initialisation failed");
	s = calloc(1, sizeof(*s));
	if (!s)
		return start_fail(NULL, WEFT_ERR_NO_MEMORY, err, errlen,
				  "rendezvous store: out of memory");
	s->lfd = s->wake[0] = s->wake[1] = -1;
	s->key = *key;
	s->nbuckets = 64;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	if (!s->buckets)
		return start_fail(s, WEFT_ERR_NO_MEMORY, err, errlen,
				  "rendezvous store: out of memory");
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(msg, sizeof(msg), "rendezvous store: cannot create its wake-up pipe: %s",
			 strerror(errno));
		return start_fail(s, WEFT_ERR_SYSTEM, err, errlen, msg);
	}
	format_hostport(host, port, where, sizeof(where));
	s->lfd = listen_on(host, port, why, sizeof(why));
	if (s->lfd < 0) {
		snprintf(msg, sizeof(msg), "rendezvous store: cannot listen on %s: %s", where, why);
		return start_fail(s, WEFT_ERR_SYSTEM, err, errlen, msg);
	}
	s->port = local_port(s->lfd);
	rc = pthread_create(&s->thread, NULL, server_main, s);
	if (rc != 0) {
		snprintf(msg, sizeof(msg), "rendezvous store: cannot start its thread: %s",
			 strerror(rc));
		return start_fail(s, WEFT_ERR_SYSTEM, err, errlen, msg);
	}
	WT_INFO("rendezvous store listening on %s (port %d)", where, s->port);
	*srv = s;
	return WEFT_OK;
}

int wt_boot_server_port(const wt_boot_server_t *srv)
{
	return srv ? srv->port : -1;
}

uint64_t wt_boot_server_clients(const wt_boot_server_t *srv)
{
	return srv ? atomic_load(&((wt_boot_server_t *)srv)->clients) : 0;
}

uint64_t wt_boot_server_refused(const wt_boot_server_t *srv)
{
	return srv ? atomic_load(&((wt_boot_server_t *)srv)->refused) : 0;
}

void wt_boot_server_stop(wt_boot_server_t *srv)
{
	const char b = 1;

	if (!srv)
		return;
	while (write(srv->wake[1], &b, 1) < 0 && errno == EINTR)
		;
	pthread_join(srv->thread, NULL);
	server_free(srv);
}

/* ======================================================================== client */

struct wt_boot_store {
	int fd;
	char where[300]; /* host:port, for messages */
	char err[512];
	char local_ip[INET6_ADDRSTRLEN];
};

static void store_fail(wt_boot_store_t *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Record and log a client error. */
static void store_fail(wt_boot_store_t *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	WT_ERROR("%s", st->err);
}

/* The connection is out of step with the server (or gone): no later request may use it. */
static void store_break(wt_boot_store_t *st)
{
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
}

static int ms_until(uint64_t deadline)
{
	uint64_t now = wt_util_time_ns();

	if (deadline <= now)
		return 0;
	return (deadline - now) / 1000000 >= INT32_MAX ? INT32_MAX
						       : (int)((deadline - now + 999999) / 1000000);
}

/* Wait for fd to become ready for ev; 1 ready, 0 deadline passed, -1 error (errno set). */
static int wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = ev};
		int n = poll(&p, 1, ms_until(deadline));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n > 0)
			return 1;
		if (wt_util_deadline_passed(deadline))
			return 0;
	}
}

static weft_status_t send_all(wt_boot_store_t *st, const void *buf, size_t len, uint64_t deadline,
			      const char *what)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(st->fd, p, len, MSG_NOSIGNAL);
		int w;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			store_fail(st, "rendezvous store at %s: sending %s failed: %s", st->where,
				   what, strerror(errno));
			store_break(st);
			return WEFT_ERR_PEER_FAILED;
		}
		w = wait_fd(st->fd, POLLOUT, deadline);
		if (w == 0) {
			store_fail(st, "rendezvous store at %s: timed out sending %s", st->where,
				   what);
			store_break(st);
			return WEFT_ERR_TIMEOUT;
		}
		if (w < 0) {
			store_fail(st, "rendezvous store at %s: poll failed: %s", st->where,
				   strerror(errno));
			store_break(st);
			return WEFT_ERR_SYSTEM;
		}
	}
	return WEFT_OK;
}

/* eof_status is what a clean close by the server means at this point. */
static weft_status_t recv_all(wt_boot_store_t *st, void *buf, size_t len, uint64_t deadline,
			      const char *what, weft_status_t eof_status)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = recv(st->fd, p, len, 0);
		int w;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			if (eof_status == WEFT_ERR_AUTH)
				store_fail(st,
					   "rendezvous store at %s closed the connection during "
					   "authentication (%s): is the job token the same on "
					   "every rank?",
					   st->where, n == 0 ? "end of stream" : strerror(errno));
			else
				store_fail(st,
					   "rendezvous store at %s: connection lost reading %s: %s",
					   st->where, what,
					   n == 0 ? "closed by the server" : strerror(errno));
			store_break(st);
			return eof_status;
		}
		w = wait_fd(st->fd, POLLIN, deadline);
		if (w == 0) {
			store_fail(st, "rendezvous store at %s: timed out waiting for %s",
				   st->where, what);
			store_break(st);
			return WEFT_ERR_TIMEOUT;
		}
		if (w < 0) {
			store_fail(st, "rendezvous store at %s: poll failed: %s", st->where,
				   strerror(errno));
			store_break(st);
			return WEFT_ERR_SYSTEM;
		}
	}
	return WEFT_OK;
}

/* One non-blocking connect attempt to one address, bounded by the deadline; returns the
 * fd or -1 with *err_out = errno of the failure. */
static int connect_addr(const struct addrinfo *ai, uint64_t deadline, int *err_out)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int soerr = 0, w;
	socklen_t sl = sizeof(soerr);

	if (fd < 0) {
		*err_out = errno;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR) {
		*err_out = errno;
		close(fd);
		return -1;
	}
	w = wait_fd(fd, POLLOUT, deadline);
	if (w <= 0) {
		*err_out = w == 0 ? ETIMEDOUT : errno;
		close(fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
		soerr = errno;
	if (soerr != 0) {
		*err_out = soerr;
		close(fd);
		return -1;
	}
	return fd;
}

/* Try every address of host:port once; fd or -1 with a description of the last failure. */
static int connect_once(const char *host, int port, uint64_t deadline, char *why, size_t len)
{
	struct addrinfo hints = {0}, *res = NULL, *ai;
	char portstr[16];
	int fd = -1, rc, err = 0;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(portstr, sizeof(portstr), "%d", port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc != 0) {
		snprintf(why, len, "%s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		/* Bound each try so one black-holed address cannot eat the whole budget. */
		uint64_t try_deadline = wt_util_deadline_in(2.0);

		if (try_deadline > deadline)
			try_deadline = deadline;
		fd = connect_addr(ai, try_deadline, &err);
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, len, "%s", strerror(err ? err : ECONNREFUSED));
	return fd;
}

static weft_status_t store_handshake(wt_boot_store_t *st, const wt_util_key_t *key,
				     uint64_t deadline)
{
	uint8_t hello[WT_BOOT_HELLO_LEN], answer[WT_BOOT_ANSWER_LEN], smac[WT_UTIL_MAC_LEN];
	const uint8_t *snonce = hello + WT_BOOT_MAGIC_LEN;
	uint8_t *cnonce = answer + WT_UTIL_MAC_LEN;
	weft_status_t rc;

	rc = recv_all(st, hello, sizeof(hello), deadline, "the server hello", WEFT_ERR_AUTH);
	if (rc != WEFT_OK)
		return rc;
	if (memcmp(hello, WT_BOOT_MAGIC, WT_BOOT_MAGIC_LEN) != 0) {
		store_fail(st, "%s is not a weft rendezvous store (bad greeting)", st->where);
		store_break(st);
		return WEFT_ERR_PROTOCOL;
	}
	wt_util_random(cnonce, WT_UTIL_NONCE_LEN);
	wt_util_mac(key, wt_label_client, snonce, WT_UTIL_NONCE_LEN, cnonce, WT_UTIL_NONCE_LEN,
		    answer);
	rc = send_all(st, answer, sizeof(answer), deadline, "the authentication answer");
	if (rc != WEFT_OK)
		return rc;
	rc = recv_all(st, smac, sizeof(smac), deadline, "the server proof", WEFT_ERR_AUTH);
	if (rc != WEFT_OK)
		return rc;
	if (!wt_util_mac_verify(key, wt_label_server, cnonce, WT_UTIL_NONCE_LEN, snonce,
				WT_UTIL_NONCE_LEN, smac)) {
		store_fail(st,
			   "rendezvous store at %s failed authentication: it does not hold "
			   "the job token",
			   st->where);
		store_break(st);
		return WEFT_ERR_AUTH;
	}
	return WEFT_OK;
}

static void record_local_ip(wt_boot_store_t *st)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(st->fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr((struct sockaddr *)&ss, st->local_ip, sizeof(st->local_ip), 0);
}

weft_status_t wt_boot_store_connect(const char *host, int port, const wt_util_key_t *key,
				    double timeout_s, wt_boot_store_t **out, char *err,
				    size_t errlen)
{
	uint64_t deadline, backoff = 10000000ull;
	char why[256] = "no attempt made";
	wt_boot_store_t *st;
	weft_status_t rc;

	if (!host || !*host || !key || !out || port <= 0 || port > 65535 || !(timeout_s >= 0)) {
		copy_err(err, errlen, "rendezvous store: invalid connect arguments");
		WT_ERROR("rendezvous store: invalid connect arguments (host %s, port %d)",
			 host ? host : "(null)", port);
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_util_crypto_init() != WEFT_OK) {
		copy_err(err, errlen, "rendezvous store: libsodium initialisation failed");
		return WEFT_ERR_SYSTEM;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		copy_err(err, errlen, "rendezvous store: out of memory");
		WT_ERROR("rendezvous store: out of memory");
		return WEFT_ERR_NO_MEMORY;
	}
	st->fd = -1;
	format_hostport(host, port, st->where, sizeof(st->where));
	deadline = wt_util_deadline_in(timeout_s);
	for (;;) {
		uint64_t now;

		st->fd = connect_once(host, port, deadline, why, sizeof(why));
		if (st->fd >= 0)
			break;
		now = wt_util_time_ns();
		if (now >= deadline) {
			store_fail(st, "rendezvous store at %s unreachable after %g s: %s",
				   st->where, timeout_s, why);
			copy_err(err, errlen, st->err);
			free(st);
			return WEFT_ERR_TIMEOUT;
		}
		/* The server may simply not be up yet: back off, 10 ms growing to 500 ms. */
		wt_util_sleep_ns(backoff < deadline - now ? backoff : deadline - now);
		backoff = backoff * 2 > 500000000ull ? 500000000ull : backoff * 2;
	}
	set_nodelay(st->fd);
	/* A connect that landed just before the deadline still gets a fair handshake. */
	if (deadline < wt_util_deadline_in(WT_BOOT_HANDSHAKE_S))
		deadline = wt_util_deadline_in(WT_BOOT_HANDSHAKE_S);
	rc = store_handshake(st, key, deadline);
	if (rc != WEFT_OK) {
		copy_err(err, errlen, st->err);
		store_break(st);
		free(st);
		return rc;
	}
	record_local_ip(st);
	WT_DEBUG("rendezvous store: connected to %s as %s", st->where, st->local_ip);
	*out = st;
	return WEFT_OK;
}

static weft_status_t check_key(wt_boot_store_t *st, const char *key)
{
	size_t klen;

	if (!st)
		return WEFT_ERR_INVALID_ARG;
	if (!key || !*key) {
		store_fail(st, "rendezvous store: empty key");
		return WEFT_ERR_INVALID_ARG;
	}
	klen = strnlen(key, WT_BOOT_KEY_MAX + 1);
	if (klen > WT_BOOT_KEY_MAX) {
		store_fail(st, "rendezvous store: key '%.32s...' longer than %d bytes", key,
			   WT_BOOT_KEY_MAX);
		return WEFT_ERR_INVALID_ARG;
	}
	if (st->fd < 0) {
		store_fail(st, "rendezvous store at %s: connection already lost", st->where);
		return WEFT_ERR_PEER_FAILED;
	}
	return WEFT_OK;
}

/* Send one request and read the response header; *vlen is the response value length. */
static weft_status_t request(wt_boot_store_t *st, uint8_t op, const char *key, const void *val,
			     uint32_t vlen, uint32_t arg, uint64_t deadline, uint8_t *status,
			     uint32_t *rlen)
{
	uint8_t hdr[WT_BOOT_REQ_LEN] = {op}, resp[WT_BOOT_RESP_LEN];
	uint32_t klen = (uint32_t)strlen(key);
	weft_status_t rc;

	wt_util_put_be32(hdr + 4, klen);
	wt_util_put_be32(hdr + 8, vlen);
	wt_util_put_be32(hdr + 12, arg);
	rc = send_all(st, hdr, sizeof(hdr), deadline, "a request");
	if (rc == WEFT_OK)
		rc = send_all(st, key, klen, deadline, "a key");
	if (rc == WEFT_OK && vlen)
		rc = send_all(st, val, vlen, deadline, "a value");
	if (rc == WEFT_OK)
		rc = recv_all(st, resp, sizeof(resp), deadline, "a response", WEFT_ERR_PEER_FAILED);
	if (rc != WEFT_OK)
		return rc;
	*status = resp[0];
	*rlen = wt_util_get_be32(resp + 4);
	if (resp[0] > WT_BOOT_ST_BADVALUE || resp[1] || resp[2] || resp[3] ||
	    *rlen > WT_BOOT_VALUE_MAX) {
		store_fail(st,
			   "rendezvous store at %s sent a malformed response (status %u, "
			   "length %u)",
			   st->where, resp[0], *rlen);
		store_break(st);
		return WEFT_ERR_PROTOCOL;
	}
	return WEFT_OK;
}

weft_status_t wt_boot_store_set(wt_boot_store_t *st, const char *key, const void *val, size_t len)
{
	weft_status_t rc = check_key(st, key);
	uint8_t status;
	uint32_t rlen;

	if (rc != WEFT_OK)
		return rc;
	if (len > WT_BOOT_VALUE_MAX || (len && !val)) {
		store_fail(st, "rendezvous store: value for '%s' is %zu bytes (at most %u)", key,
			   len, WT_BOOT_VALUE_MAX);
		return WEFT_ERR_INVALID_ARG;
	}
	rc = request(st, WT_BOOT_OP_SET, key, val, (uint32_t)len, 0,
		     wt_util_deadline_in(WT_BOOT_OP_S), &status, &rlen);
	if (rc != WEFT_OK)
		return rc;
	if (status != WT_BOOT_ST_OK || rlen != 0) {
		store_fail(st, "rendezvous store at %s: unexpected answer to SET '%s'", st->where,
			   key);
		store_break(st);
		return WEFT_ERR_PROTOCOL;
	}
	return WEFT_OK;
}

/* Read and throw away n bytes so the connection stays in step. */
static weft_status_t discard(wt_boot_store_t *st, uint32_t n, uint64_t deadline)
{
	uint8_t sink[4096];

	while (n > 0) {
		uint32_t k = n < sizeof(sink) ? n : (uint32_t)sizeof(sink);
		weft_status_t rc = recv_all(st, sink, k, deadline, "a value", WEFT_ERR_PEER_FAILED);

		if (rc != WEFT_OK)
			return rc;
		n -= k;
	}
	return WEFT_OK;
}

weft_status_t wt_boot_store_get(wt_boot_store_t *st, const char *key, void *buf, size_t cap,
				size_t *len, double timeout_s)
{
	weft_status_t rc = check_key(st, key);
	uint64_t deadline;
	uint32_t wait_ms, rlen;
	uint8_t status;

	if (rc != WEFT_OK)
		return rc;
	if ((cap && !buf) || !(timeout_s >= 0)) {
		store_fail(st, "rendezvous store: invalid GET arguments for '%s'", key);
		return WEFT_ERR_INVALID_ARG;
	}
	wait_ms = timeout_s * 1000.0 >= WT_BOOT_GET_MS_MAX ? WT_BOOT_GET_MS_MAX
							   : (uint32_t)(timeout_s * 1000.0 + 0.5);
	/* The server answers NOTFOUND when the wait runs out; our own deadline only guards
	 * against a server that stopped answering. */
	deadline = wt_util_deadline_in(timeout_s + WT_BOOT_GET_GRACE_S);
	rc = request(st, WT_BOOT_OP_GET, key, NULL, 0, wait_ms, deadline, &status, &rlen);
	if (rc != WEFT_OK)
		return rc;
	if (status == WT_BOOT_ST_NOTFOUND) {
		snprintf(st->err, sizeof(st->err),
			 "rendezvous store at %s: key '%s' not set within %g s", st->where, key,
			 timeout_s);
		/* Callers poll with short waits; the one that gives up reports it. */
		WT_DEBUG("%s", st->err);
		return WEFT_ERR_TIMEOUT;
	}
	if (status != WT_BOOT_ST_OK) {
		store_fail(st, "rendezvous store at %s: unexpected answer to GET '%s'", st->where,
			   key);
		store_break(st);
		return WEFT_ERR_PROTOCOL;
	}
	if (rlen > cap) {
		rc = discard(st, rlen, deadline);
		if (rc != WEFT_OK)
			return rc;
		store_fail(st, "rendezvous store: value of '%s' is %u bytes, buffer holds %zu", key,
			   rlen, cap);
		return WEFT_ERR_INVALID_ARG;
	}
	rc = recv_all(st, buf, rlen, deadline, "a value", WEFT_ERR_PEER_FAILED);
	if (rc != WEFT_OK)
		return rc;
	if (len)
		*len = rlen;
	return WEFT_OK;
}

weft_status_t wt_boot_store_add(wt_boot_store_t *st, const char *key, int64_t delta, int64_t *out)
{
	weft_status_t rc = check_key(st, key);
	uint8_t d[8], v[8], status;
	uint64_t deadline = wt_util_deadline_in(WT_BOOT_OP_S);
	uint32_t rlen;

	if (rc != WEFT_OK)
		return rc;
	wt_util_put_be64(d, (uint64_t)delta);
	rc = request(st, WT_BOOT_OP_ADD, key, d, sizeof(d), 0, deadline, &status, &rlen);
	if (rc != WEFT_OK)
		return rc;
	if (status == WT_BOOT_ST_BADVALUE && rlen == 0) {
		store_fail(st, "rendezvous store at %s: '%s' holds a value that is not a counter",
			   st->where, key);
		return WEFT_ERR_INVALID_ARG;
	}
	if (status != WT_BOOT_ST_OK || rlen != sizeof(v)) {
		store_fail(st, "rendezvous store at %s: unexpected answer to ADD '%s'", st->where,
			   key);
		store_break(st);
		return WEFT_ERR_PROTOCOL;
	}
	rc = recv_all(st, v, sizeof(v), deadline, "a counter", WEFT_ERR_PEER_FAILED);
	if (rc != WEFT_OK)
		return rc;
	if (out)
		*out = (int64_t)wt_util_get_be64(v);
	return WEFT_OK;
}

weft_status_t wt_boot_store_local_ip(const wt_boot_store_t *st, char *buf, size_t len)
{
	if (!st || !buf || len == 0)
		return WEFT_ERR_INVALID_ARG;
	if (!st->local_ip[0] || strlen(st->local_ip) >= len) {
		WT_ERROR("rendezvous store: local address unknown or longer than %zu bytes", len);
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(buf, st->local_ip, strlen(st->local_ip) + 1);
	return WEFT_OK;
}

const char *wt_boot_store_error(const wt_boot_store_t *st)
{
	return st ? st->err : "no store";
}

void wt_boot_store_close(wt_boot_store_t *st)
{
	if (!st)
		return;
	store_break(st);
	free(st);
}
