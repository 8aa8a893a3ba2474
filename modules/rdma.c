/* SPDX-License-Identifier: MIT */
/*
 * rdma: find the RDMA devices, select the ones the spec names, and say by
 * name what is wrong with them.  sysfs (under the root) gives the inventory:
 * node type, firmware, GUID, and per port state, physical state, rate, link
 * layer, LIDs and P_Keys.  The verbs library gives what userspace can see,
 * and a probe in a child process -- open, query, alloc PD, register memory --
 * proves the device answers and memlock allows pinning.  A probe that does
 * not answer within rdma.open_timeout is killed and reported as a hang, and
 * the run goes on.  rdma writes nothing.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "proc.h"
#include "rdma.h"

#define RDMA_MAX_DEVS 64
#define RDMA_MAX_PKEYS 256
#define REAP_GRACE_MS 500       /* after SIGKILL: a probe stuck in the kernel is left behind */

/* ---- small shared helpers (both ops tables use these) ------------------- */

static const struct { int e; const char *name; } errno_names[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EINTR, "EINTR" }, { EIO, "EIO" },
	{ ENXIO, "ENXIO" }, { E2BIG, "E2BIG" }, { EBADF, "EBADF" }, { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" }, { ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" },
	{ EMFILE, "EMFILE" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" },
	{ EPROTONOSUPPORT, "EPROTONOSUPPORT" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { EADDRNOTAVAIL, "EADDRNOTAVAIL" },
	{ ENETDOWN, "ENETDOWN" }, { ENETUNREACH, "ENETUNREACH" }, { ECONNREFUSED, "ECONNREFUSED" },
	{ EHOSTUNREACH, "EHOSTUNREACH" }, { ETIMEDOUT, "ETIMEDOUT" }, { ENODATA, "ENODATA" },
	{ EPROTO, "EPROTO" }, { ECONNRESET, "ECONNRESET" }, { ENOTSUP, "ENOTSUP" },
};

const char *errno_name(int e)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].e == e)
			return errno_names[i].name;
	return "errno";
}

int errno_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (strcmp(errno_names[i].name, name) == 0)
			return errno_names[i].e;
	return 0;
}

const char *probe_step_call(enum probe_step s)
{
	switch (s) {
	case STEP_NONE:
		return "the probe start";
	case STEP_OPEN:
		return "ibv_open_device";
	case STEP_QUERY_DEVICE:
		return "ibv_query_device";
	case STEP_QUERY_PORT:
		return "ibv_query_port";
	case STEP_ALLOC_PD:
		return "ibv_alloc_pd";
	case STEP_REG_MR:
		return "ibv_reg_mr";
	case STEP_CM_CHANNEL:
		return "rdma_create_id";
	case STEP_RESOLVE_ADDR:
		return "rdma_resolve_addr";
	case STEP_DONE:
		return "the probe end";
	}
	return "?";
}

void probe_step(struct probe_io *io, enum probe_step s)
{
	unsigned char m[2] = { 'S', (unsigned char)s };

	(void)!write(io->fd, m, sizeof(m));
}

int probe_drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/*
 * On a first boot the memlock limit this spec sets is not yet in force for
 * anyone (hpcinit itself was started with the old one).  The probe runs
 * with the limit new sessions and services will get, as an MPI rank will;
 * where raising is not allowed (no CAP_SYS_RESOURCE) the limit in force stays
 * and the ENOMEM message names it.
 */
void probe_raise_memlock(const struct spec *s)
{
	struct rlimit rl;

	if (!s->memlock.present)
		return;
	rl.rlim_cur = rl.rlim_max = s->memlock.unlimited ? RLIM_INFINITY : (rlim_t)s->memlock.limit_bytes;
	(void)setrlimit(RLIMIT_MEMLOCK, &rl);
}

void probe_read_memlock(struct probe_result *res)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		res->memlock_cur = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
		res->memlock_max = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_max;
	}
}

static void fmt_kib(char *buf, size_t n, uint64_t bytes)
{
	if (bytes == UINT64_MAX)
		snprintf(buf, n, "unlimited");
	else
		snprintf(buf, n, "%llu KiB", (unsigned long long)(bytes / 1024));
}

