/* Whether this process started DPDK's EAL (tests/integration/dpdk): run under weftrun with
 * WEFT_LINKS set, it initialises weft, runs one allreduce and looks for the EAL's
 * interrupt thread and its memory. "none" expects neither (a job that never uses the
 * dpdk link pays nothing for libweft linking DPDK), "eal" both (the check works). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft.h>

static int eal_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL && !found) {
		char path[300], name[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof(name), f) != NULL && strncmp(name, "eal-intr", 8) == 0)
			found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

static int eal_memory(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL && !found)
		found = strstr(line, "nohuge") != NULL || strstr(line, "rtemap") != NULL;
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	weft_comm_t *world = NULL;
	int want = argc > 1 && strcmp(argv[1], "eal") == 0;
	float x = 1.0f, y = 0.0f;
	weft_status_t st = weft_init(&world);
	int thr, mem;

	if (st != WEFT_OK) {
		fprintf(stderr, "lazy_check: weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	st = weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, world, NULL);
	if (st != WEFT_OK || y != (float)weft_comm_size(world)) {
		fprintf(stderr, "lazy_check: allreduce failed\n");
		return 1;
	}
	thr = eal_thread();
	mem = eal_memory();
	weft_comm_destroy(world);
	if (thr != want || mem != want) {
		fprintf(stderr, "lazy_check: expected %s, found EAL thread %d, EAL memory %d\n",
			want ? "the EAL" : "no EAL", thr, mem);
		return 1;
	}
	printf("lazy_check: rank ok (%s)\n", want ? "EAL running" : "no EAL");
	return 0;
}
