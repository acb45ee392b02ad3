/* The dpdk driver's process-wide part (drivers/dpdk): the EAL, started lazily and once,
 * its log routed into weft's, the mbuf pool, the port WEFT_DPDK_PORT names, and vdev
 * ports. The EAL is never cleaned up: it lives until the process exits (see README). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "drivers/dpdk/dpdk_int.h"
#include "lib/util/crypto.h"
#include "lib/util/env.h"
#include "lib/util/log.h"

#define EAL_MAX_ARGS 32
#define EAL_ARG_MAX 256
#define EAL_STORE (EAL_MAX_ARGS * 64)
#define POOL_MBUFS 16383 /* 2^k - 1: the ring behind the pool is 2^k */
#define POOL_CACHE 256
#define LOG_LINE 512

/* The EAL keeps argv and the log stream for the life of the process: static. */
static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_done;
static weft_status_t eal_status;
static char eal_why[512];
static char eal_store[EAL_STORE];
static char *eal_argv[EAL_MAX_ARGS + 2];
static FILE *eal_log;
static struct rte_mempool *pool;
static __thread char last_err[200]; /* the first error line the EAL logged in this thread */

static wt_dpdk_port_t named;
static int named_done;
static weft_status_t named_status;
static char named_why[512];

/* ---- the EAL's log, into weft's ---- */

static ssize_t log_write(void *cookie, const char *buf, size_t size)
{
	int lvl = rte_log_cur_msg_loglevel();
	int w = lvl <= (int)RTE_LOG_ERR	     ? WT_LOG_WARN
		: lvl <= (int)RTE_LOG_NOTICE ? WT_LOG_INFO
					     : WT_LOG_DEBUG;
	size_t n = size;

	(void)cookie;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n == 0)
		return (ssize_t)size;
	/* The first error since the caller reset it says most: later ones are the
	 * generic "failed to attach" of the layers above. */
	if (lvl <= (int)RTE_LOG_ERR && last_err[0] == '\0')
		snprintf(last_err, sizeof(last_err), "%.*s", (int)(n < 199 ? n : 199), buf);
	WT_LOG(w, "dpdk: %.*s", (int)(n < LOG_LINE ? n : LOG_LINE), buf);
	return (ssize_t)size;
}

static void log_route(void)
{
	cookie_io_functions_t io = {.write = log_write};

	eal_log = fopencookie(NULL, "w", io);
	if (eal_log == NULL)
		return; /* the EAL then logs to stdout and syslog, as it does by default */
	setvbuf(eal_log, NULL, _IOLBF, 0);
	rte_openlog_stream(eal_log);
}

/* ---- arguments ---- */

int wt_dpdk_split_args(const char *text, char *store, size_t storelen, char **argv, int maxargs,
		       char *why, size_t whylen)
{
	size_t used = 0;
	int argc = 0;
	const char *p = text;

	if (maxargs < 2 || storelen < 8)
		return -1;
	memcpy(store, "weft", 5);
	argv[argc++] = store;
	used = 5;
	while (*p != '\0') {
		size_t n = 0;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (*p == '\0')
			break;
		while (p[n] != '\0' && p[n] != ' ' && p[n] != '\t' && p[n] != '\n') {
			if (p[n] < ' ' || p[n] > '~') {
				snprintf(why, whylen,
					 "WEFT_DPDK_EAL_ARGS holds a non-printable character");
				return -1;
			}
			n++;
		}
		if (n > EAL_ARG_MAX) {
			snprintf(why, whylen,
				 "WEFT_DPDK_EAL_ARGS: argument %d is longer than %d characters",
				 argc, EAL_ARG_MAX);
			return -1;
		}
		if (argc >= maxargs - 1 || used + n + 1 > storelen) {
			snprintf(why, whylen,
				 "WEFT_DPDK_EAL_ARGS has too many arguments (at most %d, %zu "
				 "characters)",
				 maxargs - 2, storelen - 6);
			return -1;
		}
		/* --help and -h make the EAL print its usage and exit the process. */
		if ((n == 2 && strncmp(p, "-h", 2) == 0) ||
		    (n == 6 && strncmp(p, "--help", 6) == 0)) {
			snprintf(why, whylen,
				 "WEFT_DPDK_EAL_ARGS: %.*s is refused (the EAL would "
				 "exit the process)",
				 (int)n, p);
			return -1;
		}
		memcpy(store + used, p, n);
		store[used + n] = '\0';
		argv[argc++] = store + used;
		used += n + 1;
		p += n;
	}
	argv[argc] = NULL;
	return argc;
}

