/* weftrun: starts the local ranks of a weft job, like torchrun / mpirun (tools/).
 * A plain program: it does not link libweft; it only sets the environment weft_init reads. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define WR_MAX_RANKS 4096
#define WR_MAX_WORLD 1048576L
#define WR_TOKEN_BYTES 32
#define WR_TOKEN_MAX 128  /* WT_UTIL_TOKEN_MAX: longer tokens are rejected by the library */
#define WR_LINE_BUF 65536 /* longer lines are split, each piece tagged */
#define WR_DEFAULT_GRACE_MS 3000
#define WR_EXIT_USAGE 2

/* One of a rank's two output pipes, when --tag-output is on. */
typedef struct {
	int fd;	 /* read end, -1 once closed */
	int dst; /* STDOUT_FILENO or STDERR_FILENO */
	size_t len;
	char *buf;
} wr_stream_t;

typedef struct {
	pid_t pid;
	bool alive;
	bool exec_failed; /* already reported; its exit is not a second failure */
	wr_stream_t out[2];
} wr_rank_t;

typedef struct {
	long nproc;
	long nnodes;
	long node_rank;
	const char *master_addr;
	const char *master_port;
	bool tag_output;
	int bind;    /* WR_BIND_NONE, _CORE or _CPU */
	char **argv; /* the program and its arguments */
} wr_opts_t;

enum { WR_BIND_NONE, WR_BIND_CORE, WR_BIND_CPU };

typedef struct {
	wr_opts_t opt;
	wr_rank_t *ranks;
	cpu_set_t *places; /* --bind-to: the CPUs of each place (a core or a CPU) */
	long nplaces;
	long nlive;
	int sfd; /* signalfd for SIGCHLD and the signals that are forwarded */
	sigset_t old_mask;
	struct sigaction old_pipe;
	pid_t self; /* weftrun's pid, for the children's parent-death check */
	struct rlimit old_nofile;
	bool ending;	     /* ranks were told to stop */
	bool killed;	     /* ... and then sent SIGKILL */
	int64_t deadline_ms; /* when ending turns into killing */
	int64_t grace_ms;
	int status; /* exit status of weftrun, set by the first failure */
	bool out_broken[3];
} wr_job_t;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: weftrun [options] prog [args...]\n"
	    "Starts the local ranks of a weft job; each rank gets RANK, WORLD_SIZE, LOCAL_RANK,\n"
	    "LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and WEFT_JOB_TOKEN.\n"
	    "\n"
	    "  -n N                     start N ranks on this node (same as --nproc-per-node)\n"
	    "  --nproc-per-node K       ranks per node (default 1)\n"
	    "  --nnodes M               number of nodes, one weftrun per node (default 1)\n"
	    "  --node-rank R            this node's index in [0, M) (default 0); its ranks are\n"
	    "                           R*K .. R*K+K-1 of WORLD_SIZE = M*K\n"
	    "  --master-addr ADDR       address of the rendezvous store (default 127.0.0.1)\n"
	    "  --master-port PORT       its port; with --nnodes 1 the default is a free port,\n"
	    "                           with --nnodes > 1 it must be given\n"
	    "  --tag-output             prefix each line of output with \"[RANK] \"\n"
	    "  --bind-to WHAT           none (default), core or cpu: local rank i runs on\n"
	    "                           the (i mod N)-th of the N cores (all hardware threads\n"
	    "                           of each) or CPUs that weftrun may run on, as mpirun's\n"
	    "                           --bind-to; its threads inherit the binding\n"
	    "  -h, --help               show this help\n"
	    "Flags take \"--flag value\" or \"--flag=value\"; torchrun's underscore spellings\n"
	    "(--nproc_per_node, --node_rank, ...) are accepted too.\n"
	    "\n"
	    "WEFT_JOB_TOKEN authenticates the ranks to each other. When it is set in weftrun's\n"
	    "environment it is passed on; otherwise weftrun makes a fresh random one per launch.\n"
	    "A job of several nodes needs the same token on every node, so with --nnodes > 1\n"
	    "WEFT_JOB_TOKEN must be set (e.g. export WEFT_JOB_TOKEN=$(openssl rand -hex 32)).\n"
	    "\n"
	    "If a rank fails, the others are sent SIGTERM and, after WEFTRUN_KILL_GRACE seconds\n"
	    "(default 3), SIGKILL; weftrun exits with the failed rank's status (128+signal if\n"
	    "it was killed). SIGINT, SIGTERM and SIGHUP are forwarded to the ranks.\n");
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whole-string decimal parse; 0 on success. */
static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || *s == '\0' || *s == ' ' || *s == '+')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

