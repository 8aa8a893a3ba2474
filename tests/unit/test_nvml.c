/* SPDX-License-Identifier: MIT */
/*
 * lib/gpu/nvml.c with a STAND-IN for NVIDIA's libnvidia-ml.so.1
 * (tests/lib/fake-nvml.c, built as $TOP_BUILDDIR/tests/lib/nvml-standin.so):
 * this machine has no GPU.  Each threshold and its finding, a healthy pair,
 * the library absent, a library missing a symbol, a GPU at another PCI
 * address, nvmlInit_v2 failing, a reader that crashes, and a driver call
 * that never returns ending at the deadline with the call named.
 */
#include "config.h"

#include "../../lib/gpu/nvml.c"
#include "test.h"

static char dir[] = "/tmp/hpcinit-test-nvml.XXXXXX";
static char standin[PATH_MAX + 64], standin_old[PATH_MAX + 64], conf[PATH_MAX + 16];

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static const struct finding *find(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return &r->findings[i];
	return NULL;
}

static bool has(const char *hay, const char *needle)
{
	bool ok = hay && strstr(hay, needle);

	if (!ok)
		fprintf(stderr, "# missing \"%s\" in:\n%s\n", needle, hay ? hay : "(null)");
	return ok;
}

/* Two H100s as sysfs shows them on ND H100 v5 (domains 0001 and 0002), bound. */
static void inv2(struct gpu_inventory *inv)
{
	memset(inv, 0, sizeof(*inv));
	inv->n = 2;
	snprintf(inv->gpu[0].pci, sizeof(inv->gpu[0].pci), "0001:00:00.0");
	snprintf(inv->gpu[1].pci, sizeof(inv->gpu[1].pci), "0002:00:00.0");
	inv->gpu[0].bound = inv->gpu[1].bound = true;
}

/* Run the check on the pair with the stand-in answering conf_text. */
static void run(struct report *r, const char *lib, const char *conf_text, uint64_t deadline_in_ms)
{
	struct ctx c = { .root = "", .mode = RUN_CHECK };
	struct gpu_inventory inv;

	inv2(&inv);
	write_conf(conf_text);
	setenv(NVML_LIB_ENV, lib, 1);
	c.deadline_ms = deadline_in_ms ? now_ms() + deadline_in_ms : 0;
	report_init(r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, r), 0);
	/* the reader itself ran clean (under valgrind, an error makes it exit 99) */
	TEST_CHECK(!r->details.buf || !strstr(r->details.buf, "exited with an error"));
}

#define PAIR_OK "gpu 00000001:00:00.0\ngpu 00000002:00:00.0\n"

/* One GPU's line changed: its finding, with the tag and the severity; the other GPU is healthy. */
static void threshold(const char *gpu1, const char *tag, enum rstatus sev, const char *text)
{
	struct report r;
	char buf[512];
	const struct finding *f;

	snprintf(buf, sizeof(buf), "gpu 00000001:00:00.0 %s\ngpu 00000002:00:00.0\n", gpu1);
	run(&r, standin, buf, 0);
	f = tag ? find(&r, tag) : NULL;
	if (tag) {
		TEST_CHECK(f != NULL);
		TEST_INTEQ(r.n_findings, 1);
		TEST_INTEQ(f ? (int)f->sev : -1, (int)sev);
		TEST_CHECK(f && has(f->text, "GPU 0001:00:00.0"));
		TEST_CHECK(f && has(f->text, text));
		/* the GPU's line of readings first, then what they mean (a lost GPU has no such line) */
		if (f && strcmp(tag, "gpu.nvml.lost") != 0)
			TEST_CHECK(strstr(r.details.buf, "GPU 0001:00:00.0 (NVML 0):") &&
				   strstr(r.details.buf, "GPU 0001:00:00.0 (NVML 0):") < strstr(r.details.buf, f->text));
	} else {
		TEST_INTEQ(r.n_findings, 0);
		TEST_CHECK(has(r.details.buf, text));
	}
	TEST_INTEQ(r.status, tag ? sev : ST_OK);
	report_free(&r);
}

