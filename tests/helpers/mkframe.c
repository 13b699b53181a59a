/*
 * mkframe.c - print one wire frame (runner/files/wire.h) on stdout, with the
 * checksum the runner itself computes, for tests and fuzz seeds that
 * craft saved-results files and journals by hand.
 *
 *   mkframe TYPE TASK [PAYLOAD]      a valid frame (PAYLOAD: the bytes of
 *                                    the argument; none if left out)
 *   mkframe -l LENGTH TYPE TASK [PAYLOAD]
 *                                    its header claims LENGTH payload bytes
 *                                    (checksummed as claimed)
 *   mkframe -b TYPE TASK [PAYLOAD]   its checksum is wrong (one bit off)
 *   mkframe -s TYPE TASK             the payload is stdin (any bytes)
 *
 * TYPE and TASK are unsigned decimal numbers (TYPE up to 2^32-1).  Exits 0,
 * or 2 after a usage message.
 */
#include "files/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_u64(const char *text, uint64_t *out)
{
	char *end;

	errno = 0;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	*out = strtoull(text, &end, 10);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: mkframe [-b] [-l LENGTH] [-s] TYPE TASK [PAYLOAD]\n");
	return 2;
}

/* All of stdin, malloc'd, into *data and *size.  Returns 0 or -1. */
static int read_stdin(char **data, size_t *size)
{
	size_t cap = 4096, n;

	*size = 0;
	*data = malloc(cap);
	while (*data && (n = fread(*data + *size, 1, cap - *size, stdin)) > 0) {
		*size += n;
		if (*size == cap) {
			char *bigger = realloc(*data, cap *= 2);
			if (bigger == NULL)
				free(*data);
			*data = bigger;
		}
	}
	return *data && !ferror(stdin) ? 0 : -1;
}

int main(int argc, char **argv)
{
	int opt, bad = 0, claimed = 0, from_stdin = 0;
	uint64_t type, task, length = 0;

	while ((opt = getopt(argc, argv, "bl:s")) != -1) {
		if (opt == 'b')
			bad = 1;
		else if (opt == 's')
			from_stdin = 1;
		else if (opt == 'l' && parse_u64(optarg, &length) == 0)
			claimed = 1;
		else
			return usage();
	}
	if (argc - optind < 2 || argc - optind > 3 || parse_u64(argv[optind], &type) != 0 ||
	    type > UINT32_MAX || parse_u64(argv[optind + 1], &task) != 0)
		return usage();
	char *payload = argc - optind == 3 ? argv[optind + 2] : "";
	size_t size = strlen(payload);
	if (from_stdin && (argc - optind == 3 || read_stdin(&payload, &size) != 0))
		return usage();
	struct wire_header h = { (uint32_t)type, WIRE_MAGIC, task, claimed ? length : size, 0 };

	h.checksum = wire_checksum(&h, payload, size) ^ (uint64_t)bad;
	if (fwrite(&h, sizeof h, 1, stdout) != 1 ||
	    (size > 0 && fwrite(payload, size, 1, stdout) != 1) || fflush(stdout) != 0) {
		perror("mkframe");
		return 1;
	}
	return 0;
}
