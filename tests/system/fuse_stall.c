/* SPDX-License-Identifier: MIT */
/*
 * fuse_stall MOUNTPOINT: mount a FUSE file system that answers what is needed
 * to find and open directories (INIT, LOOKUP, GETATTR, OPENDIR: every name is
 * a root-owned 0755 directory) and never answers anything else -- READDIR,
 * CREATE, reads and writes stay queued, so a process touching them sleeps in
 * the kernel as on a hard NFS mount whose server died.  Prints "ready" once
 * mounted; serves until killed.  Needs root and /dev/fuse (exit 77 otherwise).
 *
 * fuse_stall -a MOUNTPOINT: a file system stalled from its top, as a hard NFS
 * /home whose server died: only the mount point itself answers (GETATTR of
 * the root); every LOOKUP of a name in it stays queued too, so a stat(2),
 * open(2) or mkdir(2) of anything below it never returns.
 *
 * fuse_stall -r SRCDIR MOUNTPOINT: a half-dead file system, as an NFS /home
 * whose server died after the client cached what it had read: the tree
 * under SRCDIR is served as it is (LOOKUP, GETATTR, OPEN for reading, READ,
 * READLINK, FLUSH, RELEASE), and anything else stalls -- a name SRCDIR lacks,
 * an open for writing, CREATE, MKDIR, SETATTR, WRITE, RENAME, READDIR.  So a
 * step may read a user's key pair there, and blocks when it writes next to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

static void reply_err(int fuse, uint64_t unique, int err)
{
	struct fuse_out_header h = { .len = sizeof(h), .error = -err, .unique = unique };

	if (write(fuse, &h, sizeof(h)) < 0 && errno != ENOENT)
		_exit(1);
}

/* -r: nodeid -> path under SRCDIR (1 is SRCDIR itself) */
#define MAX_NODES 4096
static char *node_path[MAX_NODES];
static uint64_t n_nodes = 2;

static void attr_of(struct fuse_attr *a, uint64_t ino, const struct stat *st)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->atime = (uint64_t)st->st_atime;
	a->mtime = (uint64_t)st->st_mtime;
	a->ctime = (uint64_t)st->st_ctime;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->blksize = 4096;
}

/* Answer what reads the snapshot; leave everything else queued. */
static void serve_snapshot(int fuse, const struct fuse_in_header *in)
{
	static char out[(1 << 16) + 64];
	const char *path = in->nodeid < n_nodes ? node_path[in->nodeid] : NULL;
	struct stat st;

	if (!path)
		return;
	switch (in->opcode) {
	case FUSE_LOOKUP: {
		struct fuse_entry_out e;
		char sub[4096];
		uint64_t id;

		const char *name = (const char *)(in + 1);

		if (strlen(path) + strlen(name) + 2 > sizeof(sub))
			return;
		strcpy(sub, path);
		strcat(sub, "/");
		strcat(sub, name);
		if (lstat(sub, &st) < 0)
			return;         /* a name the server never answers for */
		for (id = 1; id < n_nodes && strcmp(node_path[id], sub) != 0; id++)
			;
		if (id == n_nodes) {
			if (n_nodes == MAX_NODES)
				return;
			node_path[n_nodes++] = strdup(sub);
		}
		memset(&e, 0, sizeof(e));
		e.nodeid = id;
		attr_of(&e.attr, id, &st);
		reply(fuse, in->unique, &e, sizeof(e));
		return;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out a;

		if (lstat(path, &st) < 0)
			return;
		memset(&a, 0, sizeof(a));
		attr_of(&a.attr, in->nodeid, &st);
		reply(fuse, in->unique, &a, sizeof(a));
		return;
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		const struct fuse_open_in *oi = (const void *)(in + 1);
		struct fuse_open_out o;

		if (oi->flags & (O_WRONLY | O_RDWR | O_TRUNC | O_APPEND))
			return;
		memset(&o, 0, sizeof(o));
		reply(fuse, in->unique, &o, sizeof(o));
		return;
	}
	case FUSE_READ: {
		const struct fuse_read_in *ri = (const void *)(in + 1);
		struct fuse_out_header h = { .error = 0, .unique = in->unique };
		size_t want = ri->size < (1u << 16) ? ri->size : (1u << 16);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : pread(fd, out + sizeof(h), want, (off_t)ri->offset);

		if (fd >= 0)
			close(fd);
		if (n < 0) {
			reply_err(fuse, in->unique, EIO);
			return;
		}
		h.len = (uint32_t)(sizeof(h) + (size_t)n);
		memcpy(out, &h, sizeof(h));
		if (write(fuse, out, h.len) < 0 && errno != ENOENT)
			_exit(1);
		return;
	}
	case FUSE_READLINK: {
		char target[256];
		ssize_t n = readlink(path, target, sizeof(target));

		if (n < 0)
			reply_err(fuse, in->unique, EINVAL);
		else
			reply(fuse, in->unique, target, (size_t)n);
		return;
	}
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_ACCESS:
		reply(fuse, in->unique, "", 0);
		return;
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
		reply_err(fuse, in->unique, ENOSYS);
		return;
	default:
		return;         /* taken from the queue, never answered */
	}
}

int main(int argc, char **argv)
{
	static char buf[1 << 17];
	char opts[128];
	int fuse;
	uint64_t next_ino = 2;
	int all = argc == 3 && strcmp(argv[1], "-a") == 0;
	const char *src = argc == 4 && strcmp(argv[1], "-r") == 0 ? argv[2] : NULL;

	if (all) {
		argv++;
		argc--;
	}
	if (src) {
		node_path[1] = strdup(src);
		argv += 2;
		argc -= 2;
	}
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
		if (src && in->opcode != FUSE_INIT) {
			serve_snapshot(fuse, in);
			continue;
		}
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

			if (all)
				break;  /* never answered */
			memset(&e, 0, sizeof(e));
			e.nodeid = next_ino++;
			attr_dir(&e.attr, e.nodeid);
			reply(fuse, in->unique, &e, sizeof(e));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a;

			if (all && in->nodeid != FUSE_ROOT_ID)
				break;
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
