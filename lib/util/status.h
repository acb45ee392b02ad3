/* Internal status helpers for every layer (lib/util). The status type is the public
 * weft_status_t; backpressure is its own positive code and never an error. */
#ifndef WT_UTIL_STATUS_H
#define WT_UTIL_STATUS_H

#include <weft/weft.h>

/* "Try again later": a queue or ring is full. Never returned to users. */
#define WT_AGAIN ((weft_status_t)2)

static inline int wt_util_is_err(weft_status_t st)
{
	return st < 0;
}

/* errno -> status, done once at the edge where a system call failed. */
weft_status_t wt_util_status_from_errno(int err);

#endif
