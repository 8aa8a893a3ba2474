/* SPDX-License-Identifier: MIT */
/*
 * Feed files to the spec loader, as the fuzzer does: every file named on the
 * command line, or every file in a directory named there; with no argument,
 * the seed corpus ($TOP_SRCDIR/tests/fuzz/corpus, as make check runs it).
 * It checks that nothing crashes or leaks (under ASan or valgrind) and that a
 * spec that loads has no diags; with -v it prints the diagnostics.  Exit 1
 * when no file was read, so an empty or missing corpus fails.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spec.h"
#include "strbuf.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "tests/fuzz/corpus"
#endif

static int verbose;

static int replay_path(const char *arg, int *files);

static int replay_file(const char *path)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	FILE *f = fopen(path, "rbe");
	char *buf;
	size_t len;
	long size;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fprintf(stderr, "replay: %s: cannot get its size\n", path);
		fclose(f);
		return -1;
	}
	buf = xmalloc((size_t)size + 1);
	len = fread(buf, 1, (size_t)size, f);
	fclose(f);
	/* Exactly len bytes, as the fuzzer passes them: ASan sees reads past the end. */
	{
		char *exact = xmalloc(len ? len : 1);

		memcpy(exact, buf, len);
		free(buf);
		buf = exact;
	}
	if (spec_load_buffer(path, buf, len, &s, &d) == 0 && d.n) {
		fprintf(stderr, "replay: %s: loaded but left %zu diags\n", path, d.n);
		diags_print(&d, stderr);
		spec_free(s);
		diags_free(&d);
		free(buf);
		return -1;
	}
	if (verbose) {
		printf("%s: %s\n", path, s ? "ok" : "rejected");
		diags_print(&d, stdout);
	}
	spec_free(s);
	diags_free(&d);
	free(buf);
	return 0;
}

/* A file, or every regular file in a directory.  Returns the failures. */
static int replay_path(const char *arg, int *files)
{
	struct dirent **ents;
	struct stat st;
	int n, failed = 0;

	if (stat(arg, &st) < 0 || !S_ISDIR(st.st_mode)) {
		(*files)++;
		return replay_file(arg) < 0;
	}
	n = scandir(arg, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", arg, strerror(errno));
		return 1;
	}
	for (int j = 0; j < n; j++) {
		char *p = xasprintf("%s/%s", arg, ents[j]->d_name);
		struct stat fst;

		if (ents[j]->d_name[0] != '.' && stat(p, &fst) == 0 && S_ISREG(fst.st_mode)) {
			failed += replay_file(p) < 0;
			(*files)++;
		}
		free(p);
		free(ents[j]);
	}
	free(ents);
	return failed;
}

int main(int argc, char **argv)
{
	int files = 0, failed = 0, args = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		failed += replay_path(argv[i], &files);
		args++;
	}
	if (!args) {
		const char *top = getenv("TOP_SRCDIR");
		char *dir = top && *top ? xasprintf("%s/tests/fuzz/corpus", top) : xstrdup(CORPUS_DIR);

		failed += replay_path(dir, &files);
		free(dir);
	}
	printf("replay: %d files, %d failed\n", files, failed);
	return files == 0 || failed ? 1 : 0;
}
