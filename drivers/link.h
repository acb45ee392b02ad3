/* The link driver interface (drivers/): one ops table per driver. A link carries
 * opaque frames of at most max_frame bytes to peers identified by their world rank; it
 * never interprets them. Only the channel layer above uses this interface. */
#ifndef WT_LINK_H
#define WT_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "lib/util/status.h"
#include "lib/util/crypto.h"
#include "lib/util/umem.h"

/* Capability bits. */
#define WT_LINK_CAP_RELIABLE (1u << 0) /* no loss, no duplication, no corruption */
#define WT_LINK_CAP_ORDERED (1u << 1)  /* frames to one peer arrive in send order */
#define WT_LINK_CAP_GET (1u << 2)      /* one-sided read of a peer's memory (shm: CMA) */
#define WT_LINK_CAP_HAS_FD (1u << 3)   /* fd() gives a pollable fd for sleeping */
/* Frames arrive intact or not at all: the driver verifies a checksum covering the whole
 * frame (dpdk: the ICRC) or the medium cannot corrupt it (dpdk's memif pairs). The
 * reliability layer then leaves out its own payload CRC. A wrapper that corrupts frames
 * (the fault injector) clears it. */
#define WT_LINK_CAP_INTEGRITY (1u << 4)
#define WT_LINK_CAP_SLOTS (1u << 5) /* shared slot areas peers read directly (shm) */

#define WT_LINK_ADDR_MAX 256 /* largest address blob */

typedef struct wt_link wt_link_t; /* a driver's open link; first member is wt_link_base_t */

typedef struct {
	int rank;		/* this process's world rank */
	int size;		/* world size; peers are 0..size-1 */
	const char *job_id;	/* short printable id unique to this job (names shm objects) */
	wt_util_key_t key;	/* job token key: every connection proves it */
	double connect_timeout; /* seconds: connect retries until this, then fails */
	const char *bind_addr;	/* tcp: local IP to listen on (NULL = any) */
	const char *host_id;	/* this rank's host identity (NULL = unknown): equal strings
				   mean the same host (and network namespace) */
	int local_size;		/* ranks of the job on this host (0 = unknown) */
} wt_link_config_t;

enum wt_link_event_type {
	WT_LINK_EV_SEND_DONE = 1,  /* a send that returned WEFT_INPROGRESS finished: cookie */
	WT_LINK_EV_FRAME = 2,	   /* a frame arrived: peer, data, len */
	WT_LINK_EV_PEER_ERROR = 3, /* peer is unusable: peer, status */
};

typedef struct {
	int type;
	int peer;
	weft_status_t status;
	void *cookie;
	/* FRAME: valid until the next poll() on this link; the caller copies or consumes
	 * it before polling again. */
	const void *data;
	size_t len;
} wt_link_event_t;

/* Counters of one peer's traffic through a link stack. Each layer adds what it owns:
 * the driver counts what crossed the wire (frames/bytes, including retransmissions and
 * acknowledgements), the channel's reliability layer its protocol counters, the fault
 * injector what it did. The caller zeroes the struct first. */
typedef struct {
	uint64_t frames_sent, bytes_sent, frames_received, bytes_received;
	uint64_t retransmits; /* frames sent again (timer expiries and fast retransmits) */
	uint64_t timeouts;    /* retransmission timer expiries */
	uint64_t drops;	      /* frames received and discarded: outside the window, no buffer */
	uint64_t duplicates;  /* frames received again and discarded */
	uint64_t corrupt;     /* frames failing the CRC or header checks, discarded */
	uint64_t rejected;    /* frames from an unknown or stale epoch or with a bad token
				 proof, discarded */
	uint64_t rto_us;      /* current retransmission timeout; 0 without a reliability layer */
	uint64_t srtt_us;     /* smoothed round-trip time */
	uint32_t window;      /* current send window in frames */
	uint32_t in_flight;   /* frames sent and not yet acknowledged */
	/* WEFT_FAULT: what the injector did to frames sent to this peer */
	uint64_t fault_drops, fault_dups, fault_reorders, fault_delays, fault_corrupts;
} wt_link_stats_t;

/* The wire counters a driver keeps per peer, added into wt_link_stats_t by its stats op. */
typedef struct {
	uint64_t frames_sent, bytes_sent, frames_received, bytes_received;
	uint64_t drops, corrupt, rejected;
} wt_link_counters_t;

static inline void wt_link_counters_add(wt_link_stats_t *st, const wt_link_counters_t *c)
{
	st->frames_sent += c->frames_sent;
	st->bytes_sent += c->bytes_sent;
	st->frames_received += c->frames_received;
	st->bytes_received += c->bytes_received;
	st->drops += c->drops;
	st->corrupt += c->corrupt;
	st->rejected += c->rejected;
}

/* What a reliability layer says about a frame it sends (send_info below), for a wire
 * whose own headers have sequence and acknowledgement fields (RoCE's BTH PSN and AETH
 * MSN). The frame itself still carries all of it; a driver may ignore this. */
