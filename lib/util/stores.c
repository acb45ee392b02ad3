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
 * Where the cores are known to be near (lib/util/place.h: stamps on large frames and slots,
 * a core per rank), plain stores are used, untimed: the producer's clock cannot see that a
 * streamed frame's consumer then reads it from memory instead of the shared cache. With the
 * vCPUs near, a 2-rank allgather of 4 MiB took 174-209 us by plain stores and 322-367 by
 * streaming ones, and timing had chosen streaming (first plain frames ran at 10 GB/s, cold,
 * a streaming trial at 16, and plain trials later never won by half): 184-321 us. Near
 * vCPUs favoured plain stores in every case measured (16 and 64 MiB included). Where they
 * are known to be far, streaming stores are used, untimed: the clock errs there the other
 * way, a plain trial now and then looking fast to the producer while its consumer fetches
 * every line from the other core complex (plain frames forced while far: a 2-rank broadcast
 * of 256 KiB 107-114 us against 28-30 streamed); as timing chose, that broadcast took 60-91
 * us instead of 22-31 in 7 of 13 far launches of one period. 2 ranks, the five
 * collectives at 64 KiB-1 MiB by x2, 20 calls after 5, 76-80 launches of each way in turn,
 * all while far: streaming untimed against timing, geometric mean 0.974, no cell slower by
 * more than 0.5% (broadcast of 1 MiB 57.8 us against 64.7, reduce_scatter of 256 KiB 19.2
 * against 21.8, broadcast of 256 KiB 21.0 against 21.3). An earlier session had measured the
 * broadcast of 256 KiB at 16-18 us as timing chose and 22-25 streamed; it did not recur.
 *
 * Copies of 4 to 32 KiB (eager frames, the fragments of a stream, slot publishes) go by
 * plain stores while those run fast and by streaming ones while they do not: one plain copy
 * in 8 is timed, two slower than 4 GB/s in a row switch (near, a plain 8 KiB publish took
 * 0.7-1.2 us; far, 2.3-2.7). Back, at every 64th: where either side's estimate of the
 * placement says near (a plain trial right after streamed copies ran at 2 GB/s near too,
 * so a trial cannot tell), else after a plain trial faster than that. Far, in one process
 * alternating the ways per block of calls, plain / streaming, 2 ranks: allgather of 16 KiB
 * (8 KiB blocks) 5.7-6.3 / 2.0-2.5 us, of 8 KiB 1.9-3.1 / 1.5-1.6, broadcast of 8 KiB 3.6-5.1
 * / 1.3-1.4, alltoall of 16 KiB 4.8-6.2 / 1.9-2.3, allreduce of 16 KiB 9.1-12.4 / 6.0-6.8;
 * near, the other way round by 10-25% (broadcast of 8 KiB 1.03 / 1.30, allreduce of 16 KiB
 * 3.99 / 4.97); at 2 KiB neither way won. The placement alone could not decide: a rank that
 * always comes late to an exchange samples seldom and estimated near cores at 260-440 ns.
 *
 * Otherwise the producer times its large frames: the way in use, and every so often one frame
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
#include "lib/util/place.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"

static int timed(const wt_util_stores_t *w)
{
	return w->forced == WT_UTIL_STORES_AUTO || w->forced == WT_UTIL_STORES_TIMED;
}

/* The way in use becomes nt: recent rates start over, trials come soon. */
static void take_way(wt_util_stores_t *w, int nt)
{
	w->nt = nt;
	w->switches++;
	w->trial_every = WT_UTIL_STORES_TRIAL_MIN;
	w->timed = 0;
	memset(w->recent, 0, sizeof(w->recent));
	w->nrecent = 0;
}

int wt_util_stores_pick_placed(wt_util_stores_t *w, int far, int *trial)
{
	*trial = 0;
	if (!timed(w))
		return w->forced == WT_UTIL_STORES_STREAM;
	/* a known placement under AUTO: plain near, streaming far, untimed */
	if ((far == 0 || far == 1) && w->forced == WT_UTIL_STORES_AUTO) {
		if (w->nt != far)
			take_way(w, far);
		return far;
	}
	if (w->trial_every == 0)
		w->trial_every = WT_UTIL_STORES_TRIAL_MIN;
	if (++w->timed >= w->trial_every) {
		*trial = 1;
		return !w->nt;
	}
	return w->nt;
}

