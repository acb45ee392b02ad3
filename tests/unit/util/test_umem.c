/* Unit tests for lib/util/umem.c (weft_mem_alloc's regions): page rounding and zeroing,
 * wt_util_umem_find inside, across and outside regions, the sorted table under many regions
 * and interleaved frees, the error paths, threads, and another process mapping a region
 * through /proc/<pid>/fd/<fd>. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <weft/weft.h>
#include "lib/util/umem.h"

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static int all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* The desc of [buf, buf + len) names a region: id, size, offset and a weft-mem memfd. */
static wt_util_umem_desc_t find_in(const void *buf, size_t len, const void *base, size_t region_len)
{
	wt_util_umem_desc_t d;

	memset(&d, 0xa5, sizeof(d));
	wt_util_umem_find(buf, len, &d);
	assert_int_equal(d.addr, (uint64_t)(uintptr_t)buf);
	assert_int_equal(d.len, len);
	assert_true(d.region != 0);
	assert_int_equal(d.region_len, region_len);
	assert_int_equal(d.off, (uint64_t)((const uint8_t *)buf - (const uint8_t *)base));
	assert_true(d.fd >= 0);
	assert_int_equal(d.reserved, 0);
	return d;
}

static void find_none(const void *buf, size_t len)
{
	wt_util_umem_desc_t d;

	memset(&d, 0xa5, sizeof(d));
	wt_util_umem_find(buf, len, &d);
	assert_int_equal(d.addr, (uint64_t)(uintptr_t)buf);
	assert_int_equal(d.len, len);
	assert_int_equal(d.region, 0);
	assert_int_equal(d.region_len, 0);
	assert_int_equal(d.off, 0);
	assert_int_equal(d.fd, -1);
	assert_int_equal(d.reserved, 0);
}

/* The fd really is the region: a memfd named weft-mem, of region_len bytes, close-on-exec. */
static void fd_is_region(const wt_util_umem_desc_t *d)
{
	char path[64], target[128];
	const char want[] = "/memfd:" WT_UTIL_UMEM_NAME " (deleted)";
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)d->fd);
	n = readlink(path, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, want);
	assert_int_equal(fstat(d->fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal((uint64_t)st.st_size, d->region_len);
	assert_true(fcntl(d->fd, F_GETFD) & FD_CLOEXEC);
}

static void test_alloc_rounds_and_zeroes(void **state)
{
	static const size_t sizes[] = {1, 100, 4095, 4096, 4097, 3 * 4096 + 5, 1 << 20};
	wt_util_umem_desc_t prev = {0};

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t want = (sizes[k] + page() - 1) / page() * page();
		uint8_t *p = NULL;
		wt_util_umem_desc_t d;

		assert_int_equal(weft_mem_alloc((void **)&p, sizes[k]), WEFT_OK);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % page(), 0);
		assert_true(all_zero(p, want));
		/* The whole rounded length is ours to write. */
		memset(p, 0x5c, want);
		d = find_in(p, want, p, want);
		fd_is_region(&d);
		/* Ids grow and are never reused, even for a region at a freed one's address. */
		assert_true(d.region > prev.region);
		/* Not one byte more than the rounded length. */
		find_none(p, want + 1);
		prev = d;
		assert_int_equal(weft_mem_free(p), WEFT_OK);
	}
	/* A freed region's memory comes back zeroed in the next one. */
	{
		uint8_t *a = NULL, *b = NULL;

		assert_int_equal(wt_util_umem_alloc(8 * page(), (void **)&a), WEFT_OK);
		memset(a, 0xff, 8 * page());
		assert_int_equal(wt_util_umem_free(a), WEFT_OK);
		assert_int_equal(wt_util_umem_alloc(8 * page(), (void **)&b), WEFT_OK);
		assert_true(all_zero(b, 8 * page()));
		assert_int_equal(wt_util_umem_free(b), WEFT_OK);
	}
}

static void test_find(void **state)
{
	size_t len = 4 * page();
	uint8_t *p = NULL;
	int x;
	uint8_t *heap = malloc(64);

	(void)state;
	assert_non_null(heap);
	assert_int_equal(weft_mem_alloc((void **)&p, len), WEFT_OK);
	/* Inside: the start, the middle, exactly up to the end, one byte at the end. */
	find_in(p, len, p, len);
	find_in(p, 1, p, len);
	find_in(p + 100, 50, p, len);
	find_in(p + page() + 3, 2 * page(), p, len);
	find_in(p + len - 10, 10, p, len);
	find_in(p + len - 1, 1, p, len);
	find_in(p + 17, 0, p, len);
	/* Across the end. */
	find_none(p + len - 10, 11);
	find_none(p, len + 1);
	find_none(p + len - 1, SIZE_MAX);
	find_none(p + 1, SIZE_MAX);
	/* Outside: the heap, the stack, NULL (with and without a length). */
	find_none(heap, 64);
	find_none(&x, sizeof(x));
	find_none(NULL, 0);
	find_none(NULL, 10);
	assert_int_equal(weft_mem_free(p), WEFT_OK);
	/* Gone once freed. */
	find_none(p, 1);
	find_none(p + 100, 50);
	free(heap);
}

