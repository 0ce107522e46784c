/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rxe_sr: the one step the page copies of kx/helpers/ib_umem.c and kx/c/odp.c share.
 */
#ifndef RXE_SR_PAGES_H
#define RXE_SR_PAGES_H

#include <linux/highmem.h>
#include <linux/string.h>

/* Copies @n bytes between @buf and byte @in of @page (into the page when @to_page). */
static inline void rxe_sr_page_copy(struct page *page, size_t in, void *buf, size_t n, bool to_page)
{
	void *va = kmap_local_page(page);

	if (to_page)
		memcpy(va + in, buf, n);
	else
		memcpy(buf, va + in, n);
	kunmap_local(va);
}

#endif /* RXE_SR_PAGES_H */