static void fmt_size(char *buf, size_t n, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
		snprintf(buf, n, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
		snprintf(buf, n, "%llu MiB", (unsigned long long)(bytes >> 20));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, n, "%llu KiB", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
}

/* ---- sysfs inventory ---------------------------------------------------- */

struct port_info {
	unsigned num;
	int state;                      /* 4 = ACTIVE; -1 unknown */
	char state_txt[32];
	int phys;                       /* 5 = LinkUp, 2 = Polling, 3 = Disabled; -1 unknown */
	char phys_txt[32];
	double rate_gbps;
	char rate_txt[64];
	char link_layer[32];            /* "InfiniBand", "Ethernet" */
	char lid[16], sm_lid[16];
	unsigned n_pkeys;               /* non-zero entries */
	unsigned pkey_max;              /* the larger P_Key: Azure's tenant key */
};

struct dev_info {
	char name[64];
	int node_type;                  /* 1 CA, 4 RNIC (iWARP); -1 unknown */
	char node_type_txt[32];
	char fw_ver[64];
	char node_guid[40];
	char uverbs[32];                /* "uverbs0", "" when there is none */
	struct port_info ports[RDMA_MAX_PORTS];
	unsigned n_ports;
	bool listed;                    /* the verbs library lists it */
	bool name_match, ll_match, selected;
	int job;                        /* its probe, -1 when not probed */
};

/* Read a small sysfs attribute under the root, trimmed.  false when absent. */
static bool sysfs_read(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *hp = ctx_path(c, path);
	char *text = NULL;
	size_t len;
	int r = fs_read_host(hp, 4096, &text, &len);

	free(hp);
	buf[0] = '\0';
	if (r < 0)
		return false;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r'))
		text[--len] = '\0';
	snprintf(buf, n, "%s", text);
	free(text);
	return true;
}

/* "4: ACTIVE" -> 4 and "ACTIVE". */
static int parse_num_text(const char *s, char *txt, size_t n)
{
	char *end;
	unsigned long v;

	txt[0] = '\0';
	if (!*s)
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || v > 255) {
		snprintf(txt, n, "%s", s);
		return -1;
	}
	while (*end == ':' || *end == ' ')
		end++;
	snprintf(txt, n, "%s", end);
	return (int)v;
}

/* "200 Gb/sec (4X HDR)" -> 200; "2.5 Gb/sec (1X SDR)" -> 2.5. */
static double parse_rate(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || v > 1e6)
		return 0;
	while (*end == ' ')
		end++;
	if (strncmp(end, "Gb/sec", 6) == 0 || strncmp(end, "Gb/s", 4) == 0)
		return v;
	if (strncmp(end, "Mb/sec", 6) == 0)
		return v / 1000;
	return 0;
}

/* A hex sysfs value up to 0xffff (P_Keys, interface flags); 0 when malformed. */
static unsigned parse_pkey(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 16);
	if (errno || end == s || v > 0xffff)
		return 0;
	return (unsigned)v;
}

