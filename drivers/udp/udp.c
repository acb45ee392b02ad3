/* UDP link driver (drivers/): unreliable datagrams over one non-blocking socket per link,
 * sent in batches with sendmmsg and read with recvmmsg. No handshake and no retries here:
 * the channel's reliability layer above makes it reliable. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "drivers/link.h"
#include "lib/util/bytes.h"
#include "lib/util/env.h"
#include "lib/util/log.h"

#define UDP_MAX_FRAME 65507u /* 65535 - IPv4 header - UDP header */
#define UDP_MIN_FRAME 528u   /* the smallest MTU WEFT_UDP_MTU allows, minus IPv6 + UDP */
#define UDP_HDRS_V4 28u
#define UDP_HDRS_V6 48u
#define UDP_MTU_MIN 576
#define UDP_MTU_MAX 65535
#define UDP_MTU_FALLBACK 1500
#define UDP_MAX_RANKS (1 << 20)
#define UDP_JOB_ID_MAX 64
/* A batch holds about this many bytes, in 16..256 frames: enough to amortise the system
 * call for small frames without holding megabytes per link for large ones. */
#define UDP_BATCH_BYTES (2u << 20)
#define UDP_BATCH_MIN 16
#define UDP_BATCH_MAX 256
/* Frames at least this long skip the batch (see udp_send): no two of them fit in one
 * GSO datagram, so batching them would only add a copy. */
#define UDP_DIRECT_MIN (32u << 10)
#define UDP_DIRECT_IOV 64
/* Segmentation offload: equal frames to one peer leave as one super-datagram that the
 * kernel (or the NIC) cuts up, which costs one trip through the stack instead of many. */
#define UDP_GSO_SEGS 64
/* Kernel socket buffers: room for a window of 64 KiB frames before the kernel drops. */
#define UDP_SOCKBUF (8 << 20)
#define UDP_VERSION 1u
#define UDP_BLOB_MAGIC 0x57554450u /* "WUDP" */
/* Address blob, big-endian: magic 0, version 4, family (4|6) 6, rank 8, world size 12,
 * max frame the owner sends 16, port 20, zero 22, address 24..39 (IPv4: 24..27, rest 0). */
#define UDP_BLOB_LEN 40
#define UDP_KEY_MAX 18 /* IPv6 address + port */

extern const wt_link_ops_t wt_udp_ops;

struct udp_peer {
	/* First member: a queued message's msg_name points here, which names its peer. */
	struct sockaddr_storage sa;
	socklen_t salen;
	int connected;
	uint8_t key[UDP_KEY_MAX]; /* address and port as received: the hash key */
	uint8_t keylen;
	int tx_errno; /* last send error logged at warn level, so a repeat is debug only */
	char addr_str[64];
	wt_link_counters_t ctr;
};

union udp_cmsg {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(uint16_t))];
};

struct wt_link {
	wt_link_base_t base;
	int rank;
	int size;
	int fd;
	int family; /* AF_INET or AF_INET6 */
	uint8_t self[UDP_BLOB_LEN];
	struct udp_peer *peers;
	int *htab; /* source address -> peer: open addressing, -1 = empty */
	uint32_t hmask;
	/* tx: a ring of frame-sized slots; each mmsghdr keeps its own iovec and buffer. */
	uint8_t *tx_mem;
	struct mmsghdr *tx_msg;
	struct iovec *tx_iov;
	int tx_slots;
	int tx_head;
	int tx_count;
	/* What goes to sendmmsg: runs of slots, each one datagram or a GSO super-datagram. */
	struct mmsghdr *wire;
	union udp_cmsg *wire_cmsg;
	int *wire_n; /* slots in each */
	int gso;     /* 0 once the kernel refused UDP_SEGMENT */
	/* rx: every slot is free again at the start of a poll. */
	uint8_t *rx_mem;
	struct mmsghdr *rx_msg;
	struct iovec *rx_iov;
	struct sockaddr_storage *rx_sa;
	int rx_slots;
	size_t rx_slot;	    /* bytes per slot */
	size_t rx_want;	    /* what the connected peers send; applied at the next poll */
	uint64_t strangers; /* datagrams from unknown sources, dropped */
	uint64_t truncated; /* datagrams longer than a slot, dropped */
	uint64_t tx_failed; /* frames the kernel refused with a hard error, dropped */
};