/* --lcores=0@(cpus this thread may run on): the EAL then leaves the calling thread's
 * affinity as it was, where -l N would pin it to one CPU. */
static void lcores_arg(char *out, size_t len)
{
	cpu_set_t set;
	size_t n;
	int first = 1;

	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		snprintf(out, len, "--lcores=0@(0)");
		return;
	}
	n = (size_t)snprintf(out, len, "--lcores=0@(");
	for (int c = 0; c < CPU_SETSIZE && n + 24 < len; c++) {
		int e = c;

		if (!CPU_ISSET(c, &set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
			e++;
		n += (size_t)snprintf(out + n, len - n, "%s%d", first ? "" : ",", c);
		if (e > c)
			n += (size_t)snprintf(out + n, len - n, "-%d", e);
		first = 0;
		c = e;
	}
	if (first)
		n += (size_t)snprintf(out + n, len - n, "0");
	snprintf(out + n, len - n, ")");
}

static int eal_args(char *why, size_t whylen)
{
	const char *env = wt_util_env_str("WEFT_DPDK_EAL_ARGS");
	char text[EAL_STORE];
	char lcores[EAL_ARG_MAX];

	if (env != NULL)
		return wt_dpdk_split_args(env, eal_store, sizeof(eal_store), eal_argv,
					  EAL_MAX_ARGS + 2, why, whylen);
	lcores_arg(lcores, sizeof(lcores));
	snprintf(text, sizeof(text), "--no-huge -m 256 --no-pci --no-shconf --no-telemetry %s",
		 lcores);
	return wt_dpdk_split_args(text, eal_store, sizeof(eal_store), eal_argv, EAL_MAX_ARGS + 2,
				  why, whylen);
}

static void args_text(int argc, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (int i = 1; i < argc && n + 2 < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i > 1 ? " " : "", eal_argv[i]);
}

static weft_status_t eal_init_locked(void)
{
	char args[512];
	FILE *prev_log;
	int argc = eal_args(eal_why, sizeof(eal_why));
	int r;

	if (argc < 0) {
		WT_ERROR("dpdk: %s", eal_why);
		return WEFT_ERR_NO_DEVICE;
	}
	args_text(argc, args, sizeof(args));
	prev_log = rte_log_get_stream();
	log_route();
	last_err[0] = '\0';
	WT_DEBUG("dpdk: starting the EAL: %s", args);
	r = rte_eal_init(argc, eal_argv);
	if (r < 0 && rte_errno == EALREADY) {
		/* The application runs DPDK itself: share its EAL. */
		WT_INFO("dpdk: the EAL was already started in this process; weft uses it");
		rte_openlog_stream(prev_log); /* and leaves its log where the application put it */
		r = argc - 1;
	}
	if (r < 0) {
		snprintf(eal_why, sizeof(eal_why),
			 "the DPDK EAL did not start (%.160s): %s%s%.120s", args,
			 rte_strerror(rte_errno), last_err[0] ? "; the EAL said: " : "", last_err);
		WT_ERROR("dpdk: %s", eal_why);
		return WEFT_ERR_NO_DEVICE;
	}
	if (r + 1 < argc)
		WT_WARN("dpdk: WEFT_DPDK_EAL_ARGS: '%s' and what follows are not EAL options; "
			"ignored",
			eal_argv[r + 1]);
	pool = rte_pktmbuf_pool_create("weft_mbufs", POOL_MBUFS, POOL_CACHE, 0,
				       RTE_PKTMBUF_HEADROOM + WT_DPDK_MBUF_ROOM, SOCKET_ID_ANY);
	if (pool == NULL) {
		snprintf(eal_why, sizeof(eal_why),
			 "the EAL started but a pool of %d mbufs of %d bytes did not fit (%s); "
			 "give it more memory (-m in WEFT_DPDK_EAL_ARGS)",
			 POOL_MBUFS, WT_DPDK_MBUF_ROOM, rte_strerror(rte_errno));
		WT_ERROR("dpdk: %s", eal_why);
		return WEFT_ERR_NO_DEVICE;
	}
	WT_INFO("dpdk: EAL started (%s)", args);
	return WEFT_OK;
}

weft_status_t wt_dpdk_eal_start(char *why, size_t whylen)
{
	weft_status_t st;

	pthread_mutex_lock(&eal_lock);
	if (!eal_done) {
		eal_status = eal_init_locked();
		eal_done = 1;
	}
	st = eal_status;
	if (st != WEFT_OK && why != NULL && whylen > 0)
		snprintf(why, whylen, "%s", eal_why);
	pthread_mutex_unlock(&eal_lock);
	return st;
}

struct rte_mempool *wt_dpdk_pool(void)
{
	return pool;
}

/* ---- ports ---- */

static int port_setup(uint16_t port)
{
	struct rte_eth_conf conf;
	int r;

	memset(&conf, 0, sizeof(conf));
	r = rte_eth_dev_configure(port, 1, 1, &conf);
	if (r == 0)
		r = rte_eth_rx_queue_setup(port, 0, WT_DPDK_RING,
					   (unsigned)rte_eth_dev_socket_id(port), NULL, pool);
	if (r == 0)
		r = rte_eth_tx_queue_setup(port, 0, WT_DPDK_RING,
					   (unsigned)rte_eth_dev_socket_id(port), NULL);
	return r;
}

/* Creating, starting and removing vdev ports runs in the EAL's interrupt thread (as an
 * alarm callback), where net_memif handles its control channel, so the two never
 * interleave on one port. (What that serialising cannot prevent: in DPDK 22.11 the
 * interrupt thread panics on a closed descriptor, "Error adding fd ... epoll_ctl", when
 * one end of a pair goes away during the pair's handshake; dpdk.c waits for a started
 * handshake before closing.) */
struct intr_call {
	void (*fn)(struct intr_call *c);
	const char *name, *args;
	int start;
	uint16_t port;
	int rc;
	char why[512];
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int done;
};

static void intr_trampoline(void *arg)
{
	struct intr_call *c = arg;

	c->fn(c);
	pthread_mutex_lock(&c->lock);
	c->done = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

static void intr_run(struct intr_call *c)
{
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->done = 0;
	if (rte_eal_alarm_set(1, intr_trampoline, c) != 0) {
		c->fn(c); /* no alarm: run it here, which is what the PMD expects anyway */
	} else {
		pthread_mutex_lock(&c->lock);
		while (!c->done)
			pthread_cond_wait(&c->cv, &c->lock);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->lock);
}

static void vdev_open_fn(struct intr_call *c)
{
	int r;

	last_err[0] = '\0';
	r = rte_eal_hotplug_add("vdev", c->name, c->args);
	if (r < 0) {
		snprintf(c->why, sizeof(c->why), "creating %s (%s) failed: %s%s%s", c->name,
			 c->args, rte_strerror(-r), last_err[0] ? "; DPDK said: " : "", last_err);
		c->rc = r;
		return;
	}
	r = rte_eth_dev_get_port_by_name(c->name, &c->port);
	if (r == 0)
		r = port_setup(c->port);
	if (r == 0 && c->start)
		r = rte_eth_dev_start(c->port);
	if (r < 0) {
		snprintf(c->why, sizeof(c->why), "setting up %s failed: %s%s%s", c->name,
			 rte_strerror(-r), last_err[0] ? "; DPDK said: " : "", last_err);
		rte_eal_hotplug_remove("vdev", c->name);
	}
	c->rc = r;
}

weft_status_t wt_dpdk_vdev_open(const char *name, const char *args, int start, uint16_t *port,
				char *why, size_t whylen)
{
	struct intr_call c = {.fn = vdev_open_fn, .name = name, .args = args, .start = start};

	intr_run(&c);
	if (c.rc < 0) {
		snprintf(why, whylen, "%s", c.why);
		return WEFT_ERR_NO_DEVICE;
	}
	*port = c.port;
	return WEFT_OK;
}

/* Detaching closes the port; closing it first would leave net_memif's listening socket
 * open (22.11). */
static void vdev_close_fn(struct intr_call *c)
{
	rte_eth_dev_stop(c->port);
	if (rte_eal_hotplug_remove("vdev", c->name) != 0)
		rte_eth_dev_close(c->port);
}

void wt_dpdk_vdev_close(uint16_t port, const char *name)
{
	struct intr_call c = {.fn = vdev_close_fn, .name = name, .port = port};

	intr_run(&c);
}

static void port_start_fn(struct intr_call *c)
{
	c->rc = rte_eth_dev_start(c->port);
}

int wt_dpdk_port_start(uint16_t port)
{
	struct intr_call c = {.fn = port_start_fn, .port = port};

	intr_run(&c);
	return c.rc;
}

int wt_dpdk_link_up(uint16_t port)
{
	struct rte_eth_link link;

	memset(&link, 0, sizeof(link));
	return rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

/* ---- the named port ---- */

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= sizeof(named.name))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == ':' || c == '.'))
			return 0;
	}
	return 1;
}

