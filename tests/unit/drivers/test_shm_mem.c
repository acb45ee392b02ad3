/* Unit tests for the shm driver's one-sided ops on a peer's memory (tests/unit/drivers):
 * mem_map of a peer's weft_mem regions (validation, the per-peer cache and its LRU
 * replacement, fd reuse, a dead peer, close) and put (process_vm_writev). Two processes
 * with real shm links: the forked child is rank 1 and owns the memory, serving requests
 * that arrive as frames on its link; the parent is rank 0 and maps, writes and checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <weft/weft.h>
#include "drivers/link.h"
#include "tests/unit/drivers/fd_io.h"
#include "drivers/shm/shm_layout.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"
#include "lib/util/umem.h"

#define WAIT_S 30.0 /* generous: a loaded 2-core machine */
#define MAX_EV 16
#define NBUF 40	 /* the child's regions and heap buffers, by index */
#define UMAPS 16 /* the driver's cache size per peer (SHM_UMAPS) */
#define PUT_SEED 77

static const wt_link_ops_t *ops;
static int job_counter;

/* ---- the request protocol (one frame each way) ---- */

enum {
	C_ALLOC = 1, /* region idx of a bytes, filled with pattern b */
	C_FILL,	     /* refill region idx with pattern b */
	C_CHECK,     /* region idx holds pattern b? */
	C_FREE,	     /* free region idx */
	C_MALLOC,    /* heap buffer idx of a bytes, filled with 0xaa */
	C_CHECKPUT,  /* heap buffer idx: PUT_SEED's pattern in [a, a + b), 0xaa elsewhere? */
	C_FILE,	     /* a plain file of a bytes: its fd */
	C_MEMFD,     /* a memfd named "weft-mem2" of a bytes: its fd */
	C_EXIT,
};

struct req {
	uint32_t cmd, idx;
	uint64_t a, b;
};

struct rep {
	int32_t st; /* 0 ok, else which check failed */
	uint32_t pad;
	wt_util_umem_desc_t d;
	uint64_t x; /* C_CHECK*: first bad byte */
};

static uint8_t pattern(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 9) * 3 + 1);
}

/* ---- the child: rank 1, the owner ---- */

struct owner {
	wt_link_t *l;
	uint8_t *reg[NBUF];
	size_t reg_len[NBUF];
	uint8_t *heap[NBUF];
	size_t heap_len[NBUF];
};

static void child_reply(struct owner *o, const struct rep *r)
{
	struct iovec iov = {(void *)r, sizeof(*r)};

	while (ops->send(o->l, 0, &iov, 1, NULL) == WT_AGAIN)
		wt_util_sleep_ns(100000);
}

static int child_serve(struct owner *o, const struct req *q, struct rep *r)
{
	int fd;

	if (q->idx >= NBUF)
		return 90;
	switch (q->cmd) {
	case C_ALLOC:
		if (weft_mem_alloc((void **)&o->reg[q->idx], q->a) != WEFT_OK)
			return 1;
		o->reg_len[q->idx] = (q->a + 4095) / 4096 * 4096;
		/* fall through */
	case C_FILL:
		for (size_t i = 0; i < o->reg_len[q->idx]; i++)
			o->reg[q->idx][i] = pattern(q->b, i);
		wt_util_umem_find(o->reg[q->idx], o->reg_len[q->idx], &r->d);
		return r->d.region == 0 ? 2 : 0;
	case C_CHECK:
		for (size_t i = 0; i < o->reg_len[q->idx]; i++) {
			if (o->reg[q->idx][i] != pattern(q->b, i)) {
				r->x = i;
				return 3;
			}
		}
		return 0;
	case C_FREE:
		if (weft_mem_free(o->reg[q->idx]) != WEFT_OK)
			return 4;
		o->reg[q->idx] = NULL;
		return 0;
	case C_MALLOC:
		free(o->heap[q->idx]);
		o->heap[q->idx] = malloc(q->a);
		if (o->heap[q->idx] == NULL)
			return 5;
		o->heap_len[q->idx] = q->a;
		memset(o->heap[q->idx], 0xaa, q->a);
		wt_util_umem_find(o->heap[q->idx], q->a, &r->d);
		return 0;
	case C_CHECKPUT:
		for (size_t i = 0; i < o->heap_len[q->idx]; i++) {
			int in = i >= q->a && i - q->a < q->b;
			uint8_t want = in ? pattern(PUT_SEED, i - q->a) : 0xaa;

			if (o->heap[q->idx][i] != want) {
				r->x = i;
				return 6;
			}
		}
		return 0;
	case C_FILE: {
		char path[] = "/tmp/weft-shm-mem-XXXXXX";

		fd = mkstemp(path);
		if (fd < 0)
			return 7;
		unlink(path);
		if (ftruncate(fd, (off_t)q->a) != 0)
			return 8;
		r->d.fd = fd;
		return 0;
	}
	case C_MEMFD:
		fd = memfd_create(WT_UTIL_UMEM_NAME "2", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)q->a) != 0)
			return 9;
		r->d.fd = fd;
		return 0;
	default:
		return 91;
	}
}

