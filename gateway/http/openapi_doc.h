/*
 * openapi_doc: gateway/http/openapi.json (OpenAPI 3.1, every route, body and
 * problem), built into the gateway and served at GET /v1/openapi.json.
 */
#ifndef GATEWAY_HTTP_OPENAPI_DOC_H
#define GATEWAY_HTTP_OPENAPI_DOC_H

#include <stddef.h>

extern const unsigned char openapi_doc[]; /* NUL-terminated */
extern const size_t openapi_doc_len;

#endif
