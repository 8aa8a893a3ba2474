/* SPDX-License-Identifier: MIT */
/*
 * The NVIDIA management library, where the node has it (see nvml.h).
 *
 * The library is loaded with dlopen in a forked child (proc_start_fn), never
 * in the agent itself: its code, its threads and a driver call that never
 * returns stay in the child, which the engine ends at the deadline (or
 * leaves behind, recorded under the key "gpu-nvml", when it sleeps in the
 * kernel).  The child writes one line before each call ("call NAME INDEX")
 * and one after it with what it returned, so when the deadline comes the
 * last call line without its answer names what hung.  The answer is parsed
 * and judged here, in the agent: the library's strings are sanitized in the
 * child and escaped again before they reach a report.
 *
 * The ABI is NVIDIA's nvml.h: the few types and functions used are declared
 * below with their exact names and the versions (_v2, _v3) the header maps
 * the plain names to.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/nvml.h"

#include "escape.h"
#include "gpu/gpu.h"
#include "hpcinit.h"
#include "number.h"
#include "proc.h"
#include "util.h"

/* ---- NVIDIA's ABI (nvml.h), the part used --------------------------------- */

typedef int nvmlReturn_t;                       /* enum nvmlReturn_enum */
typedef int nvmlEnableState_t;                  /* NVML_FEATURE_DISABLED 0, _ENABLED 1 */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1    /* nvmlMemoryErrorType_t */
#define NVML_VOLATILE_ECC 0                     /* nvmlEccCounterType_t: since the driver loaded */
#define NVML_AGGREGATE_ECC 1                    /* the board's lifetime */
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1

typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];   /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];         /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000001:00:00.0" */
} nvmlPciInfo_t;

struct nvml_fns {
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*driver_version)(char *, unsigned int);
	nvmlReturn_t (*persistence)(nvmlDevice_t, nvmlEnableState_t *);
	nvmlReturn_t (*ecc_mode)(nvmlDevice_t, nvmlEnableState_t *, nvmlEnableState_t *);
	nvmlReturn_t (*total_ecc)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
	nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned int *, unsigned long long *);
	nvmlReturn_t (*retired_pending)(nvmlDevice_t, nvmlEnableState_t *);
};

