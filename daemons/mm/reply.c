/* The one way the MM answers a control request: a Reply of this
 * protocol version whose body is one message of its oneof. */
#include "mm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void reply_send(struct mm *mm, struct client *c, Storm__Ctl__Reply__BodyCase kind,
		const void *body)
{
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(&storm__ctl__reply__descriptor, (unsigned)kind);
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
		slog("internal error: no reply body numbered %d", (int)kind);
		client_close(mm, c);
		return;
	}
	r.version = PROTO_VERSION;
	r.body_case = kind;
	/* the body's slot in the oneof, found as protobuf-c's own code does */
	memcpy((char *)&r + f->offset, &body, sizeof(body));
	size_t len = storm__ctl__reply__get_packed_size(&r);
	uint8_t *packed = malloc(len ? len : 1);
	if (!packed) {
		client_close(mm, c);
		return;
	}
	storm__ctl__reply__pack(&r, packed);
	client_send(mm, c, packed, len);
	free(packed);
}

void reply_error(struct mm *mm, struct client *c, Storm__Ctl__ErrorCode code, const char *fmt,
		 ...)
{
		 char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	Storm__Ctl__Error e = STORM__CTL__ERROR__INIT;
	e.code = code;
	e.message = msg;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_ERROR, &e);
}