/* The value of key= in devargs ("name,k=v,..."), or "" when absent. */
static void devarg_value(const char *devargs, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	const char *p = strchr(devargs, ',');

	out[0] = '\0';
	while (p != NULL) {
		p++;
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, ",");

			snprintf(out, len, "%.*s", (int)n, p + kl + 1);
			return;
		}
		p = strchr(p, ',');
	}
}

static int iface_ioctl(const char *iface, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return -1;
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", iface);
	r = ioctl(fd, req, ifr);
	close(fd);
	return r;
}

static int ip_unicast(uint32_t ip)
{
	uint8_t a = (uint8_t)(ip >> 24);

	return a != 0 && a != 127 && a < 224;
}

static weft_status_t named_ip(const char *iface, char *why, size_t whylen)
{
	const char *env = wt_util_env_str("WEFT_DPDK_IP");
	struct in_addr a;
	struct ifreq ifr;

	if (env != NULL) {
		if (inet_pton(AF_INET, env, &a) != 1 || !ip_unicast(ntohl(a.s_addr))) {
			snprintf(why, whylen, "WEFT_DPDK_IP='%.40s' is not a unicast IPv4 address",
				 env);
			return WEFT_ERR_INVALID_ARG;
		}
		named.ip = ntohl(a.s_addr);
		return WEFT_OK;
	}
	if (iface[0] == '\0') {
		snprintf(why, whylen,
			 "WEFT_DPDK_PORT='%.100s' names no kernel interface (iface=) to take "
			 "the IPv4 address from; set WEFT_DPDK_IP",
			 named.devargs);
		return WEFT_ERR_NO_DEVICE;
	}
	if (iface_ioctl(iface, SIOCGIFADDR, &ifr) != 0) {
		snprintf(why, whylen,
			 "interface %s of WEFT_DPDK_PORT has no IPv4 address (%s); set "
			 "WEFT_DPDK_IP",
			 iface, strerror(errno));
		return WEFT_ERR_NO_DEVICE;
	}
	named.ip = ntohl(((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr);
	if (!ip_unicast(named.ip)) {
		snprintf(why, whylen, "interface %s has no unicast IPv4 address; set WEFT_DPDK_IP",
			 iface);
		return WEFT_ERR_NO_DEVICE;
	}
	return WEFT_OK;
}

/* The RoCE payload per packet: the largest IB MTU whose packets (IPv4 + UDP + BTH + RETH +
 * payload + ICRC) fit the port's MTU, the interface's and the PMD's receive limit. */
static weft_status_t named_pmtu(const char *iface, const struct rte_eth_dev_info *di, char *why,
				size_t whylen)
{
	uint16_t mtu = 1500;
	uint32_t lim;
	struct ifreq ifr;

	if (rte_eth_dev_get_mtu(named.port_id, &mtu) != 0)
		mtu = 1500;
	lim = mtu;
	if (iface[0] != '\0' && iface_ioctl(iface, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 &&
	    (uint32_t)ifr.ifr_mtu < lim)
		lim = (uint32_t)ifr.ifr_mtu;
	if (di->max_rx_pktlen > 18 && di->max_rx_pktlen - 18 < lim)
		lim = di->max_rx_pktlen - 18; /* Ethernet header and FCS */
	named.pmtu = WT_DPDK_IB_MTU_MAX;
	while (named.pmtu >= WT_DPDK_IB_MTU_MIN && named.pmtu + 60 > lim)
		named.pmtu /= 2;
	if (named.pmtu < WT_DPDK_IB_MTU_MIN) {
		snprintf(why, whylen, "port %s has an MTU of %u: too small for RoCE", named.name,
			 lim);
		return WEFT_ERR_NO_DEVICE;
	}
	return WEFT_OK;
}

static weft_status_t named_attach(const char *devargs, char *why, size_t whylen)
{
	size_t n = strcspn(devargs, ",");
	struct rte_eth_dev_info di;
	struct rte_ether_addr mac;
	char iface[IFNAMSIZ + 8];
	int r;

	if (strlen(devargs) >= sizeof(named.devargs) || !name_ok(devargs, n)) {
		snprintf(why, whylen,
			 "WEFT_DPDK_PORT='%.60s' is not a device name (letters, digits, _-:.) "
			 "followed by ,key=value arguments",
			 devargs);
		return WEFT_ERR_INVALID_ARG;
	}
	snprintf(named.devargs, sizeof(named.devargs), "%s", devargs);
	snprintf(named.name, sizeof(named.name), "%.*s", (int)n, devargs);
	last_err[0] = '\0';
	if (rte_eth_dev_get_port_by_name(named.name, &named.port_id) != 0) {
		r = rte_dev_probe(devargs);
		if (r < 0) {
			snprintf(why, whylen,
				 "WEFT_DPDK_PORT='%s': attaching the device failed: %s%s%s",
				 devargs, rte_strerror(-r), last_err[0] ? "; DPDK said: " : "",
				 last_err);
			return WEFT_ERR_NO_DEVICE;
		}
		if (rte_eth_dev_get_port_by_name(named.name, &named.port_id) != 0) {
			snprintf(why, whylen,
				 "WEFT_DPDK_PORT='%s': the device attached but no port is named %s "
				 "(%u usable ports)",
				 devargs, named.name, rte_eth_dev_count_avail());
			return WEFT_ERR_NO_DEVICE;
		}
	}
	r = rte_eth_dev_info_get(named.port_id, &di);
	if (r == 0)
		r = port_setup(named.port_id);
	if (r == 0)
		r = rte_eth_dev_start(named.port_id);
	if (r == 0)
		r = rte_eth_macaddr_get(named.port_id, &mac);
	if (r < 0) {
		snprintf(why, whylen, "WEFT_DPDK_PORT='%s': starting port %s failed: %s%s%s",
			 devargs, named.name, rte_strerror(-r), last_err[0] ? "; DPDK said: " : "",
			 last_err);
		return WEFT_ERR_NO_DEVICE;
	}
	memcpy(named.mac, mac.addr_bytes, 6);
	if (rte_is_zero_ether_addr(&mac) || rte_is_multicast_ether_addr(&mac)) {
		/* Virtual ports such as net_ring have none: a random locally administered one. */
		wt_util_random(named.mac, 6);
		named.mac[0] = (uint8_t)((named.mac[0] & 0xfe) | 0x02);
	}
	snprintf(named.driver, sizeof(named.driver), "%s", di.driver_name ? di.driver_name : "?");
	/* Virtual ports copy each packet out inside tx_burst and free the mbufs there, so
	 * an mbuf may point at the caller's memory; a NIC would DMA from it later, from
	 * memory it must have mapped. */
	named.zero_copy =
	    strcmp(named.driver, "net_memif") == 0 || strcmp(named.driver, "net_af_packet") == 0;
	named.multiseg = (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
	devarg_value(devargs, "iface", iface, sizeof(iface));
	weft_status_t st = named_ip(iface, why, whylen);

	if (st == WEFT_OK)
		st = named_pmtu(iface, &di, why, whylen);
	if (st != WEFT_OK)
		return st;
	WT_INFO("dpdk: port %s (%s) up: MAC %02x:%02x:%02x:%02x:%02x:%02x, IPv4 %u.%u.%u.%u, "
		"%u-byte RoCE MTU%s%s",
		named.name, named.driver, named.mac[0], named.mac[1], named.mac[2], named.mac[3],
		named.mac[4], named.mac[5], named.ip >> 24, (named.ip >> 16) & 0xff,
		(named.ip >> 8) & 0xff, named.ip & 0xff, named.pmtu,
		named.zero_copy ? ", zero-copy" : "", named.multiseg ? "" : ", linear packets");
	return WEFT_OK;
}

weft_status_t wt_dpdk_named_port(wt_dpdk_port_t **port, char *why, size_t whylen)
{
	const char *env = wt_util_env_str("WEFT_DPDK_PORT");
	weft_status_t st;

	*port = NULL;
	if (env == NULL)
		return WEFT_OK;
	pthread_mutex_lock(&eal_lock);
	if (!named_done) {
		pthread_mutex_init(&named.lock, NULL);
		named_status = named_attach(env, named_why, sizeof(named_why));
		named_done = 1;
		if (named_status != WEFT_OK)
			WT_ERROR("dpdk: %s", named_why);
	} else if (named_status == WEFT_OK && strcmp(env, named.devargs) != 0) {
		pthread_mutex_unlock(&eal_lock);
		snprintf(why, whylen,
			 "WEFT_DPDK_PORT changed to '%.60s' while this process uses port '%s'", env,
			 named.devargs);
		return WEFT_ERR_INVALID_ARG;
	}
	st = named_status;
	if (st == WEFT_OK)
		*port = &named;
	else
		snprintf(why, whylen, "%s", named_why);
	pthread_mutex_unlock(&eal_lock);
	return st;
}

/* ---- file names ---- */

void wt_dpdk_memif_paths(const char *job, int lo, int hi, char *server, char *client, size_t len)
{
	snprintf(server, len, "%s/weft-%s-%d-%d.memif", WT_DPDK_DIR, job, lo, hi);
	snprintf(client, len, "%s/weft-%s-%d-%d.memif-c", WT_DPDK_DIR, job, lo, hi);
}

void wt_dpdk_memif_secret(const wt_util_key_t *key, const char *job, int lo, int hi, char *out,
			  size_t len)
{
	uint8_t mac[WT_UTIL_MAC_LEN];
	char desc[96];
	size_t n = 0;

	snprintf(desc, sizeof(desc), "%s|%d|%d", job, lo, hi);
	wt_util_mac(key, "weft-dpdk-memif-v1", desc, strlen(desc), NULL, 0, mac);
	/* memif keeps at most 23 characters */
	for (size_t i = 0; i < 10 && n + 3 <= len; i++)
		n += (size_t)snprintf(out + n, len - n, "%02x", mac[i]);
}

void wt_dpdk_bell_paths(const char *job, int rank, char *sock, char *flag, size_t len)
{
	snprintf(sock, len, "%s/weft-%s-%d.bell", WT_DPDK_DIR, job, rank);
	snprintf(flag, len, "%s/weft-%s-%d.asleep", WT_DPDK_DIR, job, rank);
}
