/* bench/link_bw: raw throughput of one link driver (drivers/ layer, no channel above).
 * Two forked processes each open one link of the named driver; rank 0 streams N MiB as
 * max_frame-sized frames to rank 1 and prints GB/s. Over an unreliable driver the
 * receiver paces the sender with a 1-byte ack per 4 MiB epoch and lost frames are
 * counted, not resent.
 *
 *   link_bw DRIVER [MiB=64] [runs=3]
 *
 * Built with the tree: build/bench/link_bw udp 64 3
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "drivers/link.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"

#define EPOCH_BYTES (4u << 20)
#define WINDOW_EPOCHS 2	     /* epochs in flight before the sender waits for an ack */
#define STALL_NS 20000000ull /* an epoch whose ack never comes (its tail was lost) */
#define SPIN_NS 200000ull    /* empty polls before sleeping on the fd */
#define SEQ_FIN 0xffffffffu
#define SEQ_HELLO 0xfffffffeu
#define MAX_EV 64

struct hdr {
	uint32_t run;
	uint32_t seq;
};

struct report {
	uint32_t magic; /* "REPT" */
	uint32_t run;
	uint32_t frames;
	uint32_t pad;
};

static const wt_link_ops_t *ops;
static int unreliable;

static void die(const char *what)
{
	fprintf(stderr, "link_bw[%d]: %s\n", (int)getpid(), what);
	_exit(1);
}

/* Polls; when idle for SPIN_NS, sleeps on the fd at most ms. */
static int poll_or_nap(wt_link_t *l, wt_link_event_t *ev, uint64_t *idle_since, int ms)
{
	int n = ops->poll(l, ev, MAX_EV);
	uint64_t now;

	if (n < 0)
		die("poll failed");
	if (n > 0) {
		*idle_since = 0;
		return n;
	}
	now = wt_util_time_ns();
	if (*idle_since == 0)
		*idle_since = now;
	if (now - *idle_since < SPIN_NS)
		return 0;
	if (ops->arm(l) == 0) {
		struct pollfd pfd = {.fd = ops->fd(l), .events = POLLIN};
		int t = ops->timer_ms ? ops->timer_ms(l) : -1;

		poll(&pfd, 1, t >= 0 && t < ms ? t : ms);
	}
	ops->disarm(l);
	return 0;
}

struct sender;
static struct sender *blocked_sink; /* rank 0: where events seen while a send waits go */
static void sender_events(struct sender *s, wt_link_event_t *ev, int n);

/* Sends a frame whose first HDR_BYTES change from frame to frame and whose rest (bulk)
 * stays the same while the program runs: the header goes as its own iov piece, and with
 * bulk set the rest is offered by reference (a cookie asks for SEND_DONE, which a driver
 * such as dpdk then reports once it let go of the bytes; the bytes never change, so
 * nothing waits for it). */
#define HDR_BYTES sizeof(struct hdr)
static void send_frame_ex(wt_link_t *l, int peer, const void *buf, size_t len, int bulk)
{
	struct iovec iov[2] = {{(void *)buf, len}, {NULL, 0}};
	int n = 1;
	uint64_t idle = 0;
	wt_link_event_t ev[MAX_EV];

	if (bulk && len > HDR_BYTES) {
		iov[0].iov_len = HDR_BYTES;
		iov[1].iov_base = (uint8_t *)buf + HDR_BYTES;
		iov[1].iov_len = len - HDR_BYTES;
		n = 2;
	}
	for (;;) {
		weft_status_t st = ops->send(l, peer, iov, n, bulk ? (void *)buf : NULL);

		if (st == WEFT_OK || st == WEFT_INPROGRESS)
			return;
		if (st != WT_AGAIN)
			die("send failed");
		int k = poll_or_nap(l, ev, &idle, 1);

		if (blocked_sink != NULL) {
			sender_events(blocked_sink, ev, k);
			continue;
		}
		for (int i = 0; i < k; i++) {
			if (ev[i].type != WT_LINK_EV_SEND_DONE)
				die("unexpected event while blocked");
		}
	}
}

static void send_frame(wt_link_t *l, int peer, const void *buf, size_t len)
{
	send_frame_ex(l, peer, buf, len, 0);
}

/* ---- rank 1 ---- */

