/*
 * Blobs on disk (code packages, values): stored whole under the SHA-256 of
 * their bytes, or not at all (a wrong name, an upload over a cap, one cut
 * off, the temporary files of a stop), read back in pieces, counted
 * against a total, removed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/blob_store.h"

/* sha256("abc"), the standard's own example */
#define ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static char dir[] = "/tmp/strand-code-store-XXXXXX";

/* The files in the folder, names joined by spaces. */
static void listing(char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t at = 0;

	out[0] = '\0';
	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			at += (size_t)snprintf(out + at, len - at, "%s%s", at ? " " : "", e->d_name);
	closedir(d);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/strand-code-store-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_sha256_names(void **state)
{
	cm_sha256 h;
	char hex[CM_SHA256_HEX + 1];

	(void)state;
	cm_sha256_init(&h);
	cm_sha256_update(&h, "a", 1);
	cm_sha256_update(&h, "bc", 2);
	cm_sha256_hex(&h, hex);
	assert_string_equal(hex, ABC);
	assert_true(cm_sha256_name_valid(ABC));
	assert_false(cm_sha256_name_valid("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
	assert_false(cm_sha256_name_valid(ABC "0"));
	assert_false(cm_sha256_name_valid("../" ABC));
	assert_false(cm_sha256_name_valid(""));
	assert_false(cm_sha256_name_valid(NULL));
}

/* HMAC-SHA-256 by RFC 4231's cases 2 and 6 (a key longer than a block). */
static void test_hmac(void **state)
{
	char hex[CM_SHA256_HEX + 1], key[131];

	(void)state;
	cm_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, hex);
	assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, sizeof(key));
	cm_hmac_sha256_hex(key, sizeof(key), "Test Using Larger Than Block-Size Key - Hash Key First", 54, hex);
	assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* A reference to a value is exactly {"$value":"SHA256"}; nothing else is. */
static void test_value_refs(void **state)
{
	static const char ref[] = "{\"$value\":\"" ABC "\"}";
	char sha[CM_SHA256_HEX + 1];

	(void)state;
	assert_int_equal(strlen(ref), CM_VALUE_REF_LEN);
	assert_true(cm_value_ref(ref, strlen(ref), sha));
	assert_string_equal(sha, ABC);
	assert_false(cm_value_ref(ref, strlen(ref) - 1, sha));
	assert_false(cm_value_ref("{\"$value\": \"" ABC "\"}", strlen(ref) + 1, sha));
	assert_false(cm_value_ref("{\"$valux\":\"" ABC "\"}", strlen(ref), sha));
	static const char upper[] = "{\"$value\":\"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\"}";
	assert_false(cm_value_ref(upper, strlen(upper), sha));
	assert_false(cm_value_ref("\"abc\"", 5, sha));
}

static void test_stored_in_parts_and_read_back(void **state)
{
	blob_store *s;
	blob_upload *u;
	char detail[256], names[512], buf[8];
	int64_t size = 0;
	size_t got;

	(void)state;
	assert_int_equal(blob_store_open(dir, &blob_kind_code, 100, 0, &s, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_store_stat(s, ABC, &size), CM_ENOENT);
	assert_int_equal(blob_upload_begin(s, ABC, -1, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "a", 1, detail, sizeof(detail)), CM_OK);
	/* Until it is whole, it is not there. */
	assert_int_equal(blob_store_stat(s, ABC, &size), CM_ENOENT);
	assert_int_equal(blob_upload_write(u, "bc", 2, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_finish(u, &size, detail, sizeof(detail)), CM_OK);
	assert_int_equal(size, 3);
	assert_int_equal(blob_store_stat(s, ABC, &size), CM_OK);
	assert_int_equal(size, 3);
	listing(names, sizeof(names));
	assert_string_equal(names, ABC);

	/* In pieces, from any offset; nothing past its end. */
	assert_int_equal(blob_store_read(s, ABC, 1, buf, 1, &got, &size), CM_OK);
	assert_int_equal(got, 1);
	assert_int_equal(size, 3);
	assert_memory_equal(buf, "b", 1);
	assert_int_equal(blob_store_read(s, ABC, 0, buf, sizeof(buf), &got, &size), CM_OK);
	assert_int_equal(got, 3);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(blob_store_read(s, ABC, 3, buf, sizeof(buf), &got, &size), CM_OK);
	assert_int_equal(got, 0);
	assert_int_equal(blob_store_read(s, "0000000000000000000000000000000000000000000000000000000000000000", 0, buf,
	                                 sizeof(buf), &got, &size),
	                 CM_ENOENT);
	assert_int_equal(blob_store_read(s, "../../etc/passwd", 0, buf, sizeof(buf), &got, &size), CM_EINVAL);

	/* The same bytes again: still one package. */
	assert_int_equal(blob_upload_begin(s, ABC, -1, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "abc", 3, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_finish(u, &size, detail, sizeof(detail)), CM_OK);
	listing(names, sizeof(names));
	assert_string_equal(names, ABC);
	blob_store_free(s);
}

static void test_refused_uploads_leave_nothing(void **state)
{
	blob_store *s;
	blob_upload *u;
	char detail[256], names[512], big[101];
	int64_t size;

	(void)state;
	assert_int_equal(blob_store_open(dir, &blob_kind_code, 100, 0, &s, detail, sizeof(detail)), CM_OK);
	/* Not a name. */
	assert_int_equal(blob_upload_begin(s, "latest", -1, &u, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "64 lowercase hex digits"));
	/* Other bytes than its name says. */
	assert_int_equal(blob_upload_begin(s, "1111111111111111111111111111111111111111111111111111111111111111", -1,
	                                   &u, detail, sizeof(detail)),
	                 CM_OK);
	assert_int_equal(blob_upload_write(u, "abc", 3, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_finish(u, &size, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "the body's SHA-256 is " ABC
	                            ", not the 1111111111111111111111111111111111111111111111111111111111111111 its "
	                            "path names");
	/* Over the cap: refused at the byte that passes it. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(blob_upload_begin(s, ABC, -1, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, big, 100, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, big, 1, detail, sizeof(detail)), CM_ETOOBIG);
	assert_string_equal(detail, "a code package is over the gateway's 100 byte cap (--max-code-bytes)");
	blob_upload_abort(u);
	listing(names, sizeof(names));
	assert_string_equal(names, "");

	/* Cut off by a stop (a process that dies midway, neither finishing nor
	 * aborting): its temporary file goes at the next open. */
	blob_store_free(s);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		if (blob_store_open(dir, &blob_kind_code, 100, 0, &s, detail, sizeof(detail)) != CM_OK ||
		    blob_upload_begin(s, ABC, -1, &u, detail, sizeof(detail)) != CM_OK ||
		    blob_upload_write(u, "ab", 2, detail, sizeof(detail)) != CM_OK)
			_exit(1);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	listing(names, sizeof(names));
	assert_int_equal(strncmp(names, ".upload-", 8), 0);
	assert_int_equal(blob_store_open(dir, &blob_kind_code, 100, 0, &s, detail, sizeof(detail)), CM_OK);
	listing(names, sizeof(names));
	assert_string_equal(names, "");
	blob_store_free(s);
}

/* The values' total: every blob held and every upload's bytes so far,
 * counted again at each open; one past it is refused by its length, or at
 * the byte that passes it; removing gives room back. */
static void test_total_cap(void **state)
{
	blob_store *s;
	blob_upload *u;
	char detail[256], buf[8];
	int64_t size;
	int fd;

	(void)state;
	assert_int_equal(blob_store_open(dir, &blob_kind_value, 100, 6, &s, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_begin(s, ABC, 3, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "abc", 3, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_finish(u, &size, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_store_total(s), 3);
	/* The same blob again is counted once, once stored. */
	assert_int_equal(blob_upload_begin(s, ABC, 0, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "abc", 2, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "c", 1, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_finish(u, &size, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_store_total(s), 3);
	blob_store_free(s);
	assert_int_equal(blob_store_open(dir, &blob_kind_value, 100, 6, &s, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_store_total(s), 3);
	/* By its length, before a byte. */
	assert_int_equal(blob_upload_begin(s, ABC, 4, &u, detail, sizeof(detail)), CM_EQUOTA);
	assert_string_equal(detail,
	                    "the gateway holds 6 bytes of values at most (--max-values-total): remove some first");
	assert_int_equal(blob_upload_begin(s, ABC, 101, &u, detail, sizeof(detail)), CM_ETOOBIG);
	assert_string_equal(detail, "the value's 101 bytes are over the gateway's 100 byte cap (--max-value-bytes)");
	/* Unknown length: at the byte that passes it, and the room comes back. */
	assert_int_equal(blob_upload_begin(s, ABC, -1, &u, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "abc", 3, detail, sizeof(detail)), CM_OK);
	assert_int_equal(blob_upload_write(u, "d", 1, detail, sizeof(detail)), CM_EQUOTA);
	assert_string_equal(detail,
	                    "the gateway holds 6 bytes of values at most (--max-values-total): remove some first");
	blob_upload_abort(u);
	assert_int_equal(blob_store_total(s), 3);
	/* Read whole through a descriptor, then removed. */
	assert_int_equal(blob_store_open_blob(s, ABC, &fd, &size), CM_OK);
	assert_int_equal(size, 3);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "abc", 3);
	close(fd);
	assert_int_equal(blob_store_remove(s, ABC), CM_OK);
	assert_int_equal(blob_store_total(s), 0);
	assert_int_equal(blob_store_remove(s, ABC), CM_ENOENT);
	assert_int_equal(blob_store_open_blob(s, ABC, &fd, &size), CM_ENOENT);
	assert_int_equal(blob_store_remove(s, "../x"), CM_EINVAL);
	blob_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sha256_names),
	        cmocka_unit_test(test_hmac),
	        cmocka_unit_test(test_value_refs),
	        cmocka_unit_test_setup_teardown(test_stored_in_parts_and_read_back, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_uploads_leave_nothing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_total_cap, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