#define NVML_REQUIRED 6         /* the first six: without them nothing can be read */
static const struct { const char *name; size_t off; } nvml_syms[] = {
	{ "nvmlInit_v2", offsetof(struct nvml_fns, init) },
	{ "nvmlShutdown", offsetof(struct nvml_fns, shutdown) },
	{ "nvmlErrorString", offsetof(struct nvml_fns, error_string) },
	{ "nvmlDeviceGetCount_v2", offsetof(struct nvml_fns, count) },
	{ "nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml_fns, by_index) },
	{ "nvmlDeviceGetPciInfo_v3", offsetof(struct nvml_fns, pci_info) },
	{ "nvmlSystemGetDriverVersion", offsetof(struct nvml_fns, driver_version) },
	{ "nvmlDeviceGetPersistenceMode", offsetof(struct nvml_fns, persistence) },
	{ "nvmlDeviceGetEccMode", offsetof(struct nvml_fns, ecc_mode) },
	{ "nvmlDeviceGetTotalEccErrors", offsetof(struct nvml_fns, total_ecc) },
	{ "nvmlDeviceGetRemappedRows", offsetof(struct nvml_fns, remapped_rows) },
	{ "nvmlDeviceGetRetiredPages", offsetof(struct nvml_fns, retired_pages) },
	{ "nvmlDeviceGetRetiredPagesPendingStatus", offsetof(struct nvml_fns, retired_pending) },
};

/* What is read of each GPU: the answer's line "dev INDEX ITEM RET V0 V1 V2 V3". */
enum nv_item { NV_PERSIST, NV_ECC, NV_UNCVOL, NV_UNCAGG, NV_REMAP, NV_SBE, NV_DBE, NV_PAGESPEND, NV_N };
static const char *const nv_item_name[NV_N] = {
	"persist", "ecc", "uncvol", "uncagg", "remap", "sbe", "dbe", "pagespend",
};
static const char *const nv_item_call[NV_N] = {
	"nvmlDeviceGetPersistenceMode", "nvmlDeviceGetEccMode", "nvmlDeviceGetTotalEccErrors",
	"nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetRetiredPages",
	"nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPagesPendingStatus",
};

/*
 * Thresholds (docs/gpu.md), Azure's node health checks' (azurehpc-health-checks
 * customTests/azure_gpu_ecc.nhc): more rows remapped for uncorrectable errors
 * than this fails the GPU; this many retired pages with one more pending is a
 * full retirement table.
 */
#define NVML_REMAP_UNC_MAX 512
#define NVML_RETIRED_PAGES_FULL 62

/* ---- the child: load, call, write the answer --------------------------------- */

static void put(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(int fd, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = write(fd, line + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		off += (int)w;
	}
}

/* A string of the library's in safe characters: one word, or (spaces) the rest of a line. */
static void word(char *dst, size_t n, const char *s, bool spaces)
{
	size_t i = 0;

	for (; s && s[i] && i + 1 < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		dst[i] = ((ch > ' ' || (spaces && ch == ' ')) && ch < 0x7f && ch != '\\') ? (char)ch : '_';
	}
	dst[i] = '\0';
	if (i == 0 && n > 1)
		snprintf(dst, n, "-");
}

/* Each error code's text once, before the first line that carries it. */
static void put_ret(int fd, const struct nvml_fns *f, nvmlReturn_t ret)
{
	static nvmlReturn_t said[32];
	static size_t n_said;
	char w[96];

	if (ret == NVML_SUCCESS)
		return;
	for (size_t i = 0; i < n_said; i++)
		if (said[i] == ret)
			return;
	if (n_said < 32)
		said[n_said++] = ret;
	word(w, sizeof(w), f->error_string(ret), true);
	put(fd, "estr %d %s", ret, w);
}

static void put_dev(int fd, const struct nvml_fns *f, unsigned i, enum nv_item it, nvmlReturn_t ret,
		    unsigned long long v0, unsigned long long v1, unsigned long long v2, unsigned long long v3)
{
	put_ret(fd, f, ret);
	put(fd, "dev %u %s %d %llu %llu %llu %llu", i, nv_item_name[it], ret, v0, v1, v2, v3);
}

static void child_pages(int fd, const struct nvml_fns *f, nvmlDevice_t d, unsigned i)
{
	static const int cause[2] = {
		NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
	};
	nvmlEnableState_t pend = 0;
	nvmlReturn_t ret;

	if (!f->retired_pages || !f->retired_pending)
		return;
	for (int k = 0; k < 2; k++) {
		unsigned int count = 0;

		put(fd, "call nvmlDeviceGetRetiredPages %u", i);
		ret = f->retired_pages(d, cause[k], &count, NULL);     /* count 0: how many, no addresses */
		if (ret == NVML_ERROR_INSUFFICIENT_SIZE)
			ret = NVML_SUCCESS;
		put_dev(fd, f, i, k ? NV_DBE : NV_SBE, ret, count, 0, 0, 0);
	}
	put(fd, "call nvmlDeviceGetRetiredPagesPendingStatus %u", i);
	ret = f->retired_pending(d, &pend);
	put_dev(fd, f, i, NV_PAGESPEND, ret, (unsigned)pend, 0, 0, 0);
}

static void child_device(int fd, const struct nvml_fns *f, unsigned i)
{
	nvmlDevice_t d = NULL;
	nvmlPciInfo_t pci;
	nvmlEnableState_t a = 0, b = 0;
	unsigned int corr = 0, unc = 0, pend = 0, fail = 0;
	unsigned long long n = 0;
	nvmlReturn_t ret;
	char w[40];

	put(fd, "call nvmlDeviceGetHandleByIndex_v2 %u", i);
	ret = f->by_index(i, &d);
	put_ret(fd, f, ret);
	put(fd, "handle %u %d", i, ret);
	if (ret != NVML_SUCCESS)
		return;
	memset(&pci, 0, sizeof(pci));
	put(fd, "call nvmlDeviceGetPciInfo_v3 %u", i);
	ret = f->pci_info(d, &pci);
	pci.busId[sizeof(pci.busId) - 1] = '\0';
	word(w, sizeof(w), pci.busId, false);
	put_ret(fd, f, ret);
	put(fd, "busid %u %d %s", i, ret, w);
	if (ret != NVML_SUCCESS)
		return;
	if (f->persistence) {
		put(fd, "call nvmlDeviceGetPersistenceMode %u", i);
		ret = f->persistence(d, &a);
		put_dev(fd, f, i, NV_PERSIST, ret, (unsigned)a, 0, 0, 0);
	}
	if (f->ecc_mode) {
		put(fd, "call nvmlDeviceGetEccMode %u", i);
		ret = f->ecc_mode(d, &a, &b);
		put_dev(fd, f, i, NV_ECC, ret, (unsigned)a, (unsigned)b, 0, 0);
	}
	if (f->total_ecc) {
		put(fd, "call nvmlDeviceGetTotalEccErrors %u", i);
		ret = f->total_ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n);
		put_dev(fd, f, i, NV_UNCVOL, ret, n, 0, 0, 0);
		n = 0;
		put(fd, "call nvmlDeviceGetTotalEccErrors %u", i);
		ret = f->total_ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &n);
		put_dev(fd, f, i, NV_UNCAGG, ret, n, 0, 0, 0);
	}
	ret = NVML_ERROR_NOT_SUPPORTED;
	if (f->remapped_rows) {
		put(fd, "call nvmlDeviceGetRemappedRows %u", i);
		ret = f->remapped_rows(d, &corr, &unc, &pend, &fail);
		put_dev(fd, f, i, NV_REMAP, ret, corr, unc, pend, fail);
	}
	if (ret == NVML_ERROR_NOT_SUPPORTED)    /* before A100: pages are retired, rows not remapped */
		child_pages(fd, f, d, i);
}

