/* Unit tests for lib/util: env parsing, log format and level, time, crypto, status, the
 * streaming copy. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sodium.h>
#include "lib/util/copy.h"
#include "lib/util/crypto.h"
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/status.h"
#include "lib/util/time.h"

#define VAR "WEFT_UNIT_TEST_VAR"

/* ---- env ---- */

static void test_parse_int(void **state)
{
	int64_t v = 0;

	(void)state;
	assert_int_equal(wt_util_parse_int("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(wt_util_parse_int("-5", -10, 10, &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(wt_util_parse_int("+7", 0, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(wt_util_parse_int("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(wt_util_parse_int("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
	assert_true(v == INT64_MIN);
	v = 123;
	assert_int_not_equal(wt_util_parse_int("9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
	assert_int_not_equal(wt_util_parse_int("", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("-", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int(" 5", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("5 ", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("5x", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("0x5", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("11", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int("-1", 0, 10, &v), 0);
	assert_int_not_equal(wt_util_parse_int(NULL, 0, 10, &v), 0);
	assert_int_equal(v, 123); /* untouched on failure */
}

static void test_env_int(void **state)
{
	char err[256];
	int64_t v = 0;

	(void)state;
	unsetenv(VAR);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)), WEFT_OK);
	assert_int_equal(v, 17);
	setenv(VAR, "", 1); /* empty counts as unset */
	assert_int_equal(wt_util_env_int(VAR, 18, 0, 100, &v, err, sizeof(err)), WEFT_OK);
	assert_int_equal(v, 18);
	setenv(VAR, "99", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)), WEFT_OK);
	assert_int_equal(v, 99);
	setenv(VAR, "-3", 1);
	assert_int_equal(wt_util_env_int(VAR, 0, -3, 3, &v, err, sizeof(err)), WEFT_OK);
	assert_int_equal(v, -3);

	v = 555;
	setenv(VAR, "abc", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_string_equal(err, VAR "='abc' is not an integer");
	setenv(VAR, "12abc", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	setenv(VAR, "101", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_string_equal(err, VAR "=101 is out of range [0, 100]");
	setenv(VAR, "-1", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, NULL, 0), WEFT_ERR_INVALID_ARG);
	setenv(VAR, "99999999999999999999", 1);
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(v, 555);
	/* a short error buffer truncates, never overflows */
	setenv(VAR, "abc", 1);
	memset(err, 'x', sizeof(err));
	assert_int_equal(wt_util_env_int(VAR, 17, 0, 100, &v, err, 8), WEFT_ERR_INVALID_ARG);
	assert_int_equal(strlen(err), 7);
	unsetenv(VAR);
}

static void test_env_seconds(void **state)
{
	char err[256];
	double v = 0;

	(void)state;
	unsetenv(VAR);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)), WEFT_OK);
	assert_true(v == 2.5);
	setenv(VAR, "1.25", 1);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)), WEFT_OK);
	assert_true(v == 1.25);
	setenv(VAR, "7", 1);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)), WEFT_OK);
	assert_true(v == 7.0);
	setenv(VAR, ".5", 1);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)), WEFT_OK);
	assert_true(v == 0.5);

	v = 42;
	setenv(VAR, "abc", 1);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_string_equal(err, VAR "='abc' is not a number of seconds");
	static const char *const bad[] = {"-1",	   "1e3", "inf", "nan", "0x10",
					  "1.2.3", ".",	  "1 ",	 " 1",	"1s"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(VAR, bad[i], 1);
		assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)),
				 WEFT_ERR_INVALID_ARG);
	}
	setenv(VAR, "10.5", 1);
	assert_int_equal(wt_util_env_seconds(VAR, 2.5, 0, 10, &v, err, sizeof(err)),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(err, "out of range"));
	assert_non_null(strstr(err, VAR));
	assert_true(v == 42);
	unsetenv(VAR);
}

