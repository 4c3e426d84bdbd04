/*
 * The engine's items by id: jobs, pools, processes and queues, each found
 * by a request's id without a walk of all of them (ended ones stay for
 * --retain). A table is a fixed array of buckets, each a chain through the
 * items' own id_link (named by_id), so adding and removing allocate
 * nothing. Ids are the gateway's own, random: FNV-1a spreads them.
 */
#ifndef GATEWAY_ENGINE_ID_TABLE_H
#define GATEWAY_ENGINE_ID_TABLE_H

#include <stddef.h>

typedef struct id_link {
	struct id_link *next;
	const char *id; /* the item's own */
} id_link;

unsigned engine__id_hash(const char *id); /* FNV-1a */
void id_table_add(id_link **table, size_t buckets, id_link *l, const char *id);
void id_table_remove(id_link **table, size_t buckets, id_link *l);
id_link *id_table_find(id_link *const *table, size_t buckets, const char *id);

/* The item of type whose by_id is link (not NULL). */
#define ID_TABLE_ITEM(link, type) ((type *)(void *)((char *)(link)-offsetof(type, by_id)))

#endif
