/*
 * halt.c - parse and evaluate --halt.  See halt.h.
 */
#include "halt.h"
#include "os/util.h"

#include <string.h>

int halt_parse(const char *text, struct halt_policy *h, const char **why)
{
	char number[32];

	memset(h, 0, sizeof *h);
	*why = "expected never, now,fail=N, soon,fail=N, now,fail=P% or soon,success=N";
	if (strcmp(text, "never") == 0)
		return 0;
	if (strncmp(text, "now,", 4) == 0)
		h->when = HALT_NOW, text += 4;
	else if (strncmp(text, "soon,", 5) == 0)
		h->when = HALT_SOON, text += 5;
	else
		return -1;
	if (strncmp(text, "fail=", 5) == 0)
		h->on = HALT_ON_FAIL, text += 5;
	else if (strncmp(text, "success=", 8) == 0)
		h->on = HALT_ON_SUCCESS, text += 8;
	else
		return -1;
	size_t len = strlen(text);
	if (len == 0 || len >= sizeof number)
		return -1;
	memcpy(number, text, len + 1);
	if (number[len - 1] == '%') {
		h->percent = 1;
		number[len - 1] = '\0';
	}
	if (parse_ll(number, 1, h->percent ? 100 : 1000000000, &h->threshold) != 0) {
		*why = h->percent ? "the percentage must be 1-100" : "the count must be at least 1";
		return -1;
	}
	return 0;
}

int halt_reached(const struct halt_policy *h, size_t failed, size_t succeeded, size_t total)
{
	size_t count = h->on == HALT_ON_FAIL ? failed : succeeded;

	if (h->when == HALT_NEVER || total == 0)
		return 0;
	if (h->percent)
		return count * 100 >= (size_t)h->threshold * total;
	return count >= (size_t)h->threshold;
}
