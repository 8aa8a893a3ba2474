/* SPDX-License-Identifier: MIT */
/*
 * fuse_stall MOUNTPOINT: mount a FUSE file system that answers what is needed
 * to find and open directories (INIT, LOOKUP, GETATTR, OPENDIR: every name is
 * a root-owned 0755 directory) and never answers anything else -- READDIR,
 * CREATE, reads and writes stay queued, so a process touching them sleeps in
 * the kernel as on a hard NFS mount whose server died.  Prints "ready" once
 * mounted; serves until killed.  Needs root and /dev/fuse (exit 77 otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static void attr_dir(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = 040755;
	a->nlink = 2;
	a->blksize = 4096;
}

static void reply(int fuse, uint64_t unique, const void *body, size_t len)
{
	char buf[512];
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = 0, .unique = unique };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	if (write(fuse, buf, sizeof(h) + len) < 0 && errno != ENOENT)
		_exit(1);
}

int main(int argc, char **argv)
{
	static char buf[1 << 17];
	char opts[128];
	int fuse;
	uint64_t next_ino = 2;

	if (argc != 2)
		return 2;
	fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (geteuid() != 0 || fuse < 0) {
		printf("SKIP: needs root and /dev/fuse\n");
		return 77;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse);
	if (mount("hpcinit-stall", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
		printf("SKIP: cannot mount fuse: %s\n", strerror(errno));
		return 77;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		ssize_t n = read(fuse, buf, sizeof(buf));
		const struct fuse_in_header *in = (const void *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in))
			return 0;
		switch (in->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *ii = (const void *)(in + 1);
			struct fuse_init_out o;

			memset(&o, 0, sizeof(o));
			o.major = FUSE_KERNEL_VERSION;
			o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
			o.max_readahead = ii->max_readahead;
			o.max_write = 4096;
			reply(fuse, in->unique, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out e;

			memset(&e, 0, sizeof(e));
			e.nodeid = next_ino++;
			attr_dir(&e.attr, e.nodeid);
			reply(fuse, in->unique, &e, sizeof(e));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a;

			memset(&a, 0, sizeof(a));
			attr_dir(&a.attr, in->nodeid);
			reply(fuse, in->unique, &a, sizeof(a));
			break;
		}
		case FUSE_OPENDIR: {
			struct fuse_open_out o;

			memset(&o, 0, sizeof(o));
			o.fh = 1;
			reply(fuse, in->unique, &o, sizeof(o));
			break;
		}
		default:
			break;  /* taken from the queue, never answered */
		}
	}
}
