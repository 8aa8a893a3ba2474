/* SPDX-License-Identifier: MIT */
/*
 * A STAND-IN for NVIDIA's management library (libnvidia-ml.so.1), for the
 * tests of lib/gpu/nvml.c: this machine has no GPU and no driver.  Built by
 * `make check` as tests/lib/nvml-standin.so (and nvml-standin-old.so,
 * without nvmlDeviceGetPciInfo_v3, a library older than the calls read),
 * loaded through HPCINIT_NVML_LIB.  It exports the functions lib/gpu/nvml.c
 * calls, with NVIDIA's names and signatures (nvml.h), and answers what the
 * file named by $HPCINIT_NVML_STANDIN says, one line each:
 *
 *   init RET                 nvmlInit_v2 returns RET (default 0)
 *   count RET                nvmlDeviceGetCount_v2 returns RET (default 0)
 *   sleep FUNCTION MS        FUNCTION sleeps MS ms before it answers (a hung driver)
 *   crash FUNCTION           FUNCTION dies of SIGSEGV
 *   driver VERSION           nvmlSystemGetDriverVersion (default 550.54.15)
 *   gpu BUSID [persist=0|1] [ecc=CUR,PEND] [uncvol=N] [uncagg=N]
 *       [remap=CORR,UNC,PENDING,FAILURE | remap=unsupported] [pages=SBE,DBE,PENDING]
 *       [lost=FUNCTION]      one GPU, in NVML's index order; lost: FUNCTION
 *                            answers NVML_ERROR_GPU_IS_LOST for it
 *
 * Defaults per GPU: persistence on, ECC on, no errors, rows remapped 0 (an
 * A100/H100); remap=unsupported makes it an older GPU that retires pages.
 * Without $HPCINIT_NVML_STANDIN, nvmlInit_v2 answers DRIVER_NOT_LOADED.
 * Nothing is allocated: a run under valgrind or ASan stays clean.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef int nvmlEnableState_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
#ifndef STANDIN_OLD
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
#endif
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
					 unsigned long long *eccCounts);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
				       unsigned int *isPending, unsigned int *failureOccurred);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int *pageCount,
				       unsigned long long *addresses);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending);

#define MAXGPU 16

struct sgpu {
	char busid[32];
	int persist, ecc, ecc_pend;
	unsigned long long uncvol, uncagg;
	int remap_unsupported;
	unsigned remap[4], pages[3];
	char lost[64];
};

static struct {
	int loaded, init_ret, count_ret;
	char sleep_fn[64], crash_fn[64];
	long sleep_ms;
	char driver[64];
	struct sgpu gpu[MAXGPU];
	unsigned n;
} S;

static void gpu_option(struct sgpu *g, const char *o)
{
	if (sscanf(o, "persist=%d", &g->persist) == 1)
		return;
	if (sscanf(o, "ecc=%d,%d", &g->ecc, &g->ecc_pend) == 2)
		return;
	if (sscanf(o, "uncvol=%llu", &g->uncvol) == 1 || sscanf(o, "uncagg=%llu", &g->uncagg) == 1)
		return;
	if (strcmp(o, "remap=unsupported") == 0) {
		g->remap_unsupported = 1;
		return;
	}
	if (sscanf(o, "remap=%u,%u,%u,%u", &g->remap[0], &g->remap[1], &g->remap[2], &g->remap[3]) == 4)
		return;
	if (sscanf(o, "pages=%u,%u,%u", &g->pages[0], &g->pages[1], &g->pages[2]) == 3)
		return;
	if (sscanf(o, "lost=%63s", g->lost) == 1)
		return;
	fprintf(stderr, "nvml-standin: unknown option %s\n", o);
	abort();
}

static void load(void)
{
	const char *path = getenv("HPCINIT_NVML_STANDIN");
	char line[512];
	FILE *f;

	if (S.loaded)
		return;
	S.loaded = 1;
	snprintf(S.driver, sizeof(S.driver), "550.54.15");
	if (!path || !(f = fopen(path, "re"))) {
		S.init_ret = 9;         /* NVML_ERROR_DRIVER_NOT_LOADED */
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *w = strtok_r(line, " \t\n", &save);

		if (!w || w[0] == '#')
			continue;
		if (strcmp(w, "init") == 0 || strcmp(w, "count") == 0) {
			char *v = strtok_r(NULL, " \t\n", &save);

			*(w[0] == 'i' ? &S.init_ret : &S.count_ret) = v ? atoi(v) : 0;
		} else if (strcmp(w, "sleep") == 0) {
			char *fn = strtok_r(NULL, " \t\n", &save), *ms = strtok_r(NULL, " \t\n", &save);

			snprintf(S.sleep_fn, sizeof(S.sleep_fn), "%s", fn ? fn : "");
			S.sleep_ms = ms ? atol(ms) : 0;
		} else if (strcmp(w, "crash") == 0) {
			char *fn = strtok_r(NULL, " \t\n", &save);

			snprintf(S.crash_fn, sizeof(S.crash_fn), "%s", fn ? fn : "");
		} else if (strcmp(w, "driver") == 0) {
			char *v = strtok_r(NULL, " \t\n", &save);

			snprintf(S.driver, sizeof(S.driver), "%s", v ? v : "");
		} else if (strcmp(w, "gpu") == 0 && S.n < MAXGPU) {
			struct sgpu *g = &S.gpu[S.n++];
			char *o, *id = strtok_r(NULL, " \t\n", &save);

			memset(g, 0, sizeof(*g));
			snprintf(g->busid, sizeof(g->busid), "%s", id ? id : "");
			g->persist = g->ecc = g->ecc_pend = 1;
			while ((o = strtok_r(NULL, " \t\n", &save)))
				gpu_option(g, o);
		}
	}
	fclose(f);
}

