/*
 * The routes, and a match of a URL against their templates: segment by
 * segment, a "{...}" segment matching any one non-empty segment.
 */
#include "gateway/http/route_table.h"

#include <stdio.h>
#include <string.h>

const api_route route_table[] = {
        {"/", "GET"},
        {"/web/{file}", "GET"},
        {"/healthz", "GET"},
        {"/metrics", "GET"},
        {"/v1/openapi.json", "GET"},
        {"/v1/session", "GET POST DELETE"},
        {"/v1/events", "GET"},
        {"/v1/history", "GET"},
        {"/v1/leases", "GET POST"},
        {"/v1/leases/{id}", "GET DELETE"},
        {"/v1/leases/{id}/renew", "POST"},
        {"/v1/code", "GET"},
        {"/v1/code/{sha256}", "GET PUT"},
        {"/v1/values", "GET"},
        {"/v1/values/{sha256}", "GET PUT DELETE"},
        {"/v1/pools", "GET POST"},
        {"/v1/pools/{id}", "GET PATCH DELETE"},
        {"/v1/pools/{id}/map", "POST"},
        {"/v1/pools/{id}/apply", "POST"},
        {"/v1/pools/{id}/close", "POST"},
        {"/v1/pools/{id}/join", "POST"},
        {"/v1/join", "POST"},
        {"/v1/pools/{id}/jobs", "GET"},
        {"/v1/pools/{id}/logs", "GET"},
        {"/v1/jobs", "GET"},
        {"/v1/jobs/{id}", "GET DELETE"},
        {"/v1/jobs/{id}/args", "POST"},
        {"/v1/jobs/{id}/cancel", "POST"},
        {"/v1/jobs/{id}/results", "GET"},
        {"/v1/jobs/{id}/failures", "GET"},
        {"/v1/queues", "GET POST"},
        {"/v1/queues/{id}", "GET DELETE"},
        {"/v1/queues/{id}/items", "POST", "(take items with POST /v1/queues/{id}/take?max=&wait=)"},
        {"/v1/queues/{id}/take", "POST"},
        {"/v1/queues/{id}/holds/{hold}", "DELETE"},
        {"/v1/pipes", "GET POST"},
        {"/v1/pipes/{id}", "GET DELETE"},
        {"/v1/pipes/{id}/ends/{end}/send", "POST"},
        {"/v1/pipes/{id}/ends/{end}/recv", "POST"},
        {"/v1/pipes/{id}/ends/{end}/holds/{hold}", "DELETE"},
        {"/v1/managers", "GET POST"},
        {"/v1/managers/{id}", "GET DELETE"},
        {"/v1/managers/{id}/calls", "POST"},
        {"/v1/managers/{id}/calls/{call}", "GET"},
        {"/v1/managers/{id}/logs", "GET"},
        {"/v1/rings", "GET POST"},
        {"/v1/rings/{id}", "GET DELETE"},
        {"/v1/processes", "GET POST"},
        {"/v1/processes/{id}", "GET DELETE"},
        {"/v1/processes/{id}/logs", "GET"},
};
const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);

/* Whether url (up to its query) matches the template. */
static int matches(const char *tmpl, const char *url)
{
	for (;;) {
		if (*tmpl == '{') {
			const char *end = url;
			while (*end && *end != '/' && *end != '?')
				end++;
			if (end == url)
				return 0;
			url = end;
			tmpl = strchr(tmpl, '}') + 1;
			continue;
		}
		if (!*tmpl)
			return !*url || *url == '?';
		if (*tmpl != *url)
			return 0;
		tmpl++;
		url++;
	}
}

int route_allows(size_t route, const char *method)
{
	const char *m = route_table[route].methods;
	size_t n = strlen(method);

	if (strcmp(method, "HEAD") == 0)
		return route_allows(route, "GET");
	for (const char *at = strstr(m, method); at; at = strstr(at + 1, method))
		if ((at == m || at[-1] == ' ') && (at[n] == ' ' || !at[n]))
			return 1;
	return 0;
}

void route_usage(size_t route, char *detail, size_t detail_len, char *allow, size_t allow_len)
{
	const char *m = route_table[route].methods;
	size_t words = 1, at = 0;
	int d = snprintf(detail, detail_len, "use ");

	for (const char *c = m; *c; c++)
		words += *c == ' ';
	allow[0] = '\0';
	for (size_t i = 0; i < words; i++) {
		size_t len = strcspn(m + at, " ");
		const char *sep = i == 0 ? "" : i + 1 == words ? " or " : ", ";
		if (d >= 0 && (size_t)d < detail_len)
			d += snprintf(detail + d, detail_len - (size_t)d, "%s%.*s", sep, (int)len, m + at);
		size_t a = strlen(allow);
		snprintf(allow + a, allow_len - a, "%s%.*s", i ? ", " : "", (int)len, m + at);
		at += len + 1;
	}
	if (d >= 0 && (size_t)d < detail_len)
		snprintf(detail + d, detail_len - (size_t)d, " on %s%s%s", route_table[route].path,
		         route_table[route].note ? " " : "", route_table[route].note ? route_table[route].note : "");
}

size_t route_find(const char *url)
{
	for (size_t i = 0; i < route_count; i++)
		if (matches(route_table[i].path, url))
			return i;
	return route_count;
}
