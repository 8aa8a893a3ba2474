/* SPDX-License-Identifier: MIT */
/*
 * rdma: find the RDMA devices, select the ones the spec names, and say by
 * name what is wrong with them.  sysfs (under the root, ibsysfs.c) gives the
 * inventory: node type, firmware, GUID, and per port state, physical state,
 * rate, link layer, LIDs and P_Keys.  The verbs library -- only ever in the
 * helper hpcinit-rdma-probe, one per device under the child engine -- gives
 * what userspace can see, and its probe (open, query, alloc PD, register
 * memory) proves the device answers and memlock allows pinning.  A probe that does
 * not answer within rdma.open_timeout is killed and reported as a hang, and
 * the run goes on.  rdma writes nothing.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "proc.h"
#include "record.h"
#include "ib/ibsysfs.h"
#include "ib/probe.h"
#include "limits/memlock_job.h"
#include "number.h"

#define RDMA_MAX_DEVS 64

/* An errno the helper names ("noaddr 99"): EPROTO when it is no errno. */
static int helper_errno(const char *v)
{
	long long e;

	return num_ll(v, 1, 4095, &e) ? (int)e : EPROTO;
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

/* A device of the inventory, and what this step makes of it. */
struct dev_info {
	struct ib_dev ib;
	bool listed;                    /* the verbs library lists it */
	bool name_match, ll_match, selected;
	bool verbs_unknown;             /* no probe helper: what libibverbs lists is unknown */
	int job;                        /* its probe, -1 when not probed */
};

static const char *ll_spec_name(enum link_layer l)
{
	return l == LINK_INFINIBAND ? "infiniband" : l == LINK_ETHERNET ? "ethernet" : "any";
}

/* ---- anomalies ------------------------------------------------------------ */

/* Summary order: the anomaly that explains most comes first. */
static const char *const anomaly_order[] = {
	"no-devices", "no-helper", "no-match", "no-fabric", "hang", "iwarp", "fw-0.0.000", "link-layer", "no-uverbs",
	"not-listed", "port-down", "port-polling", "port-init", "rate", "reg-mr-enomem",
	"open-failed", "probe-failed", "probe-crashed", "ipoib-missing", "ipoib-down",
	"ipoib-no-address", "ipoib-resolve", "ipoib-kvp", NULL,
};

struct anomalies {
	char *first;                    /* "tag: message" of the best-ranked one */
	int first_rank;
	unsigned n;
	enum rstatus sev;               /* of each finding: failed, or degraded (rdma.required: false) */
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
	/* A finding (tag rdma.<tag>); the summary keeps anomaly_order, which ranks causes. */
	{
		char *ftag = xasprintf("rdma.%s", tag);

		report_finding(r, a->sev, ftag, "%s", sb_str(&sb));
		free(ftag);
	}
	if (!a->first || rank < a->first_rank) {
		free(a->first);
		a->first = sb_steal(&sb);
		a->first_rank = rank;
	}
	a->n++;
	sb_free(&sb);
}


/* ---- the module -------------------------------------------------------------- */

/* What a job gets (memlock section present), measured once a run; the probe registers under it. */
static struct memlock_job job_limit;

/*
 * The probe registers under the limit a job gets here (lib/limits: a new
 * PAM session of the spec's user, and systemd services; the lower), never
 * under the spec's wish: it proves the node, not the spec.
 */
static long long job_memlock(const struct ctx *c)
{
	return c->spec->memlock.present ? memlock_job_min(&job_limit) : MEMLOCK_UNSET;
}

static struct rdma_result rdma_last;

static bool rdma_enabled(const struct spec *s)
{
	return s->rdma.present;
}

static uint64_t rdma_timeout(const struct spec *s)
{
	return s->rdma.open_timeout_ms + 15000;
}

/* "software RoCE" (rdma_rxe) or "software iWARP" (siw), NULL for a hardware device. */
static const char *soft_kind(const struct ib_dev *d)
{
	if (d->kind != IB_KIND_SOFT)
		return NULL;
	return d->node_type == 4 ? "software iWARP" : "software RoCE";
}

static bool soft_allowed(const struct spec_rdma *s)
{
	return s->software == SOFT_ALLOW || (s->software == SOFT_AUTO && s->link_layer != LINK_INFINIBAND);
}

static void describe_device(struct report *r, const struct dev_info *d)
{
	if (soft_kind(&d->ib))
		report_detail(r, "%s: %s device on %s (%s), not an HCA: real verbs, with this host's CPU "
			      "doing the transport; it has no firmware (fw 0.0.0)", d->ib.name,
			      soft_kind(&d->ib), d->ib.parent, d->ib.node_type == 4 ? "siw" : "rdma_rxe");
	report_detail(r, "%s: %s (sysfs: %s link layer%s%s%s%s%s%s%s%s)", d->ib.name, ib_kind_text(&d->ib),
		      d->ib.n_ports ? d->ib.ports[0].link_layer : "no port", d->ib.driver[0] ? ", driver " : "",
		      d->ib.driver, ib_dev_netdev(&d->ib)[0] ? ", netdev " : "", ib_dev_netdev(&d->ib),
		      d->ib.master[0] ? " enslaved to " : "", d->ib.master,
		      d->ib.master_driver[0] ? " of " : "", d->ib.master_driver);
	report_detail(r, "%s: node_type %s, fw_ver %s, node_guid %s, %s", d->ib.name,
		      d->ib.node_type_txt[0] ? d->ib.node_type_txt : "?", d->ib.fw_ver[0] ? d->ib.fw_ver : "?",
		      d->ib.node_guid[0] ? d->ib.node_guid : "?", d->ib.uverbs[0] ? d->ib.uverbs : "no uverbs node");
	for (unsigned k = 0; k < d->ib.n_ports; k++) {
		const struct ib_port *p = &d->ib.ports[k];

		report_detail(r, "%s port %u: %s, %s, %s, %s, lid %s, sm_lid %s, pkey 0x%04x (%u set)",
			      d->ib.name, p->num, p->state_txt[0] ? p->state_txt : "?",
			      p->phys_txt[0] ? p->phys_txt : "?", p->rate_txt[0] ? p->rate_txt : "rate ?",
			      p->link_layer, p->lid[0] ? p->lid : "?", p->sm_lid[0] ? p->sm_lid : "?",
			      p->pkey_max, p->n_pkeys);
	}
}

static void check_inventory(const struct ctx *c, struct report *r, struct anomalies *a, struct dev_info *d)
{
	const struct spec_rdma *s = &c->spec->rdma;

	/*
	 * A software device (rdma_rxe, siw: a "parent" netdev, fw 0.0.0) gives
	 * real verbs with the CPU doing the transport: never an HCA.  It counts
	 * only where rdma.software allows it (auto: unless link_layer is
	 * infiniband, which a software device cannot be).
	 */
	if (soft_kind(&d->ib) && !soft_allowed(s))
		anomaly(r, a, "software-device", "%s is a %s device on %s (%s, fw %s), not an HCA; "
			"rdma.software: %s%s", d->ib.name, soft_kind(&d->ib), d->ib.parent,
			d->ib.node_type == 4 ? "siw" : "rdma_rxe", d->ib.fw_ver[0] ? d->ib.fw_ver : "?",
			s->software == SOFT_DENY ? "deny" : "auto",
			s->software == SOFT_DENY ? "" : " (denied with link_layer: infiniband; set software: allow "
			"to accept it)");
	/* The Azure A8/A9 signature: Network Direct shown as iWARP, no firmware version. */
	if (s->link_layer == LINK_INFINIBAND && d->ib.node_type == 4 && !soft_kind(&d->ib))
		anomaly(r, a, "iwarp", "%s reports transport iWARP (node_type %d: %s) where InfiniBand "
			"is expected", d->ib.name, d->ib.node_type, d->ib.node_type_txt);
	if (strcmp(d->ib.fw_ver, "0.0.000") == 0)
		anomaly(r, a, "fw-0.0.000", "%s reports fw_ver 0.0.000: no real firmware behind it "
			"(Azure A8/A9 Network Direct devices look like this; verbs outside MPI do not "
			"work there)", d->ib.name);
	if (!d->ll_match)
		anomaly(r, a, "link-layer", "%s has link layer %s; rdma.link_layer is %s", d->ib.name,
			d->ib.n_ports ? d->ib.ports[0].link_layer : "unknown", ll_spec_name(s->link_layer));
	if (!d->ib.uverbs[0])
		anomaly(r, a, "no-uverbs", "%s has no uverbs node in /sys/class/infiniband_verbs: "
			"userspace cannot use it (load ib_uverbs)", d->ib.name);
	else if (!d->listed && !d->verbs_unknown)
		anomaly(r, a, "not-listed", "%s has %s but the verbs library does not list it: "
			"/dev/infiniband/%s is missing or no provider (ibverbs-providers) drives it",
			d->ib.name, d->ib.uverbs, d->ib.uverbs);
	if (d->ib.n_ports == 0)
		anomaly(r, a, "port-down", "%s has no ports in sysfs", d->ib.name);
	for (unsigned k = 0; k < d->ib.n_ports; k++) {
		const struct ib_port *p = &d->ib.ports[k];

		if (p->state == 4) {
			if (s->min_rate_gbps && p->rate_gbps < s->min_rate_gbps)
				anomaly(r, a, "rate", "%s port %u runs at %s, below rdma.min_rate_gbps %u",
					d->ib.name, p->num, p->rate_txt[0] ? p->rate_txt : "an unknown rate",
					s->min_rate_gbps);
		} else if (p->phys == 2) {
			anomaly(r, a, "port-polling", "%s port %u is %s with phys_state %s: no link partner "
				"answers (cable, switch port, or the fabric attachment)", d->ib.name, p->num,
				p->state_txt, p->phys_txt);
		} else if (p->phys == 5 && (p->state == 2 || p->state == 3)) {
			anomaly(r, a, "port-init", "%s port %u has link (LinkUp) but is %s: no subnet "
				"manager has activated it", d->ib.name, p->num, p->state_txt);
		} else {
			anomaly(r, a, "port-down", "%s port %u is %s (phys_state %s)", d->ib.name, p->num,
				p->state_txt[0] ? p->state_txt : "in an unknown state",
				p->phys_txt[0] ? p->phys_txt : "unknown");
		}
	}
}

static void check_probe(const struct ctx *c, struct report *r, struct anomalies *a,
			const struct dev_info *d, const struct probe_job *j)
{
	const struct spec_rdma *s = &c->spec->rdma;
	const struct probe_result *res = &j->res;
	char lim[32], hard[32], sz[32], job[256] = "";

	if (j->hung) {
		anomaly(r, a, "hang", "%s: %s did not return within %llu ms; probe killed%s", d->ib.name,
			probe_step_call((enum probe_step)j->last_step),
			(unsigned long long)s->open_timeout_ms,
			j->reaped ? "" : " (it is stuck in the kernel and could not be reaped)");
		return;
	}
	if (!j->have_result) {
		int sig = j->reaped && WIFSIGNALED(j->wstatus) ? WTERMSIG(j->wstatus) : 0;

		anomaly(r, a, "probe-crashed", "%s: the probe died in %s%s%s", d->ib.name,
			probe_step_call((enum probe_step)j->last_step), sig ? " with signal " : "",
			sig ? strsignal(sig) : "");
		return;
	}
	fmt_kib(lim, sizeof(lim), res->memlock_cur);
	fmt_kib(hard, sizeof(hard), res->memlock_max);
	fmt_size(sz, sizeof(sz), s->reg_mr_bytes);
	if (c->spec->memlock.present) {
		char ps[32], sv[32];

		memlock_fmt(job_limit.pam_soft, ps, sizeof(ps));
		memlock_fmt(job_limit.svc_soft, sv, sizeof(sv));
		snprintf(job, sizeof(job), "; a job gets: PAM session of %s %s, systemd services %s",
			 job_limit.user[0] ? job_limit.user : "any user", ps, sv);
	}
	if (res->step == STEP_DONE) {
		report_detail(r, "%s: verbs probe ok in %llu ms: fw %s, %u port(s)%s%s (memlock %s%s)", d->ib.name,
			      (unsigned long long)j->ms, res->fw_ver[0] ? res->fw_ver : "?", res->phys_port_cnt,
			      s->reg_mr_bytes ? ", registered " : "", s->reg_mr_bytes ? sz : "", lim, job);
		return;
	}
	if (res->step == STEP_REG_MR && res->err == ENOMEM)
		anomaly(r, a, "reg-mr-enomem", "%s: ibv_reg_mr of %s failed with ENOMEM: the memlock "
			"limit in force is %s (hard %s%s); set memlock: unlimited and restart the "
			"services that use RDMA", d->ib.name, sz, lim, hard, job);
	else
		anomaly(r, a, res->step == STEP_OPEN ? "open-failed" : "probe-failed",
			"%s: %s failed: %s (%s)", d->ib.name, probe_step_call((enum probe_step)res->step),
			errno_name(res->err), strerror(res->err));
}

static void check_ipoib(const struct ctx *c, struct report *r, struct anomalies *a,
			struct probe_job *resolve_job, bool *want_resolve)
{
	const char *ifn = c->spec->rdma.ipoib;
	char path[160], oper[32], flags[32], type[16];

	*want_resolve = false;
	if (!ib_safe_name(ifn) || strlen(ifn) > 15) {
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
	if (ib_sysfs_read(c, path, type, sizeof(type)) && strcmp(type, "32") != 0)
		report_detail(r, "warning: %s has type %s, not InfiniBand (32): not an IPoIB interface", ifn, type);
	snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifn);
	ib_sysfs_read(c, path, oper, sizeof(oper));
	snprintf(path, sizeof(path), "/sys/class/net/%s/flags", ifn);
	ib_sysfs_read(c, path, flags, sizeof(flags));
	/* Some drivers leave operstate "unknown": then IFF_UP in flags decides. */
	if (strcmp(oper, "up") != 0 && !(strcmp(oper, "unknown") == 0 && (ib_parse_hex16(flags) & 1))) {
		anomaly(r, a, "ipoib-down", "%s is %s", ifn, oper[0] ? oper : "not up");
		return;
	}
	struct strbuf out = STRBUF_INIT;
	int ret = probe_helper_ask(c, "ifaddr", ifn, (unsigned)c->spec->rdma.open_timeout_ms, &out);
	char *addr = probe_helper_field(sb_str(&out), "addr"), *noaddr = probe_helper_field(sb_str(&out), "noaddr");

	if (ret == 0 && !addr)
		ret = noaddr ? -helper_errno(noaddr) : -EPROTO;
	if (ret == 0)
		snprintf(resolve_job->addr, sizeof(resolve_job->addr), "%s", addr);
	free(addr);
	free(noaddr);
	sb_free(&out);
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

static void check_resolve(const struct ctx *c, struct report *r, struct anomalies *a, const struct probe_job *j)
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

/*
 * IPoIB as Azure's host intends it: Hyper-V KVP pool 0 (hv_kvp_daemon's
 * file) holds records of a 512-byte key and a 2048-byte value; the key
 * IPoIB_Data has "NUMPAIRS:<n>|<MAC>:<IPv4>|...", which waagent applies
 * with OS.EnableRDMA=y.  The MAC is 6 bytes of the port GUID: an IPoIB
 * interface's 20-byte address, bytes 12-14 and 17-19.  Each pair is
 * compared with the interface (type 32 in sysfs) whose address has it.
 */
#define KVP_POOL "/var/lib/hyperv/.kvp_pool_0"
#define KVP_KEY 512
#define KVP_VALUE 2048

static bool kvp_ipoib_data(const struct ctx *c, char *out, size_t n)
{
	char *hp = ctx_path(c, KVP_POOL), *buf = NULL;
	size_t len = 0;
	bool found = false;

	if (fs_read_host(hp, 4u << 20, &buf, &len) < 0) {
		free(hp);
		return false;
	}
	free(hp);
	for (size_t off = 0; off + KVP_KEY + KVP_VALUE <= len && !found; off += KVP_KEY + KVP_VALUE) {
		if (strncasecmp(buf + off, "IPoIB_Data", KVP_KEY) == 0) {
			snprintf(out, n, "%.*s", (int)strnlen(buf + off + KVP_KEY, KVP_VALUE), buf + off + KVP_KEY);
			found = true;
		}
	}
	free(buf);
	return found;
}

/* "00:00:09:27:fe:80:00:00:00:00:00:00:00:15:5d:ff:fe:33:ff:2c" -> "00155d33ff2c"; false when not 20 bytes. */
static bool ipoib_short_mac(const char *addr, char out[13])
{
	unsigned long long b[20];
	const char *p = addr;

	for (int i = 0; i < 20; i++) {
		if (!num_ull_prefix(p, 16, 0xff, &b[i], &p) || *p != (i < 19 ? ':' : '\0'))
			return false;
		p += i < 19;
	}
	snprintf(out, 13, "%02x%02x%02x%02x%02x%02x", (unsigned)b[12], (unsigned)b[13], (unsigned)b[14],
		 (unsigned)b[17], (unsigned)b[18], (unsigned)b[19]);
	return true;
}

static void check_kvp(const struct ctx *c, struct report *r, struct anomalies *a)
{
	char data[KVP_VALUE + 1];
	struct strlist ifs = { 0 };
	char *hp;
	DIR *d;
	struct dirent *e;
	unsigned long long want = 0;
	unsigned got = 0;
	const char *p;

	if (!kvp_ipoib_data(c, data, sizeof(data)))
		return;
	if (strncmp(data, "NUMPAIRS:", 9) != 0 || !num_ull_prefix(data + 9, 10, UINT_MAX, &want, NULL) ||
	    !(p = strchr(data, '|'))) {
		report_detail(r, "IPoIB_Data (Hyper-V KVP, " KVP_POOL "): \"%.60s\" is not NUMPAIRS:<n>|<MAC>:<IPv4>|...: "
			      "not compared", data);
		return;
	}
	hp = ctx_path(c, "/sys/class/net");
	d = opendir(hp);
	free(hp);
	while (d && (e = readdir(d))) {
		char path[300], type[16];

		if (!ib_safe_name(e->d_name) || strlen(e->d_name) > 15)
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/type", e->d_name);
		if (ib_sysfs_read(c, path, type, sizeof(type)) && strcmp(type, "32") == 0)
			strlist_push(&ifs, e->d_name);
	}
	if (d)
		closedir(d);
	for (p++; *p; ) {
		char mac[16] = "", ip[48] = "", *tok = xstrndup(p, strcspn(p, "|"));
		const char *ifn = NULL;

		p += strlen(tok);
		p += *p == '|';
		size_t ml = strspn(tok, "0123456789abcdefABCDEF"), il = strspn(tok + ml + (tok[ml] == ':'), "0123456789.");

		if (ml != 12 || tok[ml] != ':' || il == 0 || il >= sizeof(ip)) {
			report_detail(r, "IPoIB_Data: pair \"%.40s\" is not <MAC>:<IPv4>: skipped", tok);
			free(tok);
			continue;
		}
		memcpy(mac, tok, ml);
		memcpy(ip, tok + ml + 1, il);
		free(tok);
		got++;
		for (char *m = mac; *m; m++)
			*m = (char)(*m >= 'A' && *m <= 'F' ? *m - 'A' + 'a' : *m);
		for (size_t i = 0; i < ifs.n && !ifn; i++) {
			char path[300], addr[96], sm[13];

			snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifs.v[i]);
			if (ib_sysfs_read(c, path, addr, sizeof(addr)) && ipoib_short_mac(addr, sm) && strcmp(sm, mac) == 0)
				ifn = ifs.v[i];
		}
		if (!ifn) {
			anomaly(r, a, "ipoib-kvp", "the host intends %s for MAC %s (Hyper-V KVP IPoIB_Data), but no "
				"IPoIB interface has that MAC", ip, mac);
			continue;
		}
		{
			struct strbuf out = STRBUF_INIT;
			int ret = probe_helper_ask(c, "ifaddr", ifn, (unsigned)c->spec->rdma.open_timeout_ms, &out);
			char *have = ret == 0 ? probe_helper_field(sb_str(&out), "addr") : NULL;

			if (have && strcmp(have, ip) == 0)
				report_detail(r, "%s: %s, as the host intends (Hyper-V KVP IPoIB_Data, MAC %s)", ifn, ip, mac);
			else
				anomaly(r, a, "ipoib-kvp", "%s is wrong: it has %s where the host intends %s (Hyper-V KVP "
					"IPoIB_Data, MAC %s); waagent assigns it with OS.EnableRDMA=y", ifn,
					have ? have : "no address", ip, mac);
			free(have);
			sb_free(&out);
		}
	}
	if (got != want)
		report_detail(r, "IPoIB_Data says NUMPAIRS:%llu but lists %u pair(s)", want, got);
	strlist_free(&ifs);
}

/* Does <root>/sys/class/infiniband_verbs hold a uverbs node?  libibverbs lists only those. */
static bool have_uverbs(const struct ctx *c)
{
	char *dir = ctx_path(c, "/sys/class/infiniband_verbs");
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	free(dir);
	while (d && !found && (e = readdir(d)))
		found = strncmp(e->d_name, "uverbs", 6) == 0;
	if (d)
		closedir(d);
	return found;
}

/*
 * What the verbs library lists, through the helper.  With no uverbs node at
 * all there is nothing it could list: no helper is started (an Ethernet VM
 * with an optional rdma section pays no process for it).  -ENOENT: the
 * helper is not installed.
 */
static int verbs_list(const struct ctx *c, struct report *r, struct strlist *listed)
{
	struct strbuf out = STRBUF_INIT;
	int ret;
	char *backend, *ierr, *lerr;
	const char *name;

	if (!have_uverbs(c)) {
		report_detail(r, "verbs: no uverbs node in /sys/class/infiniband_verbs: nothing for "
			      "libibverbs to list (not asked)");
		return 0;
	}
	ret = probe_helper_ask(c, "list", NULL, (unsigned)c->spec->rdma.open_timeout_ms, &out);
	if (ret == -ENOENT) {
		sb_free(&out);
		return ret;
	}
	backend = probe_helper_field(sb_str(&out), "backend");
	ierr = probe_helper_field(sb_str(&out), "init-error");
	lerr = probe_helper_field(sb_str(&out), "list-error");
	name = backend ? backend : "libibverbs";

	if (backend && strcmp(backend, "libibverbs") != 0) {
		char *fake = ctx_path(c, RDMA_FAKE_FILE);

		report_detail(r, "verbs: FAKE fixture ops from %s (test only)", fake);
		free(fake);
	}
	if (ierr)
		report_detail(r, "verbs: %s init failed: %s", name, strerror(helper_errno(ierr)));
	for (const char *p = sb_str(&out); *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > 7 && strncmp(p, "device ", 7) == 0)
			strlist_push_take(listed, xasprintf("%.*s", (int)(n - 7), p + 7));
		p = nl ? nl + 1 : p + n;
	}
	if (ret < 0)
		report_detail(r, "verbs: the %s helper did not answer: %s", RDMA_PROBE_HELPER, strerror(-ret));
	else if (lerr)
		report_detail(r, "verbs: %s lists no devices: %s", name, strerror(helper_errno(lerr)));
	else
		report_detail(r, "verbs: %s lists %zu device(s)", name, listed->n);
	free(backend);
	free(ierr);
	free(lerr);
	sb_free(&out);
	return 0;
}