int wt_util_stores_pick_mid(wt_util_stores_t *w, size_t len, int *timed)
{
	*timed = 0;
	if (w->forced != WT_UTIL_STORES_AUTO || len < WT_UTIL_STORES_MID_MIN ||
	    len >= WT_UTIL_STORES_MIN_COPY)
		return 0;
	w->mid_n++;
	if (w->mid_n % (w->mid_nt ? WT_UTIL_STORES_MID_TRIAL : WT_UTIL_STORES_MID_EVERY) == 0) {
		/* a plain trial right after streamed copies runs slow even with the cores near
		 * (2 GB/s for 8 KiB), so near by either side's view ends streaming at once */
		if (w->mid_nt && wt_util_place_near_any_now()) {
			w->mid_nt = 0;
			w->mid_slow = 0;
			return 0;
		}
		*timed = 1;
		return 0;
	}
	w->mid_streamed += (uint64_t)w->mid_nt;
	return w->mid_nt;
}

void wt_util_stores_mid_done(wt_util_stores_t *w, size_t len, uint64_t ns)
{
	if ((uint64_t)len < ns * WT_UTIL_STORES_MID_SLOW) {
		if (++w->mid_slow >= 2)
			w->mid_nt = 1;
	} else {
		w->mid_slow = 0;
		w->mid_nt = 0;
	}
}

int wt_util_stores_pick(wt_util_stores_t *w, int *trial)
{
	return wt_util_stores_pick_placed(w, -1, trial);
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

	if (!timed(w))
		return;
	if (rate > UINT32_MAX)
		rate = UINT32_MAX;
	if (!trial) {
		w->recent[w->nrecent++ % WT_UTIL_STORES_RECENT] = (uint32_t)rate;
		return;
	}
	int better = 2 * rate > 3 * recent_median(w);

	if (better) {
		take_way(w, !w->nt);
		/* the trial is the first frame of the way now in use */
		w->recent[0] = (uint32_t)rate;
		w->nrecent = 1;
		return;
	}
	if (w->trial_every < WT_UTIL_STORES_TRIAL_MAX)
		w->trial_every *= 2;
	w->timed = 0;
}

weft_status_t wt_util_stores_setting(int *forced, char *err, size_t errlen)
{
	const char *v = wt_util_env_str("WEFT_SHM_STORES");

	*forced = WT_UTIL_STORES_AUTO;
	if (v == NULL || strcmp(v, "auto") == 0)
		return WEFT_OK;
	if (strcmp(v, "timed") == 0) {
		*forced = WT_UTIL_STORES_TIMED;
		return WEFT_OK;
	}
	if (strcmp(v, "plain") == 0) {
		*forced = WT_UTIL_STORES_PLAIN;
		return WEFT_OK;
	}
	if (strcmp(v, "stream") == 0) {
		*forced = WT_UTIL_STORES_STREAM;
		return WEFT_OK;
	}
	snprintf(err, errlen, "WEFT_SHM_STORES='%.40s' is not one of auto, timed, plain, stream",
		 v);
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
		int timed = 0;

		way = w != NULL ? wt_util_stores_pick_mid(w, len, &timed) : 0;
		if (!timed) {
			copy_pieces(dst, iov, iovcnt, way);
			return 0;
		}
		t0 = wt_util_time_ns();
		copy_pieces(dst, iov, iovcnt, 0);
		wt_util_stores_mid_done(w, len, wt_util_time_ns() - t0);
		return 0;
	}
	switches = w->switches;
	way = wt_util_stores_pick_placed(
	    w, w->forced == WT_UTIL_STORES_AUTO ? wt_util_place_far_now() : -1, &trial);
	t0 = wt_util_time_ns();
	copy_pieces(dst, iov, iovcnt, way);
	wt_util_stores_done(w, trial, len, wt_util_time_ns() - t0);
	return w->switches != switches;
}

void wt_util_stores_copy(wt_util_stores_t *w, void *dst, const void *src, size_t len)
{
	struct iovec iov = {(void *)(uintptr_t)src, len};

	/* The usual small copy without building pieces to walk (a slot call's few bytes). */
	if (w == NULL || len < WT_UTIL_STORES_MID_MIN) {
		wt_util_copy(dst, src, len);
		return;
	}
	(void)wt_util_stores_copyv(w, dst, &iov, 1, len);
}