static void receiver(wt_link_t *l, uint32_t nframes, uint32_t per_epoch)
{
	wt_link_event_t ev[MAX_EV];
	uint32_t run = 0, count = 0;
	int64_t acked = -1;
	uint64_t idle = 0;

	for (;;) {
		int n = poll_or_nap(l, ev, &idle, 100);

		for (int i = 0; i < n; i++) {
			struct hdr h;

			if (ev[i].type != WT_LINK_EV_FRAME)
				die("peer error at the receiver");
			if (ev[i].len < sizeof(h))
				die("short frame");
			memcpy(&h, ev[i].data, sizeof(h));
			if (h.seq == SEQ_HELLO) {
				send_frame(l, 0, "H", 1);
				continue;
			}
			if (h.run == UINT32_MAX)
				return; /* the sender is done */
			if (h.run < run)
				continue; /* late frame of an earlier run */
			if (h.run > run) {
				run = h.run;
				count = 0;
				acked = -1;
			}
			if (h.seq == SEQ_FIN) {
				struct report r = {0x54504552u, run, count, 0};

				send_frame(l, 0, &r, sizeof(r));
				continue;
			}
			count++;
			if (!unreliable)
				continue;
			{
				int64_t e = h.seq / per_epoch;
				int last =
				    h.seq % per_epoch == per_epoch - 1 || h.seq == nframes - 1;
				int64_t done = last ? e : e - 1;

				if (done > acked) {
					uint8_t a = (uint8_t)done;

					acked = done;
					send_frame(l, 0, &a, 1);
				}
			}
		}
	}
}

/* ---- rank 0 ---- */

struct sender {
	wt_link_t *l;
	uint32_t run;
	int64_t acked;
	struct report rep;
	int have_rep;
	int hello;
};

static void sender_events(struct sender *s, wt_link_event_t *ev, int n)
{
	for (int i = 0; i < n; i++) {
		if (ev[i].type == WT_LINK_EV_SEND_DONE)
			continue;
		if (ev[i].type != WT_LINK_EV_FRAME)
			die("peer error at the sender");
		if (ev[i].len == 1 && ((const char *)ev[i].data)[0] == 'H' && !s->hello) {
			s->hello = 1;
		} else if (ev[i].len == 1) {
			/* Epoch numbers travel mod 256: unwrap next to what is acked. */
			uint8_t b = ((const uint8_t *)ev[i].data)[0];
			int64_t a = s->acked + 1 + (uint8_t)(b - (uint8_t)(s->acked + 1));

			if (a > s->acked && a - s->acked < 128)
				s->acked = a;
		} else if (ev[i].len == sizeof(struct report)) {
			memcpy(&s->rep, ev[i].data, sizeof(s->rep));
			s->have_rep = s->rep.run == s->run;
		}
	}
}

static double one_run(struct sender *s, uint8_t *buf, size_t mf, uint32_t nframes,
		      uint32_t per_epoch, uint32_t *lost)
{
	wt_link_event_t ev[MAX_EV];
	struct hdr h = {s->run, 0};
	uint64_t t0 = wt_util_time_ns(), last_fin = 0, idle = 0;

	s->acked = -1;
	s->have_rep = 0;
	for (uint32_t seq = 0; seq < nframes; seq++) {
		uint64_t wait_from = 0;

		while (unreliable && (int64_t)(seq / per_epoch) > s->acked + WINDOW_EPOCHS) {
			uint64_t now = wt_util_time_ns();

			sender_events(s, ev, poll_or_nap(s->l, ev, &idle, 1));
			if (wait_from == 0)
				wait_from = now;
			else if (now - wait_from > STALL_NS)
				s->acked++; /* the epoch's last frames were lost */
		}
		h.seq = seq;
		memcpy(buf, &h, sizeof(h));
		send_frame_ex(s->l, 1, buf, mf, 1);
		if (seq % 16 == 15)
			sender_events(s, ev, ops->poll(s->l, ev, MAX_EV));
	}
	while (!s->have_rep) {
		uint64_t now = wt_util_time_ns();

		if (last_fin == 0 || (unreliable && now - last_fin > 10000000ull)) {
			h.seq = SEQ_FIN;
			memcpy(buf, &h, sizeof(h));
			send_frame(s->l, 1, buf, sizeof(h));
			last_fin = now;
		}
		sender_events(s, ev, poll_or_nap(s->l, ev, &idle, 5));
	}
	*lost = nframes - s->rep.frames;
	return (double)(wt_util_time_ns() - t0) / 1e9;
}