/* ---- small helpers ---- */

static void addr_format(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%d", ip, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%d", ip, ntohs(s6->sin6_port));
	} else {
		snprintf(out, len, "(family %d)", ss->ss_family);
	}
}

static int is_again(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

/* ---- source address -> peer ---- */

/* The address and port of a sockaddr of our family, as bytes; 0 if it is not one. */
static size_t sa_key(const wt_link_t *l, const struct sockaddr_storage *ss, socklen_t len,
		     uint8_t *key)
{
	if (ss->ss_family != l->family)
		return 0;
	if (l->family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		if (len < sizeof(*s4))
			return 0;
		memcpy(key, &s4->sin_addr, 4);
		memcpy(key + 4, &s4->sin_port, 2);
		return 6;
	}
	{
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		if (len < sizeof(*s6))
			return 0;
		memcpy(key, &s6->sin6_addr, 16);
		memcpy(key + 16, &s6->sin6_port, 2);
		return 18;
	}
}

static uint32_t key_hash(const uint8_t *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ key[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32));
}

static int peer_lookup(const wt_link_t *l, const uint8_t *key, size_t len)
{
	for (uint32_t i = key_hash(key, len) & l->hmask;; i = (i + 1) & l->hmask) {
		int peer = l->htab[i];

		if (peer < 0)
			return -1;
		if (l->peers[peer].keylen == len && memcmp(l->peers[peer].key, key, len) == 0)
			return peer;
	}
}

static void peer_insert(wt_link_t *l, int peer)
{
	const struct udp_peer *p = &l->peers[peer];
	uint32_t i = key_hash(p->key, p->keylen) & l->hmask;

	while (l->htab[i] >= 0)
		i = (i + 1) & l->hmask;
	l->htab[i] = peer;
}

/* ---- open / address / close ---- */

