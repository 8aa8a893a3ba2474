/* SPDX-License-Identifier: MIT */
/*
 * Run a libFuzzer target (LLVMFuzzerTestOneInput) over files without
 * libFuzzer: every file named on the command line, or every file in a
 * directory named there; with no argument, CORPUS_DIR (as make check runs
 * it, also under ASan and valgrind).  Each file is passed as exactly its
 * bytes.  Exit 1 when no file was read, so an empty corpus fails.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "strbuf.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "corpus"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path, unsigned *files)
{
	struct stat st;
	char *buf = NULL, *exact;
	size_t len = 0;
	int r;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		struct dirent **names;
		int n = scandir(path, &names, NULL, alphasort), bad = 0;

		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (names[i]->d_name[0] != '.') {
				char *sub = xasprintf("%s/%s", path, names[i]->d_name);

				bad |= replay(sub, files) < 0;
				free(sub);
			}
			free(names[i]);
		}
		free(names);
		return bad ? -1 : 0;
	}
	r = fs_read_host(path, 1u << 20, &buf, &len);
	if (r < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-r));
		return -1;
	}
	/* Exactly len bytes, as the fuzzer passes them: ASan sees reads past the end. */
	exact = xmalloc(len ? len : 1);
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput((const uint8_t *)exact, len);
	free(exact);
	(*files)++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned files = 0;
	int bad = 0;

	if (argc < 2)
		bad |= replay(CORPUS_DIR, &files) < 0;
	for (int i = 1; i < argc; i++)
		bad |= replay(argv[i], &files) < 0;
	printf("replay: %u files\n", files);
	return bad || files == 0;
}