static void child_loop(struct owner *o)
{
	wt_link_event_t ev[MAX_EV];
	uint64_t idle_since = wt_util_time_ns();

	for (;;) {
		int n = ops->poll(o->l, ev, MAX_EV), frames = 0;

		if (n < 0)
			_exit(20);
		for (int i = 0; i < n; i++) {
			struct req q;
			struct rep r;

			/* The parent closed its link: the end. */
			if (ev[i].type == WT_LINK_EV_PEER_ERROR)
				_exit(0);
			if (ev[i].type != WT_LINK_EV_FRAME)
				continue;
			if (ev[i].len != sizeof(q))
				_exit(22);
			memcpy(&q, ev[i].data, sizeof(q));
			frames++;
			if (q.cmd == C_EXIT) {
				ops->close(o->l);
				_exit(0);
			}
			memset(&r, 0, sizeof(r));
			r.d.fd = -1;
			r.st = child_serve(o, &q, &r);
			child_reply(o, &r);
		}
		if (frames > 0) {
			idle_since = wt_util_time_ns();
			continue;
		}
		/* The parent died without telling us. */
		if (wt_util_time_ns() - idle_since > (uint64_t)(4 * WAIT_S * 1e9))
			_exit(23);
		wt_util_sleep_ns(50000);
	}
}

static wt_link_config_t make_cfg(int rank, const char *job)
{
	wt_link_config_t c;

	memset(&c, 0, sizeof(c));
	c.rank = rank;
	c.size = 2;
	c.job_id = job;
	wt_util_key_from_token(&c.key, "tok");
	c.connect_timeout = WAIT_S;
	return c;
}

static void child_main(const char *job, int to_parent, int from_parent)
{
	wt_link_config_t c = make_cfg(1, job);
	struct owner o;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = child_link_up(ops, &c, &o.l, to_parent, from_parent);
	if (rc != 0)
		_exit(rc);
	close(to_parent);
	close(from_parent);
	child_loop(&o);
}

/* ---- the parent: rank 0 ---- */

struct fix {
	pid_t pid;
	wt_link_t *l;
	struct wt_shm_blob blob; /* the child's */
};