/* The child's body: its only descriptor is fd, the answer's pipe. */
static void nvml_child(void *arg, int fd)
{
	const char *path = arg;
	struct nvml_fns f;
	unsigned int count = 0;
	char version[96] = "", w[200];
	nvmlReturn_t ret;
	void *h;

	memset(&f, 0, sizeof(f));
	put(fd, "call dlopen -1");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		word(w, sizeof(w), dlerror(), true);
		put(fd, "nolib %s", w);
		return;
	}
	for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
		void *p = dlsym(h, nvml_syms[i].name);

		if (!p && i < NVML_REQUIRED) {
			put(fd, "nosym %s", nvml_syms[i].name);
			dlclose(h);
			return;
		}
		memcpy((char *)&f + nvml_syms[i].off, &p, sizeof(p));
	}
	put(fd, "call nvmlInit_v2 -1");
	ret = f.init();
	put_ret(fd, &f, ret);
	put(fd, "init %d", ret);
	if (ret == NVML_SUCCESS) {
		if (f.driver_version) {
			put(fd, "call nvmlSystemGetDriverVersion -1");
			ret = f.driver_version(version, sizeof(version));
			version[sizeof(version) - 1] = '\0';
			word(w, sizeof(w), ret == NVML_SUCCESS ? version : "-", false);
			put(fd, "driver %s", w);
		}
		put(fd, "call nvmlDeviceGetCount_v2 -1");
		ret = f.count(&count);
		put_ret(fd, &f, ret);
		put(fd, "count %d %u", ret, count);
		for (unsigned i = 0; ret == NVML_SUCCESS && i < count && i < GPU_MAX; i++)
			child_device(fd, &f, i);
		put(fd, "call nvmlShutdown -1");
		f.shutdown();
	}
	put(fd, "done");
	dlclose(h);
}

/* ---- the answer, parsed in the agent ----------------------------------------- */

struct nvml_dev {
	int handle_ret;                 /* -1 until its line came */
	int pci_ret;
	char busid[40];
	unsigned long long pci[4];      /* domain, bus, device, function */
	bool have_pci;
	bool seen[NV_N];
	int ret[NV_N];
	unsigned long long v[NV_N][4];
};

struct nvml_answer {
	char nolib[200], nosym[64];
	bool init_seen, done;
	int init_ret;
	char driver[96];
	bool count_seen;
	int count_ret;
	unsigned count;
	char call[64];                  /* the call under way: its answer has not come */
	long long call_idx;
	struct { int ret; char text[96]; } estr[16];
	size_t n_estr;
	struct nvml_dev dev[GPU_MAX];
};

