/* Test helper for weftrun --tag-output (tests/integration): writes numbered lines to stdout
 * and stderr, each line in several write() calls, so a launcher that forwards bytes as they
 * come would interleave ranks mid-line. Ends with a line that has no newline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n <= 0)
			exit(1);
		s += n;
		len -= (size_t)n;
	}
}

static void pause_briefly(void)
{
	struct timespec ts = {0, 200000};

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *rank = getenv("RANK");
	char head[64], pad[200];
	long i, lines = argc > 1 ? strtol(argv[1], NULL, 10) : 50;

	if (!rank)
		return 1;
	memset(pad, 'a' + atoi(rank) % 26, sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (i = 0; i < lines; i++) {
		int fd = i % 2 ? 2 : 1;

		snprintf(head, sizeof(head), "rank %s line %ld ", rank, i);
		put(fd, head);
		pause_briefly();
		put(fd, pad);
		pause_briefly();
		put(fd, " end\n");
	}
	put(1, "rank ");
	put(1, rank);
	put(1, " partial");
	return 0;
}
