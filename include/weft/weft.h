/* weft public API: collective communication between host processes.
 * This is the only header programs include; it compiles alone as C11 and C++. */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

/* Status: WEFT_OK is 0, "in progress" is positive, errors are negative. */
typedef enum {
	WEFT_OK = 0,
	WEFT_INPROGRESS = 1,
	WEFT_ERR_INVALID_ARG = -1,
	WEFT_ERR_NO_MEMORY = -2,
	WEFT_ERR_UNSUPPORTED = -3,
	WEFT_ERR_SYSTEM = -4,
	WEFT_ERR_TIMEOUT = -5,
	WEFT_ERR_PEER_FAILED = -6,
	WEFT_ERR_ABORTED = -7,
	WEFT_ERR_PROTOCOL = -8,
	WEFT_ERR_AUTH = -9,
	WEFT_ERR_MISMATCH = -10,
	WEFT_ERR_NO_DEVICE = -11,
} weft_status_t;

typedef enum {
	WEFT_INT8 = 0,
	WEFT_UINT8 = 1,
	WEFT_INT32 = 2,
	WEFT_UINT32 = 3,
	WEFT_INT64 = 4,
	WEFT_UINT64 = 5,
	WEFT_FLOAT16 = 6,
	WEFT_BFLOAT16 = 7,
	WEFT_FLOAT32 = 8,
	WEFT_FLOAT64 = 9,
	WEFT_DTYPE_COUNT_ = 10 /* not a type; one past the last */
} weft_dtype_t;

/* WEFT_AVG divides the sum by the communicator size; on integers it truncates toward
 * zero. FLOAT16 and BFLOAT16 are computed in float32 and rounded once per operation. */
typedef enum {
	WEFT_SUM = 0,
	WEFT_PROD = 1,
	WEFT_MIN = 2,
	WEFT_MAX = 3,
	WEFT_AVG = 4,
	WEFT_OP_COUNT_ = 5 /* not an op; one past the last */
} weft_op_t;

typedef struct weft_comm weft_comm_t;
typedef struct weft_request weft_request_t;

/* Thread safety: different communicators may be used from different threads at once;
 * one communicator must be used by one thread at a time. Requests may be waited on
 * from any thread, one thread per request. */

WEFT_API const char *weft_version(void);
WEFT_API const char *weft_strerror(weft_status_t status);

/* The world communicator from the environment: RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT (LOCAL_RANK, LOCAL_WORLD_SIZE when set); SLURM_PROCID/SLURM_NTASKS and
 * OMPI_COMM_WORLD_RANK/SIZE as fallbacks. */
WEFT_API weft_status_t weft_init(weft_comm_t **world);
WEFT_API int weft_comm_rank(const weft_comm_t *comm);
WEFT_API int weft_comm_size(const weft_comm_t *comm);
WEFT_API weft_status_t weft_comm_destroy(weft_comm_t *comm);
/* Detailed message of the last failure on comm ("" if none). */
WEFT_API const char *weft_comm_last_error(const weft_comm_t *comm);

/* sendbuf == recvbuf means in place. req == NULL blocks until done; otherwise the call
 * returns at once and *req completes later (weft_wait / weft_test). */
WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
				      weft_dtype_t dtype, weft_op_t op, weft_comm_t *comm,
				      weft_request_t **req);

/* Waits, frees the request, sets *req = NULL and returns the operation's status. */
WEFT_API weft_status_t weft_wait(weft_request_t **req);
/* Sets *done; when done, frees the request, sets *req = NULL and returns its status. */
WEFT_API weft_status_t weft_test(weft_request_t **req, int *done);
/* Waits for all, frees each and sets it to NULL; returns the first error. NULL entries
 * are skipped. */
WEFT_API weft_status_t weft_waitall(weft_request_t **reqs, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