/* "0001:00:00.0", "00000001:00:00.0": domain, bus, device, function. */
static bool pci_parse(const char *s, unsigned long long v[4])
{
	static const unsigned long long max[4] = { 0xffffffffULL, 0xff, 0x1f, 0x7 };
	static const char sep[4] = { ':', ':', '.', '\0' };
	const char *end;

	for (int k = 0; k < 4; k++) {
		if (!num_ull_prefix(s, 16, max[k], &v[k], &end) || end == s || *end != sep[k])
			return false;
		s = end + (k < 3);
	}
	return true;
}

static const char *ret_text(const struct nvml_answer *a, int ret)
{
	for (size_t i = 0; i < a->n_estr; i++)
		if (a->estr[i].ret == ret)
			return a->estr[i].text;
	return "an NVML error";
}

static bool tok(char **p, char *out, size_t n)
{
	char *s = *p, *e;

	while (*s == ' ')
		s++;
	if (!*s)
		return false;
	e = strchr(s, ' ');
	if (!e)
		e = s + strlen(s);
	snprintf(out, n, "%.*s", (int)(e - s), s);
	*p = e;
	return true;
}

static bool tok_ll(char **p, long long min, long long max, long long *v)
{
	char t[32];

	return tok(p, t, sizeof(t)) && num_ll(t, min, max, v);
}

static bool tok_ull(char **p, unsigned long long *v)
{
	char t[32];

	return tok(p, t, sizeof(t)) && num_ull(t, 10, ULLONG_MAX, v);
}

/* One "dev INDEX ITEM RET V0 V1 V2 V3" line (after "dev"). */
static void parse_dev(struct nvml_answer *a, char *p)
{
	long long i, ret;
	char item[16];
	int it = -1;
	unsigned long long v[4];

	if (!tok_ll(&p, 0, GPU_MAX - 1, &i) || !tok(&p, item, sizeof(item)) || !tok_ll(&p, -1, 1000000, &ret))
		return;
	for (int k = 0; k < NV_N; k++)
		if (strcmp(item, nv_item_name[k]) == 0)
			it = k;
	for (int k = 0; k < 4; k++)
		if (!tok_ull(&p, &v[k]))
			return;
	if (it < 0)
		return;
	a->dev[i].seen[it] = true;
	a->dev[i].ret[it] = (int)ret;
	memcpy(a->dev[i].v[it], v, sizeof(v));
}

static void parse_line(struct nvml_answer *a, char *line)
{
	char key[16], w[200];
	long long i, ret, n;
	char *p = line;

	if (!tok(&p, key, sizeof(key)))
		return;
	if (strcmp(key, "call") == 0) {
		if (tok(&p, w, sizeof(w)) && tok_ll(&p, -1, GPU_MAX, &i)) {
			esc_copy(a->call, sizeof(a->call), w, false);
			a->call_idx = i;
		}
		return;
	}
	a->call[0] = '\0';              /* every other line is an answer */
	if (strcmp(key, "nolib") == 0)
		esc_copy(a->nolib, sizeof(a->nolib), *p ? p + 1 : "-", false);
	else if (strcmp(key, "nosym") == 0 && tok(&p, w, sizeof(w)))
		esc_copy(a->nosym, sizeof(a->nosym), w, false);
	else if (strcmp(key, "estr") == 0 && tok_ll(&p, -1, 1000000, &ret) && *p == ' ') {
		if (a->n_estr < 16) {
			a->estr[a->n_estr].ret = (int)ret;
			esc_copy(a->estr[a->n_estr++].text, sizeof(a->estr[0].text), p + 1, false);
		}
	} else if (strcmp(key, "init") == 0 && tok_ll(&p, -1, 1000000, &ret)) {
		a->init_seen = true;
		a->init_ret = (int)ret;
	} else if (strcmp(key, "driver") == 0 && tok(&p, w, sizeof(w)))
		esc_copy(a->driver, sizeof(a->driver), w, false);
	else if (strcmp(key, "count") == 0 && tok_ll(&p, -1, 1000000, &ret) && tok_ll(&p, 0, 1000000, &n)) {
		a->count_seen = true;
		a->count_ret = (int)ret;
		a->count = (unsigned)(n > GPU_MAX ? GPU_MAX : n);
	} else if (strcmp(key, "handle") == 0 && tok_ll(&p, 0, GPU_MAX - 1, &i) && tok_ll(&p, -1, 1000000, &ret))
		a->dev[i].handle_ret = (int)ret;
	else if (strcmp(key, "busid") == 0 && tok_ll(&p, 0, GPU_MAX - 1, &i) && tok_ll(&p, -1, 1000000, &ret) &&
		 tok(&p, w, sizeof(w))) {
		a->dev[i].pci_ret = (int)ret;
		esc_copy(a->dev[i].busid, sizeof(a->dev[i].busid), w, false);
		a->dev[i].have_pci = ret == 0 && pci_parse(w, a->dev[i].pci);
	} else if (strcmp(key, "dev") == 0)
		parse_dev(a, p);
	else if (strcmp(key, "done") == 0)
		a->done = true;
}

