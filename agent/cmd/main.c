/* SPDX-License-Identifier: MIT */
/* hpcinit: command line. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "health.h"
#include "log.h"
#include "members.h"
#include "notify.h"
#include "record.h"
#include "runner.h"
#include "status.h"
#include "status_read.h"
#include "units.h"
#include "watch.h"

#define DEFAULT_CONFIG "/etc/hpcinit/node.yaml"

enum { EXIT_READY = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_DEGRADED = 3 };

static void usage(FILE *out)
{
	fputs("Usage: hpcinit [COMMAND] [OPTIONS]\n"
	      "Turn a cloud VM into a ready member of an HPC/MPI cluster, from one YAML spec.\n"
	      "\n"
	      "Commands:\n"
	      "  apply            converge this node (default)\n"
	      "  check            report drift and failures; records the node's state, and\n"
	      "                   only the Slurm drain changes (exit 1 on drift)\n"
	      "  plan             show what apply would change, with diffs\n"
	      "  refresh          apply discovery, ssh and hostfile only (scale-out/in timer)\n"
	      "  verify           run the MPI verification across the cluster\n"
	      "  watch            stay running: refresh within a second of a join or leave\n"
	      "  leave            take this node out of the cluster (shutdown, scale-in)\n"
	      "  status           show the last run (/run/hpcinit/status.json)\n"
	      "  members          every member's state, reason and time to ready (the rendezvous)\n"
	      "  health           answer one Azure Application Health probe on stdin/stdout\n"
	      "                   (run by hpcinit-health.socket)\n"
	      "  validate FILE    check a spec and print every error\n"
	      "\n"
	      "Options:\n"
	      "  -c, --config FILE        spec file (default " DEFAULT_CONFIG ")\n"
	      "      --root DIR           act on the tree under DIR instead of /\n"
	      "      --only LIST          run only these modules (comma-separated; their needs are added)\n"
	      "      --json               print the run report as JSON\n"
	      "      --lock-timeout DUR   wait this long for another run to finish (default 10m;\n"
	      "                           check: 10s, then it runs without recording)\n"
	      "      --kernel-release REL use REL as the running kernel release (tests, images)\n"
	      "      --hostname NAME      use NAME as this node's hostname (tests)\n"
	      "  -v, --verbose            more logging (repeat for debug)\n"
	      "  -h, --help               this help\n"
	      "  -V, --version            print the version\n"
	      "\n"
	      "Exit codes: 0 ready, 1 a step failed (check: drift), 2 usage or spec error\n"
	      "(nothing changed), 3 degraded (only optional steps failed).\n"
	      "Modules, in run order: ", out);
	for (size_t i = 0; module_table[i]; i++)
		fprintf(out, "%s%s", i ? ", " : "", module_table[i]->name);
	fputs(".\nSee hpcinit(8) and hpcinit.yaml(5).\n", out);
}

#define LOCK_TIMEOUT_MAX_MS (24 * HOUR_MS)
/* hpcinit check waits this long for a run holding the lock, then runs unrecorded. */
#define CHECK_LOCK_TIMEOUT_MS (10 * SEC_MS)

/* --lock-timeout: a duration as the spec writes one (units.c), 0s to 24h. */
static int parse_lock_timeout(const char *s, uint64_t *ret_ms)
{
	uint64_t ms = 0;
	int r = parse_duration(s, &ms);

	if (r < 0)
		return r;
	if (ms > LOCK_TIMEOUT_MAX_MS)
		return -ERANGE;
	*ret_ms = ms;
	return 0;
}

static void split_list(const char *s, struct strlist *out)
{
	char *copy = xstrdup(s), *save = NULL;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*tok)
			strlist_push(out, tok);
	free(copy);
}

/* Default lists of a command: the modules of the list that this build has. */
static void split_list_known(const char *s, struct strlist *out)
{
	struct strlist all = { 0 };

	split_list(s, &all);
	for (size_t i = 0; i < all.n; i++)
		if (module_find(all.v[i]))
			strlist_push(out, all.v[i]);
	strlist_free(&all);
}

/* The spec at path; its secret files read under root (placeholders: spec errors). */
static int load_spec(const char *path, const char *root, struct spec **ret)
{
	struct diags d = { 0 };
	int r = spec_load_file_root(path, root, ret, &d);

	if (r < 0) {
		diags_print(&d, stderr);
		if (r == -EINVAL)
			fprintf(stderr, "hpcinit: %s: %zu error%s; nothing was changed\n", path, d.n,
				d.n == 1 ? "" : "s");
	}
	diags_free(&d);
	return r;
}