static void sender(wt_link_t *l, size_t mf, uint32_t nframes, uint32_t per_epoch, int runs,
		   size_t mib)
{
	struct sender s = {.l = l};
	uint8_t *buf = malloc(mf);
	wt_link_event_t ev[MAX_EV];
	struct hdr h = {0, SEQ_HELLO};
	uint64_t idle = 0, last = 0;
	double best = 0;

	blocked_sink = &s;
	if (buf == NULL)
		die("out of memory");
	for (size_t i = 0; i < mf; i++)
		buf[i] = (uint8_t)(i * 7);
	/* The connection is up (tcp's handshake is done) before any clock starts. */
	while (!s.hello) {
		if (wt_util_time_ns() - last > 50000000ull) {
			memcpy(buf, &h, sizeof(h));
			send_frame(l, 1, buf, sizeof(h));
			last = wt_util_time_ns();
		}
		sender_events(&s, ev, poll_or_nap(l, ev, &idle, 10));
	}
	for (int r = 1; r <= runs; r++) {
		uint32_t lost = 0;
		double t, gbs;

		s.run = (uint32_t)r;
		t = one_run(&s, buf, mf, nframes, per_epoch, &lost);
		gbs = (double)(nframes - lost) * (double)mf / t / 1e9;
		if (gbs > best)
			best = gbs;
		printf("%s run %d: %zu MiB in %u frames of %zu B: %.4f s, %.3f GB/s delivered, "
		       "%u lost (%.2f%%)\n",
		       ops->name, r, mib, nframes, mf, t, gbs, lost, 100.0 * lost / nframes);
	}
	printf("%s best: %.3f GB/s\n", ops->name, best);
	h.run = UINT32_MAX;
	h.seq = 0;
	memcpy(buf, &h, sizeof(h));
	/* Several, in case one is lost; then a last poll hands them to the kernel. */
	for (int i = 0; i < (unreliable ? 5 : 1); i++)
		send_frame(l, 1, buf, sizeof(h));
	ops->poll(l, ev, MAX_EV);
	free(buf);
}

/* ---- setup ---- */

static wt_link_t *open_and_connect(int rank, int wfd, int rfd)
{
	wt_link_config_t c = {0};
	wt_link_t *l = NULL;
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len = sizeof(blob);
	uint32_t plen;

	c.rank = rank;
	c.size = 2;
	c.job_id = "linkbw";
	c.connect_timeout = 30;
	wt_util_key_from_token(&c.key, "link-bw");
	if (ops->open(&c, &l) != WEFT_OK || ops->address(l, blob, &len) != WEFT_OK)
		die("open failed");
	plen = (uint32_t)len;
	if (write(wfd, &plen, 4) != 4 || write(wfd, blob, len) != (ssize_t)len)
		die("pipe write");
	if (read(rfd, &plen, 4) != 4 || plen > sizeof(blob) ||
	    read(rfd, blob, plen) != (ssize_t)plen)
		die("pipe read");
	if (ops->connect(l, 1 - rank, blob, plen) != WEFT_OK)
		die("connect failed");
	return l;
}

int main(int argc, char **argv)
{
	int to1[2], to0[2];
	size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 64;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	pid_t pid[2];
	int status = 0;

	if (argc < 2 || mib == 0 || mib > 65536 || runs < 1) {
		fprintf(stderr, "usage: %s DRIVER [MiB=64] [runs=3]\n", argv[0]);
		return 2;
	}
	if (wt_util_crypto_init() != WEFT_OK)
		return 1;
	ops = wt_link_find(argv[1]);
	if (ops == NULL) {
		fprintf(stderr, "driver %s is not built\n", argv[1]);
		return 2;
	}
	unreliable = !(ops->caps & WT_LINK_CAP_RELIABLE);
	if (pipe(to1) != 0 || pipe(to0) != 0)
		return 1;
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] < 0)
			return 1;
		if (pid[r] == 0) {
			wt_link_t *l =
			    open_and_connect(r, r ? to0[1] : to1[1], r ? to1[0] : to0[0]);
			size_t mf = wt_link_max_frame(l);
			uint32_t nframes = (uint32_t)(((mib << 20) + mf - 1) / mf);
			uint32_t per_epoch = (uint32_t)((EPOCH_BYTES + mf - 1) / mf);

			if (r == 0)
				sender(l, mf, nframes, per_epoch, runs, mib);
			else
				receiver(l, nframes, per_epoch);
			fflush(stdout);
			ops->close(l);
			_exit(0);
		}
	}
	for (int r = 0; r < 2; r++) {
		int st;

		if (waitpid(pid[r], &st, 0) != pid[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			status = 1;
	}
	return status;
}
