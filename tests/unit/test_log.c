/* SPDX-License-Identifier: MIT */
/*
 * common/base/log.c: what reaches stderr at each verbosity, with the
 * module's name, escaped (a message may quote another machine), and
 * log_errno's reason and return value.  stderr is a real file here.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "../../common/base/log.c"
#include "fsutil.h"
#include "test.h"

static char path[] = "/tmp/hpcinit-test-log.XXXXXX";
static int saved_stderr = -1;

/* From here on stderr goes to a fresh, empty file. */
static void capture(void)
{
	int fd;

	fflush(stderr);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 2) < 0)
		abort();
	close(fd);
}

/* What was written to stderr since capture() (malloc'd); stderr is the test's again. */
static char *captured(void)
{
	char *text = NULL;

	fflush(stderr);
	dup2(saved_stderr, 2);
	if (fs_read_host(path, 1 << 20, &text, NULL) < 0)
		text = xstrdup("(unreadable)");
	return text;
}

int main(void)
{
	char *t;
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	saved_stderr = dup(2);

	/* verbosity 0: errors and warnings only, as "core" before any module */
	log_init(0, 0);
	capture();
	log_err("disk %s is gone", "sdb");
	log_warn("slow %d", 7);
	log_info("not shown");
	log_debug("not shown either");
	t = captured();
	TEST_STREQ(t, "hpcinit[core]: error: disk sdb is gone\nhpcinit[core]: warning: slow 7\n");
	free(t);

	/* the module's name once set; back to core with NULL */
	log_set_module("nfs");
	capture();
	log_err("x");
	log_set_module(NULL);
	log_warn("y");
	t = captured();
	TEST_STREQ(t, "hpcinit[nfs]: error: x\nhpcinit[core]: warning: y\n");
	free(t);

	/* verbosity 1 adds info; 2 adds debug */
	log_init(1, 0);
	capture();
	log_info("i1");
	log_debug("d1");
	t = captured();
	TEST_STREQ(t, "hpcinit[core]: info: i1\n");
	free(t);
	log_init(2, 0);
	capture();
	log_debug("d2");
	t = captured();
	TEST_STREQ(t, "hpcinit[core]: debug: d2\n");
	free(t);

	/* text from elsewhere is escaped: no terminal escape gets through; a message may run over
	 * lines, but each further line is indented, so none reads as a log entry of its own */
	log_init(0, 0);
	capture();
	log_warn("peer said \"%s\"", "\033[2J\nhpcinit[core]: error: forged");
	t = captured();
	TEST_CHECK(strchr(t, '\033') == NULL);
	TEST_CHECK(strstr(t, "\\x1b[2J") != NULL);
	TEST_CHECK(strncmp(t, "hpcinit[core]: warning: peer said \"", 35) == 0);
	TEST_CHECK(strstr(t, "\nhpcinit[") == NULL);
	TEST_CHECK(strstr(t, "\n    hpcinit[core]: error: forged\"\n") != NULL);
	free(t);
	capture();
	log_warn("a\n\nb\n");
	t = captured();
	TEST_STREQ(t, "hpcinit[core]: warning: a\n    \n    b\n");
	free(t);

	/* log_errno: the reason appended, the error handed back, either sign */
	capture();
	TEST_INTEQ(log_errno(LOG_LVL_ERR, -ENOENT, "open %s", "/etc/x"), -ENOENT);
	TEST_INTEQ(log_errno(LOG_LVL_WARN, EACCES, "chmod"), EACCES);
	TEST_INTEQ(log_errno(LOG_LVL_INFO, -EIO, "quiet at verbosity 0"), -EIO);
	t = captured();
	TEST_STREQ(t, "hpcinit[core]: error: open /etc/x: No such file or directory\n"
		   "hpcinit[core]: warning: chmod: Permission denied\n");
	free(t);

	close(saved_stderr);
	unlink(path);
	TEST_EXIT();
}
