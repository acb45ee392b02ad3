/* Calls weft_init from whatever environment it is given and checks the status against
 * the expected one named on the command line (tests/integration). With --allreduce it
 * then allreduces once across the world and checks the sum. */
#include <stdio.h>
#include <string.h>
#include <weft/weft.h>

static const struct {
	const char *name;
	weft_status_t st;
} names[] = {
    {"OK", WEFT_OK},
    {"TIMEOUT", WEFT_ERR_TIMEOUT},
    {"AUTH", WEFT_ERR_AUTH},
    {"INVALID_ARG", WEFT_ERR_INVALID_ARG},
    {"PEER_FAILED", WEFT_ERR_PEER_FAILED},
};

int main(int argc, char **argv)
{
	weft_comm_t *comm = NULL;
	weft_status_t want = WEFT_OK, st;
	int found = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s EXPECTED_STATUS [--allreduce]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(argv[1], names[i].name) == 0) {
			want = names[i].st;
			found = 1;
		}
	}
	if (!found) {
		fprintf(stderr, "unknown status name %s\n", argv[1]);
		return 2;
	}
	st = weft_init(&comm);
	printf("weft_init: %s\n", weft_strerror(st));
	if (st != want) {
		fprintf(stderr, "expected %s, got %s\n", argv[1], weft_strerror(st));
		if (st == WEFT_OK)
			weft_comm_destroy(comm);
		return 1;
	}
	if (st != WEFT_OK)
		return 0;
	if (argc > 2 && strcmp(argv[2], "--allreduce") == 0) {
		int x = weft_comm_rank(comm) + 1, sum = 0, n = weft_comm_size(comm);
		st = weft_allreduce(&x, &sum, 1, WEFT_INT32, WEFT_SUM, comm, NULL);
		if (st != WEFT_OK || sum != n * (n + 1) / 2) {
			fprintf(stderr, "allreduce: %s, sum %d want %d\n", weft_strerror(st), sum,
				n * (n + 1) / 2);
			weft_comm_destroy(comm);
			return 1;
		}
		printf("allreduce ok\n");
	}
	weft_comm_destroy(comm);
	return 0;
}