/* Many regions of different sizes: each address maps to its own region, also after frees
 * in between and new regions interleaved with the survivors. */
#define MANY 300

struct many {
	uint8_t *p;
	size_t len;
	uint64_t id;
};

static void check_many(const struct many *m, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		size_t off = (size_t)(seed * 2654435761u + (unsigned)i * 40503u) % m[i].len;
		size_t len = (m[i].len - off) / 2;
		wt_util_umem_desc_t d;

		if (m[i].p == NULL)
			continue;
		d = find_in(m[i].p + off, len, m[i].p, m[i].len);
		assert_int_equal(d.region, m[i].id);
		/* Straddling into whatever follows is never one region. */
		find_none(m[i].p + off, m[i].len - off + 1);
		assert_int_equal(m[i].p[0], (uint8_t)i);
		assert_int_equal(m[i].p[m[i].len - 1], (uint8_t)i);
	}
}

static void alloc_many(struct many *m, int i)
{
	m[i].len = ((size_t)(i * 7) % 5 + 1) * page();
	assert_int_equal(weft_mem_alloc((void **)&m[i].p, m[i].len - (size_t)(i % 3)), WEFT_OK);
	m[i].id = find_in(m[i].p, 1, m[i].p, m[i].len).region;
	m[i].p[0] = (uint8_t)i;
	m[i].p[m[i].len - 1] = (uint8_t)i;
}

static void test_many_regions(void **state)
{
	struct many *m = calloc(MANY, sizeof(*m));
	uint8_t *gone[MANY];
	int ngone = 0;

	(void)state;
	assert_non_null(m);
	for (int i = 0; i < MANY; i++)
		alloc_many(m, i);
	for (int i = 0; i < MANY; i++)
		for (int j = i + 1; j < MANY; j++)
			assert_true(m[i].id != m[j].id);
	check_many(m, MANY, 1);
	/* Every third, then the survivors are still found and the freed are not. */
	for (int i = 0; i < MANY; i += 3) {
		gone[ngone++] = m[i].p;
		assert_int_equal(weft_mem_free(m[i].p), WEFT_OK);
		m[i].p = NULL;
	}
	check_many(m, MANY, 2);
	for (int k = 0; k < ngone; k++)
		find_none(gone[k], 1);
	/* New regions in the holes (the kernel reuses the addresses), interleaved with frees
	 * of others, from the back. */
	for (int i = 0; i < MANY; i += 3) {
		alloc_many(m, i);
		if (MANY - 1 - i > 0 && m[MANY - 1 - i].p != NULL && (MANY - 1 - i) % 3 != 0) {
			assert_int_equal(weft_mem_free(m[MANY - 1 - i].p), WEFT_OK);
			m[MANY - 1 - i].p = NULL;
		}
	}
	check_many(m, MANY, 3);
	for (int i = 0; i < MANY; i++) {
		if (m[i].p != NULL && (i * 11) % 2 == 0) {
			assert_int_equal(weft_mem_free(m[i].p), WEFT_OK);
			m[i].p = NULL;
		}
	}
	check_many(m, MANY, 4);
	for (int i = MANY - 1; i >= 0; i--)
		assert_int_equal(weft_mem_free(m[i].p), WEFT_OK); /* NULL ones too */
	free(m);
}