static int start_child(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	int up[2], down[2];
	char job[32];
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len = sizeof(blob);
	uint32_t plen;
	wt_link_config_t c;

	assert_non_null(f);
	snprintf(job, sizeof(job), "m%d-%d", (int)getpid(), job_counter++);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		close(up[0]);
		close(down[1]);
		child_main(job, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	c = make_cfg(0, job);
	assert_int_equal(ops->open(&c, &f->l), WEFT_OK);
	read_all_fd(up[0], &plen, 4);
	assert_true(plen == sizeof(f->blob));
	read_all_fd(up[0], blob, plen);
	memcpy(&f->blob, blob, sizeof(f->blob));
	assert_int_equal(f->blob.pid, f->pid);
	assert_int_equal(ops->connect(f->l, 1, blob, plen), WEFT_OK);
	assert_int_equal(ops->address(f->l, blob, &len), WEFT_OK);
	plen = (uint32_t)len;
	assert_int_equal(write(down[1], &plen, 4), 4);
	assert_int_equal(write(down[1], blob, len), (ssize_t)len);
	close(up[0]);
	close(down[1]);
	*state = f;
	return 0;
}

/* Exit status of the child, or -1 if it had to be killed. */
static int reap(pid_t pid)
{
	uint64_t t0 = wt_util_time_ns();
	int status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (wt_util_time_ns() - t0 > (uint64_t)(WAIT_S * 1e9)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		wt_util_sleep_ns(1000000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void send_req(struct fix *f, uint32_t cmd, uint32_t idx, uint64_t a, uint64_t b)
{
	struct req q = {cmd, idx, a, b};
	struct iovec iov = {&q, sizeof(q)};
	weft_status_t st;

	while ((st = ops->send(f->l, 1, &iov, 1, NULL)) == WT_AGAIN)
		wt_util_sleep_ns(100000);
	assert_int_equal(st, WEFT_OK);
}

static struct rep rpc(struct fix *f, uint32_t cmd, uint32_t idx, uint64_t a, uint64_t b)
{
	wt_link_event_t ev[MAX_EV];
	uint64_t t0 = wt_util_time_ns();
	struct rep r;

	send_req(f, cmd, idx, a, b);
	for (;;) {
		int n = ops->poll(f->l, ev, MAX_EV);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == WT_LINK_EV_PEER_ERROR)
				fail_msg("the child failed (status %d)", ev[i].status);
			if (ev[i].type != WT_LINK_EV_FRAME)
				continue;
			assert_int_equal(ev[i].len, sizeof(r));
			memcpy(&r, ev[i].data, sizeof(r));
			return r;
		}
		assert_true(wt_util_time_ns() - t0 < (uint64_t)(WAIT_S * 1e9));
		wt_util_sleep_ns(50000);
	}
}

/* The request must succeed in the child. */
static struct rep rpc_ok(struct fix *f, uint32_t cmd, uint32_t idx, uint64_t a, uint64_t b)
{
	struct rep r = rpc(f, cmd, idx, a, b);

	if (r.st != 0)
		fail_msg("child: request %u on %u failed: check %d at byte %llu", cmd, idx, r.st,
			 (unsigned long long)r.x);
	return r;
}

static int stop_child(void **state)
{
	struct fix *f = *state;

	if (f == NULL)
		return 0;
	if (f->l != NULL) {
		struct req q = {C_EXIT, 0, 0, 0};
		struct iovec iov = {&q, sizeof(q)};

		(void)ops->send(f->l, 1, &iov, 1, NULL);
	}
	if (f->pid > 0)
		assert_int_equal(reap(f->pid), 0);
	if (f->l != NULL)
		ops->close(f->l);
	free(f);
	return 0;
}

/* weft-mem mappings in this process (we allocate none: all are the child's regions). */
static int umem_maps(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(m);
	while (fgets(line, sizeof(line), m))
		n += strstr(line, "/memfd:" WT_UTIL_UMEM_NAME " (deleted)") != NULL;
	fclose(m);
	return n;
}

/* The inode of the child's fd: a mapping of it at base shows in /proc/self/maps. */
static unsigned long child_ino(const struct fix *f, int fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)f->pid, fd);
	assert_int_equal(stat(path, &st), 0);
	return (unsigned long)st.st_ino;
}

static int mapped_at(const void *base, unsigned long ino)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	assert_non_null(m);
	while (!found && fgets(line, sizeof(line), m)) {
		unsigned long lo, hi, off, i;
		char perms[8], dev[16];

		if (sscanf(line, "%lx-%lx %7s %lx %15s %lu", &lo, &hi, perms, &off, dev, &i) == 6)
			found = lo == (unsigned long)(uintptr_t)base && i == ino;
	}
	fclose(m);
	return found;
}