static weft_status_t sock_bind(wt_link_t *l, const char *bind_addr, struct sockaddr_storage *ss)
{
	socklen_t slen;
	int one = 1;

	if (wt_link_bind_addr("udp", bind_addr, ss, &slen) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	l->family = ss->ss_family;
	l->fd = socket(l->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		WT_ERROR("udp: socket failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	/* Peers of an IPv6 link are IPv6: no v4-mapped sources to confuse the lookup. */
	if (l->family == AF_INET6)
		setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(l->fd, (struct sockaddr *)ss, slen) != 0 ||
	    getsockname(l->fd, (struct sockaddr *)ss, &slen) != 0) {
		WT_ERROR("udp: binding to %s failed: %s", bind_addr ? bind_addr : "0.0.0.0",
			 strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	return WEFT_OK;
}

static int same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a == NULL || a->sa_family != b->ss_family)
		return 0;
	if (a->sa_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			      &((const struct sockaddr_in *)b)->sin_addr, 4) == 0;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* MTU of the interface that owns the (advertised) address; fallback if none does. */
static int iface_mtu(wt_link_t *l, const struct sockaddr_storage *adv)
{
	struct ifaddrs *ifs = NULL;
	struct ifreq ifr;
	int mtu = 0;

	if (getifaddrs(&ifs) != 0) {
		WT_WARN("udp: getifaddrs failed (%s); assuming MTU %d", strerror(errno),
			UDP_MTU_FALLBACK);
		return UDP_MTU_FALLBACK;
	}
	memset(&ifr, 0, sizeof(ifr));
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
		if (!same_ip(i->ifa_addr, adv))
			continue;
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
		if (ioctl(l->fd, SIOCGIFMTU, &ifr) == 0)
			mtu = ifr.ifr_mtu;
		break;
	}
	freeifaddrs(ifs);
	if (mtu < UDP_MTU_MIN || mtu > (1 << 20)) {
		WT_WARN("udp: no MTU found for the interface of the bound address; assuming %d",
			UDP_MTU_FALLBACK);
		return UDP_MTU_FALLBACK;
	}
	WT_DEBUG("udp: interface %s has MTU %d", ifr.ifr_name, mtu);
	return mtu;
}

static weft_status_t max_frame_setup(wt_link_t *l, const struct sockaddr_storage *adv)
{
	char err[128];
	int64_t mtu;
	size_t hdrs = l->family == AF_INET ? UDP_HDRS_V4 : UDP_HDRS_V6;

	if (wt_util_env_int("WEFT_UDP_MTU", 0, UDP_MTU_MIN, UDP_MTU_MAX, &mtu, err, sizeof(err)) !=
	    WEFT_OK) {
		WT_ERROR("udp: %s", err);
		return WEFT_ERR_INVALID_ARG;
	}
	if (mtu == 0)
		mtu = iface_mtu(l, adv);
	l->base.max_frame = (size_t)mtu - hdrs;
	if (l->base.max_frame > UDP_MAX_FRAME)
		l->base.max_frame = UDP_MAX_FRAME;
	return WEFT_OK;
}

/* Returns the size the kernel granted; *forced says whether the limit was bypassed. */
static int sockbuf_set(int fd, int opt_force, int opt, int want, int *forced)
{
	int got = 0;
	socklen_t len = sizeof(got);

	/* FORCE passes net.core.[rw]mem_max but needs CAP_NET_ADMIN; else the capped one. */
	*forced = setsockopt(fd, SOL_SOCKET, opt_force, &want, sizeof(want)) == 0;
	if (!*forced)
		setsockopt(fd, SOL_SOCKET, opt, &want, sizeof(want));
	getsockopt(fd, SOL_SOCKET, opt, &got, &len);
	return got;
}

static void sockbufs_setup(wt_link_t *l)
{
	int fs, fr;
	int snd = sockbuf_set(l->fd, SO_SNDBUFFORCE, SO_SNDBUF, UDP_SOCKBUF, &fs);
	int rcv = sockbuf_set(l->fd, SO_RCVBUFFORCE, SO_RCVBUF, UDP_SOCKBUF, &fr);

	/* The kernel reports twice what it was asked for (its bookkeeping overhead). */
	WT_DEBUG("udp: socket buffers: send %d bytes (%s), receive %d bytes (%s); asked for %d",
		 snd, fs ? "forced" : "capped by net.core.wmem_max", rcv,
		 fr ? "forced" : "capped by net.core.rmem_max", 2 * UDP_SOCKBUF);
}

static void blob_build(wt_link_t *l, const struct sockaddr_storage *adv)
{
	uint8_t *b = l->self;

	memset(b, 0, UDP_BLOB_LEN);
	wt_util_put_be32(b, UDP_BLOB_MAGIC);
	wt_util_put_be16(b + 4, UDP_VERSION);
	wt_util_put_be16(b + 6, l->family == AF_INET ? 4 : 6);
	wt_util_put_be32(b + 8, (uint32_t)l->rank);
	wt_util_put_be32(b + 12, (uint32_t)l->size);
	wt_util_put_be32(b + 16, (uint32_t)l->base.max_frame);
	if (l->family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)adv;

		memcpy(b + 20, &s4->sin_port, 2);
		memcpy(b + 24, &s4->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)adv;

		memcpy(b + 20, &s6->sin6_port, 2);
		memcpy(b + 24, &s6->sin6_addr, 16);
	}
}

static int batch_slots(size_t slot)
{
	size_t n = UDP_BATCH_BYTES / (slot ? slot : 1);

	if (n < UDP_BATCH_MIN)
		return UDP_BATCH_MIN;
	return n > UDP_BATCH_MAX ? UDP_BATCH_MAX : (int)n;
}

static void rx_bind_slots(wt_link_t *l)
{
	for (int i = 0; i < l->rx_slots; i++) {
		l->rx_iov[i].iov_base = l->rx_mem + (size_t)i * l->rx_slot;
		l->rx_iov[i].iov_len = l->rx_slot;
	}
}

static weft_status_t batches_setup(wt_link_t *l)
{
	size_t mf = l->base.max_frame;

	l->tx_slots = batch_slots(mf);
	l->rx_slots = l->tx_slots;
	l->rx_slot = l->rx_want = mf;
	l->tx_mem = malloc((size_t)l->tx_slots * mf);
	l->tx_msg = calloc((size_t)l->tx_slots, sizeof(*l->tx_msg));
	l->tx_iov = calloc((size_t)l->tx_slots, sizeof(*l->tx_iov));
	l->wire = calloc((size_t)l->tx_slots, sizeof(*l->wire));
	l->wire_cmsg = calloc((size_t)l->tx_slots, sizeof(*l->wire_cmsg));
	l->wire_n = calloc((size_t)l->tx_slots, sizeof(*l->wire_n));
	l->rx_mem = malloc((size_t)l->rx_slots * mf);
	l->rx_msg = calloc((size_t)l->rx_slots, sizeof(*l->rx_msg));
	l->rx_iov = calloc((size_t)l->rx_slots, sizeof(*l->rx_iov));
	l->rx_sa = calloc((size_t)l->rx_slots, sizeof(*l->rx_sa));
	if (!l->tx_mem || !l->tx_msg || !l->tx_iov || !l->wire || !l->wire_cmsg || !l->wire_n ||
	    !l->rx_mem || !l->rx_msg || !l->rx_iov || !l->rx_sa) {
		WT_ERROR("udp: out of memory for %d batch slots of %zu bytes", l->tx_slots, mf);
		return WEFT_ERR_NO_MEMORY;
	}
	for (int i = 0; i < l->tx_slots; i++) {
		l->tx_iov[i].iov_base = l->tx_mem + (size_t)i * mf;
		l->tx_msg[i].msg_hdr.msg_iov = &l->tx_iov[i];
		l->tx_msg[i].msg_hdr.msg_iovlen = 1;
	}
	for (int i = 0; i < l->rx_slots; i++) {
		l->rx_msg[i].msg_hdr.msg_iov = &l->rx_iov[i];
		l->rx_msg[i].msg_hdr.msg_iovlen = 1;
		l->rx_msg[i].msg_hdr.msg_name = &l->rx_sa[i];
	}
	rx_bind_slots(l);
	return WEFT_OK;
}

static weft_status_t udp_alloc(const wt_link_config_t *cfg, wt_link_t **out)
{
	wt_link_t *l = calloc(1, sizeof(*l));
	uint32_t hsize = 16;

	if (l == NULL)
		return WEFT_ERR_NO_MEMORY;
	*out = l;
	l->fd = -1;
	l->gso = 1;
	l->rank = cfg->rank;
	l->size = cfg->size;
	while (hsize < 2u * (uint32_t)cfg->size)
		hsize *= 2;
	l->hmask = hsize - 1;
	l->peers = calloc((size_t)cfg->size, sizeof(*l->peers));
	l->htab = malloc(hsize * sizeof(int));
	if (!l->peers || !l->htab) {
		WT_ERROR("udp: out of memory for %d peers", cfg->size);
		return WEFT_ERR_NO_MEMORY;
	}
	memset(l->htab, 0xff, hsize * sizeof(int));
	return WEFT_OK;
}

static int tx_flush(wt_link_t *l);

static void udp_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	/* One last non-blocking push of what send() accepted; the rest is lost, as any
	 * datagram may be. */
	if (l->fd >= 0 && l->tx_count > 0)
		tx_flush(l);
	if (l->fd >= 0)
		close(l->fd);
	if (l->strangers || l->truncated || l->tx_failed || l->tx_count)
		WT_DEBUG("udp: rank %d closed; dropped %llu datagrams from strangers, %llu too "
			 "long, %llu refused by the kernel, %d unsent",
			 l->rank, (unsigned long long)l->strangers,
			 (unsigned long long)l->truncated, (unsigned long long)l->tx_failed,
			 l->tx_count);
	free(l->tx_mem);
	free(l->tx_msg);
	free(l->tx_iov);
	free(l->wire);
	free(l->wire_cmsg);
	free(l->wire_n);
	free(l->rx_mem);
	free(l->rx_msg);
	free(l->rx_iov);
	free(l->rx_sa);
	free(l->peers);
	free(l->htab);
	free(l);
}