static void test_env_bool_str(void **state)
{
	static const char *const yes[] = {"1", "true", "TRUE", "Yes", "on"};
	static const char *const no[] = {"0", "false", "No", "OFF"};
	char err[256];
	int v = 7;

	(void)state;
	unsetenv(VAR);
	assert_int_equal(wt_util_env_bool(VAR, 1, &v, err, sizeof(err)), WEFT_OK);
	assert_int_equal(v, 1);
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		setenv(VAR, yes[i], 1);
		v = 0;
		assert_int_equal(wt_util_env_bool(VAR, 0, &v, err, sizeof(err)), WEFT_OK);
		assert_int_equal(v, 1);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		setenv(VAR, no[i], 1);
		v = 1;
		assert_int_equal(wt_util_env_bool(VAR, 1, &v, err, sizeof(err)), WEFT_OK);
		assert_int_equal(v, 0);
	}
	setenv(VAR, "maybe", 1);
	v = 5;
	assert_int_equal(wt_util_env_bool(VAR, 1, &v, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	assert_int_equal(v, 5);
	assert_non_null(strstr(err, VAR "='maybe'"));

	setenv(VAR, "hello", 1);
	assert_string_equal(wt_util_env_str(VAR), "hello");
	setenv(VAR, "", 1);
	assert_null(wt_util_env_str(VAR));
	unsetenv(VAR);
	assert_null(wt_util_env_str(VAR));
}

/* ---- status ---- */

static void test_status(void **state)
{
	(void)state;
	assert_int_equal(wt_util_status_from_errno(ENOMEM), WEFT_ERR_NO_MEMORY);
	assert_int_equal(wt_util_status_from_errno(ETIMEDOUT), WEFT_ERR_TIMEOUT);
	assert_int_equal(wt_util_status_from_errno(ECONNREFUSED), WEFT_ERR_PEER_FAILED);
	assert_int_equal(wt_util_status_from_errno(ECONNRESET), WEFT_ERR_PEER_FAILED);
	assert_int_equal(wt_util_status_from_errno(EPIPE), WEFT_ERR_PEER_FAILED);
	assert_int_equal(wt_util_status_from_errno(EINVAL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_util_status_from_errno(EAGAIN), WT_AGAIN);
	assert_int_equal(wt_util_status_from_errno(EACCES), WEFT_ERR_SYSTEM);
	assert_false(wt_util_is_err(WT_AGAIN));
	assert_true(wt_util_is_err(WEFT_ERR_SYSTEM));
}

/* ---- time ---- */

static void test_time(void **state)
{
	uint64_t t0, t1, d;

	(void)state;
	t0 = wt_util_time_ns();
	wt_util_sleep_ns(20000000ull);
	t1 = wt_util_time_ns();
	assert_true(t1 - t0 >= 20000000ull);
	assert_false(wt_util_deadline_passed(0));
	d = wt_util_deadline_in(0.03);
	assert_true(d != 0);
	assert_false(wt_util_deadline_passed(wt_util_deadline_in(3600)));
	wt_util_sleep_ns(40000000ull);
	assert_true(wt_util_deadline_passed(d));
	assert_true(wt_util_deadline_passed(wt_util_deadline_in(0)));
	assert_true(wt_util_deadline_in(1e30) == UINT64_MAX);
}

/* ---- log ---- */

/* Run fn with stderr redirected into a temporary file; returns what was written. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	char path[] = "/tmp/weft-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	char *buf;
	off_t len;

	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	assert_int_equal(dup2(fd, 2), 2);
	fn(arg);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	len = lseek(fd, 0, SEEK_END);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	close(fd);
	return buf;
}

static void log_two(void *arg)
{
	(void)arg;
	wt_util_log_set_rank(-1);
	wt_util_log(WT_LOG_ERROR, "some/dir/file.c", 12, "hello %d", 5);
	wt_util_log_set_rank(3);
	wt_util_log(WT_LOG_WARN, "x.c", 7, "peer %s failed\n", "r2");
	wt_util_log_set_rank(-1);
}

static void test_log_format(void **state)
{
	char *out;

	(void)state;
	out = capture_stderr(log_two, NULL);
	assert_string_equal(out, "weft[?] ERROR file.c:12: hello 5\n"
				 "weft[3] WARN x.c:7: peer r2 failed\n");
	free(out);
}

static void *log_thread(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < 200; i++)
		wt_util_log(WT_LOG_ERROR, "t.c", 1, "thread %ld line %d %s", id, i,
			    "padding-padding-padding-padding-padding-padding-padding");
	return NULL;
}

static void log_threads(void *arg)
{
	pthread_t t[4];

	(void)arg;
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, log_thread, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

static void test_log_threads(void **state)
{
	char *out = NULL, *line, *save = NULL;
	int count[4] = {0};
	int lines = 0;

	(void)state;
	out = capture_stderr(log_threads, NULL);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long id;
		int i, n = 0;

		assert_int_equal(
		    sscanf(line, "weft[?] ERROR t.c:1: thread %ld line %d %n", &id, &i, &n), 2);
		assert_true(id >= 0 && id < 4);
		assert_string_equal(line + n,
				    "padding-padding-padding-padding-padding-padding-padding");
		assert_int_equal(i, count[id]); /* each thread's lines whole and in order */
		count[id]++;
		lines++;
	}
	assert_int_equal(lines, 800);
	free(out);
}

static void log_long(void *arg)
{
	wt_util_log_set_rank(-1);
	wt_util_log(WT_LOG_ERROR, "long.c", 1, "%s", (const char *)arg);
}

