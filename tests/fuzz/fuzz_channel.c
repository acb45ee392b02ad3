/* libFuzzer target (tests/fuzz): arbitrary frames from a hostile peer into a channel.
 * A fake reliable link delivers the input, cut into frames, as traffic from rank 1 to a
 * channel of rank 0 that has receives (plain, reduce, rendezvous-sized) and sends (eager
 * and rendezvous) posted; the channel must reject what is malformed without crashing,
 * leaking or touching memory it does not own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/link.h"
#include "layers/channel/channel.h"

#define FZ_MAX_FRAME 4096

struct wt_link {
	wt_link_base_t base;
	const uint8_t *data; /* the rest of the input */
	size_t left;
};

static int fz_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	int n = 0;

	/* Each frame: 2-byte length (capped by what is left), then its bytes. */
	while (n < max && l->left >= 2) {
		size_t len = (size_t)l->data[0] | (size_t)l->data[1] << 8;

		l->data += 2;
		l->left -= 2;
		if (len > l->left)
			len = l->left;
		if (len > FZ_MAX_FRAME)
			len = FZ_MAX_FRAME;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_FRAME;
		ev[n].peer = 1;
		ev[n].data = l->data;
		ev[n].len = len;
		l->data += len;
		l->left -= len;
		n++;
	}
	return n;
}

static weft_status_t fz_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			     void *cookie)
{
	(void)l;
	(void)peer;
	(void)iov;
	(void)iovcnt;
	(void)cookie;
	return WEFT_OK;
}

static const wt_link_ops_t fz_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "fuzz",
    .caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED,
    .send = fz_send,
    .poll = fz_poll,
};

static void done(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	(void)st;
	(void)bytes;
	(void)msg;
	*(int *)arg = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wt_link link = {
	    .base = {.ops = &fz_ops, .max_frame = FZ_MAX_FRAME}, .data = data, .left = size};
	wt_chan_config_t cc = {.eager_limit = 256, .rank = 0, .size = 2};
	wt_chan_t *ch = NULL;
	static uint8_t small[64], red[64], big[8192], out[8192];
	int flags[5] = {0};
	wt_chan_op_t *ops[5] = {NULL};
	wt_chan_reduce_t rd = {.enabled = 1, .dtype = WEFT_FLOAT32, .op = WEFT_SUM};
	struct iovec sv = {.iov_base = out, .iov_len = 100};
	struct iovec bv = {.iov_base = out, .iov_len = sizeof(out)};

	if (wt_chan_create(&cc, &ch) != WEFT_OK)
		return 0;
	if (wt_chan_set_link(ch, 1, &link) != WEFT_OK) {
		wt_chan_destroy(ch);
		return 0;
	}
	/* Tags 1..3 are what a hostile frame most likely names after a little mutation. */
	wt_chan_post_recv(ch, 1, 1, small, sizeof(small), NULL, done, &flags[0], &ops[0]);
	wt_chan_post_recv(ch, 1, 2, red, sizeof(red), &rd, done, &flags[1], &ops[1]);
	wt_chan_post_recv(ch, 1, 3, big, sizeof(big), NULL, done, &flags[2], &ops[2]);
	wt_chan_post_send(ch, 1, 1, &sv, 1, done, &flags[3], &ops[3]);
	wt_chan_post_send(ch, 1, 4, &bv, 1, done, &flags[4], &ops[4]);
	for (int i = 0; i < 64 && link.left > 0; i++)
		wt_chan_progress(ch);
	wt_chan_progress(ch);
	for (int i = 0; i < 5; i++) {
		if (!flags[i] && ops[i] != NULL)
			wt_chan_cancel(ch, ops[i]);
	}
	wt_chan_progress(ch);
	wt_chan_destroy(ch);
	return 0;
}