static void expect_pattern(const uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			fail_msg("byte %zu: got %u, want %u (pattern %llu)", i, p[i],
				 pattern(seed, i), (unsigned long long)seed);
}

/* A desc of [off, off + len) of the region d describes (as the executor publishes). */
static wt_util_umem_desc_t sub(wt_util_umem_desc_t d, uint64_t off, uint64_t len)
{
	d.addr += off;
	d.off = off;
	d.len = len;
	return d;
}

static uint8_t *map(struct fix *f, const wt_util_umem_desc_t *d)
{
	return ops->mem_map(f->l, 1, d);
}

/* Map, see the owner's bytes, write, the owner sees ours; and the other way again. */
static void test_map_roundtrip(void **state)
{
	struct fix *f = *state;
	size_t len = 3 * 4096;
	struct rep r = rpc_ok(f, C_ALLOC, 0, len - 5, 1);
	wt_util_umem_desc_t d = r.d, s;
	uint8_t *p, *q;

	assert_int_equal(d.region_len, len);
	assert_int_equal(d.off, 0);
	assert_int_equal(umem_maps(), 0);
	p = map(f, &d);
	assert_non_null(p);
	assert_true(mapped_at(p, child_ino(f, d.fd)));
	expect_pattern(p, len, 1);
	/* A buffer inside the region: base + off of the same mapping. */
	s = sub(d, 100, 50);
	q = map(f, &s);
	assert_ptr_equal(q, p + 100);
	s = sub(d, len - 1, 1);
	assert_ptr_equal(map(f, &s), p + len - 1);
	s = sub(d, len, 0);
	assert_ptr_equal(map(f, &s), p + len);
	assert_int_equal(umem_maps(), 1);
	/* Ours reach the owner... */
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(2, i);
	rpc_ok(f, C_CHECK, 0, 0, 2);
	/* ...and theirs reach us, through the same mapping. */
	rpc_ok(f, C_FILL, 0, 0, 3);
	expect_pattern(p, len, 3);
	/* A second region maps beside the first. */
	r = rpc_ok(f, C_ALLOC, 1, 1 << 20, 4);
	q = map(f, &r.d);
	assert_non_null(q);
	assert_true(q != p);
	expect_pattern(q, 1 << 20, 4);
	expect_pattern(p, len, 3);
	assert_int_equal(umem_maps(), 2);
	/* Closing the link unmaps both. */
	ops->close(f->l);
	f->l = NULL;
	assert_int_equal(umem_maps(), 0);
	assert_int_equal(reap(f->pid), 0); /* the child sees us close */
	f->pid = 0;
}

