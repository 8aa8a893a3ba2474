/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the spec loader: any bytes go in, and whatever comes
 * out (a spec or diags) is printed into memory and freed.  Crashes, leaks,
 * UB and timeouts are the findings.  Build and run: tests/fuzz/run.sh.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;
	int r;

	r = spec_load_buffer("fuzz.yaml", (const char *)data, size, &s, &d);
	/* A spec that loads has no diags; a refused one has at least one. */
	if ((r == 0) != (d.n == 0) || (r == 0) != (s != NULL))
		abort();
	/* diags_print walks every source line and caret: run it too. */
	f = open_memstream(&out, &out_len);
	if (f) {
		diags_print(&d, f);
		fclose(f);
	}
	free(out);
	spec_free(s);
	diags_free(&d);
	return 0;
}