static void answer_parse(struct nvml_answer *a, const char *text)
{
	memset(a, 0, sizeof(*a));
	for (size_t i = 0; i < GPU_MAX; i++)
		a->dev[i].handle_ret = a->dev[i].pci_ret = -1;
	for (const char *s = text; s && *s;) {
		const char *nl = strchr(s, '\n');
		char line[320];

		if (!nl)
			break;          /* a line cut short by the deadline */
		snprintf(line, sizeof(line), "%.*s", (int)(nl - s), s);
		parse_line(a, line);
		s = nl + 1;
	}
}

/* ---- judging one GPU --------------------------------------------------------- */

static bool ret_lost(int ret)
{
	return ret == NVML_ERROR_GPU_IS_LOST || ret == NVML_ERROR_RESET_REQUIRED;
}

/* A GPU the driver lost, or one whose every reading failed: the findings about it. */
static bool judge_lost(struct report *r, const char *pci, const struct nvml_answer *a, const struct nvml_dev *d)
{
	for (int it = 0; it < NV_N; it++)
		if (d->seen[it] && ret_lost(d->ret[it])) {
			report_finding(r, ST_FAILED, "gpu.nvml.lost", "GPU %s: %s answered %s: the GPU has fallen "
				       "off the bus or needs a reset (nvidia-smi -q; reset it or replace the VM)",
				       pci, nv_item_call[it], ret_text(a, d->ret[it]));
			return true;
		}
	return false;
}

static void judge_memory(struct report *r, const char *pci, const struct nvml_dev *d, struct strbuf *line)
{
	const unsigned long long *v;

	if (d->seen[NV_UNCVOL] && d->ret[NV_UNCVOL] == 0) {
		sb_printf(line, ", uncorrectable ECC errors %llu since the driver loaded", d->v[NV_UNCVOL][0]);
		if (d->v[NV_UNCVOL][0] > 0)
			report_finding(r, ST_FAILED, "gpu.ecc.uncorrectable", "GPU %s: %llu uncorrectable ECC "
				       "errors since the driver loaded: its memory returned wrong data (nvidia-smi -q -d "
				       "ECC; reset the GPU, and replace it when they come back)", pci, d->v[NV_UNCVOL][0]);
	}
	if (d->seen[NV_UNCAGG] && d->ret[NV_UNCAGG] == 0)
		sb_printf(line, ", %llu in its lifetime", d->v[NV_UNCAGG][0]);
	v = d->v[NV_REMAP];
	if (d->seen[NV_REMAP] && d->ret[NV_REMAP] == 0) {
		sb_printf(line, ", rows remapped %llu (correctable) %llu (uncorrectable)%s%s", v[0], v[1],
			  v[2] ? ", a remap pending" : "", v[3] ? ", a remap FAILED" : "");
		if (v[3])
			report_finding(r, ST_FAILED, "gpu.rowremap.failed", "GPU %s: a row remap failed: its memory "
				       "has no spare row left for a bad one (replace the GPU)", pci);
		else if (v[1] > NVML_REMAP_UNC_MAX)
			report_finding(r, ST_FAILED, "gpu.rowremap.many", "GPU %s: %llu rows remapped for "
				       "uncorrectable errors (more than %u): its memory is failing (replace the GPU)",
				       pci, v[1], NVML_REMAP_UNC_MAX);
		if (!v[3] && v[2])
			report_finding(r, ST_DEGRADED, "gpu.rowremap.pending", "GPU %s: a row remap is pending: "
				       "it takes effect when the GPU is reset (drain it, then nvidia-smi -r or reboot)", pci);
	}
	if (d->seen[NV_SBE] && d->seen[NV_DBE] && d->ret[NV_SBE] == 0 && d->ret[NV_DBE] == 0) {
		unsigned long long n = d->v[NV_SBE][0] + d->v[NV_DBE][0];

		sb_printf(line, ", pages retired %llu (double-bit %llu)", n, d->v[NV_DBE][0]);
		if (n >= NVML_RETIRED_PAGES_FULL && d->seen[NV_PAGESPEND] && d->ret[NV_PAGESPEND] == 0 &&
		    d->v[NV_PAGESPEND][0]) {
			sb_append(line, ", a page retirement pending");
			report_finding(r, ST_FAILED, "gpu.pages.full", "GPU %s: %llu pages retired and one more "
				       "pending: its retirement table is full (replace the GPU)", pci, n);
			return;
		}
	}
	if (d->seen[NV_PAGESPEND] && d->ret[NV_PAGESPEND] == 0 && d->v[NV_PAGESPEND][0]) {
		sb_append(line, ", a page retirement pending");
		report_finding(r, ST_DEGRADED, "gpu.pages.pending", "GPU %s: a page retirement is pending: it "
			       "takes effect when the GPU is reset (drain it, then nvidia-smi -r or reboot)", pci);
	}
}

