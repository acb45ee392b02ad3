/* Plain or streaming stores into shared memory (lib/util/stores.h).
 *
 * Plain stores leave a frame in cache for its consumer, but each first fetches its line,
 * which the consumer read last. When the two cores are far apart every line of every frame
 * makes that trip: on this VM the hypervisor runs the two vCPUs on different core complexes
 * for minutes at a time (a cache line then takes 170 ns from one to the other instead of 30),
 * and plain ring writes fall from 22-34 GB/s to 2.4-4, while streaming stores, which fetch
 * nothing, run at 19-23 (14-18 when near) and a CMA get at 11 either way. A 2-rank 4 MiB
 * alltoall took 1.24-1.46 ms instead of 0.21-0.40 in such periods.
 *
 * So the producer times its large frames: the way in use, and every so often one frame
 * the other way (a trial). It switches ways once a trial runs at more than 1.5 times the
 * median of the last WT_UTIL_STORES_RECENT frames of the way in use. Either way must win
 * by half: a streamed frame's consumer reads it from memory, which the producer's clock
 * does not see, and a plain trial right after streamed frames finds its lines in no core's
 * cache and runs fast where steady plain frames would not (4 ranks on 2 far vCPUs, a
 * 1 MiB slot publish: plain trials at 27-40 GB/s among streamed frames at 21-31, plain
 * frames at 14-20 once in use; with plain taking over at half of streaming's best, the
 * way flipped every few frames). The median, not the best: frames of one round are often
 * bimodal (a 4 MiB broadcast of 4 ranks on 2 far vCPUs wrote three parts of four at 5-7
 * GB/s and the fourth at 11-31, so the best of four was always the fast one, and
 * streaming, at 11-26 and twice as fast end to end, never took over); a frame preempted
 * mid-copy, or one fast outlier, moves the median little, and the last few frames only
 * count (the vCPUs move while a round runs). Trials come WT_UTIL_STORES_TRIAL_MIN frames
 * apart after a switch and twice as far after each trial that keeps the way, up to
 * _TRIAL_MAX: in steady state a slow trial frame costs at most a few percent (a plain one
 * while far: 5x a frame in 256). */
#include <stdio.h>
#include <string.h>

#include "lib/util/copy.h"
#include "lib/util/env.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"

int wt_util_stores_pick(wt_util_stores_t *w, int *trial)
{
	*trial = 0;
	if (w->forced != WT_UTIL_STORES_AUTO)
		return w->forced == WT_UTIL_STORES_STREAM;
	if (w->trial_every == 0)
		w->trial_every = WT_UTIL_STORES_TRIAL_MIN;
	if (++w->timed >= w->trial_every) {
		*trial = 1;
		return !w->nt;
	}
	return w->nt;
}

/* The median rate of the recent frames of the way in use (0 if none yet). */
static uint64_t recent_median(const wt_util_stores_t *w)
{
	uint32_t v[WT_UTIL_STORES_RECENT];
	unsigned n = w->nrecent < WT_UTIL_STORES_RECENT ? w->nrecent : WT_UTIL_STORES_RECENT;

	if (n == 0)
		return 0;
	memcpy(v, w->recent, n * sizeof(v[0]));
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint32_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : ((uint64_t)v[n / 2 - 1] + v[n / 2]) / 2;
}

void wt_util_stores_done(wt_util_stores_t *w, int trial, uint64_t bytes, uint64_t ns)
{
	uint64_t rate = bytes * 1000u / (ns ? ns : 1);

	if (w->forced != WT_UTIL_STORES_AUTO)
		return;
	if (rate > UINT32_MAX)
		rate = UINT32_MAX;
	if (!trial) {
		w->recent[w->nrecent++ % WT_UTIL_STORES_RECENT] = (uint32_t)rate;
		return;
	}
	int better = 2 * rate > 3 * recent_median(w);

	if (better) {
		w->nt = !w->nt;
		w->switches++;
		w->trial_every = WT_UTIL_STORES_TRIAL_MIN;
		/* the trial is the first frame of the way now in use */
		memset(w->recent, 0, sizeof(w->recent));
		w->recent[0] = (uint32_t)rate;
		w->nrecent = 1;
	} else if (w->trial_every < WT_UTIL_STORES_TRIAL_MAX) {
		w->trial_every *= 2;
	}
	w->timed = 0;
}

weft_status_t wt_util_stores_setting(int *forced, char *err, size_t errlen)
{
	const char *v = wt_util_env_str("WEFT_SHM_STORES");

	*forced = WT_UTIL_STORES_AUTO;
	if (v == NULL || strcmp(v, "auto") == 0)
		return WEFT_OK;
	if (strcmp(v, "plain") == 0) {
		*forced = WT_UTIL_STORES_PLAIN;
		return WEFT_OK;
	}
	if (strcmp(v, "stream") == 0) {
		*forced = WT_UTIL_STORES_STREAM;
		return WEFT_OK;
	}
	snprintf(err, errlen, "WEFT_SHM_STORES='%.40s' is not one of auto, plain, stream", v);
	return WEFT_ERR_INVALID_ARG;
}

static void copy_pieces(uint8_t *dst, const struct iovec *iov, int iovcnt, int nt)
{
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		if (nt)
			wt_util_copy_stream_unfenced(dst, iov[i].iov_base, iov[i].iov_len);
		else
			wt_util_copy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	if (nt)
		wt_util_copy_fence();
}

int wt_util_stores_copyv(wt_util_stores_t *w, void *dst, const struct iovec *iov, int iovcnt,
			 size_t len)
{
	int trial, way;
	uint64_t t0, switches;

	if (w == NULL || len < WT_UTIL_STORES_MIN_COPY) {
		copy_pieces(dst, iov, iovcnt, 0);
		return 0;
	}
	switches = w->switches;
	way = wt_util_stores_pick(w, &trial);
	t0 = wt_util_time_ns();
	copy_pieces(dst, iov, iovcnt, way);
	wt_util_stores_done(w, trial, len, wt_util_time_ns() - t0);
	return w->switches != switches;
}

void wt_util_stores_copy(wt_util_stores_t *w, void *dst, const void *src, size_t len)
{
	struct iovec iov = {(void *)(uintptr_t)src, len};

	/* The usual small copy without building pieces to walk (a slot call's few bytes). */
	if (w == NULL || len < WT_UTIL_STORES_MIN_COPY) {
		wt_util_copy(dst, src, len);
		return;
	}
	(void)wt_util_stores_copyv(w, dst, &iov, 1, len);
}