static bool numeric_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool safe_name(const char *s)
{
	return *s && *s != '.' && !strchr(s, '/') && strlen(s) < 64;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of a directory under the root (no dot entries), at most max. */
static void list_dir(const struct ctx *c, const char *path, struct strlist *out, size_t max)
{
	char *hp = ctx_path(c, path);
	DIR *d = opendir(hp);
	struct dirent *e;

	free(hp);
	if (!d)
		return;
	while ((e = readdir(d)) && out->n < max)
		if (safe_name(e->d_name))
			strlist_push(out, e->d_name);
	closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
}

static void read_port(const struct ctx *c, const char *dev, unsigned num, struct port_info *p)
{
	char base[192], path[320], buf[128];
	struct strlist pk = { 0 };

	memset(p, 0, sizeof(*p));
	p->num = num;
	snprintf(base, sizeof(base), "/sys/class/infiniband/%s/ports/%u", dev, num);
	snprintf(path, sizeof(path), "%s/state", base);
	sysfs_read(c, path, buf, sizeof(buf));
	p->state = parse_num_text(buf, p->state_txt, sizeof(p->state_txt));
	snprintf(path, sizeof(path), "%s/phys_state", base);
	sysfs_read(c, path, buf, sizeof(buf));
	p->phys = parse_num_text(buf, p->phys_txt, sizeof(p->phys_txt));
	snprintf(path, sizeof(path), "%s/rate", base);
	sysfs_read(c, path, p->rate_txt, sizeof(p->rate_txt));
	p->rate_gbps = parse_rate(p->rate_txt);
	snprintf(path, sizeof(path), "%s/link_layer", base);
	if (!sysfs_read(c, path, p->link_layer, sizeof(p->link_layer)))
		snprintf(p->link_layer, sizeof(p->link_layer), "InfiniBand");  /* before link_layer existed */
	snprintf(path, sizeof(path), "%s/lid", base);
	sysfs_read(c, path, p->lid, sizeof(p->lid));
	snprintf(path, sizeof(path), "%s/sm_lid", base);
	sysfs_read(c, path, p->sm_lid, sizeof(p->sm_lid));
	snprintf(path, sizeof(path), "%s/pkeys", base);
	list_dir(c, path, &pk, RDMA_MAX_PKEYS);
	for (size_t i = 0; i < pk.n; i++) {
		unsigned v;

		if (!numeric_name(pk.v[i]))
			continue;
		snprintf(path, sizeof(path), "%s/pkeys/%s", base, pk.v[i]);
		if (!sysfs_read(c, path, buf, sizeof(buf)))
			continue;
		v = parse_pkey(buf);
		if ((v & 0x7fff) == 0)
			continue;       /* empty slot */
		p->n_pkeys++;
		if (v > p->pkey_max)
			p->pkey_max = v;
	}
	strlist_free(&pk);
}

/* Every device under <root>/sys/class/infiniband, with its uverbs node. */
static size_t read_devices(const struct ctx *c, struct dev_info *devs, size_t max)
{
	struct strlist names = { 0 }, uv = { 0 };
	size_t n = 0;

	list_dir(c, "/sys/class/infiniband", &names, max);
	list_dir(c, "/sys/class/infiniband_verbs", &uv, 256);
	for (size_t i = 0; i < names.n && n < max; i++) {
		struct dev_info *d = &devs[n++];
		struct strlist ports = { 0 };
		char path[256], buf[64];

		memset(d, 0, sizeof(*d));
		d->job = -1;
		snprintf(d->name, sizeof(d->name), "%s", names.v[i]);
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", d->name);
		sysfs_read(c, path, buf, sizeof(buf));
		d->node_type = parse_num_text(buf, d->node_type_txt, sizeof(d->node_type_txt));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/fw_ver", d->name);
		sysfs_read(c, path, d->fw_ver, sizeof(d->fw_ver));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_guid", d->name);
		sysfs_read(c, path, d->node_guid, sizeof(d->node_guid));
		for (size_t k = 0; k < uv.n; k++) {
			snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%s/ibdev", uv.v[k]);
			if (sysfs_read(c, path, buf, sizeof(buf)) && strcmp(buf, d->name) == 0)
				snprintf(d->uverbs, sizeof(d->uverbs), "%s", uv.v[k]);
		}
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", d->name);
		list_dir(c, path, &ports, 256);
		for (size_t k = 0; k < ports.n && d->n_ports < RDMA_MAX_PORTS; k++) {
			char *end;
			unsigned long num;

			if (!numeric_name(ports.v[k]))
				continue;
			num = strtoul(ports.v[k], &end, 10);
			if (num == 0 || num > 255)
				continue;
			read_port(c, d->name, (unsigned)num, &d->ports[d->n_ports++]);
		}
		strlist_free(&ports);
	}
	strlist_free(&names);
	strlist_free(&uv);
	return n;
}

static bool ll_matches(enum link_layer want, const char *have)
{
	switch (want) {
	case LINK_INFINIBAND:
		return strcmp(have, "InfiniBand") == 0;
	case LINK_ETHERNET:
		return strcmp(have, "Ethernet") == 0;
	case LINK_ANY:
		return true;
	}
	return false;
}

static const char *ll_spec_name(enum link_layer l)
{
	return l == LINK_INFINIBAND ? "infiniband" : l == LINK_ETHERNET ? "ethernet" : "any";
}

/* ---- anomalies ------------------------------------------------------------ */

/* Summary order: the anomaly that explains most comes first. */
static const char *const anomaly_order[] = {
	"no-devices", "no-match", "hang", "iwarp", "fw-0.0.000", "link-layer", "no-uverbs",
	"not-listed", "port-down", "port-polling", "port-init", "rate", "reg-mr-enomem",
	"open-failed", "probe-failed", "probe-crashed", "ipoib-missing", "ipoib-down",
	"ipoib-no-address", "ipoib-resolve", NULL,
};

struct anomalies {
	char *first;                    /* "tag: message" of the best-ranked one */
	int first_rank;
	unsigned n;
};

static void anomaly(struct report *r, struct anomalies *a, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void anomaly(struct report *r, struct anomalies *a, const char *tag, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	int rank = 0;

	while (anomaly_order[rank] && strcmp(anomaly_order[rank], tag) != 0)
		rank++;
	sb_printf(&sb, "%s: ", tag);
	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	report_detail(r, "%s", sb_str(&sb));
	if (!a->first || rank < a->first_rank) {
		free(a->first);
		a->first = sb_steal(&sb);
		a->first_rank = rank;
	}
	a->n++;
	sb_free(&sb);
}

/* ---- probe children -------------------------------------------------------- */

struct job {
	const char *what;               /* device or interface */
	bool resolve;
	char addr[64];
	struct proc_child ch;           /* the probe child (the engine in proc.c) */
	unsigned char buf[512];         /* what it said */
	size_t len;
	bool eof, hung, reaped;
	int wstatus;
	int last_step;
	bool have_result;
	struct probe_result res;
	uint64_t ms;
	/* for the child */
	const struct ctx *c;
	const struct rdma_ops *ops;
	uint64_t reg_mr;
	unsigned timeout_ms;
};

static void child_send_result(int fd, const struct probe_result *res)
{
	unsigned char m[1 + sizeof(*res)];

	m[0] = 'R';
	memcpy(m + 1, res, sizeof(*res));
	(void)!write(fd, m, sizeof(m));
}

/* In the child: the result pipe is fd; stdin, stdout and stderr are /dev/null. */
static void job_child(void *arg, int fd)
{
	const struct job *j = arg;
	struct probe_result res;
	struct probe_io io = { fd };

	memset(&res, 0, sizeof(res));
	probe_raise_memlock(j->c->spec);
	probe_read_memlock(&res);
	if (j->resolve)
		j->ops->resolve(j->c, j->addr, j->timeout_ms, &io, &res);
	else
		j->ops->probe(j->c, j->what, j->reg_mr, &io, &res);
	child_send_result(fd, &res);
}

static int job_start(const struct ctx *c, const struct rdma_ops *ops, struct job *j,
		     uint64_t reg_mr, unsigned timeout_ms)
{
	j->last_step = STEP_NONE;
	j->c = c;
	j->ops = ops;
	j->reg_mr = reg_mr;
	j->timeout_ms = timeout_ms;
	return proc_start_fn(&j->ch, job_child, j, 0);
}

static void job_parse(struct job *j)
{
	size_t i = 0;

	while (i < j->len) {
		if (j->buf[i] == 'S' && i + 1 < j->len) {
			j->last_step = j->buf[i + 1];
			i += 2;
		} else if (j->buf[i] == 'R' && i + 1 + sizeof(j->res) <= j->len) {
			memcpy(&j->res, j->buf + i + 1, sizeof(j->res));
			j->have_result = true;
			i += 1 + sizeof(j->res);
		} else {
			break;
		}
	}
}

/*
 * Wait for every job until it closes its pipe or the timeout passes; kill
 * the rest.  SIGKILL cannot end a process sleeping uninterruptibly in a
 * driver, so reaping is bounded too: such a probe is left to init.
 */
static void jobs_wait(struct job *jobs, size_t n, uint64_t timeout_ms)
{
	const struct proc_limits lim = { .timeout_ms = (unsigned)timeout_ms, .reap_ms = REAP_GRACE_MS,
					 .eof_ends = true };
	struct proc_child *chs = xcalloc(n ? n : 1, sizeof(*chs));

	for (size_t i = 0; i < n; i++)
		chs[i] = jobs[i].ch;
	proc_wait(chs, n, &lim);
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		struct proc_child *ch = &chs[i];

		j->len = ch->out.len < sizeof(j->buf) ? ch->out.len : sizeof(j->buf);
		if (j->len)
			memcpy(j->buf, ch->out.buf, j->len);
		job_parse(j);
		j->eof = ch->eof;
		j->hung = ch->pid > 0 && !ch->eof;
		j->reaped = ch->exited;
		j->wstatus = ch->status;
		j->ms = ch->ms;
		proc_child_free(ch);
		memset(&j->ch, 0, sizeof(j->ch));
	}
	free(chs);
}

/* ---- the module -------------------------------------------------------------- */

static struct rdma_result rdma_last;

static bool rdma_enabled(const struct spec *s)
{
	return s->rdma.present;
}

static uint64_t rdma_timeout(const struct spec *s)
{
	return s->rdma.open_timeout_ms + 15000;
}

static bool fake_root(const struct ctx *c)
{
	return c->root && c->root[0] && strcmp(c->root, "/") != 0;
}

/* The fixture ops only on a fake root that asks for them: a real node never gets fakes. */
static const struct rdma_ops *select_ops(const struct ctx *c)
{
	if (fake_root(c) && fs_exists(c, RDMA_FAKE_FILE))
		return &rdma_fake_ops;
	return &rdma_verbs_ops;
}

static void describe_device(struct report *r, const struct dev_info *d)
{
	report_detail(r, "%s: node_type %s, fw_ver %s, node_guid %s, %s", d->name,
		      d->node_type_txt[0] ? d->node_type_txt : "?", d->fw_ver[0] ? d->fw_ver : "?",
		      d->node_guid[0] ? d->node_guid : "?", d->uverbs[0] ? d->uverbs : "no uverbs node");
	for (unsigned k = 0; k < d->n_ports; k++) {
		const struct port_info *p = &d->ports[k];

		report_detail(r, "%s port %u: %s, %s, %s, %s, lid %s, sm_lid %s, pkey 0x%04x (%u set)",
			      d->name, p->num, p->state_txt[0] ? p->state_txt : "?",
			      p->phys_txt[0] ? p->phys_txt : "?", p->rate_txt[0] ? p->rate_txt : "rate ?",
			      p->link_layer, p->lid[0] ? p->lid : "?", p->sm_lid[0] ? p->sm_lid : "?",
			      p->pkey_max, p->n_pkeys);
	}
}

static void check_inventory(const struct ctx *c, struct report *r, struct anomalies *a, struct dev_info *d)
{
	const struct spec_rdma *s = &c->spec->rdma;

	/* The Azure A8/A9 signature: Network Direct shown as iWARP, no firmware version. */
	if (s->link_layer == LINK_INFINIBAND && d->node_type == 4)
		anomaly(r, a, "iwarp", "%s reports transport iWARP (node_type %d: %s) where InfiniBand "
			"is expected", d->name, d->node_type, d->node_type_txt);
	if (strcmp(d->fw_ver, "0.0.000") == 0)
		anomaly(r, a, "fw-0.0.000", "%s reports fw_ver 0.0.000: no real firmware behind it "
			"(Azure A8/A9 Network Direct devices look like this; verbs outside MPI do not "
			"work there)", d->name);
	if (!d->ll_match)
		anomaly(r, a, "link-layer", "%s has link layer %s; rdma.link_layer is %s", d->name,
			d->n_ports ? d->ports[0].link_layer : "unknown", ll_spec_name(s->link_layer));
	if (!d->uverbs[0])
		anomaly(r, a, "no-uverbs", "%s has no uverbs node in /sys/class/infiniband_verbs: "
			"userspace cannot use it (load ib_uverbs)", d->name);
	else if (!d->listed)
		anomaly(r, a, "not-listed", "%s has %s but the verbs library does not list it: "
			"/dev/infiniband/%s is missing or no provider (ibverbs-providers) drives it",
			d->name, d->uverbs, d->uverbs);
	if (d->n_ports == 0)
		anomaly(r, a, "port-down", "%s has no ports in sysfs", d->name);
	for (unsigned k = 0; k < d->n_ports; k++) {
		const struct port_info *p = &d->ports[k];

		if (p->state == 4) {
			if (s->min_rate_gbps && p->rate_gbps < s->min_rate_gbps)
				anomaly(r, a, "rate", "%s port %u runs at %s, below rdma.min_rate_gbps %u",
					d->name, p->num, p->rate_txt[0] ? p->rate_txt : "an unknown rate",
					s->min_rate_gbps);
		} else if (p->phys == 2) {
			anomaly(r, a, "port-polling", "%s port %u is %s with phys_state %s: no link partner "
				"answers (cable, switch port, or the fabric attachment)", d->name, p->num,
				p->state_txt, p->phys_txt);
		} else if (p->phys == 5 && (p->state == 2 || p->state == 3)) {
			anomaly(r, a, "port-init", "%s port %u has link (LinkUp) but is %s: no subnet "
				"manager has activated it", d->name, p->num, p->state_txt);
		} else {
			anomaly(r, a, "port-down", "%s port %u is %s (phys_state %s)", d->name, p->num,
				p->state_txt[0] ? p->state_txt : "in an unknown state",
				p->phys_txt[0] ? p->phys_txt : "unknown");
		}
	}
}

static void check_probe(const struct ctx *c, struct report *r, struct anomalies *a,
			const struct dev_info *d, const struct job *j)
{
	const struct spec_rdma *s = &c->spec->rdma;
	const struct probe_result *res = &j->res;
	char lim[32], hard[32], sz[32];

	if (j->hung) {
		anomaly(r, a, "hang", "%s: %s did not return within %llu ms; probe killed%s", d->name,
			probe_step_call((enum probe_step)j->last_step),
			(unsigned long long)s->open_timeout_ms,
			j->reaped ? "" : " (it is stuck in the kernel and could not be reaped)");
		return;
	}
	if (!j->have_result) {
		int sig = j->reaped && WIFSIGNALED(j->wstatus) ? WTERMSIG(j->wstatus) : 0;

		anomaly(r, a, "probe-crashed", "%s: the probe died in %s%s%s", d->name,
			probe_step_call((enum probe_step)j->last_step), sig ? " with signal " : "",
			sig ? strsignal(sig) : "");
		return;
	}
	fmt_kib(lim, sizeof(lim), res->memlock_cur);
	fmt_kib(hard, sizeof(hard), res->memlock_max);
	fmt_size(sz, sizeof(sz), s->reg_mr_bytes);
	if (res->step == STEP_DONE) {
		report_detail(r, "%s: verbs probe ok in %llu ms: fw %s, %u port(s)%s%s (memlock %s)", d->name,
			      (unsigned long long)j->ms, res->fw_ver[0] ? res->fw_ver : "?", res->phys_port_cnt,
			      s->reg_mr_bytes ? ", registered " : "", s->reg_mr_bytes ? sz : "", lim);
		return;
	}
	if (res->step == STEP_REG_MR && res->err == ENOMEM)
		anomaly(r, a, "reg-mr-enomem", "%s: ibv_reg_mr of %s failed with ENOMEM: the memlock "
			"limit in force is %s (hard %s); set memlock: unlimited and restart the "
			"services that use RDMA", d->name, sz, lim, hard);
	else
		anomaly(r, a, res->step == STEP_OPEN ? "open-failed" : "probe-failed",
			"%s: %s failed: %s (%s)", d->name, probe_step_call((enum probe_step)res->step),
			errno_name(res->err), strerror(res->err));
}

static void check_ipoib(const struct ctx *c, const struct rdma_ops *ops, struct report *r,
			struct anomalies *a, struct job *resolve_job, bool *want_resolve)
{
	const char *ifn = c->spec->rdma.ipoib;
	char path[160], oper[32], flags[32], type[16];

	*want_resolve = false;
	if (!safe_name(ifn) || strlen(ifn) > 15) {
		anomaly(r, a, "ipoib-missing", "rdma.ipoib '%s' is not an interface name", ifn);
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s", ifn);
	if (!fs_exists(c, path)) {
		anomaly(r, a, "ipoib-missing", "%s: no such interface (/sys/class/net/%s); on Azure, "
			"waagent creates it with OS.EnableRDMA=y on IPoIB SKUs", ifn, ifn);
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/type", ifn);
	if (sysfs_read(c, path, type, sizeof(type)) && strcmp(type, "32") != 0)
		report_detail(r, "warning: %s has type %s, not InfiniBand (32): not an IPoIB interface", ifn, type);
	snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifn);
	sysfs_read(c, path, oper, sizeof(oper));
	snprintf(path, sizeof(path), "/sys/class/net/%s/flags", ifn);
	sysfs_read(c, path, flags, sizeof(flags));
	/* Some drivers leave operstate "unknown": then IFF_UP in flags decides. */
	if (strcmp(oper, "up") != 0 && !(strcmp(oper, "unknown") == 0 && (parse_pkey(flags) & 1))) {
		anomaly(r, a, "ipoib-down", "%s is %s", ifn, oper[0] ? oper : "not up");
		return;
	}
	int ret = ops->if_addr(c, ifn, resolve_job->addr, sizeof(resolve_job->addr));

	if (ret < 0) {
		anomaly(r, a, "ipoib-no-address", "%s is up but has no address%s%s", ifn,
			ret == -ENOENT ? "" : ": ", ret == -ENOENT ? "" : strerror(-ret));
		return;
	}
	snprintf(rdma_last.ipoib_addr, sizeof(rdma_last.ipoib_addr), "%s", resolve_job->addr);
	resolve_job->what = ifn;
	resolve_job->resolve = true;
	*want_resolve = true;
}

static void check_resolve(const struct ctx *c, struct report *r, struct anomalies *a, const struct job *j)
{
	const struct probe_result *res = &j->res;

	if (j->hung)
		anomaly(r, a, "ipoib-resolve", "%s: rdma_resolve_addr(%s) did not complete within %llu ms "
			"(stuck in %s)", j->what, j->addr, (unsigned long long)c->spec->rdma.open_timeout_ms,
			probe_step_call((enum probe_step)j->last_step));
	else if (!j->have_result)
		anomaly(r, a, "ipoib-resolve", "%s: the rdma_resolve_addr probe died", j->what);
	else if (res->step != STEP_DONE && res->event[0])
		anomaly(r, a, "ipoib-resolve", "%s: rdma_resolve_addr(%s) gave %s (%s)", j->what, j->addr,
			res->event, res->err ? strerror(res->err) : "no detail");
	else if (res->step != STEP_DONE)
		anomaly(r, a, "ipoib-resolve", "%s: %s(%s) failed: %s (%s)", j->what,
			probe_step_call((enum probe_step)res->step), j->addr, errno_name(res->err),
			strerror(res->err));
	else
		report_detail(r, "%s: %s resolves to RDMA device %s (rdma_resolve_addr, %llu ms)", j->what,
			      j->addr, res->resolved_dev[0] ? res->resolved_dev : "?", (unsigned long long)j->ms);
}

static int rdma_run(struct ctx *c, struct report *r)
{
	const struct spec_rdma *s = &c->spec->rdma;
	const struct rdma_ops *ops = select_ops(c);
	struct dev_info *devs = xcalloc(RDMA_MAX_DEVS, sizeof(*devs));
	struct strlist listed = { 0 };
	struct anomalies a = { NULL, 0, 0 };
	struct job *jobs = xcalloc(RDMA_MAX_DEVS + 1, sizeof(*jobs));
	size_t n, n_jobs = 0, n_sel = 0, n_named = 0, n_named_ll = 0;
	bool want_resolve = false;
	struct strbuf found = STRBUF_INIT;
	int ret;

	memset(&rdma_last, 0, sizeof(rdma_last));
	c->rdma_result = &rdma_last;
	if (ops != &rdma_verbs_ops) {
		char *fake = ctx_path(c, RDMA_FAKE_FILE);

		report_detail(r, "verbs: FAKE fixture ops from %s (test only)", fake);
		free(fake);
	}
	ret = ops->init(c);
	if (ret < 0)
		report_detail(r, "verbs: %s init failed: %s", ops->name, strerror(-ret));
	n = read_devices(c, devs, RDMA_MAX_DEVS);
	ret = ops->list(c, &listed);
	if (ret < 0)
		report_detail(r, "verbs: %s lists no devices: %s", ops->name, strerror(-ret));
	else
		report_detail(r, "verbs: %s lists %zu device(s)", ops->name, listed.n);
	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		for (size_t k = 0; k < listed.n; k++)
			d->listed |= strcmp(listed.v[k], d->name) == 0;
		d->name_match = fnmatch(s->devices, d->name, 0) == 0;
		for (unsigned k = 0; k < d->n_ports; k++)
			d->ll_match |= ll_matches(s->link_layer, d->ports[k].link_layer);
		n_named += d->name_match;
		n_named_ll += d->name_match && d->ll_match;
		sb_printf(&found, "%s%s (%s)", found.len ? ", " : "", d->name,
			  d->n_ports ? d->ports[0].link_layer : "no ports");
		describe_device(r, d);
	}
	/*
	 * Select by name and link layer.  When no named device has the wanted
	 * link layer, keep the named ones anyway so the report says what they are.
	 */
	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		d->selected = d->name_match && (d->ll_match || n_named_ll == 0);
		if (!d->selected)
			report_detail(r, "%s: not selected (%s)", d->name, !d->name_match ?
				      "name does not match rdma.devices" : "link layer differs from rdma.link_layer");
	}
	if (n == 0 && listed.n == 0)
		anomaly(r, &a, "no-devices", "no RDMA devices (/sys/class/infiniband is empty): no RDMA "
			"driver is loaded, or this VM size has no RDMA network");
	else if (n_named == 0)
		anomaly(r, &a, "no-match", "no device matches rdma.devices '%s' (found: %s); Azure names "
			"InfiniBand ports mlx5_ib* and accelerated-networking NICs mlx5_an*",
			s->devices, found.len ? sb_str(&found) : "none in sysfs");

	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		if (!d->selected)
			continue;
		n_sel++;
		check_inventory(c, r, &a, d);
		if (d->listed && d->uverbs[0]) {
			struct job *j = &jobs[n_jobs];

			j->what = d->name;
			ret = job_start(c, ops, j, s->reg_mr_bytes, (unsigned)s->open_timeout_ms);
			if (ret < 0)
				anomaly(r, &a, "probe-failed", "%s: cannot start the probe: %s", d->name,
					strerror(-ret));
			else
				d->job = (int)n_jobs++;
		}
	}
	if (s->ipoib) {
		check_ipoib(c, ops, r, &a, &jobs[n_jobs], &want_resolve);
		if (want_resolve && job_start(c, ops, &jobs[n_jobs], 0, (unsigned)s->open_timeout_ms) == 0)
			n_jobs++;
	}
	if (n_jobs) {
		uint64_t left = ctx_remaining_ms(c), tmo = s->open_timeout_ms;

		if (left > 1000 && tmo > left - 1000)
			tmo = left - 1000;
		jobs_wait(jobs, n_jobs, tmo);
	}
	for (size_t i = 0; i < n; i++)
		if (devs[i].job >= 0)
			check_probe(c, r, &a, &devs[i], &jobs[devs[i].job]);
	for (size_t i = 0; i < n_jobs; i++)
		if (jobs[i].resolve)
			check_resolve(c, r, &a, &jobs[i]);

	/* Verdict. */
	double rate = 0;
	bool first = true;

	for (size_t i = 0; i < n; i++) {
		if (!devs[i].selected)
			continue;
		size_t dl = strlen(rdma_last.devices);

		snprintf(rdma_last.devices + dl, sizeof(rdma_last.devices) - dl, "%s%s", dl ? " " : "",
			 devs[i].name);
		for (unsigned k = 0; k < devs[i].n_ports; k++)
			if (devs[i].ports[k].state == 4 && (first || devs[i].ports[k].rate_gbps < rate)) {
				rate = devs[i].ports[k].rate_gbps;
				first = false;
			}
	}
	rdma_last.link_layer = s->link_layer;
	rdma_last.rate_gbps = (unsigned)rate;
	rdma_last.usable = a.n == 0 && n_sel > 0;
	if (a.n) {
		char extra[32] = "";

		if (a.n > 1)
			snprintf(extra, sizeof(extra), " (+%u more)", a.n - 1);
		report_set(r, s->required ? ST_FAILED : ST_DEGRADED, "%s%s%s", a.first, extra,
			   s->required ? "" : " [rdma.required: false]");
	} else {
		struct strbuf sum = STRBUF_INIT;
		const struct dev_info *d0 = NULL;
		char sz[32];

		for (size_t i = 0; i < n && !d0; i++)
			if (devs[i].selected)
				d0 = &devs[i];
		sb_printf(&sum, "%s: %g Gb/s %s, verbs probe ok", rdma_last.devices, rate,
			  d0 && d0->n_ports ? d0->ports[0].link_layer : "?");
		if (s->reg_mr_bytes) {
			fmt_size(sz, sizeof(sz), s->reg_mr_bytes);
			sb_printf(&sum, " (reg_mr %s)", sz);
		}
		for (size_t i = 0; i < n_jobs; i++)
			if (jobs[i].resolve)
				sb_printf(&sum, "; %s %s -> %s", jobs[i].what, jobs[i].addr,
					  jobs[i].res.resolved_dev[0] ? jobs[i].res.resolved_dev : "?");
		report_set(r, ST_OK, "%s", sb_str(&sum));
		sb_free(&sum);
	}
	if (ops->fini)
		ops->fini();
	free(a.first);
	sb_free(&found);
	strlist_free(&listed);
	free(jobs);
	free(devs);
	return 0;
}

const struct module rdma_module = {
	.name = "rdma",
	.enabled = rdma_enabled,
	.needs = NULL,
	.timeout_ms = rdma_timeout,
	.check = rdma_run,
	.apply = rdma_run,
	.outputs = OUT_RDMA,
};
