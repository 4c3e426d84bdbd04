/* API authentication and cross-site checks; see auth.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/auth.h"

static int token_ok(const char *t, char *detail, size_t detail_len, const char *where)
{
	size_t n = strlen(t);

	if (n < AUTH_TOKEN_MIN || n >= AUTH_TOKEN_MAX) {
		snprintf(detail, detail_len, "the API token in %s must be %d to %d characters", where, AUTH_TOKEN_MIN,
		         AUTH_TOKEN_MAX - 1);
		return CM_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (t[i] < '!' || t[i] > '~') {
			snprintf(detail, detail_len, "the API token in %s holds a space or a non-ASCII character",
			         where);
			return CM_EINVAL;
		}
	}
	return CM_OK;
}

static int token_create(const char *path, char token[AUTH_TOKEN_MAX], char *detail, size_t detail_len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	char line[80];
	size_t len;

	if (fd < 0) {
		snprintf(detail, detail_len, "cannot create the token file %s: %s", path, strerror(errno));
		return CM_EIO;
	}
	cm_random_hex(token, 32);
	len = (size_t)snprintf(line, sizeof(line), "%s\n", token);
	if (write(fd, line, len) != (ssize_t)len || fsync(fd) != 0) {
		snprintf(detail, detail_len, "cannot write the token file %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return CM_EIO;
	}
	close(fd);
	return CM_OK;
}

int auth_token_load(const char *path, const char *env_token, char token[AUTH_TOKEN_MAX], int *created, char *detail,
                    size_t detail_len)
{
	struct stat sb;
	ssize_t n;
	int fd;

	*created = 0;
	if (env_token && env_token[0]) {
		snprintf(token, AUTH_TOKEN_MAX, "%s", env_token);
		return token_ok(token, detail, detail_len, "STRAND_TOKEN");
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		int err = token_create(path, token, detail, detail_len);
		*created = err == CM_OK;
		return err;
	}
	if (fd < 0) {
		snprintf(detail, detail_len, "cannot open the token file %s: %s", path, strerror(errno));
		return CM_EIO;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (sb.st_mode & 077)) {
		snprintf(detail, detail_len,
		         "the token file %s must be a regular file only its owner can read (chmod 600)", path);
		close(fd);
		return CM_EINVAL;
	}
	n = read(fd, token, AUTH_TOKEN_MAX - 1);
	close(fd);
	if (n < 0) {
		snprintf(detail, detail_len, "cannot read the token file %s: %s", path, strerror(errno));
		return CM_EIO;
	}
	token[n] = '\0';
	while (n > 0 && (token[n - 1] == '\n' || token[n - 1] == '\r'))
		token[--n] = '\0';
	return token_ok(token, detail, detail_len, path);
}

int auth_token_equal(const char *token, const char *presented)
{
	size_t n = strlen(token);

	return presented && strlen(presented) == n && cm_secret_equal(token, presented, n);
}

const char *auth_bearer(const char *header)
{
	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return NULL;
	header += 7;
	while (*header == ' ')
		header++;
	return header[0] ? header : NULL;
}

/* Splits "NAME[:PORT]" or "[V6][:PORT]" into name (without brackets);
 * returns 0 when malformed. */
static int host_name(const char *host, char *name, size_t name_len, int *bracketed)
{
	const char *end;
	size_t n;

	*bracketed = host[0] == '[';
	if (*bracketed) {
		end = strchr(host, ']');
		if (!end || (end[1] && end[1] != ':'))
			return 0;
		host++;
	} else {
		end = strchr(host, ':');
		if (!end)
			end = host + strlen(host);
	}
	n = (size_t)(end - host);
	if (n == 0 || n >= name_len)
		return 0;
	if (*end == ':' || (end[0] == ']' && end[1] == ':')) {
		const char *port = strchr(end, ':') + 1;
		if (!port[0] || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
			return 0;
	}
	memcpy(name, host, n);
	name[n] = '\0';
	return 1;
}

int auth_host_allowed(const char *host, const char *public_hosts)
{
	char name[256];
	unsigned char addr[16];
	int bracketed;
	const char *p;

	if (!host || !host_name(host, name, sizeof(name), &bracketed))
		return 0;
	if (bracketed)
		return inet_pton(AF_INET6, name, addr) == 1;
	if (inet_pton(AF_INET, name, addr) == 1 || strcasecmp(name, "localhost") == 0)
		return 1;
	for (p = public_hosts; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == strlen(name) && strncasecmp(p, name, n) == 0)
			return 1;
		p = comma ? comma + 1 : p + n;
	}
	return 0;
}

int auth_origin_same(const char *origin, const char *host)
{
	const char *rest;

	if (!origin || !host)
		return 0;
	if (strncasecmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	else
		return 0;
	return strcasecmp(rest, host) == 0;
}

int auth_content_type_is(const char *content_type, const char *type)
{
	size_t n = strlen(type);

	if (!content_type || strncasecmp(content_type, type, n) != 0)
		return 0;
	return content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ';
}
