/*
 * workmsg.c - the workload's messages: cowrun_error(), cowrun_verbosity()
 * (see workmsg.h for why they live in os/).
 */
#define _GNU_SOURCE
#include "workmsg.h"
#include "cowrun.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *current_workload = "cowrun";
/* cowrun_error()'s calls in this process: how the dry run tells a plan()
 * that refused its options from one that cannot name its tasks (both
 * return NULL, and the ABI 3 member has no other way to say which). */
static unsigned long errors_reported;
static int verbosity;

void workmsg_set_workload(const char *name)
{
	current_workload = name;
}

void workmsg_set_verbosity(int verbose)
{
	verbosity = verbose;
}

int cowrun_verbosity(void)
{
	return verbosity;
}

void cowrun_error(const char *fmt, ...)
{
	char *message = NULL;
	va_list ap;

	errors_reported++;
	va_start(ap, fmt);
	int n = vasprintf(&message, fmt, ap);
	va_end(ap);
	/* Whole, however long: warnx_() shortens the values it quotes. */
	warnx_("%s: %s", current_workload, n < 0 ? fmt : message);
	if (n >= 0)
		free(message);
}

unsigned long workmsg_errors_reported(void)
{
	return errors_reported;
}