/* The test's faults: this call sleeps, or crashes, as the file says. */
static void fault(const char *fn)
{
	if (strcmp(S.sleep_fn, fn) == 0) {
		struct timespec ts = { S.sleep_ms / 1000, (S.sleep_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) != 0)
			;
	}
	if (strcmp(S.crash_fn, fn) == 0)
		raise(SIGSEGV);
}

static struct sgpu *dev(nvmlDevice_t d, const char *fn, nvmlReturn_t *ret)
{
	struct sgpu *g = (struct sgpu *)d;

	fault(fn);
	*ret = strcmp(g->lost, fn) == 0 ? 15 : 0;       /* NVML_ERROR_GPU_IS_LOST */
	return g;
}

nvmlReturn_t nvmlInit_v2(void)
{
	load();
	fault("nvmlInit_v2");
	return S.init_ret;
}

nvmlReturn_t nvmlShutdown(void)
{
	fault("nvmlShutdown");
	return 0;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case 0: return "Success";
	case 3: return "Not Supported";
	case 9: return "Driver Not Loaded";
	case 15: return "GPU is lost";
	case 18: return "Driver/library version mismatch";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	fault("nvmlSystemGetDriverVersion");
	snprintf(version, length, "%s", S.driver);
	return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	fault("nvmlDeviceGetCount_v2");
	*deviceCount = S.n;
	return S.count_ret;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	fault("nvmlDeviceGetHandleByIndex_v2");
	if (index >= S.n)
		return 2;       /* NVML_ERROR_INVALID_ARGUMENT */
	if (strcmp(S.gpu[index].lost, "nvmlDeviceGetHandleByIndex_v2") == 0)
		return 15;
	*device = (nvmlDevice_t)&S.gpu[index];
	return 0;
}

#ifndef STANDIN_OLD
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetPciInfo_v3", &ret);

	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busId, sizeof(pci->busId), "%s", g->busid);
	return ret;
}
#endif

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
	nvmlReturn_t ret;

	*mode = dev(device, "nvmlDeviceGetPersistenceMode", &ret)->persist;
	return ret;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetEccMode", &ret);

	*current = g->ecc;
	*pending = g->ecc_pend;
	return ret;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
					 unsigned long long *eccCounts)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetTotalEccErrors", &ret);

	if (errorType != 1)     /* only uncorrected ones are asked for */
		return 2;
	*eccCounts = counterType == 0 ? g->uncvol : g->uncagg;
	return ret;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
				       unsigned int *isPending, unsigned int *failureOccurred)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetRemappedRows", &ret);

	if (g->remap_unsupported)
		return 3;       /* NVML_ERROR_NOT_SUPPORTED: before A100 */
	*corrRows = g->remap[0];
	*uncRows = g->remap[1];
	*isPending = g->remap[2];
	*failureOccurred = g->remap[3];
	return ret;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int *pageCount,
				       unsigned long long *addresses)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetRetiredPages", &ret);
	unsigned n = g->pages[cause == 1 ? 1 : 0];

	if (ret)
		return ret;
	if (!g->remap_unsupported)
		return 3;
	if (*pageCount < n) {
		*pageCount = n;
		return n ? 7 : 0;       /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	for (unsigned i = 0; addresses && i < n; i++)
		addresses[i] = 0x1000ULL * (i + 1);
	*pageCount = n;
	return 0;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
	nvmlReturn_t ret;
	struct sgpu *g = dev(device, "nvmlDeviceGetRetiredPagesPendingStatus", &ret);

	if (!g->remap_unsupported)
		return 3;
	*isPending = (int)g->pages[2];
	return ret;
}
