/* The engine's items by id; see id_table.h. */
#include "gateway/engine/id_table.h"

#include <string.h>

unsigned engine__id_hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

void id_table_add(id_link **table, size_t buckets, id_link *l, const char *id)
{
	id_link **head = &table[engine__id_hash(id) % buckets];

	l->id = id;
	l->next = *head;
	*head = l;
}

void id_table_remove(id_link **table, size_t buckets, id_link *l)
{
	for (id_link **at = &table[engine__id_hash(l->id) % buckets]; *at; at = &(*at)->next)
		if (*at == l) {
			*at = l->next;
			return;
		}
}

id_link *id_table_find(id_link *const *table, size_t buckets, const char *id)
{
	for (id_link *l = table[engine__id_hash(id) % buckets]; l; l = l->next)
		if (strcmp(l->id, id) == 0)
			return l;
	return NULL;
}
