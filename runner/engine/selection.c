/*
 * selection.c - --tasks LIST and --shard k/M.  See selection.h.
 */
#include "selection.h"
#include "os/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parse one "N" or "A-B" item ending at ',' or NUL; advance *text past it. */
static int parse_item(const char **text, long long *lo, long long *hi)
{
	char *end;
	const char *p = *text;

	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*lo = *hi = strtoll(p, &end, 10);
	if (*end == '-') {
		p = end + 1;
		if (*p < '0' || *p > '9')
			return -1;
		*hi = strtoll(p, &end, 10);
	}
	if (errno == ERANGE || *hi < *lo || (*end != ',' && *end != '\0'))
		return -1;
	*text = *end == ',' ? end + 1 : end;
	return 0;
}

int selection_check_list(const char *text, const char **why)
{
	long long lo, hi;

	*why = "expected task numbers and ranges like 0-9,17";
	if (*text == '\0')
		return -1;
	while (*text != '\0')
		if (parse_item(&text, &lo, &hi) != 0)
			return -1;
	/* A trailing comma leaves an empty last item. */
	return text[-1] == ',' ? -1 : 0;
}

int selection_parse_shard(const char *text, struct selection *sel, const char **why)
{
	char k[32];
	const char *slash = strchr(text, '/');

	*why = "expected k/M with 0 <= k < M, e.g. 0/4";
	if (slash == NULL || (size_t)(slash - text) >= sizeof k)
		return -1;
	memcpy(k, text, (size_t)(slash - text));
	k[slash - text] = '\0';
	if (parse_ll(k, 0, 1000000, &sel->shard) != 0 ||
	    parse_ll(slash + 1, 1, 1000000, &sel->shards) != 0 || sel->shard >= sel->shards)
		return -1;
	return 0;
}

int selection_active(const struct selection *sel)
{
	return sel->list != NULL || sel->shards > 0;
}

/* Mark the --tasks list in `chosen`.  Returns 0 or -1 after a message. */
static int mark_list(const char *text, size_t ntasks, unsigned char *chosen)
{
	long long lo, hi;

	while (*text != '\0') {
		parse_item(&text, &lo, &hi); /* syntax checked at parse time */
		if ((unsigned long long)hi >= ntasks) {
			if (ntasks == 0)
				warnx_("--tasks: task %lld does not exist (there are no tasks)", hi);
			else
				warnx_("--tasks: task %lld does not exist (%zu tasks: 0-%zu)",
				       hi, ntasks, ntasks - 1);
			return -1;
		}
		memset(chosen + lo, 1, (size_t)(hi - lo + 1));
	}
	return 0;
}

int selection_resolve(const struct selection *sel, size_t ntasks,
		      size_t **tasks, size_t *count)
{
	unsigned char *chosen = malloc(ntasks + 1);
	size_t n = 0;

	*tasks = malloc((ntasks + 1) * sizeof **tasks);
	if (chosen == NULL || *tasks == NULL) {
		warnx_("out of memory selecting among %zu tasks", ntasks);
		goto fail;
	}
	memset(chosen, sel->list == NULL, ntasks);
	if (sel->list && mark_list(sel->list, ntasks, chosen) != 0)
		goto fail;
	for (size_t k = 0; k < ntasks; k++)
		if (chosen[k] && (sel->shards == 0 || (long long)(k % (size_t)sel->shards) == sel->shard))
			(*tasks)[n++] = k;
	free(chosen);
	*count = n;
	return 0;
fail:
	free(chosen);
	free(*tasks);
	*tasks = NULL;
	return -1;
}