static void test_log_long_message(void **state)
{
	char *big = malloc(5000);
	char *out;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', 4999);
	big[4999] = '\0';
	out = capture_stderr(log_long, big);
	/* truncated, but still exactly one whole line */
	assert_true(strncmp(out, "weft[?] ERROR long.c:1: aaaa", 28) == 0);
	assert_true(strlen(out) < 1100);
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	free(out);
	free(big);
}

/* In a child: set WEFT_LOG_LEVEL and report what the library made of it. */
static int level_in_child(const char *value, char *errtext, size_t errlen)
{
	int pipefd[2], status = 0;
	pid_t pid;
	ssize_t n;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		if (value)
			setenv("WEFT_LOG_LEVEL", value, 1);
		else
			unsetenv("WEFT_LOG_LEVEL");
		int a = wt_util_log_level();
		int b = wt_util_log_level(); /* read once: no second warning */
		_exit(a == b ? a : 99);
	}
	close(pipefd[1]);
	n = read(pipefd[0], errtext, errlen - 1);
	errtext[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_log_level(void **state)
{
	char err[512];

	(void)state;
	assert_int_equal(level_in_child(NULL, err, sizeof(err)), WT_LOG_WARN);
	assert_string_equal(err, "");
	assert_int_equal(level_in_child("error", err, sizeof(err)), WT_LOG_ERROR);
	assert_int_equal(level_in_child("DEBUG", err, sizeof(err)), WT_LOG_DEBUG);
	assert_int_equal(level_in_child("trace", err, sizeof(err)), WT_LOG_TRACE);
	assert_int_equal(level_in_child("2", err, sizeof(err)), WT_LOG_INFO);
	assert_int_equal(level_in_child("0", err, sizeof(err)), WT_LOG_ERROR);
	assert_string_equal(err, "");
	assert_int_equal(level_in_child("verbose", err, sizeof(err)), WT_LOG_WARN);
	assert_non_null(strstr(err, "WEFT_LOG_LEVEL='verbose'"));
	assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1); /* warned once */
	assert_int_equal(level_in_child("5", err, sizeof(err)), WT_LOG_WARN);
	assert_non_null(strstr(err, "WEFT_LOG_LEVEL"));
}

/* ---- crypto ---- */

static void test_key_from_token(void **state)
{
	wt_util_key_t k1, k2, k3;
	uint8_t want[32];
	const char msg[] = "weft-job-tokensecret";

	(void)state;
	assert_int_equal(wt_util_crypto_init(), WEFT_OK);
	wt_util_key_from_token(&k1, "secret");
	wt_util_key_from_token(&k2, "secret");
	wt_util_key_from_token(&k3, "Secret");
	assert_memory_equal(k1.key, k2.key, 32);
	assert_memory_not_equal(k1.key, k3.key, 32);
	crypto_generichash(want, 32, (const unsigned char *)msg, sizeof(msg) - 1, NULL, 0);
	assert_memory_equal(k1.key, want, 32);
	wt_util_key_from_token(&k1, "");
	wt_util_key_from_token(&k2, NULL);
	assert_memory_equal(k1.key, k2.key, 32);
}

static void test_mac(void **state)
{
	wt_util_key_t k, bad;
	uint8_t a[5] = {1, 2, 3, 4, 5}, b[3] = {9, 8, 7}, mac[32], want[32];
	uint8_t msg[64];
	size_t off = 0;

	(void)state;
	wt_util_key_from_token(&k, "job-42");
	wt_util_key_from_token(&bad, "job-43");
	wt_util_mac(&k, "lbl", a, sizeof(a), b, sizeof(b), mac);

	/* HMAC-SHA256 over label with its NUL, then a, then b */
	memcpy(msg + off, "lbl", 4);
	off += 4;
	memcpy(msg + off, a, sizeof(a));
	off += sizeof(a);
	memcpy(msg + off, b, sizeof(b));
	off += sizeof(b);
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, k.key, 32);
	crypto_auth_hmacsha256_update(&st, msg, off);
	crypto_auth_hmacsha256_final(&st, want);
	assert_memory_equal(mac, want, 32);

	assert_true(wt_util_mac_verify(&k, "lbl", a, sizeof(a), b, sizeof(b), mac));
	assert_false(wt_util_mac_verify(&bad, "lbl", a, sizeof(a), b, sizeof(b), mac));
	assert_false(wt_util_mac_verify(&k, "lbm", a, sizeof(a), b, sizeof(b), mac));
	assert_false(wt_util_mac_verify(&k, "lbl", b, sizeof(b), a, sizeof(a), mac));
	/* moving a byte from a to b changes the MAC only through the label's NUL? no: the
	 * concatenation is the same, so the MAC is the same; label boundaries are what the
	 * NUL protects */
	assert_true(wt_util_mac_verify(&k, "lbl", a, 4, (uint8_t[]){5, 9, 8, 7}, 4, mac));
	mac[31] ^= 1;
	assert_false(wt_util_mac_verify(&k, "lbl", a, sizeof(a), b, sizeof(b), mac));
	/* empty parts */
	wt_util_mac(&k, "x", NULL, 0, NULL, 0, mac);
	assert_true(wt_util_mac_verify(&k, "x", NULL, 0, NULL, 0, mac));
	assert_false(wt_util_mac_verify(&k, "", "x", 1, NULL, 0, mac));
}