static void healthy(void)
{
	struct report r;

	run(&r, standin, "driver 550.90.07\n" PAIR_OK, 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.n_findings, 0);
	TEST_CHECK(has(r.details.buf, "driver 550.90.07, 2 GPUs"));
	TEST_CHECK(has(r.details.buf, "GPU 0001:00:00.0 (NVML 0): persistence on, ECC on, uncorrectable ECC "
		       "errors 0 since the driver loaded, 0 in its lifetime, rows remapped 0 (correctable) 0 "
		       "(uncorrectable)\n"));
	TEST_CHECK(has(r.details.buf, "GPU 0002:00:00.0 (NVML 1): persistence on"));
	report_free(&r);
}

/* A GPU whose handle or address NVML cannot give: ours unmatched, and the lost one failed by its index. */
static void lost_unmatched(void)
{
	static const char *const how[2] = { "lost=nvmlDeviceGetHandleByIndex_v2", "lost=nvmlDeviceGetPciInfo_v3" };

	for (int k = 0; k < 2; k++) {
		struct report r;
		char buf[256];
		const struct finding *f;

		snprintf(buf, sizeof(buf), "gpu 00000001:00:00.0\ngpu 00000002:00:00.0 %s\n", how[k]);
		run(&r, standin, buf, 0);
		f = find(&r, "gpu.nvml.lost");
		TEST_CHECK(f && has(f->text, "NVML GPU 1: "));
		TEST_CHECK(f && has(f->text, how[k] + 5));
		f = find(&r, "gpu.nvml.unmatched");
		TEST_CHECK(f && has(f->text, "GPU 0002:00:00.0: bound to the driver"));
		TEST_INTEQ(r.status, ST_FAILED);
		report_free(&r);
	}
}

static void thresholds(void)
{
	threshold("persist=0", "gpu.persistence.off", ST_DEGRADED, "persistence mode is off");
	threshold("ecc=0,0", "gpu.ecc.off", ST_DEGRADED, "ECC is off");
	threshold("ecc=0,1", "gpu.ecc.off", ST_DEGRADED, "ECC is off");
	threshold("uncvol=1 uncagg=1", "gpu.ecc.uncorrectable", ST_FAILED, "1 uncorrectable ECC errors since");
	/* lifetime errors alone are history (remapped or retired since): a detail, no finding */
	threshold("uncagg=7", NULL, ST_OK, "0 since the driver loaded, 7 in its lifetime");
	threshold("remap=0,2,1,0", "gpu.rowremap.pending", ST_DEGRADED, "a row remap is pending");
	threshold("remap=0,2,1,1", "gpu.rowremap.failed", ST_FAILED, "a row remap failed");
	threshold("remap=3,0,0,0", NULL, ST_OK, "rows remapped 3 (correctable) 0 (uncorrectable)");
	/* a GPU before A100: pages retired instead of rows remapped */
	threshold("remap=0,512,0,0", NULL, ST_OK, "rows remapped 0 (correctable) 512 (uncorrectable)");
	threshold("remap=0,513,0,0", "gpu.rowremap.many", ST_FAILED, "513 rows remapped for uncorrectable errors");
	threshold("remap=unsupported pages=40,22,0", NULL, ST_OK, "pages retired 62 (double-bit 22)");
	threshold("remap=unsupported pages=40,21,1", "gpu.pages.pending", ST_DEGRADED, "page retirement is pending");
	threshold("remap=unsupported pages=40,22,1", "gpu.pages.full", ST_FAILED,
		  "62 pages retired and one more pending: its retirement table is full");
	threshold("remap=unsupported pages=0,1,1", "gpu.pages.pending", ST_DEGRADED, "page retirement is pending");
	threshold("lost=nvmlDeviceGetEccMode", "gpu.nvml.lost", ST_FAILED, "nvmlDeviceGetEccMode answered GPU is lost");
	lost_unmatched();
}

