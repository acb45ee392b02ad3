/* The channel over shm when the kernel refuses cross-memory reads, as Yama's ptrace_scope 1
 * refuses them between sibling processes (tests/unit/channel): a seccomp filter makes every
 * process_vm_readv of this process fail with EPERM. Receives that would read by get stream
 * instead, every message arrives whole, and the refusal is logged once per peer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "tests/unit/channel/chantest.h"

#define MIB (1024 * 1024)

/* 0 once process_vm_readv fails with EPERM here; -1 where no filter can be installed. */
static int refuse_cma(void)
{
#if defined(__x86_64__) && defined(__NR_process_vm_readv)
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	char a = 1, b = 0;
	struct iovec l = {&b, 1}, r = {&a, 1};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -1;
	return syscall(__NR_process_vm_readv, getpid(), &l, 1, &r, 1, 0) < 0 && errno == EPERM ? 0
											       : -1;
#else
	return -1;
#endif
}

static void test_get_refused(void **state)
{
	const size_t len = MIB;
	const ct_opts_t o = {.job_prefix = "chanrefused",
			     .token = "channel-test-token",
			     .chan = {.eager_limit = 8192},
			     .wait_s = 90.0,
			     .poll_ms = 2};
	uint8_t *src = malloc(len), *dst = malloc(len);
	char logname[] = "/tmp/weft-get-refused-XXXXXX";
	int logfd = mkstemp(logname), saved = dup(2);
	ct_fab_t f;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	assert_true(logfd >= 0 && saved >= 0);
	unlink(logname);
	setenv("WEFT_RNDV_GET", "auto", 1);
	ct_open(&f, "shm", &o);
	assert_true((wt_link_ops(f.link[1])->caps & WT_LINK_CAP_GET) != 0);
	wt_chan_set_get_min(f.ch[1], 512 * 1024);
	assert_int_equal(dup2(logfd, 2), 2); /* the channel's warnings, to count them */
	for (unsigned m = 0; m < 3; m++) {
		struct iovec iov = {src, len};
		wt_link_stats_t before, after;
		ct_done_t ds = {0}, dr = {0};

		for (size_t i = 0; i < len; i++)
			src[i] = (uint8_t)(i * 7 + m);
		memset(dst, 0xee, len);
		memset(&before, 0, sizeof(before));
		memset(&after, 0, sizeof(after));
		wt_link_ops(f.link[0])->stats(f.link[0], 1, &before);
		assert_int_equal(
		    wt_chan_post_recv(f.ch[1], 0, 90 + m, dst, len, NULL, ct_on_done, &dr, NULL),
		    WEFT_OK);
		assert_int_equal(
		    wt_chan_post_send(f.ch[0], 1, 90 + m, &iov, 1, ct_on_done, &ds, NULL), WEFT_OK);
		ct_pump_until(&f, &dr.fired, 1);
		ct_pump_until(&f, &ds.fired, 1);
		assert_int_equal(dr.st, WEFT_OK);
		assert_int_equal(ds.st, WEFT_OK);
		assert_memory_equal(dst, src, len);
		wt_link_ops(f.link[0])->stats(f.link[0], 1, &after);
		assert_true(after.bytes_sent - before.bytes_sent >= len); /* streamed */
	}
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	ct_close(&f);

	char log[8192];
	ssize_t n = pread(logfd, log, sizeof(log) - 1, 0);
	int warned = 0;

	assert_true(n >= 0);
	log[n] = '\0';
	for (const char *p = log; (p = strstr(p, "go through the link from now on")) != NULL; p++)
		warned++;
	assert_int_equal(warned, 1);
	assert_non_null(strstr(log, "from rank 0"));
	close(logfd);
	close(saved);
	unsetenv("WEFT_RNDV_GET");
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_get_refused)};

	/* the warning is what the test counts, whatever the suite's level */
	setenv("WEFT_LOG_LEVEL", "warn", 1);
	if (refuse_cma() != 0) {
		printf("skipped: no seccomp filter to refuse process_vm_readv here\n");
		return 77;
	}
	return cmocka_run_group_tests_name("channel with CMA refused", tests, NULL, NULL);
}
