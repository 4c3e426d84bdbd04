/*
 * A plugin for the tests: tasks that write and read files where a worker
 * runs, to show what its volumes are (a claim, an emptyDir, read-only).
 *   fp.so:write_file {"path": P, "text": T}   -> true, or an error naming errno
 *   fp.so:read_file  {"path": P}              -> the text, as a JSON string
 * Shapes are parsed by hand, as in queue_plugin.c: the tests send exactly
 * these, with no quotes or backslashes inside the strings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strand_plugin.h"

strand_plugin_fn write_file, read_file;

/* The string value of "key" in a flat object, as a new string. */
static char *field(const char *arg, const char *key)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	if (!(p = strstr(arg, pat)))
		return NULL;
	p += strlen(pat);
	end = strchr(p, '"');
	return end ? strndup(p, (size_t)(end - p)) : NULL;
}

static int failed(char **out, const char *what, const char *path)
{
	if (asprintf(out, "%s %s: %s", what, path ? path : "(no path)", strerror(errno)) < 0)
		*out = NULL;
	return 1;
}

int write_file(const char *arg, size_t arg_len, char **out)
{
	char *path = field(arg, "path"), *text = field(arg, "text");
	FILE *f = path && text ? fopen(path, "w") : NULL;
	int rc = 0;

	(void)arg_len;
	if (!f || fputs(text, f) < 0)
		rc = failed(out, "cannot write", path);
	if (f && fclose(f) != 0 && rc == 0)
		rc = failed(out, "cannot write", path);
	if (rc == 0)
		*out = strdup("true");
	free(path);
	free(text);
	return rc;
}

int read_file(const char *arg, size_t arg_len, char **out)
{
	char *path = field(arg, "path"), text[256] = "";
	FILE *f = path ? fopen(path, "r") : NULL;
	int rc = 0;

	(void)arg_len;
	if (!f) {
		rc = failed(out, "cannot read", path);
	} else {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		if (asprintf(out, "\"%s\"", text) < 0)
			*out = NULL;
	}
	free(path);
	return rc;
}
