/* Unit tests for lib/boot: the rendezvous store over 127.0.0.1 — set/get/add, waiting
 * GETs, timeouts, mutual authentication, and hostile clients that must not hurt the
 * server. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/boot/store.h"
#include "lib/util/time.h"

#define HOST "127.0.0.1"
#define TOKEN "unit-test-token"

typedef struct {
	wt_boot_server_t *srv;
	wt_util_key_t key;
	int port;
} fixture_t;

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));
	char err[256] = "";

	if (!f)
		return -1;
	wt_util_key_from_token(&f->key, TOKEN);
	if (wt_boot_server_start(HOST, 0, &f->key, &f->srv, err, sizeof(err)) != WEFT_OK) {
		fprintf(stderr, "server start failed: %s\n", err);
		free(f);
		return -1;
	}
	f->port = wt_boot_server_port(f->srv);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;

	wt_boot_server_stop(f->srv);
	free(f);
	return 0;
}

static wt_boot_store_t *connect_ok(fixture_t *f)
{
	wt_boot_store_t *st = NULL;
	char err[512] = "";
	weft_status_t rc = wt_boot_store_connect(HOST, f->port, &f->key, 30, &st, err, sizeof(err));

	if (rc != WEFT_OK)
		fail_msg("connect failed (%d): %s", rc, err);
	return st;
}

static void check_value(wt_boot_store_t *st, const char *key, const void *want, size_t wlen)
{
	char *buf = malloc(wlen + 16);
	size_t len = 12345;

	assert_non_null(buf);
	assert_int_equal(wt_boot_store_get(st, key, buf, wlen + 16, &len, 30), WEFT_OK);
	assert_int_equal(len, wlen);
	assert_memory_equal(buf, want, wlen);
	free(buf);
}

static void test_set_get(void **state)
{
	fixture_t *f = *state;
	wt_boot_store_t *st = connect_ok(f);
	const uint8_t bin[6] = {0, 1, 0, 255, 0, 7};
	char ip[64], small[2];
	size_t len;
	uint8_t *big;

	assert_true(f->port > 0);
	assert_int_equal(wt_boot_store_set(st, "alpha", "one", 3), WEFT_OK);
	check_value(st, "alpha", "one", 3);
	assert_int_equal(wt_boot_store_set(st, "alpha", "second", 6), WEFT_OK); /* overwrite */
	check_value(st, "alpha", "second", 6);
	assert_int_equal(wt_boot_store_set(st, "bin", bin, sizeof(bin)), WEFT_OK);
	check_value(st, "bin", bin, sizeof(bin));
	assert_int_equal(wt_boot_store_set(st, "empty", NULL, 0), WEFT_OK);
	check_value(st, "empty", "", 0);

	/* the largest value goes through whole */
	big = malloc(WT_BOOT_VALUE_MAX);
	assert_non_null(big);
	for (size_t i = 0; i < WT_BOOT_VALUE_MAX; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(wt_boot_store_set(st, "big", big, WT_BOOT_VALUE_MAX), WEFT_OK);
	check_value(st, "big", big, WT_BOOT_VALUE_MAX);
	free(big);

	/* a buffer too small is an error, and the connection stays usable */
	assert_int_equal(wt_boot_store_get(st, "alpha", small, sizeof(small), &len, 5),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(wt_boot_store_error(st), "alpha"));
	check_value(st, "alpha", "second", 6);

	/* a second client sees the same data */
	wt_boot_store_t *st2 = connect_ok(f);
	check_value(st2, "bin", bin, sizeof(bin));
	wt_boot_store_close(st2);

	assert_int_equal(wt_boot_store_local_ip(st, ip, sizeof(ip)), WEFT_OK);
	assert_string_equal(ip, "127.0.0.1");
	assert_int_equal(wt_boot_store_local_ip(st, ip, 4), WEFT_ERR_INVALID_ARG);
	assert_true(wt_boot_server_clients(f->srv) >= 2);
	assert_int_equal(wt_boot_server_refused(f->srv), 0);
	wt_boot_store_close(st);
}

typedef struct {
	fixture_t *f;
	const char *key;
	double delay_s;
	int nadds;
	int64_t *results;
	weft_status_t rc;
} worker_t;

static void *late_setter(void *arg)
{
	worker_t *w = arg;
	wt_boot_store_t *st = connect_ok(w->f);

	wt_util_sleep_ns((uint64_t)(w->delay_s * 1e9));
	w->rc = wt_boot_store_set(st, w->key, "late-value", 10);
	wt_boot_store_close(st);
	return NULL;
}

