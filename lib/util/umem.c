/* weft_mem_alloc's regions (lib/util): a process-wide table of memfd-backed mappings, kept
 * sorted by address so that a collective finds its buffers' region in O(log n). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/util/log.h"
#include "lib/util/umem.h"

typedef struct {
	uintptr_t base;
	size_t len;
	uint64_t id;
	int fd;
} umem_region_t;

static pthread_mutex_t umem_lock = PTHREAD_MUTEX_INITIALIZER;
static umem_region_t *umem_tab;
static size_t umem_n, umem_cap;
/* umem_n, readable without the lock: a process that never allocated pays one load. */
static _Atomic size_t umem_count;
static uint64_t umem_next_id = 1;

/* Index of the last region whose base is <= addr, or -1. Lock held. */
static long umem_below(uintptr_t addr)
{
	size_t lo = 0, hi = umem_n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (umem_tab[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static weft_status_t umem_insert(const umem_region_t *r)
{
	long at;

	if (umem_n == umem_cap) {
		size_t cap = umem_cap ? umem_cap * 2 : 16;
		umem_region_t *t = realloc(umem_tab, cap * sizeof(*t));

		if (t == NULL)
			return WEFT_ERR_NO_MEMORY;
		umem_tab = t;
		umem_cap = cap;
	}
	at = umem_below(r->base) + 1;
	memmove(&umem_tab[at + 1], &umem_tab[at], (umem_n - (size_t)at) * sizeof(*umem_tab));
	umem_tab[at] = *r;
	umem_n++;
	return WEFT_OK;
}

weft_status_t wt_util_umem_alloc(size_t bytes, void **ptr)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	umem_region_t r;
	void *m;
	weft_status_t st;

	if (ptr == NULL || bytes == 0 || page <= 0) {
		WT_ERROR("weft_mem_alloc: %s", ptr == NULL ? "NULL ptr" : "0 bytes");
		return WEFT_ERR_INVALID_ARG;
	}
	if (bytes > SIZE_MAX - (size_t)page || bytes > (size_t)INT64_MAX / 2) {
		WT_ERROR("weft_mem_alloc: %zu bytes is too large", bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	len = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
	r.fd = memfd_create(WT_UTIL_UMEM_NAME, MFD_CLOEXEC);
	if (r.fd < 0) {
		WT_ERROR("weft_mem_alloc: memfd_create failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	if (ftruncate(r.fd, (off_t)len) != 0) {
		WT_ERROR("weft_mem_alloc: sizing a memfd to %zu bytes failed: %s", len,
			 strerror(errno));
		close(r.fd);
		return errno == ENOMEM || errno == ENOSPC || errno == EFBIG ? WEFT_ERR_NO_MEMORY
									    : WEFT_ERR_SYSTEM;
	}
	/* Populated now, so neither the owner nor a peer faults page by page in a collective. */
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r.fd, 0);
	if (m == MAP_FAILED) {
		WT_ERROR("weft_mem_alloc: mapping %zu bytes failed: %s", len, strerror(errno));
		close(r.fd);
		return WEFT_ERR_NO_MEMORY;
	}
	r.base = (uintptr_t)m;
	r.len = len;
	pthread_mutex_lock(&umem_lock);
	r.id = umem_next_id++;
	st = umem_insert(&r);
	atomic_store_explicit(&umem_count, umem_n, memory_order_relaxed);
	pthread_mutex_unlock(&umem_lock);
	if (st != WEFT_OK) {
		WT_ERROR("weft_mem_alloc: out of memory for the region table");
		munmap(m, len);
		close(r.fd);
		return st;
	}
	*ptr = m;
	return WEFT_OK;
}

weft_status_t wt_util_umem_free(void *ptr)
{
	umem_region_t r;
	long at;

	if (ptr == NULL)
		return WEFT_OK;
	pthread_mutex_lock(&umem_lock);
	at = umem_below((uintptr_t)ptr);
	if (at < 0 || umem_tab[at].base != (uintptr_t)ptr) {
		pthread_mutex_unlock(&umem_lock);
		WT_ERROR("weft_mem_free: %p is not the start of a weft_mem_alloc region", ptr);
		return WEFT_ERR_INVALID_ARG;
	}
	r = umem_tab[at];
	memmove(&umem_tab[at], &umem_tab[at + 1], (umem_n - (size_t)at - 1) * sizeof(*umem_tab));
	umem_n--;
	atomic_store_explicit(&umem_count, umem_n, memory_order_relaxed);
	pthread_mutex_unlock(&umem_lock);
	/* A peer that still maps the region keeps its pages; ours go now. */
	munmap((void *)r.base, r.len);
	close(r.fd);
	return WEFT_OK;
}

void wt_util_umem_find(const void *buf, size_t len, wt_util_umem_desc_t *out)
{
	uintptr_t a = (uintptr_t)buf;
	long at;

	memset(out, 0, sizeof(*out));
	out->addr = (uint64_t)a;
	out->len = (uint64_t)len;
	out->fd = -1;
	if (buf == NULL)
		return;
	pthread_mutex_lock(&umem_lock);
	at = umem_below(a);
	if (at >= 0) {
		const umem_region_t *r = &umem_tab[at];

		if (a - r->base <= r->len && len <= r->len - (a - r->base)) {
			out->region = r->id;
			out->region_len = r->len;
			out->off = a - r->base;
			out->fd = r->fd;
		}
	}
	pthread_mutex_unlock(&umem_lock);
}

int wt_util_umem_contains(const void *buf, size_t len)
{
	wt_util_umem_desc_t d;

	if (buf == NULL || atomic_load_explicit(&umem_count, memory_order_relaxed) == 0)
		return 0;
	wt_util_umem_find(buf, len, &d);
	return d.region != 0;
}
