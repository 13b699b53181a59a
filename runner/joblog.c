/*
 * joblog.c - the GNU Parallel-format joblog.  See joblog.h.
 */
#define _GNU_SOURCE
#include "joblog.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JOBLOG_HEADER "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

int joblog_open(struct joblog *j, const char *path)
{
	int append = path[0] == '+';
	struct stat st;

	if (append)
		path++;
	j->epoch_minus_monotonic = epoch_seconds() - (double)now_ns() / 1e9;
	j->f = fopen(path, append ? "ae" : "we");
	if (j->f == NULL) {
		warnx_("--joblog: cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(j->f), &st) == 0 && st.st_size == 0)
		fputs(JOBLOG_HEADER, j->f);
	if (fflush(j->f) != 0) {
		warnx_("--joblog: cannot write '%s': %s", path, strerror(errno));
		fclose(j->f);
		j->f = NULL;
		return -1;
	}
	return 0;
}

void joblog_write(struct joblog *j, const struct attempt *a, const char *workload,
		  const char *name)
{
	if (j == NULL || j->f == NULL)
		return;
	double start = (double)a->start_ns / 1e9 + j->epoch_minus_monotonic;
	double runtime = a->end_ns > a->start_ns ? (double)(a->end_ns - a->start_ns) / 1e9 : 0.0;
	fprintf(j->f, "%zu\t:\t%.3f\t%10.3f\t0\t%zu\t%d\t%d\t%s %s\n", a->task + 1, start,
		runtime, a->received, a->exitval, a->signal, workload, name);
	/* Flushed per line: a parent that dies loses no finished attempt. */
	fflush(j->f);
}

/* The Command field (the 9th) of a joblog line, or NULL. */
static const char *command_field(const char *line)
{
	for (int tabs = 0; tabs < 8; tabs++) {
		line = strchr(line, '\t');
		if (line == NULL)
			return NULL;
		line++;
	}
	return line;
}

int joblog_check_workload(const char *path, const char *workload)
{
	if (path[0] == '+')
		path++;
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, len = strlen(workload);
	int rc = 0, lineno = 0;

	if (f == NULL)
		return 0;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		if (++lineno == 1)
			continue; /* the header */
		const char *command = command_field(line);
		if (command == NULL || strncmp(command, workload, len) != 0 || command[len] != ' ') {
			warnx_("--joblog: '%s' line %d is not a %s task: this joblog is another workload's",
			       path, lineno, workload);
			rc = -1;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

int joblog_close(struct joblog *j)
{
	if (j->f == NULL)
		return 0;
	int rc = ferror(j->f) | fclose(j->f);
	j->f = NULL;
	if (rc != 0)
		warnx_("--joblog: a write failed: the joblog is incomplete");
	return rc ? -1 : 0;
}
