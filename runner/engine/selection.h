/*
 * selection.h - which tasks a run executes: --tasks LIST and --shard k/M.
 */
#ifndef COWRUN_SELECTION_H
#define COWRUN_SELECTION_H

#include <stddef.h>

struct selection {
	const char *list;      /* --tasks "0-9,17", or NULL */
	long long shard, shards; /* --shard k/M: task i if i % M == k; M = 0: none */
};

/* Parse --shard "k/M" (0 <= k < M).  Returns 0 or -1 with a reason. */
int selection_parse_shard(const char *text, struct selection *sel, const char **why);

/* Check a --tasks list's syntax ("N" or "A-B" items, commas between).
 * Returns 0 or -1 with a reason. */
int selection_check_list(const char *text, const char **why);

/*
 * The ascending, distinct task indices both --tasks and --shard allow,
 * out of ntasks.  Returns 0 with a malloc'd array in *tasks (the caller
 * frees it) and its length in *count; or -1 after a message naming a task
 * that does not exist, or ENOMEM.
 */
int selection_resolve(const struct selection *sel, size_t ntasks,
		      size_t **tasks, size_t *count);

/* True if sel selects anything less than every task. */
int selection_active(const struct selection *sel);

#endif