static weft_status_t udp_open(const wt_link_config_t *cfg, wt_link_t **link)
{
	struct sockaddr_storage adv;
	wt_link_t *l = NULL;
	weft_status_t st;

	if (cfg == NULL || link == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = wt_link_config_check("udp", cfg, UDP_MAX_RANKS, UDP_JOB_ID_MAX, "");
	if (st != WEFT_OK)
		return st;
	st = udp_alloc(cfg, &l);
	if (st == WEFT_OK)
		st = sock_bind(l, cfg->bind_addr, &adv);
	if (st == WEFT_OK) {
		wt_link_any_to_loopback(&adv);
		st = max_frame_setup(l, &adv);
	}
	if (st == WEFT_OK)
		st = batches_setup(l);
	if (st != WEFT_OK) {
		udp_close(l);
		return st;
	}
	sockbufs_setup(l);
	blob_build(l, &adv);
	l->base.ops = &wt_udp_ops;
	WT_DEBUG("udp: rank %d open, max frame %zu bytes, batches of %d", l->rank,
		 l->base.max_frame, l->tx_slots);
	*link = l;
	return WEFT_OK;
}

static weft_status_t udp_address(wt_link_t *l, void *blob, size_t *len)
{
	if (l == NULL || blob == NULL || len == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (*len < UDP_BLOB_LEN) {
		WT_ERROR("udp: address buffer of %zu bytes is smaller than %d", *len, UDP_BLOB_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(blob, l->self, UDP_BLOB_LEN);
	*len = UDP_BLOB_LEN;
	return WEFT_OK;
}

/* ---- connect ---- */

static int zero_bytes(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != 0)
			return 0;
	}
	return 1;
}

/* Why an address in a blob cannot be a peer's unicast address, or NULL if it can. */
static const char *addr_check(int family, const uint8_t *a)
{
	if (family == 4) {
		if (!zero_bytes(a + 4, 12))
			return "bad IPv4 address";
		if (a[0] == 0 || a[0] >= 224) /* "this network", multicast, broadcast */
			return "IPv4 address is not unicast";
		return NULL;
	}
	if (zero_bytes(a, 16) || a[0] == 0xff)
		return "IPv6 address is not unicast";
	if (zero_bytes(a, 10) && a[10] == 0xff && a[11] == 0xff)
		return "IPv4-mapped IPv6 address";
	return NULL;
}

static const char *blob_check(const wt_link_t *l, int peer, const uint8_t *b)
{
	uint16_t family = wt_util_get_be16(b + 6);
	uint32_t mf = wt_util_get_be32(b + 16);

	if (wt_util_get_be32(b) != UDP_BLOB_MAGIC || wt_util_get_be16(b + 4) != UDP_VERSION)
		return "bad magic or version";
	if (wt_util_get_be32(b + 8) != (uint32_t)peer ||
	    wt_util_get_be32(b + 12) != (uint32_t)l->size)
		return "rank or world size does not match";
	if (family != 4 && family != 6)
		return "bad address family";
	if ((family == 4) != (l->family == AF_INET))
		return "address family differs from this link's";
	if (mf < UDP_MIN_FRAME || mf > UDP_MAX_FRAME)
		return "bad max frame";
	if (wt_util_get_be16(b + 20) == 0 || wt_util_get_be16(b + 22) != 0)
		return "bad port";
	return addr_check(family, b + 24);
}

static void blob_to_peer(const uint8_t *b, struct udp_peer *p)
{
	memset(&p->sa, 0, sizeof(p->sa));
	if (wt_util_get_be16(b + 6) == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&p->sa;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_port, b + 20, 2);
		memcpy(&s4->sin_addr, b + 24, 4);
		p->salen = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&p->sa;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_port, b + 20, 2);
		memcpy(&s6->sin6_addr, b + 24, 16);
		p->salen = sizeof(*s6);
	}
	addr_format(&p->sa, p->addr_str, sizeof(p->addr_str));
}