/*
 * Who besides root (and the user running hpcinit) could change what st is?
 * NULL when no one; else a phrase for the message.  A directory with the
 * sticky bit (/tmp) may be writable by others: they cannot replace a file
 * they do not own there.
 */
static const char *writable_by_others(const struct stat *st, char *buf, size_t len)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(buf, len, "owned by uid %u", (unsigned)st->st_uid);
		return buf;
	}
	if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
		return NULL;
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(buf, len, "writable by %s (mode %04o)",
			 st->st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st->st_mode & 07777));
		return buf;
	}
	return NULL;
}

/*
 * The spec decides what root does to this machine, so on the real root a
 * spec that anyone but root could change -- the file, or a directory above
 * it -- is refused before anything runs.  `hpcinit validate` and fake roots
 * (--root) are not judged: they change nothing of the system.
 */
static bool spec_file_refused(const char *path)
{
	char *real = realpath(path, NULL), why[64];
	const char *w = NULL;
	bool dir = false;
	struct stat st;

	if (!real)
		return false;           /* the loader says why it cannot be read */
	if (stat(real, &st) == 0)
		w = writable_by_others(&st, why, sizeof(why));
	while (!w && strcmp(real, "/") != 0) {
		char *slash = strrchr(real, '/');

		if (!slash)
			break;
		slash[slash == real ? 1 : 0] = '\0';
		dir = true;
		if (stat(real, &st) == 0)
			w = writable_by_others(&st, why, sizeof(why));
	}
	if (w)
		fprintf(stderr, "hpcinit: %s: %s%s%s is %s; whoever can change the spec decides what "
			"root does to this machine: refusing it (chown root, chmod go-w); nothing was "
			"changed\n", path, dir ? "its directory " : "", dir ? real : "", dir ? "" : "the file",
			w);
	free(real);
	return w != NULL;
}

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "root", required_argument, NULL, 'r' },
	{ "only", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, 'j' },
	{ "lock-timeout", required_argument, NULL, 'L' },
	{ "kernel-release", required_argument, NULL, 'K' },
	{ "hostname", required_argument, NULL, 'H' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct cli {
	const char *config, *root, *command;
	bool json, lock_timeout_set;
	struct run_opts ro;
	struct ctx c;
};

/* Returns -1 to go on, or an exit code (help, version, usage error). */
static int parse_opts(int argc, char **argv, struct cli *o)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "+c:vhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config = optarg;
			break;
		case 'r':
			o->root = optarg;
			break;
		case 'o':
			split_list(optarg, &o->ro.only);
			break;
		case 'j':
			o->json = true;
			break;
		case 'L':
			o->lock_timeout_set = true;
			switch (parse_lock_timeout(optarg, &o->ro.lock_timeout_ms)) {
			case 0:
				break;
			case -ERANGE:
				fprintf(stderr, "hpcinit: --lock-timeout: %s is out of range; use a duration from 0s to 24h\n",
					optarg);
				return EXIT_USAGE;
			case -EDOM:
				fprintf(stderr, "hpcinit: --lock-timeout: expected a duration like 90s or 10m, got '%s'; "
					"add a unit: ms, s, m or h\n", optarg);
				return EXIT_USAGE;
			default:
				fprintf(stderr, "hpcinit: --lock-timeout: expected a duration like 90s or 10m, got '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'K':
			o->c.kernel_release = optarg;
			break;
		case 'H':
			o->c.hostname = optarg;
			break;
		case 'v':
			o->c.verbose++;
			break;
		case 'h':
			usage(stdout);
			return EXIT_READY;
		case 'V':
			printf("hpcinit %s\n", PACKAGE_VERSION);
			return EXIT_READY;
		default:
			fputs("Try 'hpcinit --help'.\n", stderr);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* The commands that are not one run of the steps: watch and leave (watch.c), members (members.c). */
static int own_command(struct cli *o)
{
	if (strcmp(o->command, "watch") == 0)
		return watch_main(&o->c, &o->ro);
	if (strcmp(o->command, "leave") == 0)
		return runner_leave(&o->c, o->ro.lock_timeout_ms);
	return members_main(&o->c, o->json, stdout);
}

/* The run mode and default steps of a command that runs steps; -EINVAL for an unknown one. */
static int set_mode(struct cli *o)
{
	struct ctx *c = &o->c;

	if (strcmp(o->command, "apply") == 0) {
		c->mode = RUN_APPLY;
	} else if (strcmp(o->command, "check") == 0) {
		c->mode = RUN_CHECK;
		/* a whole check is the node's live state; --only is a look */
		o->ro.record_check = o->ro.only.n == 0;
		if (!o->lock_timeout_set)
			o->ro.lock_timeout_ms = CHECK_LOCK_TIMEOUT_MS;
	} else if (strcmp(o->command, "plan") == 0) {
		c->mode = RUN_PLAN;
	} else if (strcmp(o->command, "refresh") == 0) {
		c->mode = RUN_APPLY;
		c->refresh = true;
		if (o->ro.only.n == 0)
			split_list_known("discovery,ssh,hostfile", &o->ro.only);
	} else if (strcmp(o->command, "watch") == 0 || strcmp(o->command, "leave") == 0) {
		c->mode = RUN_APPLY;
		c->refresh = true;
		if (o->ro.only.n == 0)
			split_list_known("discovery,ssh,hostfile", &o->ro.only);
	} else if (strcmp(o->command, "members") == 0) {
		c->mode = RUN_CHECK;    /* members.c reads the rendezvous, writes nothing */
	} else if (strcmp(o->command, "verify") == 0) {
		c->mode = RUN_APPLY;
		c->verify = true;
		if (o->ro.only.n == 0)
			split_list_known("mpi", &o->ro.only);
	} else {
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli o = {
		.config = DEFAULT_CONFIG, .root = "", .command = "apply",
		.ro = { .lock_timeout_ms = 10 * MIN_MS },
	};
	struct ctx *cp = &o.c;
	struct spec *spec = NULL;
	struct run_result res;
	int code;

	code = parse_opts(argc, argv, &o);
	/* Options may also follow the command: "hpcinit apply --root X". */
	if (code < 0 && optind < argc) {
		o.command = argv[optind++];
		code = parse_opts(argc, argv, &o);
	}
	if (code >= 0) {
		strlist_free(&o.ro.only);
		return code;
	}
	if (strcmp(o.root, "/") == 0)
		o.root = "";
	if (o.root[0]) {
		struct stat st;

		if (stat(o.root, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "hpcinit: --root %s: not a directory (%s)\n", o.root,
				errno ? strerror(errno) : "not a directory");
			strlist_free(&o.ro.only);
			return EXIT_USAGE;
		}
	}
	cp->root = o.root;
	cp->json = o.json;

	if (strcmp(o.command, "validate") == 0) {
		int r;

		if (optind < argc)
			o.config = argv[optind++];
		if (optind < argc) {
			fprintf(stderr, "hpcinit: validate takes one file\n");
			return EXIT_USAGE;
		}
		r = load_spec(o.config, o.root, &spec);
		if (r < 0)
			return EXIT_USAGE;
		printf("%s: ok (cluster %s)\n", o.config, spec->cluster.name);
		spec_free(spec);
		return EXIT_READY;
	}
	if (optind < argc) {
		fprintf(stderr, "hpcinit: unexpected argument '%s'\nTry 'hpcinit --help'.\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (strcmp(o.command, "status") == 0)
		return status_command(cp, o.json, stdout);
	if (strcmp(o.command, "health") == 0)
		return health_main(cp, STDIN_FILENO, STDOUT_FILENO);
	if (set_mode(&o) < 0) {
		fprintf(stderr, "hpcinit: unknown command '%s'\nTry 'hpcinit --help'.\n", o.command);
		return EXIT_USAGE;
	}
	o.ro.command = o.command;
	if (runner_check_only(&o.ro.only) < 0) {
		strlist_free(&o.ro.only);
		return EXIT_USAGE;
	}
	if ((!o.root[0] && spec_file_refused(o.config)) || load_spec(o.config, o.root, &spec) < 0) {
		strlist_free(&o.ro.only);
		return EXIT_USAGE;
	}
	cp->spec = spec;
	/* syslog only for the real system: test runs on fake roots stay out of it. */
	log_init(cp->verbose, o.root[0] == '\0' || strcmp(o.root, "/") == 0);

	if (strcmp(o.command, "watch") == 0 || strcmp(o.command, "leave") == 0 || strcmp(o.command, "members") == 0) {
		code = own_command(&o);
		strlist_free(&o.ro.only);
		spec_free(spec);
		return code;
	}
	code = runner_run(cp, &o.ro, &res);
	if (cp->mode == RUN_APPLY)
		notify_run(o.command, &res, false);     /* hpcinit.service: its result in STATUS= */
	if (o.json) {
		char *j = runner_json(cp, &o.ro, &res);

		fputs(j, stdout);
		free(j);
	} else {
		runner_print_table(cp, &res, stdout);
	}
	run_result_free(&res);
	strlist_free(&o.ro.only);
	spec_free(spec);
	return code;
}