/* The library absent, not a library, missing a symbol: a detail line, no finding. */
static void absent(void)
{
	struct ctx c = { .root = "", .mode = RUN_CHECK };
	struct gpu_inventory inv;
	struct report r;
	char notlib[PATH_MAX + 16];
	void *real;

	snprintf(notlib, sizeof(notlib), "%s/not-a-library.so", dir);
	write_conf(PAIR_OK);
	rename(conf, notlib);
	run(&r, notlib, PAIR_OK, 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.n_findings, 0);
	TEST_CHECK(has(r.details.buf, "not-a-library.so not loaded ("));
	report_free(&r);
	unlink(notlib);

	run(&r, standin_old, PAIR_OK, 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.n_findings, 0);
	TEST_CHECK(has(r.details.buf, "lacks nvmlDeviceGetPciInfo_v3"));
	report_free(&r);

	/* the default library, where this machine has none (no GPU driver here) */
	unsetenv(NVML_LIB_ENV);
	real = dlopen(NVML_LIB_DEFAULT, RTLD_NOW | RTLD_LOCAL);
	if (real) {
		printf("# %s is installed here: the no-library case is proved by the path above only\n",
		       NVML_LIB_DEFAULT);
		dlclose(real);
	} else {
		inv2(&inv);
		report_init(&r);
		TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
		TEST_INTEQ(r.status, ST_OK);
		TEST_INTEQ(r.n_findings, 0);
		TEST_CHECK(has(r.details.buf, "NVML: libnvidia-ml.so.1 not loaded ("));
		report_free(&r);
	}
}

/* Who may name the library: not a relative path, not a file others could write; not under a fake root. */
static void override_rules(void)
{
	struct ctx c = { .root = dir, .mode = RUN_CHECK };
	struct gpu_inventory inv;
	struct report r;
	char open_dir[PATH_MAX + 16], lib[PATH_MAX + 32];

	inv2(&inv);
	unsetenv(NVML_LIB_ENV);
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_INTEQ(r.n_findings, 0);
	TEST_CHECK(has(r.details.buf, "under a fake root this machine's libnvidia-ml.so.1 is not the root's"));
	report_free(&r);

	/* --root / is the real root: the default library is the machine's own (absent here: a detail) */
	c.root = "/";
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_CHECK(!strstr(r.details.buf, "under a fake root"));
	report_free(&r);

	c.root = "";
	setenv(NVML_LIB_ENV, "tests/lib/nvml-standin.so", 1);
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_CHECK(has(r.details.buf, "is not an absolute path"));
	report_free(&r);

	snprintf(open_dir, sizeof(open_dir), "%s/open", dir);
	snprintf(lib, sizeof(lib), "%s/nvml.so", open_dir);
	TEST_CHECK(mkdir(open_dir, 0777) == 0 && chmod(open_dir, 0777) == 0);
	write_conf("not loaded: refused before dlopen\n");
	TEST_CHECK(rename(conf, lib) == 0);
	setenv(NVML_LIB_ENV, lib, 1);
	write_conf("gpu 00000001:00:00.0 uncvol=5\n");
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_INTEQ(r.n_findings, 0);                    /* not loaded: its answer never came */
	TEST_CHECK(has(r.details.buf, "refused"));
	report_free(&r);
	unlink(lib);

	/* a link there to a trusted library: what is loaded is the library's real path, not the link */
	TEST_CHECK(symlink(standin, lib) == 0);
	write_conf("gpu 00000001:00:00.0\ngpu 00000002:00:00.0\n");
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_INTEQ(r.n_findings, 0);
	{
		char want[sizeof(standin) + 80];

		snprintf(want, sizeof(want), "NVML: %s, driver 550.54.15, 2 GPUs", standin);
		TEST_CHECK(has(r.details.buf, want));
	}
	report_free(&r);
	unlink(lib);
	rmdir(open_dir);
}

