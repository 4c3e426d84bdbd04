/*
 * Task function names: the syntax both sides agree on. The gateway refuses a
 * bad name with 422 before anything is queued; the worker resolves the name.
 * Whether a plugin library or symbol exists can only be known on the worker,
 * so that failure arrives later, as a failed task.
 */
#include <stdio.h>
#include <string.h>

#include "common/common.h"

const char *const cm_builtin_functions[] = {"noop", "echo", "sleep", "pi", "fail", "crash", NULL};

const char *cm_function_builtin_name(const char *name)
{
	return strncmp(name, "builtin:", 8) == 0 ? name + 8 : name;
}

static int is_ident(const char *s, size_t n)
{
	if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

static int is_library_name(const char *s, size_t n)
{
	/* A bare file name: no slash, so a task cannot load a library from
	 * outside the plugin path. */
	if (n < 4 || n > 128 || memcmp(s + n - 3, ".so", 3) != 0 || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

int cm_function_check_request(const char *name, char *detail, size_t detail_len)
{
	if (strcmp(name, "manager") == 0) {
		snprintf(detail, detail_len,
		         "function 'manager' is reserved: call a manager with POST /v1/managers/{id}/calls");
		return CM_EUNSUPPORTED;
	}
	return cm_function_check(name, detail, detail_len);
}

int cm_function_check(const char *name, char *detail, size_t detail_len)
{
	const char *colon;
	const char *bare;

	if (strcmp(name, "exec") == 0 || strcmp(name, "manager") == 0)
		return CM_OK; /* reserved: a command per task; a call to a hosted manager */
	if (strncmp(name, "rt:", 3) == 0) {
		/* The runtime's to resolve (a Python "module:qualname"): any
		 * printable ASCII, bounded, as it travels in one frame. */
		size_t n = strlen(name + 3);
		int printable = n > 0 && n <= CM_RUNTIME_FUNCTION_MAX;
		for (size_t i = 0; printable && i < n; i++)
			printable = name[3 + i] > ' ' && name[3 + i] < 0x7f;
		if (!printable) {
			snprintf(detail, detail_len,
			         "function '%.100s': a runtime's function is rt: and 1 to %d printable characters, no "
			         "spaces",
			         name, CM_RUNTIME_FUNCTION_MAX);
			return CM_EUNSUPPORTED;
		}
		return CM_OK;
	}
	colon = strchr(name, ':');
	if (colon && strncmp(name, "builtin:", 8) != 0) {
		if (!is_library_name(name, (size_t)(colon - name)) || !is_ident(colon + 1, strlen(colon + 1))) {
			snprintf(detail, detail_len,
			         "function '%.100s' is not LIB.so:SYMBOL (a plain .so file name and a C identifier)",
			         name);
			return CM_EUNSUPPORTED;
		}
		return CM_OK;
	}
	bare = cm_function_builtin_name(name);
	for (size_t i = 0; cm_builtin_functions[i]; i++)
		if (strcmp(bare, cm_builtin_functions[i]) == 0)
			return CM_OK;
	snprintf(detail, detail_len,
	         "unknown function '%.100s': use a builtin (noop, echo, sleep, pi, fail, crash), LIB.so:SYMBOL, "
	         "rt:NAME or exec",
	         name);
	return CM_EUNSUPPORTED;
}
