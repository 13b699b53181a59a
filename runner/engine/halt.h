/*
 * halt.h - --halt, as GNU Parallel's: when enough tasks have failed (or
 * succeeded), stop the run: "soon" lets running tasks finish, "now" kills
 * them.  Forms: never, now,fail=N, soon,fail=N, now,fail=P%, soon,fail=P%,
 * now,success=N, soon,success=N (and P% for success).
 */
#ifndef COWRUN_HALT_H
#define COWRUN_HALT_H

#include <stddef.h>

enum halt_when { HALT_NEVER = 0, HALT_SOON, HALT_NOW };
enum halt_on { HALT_ON_FAIL, HALT_ON_SUCCESS };

struct halt_policy {
	enum halt_when when;
	enum halt_on on;
	long long threshold;  /* a count, or a percentage if percent */
	int percent;
};

/* Parse a --halt value.  Returns 0, or -1 with a reason in *why. */
int halt_parse(const char *text, struct halt_policy *h, const char **why);

/* Is the policy met with these counts out of `total` tasks? */
int halt_reached(const struct halt_policy *h, size_t failed, size_t succeeded, size_t total);

#endif