/* Descriptors that must not map, tried before the good one so that nothing is cached. */
static void test_map_rejects(void **state)
{
	struct fix *f = *state;
	size_t len = 2 * 4096;
	wt_util_umem_desc_t good = rpc_ok(f, C_ALLOC, 0, len, 5).d, d;
	int file_fd = rpc_ok(f, C_FILE, 0, len, 0).d.fd;
	int memfd2 = rpc_ok(f, C_MEMFD, 0, len, 0).d.fd;
	int other = rpc_ok(f, C_ALLOC, 1, 2 * len, 6).d.fd;

	assert_true(file_fd >= 0 && memfd2 >= 0 && other >= 0);
	/* fd: not open, negative, stdin, a plain file and a memfd of the right size, the shm
	 * segment, another weft_mem region of another size. */
	{
		const int bad_fd[] = {1000, -1, 0, file_fd, memfd2, f->blob.memfd, other};

		for (size_t k = 0; k < sizeof(bad_fd) / sizeof(bad_fd[0]); k++) {
			d = good;
			d.fd = bad_fd[k];
			if (map(f, &d) != NULL)
				fail_msg("fd case %zu (fd %d) mapped", k, d.fd);
		}
	}
	/* region_len: larger, smaller (the buffer still inside), 0, beyond any region. */
	for (int k = 0; k < 4; k++) {
		static const uint64_t bad_len[] = {2 * 4096 + 4096, 4096, 0, (uint64_t)1 << 41};

		d = sub(good, 0, k == 1 ? 4096 : k == 2 ? 0 : len);
		d.region_len = bad_len[k];
		if (map(f, &d) != NULL)
			fail_msg("region_len case %d (%llu) mapped", k,
				 (unsigned long long)d.region_len);
	}
	/* off and len beyond the region. */
	d = sub(good, len - 10, 11);
	assert_null(map(f, &d));
	d = sub(good, len + 1, 0);
	assert_null(map(f, &d));
	d = sub(good, 0, len + 1);
	assert_null(map(f, &d));
	d = sub(good, 10, UINT64_MAX);
	assert_null(map(f, &d));
	d = sub(good, UINT64_MAX, 2);
	assert_null(map(f, &d));
	/* Not in weft memory. */
	d = good;
	d.region = 0;
	assert_null(map(f, &d));
	/* Not a peer: ourselves, out of range, and no desc. */
	assert_null(ops->mem_map(f->l, 0, &good));
	assert_null(ops->mem_map(f->l, 2, &good));
	assert_null(ops->mem_map(f->l, -1, &good));
	assert_null(ops->mem_map(f->l, 1, NULL));
	assert_int_equal(umem_maps(), 0);
	/* The good one maps, and holds the owner's bytes. */
	expect_pattern(map(f, &good), len, 5);
	assert_int_equal(umem_maps(), 1);
	/* With the region cached, a desc beyond it is still refused. */
	d = sub(good, len - 10, 11);
	assert_null(map(f, &d));
	d = good;
	d.region_len = len + 4096;
	assert_null(map(f, &d));
	expect_pattern(map(f, &good), len, 5);
}