static void test_errors(void **state)
{
	uint8_t *p = NULL;
	void *q = (void *)&q;
	uint8_t *heap = malloc(4096);

	(void)state;
	assert_non_null(heap);
	/* 0 bytes, NULL ptr, absurd sizes: INVALID_ARG and *ptr untouched. */
	assert_int_equal(weft_mem_alloc(&q, 0), WEFT_ERR_INVALID_ARG);
	assert_ptr_equal(q, (void *)&q);
	assert_int_equal(weft_mem_alloc(NULL, 4096), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_alloc(NULL, 0), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_alloc(&q, SIZE_MAX), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_alloc(&q, SIZE_MAX - page() + 2), WEFT_ERR_INVALID_ARG);
	assert_ptr_equal(q, (void *)&q);
	assert_int_equal(wt_util_umem_alloc(0, &q), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_util_umem_alloc(1, NULL), WEFT_ERR_INVALID_ARG);
	/* free(NULL) is a no-op. */
	assert_int_equal(weft_mem_free(NULL), WEFT_OK);
	assert_int_equal(wt_util_umem_free(NULL), WEFT_OK);
	assert_int_equal(weft_mem_alloc((void **)&p, 3 * page()), WEFT_OK);
	memset(p, 7, 3 * page());
	/* Not the start of a region: inside, at the next page, one past the end. */
	assert_int_equal(weft_mem_free(p + 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_free(p + page()), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_free(p - 1), WEFT_ERR_INVALID_ARG);
	/* Unknown pointers: the heap, the stack. */
	assert_int_equal(weft_mem_free(heap), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_mem_free(&q), WEFT_ERR_INVALID_ARG);
	/* The region survived all of that, mapped and intact. */
	find_in(p, 3 * page(), p, 3 * page());
	for (size_t i = 0; i < 3 * page(); i++)
		assert_int_equal(p[i], 7);
	assert_int_equal(weft_mem_free(p), WEFT_OK);
	/* Twice: the second time it is unknown. */
	assert_int_equal(weft_mem_free(p), WEFT_ERR_INVALID_ARG);
	free(heap);
}

/* Threads allocating, checking and freeing at once: the table stays consistent. */
#define THREADS 4
#define PER_THREAD 200

static void *thread_body(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	uint8_t *mine[16] = {0};
	size_t bad = 0;

	for (int it = 0; it < PER_THREAD; it++) {
		int k = it % 16;
		wt_util_umem_desc_t d;

		if (mine[k] != NULL) {
			wt_util_umem_find(mine[k] + 5, 10, &d);
			bad += d.region == 0 || d.off != 5 || d.region_len != page() ||
			       mine[k][0] != (uint8_t)(t * 16 + (uintptr_t)k);
			bad += weft_mem_free(mine[k]) != WEFT_OK;
			mine[k] = NULL;
		}
		if (weft_mem_alloc((void **)&mine[k], 1) != WEFT_OK) {
			bad++;
			continue;
		}
		mine[k][0] = (uint8_t)(t * 16 + (uintptr_t)k);
	}
	for (int k = 0; k < 16; k++)
		bad += weft_mem_free(mine[k]) != WEFT_OK;
	return (void *)bad;
}

static void test_threads(void **state)
{
	pthread_t th[THREADS];

	(void)state;
	for (uintptr_t t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, thread_body, (void *)t), 0);
	for (int t = 0; t < THREADS; t++) {
		void *bad = NULL;

		assert_int_equal(pthread_join(th[t], &bad), 0);
		assert_ptr_equal(bad, NULL);
	}
}

/* Another process maps a region through /proc/<owner>/fd/<fd> (as the shm driver does):
 * each sees the other's writes. The child maps at an address of its own, so it does not
 * see them through the mapping fork gave it. */
static int child_side(pid_t owner, const wt_util_umem_desc_t *d, int rd, int wr)
{
	char path[64], c;
	uint8_t *m;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)owner, (int)d->fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 10;
	m = mmap(NULL, d->region_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 11;
	if ((uint64_t)(uintptr_t)m == d->addr - d->off)
		return 12; /* must be a mapping of its own */
	for (size_t i = 0; i < d->region_len; i++)
		if (m[i] != (uint8_t)(i * 7 + 1))
			return 13;
	for (size_t i = 0; i < d->region_len / 2; i++)
		m[i] = (uint8_t)(i * 3 + 2);
	if (write(wr, "w", 1) != 1 || read(rd, &c, 1) != 1 || c != 'p')
		return 14;
	for (size_t i = d->region_len / 2; i < d->region_len; i++)
		if (m[i] != (uint8_t)(i ^ 0x5a))
			return 15;
	munmap(m, d->region_len);
	return 0;
}

static void test_fork_maps(void **state)
{
	size_t len = 64 * page() + 1;
	uint8_t *p = NULL;
	wt_util_umem_desc_t d;
	int up[2], down[2], status;
	pid_t pid, parent = getpid();
	char c;

	(void)state;
	assert_int_equal(weft_mem_alloc((void **)&p, len), WEFT_OK);
	len = 65 * page();
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + 1);
	d = find_in(p, len, p, len);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(child_side(parent, &d, down[0], up[1]));
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 'w');
	for (size_t i = 0; i < len / 2; i++)
		if (p[i] != (uint8_t)(i * 3 + 2))
			fail_msg("byte %zu: the child's write is not seen here", i);
	for (size_t i = len / 2; i < len; i++)
		assert_int_equal(p[i], (uint8_t)(i * 7 + 1));
	for (size_t i = len / 2; i < len; i++)
		p[i] = (uint8_t)(i ^ 0x5a);
	assert_int_equal(write(down[1], "p", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(up[0]);
	close(down[1]);
	assert_int_equal(weft_mem_free(p), WEFT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alloc_rounds_and_zeroes),
	    cmocka_unit_test(test_find),
	    cmocka_unit_test(test_many_regions),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_fork_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