/*
 * Select by name and link layer (what each device is comes from sysfs);
 * each device described, the ones left out said why; no device, none by
 * that name, or only accelerated networking's VF: an anomaly.
 */
static void select_devices(struct report *r, struct anomalies *a, const struct spec_rdma *s,
			   struct dev_info *devs, size_t n, const struct strlist *listed)
{
	size_t n_named = 0, n_named_ll = 0, n_vf = 0;
	struct strbuf found = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		for (size_t k = 0; k < listed->n; k++)
			d->listed |= strcmp(listed->v[k], d->ib.name) == 0;
		d->name_match = fnmatch(s->devices, d->ib.name, 0) == 0;
		for (unsigned k = 0; k < d->ib.n_ports; k++)
			d->ll_match |= ib_link_matches(s->link_layer, d->ib.ports[k].link_layer);
		n_named += d->name_match;
		/* Accelerated networking's VF is never the fabric, whatever it is called. */
		n_named_ll += d->name_match && d->ll_match && d->ib.kind != IB_KIND_AN_VF;
		sb_printf(&found, "%s%s (%s)", found.len ? ", " : "", d->ib.name,
			  d->ib.n_ports ? d->ib.ports[0].link_layer : "no ports");
		describe_device(r, d);
	}
	/*
	 * Select by name and link layer.  When no named device has the wanted
	 * link layer, keep the named ones anyway so the report says what they are.
	 */
	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		d->selected = d->name_match && d->ib.kind != IB_KIND_AN_VF && (d->ll_match || n_named_ll == 0);
		if (!d->selected && d->name_match && d->ib.kind == IB_KIND_AN_VF)
			report_detail(r, "%s: not selected (accelerated networking's Ethernet VF%s%s%s%s: "
				      "never the RDMA fabric)", d->ib.name, d->ib.netdev[0] ? " " : "",
				      d->ib.netdev, d->ib.master[0] ? " of " : "", d->ib.master);
		else if (!d->selected)
			report_detail(r, "%s: not selected (%s)", d->ib.name, !d->name_match ?
				      "name does not match rdma.devices" : "link layer differs from rdma.link_layer");
		n_vf += d->name_match && d->ib.kind == IB_KIND_AN_VF;
	}
	if (n == 0 && listed->n == 0)
		anomaly(r, a, "no-devices", "no RDMA devices (/sys/class/infiniband is empty): no RDMA "
			"driver is loaded, or this VM size has no RDMA network");
	else if (n_named == 0)
		anomaly(r, a, "no-match", "no device matches rdma.devices '%s' (found: %s); Azure names "
			"InfiniBand ports mlx5_ib* and accelerated-networking NICs mlx5_an*",
			s->devices, found.len ? sb_str(&found) : "none in sysfs");
	else if (n_vf == n_named)
		anomaly(r, a, "no-fabric", "no RDMA fabric: %s accelerated networking's Ethernet VF "
			"(found: %s), which carries the VM's Ethernet, not MPI; this VM size has no "
			"InfiniBand, or its driver is not loaded", n_vf == 1 ? "the only device is" :
			"every device is", sb_str(&found));
	sb_free(&found);
}