static void test_get_waits(void **state)
{
	fixture_t *f = *state;
	wt_boot_store_t *st = connect_ok(f);
	worker_t w = {.f = f, .key = "later", .delay_s = 0.3};
	uint64_t t0 = wt_util_time_ns();
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, late_setter, &w), 0);
	check_value(st, "later", "late-value", 10);
	assert_true(wt_util_time_ns() - t0 >= 250000000ull); /* it really waited */
	pthread_join(th, NULL);
	assert_int_equal(w.rc, WEFT_OK);
	wt_boot_store_close(st);
}

static void test_get_timeout(void **state)
{
	fixture_t *f = *state;
	wt_boot_store_t *st = connect_ok(f);
	char buf[16];
	size_t len;
	uint64_t t0 = wt_util_time_ns(), dt;

	assert_int_equal(wt_boot_store_get(st, "never", buf, sizeof(buf), &len, 0.3),
			 WEFT_ERR_TIMEOUT);
	dt = wt_util_time_ns() - t0;
	assert_true(dt >= 280000000ull);
	assert_true(dt < 20000000000ull);
	assert_non_null(strstr(wt_boot_store_error(st), "never"));
	/* zero timeout: an immediate answer */
	assert_int_equal(wt_boot_store_get(st, "never", buf, sizeof(buf), &len, 0),
			 WEFT_ERR_TIMEOUT);
	/* still usable afterwards */
	assert_int_equal(wt_boot_store_set(st, "after-timeout", "x", 1), WEFT_OK);
	check_value(st, "after-timeout", "x", 1);
	wt_boot_store_close(st);
}

static void *adder(void *arg)
{
	worker_t *w = arg;
	wt_boot_store_t *st = connect_ok(w->f);

	w->rc = WEFT_OK;
	for (int i = 0; i < w->nadds && w->rc == WEFT_OK; i++)
		w->rc = wt_boot_store_add(st, w->key, 1, &w->results[i]);
	wt_boot_store_close(st);
	return NULL;
}

static void test_add(void **state)
{
	enum { THREADS = 4, ADDS = 50 };
	fixture_t *f = *state;
	worker_t w[THREADS];
	pthread_t th[THREADS];
	int64_t results[THREADS][ADDS], v;
	uint8_t seen[THREADS * ADDS + 1] = {0};
	wt_boot_store_t *st = connect_ok(f);

	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker_t){.f = f, .key = "counter", .nadds = ADDS, .results = results[i]};
		assert_int_equal(pthread_create(&th[i], NULL, adder, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].rc, WEFT_OK);
	}
	/* every value 1..200 handed out exactly once */
	for (int i = 0; i < THREADS; i++) {
		for (int j = 0; j < ADDS; j++) {
			assert_true(results[i][j] >= 1 && results[i][j] <= THREADS * ADDS);
			assert_int_equal(seen[results[i][j]], 0);
			seen[results[i][j]] = 1;
			if (j > 0)
				assert_true(results[i][j] > results[i][j - 1]);
		}
	}
	assert_int_equal(wt_boot_store_add(st, "counter", 0, &v), WEFT_OK);
	assert_int_equal(v, THREADS * ADDS);
	assert_int_equal(wt_boot_store_add(st, "counter", -250, &v), WEFT_OK);
	assert_int_equal(v, -50);
	check_value(st, "counter", "-50", 3); /* readable by GET as text */
	assert_int_equal(wt_boot_store_add(st, "counter2", INT64_MAX, &v), WEFT_OK);
	assert_int_equal(wt_boot_store_add(st, "counter2", 1, &v), WEFT_OK);
	assert_true(v == INT64_MIN); /* wraps */
	/* ADD on a value that is not a counter is refused; the connection stays usable */
	assert_int_equal(wt_boot_store_set(st, "text", "hello", 5), WEFT_OK);
	assert_int_equal(wt_boot_store_add(st, "text", 1, &v), WEFT_ERR_INVALID_ARG);
	check_value(st, "text", "hello", 5);
	wt_boot_store_close(st);
}