enum {
	OPT_NPROC = 1000,
	OPT_NNODES,
	OPT_NODE_RANK,
	OPT_ADDR,
	OPT_PORT,
	OPT_TAG,
	OPT_BIND,
};

static const struct option long_opts[] = {
    {"nproc-per-node", required_argument, NULL, OPT_NPROC},
    {"nproc_per_node", required_argument, NULL, OPT_NPROC},
    {"nnodes", required_argument, NULL, OPT_NNODES},
    {"node-rank", required_argument, NULL, OPT_NODE_RANK},
    {"node_rank", required_argument, NULL, OPT_NODE_RANK},
    {"master-addr", required_argument, NULL, OPT_ADDR},
    {"master_addr", required_argument, NULL, OPT_ADDR},
    {"master-port", required_argument, NULL, OPT_PORT},
    {"master_port", required_argument, NULL, OPT_PORT},
    {"tag-output", no_argument, NULL, OPT_TAG},
    {"tag_output", no_argument, NULL, OPT_TAG},
    {"bind-to", required_argument, NULL, OPT_BIND},
    {"bind_to", required_argument, NULL, OPT_BIND},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad_arg(const char *what, const char *val)
{
	fprintf(stderr, "weftrun: invalid %s '%s' (see weftrun --help)\n", what, val);
	return -1;
}

static int set_nproc(wr_opts_t *o, const char *val)
{
	long n;

	if (parse_long(val, 1, WR_MAX_RANKS, &n))
		return bad_arg("number of ranks per node", val);
	if (o->nproc && o->nproc != n) {
		fprintf(stderr, "weftrun: -n and --nproc-per-node disagree (%ld vs %ld)\n",
			o->nproc, n);
		return -1;
	}
	o->nproc = n;
	return 0;
}

static int parse_one(wr_opts_t *o, int c, const char *val)
{
	long port;

	switch (c) {
	case 'n':
	case OPT_NPROC:
		return set_nproc(o, val);
	case OPT_NNODES:
		if (parse_long(val, 1, WR_MAX_WORLD, &o->nnodes))
			return bad_arg("--nnodes", val);
		return 0;
	case OPT_NODE_RANK:
		if (parse_long(val, 0, WR_MAX_WORLD - 1, &o->node_rank))
			return bad_arg("--node-rank", val);
		return 0;
	case OPT_ADDR:
		if (*val == '\0')
			return bad_arg("--master-addr", val);
		o->master_addr = val;
		return 0;
	case OPT_PORT:
		if (parse_long(val, 1, 65535, &port))
			return bad_arg("--master-port", val);
		o->master_port = val;
		return 0;
	case OPT_TAG:
		o->tag_output = true;
		return 0;
	case OPT_BIND:
		if (strcmp(val, "none") == 0)
			o->bind = WR_BIND_NONE;
		else if (strcmp(val, "core") == 0)
			o->bind = WR_BIND_CORE;
		else if (strcmp(val, "cpu") == 0)
			o->bind = WR_BIND_CPU;
		else
			return bad_arg("--bind-to (none, core or cpu)", val);
		return 0;
	default:
		/* getopt_long has already said what was wrong */
		fprintf(stderr, "weftrun: see weftrun --help\n");
		return -1;
	}
}

static int check_opts(wr_opts_t *o)
{
	if (o->node_rank >= o->nnodes) {
		fprintf(stderr, "weftrun: --node-rank %ld is not below --nnodes %ld\n",
			o->node_rank, o->nnodes);
		return -1;
	}
	if (o->nnodes * o->nproc > WR_MAX_WORLD) {
		fprintf(stderr, "weftrun: world size %ld x %ld is too large\n", o->nnodes,
			o->nproc);
		return -1;
	}
	if (o->nnodes > 1 && !o->master_port) {
		fprintf(stderr, "weftrun: --master-port is required with --nnodes > 1\n");
		return -1;
	}
	if (!o->argv[0]) {
		fprintf(stderr, "weftrun: no program given (see weftrun --help)\n");
		return -1;
	}
	return 0;
}

/* 0: run; 1: help was printed; -1: bad arguments (already reported). */
static int parse_args(int argc, char **argv, wr_opts_t *o)
{
	int c;

	o->nnodes = 1;
	o->master_addr = "127.0.0.1";
	/* '+': stop at the program name so its own flags are left alone */
	while ((c = getopt_long(argc, argv, "+hn:", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (parse_one(o, c, optarg))
			return -1;
	}
	if (!o->nproc)
		o->nproc = 1;
	o->argv = argv + optind;
	return check_opts(o);
}

static int random_bytes(unsigned char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd;

	while (got < len) {
		n = getrandom(buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += (size_t)n;
	}
	if (got == len)
		return 0;
	/* old kernels without getrandom() */
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return got == len ? 0 : -1;
}

static int make_token(char out[2 * WR_TOKEN_BYTES + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[WR_TOKEN_BYTES];
	size_t i;

	if (random_bytes(raw, sizeof(raw))) {
		fprintf(stderr, "weftrun: cannot read random bytes: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[2 * sizeof(raw)] = '\0';
	return 0;
}

/* Binds port 0 on addr and reports the port the kernel chose. The port is free now; the
 * rendezvous store binds it moments later, which is the same race torchrun accepts. */
static int free_port(const char *addr, char *out, size_t outlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char port[NI_MAXSERV];
	int rc, fd = -1;

	rc = getaddrinfo(addr, "0", &hints, &res);
	if (rc) {
		fprintf(stderr, "weftrun: cannot resolve master address %s: %s\n", addr,
			gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) &&
		    !getsockname(fd, (struct sockaddr *)&ss, &sl))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "weftrun: cannot find a free port on %s: %s\n", addr,
			strerror(errno));
		return -1;
	}
	rc = getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, port, sizeof(port), NI_NUMERICSERV);
	close(fd);
	if (rc) {
		fprintf(stderr, "weftrun: cannot read the free port: %s\n", gai_strerror(rc));
		return -1;
	}
	snprintf(out, outlen, "%s", port);
	return 0;
}

static int setenv_long(const char *name, long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%ld", v);
	return setenv(name, s, 1);
}

/* The variables every rank shares go into weftrun's own environment, which the children
 * inherit; only RANK and LOCAL_RANK are set after fork. */
static int setup_env(const wr_opts_t *o)
{
	const char *tok = getenv("WEFT_JOB_TOKEN");
	char token[2 * WR_TOKEN_BYTES + 1];
	char port[NI_MAXSERV];

	if (tok && *tok && strlen(tok) > WR_TOKEN_MAX) {
		fprintf(stderr, "weftrun: WEFT_JOB_TOKEN is longer than %d characters\n",
			WR_TOKEN_MAX);
		return WR_EXIT_USAGE;
	}
	if ((!tok || !*tok) && o->nnodes > 1) {
		fprintf(stderr, "weftrun: with --nnodes > 1, set WEFT_JOB_TOKEN to the same "
				"value on every node (see weftrun --help)\n");
		return WR_EXIT_USAGE;
	}
	if (!tok || !*tok) {
		if (make_token(token))
			return 1;
		tok = token;
	}
	if (o->master_port)
		snprintf(port, sizeof(port), "%s", o->master_port);
	else if (free_port(o->master_addr, port, sizeof(port)))
		return 1;
	if (setenv("WEFT_JOB_TOKEN", tok, 1) || setenv("MASTER_ADDR", o->master_addr, 1) ||
	    setenv("MASTER_PORT", port, 1) || setenv_long("WORLD_SIZE", o->nnodes * o->nproc) ||
	    setenv_long("LOCAL_WORLD_SIZE", o->nproc) || setenv_long("GROUP_RANK", o->node_rank)) {
		fprintf(stderr, "weftrun: cannot set the environment: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static int read_grace(int64_t *out)
{
	const char *s = getenv("WEFTRUN_KILL_GRACE");
	char *end;
	double v;

	*out = WR_DEFAULT_GRACE_MS;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end != '\0' || !(v >= 0.0 && v <= 3600.0)) {
		fprintf(stderr, "weftrun: WEFTRUN_KILL_GRACE '%s' is not seconds in [0, 3600]\n",
			s);
		return -1;
	}
	*out = (int64_t)(v * 1000.0);
	return 0;
}

/* Signals the process group of every live rank, so a rank's own children go too. */
static void signal_all(wr_job_t *job, int sig)
{
	long i;

	for (i = 0; i < job->opt.nproc; i++) {
		if (job->ranks[i].alive)
			kill(-job->ranks[i].pid, sig);
	}
}

static void begin_ending(wr_job_t *job, int sig)
{
	job->ending = true;
	job->deadline_ms = now_ms() + job->grace_ms;
	signal_all(job, sig);
}

static void kill_now(wr_job_t *job)
{
	job->killed = true;
	signal_all(job, SIGKILL);
}

/* The CPUs of a list such as "0-3,8,10-11" (sysfs' cpulist format) into *set; -1 if the
 * text is not one. */
static int parse_cpulist(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s != '\0' && *s != '\n') {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(s, &end, 10);
		if (errno || end == s || a < 0 || a >= CPU_SETSIZE)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (errno || end == s || b < a || b >= CPU_SETSIZE)
				return -1;
		}
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		s = end;
		if (*s == ',')
			s++;
		else if (*s != '\0' && *s != '\n')
			return -1;
	}
	return 0;
}

/* The hardware threads of cpu's core, within allowed; just cpu where sysfs says nothing. */
static void core_of(int cpu, const cpu_set_t *allowed, cpu_set_t *out)
{
	char path[96], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
		 cpu);
	f = fopen(path, "r");
	if (f == NULL || fgets(line, sizeof(line), f) == NULL || parse_cpulist(line, out) ||
	    !CPU_ISSET(cpu, out)) {
		CPU_ZERO(out);
		CPU_SET(cpu, out);
	}
	if (f != NULL)
		fclose(f);
	CPU_AND(out, out, allowed);
}

/* --bind-to: the places ranks go to in turn, from the CPUs weftrun may run on: each CPU, or
 * each core once (its threads together), in CPU order. */
static int find_places(wr_job_t *job)
{
	cpu_set_t allowed;
	long n = 0;

	if (job->opt.bind == WR_BIND_NONE)
		return 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		fprintf(stderr, "weftrun: --bind-to: cannot read the CPUs weftrun may use: %s\n",
			strerror(errno));
		return -1;
	}
	job->places = calloc((size_t)CPU_COUNT(&allowed) + 1, sizeof(*job->places));
	if (job->places == NULL) {
		fprintf(stderr, "weftrun: out of memory\n");
		return -1;
	}
	for (int c = 0; c < CPU_SETSIZE; c++) {
		bool seen = false;

		if (!CPU_ISSET(c, &allowed))
			continue;
		if (job->opt.bind == WR_BIND_CPU) {
			CPU_ZERO(&job->places[n]);
			CPU_SET(c, &job->places[n]);
			n++;
			continue;
		}
		for (long k = 0; k < n && !seen; k++)
			seen = CPU_ISSET(c, &job->places[k]);
		if (!seen)
			core_of(c, &allowed, &job->places[n++]);
	}
	job->nplaces = n;
	return n > 0 ? 0 : -1;
}

static long global_rank(const wr_job_t *job, long i)
{
	return job->opt.node_rank * job->opt.nproc + i;
}

/* Runs in the child: it never returns. Reports exec failure as an errno on errfd. */
static void child_exec(wr_job_t *job, long i, const int pipes[2][2], int errfd)
{
	int err;
	int j;

	setpgid(0, 0);
	/* weftrun must never leave ranks behind, even when it is itself SIGKILLed */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != job->self)
		_exit(1);
	sigaction(SIGPIPE, &job->old_pipe, NULL);
	sigprocmask(SIG_SETMASK, &job->old_mask, NULL);
	setrlimit(RLIMIT_NOFILE, &job->old_nofile);
	for (j = 0; j < 2 && job->opt.tag_output; j++) {
		if (dup2(pipes[j][1], j + 1) < 0)
			goto fail;
	}
	/* ranks sit in their own process groups, so they would stop on reading the tty */
	if (isatty(STDIN_FILENO)) {
		int nul = open("/dev/null", O_RDONLY);

		if (nul >= 0 && nul != STDIN_FILENO) {
			dup2(nul, STDIN_FILENO);
			close(nul);
		}
	}
	if (setenv_long("RANK", global_rank(job, i)) || setenv_long("LOCAL_RANK", i))
		goto fail;
	/* Said here, not as the program's start failing: the program was never tried. */
	if (job->nplaces > 0 &&
	    sched_setaffinity(0, sizeof(cpu_set_t), &job->places[i % job->nplaces])) {
		fprintf(stderr, "weftrun: rank %ld: --bind-to: cannot bind it to its %s: %s\n",
			global_rank(job, i), job->opt.bind == WR_BIND_CORE ? "core" : "CPU",
			strerror(errno));
		_exit(126);
	}
	execvp(job->opt.argv[0], job->opt.argv);
fail:
	err = errno;
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

static int open_pipes(int pipes[2][2])
{
	if (pipe2(pipes[0], O_CLOEXEC))
		return -1;
	if (pipe2(pipes[1], O_CLOEXEC)) {
		close(pipes[0][0]);
		close(pipes[0][1]);
		return -1;
	}
	return 0;
}

static void close_pipes(int pipes[2][2])
{
	int j, k;

	for (j = 0; j < 2; j++) {
		for (k = 0; k < 2; k++) {
			if (pipes[j][k] >= 0)
				close(pipes[j][k]);
		}
	}
}

static int keep_read_ends(wr_rank_t *r, int pipes[2][2])
{
	int j;

	for (j = 0; j < 2; j++)
		close(pipes[j][1]);
	for (j = 0; j < 2; j++) {
		r->out[j].fd = pipes[j][0];
		r->out[j].dst = j + 1;
		r->out[j].len = 0;
		r->out[j].buf = malloc(WR_LINE_BUF);
		fcntl(r->out[j].fd, F_SETFL, O_NONBLOCK);
		if (!r->out[j].buf)
			return -1;
	}
	return 0;
}

/* Starts rank i; waits until it has exec'd so that a missing program is reported once,
 * by name, instead of as a rank exiting 127. */
static int spawn_rank(wr_job_t *job, long i)
{
	wr_rank_t *r = &job->ranks[i];
	int pipes[2][2] = {{-1, -1}, {-1, -1}};
	int errp[2], err = 0;
	ssize_t n;
	pid_t pid;

	if (job->opt.tag_output && open_pipes(pipes)) {
		fprintf(stderr, "weftrun: cannot make pipes for rank %ld: %s\n",
			global_rank(job, i), strerror(errno));
		return 1;
	}
	if (pipe2(errp, O_CLOEXEC)) {
		fprintf(stderr, "weftrun: pipe: %s\n", strerror(errno));
		close_pipes(pipes);
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		close(errp[0]);
		child_exec(job, i, (const int(*)[2])pipes, errp[1]);
	}
	close(errp[1]);
	if (pid < 0) {
		fprintf(stderr, "weftrun: cannot start rank %ld: fork: %s\n", global_rank(job, i),
			strerror(errno));
		close(errp[0]);
		close_pipes(pipes);
		return 1;
	}
	/* either this or the child's own call wins; both give the same group */
	setpgid(pid, pid);
	r->pid = pid;
	r->alive = true;
	job->nlive++;
	if (job->opt.tag_output && keep_read_ends(r, pipes)) {
		fprintf(stderr, "weftrun: out of memory\n");
		close(errp[0]);
		return 1;
	}
	do
		n = read(errp[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(errp[0]);
	if (n == (ssize_t)sizeof(err)) {
		r->exec_failed = true;
		fprintf(stderr, "weftrun: cannot start %s: %s\n", job->opt.argv[0], strerror(err));
		return err == ENOENT ? 127 : 126;
	}
	return 0;
}

static void spawn_all(wr_job_t *job)
{
	long i;
	int rc;

	for (i = 0; i < job->opt.nproc; i++) {
		rc = spawn_rank(job, i);
		if (rc) {
			job->status = rc;
			begin_ending(job, SIGTERM);
			return;
		}
	}
}

static int write_all(wr_job_t *job, int fd, const char *prefix, size_t plen, const char *data,
		     size_t len, bool add_newline)
{
	struct iovec iov[3] = {
	    {(void *)prefix, plen},
	    {(void *)data, len},
	    {(void *)"\n", add_newline ? 1 : 0},
	};
	struct iovec *v = iov;
	int cnt = 3;
	ssize_t n;

	if (job->out_broken[fd])
		return -1;
	while (cnt > 0) {
		n = writev(fd, v, cnt);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* nobody reads our output: keep draining the ranks so they do not block */
			job->out_broken[fd] = true;
			return -1;
		}
		while (cnt > 0 && (size_t)n >= v->iov_len) {
			n -= (ssize_t)v->iov_len;
			v++;
			cnt--;
		}
		if (cnt > 0) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Writes every complete line in s, each in one go so ranks never interleave mid-line. */
static void emit_lines(wr_job_t *job, long i, wr_stream_t *s, bool at_eof)
{
	char prefix[32];
	size_t plen, start = 0;
	char *nl;

	plen = (size_t)snprintf(prefix, sizeof(prefix), "[%ld] ", global_rank(job, i));
	while (start < s->len) {
		nl = memchr(s->buf + start, '\n', s->len - start);
		if (!nl)
			break;
		write_all(job, s->dst, prefix, plen, s->buf + start,
			  (size_t)(nl - (s->buf + start)) + 1, false);
		start = (size_t)(nl - s->buf) + 1;
	}
	if (start < s->len && (at_eof || (start == 0 && s->len == WR_LINE_BUF))) {
		write_all(job, s->dst, prefix, plen, s->buf + start, s->len - start, true);
		start = s->len;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
}

static void close_stream(wr_job_t *job, long i, wr_stream_t *s)
{
	emit_lines(job, i, s, true);
	close(s->fd);
	s->fd = -1;
}

/* One read per wakeup, so a chatty rank cannot starve the others. */
static void read_stream(wr_job_t *job, long i, wr_stream_t *s)
{
	ssize_t n;

	n = read(s->fd, s->buf + s->len, WR_LINE_BUF - s->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_stream(job, i, s);
		return;
	}
	s->len += (size_t)n;
	emit_lines(job, i, s, false);
}

/* After the last rank is reaped: take what is already in the pipes, but do not wait for
 * a grandchild that may hold a pipe open for ever. */
static void drain_streams(wr_job_t *job)
{
	long i;
	int j;

	for (i = 0; i < job->opt.nproc && job->opt.tag_output; i++) {
		for (j = 0; j < 2; j++) {
			wr_stream_t *s = &job->ranks[i].out[j];

			while (s->fd >= 0) {
				size_t before = s->len;
				ssize_t n = read(s->fd, s->buf + s->len, WR_LINE_BUF - s->len);

				if (n <= 0) {
					close_stream(job, i, s);
					break;
				}
				s->len = before + (size_t)n;
				emit_lines(job, i, s, false);
			}
		}
	}
}

static void report_failure(wr_job_t *job, long i, int st)
{
	const char *tail = job->nlive > 0 ? "; ending the other ranks" : "";
	wr_rank_t *r = &job->ranks[i];

	if (WIFEXITED(st)) {
		fprintf(stderr, "weftrun: rank %ld (pid %ld) exited with status %d%s\n",
			global_rank(job, i), (long)r->pid, WEXITSTATUS(st), tail);
		job->status = WEXITSTATUS(st);
		return;
	}
	fprintf(stderr, "weftrun: rank %ld (pid %ld) was killed by signal %d (%s)%s\n",
		global_rank(job, i), (long)r->pid, WTERMSIG(st), strsignal(WTERMSIG(st)), tail);
	job->status = 128 + WTERMSIG(st);
}

static long find_rank(const wr_job_t *job, pid_t pid)
{
	long i;

	for (i = 0; i < job->opt.nproc; i++) {
		if (job->ranks[i].pid == pid && job->ranks[i].alive)
			return i;
	}
	return -1;
}

static void reap(wr_job_t *job)
{
	pid_t pid;
	long i;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		i = find_rank(job, pid);
		if (i < 0 || !(WIFEXITED(st) || WIFSIGNALED(st)))
			continue;
		job->ranks[i].alive = false;
		job->nlive--;
		if (job->ending || job->ranks[i].exec_failed)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		report_failure(job, i, st);
		begin_ending(job, SIGTERM);
	}
}

static void on_signal(wr_job_t *job, int sig)
{
	if (sig == SIGCHLD) {
		reap(job);
		return;
	}
	if (job->ending) {
		/* a second interrupt means now */
		kill_now(job);
		return;
	}
	fprintf(stderr, "weftrun: got signal %d (%s); passing it to the ranks\n", sig,
		strsignal(sig));
	job->status = 128 + sig;
	begin_ending(job, sig);
}

static void read_signals(wr_job_t *job)
{
	struct signalfd_siginfo si;

	while (read(job->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		on_signal(job, (int)si.ssi_signo);
}

static int poll_timeout(const wr_job_t *job)
{
	int64_t left;

	if (!job->ending || job->killed)
		return -1;
	left = job->deadline_ms - now_ms();
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static void run_loop(wr_job_t *job, struct pollfd *pfd)
{
	long i, n;
	int j, rc;

	while (job->nlive > 0) {
		n = 0;
		pfd[n++] = (struct pollfd){.fd = job->sfd, .events = POLLIN};
		for (i = 0; i < job->opt.nproc && job->opt.tag_output; i++) {
			for (j = 0; j < 2; j++)
				pfd[n++] = (struct pollfd){.fd = job->ranks[i].out[j].fd,
							   .events = POLLIN};
		}
		rc = poll(pfd, (nfds_t)n, poll_timeout(job));
		if (rc < 0 && errno != EINTR) {
			fprintf(stderr, "weftrun: poll: %s\n", strerror(errno));
			kill_now(job);
			return;
		}
		if (rc == 0 && job->ending && !job->killed) {
			kill_now(job);
			continue;
		}
		for (i = 0, n = 1; i < job->opt.nproc && job->opt.tag_output; i++) {
			for (j = 0; j < 2; j++, n++) {
				if (pfd[n].fd >= 0 && pfd[n].revents)
					read_stream(job, i, &job->ranks[i].out[j]);
			}
		}
		if (pfd[0].revents)
			read_signals(job);
	}
}

/* Reaps whatever is left after a fatal error in the loop; SIGKILL was already sent. */
static void reap_blocking(wr_job_t *job)
{
	pid_t pid;
	long i;
	int st;

	while (job->nlive > 0) {
		pid = waitpid(-1, &st, 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			return;
		i = find_rank(job, pid);
		if (i >= 0) {
			job->ranks[i].alive = false;
			job->nlive--;
		}
	}
}

/* Each rank needs two pipe fds under --tag-output; raise the soft limit if that is
 * more than it allows. Children get the old limit back. */
static void raise_nofile(wr_job_t *job)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)job->opt.nproc * 2 + 64;

	if (getrlimit(RLIMIT_NOFILE, &job->old_nofile))
		return;
	rl = job->old_nofile;
	if (!job->opt.tag_output || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int setup_signals(wr_job_t *job)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigset_t set;

	job->self = getpid();
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &job->old_mask))
		return -1;
	/* a closed stdout must give EPIPE, not kill weftrun; children reset it */
	sigaction(SIGPIPE, &ign, &job->old_pipe);
	job->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return job->sfd < 0 ? -1 : 0;
}

static void free_job(wr_job_t *job)
{
	long i;
	int j;

	for (i = 0; i < job->opt.nproc && job->ranks; i++) {
		for (j = 0; j < 2; j++) {
			if (job->ranks[i].out[j].fd >= 0)
				close(job->ranks[i].out[j].fd);
			free(job->ranks[i].out[j].buf);
		}
	}
	free(job->ranks);
	free(job->places);
	if (job->sfd >= 0)
		close(job->sfd);
}

static int alloc_job(wr_job_t *job)
{
	long i;

	job->ranks = calloc((size_t)job->opt.nproc, sizeof(*job->ranks));
	if (!job->ranks)
		return -1;
	for (i = 0; i < job->opt.nproc; i++)
		job->ranks[i].out[0].fd = job->ranks[i].out[1].fd = -1;
	return 0;
}

static int run(wr_job_t *job)
{
	struct pollfd *pfd;

	if (alloc_job(job) || setup_signals(job)) {
		fprintf(stderr, "weftrun: cannot set up: %s\n", strerror(errno));
		return 1;
	}
	if (find_places(job))
		return 1;
	pfd = calloc((size_t)job->opt.nproc * 2 + 1, sizeof(*pfd));
	if (!pfd) {
		fprintf(stderr, "weftrun: out of memory\n");
		return 1;
	}
	raise_nofile(job);
	spawn_all(job);
	run_loop(job, pfd);
	reap_blocking(job);
	drain_streams(job);
	free(pfd);
	return job->status;
}

/* With 0, 1 or 2 closed, a pipe could land there and the children's dup2 would go wrong. */
static void open_std_fds(void)
{
	int fd;

	do
		fd = open("/dev/null", O_RDWR);
	while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	wr_job_t job = {.sfd = -1};
	int rc;

	open_std_fds();
	rc = parse_args(argc, argv, &job.opt);
	if (rc)
		return rc > 0 ? 0 : WR_EXIT_USAGE;
	if (read_grace(&job.grace_ms))
		return WR_EXIT_USAGE;
	rc = setup_env(&job.opt);
	if (rc)
		return rc;
	rc = run(&job);
	free_job(&job);
	return rc;
}
