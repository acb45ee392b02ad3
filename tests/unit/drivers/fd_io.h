/* Pipes between a driver test and the child process it forks (tests/unit/drivers): whole
 * reads and writes, and the child's half of the address exchange. Include after cmocka.h. */
#ifndef WT_TEST_FD_IO_H
#define WT_TEST_FD_IO_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include "drivers/link.h"

static inline void write_all_fd(int fd, const void *buf, size_t len)
{
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

static inline void read_all_fd(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* The child's side of a two-rank link: opens it (as rank 1 under c), sends its address to
 * the parent (u32 length, then the bytes), reads rank 0's the same way and connects.
 * Returns 0, or the exit code that names the stage that failed: 2 open or address, 3
 * sending, 4 receiving, 5 connect. */
static inline int child_link_up(const wt_link_ops_t *ops, const wt_link_config_t *c, wt_link_t **l,
				int to_parent, int from_parent)
{
	uint8_t blob[WT_LINK_ADDR_MAX];
	size_t len = sizeof(blob);
	uint32_t plen;

	if (ops->open(c, l) != WEFT_OK || ops->address(*l, blob, &len) != WEFT_OK)
		return 2;
	plen = (uint32_t)len;
	if (write(to_parent, &plen, 4) != 4 || write(to_parent, blob, len) != (ssize_t)len)
		return 3;
	if (read(from_parent, &plen, 4) != 4 || plen > sizeof(blob) ||
	    read(from_parent, blob, plen) != (ssize_t)plen)
		return 4;
	return ops->connect(*l, 0, blob, plen) == WEFT_OK ? 0 : 5;
}

#endif