/* One GPU: its line of readings, then the findings they make (kept in f until the line is out). */
static void judge_gpu(struct report *out, const char *pci, unsigned idx, const struct nvml_answer *a,
		      const struct nvml_dev *d)
{
	struct strbuf line = STRBUF_INIT;
	struct report f, *r = &f;

	if (judge_lost(out, pci, a, d))
		return;
	report_init(&f);
	sb_printf(&line, "GPU %s (NVML %u):", pci, idx);
	if (d->seen[NV_PERSIST] && d->ret[NV_PERSIST] == 0) {
		sb_printf(&line, " persistence %s", d->v[NV_PERSIST][0] ? "on" : "off");
		if (!d->v[NV_PERSIST][0])
			report_finding(r, ST_DEGRADED, "gpu.persistence.off", "GPU %s: persistence mode is off: the "
				       "driver tears the GPU down when no program holds it, so every job waits for it "
				       "to come up again (nvidia-persistenced, or nvidia-smi -pm 1)", pci);
	}
	if (d->seen[NV_ECC] && d->ret[NV_ECC] == 0) {
		sb_printf(&line, ", ECC %s", d->v[NV_ECC][0] ? "on" : "off");
		if (d->v[NV_ECC][1] != d->v[NV_ECC][0])
			sb_printf(&line, " (%s at the next reset)", d->v[NV_ECC][1] ? "on" : "off");
		if (!d->v[NV_ECC][0])
			report_finding(r, ST_DEGRADED, "gpu.ecc.off", "GPU %s: ECC is off: its memory's errors go "
				       "unseen (nvidia-smi -e 1, then reset the GPU)", pci);
	}
	judge_memory(r, pci, d, &line);
	for (int it = 0; it < NV_N; it++)
		if (d->seen[it] && d->ret[it] != 0)
			sb_printf(&line, "; %s %s: %s", nv_item_call[it], nv_item_name[it], ret_text(a, d->ret[it]));
	report_detail(out, "%s", line.buf ? line.buf : "");
	report_take_findings(out, &f);
	report_free(&f);
	sb_free(&line);
}

/* ---- which library, and the entry point -------------------------------------- */

/*
 * May the override be loaded into this (root) process?  Its real path, the
 * file and every directory above it, must be owned by root or by this
 * process's user and writable by no one else (a root-owned sticky directory
 * such as /tmp excepted): nobody else can have put code there.  out is that
 * real path, the one loaded: a link on the way cannot be changed after.
 */
