/* libFuzzer target (tests/fuzz): hostile datagrams into the reliability layer. Two
 * wrappers (ranks 0 and 1) over an in-memory lossless fake link complete a real
 * handshake; then the input, cut into records, is injected into rank 0 as frames from
 * rank 1: raw bytes, or headers rebuilt with valid CRCs and (optionally) the live epochs,
 * ranks and sequence numbers, so the fuzzer reaches the state machine behind the checks.
 * Real traffic flows in between. Nothing may crash, leak, or read out of bounds, and
 * every frame the layer delivers must be within its size limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/link.h"
#include "layers/channel/rel.h"
#include "layers/channel/rel_wire.h"
#include "lib/util/crc32c.h"

#define FZ_MTU 2048
#define FZ_QCAP 64

struct qframe {
	size_t len;
	uint8_t data[FZ_MTU];
};

struct wt_link {
	wt_link_base_t base;
	int rank;
	struct wt_link *peer;
	struct qframe *q; /* frames waiting for this end */
	int qhead, qlen;
	struct qframe cur;	   /* what the last poll handed out */
	uint8_t last_sent[FZ_MTU]; /* this end's last frame, for the live header fields */
	size_t last_len;
};

static struct qframe *q_push(struct wt_link *l)
{
	if (l->qlen == FZ_QCAP)
		return NULL; /* a full queue drops, as a datagram socket would */
	struct qframe *f = &l->q[(l->qhead + l->qlen) % FZ_QCAP];

	l->qlen++;
	return f;
}

static weft_status_t fz_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			     void *cookie)
{
	size_t total = 0;

	(void)cookie;
	if (peer != 1 - l->rank)
		return WEFT_ERR_INVALID_ARG;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > FZ_MTU)
		return WEFT_ERR_INVALID_ARG;
	struct qframe *f = q_push(l->peer);
	size_t off = 0;

	for (int i = 0; i < iovcnt; i++) {
		memcpy(l->last_sent + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	l->last_len = total;
	if (f != NULL) {
		memcpy(f->data, l->last_sent, total);
		f->len = total;
	}
	return WEFT_OK;
}

static int fz_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	if (max < 1 || l->qlen == 0)
		return 0;
	/* One frame per poll: the handed-out frame stays valid until the next poll. */
	l->cur = l->q[l->qhead];
	l->qhead = (l->qhead + 1) % FZ_QCAP;
	l->qlen--;
	memset(ev, 0, sizeof(*ev));
	ev->type = WT_LINK_EV_FRAME;
	ev->peer = 1 - l->rank;
	ev->data = l->cur.data;
	ev->len = l->cur.len;
	return 1;
}

static weft_status_t fz_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	(void)l;
	(void)peer;
	(void)blob;
	(void)len;
	return WEFT_OK;
}

static const wt_link_ops_t fz_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "fuzz",
    .caps = 0,
    .connect = fz_connect,
    .send = fz_send,
    .poll = fz_poll,
};

static volatile uint64_t sink;

/* Drains events; touches every delivered byte so ASan sees any bad pointer. */
static void pump(wt_link_t *r, size_t max_frame)
{
	wt_link_event_t ev[16];

	for (int round = 0; round < 4; round++) {
		int n = wt_link_ops(r)->poll(r, ev, 16);

		for (int i = 0; i < n; i++) {
			if (ev[i].type != WT_LINK_EV_FRAME)
				continue;
			if (ev[i].len > max_frame)
				__builtin_trap();
			for (size_t k = 0; k < ev[i].len; k++)
				sink += ((const uint8_t *)ev[i].data)[k];
		}
		if (n <= 0)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wt_link fake[2];
	wt_link_t *rel[2] = {NULL, NULL};
	static uint8_t msg[512];
	struct iovec iov = {msg, sizeof(msg)};

	for (int r = 0; r < 2; r++) {
		free(fake[r].q);
		memset(&fake[r], 0, sizeof(fake[r]));
		fake[r].base.ops = &fz_ops;
		fake[r].base.max_frame = FZ_MTU;
		fake[r].rank = r;
		fake[r].peer = &fake[1 - r];
		fake[r].q = calloc(FZ_QCAP, sizeof(struct qframe));
		if (fake[r].q == NULL)
			return 0;
	}
	for (int r = 0; r < 2; r++) {
		wt_rel_config_t rc = {.rank = r, .size = 2, .isn = 1000};

		memset(rc.key.key, 7, sizeof(rc.key.key));
		if (wt_rel_wrap(&fake[r], &rc, &rel[r]) != WEFT_OK)
			goto out;
		wt_link_ops(rel[r])->connect(rel[r], 1 - r, NULL, 0);
	}
	size_t mf = wt_link_max_frame(rel[0]);

	/* handshake and a little real traffic both ways */
	for (int i = 0; i < 8; i++) {
		if (i == 4) {
			wt_link_ops(rel[0])->send(rel[0], 1, &iov, 1, NULL);
			wt_link_ops(rel[1])->send(rel[1], 0, &iov, 1, NULL);
		}
		pump(rel[0], mf);
		pump(rel[1], mf);
	}
	/* Records: flags, 2-byte length, bytes. */
	while (size >= 3) {
		uint8_t fl = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > FZ_MTU)
			len = FZ_MTU;
		struct qframe *f = q_push(&fake[0]);

		if (f != NULL) {
			memcpy(f->data, data, len);
			f->len = len;
			if ((fl & 1) && len >= WT_REL_HDR_LEN) {
				wt_rel_hdr_t h, live;

				memcpy(&h, data, sizeof(h) < len ? sizeof(h) : len);
				h.version = WT_REL_WIRE_VERSION;
				h.len = (uint32_t)(len - WT_REL_HDR_LEN);
				if ((fl & 2) && fake[1].last_len >= WT_REL_HDR_LEN &&
				    wt_rel_hdr_decode(fake[1].last_sent, fake[1].last_len, &live) ==
					NULL) {
					h.src_epoch = live.src_epoch;
					h.dst_epoch = live.dst_epoch;
					h.src = 1;
					h.dst = 0;
					if (fl & 4)
						h.seq = live.seq + (h.seq & 0x3ff) - 0x200;
					if (fl & 8)
						h.ack = live.ack + (h.ack & 0xff) - 0x80;
				}
				h.payload_crc = len > WT_REL_HDR_LEN
						    ? wt_util_crc32c(0, f->data + WT_REL_HDR_LEN,
								     len - WT_REL_HDR_LEN)
						    : 0;
				wt_rel_hdr_encode(&h, f->data);
			}
		}
		data += len;
		size -= len;
		if (fl & 16)
			wt_link_ops(rel[1])->send(rel[1], 0, &iov, 1, NULL);
		if (fl & 32)
			wt_link_ops(rel[0])->send(rel[0], 1, &iov, 1, NULL);
		pump(rel[0], mf);
		if (fl & 64)
			pump(rel[1], mf);
	}
	pump(rel[0], mf);
	pump(rel[1], mf);
out:
	for (int r = 0; r < 2; r++) {
		if (rel[r] != NULL)
			wt_link_ops(rel[r])->close(rel[r]);
		free(fake[r].q);
		fake[r].q = NULL;
	}
	return 0;
}