enum wt_link_frame_kind {
	WT_LINK_FRAME_DATA = 1, /* payload frame with sequence number seq */
	WT_LINK_FRAME_ACK = 2,	/* acknowledgement only */
	WT_LINK_FRAME_CTRL = 3, /* handshake or other control */
};

typedef struct {
	int kind;     /* enum wt_link_frame_kind */
	uint64_t seq; /* DATA: this frame's sequence number */
	uint64_t ack; /* every frame with a sequence number below ack has arrived */
	int ack_req;  /* the sender wants an acknowledgement soon */
} wt_link_frame_info_t;

/* Optional one-sided read descriptor: what a peer publishes so we can GET from it. */
typedef struct {
	uint64_t addr; /* virtual address in the peer */
	uint64_t len;
} wt_link_remote_t;

typedef struct wt_link_ops {
	size_t size; /* sizeof(wt_link_ops_t): ABI check */
	const char *name;
	uint32_t caps;
	/* WEFT_OK if this driver can run here; otherwise WEFT_ERR_NO_DEVICE/UNSUPPORTED
	 * with why in msg. */
	weft_status_t (*probe)(char *msg, size_t msglen);
	weft_status_t (*open)(const wt_link_config_t *cfg, wt_link_t **link);
	/* This end's address blob, published through the boot store. */
	weft_status_t (*address)(wt_link_t *link, void *blob, size_t *len);
	/* Start connecting to peer; completes in the background. Sends may be posted at
	 * once; they are queued until the connection is up. */
	weft_status_t (*connect)(wt_link_t *link, int peer, const void *blob, size_t len);
	/* Post one frame (the concatenation of iov) to peer. Returns WEFT_OK when the bytes
	 * were taken (iov may be reused), WEFT_INPROGRESS when a SEND_DONE with cookie
	 * follows, WT_AGAIN when out of room (nothing was taken; retry later), or an
	 * error. */
	weft_status_t (*send)(wt_link_t *link, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie);
	/* Fills up to max events; returns how many (>= 0) or an error status (< 0). */
	int (*poll)(wt_link_t *link, wt_link_event_t *ev, int max);
	/* One-sided read of len bytes at remote->addr + off in peer into local; NULL when
	 * not WT_LINK_CAP_GET. Synchronous. */
	weft_status_t (*get)(wt_link_t *link, int peer, void *local, const wt_link_remote_t *remote,
			     size_t off, size_t len);
	/* Pollable fd that becomes readable when poll() may have work; -1 if none. */
	int (*fd)(wt_link_t *link);
	/* Prepare to sleep on fd(): returns 1 if work is already pending (do not sleep), 0
	 * if the caller may block on fd() until it is readable. */
	int (*arm)(wt_link_t *link);
	/* Called after waking from the fd (drain doorbells, disarm). */
	void (*disarm)(wt_link_t *link);
	void (*close)(wt_link_t *link);
	/* Optional (NULL = none). Adds this link's counters for peer into *st (see
	 * wt_link_stats_t for who counts what); a wrapper calls its inner link first. */
	void (*stats)(wt_link_t *link, int peer, wt_link_stats_t *st);
	/* Optional (NULL = no timers). Milliseconds until poll() must run again for the
	 * link's own timers (retransmission, delayed frames), 0 if already due, -1 when no
	 * timer is pending. A caller about to sleep on fd() sleeps no longer than this. */
	int (*timer_ms)(wt_link_t *link);
	/* Optional (NULL = use send). send() with a description of the frame; same contract
	 * as send. A wrapper passes info on to its inner link (or calls the inner send when
	 * the inner link has no send_info). info is valid only during the call: a link that
	 * needs it later copies it. */
	weft_status_t (*send_info)(wt_link_t *link, int peer, const struct iovec *iov, int iovcnt,
				   void *cookie, const wt_link_frame_info_t *info);
	/* Optional (WT_LINK_CAP_SLOTS; NULL = none): shared slot areas. Every rank of the link
	 * owns an area of the same size that the others map and read directly, so a few bytes
	 * cross from one process to another with no frame at all. Returns rank's area as
	 * mapped here (our own writable, a connected peer's read only) and its length in
	 * *bytes; NULL for a peer that is not connected or failed. What the bytes mean is up
	 * to the layers above. */
	void *(*slot_area)(wt_link_t *link, int rank, size_t *bytes);
	/* Optional (WT_LINK_CAP_SLOTS): we stored into our area something the listed peers
	 * may be sleeping on fd() for: wake those that sleep (others cost a load each). The
	 * store must be visible before the call (release order or stronger); ranks that are
	 * ours or not connected are skipped. */
	void (*slot_wake)(wt_link_t *link, const int *peers, int npeers);
	/* Optional (WT_LINK_CAP_GET; NULL = none): one-sided write of len bytes of local to
	 * remote->addr + off in peer. Synchronous. */
	weft_status_t (*put)(wt_link_t *link, int peer, const void *local,
			     const wt_link_remote_t *remote, size_t off, size_t len);
	/* Optional (NULL = none): the first byte of the buffer desc describes, in peer's
	 * weft_mem_alloc memory, as mapped here (read and write), or NULL when it cannot be
	 * mapped (not in such memory, not a region of that peer, a failed peer, no address
	 * space): the caller then moves the bytes with get/put. Mappings are cached per peer
	 * and dropped when the peer fails or the link closes. */
	void *(*mem_map)(wt_link_t *link, int peer, const wt_util_umem_desc_t *desc);
	/* Optional (NULL = cannot tell): 1 if one of the n listed peers last ran, as far as
	 * it published, on the CPU the calling thread runs on now (or that is unknown), 0 if
	 * each runs elsewhere. Publishes the caller's CPU for its peers as it goes. Ranks that
	 * are ours, out of range or not connected are skipped. A hint for waiting only. */
	int (*cpu_shared)(wt_link_t *link, const int *peers, int n);
	/* 0, or where the receiver copies frames out of memory it shares with the sender: a
	 * one-way stream (the sender has no large receive pending: a broadcast's root, a
	 * pipeline's send) goes in frames of a quarter of the message, not below this many
	 * bytes, so the receiver copies one out while the sender writes the next. */
	size_t pipe_min;
} wt_link_ops_t;

