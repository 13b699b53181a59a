/*
 * fuzz_proto.c - libFuzzer harness for the serve/submit message decoders
 * (runner/serve/proto.c): proto_decode_request() and proto_decode_reply() on
 * any bytes, as the master reads what a local client sent.
 *
 * Input: byte 0 picks the decoder (even: request, odd: reply); the rest
 * is the message.  A message either decoder takes must encode back to the
 * same fields, and decode again to the same: a request's fields in tag
 * order, each NUL-free and shorter than PROTO_FIELD_MAX; a reply's type,
 * status and text.  Anything else must be refused with a reason.
 *
 * Build and run: make fuzz (see the Makefile); seeds in corpus/proto/.
 */
#include "serve/proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct proto_request rq, again;
static struct proto_reply rp, rp_again;
static unsigned char out[PROTO_MSG_MAX];

static void check_request(const uint8_t *data, size_t size)
{
	const char *why = NULL;

	if (proto_decode_request(data, size, &rq, &why) != 0) {
		if (why == NULL)
			abort();
		return;
	}
	for (unsigned f = 0; f < PF_COUNT; f++)
		if (strlen(rq.field[f]) >= PROTO_FIELD_MAX ||
		    (!(rq.present & (1u << f)) && rq.field[f][0] != '\0'))
			abort();
	long len = proto_encode_request(&rq, out, sizeof out);
	/* Fields re-encoded in tag order: the same length, maybe reordered. */
	if (len != (long)size || proto_decode_request(out, (size_t)len, &again, &why) != 0 ||
	    again.type != rq.type || again.present != rq.present ||
	    memcmp(again.field, rq.field, sizeof rq.field) != 0)
		abort();
}

static void check_reply(const uint8_t *data, size_t size)
{
	const char *why = NULL;

	if (proto_decode_reply(data, size, &rp, &why) != 0) {
		if (why == NULL)
			abort();
		return;
	}
	long len = proto_encode_reply(&rp, out, sizeof out);
	if (len != (long)size || memcmp(out, data, size) != 0 ||
	    proto_decode_reply(out, (size_t)len, &rp_again, &why) != 0 ||
	    rp_again.status != rp.status || strcmp(rp_again.text, rp.text) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		check_request(data + 1, size - 1);
	else
		check_reply(data + 1, size - 1);
	return 0;
}