/* Every selected device passed: the summary names them, what they are, the rate and the probes. */
static void report_ok(struct report *r, const struct spec_rdma *s, const struct dev_info *devs, size_t n,
		      const struct probe_job *jobs, size_t n_jobs, double rate)
{
	struct strbuf sum = STRBUF_INIT;
	const struct dev_info *d0 = NULL;
	char sz[32];

	for (size_t i = 0; i < n && !d0; i++)
		if (devs[i].selected)
			d0 = &devs[i];
	sb_printf(&sum, "%s: ", rdma_last.devices);
	if (d0 && soft_kind(&d0->ib)) {
		/* rxe has no fw_ver in sysfs: the verbs probe's answer (0.0.0) is the truth. */
		const struct probe_job *j = d0->job >= 0 ? &jobs[d0->job] : NULL;
		const char *fw = d0->ib.fw_ver[0] ? d0->ib.fw_ver :
				 j && j->have_result && j->res.fw_ver[0] ? j->res.fw_ver : "?";

		sb_printf(&sum, "%s on %s (fw %s, not an HCA), ", soft_kind(&d0->ib), d0->ib.parent, fw);
	}
	sb_printf(&sum, "%g Gb/s %s, verbs probe ok", rate,
		  d0 && d0->ib.n_ports ? d0->ib.ports[0].link_layer : "?");
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

static int rdma_run(struct ctx *c, struct report *r)
{
	const struct spec_rdma *s = &c->spec->rdma;
	struct dev_info *devs = xcalloc(RDMA_MAX_DEVS, sizeof(*devs));
	struct ib_dev *ib = xcalloc(RDMA_MAX_DEVS, sizeof(*ib));
	struct strlist listed = { 0 };
	struct anomalies a = { NULL, 0, 0, s->required ? ST_FAILED : ST_DEGRADED };
	struct probe_job *jobs = xcalloc(RDMA_MAX_DEVS + 1, sizeof(*jobs));
	size_t n, n_jobs = 0, n_sel = 0;
	bool want_resolve = false, no_helper = false;
	int ret;

	memset(&rdma_last, 0, sizeof(rdma_last));
	c->out->rdma = &rdma_last;
	memset(&job_limit, 0, sizeof(job_limit));
	job_limit.pam_soft = job_limit.svc_soft = MEMLOCK_UNSET;
	if (c->spec->memlock.present)
		memlock_job_limit(c, memlock_job_user(c), &job_limit);
	n = ib_read_devices(c, ib, RDMA_MAX_DEVS);
	for (size_t i = 0; i < n; i++) {
		devs[i].ib = ib[i];
		devs[i].job = -1;
	}
	free(ib);
	if (verbs_list(c, r, &listed) == -ENOENT) {
		char *path = proc_helper_path(RDMA_PROBE_HELPER);

		anomaly(r, &a, "no-helper", "%s is not installed: the verbs probes cannot run; install "
			"the hpcinit-rdma package", path);
		free(path);
		no_helper = true;
		for (size_t i = 0; i < n; i++)
			devs[i].verbs_unknown = true;
	}
	select_devices(r, &a, s, devs, n, &listed);

	for (size_t i = 0; i < n; i++) {
		struct dev_info *d = &devs[i];

		if (!d->selected)
			continue;
		n_sel++;
		check_inventory(c, r, &a, d);
		if (d->listed && d->ib.uverbs[0]) {
			struct probe_job *j = &jobs[n_jobs];

			j->what = d->ib.name;
			ret = probe_job_start(c, j, s->reg_mr_bytes, (unsigned)s->open_timeout_ms, job_memlock(c));
			if (ret < 0)
				anomaly(r, &a, "probe-failed", "%s: cannot start the probe: %s", d->ib.name,
					strerror(-ret));
			else
				d->job = (int)n_jobs++;
		}
	}
	if (s->ipoib && !no_helper) {
		check_ipoib(c, r, &a, &jobs[n_jobs], &want_resolve);
		if (want_resolve && probe_job_start(c, &jobs[n_jobs], 0, (unsigned)s->open_timeout_ms, job_memlock(c)) == 0)
			n_jobs++;
	}
	if (!no_helper)
		check_kvp(c, r, &a);
	if (n_jobs)
		probe_jobs_wait(c, jobs, n_jobs, s->open_timeout_ms);
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
			 devs[i].ib.name);
		for (unsigned k = 0; k < devs[i].ib.n_ports; k++)
			if (devs[i].ib.ports[k].state == 4 && (first || devs[i].ib.ports[k].rate_gbps < rate)) {
				rate = devs[i].ib.ports[k].rate_gbps;
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
		report_ok(r, s, devs, n, jobs, n_jobs, rate);
	}
	free(a.first);
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