static void test_wrong_token(void **state)
{
	fixture_t *f = *state;
	wt_util_key_t bad;
	wt_boot_store_t *st = NULL;
	char err[512] = "";
	uint64_t before = wt_boot_server_refused(f->srv);

	wt_util_key_from_token(&bad, "not-the-token");
	assert_int_equal(wt_boot_store_connect(HOST, f->port, &bad, 10, &st, err, sizeof(err)),
			 WEFT_ERR_AUTH);
	assert_null(st);
	assert_true(strlen(err) > 0);
	assert_non_null(strstr(err, "token"));
	/* the server counts the refusal from its own thread; give it a moment */
	for (int i = 0; i < 500 && wt_boot_server_refused(f->srv) == before; i++)
		wt_util_sleep_ns(10000000ull);
	assert_int_equal(wt_boot_server_refused(f->srv), before + 1);

	st = connect_ok(f);
	assert_int_equal(wt_boot_store_set(st, "k", "v", 1), WEFT_OK);
	check_value(st, "k", "v", 1);
	wt_boot_store_close(st);
}

/* ---- a fake server that does not know the token ---- */

typedef struct {
	int lfd;
} fake_t;

static void *fake_server(void *arg)
{
	fake_t *fk = arg;
	int fd = accept(fk->lfd, NULL, NULL);
	uint8_t hello[40] = "WEFTSTO1", answer[64], junk[32];
	size_t got = 0;

	if (fd < 0)
		return NULL;
	wt_util_random(hello + 8, 32);
	if (write(fd, hello, sizeof(hello)) != (ssize_t)sizeof(hello))
		goto out;
	while (got < sizeof(answer)) {
		ssize_t n = read(fd, answer + got, sizeof(answer) - got);

		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	wt_util_random(junk, sizeof(junk));
	if (write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
		goto out;
	/* wait for the client to hang up */
	read(fd, answer, 1);
out:
	close(fd);
	return NULL;
}

static int listen_loopback(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void test_server_must_prove_token(void **state)
{
	fixture_t *f = *state;
	fake_t fk;
	pthread_t th;
	int port;
	wt_boot_store_t *st = NULL;
	char err[512] = "";

	fk.lfd = listen_loopback(&port);
	assert_int_equal(pthread_create(&th, NULL, fake_server, &fk), 0);
	assert_int_equal(wt_boot_store_connect(HOST, port, &f->key, 10, &st, err, sizeof(err)),
			 WEFT_ERR_AUTH);
	assert_null(st);
	assert_non_null(strstr(err, "failed authentication"));
	pthread_join(th, NULL);
	close(fk.lfd);
}

static void test_unreachable(void **state)
{
	int port, fd = listen_loopback(&port);
	wt_boot_store_t *st = NULL;
	char err[512] = "", want[32];
	wt_util_key_t key;
	uint64_t t0, dt;

	(void)state;
	close(fd); /* nothing listens there now */
	wt_util_key_from_token(&key, TOKEN);
	t0 = wt_util_time_ns();
	assert_int_equal(wt_boot_store_connect(HOST, port, &key, 1.0, &st, err, sizeof(err)),
			 WEFT_ERR_TIMEOUT);
	dt = wt_util_time_ns() - t0;
	assert_null(st);
	assert_true(dt >= 900000000ull);
	assert_true(dt < 8000000000ull);
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "unreachable after 1 s"));
	assert_non_null(strstr(err, "refused"));
}

static void test_bad_args(void **state)
{
	fixture_t *f = *state;
	wt_boot_store_t *st = connect_ok(f);
	char key[WT_BOOT_KEY_MAX + 2], buf[4];
	size_t len;
	int64_t v;
	void *big = calloc(1, WT_BOOT_VALUE_MAX + 1);

	assert_non_null(big);
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0'; /* 257 bytes */
	assert_int_equal(wt_boot_store_set(st, key, "v", 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_get(st, key, buf, sizeof(buf), &len, 1),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_add(st, key, 1, &v), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_set(st, "", "v", 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_set(st, NULL, "v", 1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_set(st, "big", big, WT_BOOT_VALUE_MAX + 1),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_boot_store_set(st, "nullval", NULL, 3), WEFT_ERR_INVALID_ARG);
	key[WT_BOOT_KEY_MAX] = '\0'; /* exactly the limit is fine */
	assert_int_equal(wt_boot_store_set(st, key, "v", 1), WEFT_OK);
	check_value(st, key, "v", 1);
	free(big);
	wt_boot_store_close(st);
}

/* ---- hostile raw clients ---- */

static int raw_connect(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 30};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void read_exact(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* The server must close the connection (EOF or reset), not hang. */
static void expect_closed(int fd)
{
	uint8_t b[256];
	ssize_t n;

	do {
		n = read(fd, b, sizeof(b));
	} while (n > 0);
	assert_true(n == 0 || errno == ECONNRESET);
	close(fd);
}

/* Complete the handshake by hand, as a legitimate client would. */
static int raw_authed(fixture_t *f)
{
	int fd = raw_connect(f->port);
	uint8_t hello[40], answer[64], smac[32];

	read_exact(fd, hello, sizeof(hello));
	assert_memory_equal(hello, "WEFTSTO1", 8);
	wt_util_random(answer + 32, 32);
	wt_util_mac(&f->key, "weft-store-client", hello + 8, 32, answer + 32, 32, answer);
	assert_int_equal(write(fd, answer, sizeof(answer)), sizeof(answer));
	read_exact(fd, smac, sizeof(smac));
	assert_true(
	    wt_util_mac_verify(&f->key, "weft-store-server", answer + 32, 32, hello + 8, 32, smac));
	return fd;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void send_header(int fd, uint8_t op, uint32_t klen, uint32_t vlen, uint32_t arg)
{
	uint8_t h[16] = {op};

	put32(h + 4, klen);
	put32(h + 8, vlen);
	put32(h + 12, arg);
	assert_int_equal(write(fd, h, sizeof(h)), sizeof(h));
}

static void check_still_serving(fixture_t *f, const char *tag)
{
	wt_boot_store_t *st = connect_ok(f);

	assert_int_equal(wt_boot_store_set(st, tag, tag, strlen(tag)), WEFT_OK);
	check_value(st, tag, tag, strlen(tag));
	wt_boot_store_close(st);
}

static void test_hostile_clients(void **state)
{
	fixture_t *f = *state;
	uint8_t junk[64], hello[40];
	uint64_t refused = wt_boot_server_refused(f->srv);
	int silent, fd;

	/* a silent connection holds no one up */
	silent = raw_connect(f->port);

	/* garbage instead of the handshake answer: refused */
	fd = raw_connect(f->port);
	read_exact(fd, hello, sizeof(hello));
	memset(junk, 0x41, sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	expect_closed(fd);
	check_still_serving(f, "after-garbage");
	assert_int_equal(wt_boot_server_refused(f->srv), refused + 1);

	/* truncated handshake, then hang up */
	fd = raw_connect(f->port);
	assert_int_equal(write(fd, junk, 10), 10);
	close(fd);
	check_still_serving(f, "after-truncated-handshake");

	/* authenticated, then a huge key length */
	fd = raw_authed(f);
	send_header(fd, 1, 0xffffffffu, 0xffffffffu, 0);
	expect_closed(fd);
	check_still_serving(f, "after-huge-length");

	/* huge value length on SET */
	fd = raw_authed(f);
	send_header(fd, 1, 3, WT_BOOT_VALUE_MAX + 1, 0);
	expect_closed(fd);

	/* zero-length key */
	fd = raw_authed(f);
	send_header(fd, 2, 0, 0, 100);
	expect_closed(fd);

	/* unknown op */
	fd = raw_authed(f);
	send_header(fd, 77, 3, 0, 0);
	expect_closed(fd);
	check_still_serving(f, "after-unknown-op");

	/* GET with a value, ADD with the wrong delta size, non-zero reserved bytes */
	fd = raw_authed(f);
	send_header(fd, 2, 3, 5, 0);
	expect_closed(fd);
	fd = raw_authed(f);
	send_header(fd, 3, 3, 4, 0);
	expect_closed(fd);
	fd = raw_authed(f);
	{
		uint8_t h[16] = {1, 9};

		put32(h + 4, 1);
		assert_int_equal(write(fd, h, sizeof(h)), sizeof(h));
	}
	expect_closed(fd);

	/* a truncated frame then hang-up, and a truncated body then hang-up */
	fd = raw_authed(f);
	assert_int_equal(write(fd, "\x01\x00\x00", 3), 3);
	close(fd);
	fd = raw_authed(f);
	send_header(fd, 1, 10, 10, 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);

	/* a client that parks a GET and hangs up */
	fd = raw_authed(f);
	send_header(fd, 2, 4, 0, 60000);
	assert_int_equal(write(fd, "wait", 4), 4);
	close(fd);

	/* a pipelining client that never reads its answers does not stall anyone */
	fd = raw_authed(f);
	for (int i = 0; i < 200; i++) {
		send_header(fd, 2, 3, 0, 0);
		if (write(fd, "big", 3) != 3)
			break;
	}
	check_still_serving(f, "during-pipeline");
	close(fd);

	/* random bytes from the start */
	for (int round = 0; round < 20; round++) {
		uint8_t r[200];

		fd = raw_connect(f->port);
		wt_util_random(r, sizeof(r));
		if (write(fd, r, sizeof(r)) < 0)
			fail_msg("write: %s", strerror(errno));
		close(fd);
	}
	/* random bytes after authenticating */
	for (int round = 0; round < 20; round++) {
		uint8_t r[300];

		fd = raw_authed(f);
		wt_util_random(r, sizeof(r));
		if (write(fd, r, sizeof(r)) < 0)
			fail_msg("write: %s", strerror(errno));
		close(fd);
	}
	check_still_serving(f, "after-fuzz");

	/* the silent connection was dropped at the handshake deadline (10 s) */
	read_exact(silent, hello, sizeof(hello));
	expect_closed(silent);
	check_still_serving(f, "after-silent");
}

static void *parked_get(void *arg)
{
	worker_t *w = arg;
	wt_boot_store_t *st = connect_ok(w->f);
	char buf[8];
	size_t len;

	w->nadds = 1; /* connected */
	w->rc = wt_boot_store_get(st, "never-set", buf, sizeof(buf), &len, 60);
	wt_boot_store_close(st);
	return NULL;
}

static void test_stop_with_waiters(void **state)
{
	fixture_t *f2;
	worker_t w = {0};
	pthread_t th;
	uint64_t t0;

	(void)state;
	assert_int_equal(setup((void **)&f2), 0);
	w.f = f2;
	assert_int_equal(pthread_create(&th, NULL, parked_get, &w), 0);
	while (wt_boot_server_clients(f2->srv) < 1)
		wt_util_sleep_ns(10000000ull);
	wt_util_sleep_ns(100000000ull); /* let the GET reach the server */
	t0 = wt_util_time_ns();
	wt_boot_server_stop(f2->srv);
	pthread_join(th, NULL);
	assert_true(wt_util_time_ns() - t0 < 20000000000ull);
	assert_int_equal(w.rc, WEFT_ERR_PEER_FAILED);
	free(f2);
}

static void test_ipv6(void **state)
{
	wt_boot_server_t *srv = NULL;
	wt_boot_store_t *st = NULL;
	wt_util_key_t key;
	char err[256], ip[64];
	size_t len;

	(void)state;
	wt_util_key_from_token(&key, TOKEN);
	if (wt_boot_server_start("::1", 0, &key, &srv, err, sizeof(err)) != WEFT_OK) {
		skip(); /* no IPv6 loopback here */
	}
	assert_int_equal(
	    wt_boot_store_connect("::1", wt_boot_server_port(srv), &key, 10, &st, err, sizeof(err)),
	    WEFT_OK);
	assert_int_equal(wt_boot_store_set(st, "six", "6", 1), WEFT_OK);
	assert_int_equal(wt_boot_store_get(st, "six", ip, sizeof(ip), &len, 5), WEFT_OK);
	assert_int_equal(len, 1);
	assert_int_equal(wt_boot_store_local_ip(st, ip, sizeof(ip)), WEFT_OK);
	assert_string_equal(ip, "::1");
	wt_boot_store_close(st);
	wt_boot_server_stop(srv);
}

static void test_wildcard(void **state)
{
	wt_boot_server_t *srv = NULL;
	wt_boot_store_t *st = NULL;
	wt_util_key_t key;
	char err[256];

	(void)state;
	wt_util_key_from_token(&key, TOKEN);
	assert_int_equal(wt_boot_server_start(NULL, 0, &key, &srv, err, sizeof(err)), WEFT_OK);
	assert_true(wt_boot_server_port(srv) > 0);
	assert_int_equal(
	    wt_boot_store_connect(HOST, wt_boot_server_port(srv), &key, 10, &st, err, sizeof(err)),
	    WEFT_OK);
	assert_int_equal(wt_boot_store_set(st, "w", "1", 1), WEFT_OK);
	check_value(st, "w", "1", 1);
	wt_boot_store_close(st);
	wt_boot_server_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_set_get, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_get_waits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_get_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_add, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wrong_token, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_must_prove_token, setup, teardown),
	    cmocka_unit_test(test_unreachable),
	    cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile_clients, setup, teardown),
	    cmocka_unit_test(test_stop_with_waiters),
	    cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_wildcard),
	};

	/* Raw test clients write to sockets the server may already have closed. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
