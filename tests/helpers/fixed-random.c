/*
 * fixed-random.c - an LD_PRELOAD shim whose getrandom() returns zeros, so
 * a test can predict the "unpredictable" part of cowrun's temporary names
 * (random_tag()) and plant symbolic links under exactly those names.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

ssize_t getrandom(void *buf, size_t length, unsigned int flags)
{
	(void)flags;
	memset(buf, 0, length);
	return (ssize_t)length;
}
