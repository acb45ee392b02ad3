/* errno -> weft_status_t, applied once where a system call fails (lib/util). */
#include <errno.h>
#include "lib/util/status.h"

weft_status_t wt_util_status_from_errno(int err)
{
	switch (err) {
	case 0:
		return WEFT_OK;
	case ENOMEM:
		return WEFT_ERR_NO_MEMORY;
	case ETIMEDOUT:
		return WEFT_ERR_TIMEOUT;
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
		return WEFT_ERR_PEER_FAILED;
	case EINVAL:
		return WEFT_ERR_INVALID_ARG;
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
		return WT_AGAIN;
	default:
		return WEFT_ERR_SYSTEM;
	}
}
