/* Helpers shared by the channel tests (tests/unit/channel): ranks 0 and 1 of a size-2 job
 * in one process, two channels joined by a real link driver (shm or tcp). */
#ifndef WT_TEST_CHANTEST_H
#define WT_TEST_CHANTEST_H

#include <stddef.h>

#include "drivers/link.h"
#include "layers/channel/channel.h"

/* The pair: link[r] and ch[r] belong to rank r. link[r] is the top of rank r's link
 * stack: the driver's link, under WEFT_FAULT the fault injector on it, and the
 * reliability layer on what is not reliable (as the API stacks them). */
typedef struct {
	const char *driver;
	const wt_link_ops_t *ops; /* the driver's */
	wt_link_t *link[2];
	wt_link_t *stack[2][3]; /* bottom first */
	int depth[2];
	int reliable_driver; /* the driver itself is reliable (reports a lost peer) */
	int lossy;	     /* frames may be lost and resent: the reliability layer runs */
	wt_chan_t *ch[2];
	double wait_s; /* how long ct_pump_until waits before failing the test */
	int poll_ms;   /* how long an idle ct_pump_once sleeps on the fds */
} ct_fab_t;

typedef struct {
	/* Distinct per test program: jobs of tests running at once must not share names. */
	const char *job_prefix;
	const char *token;
	wt_chan_config_t chan; /* rank and size are set per rank */
	double wait_s;
	int poll_ms;
} ct_opts_t;

/* Opens and connects both links and a channel on each; skips the test when the driver
 * is not built or cannot run here. */
void ct_open(ct_fab_t *f, const char *driver, const ct_opts_t *o);
/* Destroys the channels (which must have nothing outstanding) and closes the links; a
 * test may have closed either already and set it to NULL. */
void ct_close(ct_fab_t *f);
/* Closes rank r's link stack (top first) and sets link[r] to NULL. */
void ct_close_link(ct_fab_t *f, int r);
/* Progresses the ranks in mask (bit r: rank r) once; when idle, sleeps briefly on their
 * fds as the progress thread does. Returns the events progress reported. */
int ct_pump_once(ct_fab_t *f, int mask);
/* Pumps both ranks until *count reaches target; fails the test after f->wait_s. */
void ct_pump_until(ct_fab_t *f, const int *count, int target);

/* The main() of a channel test program, after its DRIVER_TESTS(drv) list of tests (each
 * given the driver name as its state): argv[1] picks the driver, shm by default. */
#define CT_DRIVER_MAIN(title)                                                                      \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		static char shm[] = "shm", tcp[] = "tcp", udp[] = "udp";                           \
		const struct CMUnitTest shm_tests[] = {DRIVER_TESTS(shm)};                         \
		const struct CMUnitTest tcp_tests[] = {DRIVER_TESTS(tcp)};                         \
		const struct CMUnitTest udp_tests[] = {DRIVER_TESTS(udp)};                         \
                                                                                                   \
		if (argc > 1 && strcmp(argv[1], "tcp") == 0)                                       \
			return cmocka_run_group_tests_name(title " over tcp", tcp_tests, NULL,     \
							   NULL);                                  \
		if (argc > 1 && strcmp(argv[1], "udp") == 0)                                       \
			return cmocka_run_group_tests_name(title " over udp", udp_tests, NULL,     \
							   NULL);                                  \
		return cmocka_run_group_tests_name(title " over shm", shm_tests, NULL, NULL);      \
	}

/* What an op's completion reported: ct_on_done is its callback (arg: a ct_done_t), and
 * checks that msg is NULL exactly on success. */
typedef struct {
	int fired;
	weft_status_t st;
	size_t bytes;
	char msg[256];
} ct_done_t;
void ct_on_done(void *arg, weft_status_t st, size_t bytes, const char *msg);

#endif