/* The stand-in lists a GPU at another address: it is not judged as ours, ours is unmatched. */
static void wrong_pci(void)
{
	struct ctx c = { .root = "", .mode = RUN_CHECK };
	struct gpu_inventory inv;
	struct report r;

	memset(&inv, 0, sizeof(inv));
	inv.n = 2;
	snprintf(inv.gpu[0].pci, sizeof(inv.gpu[0].pci), "0001:00:00.0");
	snprintf(inv.gpu[1].pci, sizeof(inv.gpu[1].pci), "0002:00:00.0");
	inv.gpu[0].bound = true;        /* 0002 is on the bus, not bound: the sysfs step's finding */
	write_conf("gpu 00000009:00:00.0 uncvol=3\n");
	setenv(NVML_LIB_ENV, standin, 1);
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_CHECK(find(&r, "gpu.nvml.unmatched") != NULL);
	TEST_CHECK(find(&r, "gpu.ecc.uncorrectable") == NULL);
	TEST_INTEQ(r.n_findings, 1);
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(has(r.details.buf, "GPU 0001:00:00.0: bound to the driver, but none of the 1 GPUs NVML lists"));
	TEST_CHECK(has(r.details.buf, "GPU 0002:00:00.0: not bound to the driver, not read with NVML"));
	TEST_CHECK(has(r.details.buf, "NVML GPU 0 (00000009:00:00.0): not among the GPUs on the PCI bus"));
	report_free(&r);

	/* the same domain, another bus, device or function is another GPU */
	for (int k = 0; k < 3; k++) {
		static const char *const other[3] = { "00000001:01:00.0", "00000001:00:01.0", "00000001:00:00.1" };
		char buf[128];

		snprintf(buf, sizeof(buf), "gpu %s uncvol=3\n", other[k]);
		write_conf(buf);
		report_init(&r);
		TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
		TEST_CHECK(find(&r, "gpu.nvml.unmatched") != NULL);
		TEST_CHECK(find(&r, "gpu.ecc.uncorrectable") == NULL);
		report_free(&r);
	}

	/* NVML's upper case and 8-digit domain match sysfs's "000a:00:00.0" */
	snprintf(inv.gpu[1].pci, sizeof(inv.gpu[1].pci), "000a:00:00.0");
	inv.gpu[1].bound = true;
	write_conf("gpu 00000001:00:00.0\ngpu 0000000A:00:00.0 persist=0\n");
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_INTEQ(r.n_findings, 1);
	TEST_CHECK(find(&r, "gpu.persistence.off") && has(find(&r, "gpu.persistence.off")->text, "GPU 000a:00:00.0"));
	report_free(&r);

	/* no GPU on the bus: nothing loaded */
	memset(&inv, 0, sizeof(inv));
	report_init(&r);
	TEST_INTEQ(gpu_nvml_check(&c, &inv, &r), 0);
	TEST_CHECK(has(r.details.buf, "NVML: no GPU on the PCI bus, not read"));
	report_free(&r);
}

static void init_crash(void)
{
	struct report r;
	const struct finding *f;

	run(&r, standin, "init 18\n" PAIR_OK, 0);
	f = find(&r, "gpu.nvml.init");
	TEST_CHECK(f && has(f->text, "nvmlInit_v2 failed: Driver/library version mismatch (18)"));
	TEST_INTEQ(r.status, ST_FAILED);
	report_free(&r);

	run(&r, standin, "count 999\n" PAIR_OK, 0);
	f = find(&r, "gpu.nvml.init");
	TEST_CHECK(f && has(f->text, "nvmlDeviceGetCount_v2 failed: Unknown Error (999)"));
	report_free(&r);

	run(&r, standin, "crash nvmlDeviceGetRemappedRows\n" PAIR_OK, 0);
	f = find(&r, "gpu.nvml.crashed");
	TEST_CHECK(f && has(f->text, "ended without an answer"));
	TEST_CHECK(f && has(f->text, "in nvmlDeviceGetRemappedRows (NVML GPU 0)"));
	TEST_CHECK(f && (has(f->text, "(signal 11)") || has(f->text, "(signal 6)")));   /* 6: ASan's abort */
	TEST_INTEQ(r.status, ST_DEGRADED);
	report_free(&r);
}

