/*
 * route_table: every route the API answers, as a path template ("{id}" for
 * a segment that names something). Requests are counted by template
 * (GET /metrics), so a label never carries an id; and the table is what
 * the API's description is checked against.
 */
#ifndef GATEWAY_HTTP_ROUTE_TABLE_H
#define GATEWAY_HTTP_ROUTE_TABLE_H

#include <stddef.h>

typedef struct api_route {
	const char *path; /* "/v1/pools/{id}/map" */
	const char *methods; /* "GET POST": those it answers with anything but 405 */
	const char *note; /* said with a 405 after the usage, or NULL */
} api_route;

extern const api_route route_table[];
extern const size_t route_count;

/* The index in route_table of the template url matches (its query left
 * out), or route_count when none does. */
size_t route_find(const char *url);
/* Whether the route answers method (HEAD where it answers GET). */
int route_allows(size_t route, const char *method);
/* For a 405: "use GET or DELETE on /v1/queues/{id}", and the Allow
 * header's value ("GET, DELETE"). */
void route_usage(size_t route, char *detail, size_t detail_len, char *allow, size_t allow_len);

#endif