static weft_status_t udp_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	struct udp_peer tmp;
	const char *why;
	int other;

	if (l == NULL || peer < 0 || peer >= l->size || peer == l->rank) {
		WT_ERROR("udp: connect to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (l->peers[peer].connected) {
		WT_ERROR("udp: connect to peer rank %d called twice", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (blob == NULL || len != UDP_BLOB_LEN) {
		WT_ERROR("udp: address of peer rank %d has %zu bytes, expected %d", peer,
			 blob ? len : 0, UDP_BLOB_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	why = blob_check(l, peer, blob);
	if (why) {
		WT_ERROR("udp: address of peer rank %d is malformed: %s", peer, why);
		return WEFT_ERR_INVALID_ARG;
	}
	memset(&tmp, 0, sizeof(tmp));
	blob_to_peer(blob, &tmp);
	tmp.keylen = (uint8_t)sa_key(l, &tmp.sa, tmp.salen, tmp.key);
	other = peer_lookup(l, tmp.key, tmp.keylen);
	if (other >= 0) {
		/* Two peers on one address would make every datagram from it ambiguous. */
		WT_ERROR("udp: address %s of peer rank %d already belongs to peer rank %d",
			 tmp.addr_str, peer, other);
		return WEFT_ERR_INVALID_ARG;
	}
	tmp.connected = 1;
	l->peers[peer] = tmp;
	peer_insert(l, peer);
	if (wt_util_get_be32((const uint8_t *)blob + 16) > l->rx_want)
		l->rx_want = wt_util_get_be32((const uint8_t *)blob + 16);
	return WEFT_OK;
}

/* ---- send ---- */

static int msg_peer(const wt_link_t *l, const struct mmsghdr *m)
{
	return (int)((const struct udp_peer *)m->msg_hdr.msg_name - l->peers);
}

static void tx_advance(wt_link_t *l)
{
	l->tx_head = l->tx_head + 1 == l->tx_slots ? 0 : l->tx_head + 1;
	l->tx_count--;
}

/* The kernel refused a frame for good (not for lack of room): it is lost, as a datagram
 * may be, and the reliability layer above sends it again. */
static void tx_failed(wt_link_t *l, int peer, size_t len, int err)
{
	struct udp_peer *p = &l->peers[peer];

	if (p->tx_errno != err)
		WT_WARN("udp: sending a %zu-byte frame to peer rank %d (%s) failed: %s; frame "
			"dropped",
			len, peer, p->addr_str, strerror(err));
	else
		WT_DEBUG("udp: sending a %zu-byte frame to peer rank %d (%s) failed: %s", len, peer,
			 p->addr_str, strerror(err));
	p->tx_errno = err;
	l->tx_failed++;
}

static void tx_drop_head(wt_link_t *l, int err)
{
	const struct mmsghdr *m = &l->tx_msg[l->tx_head];

	tx_failed(l, msg_peer(l, m), m->msg_hdr.msg_iov->iov_len, err);
	tx_advance(l);
}

/* How many of the n slots from first on can leave as one GSO datagram: same peer, the
 * same length but a shorter last one, within one datagram's limits. */
static int gso_run(const wt_link_t *l, int first, int n)
{
	const struct mmsghdr *m = &l->tx_msg[first];
	size_t seg = m->msg_hdr.msg_iov->iov_len, total = seg;
	int run = 1;

	if (!l->gso || seg == 0)
		return 1;
	while (run < n && run < UDP_GSO_SEGS) {
		const struct mmsghdr *q = &l->tx_msg[first + run];
		size_t len = q->msg_hdr.msg_iov->iov_len;

		if (q->msg_hdr.msg_name != m->msg_hdr.msg_name || len == 0 || len > seg ||
		    total + len > UDP_MAX_FRAME)
			break;
		total += len;
		run++;
		if (len < seg)
			break;
	}
	return run;
}

/* Lays the n slots from the head out as wire messages; returns how many. Slot iovecs are
 * consecutive, so a run's message simply spans several of them. */
static int wire_build(wt_link_t *l, int n)
{
	int k = 0;

	for (int i = 0; i < n; k++) {
		const struct mmsghdr *m = &l->tx_msg[l->tx_head + i];
		struct mmsghdr *w = &l->wire[k];
		int run = gso_run(l, l->tx_head + i, n - i);

		w->msg_hdr = m->msg_hdr;
		w->msg_hdr.msg_iovlen = (size_t)run;
		w->msg_hdr.msg_control = NULL;
		w->msg_hdr.msg_controllen = 0;
		if (run > 1) {
			struct cmsghdr *c = &l->wire_cmsg[k].h;
			uint16_t seg = (uint16_t)m->msg_hdr.msg_iov->iov_len;

			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
			w->msg_hdr.msg_control = c;
			w->msg_hdr.msg_controllen = sizeof(l->wire_cmsg[k]);
		}
		l->wire_n[k] = run;
		i += run;
	}
	return k;
}

static void tx_sent(wt_link_t *l, int slots)
{
	for (int i = 0; i < slots; i++) {
		const struct mmsghdr *m = &l->tx_msg[l->tx_head];
		struct udp_peer *p = &l->peers[msg_peer(l, m)];

		p->ctr.frames_sent++;
		p->ctr.bytes_sent += m->msg_hdr.msg_iov->iov_len;
		tx_advance(l);
	}
}

/* Hands the batch to the kernel; returns 1 if frames are left (no room in the kernel). */
static int tx_flush(wt_link_t *l)
{
	while (l->tx_count > 0) {
		int n = l->tx_slots - l->tx_head;
		int k, r;

		if (n > l->tx_count)
			n = l->tx_count;
		k = wire_build(l, n);
		r = sendmmsg(l->fd, l->wire, (unsigned)k, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && is_again(errno))
			return 1;
		if (r < 0 && l->wire_n[0] > 1) {
			/* No GSO in this kernel, or the route's MTU is below WEFT_UDP_MTU. */
			WT_INFO("udp: the kernel refused segmentation offload (%s); sending "
				"datagrams one by one",
				strerror(errno));
			l->gso = 0;
			continue;
		}
		if (r < 0) {
			tx_drop_head(l, errno);
			continue;
		}
		for (int j = 0; j < r; j++)
			tx_sent(l, l->wire_n[j]);
	}
	return 0;
}

/* Returns 1 if the frame was handed to the kernel (or refused for good, like any lost
 * datagram), 0 if the kernel has no room for it now. */
static int send_direct(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt, size_t total)
{
	struct udp_peer *p = &l->peers[peer];
	struct msghdr msg = {.msg_name = &p->sa,
			     .msg_namelen = p->salen,
			     .msg_iov = (struct iovec *)iov,
			     .msg_iovlen = (size_t)iovcnt};
	ssize_t r;

	do
		r = sendmsg(l->fd, &msg, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0 && is_again(errno))
		return 0;
	if (r < 0) {
		tx_failed(l, peer, total, errno);
		return 1;
	}
	p->ctr.frames_sent++;
	p->ctr.bytes_sent += (size_t)r;
	return 1;
}

static void batch_append(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt, size_t total)
{
	int slot = l->tx_head + l->tx_count;
	struct mmsghdr *m;
	uint8_t *dst;

	if (slot >= l->tx_slots)
		slot -= l->tx_slots;
	m = &l->tx_msg[slot];
	dst = m->msg_hdr.msg_iov->iov_base;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	m->msg_hdr.msg_iov->iov_len = total;
	m->msg_hdr.msg_name = &l->peers[peer].sa;
	m->msg_hdr.msg_namelen = l->peers[peer].salen;
	l->tx_count++;
}

static weft_status_t udp_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie)
{
	size_t total;

	(void)cookie;
	if (l == NULL || peer < 0 || peer >= l->size) {
		WT_ERROR("udp: send to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (!l->peers[peer].connected) {
		WT_ERROR("udp: send to peer rank %d before connect", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_link_iov_total(iov, iovcnt, l->base.max_frame, &total) != WEFT_OK) {
		WT_ERROR("udp: bad iov for a frame to peer rank %d (at most %zu bytes)", peer,
			 l->base.max_frame);
		return WEFT_ERR_INVALID_ARG;
	}
	/* A large frame goes out at once from the caller's iov: a system call costs less
	 * than copying it. The batch goes first, so frames leave in the order given. */
	if (total >= UDP_DIRECT_MIN && iovcnt <= UDP_DIRECT_IOV &&
	    (l->tx_count == 0 || tx_flush(l) == 0) && send_direct(l, peer, iov, iovcnt, total))
		return WEFT_OK;
	if (l->tx_count == l->tx_slots && tx_flush(l) != 0 && l->tx_count == l->tx_slots)
		return WT_AGAIN;
	batch_append(l, peer, iov, iovcnt, total);
	if (l->tx_count == l->tx_slots)
		tx_flush(l);
	return WEFT_OK;
}

/* ---- receive ---- */

/* A peer with a larger MTU connected since the last poll: grow the slots now that no
 * frame handed out points into them. */
static weft_status_t rx_resize(wt_link_t *l)
{
	uint8_t *mem;

	if (l->rx_want <= l->rx_slot)
		return WEFT_OK;
	mem = malloc((size_t)l->rx_slots * l->rx_want);
	if (mem == NULL) {
		WT_ERROR("udp: out of memory growing %d receive slots to %zu bytes", l->rx_slots,
			 l->rx_want);
		return WEFT_ERR_NO_MEMORY;
	}
	free(l->rx_mem);
	l->rx_mem = mem;
	l->rx_slot = l->rx_want;
	rx_bind_slots(l);
	return WEFT_OK;
}

/* Turns received slot i into a FRAME event; returns 0 if the datagram was dropped. */
static int rx_take(wt_link_t *l, int i, wt_link_event_t *ev)
{
	const struct mmsghdr *m = &l->rx_msg[i];
	uint8_t key[UDP_KEY_MAX];
	size_t klen = sa_key(l, &l->rx_sa[i], m->msg_hdr.msg_namelen, key);
	int peer = klen ? peer_lookup(l, key, klen) : -1;
	char from[64];
	struct udp_peer *p;

	if (peer < 0) {
		l->strangers++;
		if (wt_util_log_level() >= WT_LOG_DEBUG) {
			addr_format(&l->rx_sa[i], from, sizeof(from));
			WT_DEBUG("udp: dropped a %u-byte datagram from %s: not a connected peer",
				 m->msg_len, from);
		}
		return 0;
	}
	p = &l->peers[peer];
	if (m->msg_hdr.msg_flags & MSG_TRUNC) {
		l->truncated++;
		p->ctr.drops++;
		WT_DEBUG("udp: dropped a %u-byte datagram from peer rank %d (%s): longer than %zu",
			 m->msg_len, peer, p->addr_str, l->rx_slot);
		return 0;
	}
	p->ctr.frames_received++;
	p->ctr.bytes_received += m->msg_len;
	memset(ev, 0, sizeof(*ev));
	ev->type = WT_LINK_EV_FRAME;
	ev->peer = peer;
	ev->data = l->rx_iov[i].iov_base;
	ev->len = m->msg_len;
	return 1;
}

static int rx_run(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;
	int used = 0;

	while (n < max && used < l->rx_slots) {
		int want = l->rx_slots - used;
		int r;

		if (want > max - n)
			want = max - n;
		for (int i = used; i < used + want; i++)
			l->rx_msg[i].msg_hdr.msg_namelen = sizeof(l->rx_sa[i]);
		/* MSG_TRUNC: msg_len is the datagram's real length, for the log. */
		r = recvmmsg(l->fd, &l->rx_msg[used], (unsigned)want, MSG_DONTWAIT | MSG_TRUNC,
			     NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (!is_again(errno))
				WT_DEBUG("udp: recvmmsg: %s", strerror(errno));
			break;
		}
		for (int i = used; i < used + r; i++)
			n += rx_take(l, i, &ev[n]);
		used += r;
		if (r < want)
			break;
	}
	return n;
}

static int udp_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	weft_status_t st;

	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	if (l->tx_count > 0)
		tx_flush(l);
	st = rx_resize(l);
	if (st != WEFT_OK)
		return st;
	return rx_run(l, ev, max);
}

/* ---- sleeping, stats ---- */

static int udp_fd(wt_link_t *l)
{
	return l ? l->fd : -1;
}

static int udp_arm(wt_link_t *l)
{
	uint8_t b;

	if (l == NULL)
		return 1;
	if (l->tx_count > 0)
		tx_flush(l);
	/* Frames still batched are waiting for room in the kernel, which no fd signals:
	 * timer_ms() bounds the sleep instead of spinning here. */
	return recv(l->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

static void udp_disarm(wt_link_t *l)
{
	(void)l; /* the socket is level-triggered: nothing to drain */
}

static int udp_timer_ms(wt_link_t *l)
{
	return l && l->tx_count > 0 ? 1 : -1;
}

static void udp_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	if (l == NULL || st == NULL || peer < 0 || peer >= l->size)
		return;
	wt_link_counters_add(st, &l->peers[peer].ctr);
}

static weft_status_t udp_probe(char *msg, size_t msglen)
{
	if (msg && msglen)
		msg[0] = '\0';
	return WEFT_OK;
}

const wt_link_ops_t wt_udp_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "udp",
    .caps = WT_LINK_CAP_HAS_FD,
    .probe = udp_probe,
    .open = udp_open,
    .address = udp_address,
    .connect = udp_connect,
    .send = udp_send,
    .poll = udp_poll,
    .get = NULL,
    .fd = udp_fd,
    .arm = udp_arm,
    .disarm = udp_disarm,
    .close = udp_close,
    .stats = udp_stats,
    .timer_ms = udp_timer_ms,
};
