/*
 * A results page of the gateway, read item by item (results_page.c says
 * why and how). Inside libstrand only.
 */
#ifndef CLIENT_RESULTS_PAGE_H
#define CLIENT_RESULTS_PAGE_H

#include <jansson.h>
#include <stddef.h>

typedef struct page_item {
	long long index;
	int ok;
	size_t at, len; /* the value's text in the page (read by its shape) */
} page_item;

typedef struct results_page {
	const char *text; /* the page (borrowed) */
	page_item *items;
	size_t n, cap; /* items read, room for them: kept from page to page */
	json_t **values; /* a page jansson read whole: each item's value; else NULL */
	char next_cursor[32];
	int complete;
} results_page;

/* Reads text[0..len) into pg: zeroed, or a page read before (its room for
 * items is used again: a large map's pages cost no new memory each).
 * Returns 0, or -1 if it is no results page. */
int results_page_read(const char *text, size_t len, results_page *pg);
/* Item i's value, or its error text as a JSON string when it failed: a new
 * reference, NULL if the value is not JSON. */
json_t *results_page_value(const results_page *pg, size_t i);
void results_page_fini(results_page *pg);

#endif
