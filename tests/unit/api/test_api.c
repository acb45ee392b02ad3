/* Unit tests of the API layer in a world of one (no launcher environment): argument
 * checking, count 0, in place, request semantics, strerror and version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <weft/weft.h>

static int setup(void **state)
{
	weft_comm_t *comm = NULL;

	unsetenv("RANK");
	unsetenv("WORLD_SIZE");
	unsetenv("SLURM_PROCID");
	unsetenv("SLURM_NTASKS");
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("OMPI_COMM_WORLD_SIZE");
	if (weft_init(&comm) != WEFT_OK)
		return -1;
	*state = comm;
	return 0;
}

static int teardown(void **state)
{
	return weft_comm_destroy(*state) == WEFT_OK ? 0 : -1;
}

static void test_singleton(void **state)
{
	weft_comm_t *comm = *state;

	assert_int_equal(weft_comm_rank(comm), 0);
	assert_int_equal(weft_comm_size(comm), 1);
	assert_string_equal(weft_comm_last_error(comm), "");
}

static void test_bad_args(void **state)
{
	weft_comm_t *comm = *state;
	float a[4] = {1, 2, 3, 4}, b[4];
	weft_request_t *req = (weft_request_t *)&req;

	assert_int_equal(weft_allreduce(a, b, 4, WEFT_FLOAT32, WEFT_SUM, NULL, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_allreduce(NULL, b, 4, WEFT_FLOAT32, WEFT_SUM, comm, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(weft_comm_last_error(comm), "sendbuf"));
	assert_int_equal(weft_allreduce(a, NULL, 4, WEFT_FLOAT32, WEFT_SUM, comm, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(weft_comm_last_error(comm), "recvbuf"));
	assert_int_equal(weft_allreduce(a, b, 4, (weft_dtype_t)42, WEFT_SUM, comm, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(weft_comm_last_error(comm), "dtype"));
	assert_int_equal(weft_allreduce(a, b, 4, (weft_dtype_t)-1, WEFT_SUM, comm, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_allreduce(a, b, 4, WEFT_FLOAT32, (weft_op_t)9, comm, NULL),
			 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(weft_comm_last_error(comm), "op"));
	assert_int_equal(weft_allreduce(a, b, SIZE_MAX / 2, WEFT_FLOAT32, WEFT_SUM, comm, &req),
			 WEFT_ERR_INVALID_ARG);
	assert_null(req); /* failed calls leave no request behind */
	assert_non_null(strstr(weft_comm_last_error(comm), "overflow"));
	assert_int_equal(weft_wait(NULL), WEFT_ERR_INVALID_ARG);
	req = NULL;
	assert_int_equal(weft_wait(&req), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_test(&req, NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_comm_destroy(NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(weft_comm_rank(NULL), -1);
	assert_int_equal(weft_comm_size(NULL), -1);
	assert_int_equal(weft_init(NULL), WEFT_ERR_INVALID_ARG);
}

static void test_count_zero(void **state)
{
	weft_comm_t *comm = *state;
	weft_request_t *req = NULL;

	assert_int_equal(weft_allreduce(NULL, NULL, 0, WEFT_FLOAT32, WEFT_SUM, comm, NULL),
			 WEFT_OK);
	assert_int_equal(weft_allreduce(NULL, NULL, 0, WEFT_INT8, WEFT_MAX, comm, &req), WEFT_OK);
	assert_non_null(req);
	assert_int_equal(weft_wait(&req), WEFT_OK);
	assert_null(req);
}

static void test_copy_and_avg(void **state)
{
	weft_comm_t *comm = *state;
	int32_t a[5] = {-7, 3, 0, 100, -1}, b[5] = {0};
	double d[3] = {1.5, -2.25, 8};

	assert_int_equal(weft_allreduce(a, b, 5, WEFT_INT32, WEFT_SUM, comm, NULL), WEFT_OK);
	assert_memory_equal(a, b, sizeof(a));
	/* The mean of one rank's values is the values themselves. */
	assert_int_equal(weft_allreduce(a, b, 5, WEFT_INT32, WEFT_AVG, comm, NULL), WEFT_OK);
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(weft_allreduce(d, d, 3, WEFT_FLOAT64, WEFT_PROD, comm, NULL), WEFT_OK);
	assert_true(d[0] == 1.5 && d[1] == -2.25 && d[2] == 8);
}

static void test_requests(void **state)
{
	weft_comm_t *comm = *state;
	uint16_t h[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
	weft_request_t *reqs[3] = {NULL, NULL, NULL};
	int done = 0;

	assert_int_equal(weft_allreduce(h, out, 8, WEFT_BFLOAT16, WEFT_MAX, comm, &reqs[0]),
			 WEFT_OK);
	assert_non_null(reqs[0]);
	assert_int_equal(weft_test(&reqs[0], &done), WEFT_OK);
	assert_int_equal(done, 1);
	assert_null(reqs[0]);
	assert_memory_equal(h, out, sizeof(h));
	assert_int_equal(weft_allreduce(h, out, 8, WEFT_FLOAT16, WEFT_SUM, comm, &reqs[0]),
			 WEFT_OK);
	assert_int_equal(weft_allreduce(h, h, 8, WEFT_UINT8, WEFT_MIN, comm, &reqs[2]), WEFT_OK);
	assert_int_equal(weft_waitall(reqs, 3), WEFT_OK);
	assert_null(reqs[0]);
	assert_null(reqs[2]);
	assert_int_equal(weft_waitall(NULL, 0), WEFT_OK);
}

static void test_strings(void **state)
{
	(void)state;
	assert_string_equal(weft_version(), "0.1.0");
	assert_string_equal(weft_strerror(WEFT_OK), "success");
	assert_non_null(strstr(weft_strerror(WEFT_ERR_AUTH), "auth"));
	assert_string_equal(weft_strerror((weft_status_t)-999), "unknown status");
	for (int s = WEFT_ERR_NO_DEVICE; s <= WEFT_INPROGRESS; s++)
		assert_string_not_equal(weft_strerror((weft_status_t)s), "unknown status");
}

static void test_bad_env(void **state)
{
	weft_comm_t *comm = NULL;

	(void)state;
	setenv("RANK", "3", 1);
	setenv("WORLD_SIZE", "2", 1);
	assert_int_equal(weft_init(&comm), WEFT_ERR_INVALID_ARG);
	assert_null(comm);
	setenv("RANK", "x1", 1);
	assert_int_equal(weft_init(&comm), WEFT_ERR_INVALID_ARG);
	unsetenv("WORLD_SIZE");
	setenv("RANK", "0", 1);
	assert_int_equal(weft_init(&comm), WEFT_ERR_INVALID_ARG);
	unsetenv("RANK");
	setenv("WEFT_TIMEOUT", "soon", 1);
	assert_int_equal(weft_init(&comm), WEFT_ERR_INVALID_ARG);
	unsetenv("WEFT_TIMEOUT");
	setenv("WEFT_LINKS", "carrier-pigeon", 1);
	assert_int_equal(weft_init(&comm), WEFT_ERR_INVALID_ARG);
	unsetenv("WEFT_LINKS");
	assert_int_equal(weft_init(&comm), WEFT_OK);
	assert_int_equal(weft_comm_destroy(comm), WEFT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_singleton),  cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_count_zero), cmocka_unit_test(test_copy_and_avg),
	    cmocka_unit_test(test_requests),   cmocka_unit_test(test_strings),
	    cmocka_unit_test(test_bad_env),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
