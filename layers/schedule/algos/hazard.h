/* Region hazard tracking for algorithm builders (layers/schedule): turns "this step reads
 * / writes region R" into the dependency edges a plan needs, including write-after-read
 * edges so nothing overwrites a region a posted send may still be reading. */
#ifndef WT_SCHED_HAZARD_H
#define WT_SCHED_HAZARD_H

#include "layers/schedule/plan.h"

#define WT_SCHED_HAZ_READERS 8
/* Enough room for the deps wt_sched_haz_write_deps can produce. */
#define WT_SCHED_HAZ_MAX_DEPS (WT_SCHED_HAZ_READERS + 1)

typedef struct {
	int writer; /* last step that wrote the region, -1 if none */
	int nreaders;
	int readers[WT_SCHED_HAZ_READERS]; /* steps that read it since that write */
} wt_sched_haz_t;

static inline void wt_sched_haz_init(wt_sched_haz_t *h)
{
	h->writer = -1;
	h->nreaders = 0;
}

/* A reader waits for the last writer. Appends to deps, returns the new count. */
static inline int wt_sched_haz_read_deps(const wt_sched_haz_t *h, int *deps, int n)
{
	if (h->writer >= 0)
		deps[n++] = h->writer;
	return n;
}

/* A writer waits for the last writer and for every reader since. */
static inline int wt_sched_haz_write_deps(const wt_sched_haz_t *h, int *deps, int n)
{
	n = wt_sched_haz_read_deps(h, deps, n);
	for (int i = 0; i < h->nreaders; i++)
		deps[n++] = h->readers[i];
	return n;
}

static inline void wt_sched_haz_read(wt_sched_plan_t *p, wt_sched_haz_t *h, int vid)
{
	if (vid < 0)
		return;
	if (h->nreaders == WT_SCHED_HAZ_READERS) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "algorithm bug: more than %d readers",
			      WT_SCHED_HAZ_READERS);
		return;
	}
	h->readers[h->nreaders++] = vid;
}

static inline void wt_sched_haz_write(wt_sched_haz_t *h, int vid)
{
	if (vid < 0)
		return;
	h->writer = vid;
	h->nreaders = 0;
}

#endif
