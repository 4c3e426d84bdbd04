/*
 * How many inputs each task of a job carries (a map's chunk of them), for
 * its counts by input: a row per part of the job's tasks, as stored with
 * them (job_inputs), each task's count a little-endian u32. A job whose
 * tasks carry one input each has none.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "store/store_int.h"

int store_job_inputs_add(store *st, int64_t job, int64_t at, size_t n, const uint32_t *counts)
{
	sqlite3_stmt *s;
	uint8_t *blob = n ? malloc(n * 4) : NULL;

	if (!n)
		return CM_OK;
	if (!blob)
		return CM_ENOMEM;
	for (size_t i = 0; i < n; i++)
		cm_le32_put(blob + 4 * i, counts[i]);
	if (store__prepare(st, "INSERT INTO job_inputs(job, at, counts) VALUES(?, ?, ?)", &s) != CM_OK) {
		free(blob);
		return CM_EIO;
	}
	sqlite3_bind_int64(s, 1, job);
	sqlite3_bind_int64(s, 2, at);
	sqlite3_bind_blob(s, 3, blob, (int)(n * 4), free);
	return store__step_done(st, s);
}

int store_job_inputs_read(store *st, int64_t job, int64_t total, uint32_t *counts)
{
	sqlite3_stmt *s;
	int rc;

	memset(counts, 0, (size_t)total * sizeof(*counts));
	if (store__prepare(st, "SELECT at, counts FROM job_inputs WHERE job = ? ORDER BY at", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, job);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t at = sqlite3_column_int64(s, 0);
		const uint8_t *blob = sqlite3_column_blob(s, 1);
		int64_t n = sqlite3_column_bytes(s, 1) / 4;
		for (int64_t i = 0; i < n && at >= 0 && at + i < total; i++)
			counts[at + i] = cm_le32_get(blob + 4 * i);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_job_inputs_count(store *st, int64_t job, int64_t done, int64_t failed)
{
	sqlite3_stmt *s = NULL;

	if (store__kept(st, KEPT_JOB_INPUTS, "UPDATE jobs SET inputs_done = ?, inputs_failed = ? WHERE num = ?", &s) !=
	    CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, done);
	sqlite3_bind_int64(s, 2, failed);
	sqlite3_bind_int64(s, 3, job);
	return store__kept_done(st, s);
}