/* put: exactly the bytes asked, into a malloc'd buffer of the peer; nothing on refusal. */
static void test_put(void **state)
{
	struct fix *f = *state;
	size_t len = 100000;
	wt_util_umem_desc_t d = rpc_ok(f, C_MALLOC, 0, len, 0).d;
	wt_link_remote_t rem = {.addr = d.addr, .len = len};
	uint8_t *src = malloc(len), *back = malloc(len);

	assert_non_null(src);
	assert_non_null(back);
	assert_int_equal(d.region, 0); /* heap: no mapping, bytes move by CMA */
	assert_null(map(f, &d));
	for (size_t i = 0; i < len; i++)
		src[i] = pattern(PUT_SEED, i);
	assert_int_equal(ops->put(f->l, 1, src, &rem, 1234, 50001), WEFT_OK);
	rpc_ok(f, C_CHECKPUT, 0, 1234, 50001);
	/* Refused, and nothing written: past the end, an offset past it, an overflowing one,
	 * an address the peer has not mapped, ourselves, no such rank, no remote. */
	assert_int_equal(ops->put(f->l, 1, src, &rem, len - 10, 11), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->put(f->l, 1, src, &rem, len + 1, 0), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->put(f->l, 1, src, &rem, 0, len + 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->put(f->l, 1, src, &rem, SIZE_MAX, 2), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->put(f->l, 1, NULL, &rem, 0, 10), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->put(f->l, 1, src, NULL, 0, 10), WEFT_ERR_INVALID_ARG);
	assert_true(ops->put(f->l, 0, src, &rem, 0, 10) != WEFT_OK);
	assert_true(ops->put(f->l, 2, src, &rem, 0, 10) != WEFT_OK);
	{
		wt_link_remote_t wild = {.addr = 8, .len = 4096};

		assert_int_equal(ops->put(f->l, 1, src, &wild, 0, 16), WEFT_ERR_INVALID_ARG);
	}
	/* len 0 writes nothing. */
	assert_int_equal(ops->put(f->l, 1, src, &rem, 17, 0), WEFT_OK);
	rpc_ok(f, C_CHECKPUT, 0, 1234, 50001);
	/* get reads back what put wrote. */
	assert_int_equal(ops->get(f->l, 1, back, &rem, 1234, 50001), WEFT_OK);
	assert_memory_equal(back, src, 50001);
	/* The whole buffer, and into a weft_mem region too (put does not need a mapping). */
	assert_int_equal(ops->put(f->l, 1, src, &rem, 0, len), WEFT_OK);
	rpc_ok(f, C_CHECKPUT, 0, 0, len);
	d = rpc_ok(f, C_ALLOC, 1, 8192, 9).d;
	rem.addr = d.addr + 4096;
	rem.len = 4096;
	for (size_t i = 0; i < 4096; i++)
		src[i] = pattern(10, 4096 + i);
	assert_int_equal(ops->put(f->l, 1, src, &rem, 0, 4096), WEFT_OK);
	{
		uint8_t *p = map(f, &d);

		assert_non_null(p);
		expect_pattern(p, 4096, 9);
		for (size_t i = 4096; i < 8192; i++)
			assert_int_equal(p[i], pattern(10, i));
	}
	free(src);
	free(back);
}

/* More regions than the cache holds: every one maps to its own bytes, the least recently
 * used is the one replaced, and the cache never holds more than its size. */
static void test_cache_lru(void **state)
{
	struct fix *f = *state;
	enum { N = UMAPS + 6 };
	wt_util_umem_desc_t d[N];
	uint8_t *p[N];
	unsigned long ino[N];

	for (int i = 0; i < N; i++) {
		d[i] = rpc_ok(f, C_ALLOC, (uint32_t)i, (size_t)(i % 3 + 1) * 4096, 100 + i).d;
		ino[i] = child_ino(f, d[i].fd);
	}
	/* Fill the cache. */
	for (int i = 0; i < UMAPS; i++) {
		p[i] = map(f, &d[i]);
		assert_non_null(p[i]);
		expect_pattern(p[i], d[i].region_len, 100 + (uint64_t)i);
	}
	assert_int_equal(umem_maps(), UMAPS);
	/* The same region again: the same base, no new mapping. */
	for (int i = 0; i < UMAPS; i++)
		assert_ptr_equal(map(f, &d[i]), p[i]);
	/* Touch 0 so that 1 is the least recently used; the next region replaces 1. */
	assert_ptr_equal(map(f, &d[0]), p[0]);
	p[UMAPS] = map(f, &d[UMAPS]);
	assert_non_null(p[UMAPS]);
	expect_pattern(p[UMAPS], d[UMAPS].region_len, 100 + UMAPS);
	assert_int_equal(umem_maps(), UMAPS);
	assert_true(mapped_at(p[0], ino[0]));
	assert_false(mapped_at(p[1], ino[1]));
	for (int i = 2; i <= UMAPS; i++)
		assert_true(mapped_at(p[i], ino[i]));
	assert_ptr_equal(map(f, &d[0]), p[0]);
	/* Round and round, forwards and backwards: always the right bytes, never more than the
	 * cache's size mapped. */
	for (int round = 0; round < 3; round++) {
		for (int k = 0; k < N; k++) {
			int i = round == 1 ? N - 1 - k : k;
			uint8_t *m = map(f, &d[i]);

			assert_non_null(m);
			assert_true(mapped_at(m, ino[i]));
			expect_pattern(m, d[i].region_len, 100 + (uint64_t)i + (round == 2));
			/* The second round writes through the mapping for the owner to check. */
			if (round == 1)
				for (size_t b = 0; b < d[i].region_len; b++)
					m[b] = pattern(101 + (uint64_t)i, b);
			assert_true(umem_maps() <= UMAPS);
		}
	}
	for (int i = 0; i < N; i++)
		rpc_ok(f, C_CHECK, (uint32_t)i, 0, 101 + (uint64_t)i);
	assert_int_equal(umem_maps(), UMAPS);
}

/* The owner frees a region and its next one gets the same fd number: the cached mapping of
 * the old one is dropped, the new one mapped, never the stale bytes. */
static void test_fd_reuse(void **state)
{
	struct fix *f = *state;
	wt_util_umem_desc_t a = rpc_ok(f, C_ALLOC, 0, 4 * 4096, 11).d, b;
	uint8_t *p = map(f, &a), *q;

	assert_non_null(p);
	expect_pattern(p, 4 * 4096, 11);
	rpc_ok(f, C_FREE, 0, 0, 0);
	b = rpc_ok(f, C_ALLOC, 1, 4 * 4096, 12).d;
	assert_int_equal(b.fd, a.fd); /* the lowest free number: the test needs it so */
	assert_true(b.region != a.region);
	q = map(f, &b);
	assert_non_null(q);
	assert_true(mapped_at(q, child_ino(f, b.fd)));
	expect_pattern(q, 4 * 4096, 12);
	assert_int_equal(umem_maps(), 1);
	/* Again with another size. */
	rpc_ok(f, C_FREE, 1, 0, 0);
	a = rpc_ok(f, C_ALLOC, 2, 9 * 4096, 13).d;
	assert_int_equal(a.fd, b.fd);
	p = map(f, &a);
	assert_non_null(p);
	expect_pattern(p, 9 * 4096, 13);
	assert_int_equal(umem_maps(), 1);
}

/* A dead peer maps nothing and takes puts no more. */
static void test_dead_peer(void **state)
{
	struct fix *f = *state;
	wt_util_umem_desc_t a = rpc_ok(f, C_ALLOC, 0, 4096, 14).d;
	wt_util_umem_desc_t h = rpc_ok(f, C_MALLOC, 0, 4096, 0).d;
	wt_link_remote_t rem = {.addr = h.addr, .len = 4096};
	wt_link_event_t ev[MAX_EV];
	uint64_t t0 = wt_util_time_ns();
	uint8_t buf[16] = {0};
	int failed = 0;

	expect_pattern(map(f, &a), 4096, 14);
	send_req(f, C_EXIT, 0, 0, 0);
	assert_int_equal(reap(f->pid), 0);
	f->pid = 0;
	while (!failed) {
		int n = ops->poll(f->l, ev, MAX_EV);

		for (int i = 0; i < n; i++)
			failed |= ev[i].type == WT_LINK_EV_PEER_ERROR && ev[i].peer == 1;
		assert_true(wt_util_time_ns() - t0 < (uint64_t)(WAIT_S * 1e9));
		wt_util_sleep_ns(1000000);
	}
	assert_null(map(f, &a));
	assert_true(ops->put(f->l, 1, buf, &rem, 0, sizeof(buf)) != WEFT_OK);
	/* link.h: "Mappings are cached per peer and dropped when the peer fails or the link
	 * closes": the dead peer's pages must not stay mapped until close. */
	if (umem_maps() != 0)
		fail_msg("%d mapping(s) of the failed peer's regions are still here", umem_maps());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_map_roundtrip, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_map_rejects, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_put, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_cache_lru, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_fd_reuse, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_dead_peer, start_child, stop_child),
	};

	(void)argc;
	(void)argv;
	if (wt_util_crypto_init() != WEFT_OK)
		return 1;
	ops = wt_link_find("shm");
	if (ops == NULL) {
		fprintf(stderr, "the shm driver is not built; skipping\n");
		return 77;
	}
	{
		char why[512] = "";

		if (ops->probe(why, sizeof(why)) != WEFT_OK) {
			fprintf(stderr, "the shm driver cannot run here: %s; skipping\n", why);
			return 77;
		}
	}
	if (ops->mem_map == NULL || ops->put == NULL) {
		fprintf(stderr, "shm has no mem_map or put\n");
		return 1;
	}
	if (getenv("WT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("WT_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