/* A driver call that never returns: the check ends at the deadline, naming the call. */
static void hung(void)
{
	struct report r;
	const struct finding *f;
	uint64_t t0 = now_ms(), took;

	run(&r, standin, "sleep nvmlInit_v2 60000\n" PAIR_OK, 2500);
	took = now_ms() - t0;
	printf("# nvmlInit_v2 asleep for 60 s, step deadline in 2500 ms: the check took %llu ms\n",
	       (unsigned long long)took);
	TEST_CHECK(took >= 1900 && took < 3500);
	f = find(&r, "gpu.nvml.timeout");
	TEST_CHECK(f && has(f->text, "NVML did not answer within "));    /* 2000 ms, less what the test took */
	TEST_CHECK(f && has(f->text, " ms: nvmlInit_v2 was still running, ended"));
	TEST_INTEQ(r.status, ST_FAILED);
	report_free(&r);

	t0 = now_ms();
	run(&r, standin, "sleep nvmlDeviceGetRemappedRows 60000\n" PAIR_OK, 2000);
	took = now_ms() - t0;
	TEST_CHECK(took < 3000);
	f = find(&r, "gpu.nvml.timeout");
	TEST_CHECK(f && has(f->text, "nvmlDeviceGetRemappedRows (NVML GPU 0) was still running"));
	report_free(&r);

	/* a deadline too close to start: not read, no finding */
	run(&r, standin, PAIR_OK, 600);
	TEST_INTEQ(r.n_findings, 0);
	TEST_CHECK(has(r.details.buf, "the step's deadline leaves too little time"));
	report_free(&r);
}

/*
 * The stand-in, copied from the build into the test's own directory: the
 * override is honoured only from a path no other user can write, and a
 * build tree's directories may be group-writable (umask 002).
 */
static bool copy_standin(const char *top, const char *name, char *out, size_t n)
{
	char src[PATH_MAX + 64], buf[65536];
	FILE *in, *o;
	size_t got;
	bool ok = true;

	snprintf(src, sizeof(src), "%s/tests/lib/%s", top, name);
	snprintf(out, n, "%s/%s", dir, name);
	if (!(in = fopen(src, "rb")) || !(o = fopen(out, "wb"))) {
		fprintf(stderr, "test_nvml: %s: %s (make check builds it)\n", src, strerror(errno));
		if (in)
			fclose(in);
		return false;
	}
	while ((got = fread(buf, 1, sizeof(buf), in)) > 0)
		ok = ok && fwrite(buf, 1, got, o) == got;
	fclose(in);
	return fclose(o) == 0 && ok && chmod(out, 0700) == 0;
}

int main(void)
{
	const char *top = getenv("TOP_BUILDDIR");

	if (!top || !mkdtemp(dir)) {
		fprintf(stderr, "test_nvml: run it through make check (TOP_BUILDDIR names the stand-in's build)\n");
		return 1;
	}
	if (!copy_standin(top, "nvml-standin.so", standin, sizeof(standin)) ||
	    !copy_standin(top, "nvml-standin-old.so", standin_old, sizeof(standin_old)))
		return 1;
	snprintf(conf, sizeof(conf), "%s/standin.conf", dir);
	setenv("HPCINIT_NVML_STANDIN", conf, 1);

	healthy();
	thresholds();
	absent();
	override_rules();
	wrong_pci();
	init_crash();
	hung();

	unlink(conf);
	unlink(standin);
	unlink(standin_old);
	rmdir(dir);
	TEST_EXIT();
}