static bool path_trusted(const char *path, char *out, size_t n, char *why, size_t wn)
{
	char real[PATH_MAX];
	uid_t me = geteuid();

	if (path[0] != '/') {
		snprintf(why, wn, "%s=%s is not an absolute path", NVML_LIB_ENV, path);
		return false;
	}
	if (!realpath(path, real)) {
		snprintf(why, wn, "%s=%s: %s", NVML_LIB_ENV, path, strerror(errno));
		return false;
	}
	snprintf(out, n, "%s", real);
	for (size_t len = strlen(real), top = 1; len > 0; top = 0) {
		struct stat st;

		if (stat(real, &st) != 0 || (top && !S_ISREG(st.st_mode)) ||
		    (st.st_uid != 0 && st.st_uid != me) ||
		    ((st.st_mode & 022) && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0))) {
			snprintf(why, wn, "%s=%s refused: %s is %s", NVML_LIB_ENV, path, real,
				 top && !S_ISREG(st.st_mode) ? "not a regular file"
				 : "owned or writable by another user than root or this one");
			return false;
		}
		if (len == 1)
			break;
		while (len > 1 && real[len - 1] != '/')
			len--;
		if (len > 1)
			len--;          /* the directory above, without its trailing slash */
		real[len] = '\0';
	}
	return true;
}

static bool lib_path(const struct ctx *c, char *out, size_t n, char *why, size_t wn)
{
	const char *env = getenv(NVML_LIB_ENV);

	if (env && *env)
		return path_trusted(env, out, n, why, wn);
	if (!ctx_real_root(c)) {
		snprintf(why, wn, "under a fake root this machine's %s is not the root's (%s names a stand-in)",
			 NVML_LIB_DEFAULT, NVML_LIB_ENV);
		return false;
	}
	snprintf(out, n, "%s", NVML_LIB_DEFAULT);
	return true;
}

/* The reader's end: nothing to read, a deadline passed, a crash, a failed start of NVML. */
static bool judge_reader(struct report *r, const struct proc_child *ch, const struct nvml_answer *a,
			 const char *path, unsigned timeout_ms)
{
	char at[96] = "";

	if (a->call[0])
		snprintf(at, sizeof(at), a->call_idx >= 0 ? "%s (NVML GPU %lld)" : "%s", a->call, a->call_idx);
	if (ch->timed_out || ch->abandoned) {
		report_finding(r, ST_FAILED, "gpu.nvml.timeout", "NVML did not answer within %u ms: %s %s "
			       "(a hung driver: nvidia-smi would hang too; see the kernel log for Xid errors)",
			       timeout_ms, at[0] ? at : "the reader", ch->abandoned ? "is stuck in the kernel, left "
			       "behind" : "was still running, ended");
		return true;
	}
	if (a->nolib[0]) {
		report_detail(r, "NVML: %s not loaded (%s): GPU health from the driver's library not read",
			      path, a->nolib);
		return true;
	}
	if (a->nosym[0]) {
		report_detail(r, "NVML: %s lacks %s (a driver older than the calls read here): not read",
			      path, a->nosym);
		return true;
	}
	if (!a->done && (a->init_ret == 0 || !a->init_seen)) {
		report_finding(r, ST_DEGRADED, "gpu.nvml.crashed", "NVML's reader ended without an answer "
			       "(%s %d)%s%s", WIFSIGNALED(ch->status) ? "signal" : "exit status",
			       WIFSIGNALED(ch->status) ? WTERMSIG(ch->status) : WEXITSTATUS(ch->status),
			       at[0] ? " in " : "", at);
		return true;
	}
	if (a->init_seen && a->init_ret != 0) {
		report_finding(r, ST_FAILED, "gpu.nvml.init", "nvmlInit_v2 failed: %s (%d): programs that use "
			       "the GPUs fail the same way (a driver and library of two versions? nvidia-smi says)",
			       ret_text(a, a->init_ret), a->init_ret);
		return true;
	}
	if (!a->count_seen || a->count_ret != 0) {
		report_finding(r, ST_FAILED, "gpu.nvml.init", "nvmlDeviceGetCount_v2 failed: %s (%d)",
			       ret_text(a, a->count_ret), a->count_ret);
		return true;
	}
	return false;
}

