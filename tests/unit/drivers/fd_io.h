/* Whole reads and writes on a pipe between a driver test and the child process it forks
 * (tests/unit/drivers). Include after cmocka.h. */
#ifndef WT_TEST_FD_IO_H
#define WT_TEST_FD_IO_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

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

#endif