static void test_random(void **state)
{
	char h1[2 * 100 + 1], h2[2 * 100 + 1], z[1] = {'q'};
	uint8_t r1[32] = {0}, r2[32] = {0};

	(void)state;
	wt_util_random_hex(h1, 100);
	wt_util_random_hex(h2, 100);
	assert_int_equal(strlen(h1), 200);
	assert_int_equal(strspn(h1, "0123456789abcdef"), 200);
	assert_string_not_equal(h1, h2);
	wt_util_random_hex(z, 0);
	assert_int_equal(z[0], '\0');
	wt_util_random(r1, sizeof(r1));
	wt_util_random(r2, sizeof(r2));
	assert_memory_not_equal(r1, r2, sizeof(r1));
}

/* ---- streaming copy ---- */

/* dst (total bytes, 0xee before the copy) holds src's len bytes at at, 0xee elsewhere. */
static void check_copied(const uint8_t *dst, size_t total, size_t at, const uint8_t *src,
			 size_t len)
{
	for (size_t i = 0; i < at; i++)
		assert_int_equal(dst[i], 0xee);
	if (len)
		assert_memory_equal(dst + at, src, len);
	for (size_t i = at + len; i < total; i++)
		assert_int_equal(dst[i], 0xee);
}

/* Every length around the plain/streamed boundary and the 64-byte lines, at every
 * alignment of source and destination: exactly the source's bytes, nothing around them. */
static void test_copy_stream(void **state)
{
	enum { MAX = 9000, PAD = 80 };
	const size_t lens[] = {0, 1, 63, 64, 65, 4095, 4096, 4097, 4160, 5000, 8191, MAX};
	uint8_t *src = malloc(MAX + 2 * PAD), *dst = malloc(MAX + 2 * PAD);

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < MAX + 2 * PAD; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		for (size_t so = 0; so < 64; so += 13)
			for (size_t d = 0; d < 64; d += 9) {
				size_t len = lens[k];

				memset(dst, 0xee, MAX + 2 * PAD);
				wt_util_copy_stream(dst + PAD + d, src + so, len);
				check_copied(dst, MAX + 2 * PAD, PAD + d, src + so, len);
			}
	free(src);
	free(dst);
}

/* wt_util_copy takes its own loop where the destination lies 1-63 bytes past the source
 * modulo 4 KiB (from 2 KiB), else memcpy: both ways, every length around the switch and
 * the 64-byte steps, exactly the source's bytes and nothing around them. */
static void test_copy_alias(void **state)
{
	enum { MAX = 65536 + 7, PAD = 4096 + 80 };
	const size_t lens[] = {0, 1, 63, 2047, 2048, 2049, 2111, 4096, 4096 + 63, MAX};
	const size_t deltas[] = {0, 1, 8, 15, 16, 62, 63, 64, 65, 4095, 4096 + 8};
	const size_t bytes = (MAX + 2 * PAD + 4095) / 4096 * 4096; /* C11: a multiple */
	uint8_t *src = aligned_alloc(4096, bytes), *dst = aligned_alloc(4096, bytes);

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < MAX + 2 * PAD; i++)
		src[i] = (uint8_t)(i * 151 + 3);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		for (size_t j = 0; j < sizeof(deltas) / sizeof(deltas[0]); j++)
			for (size_t so = 0; so < 40; so += 24) {
				size_t len = lens[k], at = 80 + so + deltas[j];

				memset(dst, 0xee, MAX + 2 * PAD);
				wt_util_copy(dst + at, src + 80 + so, len);
				check_copied(dst, MAX + 2 * PAD, at, src + 80 + so, len);
			}
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_int),	   cmocka_unit_test(test_env_int),
	    cmocka_unit_test(test_env_seconds),	   cmocka_unit_test(test_env_bool_str),
	    cmocka_unit_test(test_status),	   cmocka_unit_test(test_time),
	    cmocka_unit_test(test_log_format),	   cmocka_unit_test(test_log_threads),
	    cmocka_unit_test(test_log_level),	   cmocka_unit_test(test_log_long_message),
	    cmocka_unit_test(test_key_from_token), cmocka_unit_test(test_mac),
	    cmocka_unit_test(test_random),	   cmocka_unit_test(test_copy_stream),
	    cmocka_unit_test(test_copy_alias),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