/* Every driver's link struct starts with this. */
typedef struct {
	const wt_link_ops_t *ops;
	size_t max_frame;
} wt_link_base_t;

static inline const wt_link_ops_t *wt_link_ops(wt_link_t *link)
{
	return ((wt_link_base_t *)link)->ops;
}

static inline size_t wt_link_max_frame(wt_link_t *link)
{
	return ((wt_link_base_t *)link)->max_frame;
}

/* Sends through link's send_info when it has one and info is given, else its plain send:
 * what a wrapper does with a frame description from above. */
static inline weft_status_t wt_link_send_info(wt_link_t *link, int peer, const struct iovec *iov,
					      int iovcnt, void *cookie,
					      const wt_link_frame_info_t *info)
{
	const wt_link_ops_t *ops = wt_link_ops(link);

	if (info != NULL && ops->send_info != NULL)
		return ops->send_info(link, peer, iov, iovcnt, cookie, info);
	return ops->send(link, peer, iov, iovcnt, cookie);
}

/* Total bytes of a frame given as iov, checked: no NULL piece with bytes, at most max in
 * all. WEFT_ERR_INVALID_ARG otherwise. */
static inline weft_status_t wt_link_iov_total(const struct iovec *iov, int iovcnt, size_t max,
					      size_t *total)
{
	size_t t = 0;

	if (iovcnt < 0 || (iovcnt > 0 && iov == NULL))
		return WEFT_ERR_INVALID_ARG;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > max || (iov[i].iov_len > 0 && iov[i].iov_base == NULL))
			return WEFT_ERR_INVALID_ARG;
		t += iov[i].iov_len;
		if (t > max)
			return WEFT_ERR_INVALID_ARG;
	}
	*total = t;
	return WEFT_OK;
}

/* What every driver's open() needs of cfg: 0 <= rank < size <= max_ranks and a job id of
 * 1..max_job printable characters without spaces, '|' or any character of forbid (it
 * names sockets and objects). Logs why (naming the driver) and returns
 * WEFT_ERR_INVALID_ARG otherwise. */
weft_status_t wt_link_config_check(const char *driver, const wt_link_config_t *cfg, int max_ranks,
				   size_t max_job, const char *forbid);

/* The socket address to bind for cfg->bind_addr: an IPv4 or IPv6 literal, or NULL for
 * IPv4 any; port 0. Logs (naming the driver) and returns WEFT_ERR_INVALID_ARG for
 * anything else. */
weft_status_t wt_link_bind_addr(const char *driver, const char *bind_addr,
				struct sockaddr_storage *ss, socklen_t *len);

/* A socket bound to any address is reached on loopback by peers on this host: the
 * address to advertise for it. */
void wt_link_any_to_loopback(struct sockaddr_storage *ss);

/* The peers a driver has to report as PEER_ERROR events, in the order they failed. The
 * driver pushes each peer at most once (when it marks it failed), so room for every
 * peer is enough. */
typedef struct {
	struct wt_link_err {
		int peer;
		weft_status_t status;
	} * q;
	int head, len, cap;
} wt_link_errq_t;

/* WEFT_ERR_NO_MEMORY if the queue for size peers cannot be allocated. */
weft_status_t wt_link_errq_init(wt_link_errq_t *q, int size);
void wt_link_errq_free(wt_link_errq_t *q);
void wt_link_errq_push(wt_link_errq_t *q, int peer, weft_status_t status);
/* Moves up to max queued errors into ev as PEER_ERROR events; returns how many. */
int wt_link_errq_pop(wt_link_errq_t *q, wt_link_event_t *ev, int max);

/* Registry of the drivers built into this library. */
const wt_link_ops_t *wt_link_find(const char *name);
/* NULL-terminated list of built drivers. */
const wt_link_ops_t *const *wt_link_all(void);

#endif
