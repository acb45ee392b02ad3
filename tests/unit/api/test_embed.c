/* Unit tests of the embedding path (layers/api): weft_get_unique_id's id format and
 * address choice, weft_comm_init_rank's argument and id validation in a world of one (no
 * store needed), and three contexts of one process wired up over loopback tcp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include <weft/weft.h>
#include "layers/api/api_int.h"

static void clear_env(void)
{
	static const char *const vars[] = {
	    "RANK",	   "WORLD_SIZE",  "LOCAL_RANK",	    "LOCAL_WORLD_SIZE",
	    "MASTER_ADDR", "MASTER_PORT", "WEFT_JOB_TOKEN", "WEFT_SOCKET_ADDR",
	    NULL};

	for (int i = 0; vars[i] != NULL; i++)
		unsetenv(vars[i]);
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

/* The address text an id carries (bytes 48.., length at byte 6). */
static void id_addr(const weft_unique_id_t *id, char *buf, size_t cap)
{
	size_t n = id->bytes[6];

	assert_true(n > 0 && n < cap);
	memcpy(buf, id->bytes + 48, n);
	buf[n] = '\0';
}

static void test_get_id_format(void **state)
{
	weft_unique_id_t a, b;
	char addr[80];

	(void)state;
	assert_int_equal(weft_get_unique_id(NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_get_unique_id(&a), WEFT_OK);
	assert_int_equal(weft_get_unique_id(&b), WEFT_OK);
	assert_memory_equal(a.bytes, "WFID", 4);
	assert_int_equal(a.bytes[4], 1);
	assert_int_equal(a.bytes[5], 32);
	assert_true((a.bytes[8] << 8 | a.bytes[9]) != 0);
	id_addr(&a, addr, sizeof(addr));
	assert_string_equal(addr, "127.0.0.1");
	/* Fresh token and a store of its own per id. */
	assert_memory_not_equal(a.bytes + 16, b.bytes + 16, 32);
	assert_memory_not_equal(a.bytes + 8, b.bytes + 8, 2);
}

static void test_get_id_address(void **state)
{
	weft_unique_id_t id;
	char addr[80];

	(void)state;
	setenv("MASTER_ADDR", "127.0.0.2", 1);
	assert_int_equal(weft_get_unique_id(&id), WEFT_OK);
	id_addr(&id, addr, sizeof(addr));
	assert_string_equal(addr, "127.0.0.2");
	setenv("WEFT_SOCKET_ADDR", "::1", 1);
	assert_int_equal(weft_get_unique_id(&id), WEFT_OK);
	id_addr(&id, addr, sizeof(addr));
	assert_string_equal(addr, "::1");
	memset(&id, 0x77, sizeof(id));
	for (int i = 0; i < 4; i++) {
		static const char *const bad[] = {"not-an-ip", "0.0.0.0", "::", "10.0.0.300"};
		setenv("WEFT_SOCKET_ADDR", bad[i], 1);
		assert_int_equal(weft_get_unique_id(&id), WEFT_ERR_INVALID_ARG);
	}
	unsetenv("WEFT_SOCKET_ADDR");
	setenv("MASTER_ADDR", "bad host!", 1);
	assert_int_equal(weft_get_unique_id(&id), WEFT_ERR_INVALID_ARG);
	unsetenv("MASTER_ADDR");
}

static void test_init_rank_args(void **state)
{
	weft_unique_id_t id;
	weft_comm_t *comm;

	(void)state;
	assert_int_equal(weft_get_unique_id(&id), WEFT_OK);
	assert_int_equal(weft_comm_init_rank(NULL, 1, &id, 0), WEFT_ERR_INVALID_ARG);
	comm = (weft_comm_t *)&comm;
	assert_int_equal(weft_comm_init_rank(&comm, 1, NULL, 0), WEFT_ERR_INVALID_ARG);
	for (int i = 0; i < 5; i++) {
		static const int args[][2] = {{0, 0}, {-1, 0}, {1, 1}, {1, -1}, {3, 3}};
		comm = (weft_comm_t *)&comm;
		assert_int_equal(weft_comm_init_rank(&comm, args[i][0], &id, args[i][1]),
				 WEFT_ERR_INVALID_ARG);
		assert_null(comm);
	}
}

static void expect_invalid(const weft_unique_id_t *id)
{
	weft_comm_t *comm = (weft_comm_t *)&comm;

	assert_int_equal(weft_comm_init_rank(&comm, 1, id, 0), WEFT_ERR_INVALID_ARG);
	assert_null(comm);
}

static void test_init_rank_corrupt(void **state)
{
	weft_unique_id_t id, bad;

	(void)state;
	assert_int_equal(weft_get_unique_id(&id), WEFT_OK);
	memset(&bad, 0, sizeof(bad));
	expect_invalid(&bad);
	bad = id;
	bad.bytes[3] ^= 0x20; /* magic */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[4] = 0; /* version */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[5] = 31; /* token length */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[6] = 0; /* address length */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[6] = 64;
	expect_invalid(&bad);
	bad = id;
	bad.bytes[6] = 5; /* shorter than the text: "127.0" then non-zero padding */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[6] = 12; /* longer than the text: a NUL inside */
	expect_invalid(&bad);
	bad = id;
	memcpy(bad.bytes + 48, "a b.c.d.e", 9); /* same length, not an address */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[8] = bad.bytes[9] = 0; /* port 0 */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[12] = 1; /* reserved */
	expect_invalid(&bad);
	bad = id;
	bad.bytes[120] = 1;
	expect_invalid(&bad);
}

/* A world of one never dials the store: an id naming a port nobody serves works. */
static void test_init_rank_single(void **state)
{
	weft_unique_id_t id;
	weft_comm_t *comm = NULL;
	int32_t a[3] = {5, -6, 7}, b[3] = {0, 0, 0};

	(void)state;
	memset(&id, 0, sizeof(id));
	memcpy(id.bytes, "WFID", 4);
	id.bytes[4] = 1;
	id.bytes[5] = 32;
	id.bytes[6] = 9;
	id.bytes[8] = 0;
	id.bytes[9] = 1; /* port 1: nothing listens there */
	memset(id.bytes + 16, 0xab, 32);
	memcpy(id.bytes + 48, "127.0.0.1", 9);
	assert_int_equal(weft_comm_init_rank(&comm, 1, &id, 0), WEFT_OK);
	assert_non_null(comm);
	assert_int_equal(weft_comm_rank(comm), 0);
	assert_int_equal(weft_comm_size(comm), 1);
	assert_int_equal(comm->ctx->local_rank, 0);
	assert_int_equal(comm->ctx->local_size, 1);
	assert_int_equal(weft_allreduce(a, b, 3, WEFT_INT32, WEFT_SUM, comm, NULL), WEFT_OK);
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(weft_comm_destroy(comm), WEFT_OK);
}

typedef struct {
	const weft_unique_id_t *id;
	int rank, nranks;
	weft_status_t st;
	int local_rank, local_size;
	int64_t sum;
} rank_arg_t;

static void *rank_main(void *p)
{
	rank_arg_t *a = p;
	weft_comm_t *comm = NULL;
	int64_t v = 10 + a->rank;

	a->st = weft_comm_init_rank(&comm, a->nranks, a->id, a->rank);
	if (a->st != WEFT_OK)
		return NULL;
	a->local_rank = comm->ctx->local_rank;
	a->local_size = comm->ctx->local_size;
	a->st = weft_allreduce(&v, &a->sum, 1, WEFT_INT64, WEFT_SUM, comm, NULL);
	if (weft_comm_destroy(comm) != WEFT_OK && a->st == WEFT_OK)
		a->st = WEFT_ERR_SYSTEM;
	return NULL;
}

/* Three contexts in one process from one id, without any launcher variable: local ranks
 * come from the host identities (all equal here), ordered by rank. */
static void test_local_ranks_from_hosts(void **state)
{
	weft_unique_id_t id;
	pthread_t th[3];
	rank_arg_t args[3];

	(void)state;
	setenv("WEFT_LINKS", "tcp", 1);
	setenv("WEFT_CONNECT_TIMEOUT", "30", 1);
	assert_int_equal(weft_get_unique_id(&id), WEFT_OK);
	for (int r = 0; r < 3; r++) {
		memset(&args[r], 0, sizeof(args[r]));
		args[r].id = &id;
		args[r].rank = r;
		args[r].nranks = 3;
		assert_int_equal(pthread_create(&th[r], NULL, rank_main, &args[r]), 0);
	}
	for (int r = 0; r < 3; r++)
		pthread_join(th[r], NULL);
	unsetenv("WEFT_LINKS");
	unsetenv("WEFT_CONNECT_TIMEOUT");
	for (int r = 0; r < 3; r++) {
		assert_int_equal(args[r].st, WEFT_OK);
		assert_int_equal(args[r].local_rank, r);
		assert_int_equal(args[r].local_size, 3);
		assert_int_equal(args[r].sum, 33);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_get_id_format, setup),
	    cmocka_unit_test_setup(test_get_id_address, setup),
	    cmocka_unit_test_setup(test_init_rank_args, setup),
	    cmocka_unit_test_setup(test_init_rank_corrupt, setup),
	    cmocka_unit_test_setup(test_init_rank_single, setup),
	    cmocka_unit_test_setup(test_local_ranks_from_hosts, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