static void judge_match(struct report *r, const struct gpu_inventory *inv, const struct nvml_answer *a)
{
	bool used[GPU_MAX] = { false };

	for (size_t g = 0; g < inv->n && g < GPU_MAX; g++) {
		const struct gpu_dev *gd = &inv->gpu[g];
		unsigned long long want[4];
		size_t i = a->count;

		if (pci_parse(gd->pci, want))
			for (i = 0; i < a->count; i++)
				if (a->dev[i].have_pci && memcmp(a->dev[i].pci, want, sizeof(want)) == 0)
					break;
		if (i < a->count) {
			used[i] = true;
			judge_gpu(r, gd->pci, (unsigned)i, a, &a->dev[i]);
		} else if (gd->bound)
			report_finding(r, ST_DEGRADED, "gpu.nvml.unmatched", "GPU %s: bound to the driver, but none "
				       "of the %u GPUs NVML lists is at its PCI address", gd->pci, a->count);
		else
			report_detail(r, "GPU %s: not bound to the driver, not read with NVML", gd->pci);
	}
	for (unsigned i = 0; i < a->count; i++) {
		const struct nvml_dev *d = &a->dev[i];

		if (used[i])
			continue;
		if (ret_lost(d->handle_ret) || ret_lost(d->pci_ret))
			report_finding(r, ST_FAILED, "gpu.nvml.lost", "NVML GPU %u: %s answered %s: a GPU has fallen "
				       "off the bus or needs a reset", i, ret_lost(d->handle_ret) ?
				       "nvmlDeviceGetHandleByIndex_v2" : "nvmlDeviceGetPciInfo_v3",
				       ret_text(a, ret_lost(d->handle_ret) ? d->handle_ret : d->pci_ret));
		else
			report_detail(r, "NVML GPU %u (%s): not among the GPUs on the PCI bus: not judged", i,
				      d->busid[0] ? d->busid : (d->handle_ret ? ret_text(a, d->handle_ret) : "-"));
	}
}

int gpu_nvml_check(struct ctx *c, const struct gpu_inventory *inv, struct report *r)
{
	const struct proc_limits lim0 = { .term_grace_ms = 200, .reap_ms = 500, .eof_ends = true };
	struct proc_limits lim = lim0;
	struct proc_child ch = { .stuck_key = "gpu-nvml", .stuck_what = "the NVIDIA management library" };
	char path[PATH_MAX], why[PATH_MAX + 128];
	struct nvml_answer *a;
	uint64_t now = now_ms(), t0;
	int ret;

	if (inv->n == 0) {
		report_detail(r, "NVML: no GPU on the PCI bus, not read");
		return 0;
	}
	if (!lib_path(c, path, sizeof(path), why, sizeof(why))) {
		report_detail(r, "NVML: not read: %s", why);
		return 0;
	}
	lim.timeout_ms = NVML_DEADLINE_MS;
	if (c->deadline_ms && c->deadline_ms < now + NVML_DEADLINE_MS + NVML_RESERVE_MS) {
		if (c->deadline_ms < now + 2 * NVML_RESERVE_MS) {
			report_detail(r, "NVML: not read: the step's deadline leaves too little time");
			return 0;
		}
		lim.timeout_ms = (unsigned)(c->deadline_ms - now - NVML_RESERVE_MS);
	}
	t0 = now_ms();
	ret = proc_start_fn(&ch, nvml_child, path, 0);
	if (ret == -EBUSY) {
		struct strbuf sb = STRBUF_INIT;

		proc_stuck_text(&ch.blocked, &sb);
		report_finding(r, ST_FAILED, "gpu.nvml.timeout", "NVML not read: an earlier reader is %s",
			       sb.buf ? sb.buf : "still blocked");
		sb_free(&sb);
		proc_child_free(&ch);
		return 0;
	}
	if (ret < 0) {
		report_finding(r, ST_DEGRADED, "gpu.nvml.reader", "NVML not read: cannot start its reader: %s",
			       strerror(-ret));
		proc_child_free(&ch);
		return ret;
	}
	proc_wait(&ch, 1, &lim);
	a = calloc(1, sizeof(*a));
	if (!a)
		abort();
	answer_parse(a, ch.out.buf);
	if (!judge_reader(r, &ch, a, path, lim.timeout_ms)) {
		report_detail(r, "NVML: %s, driver %s, %u GPUs, read in %llu ms%s", path, a->driver[0] ? a->driver : "?",
			      a->count, (unsigned long long)(now_ms() - t0),
			      ch.exited && ch.status != 0 ? " (the reader exited with an error)" : "");
		judge_match(r, inv, a);
	}
	free(a);
	proc_child_free(&ch);
	return 0;
}
