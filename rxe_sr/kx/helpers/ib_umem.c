// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/rdma/ib_umem.h (and copies through an
 * array of pages): static inlines and macros, one exported function each. No logic of the
 * driver's.
 */
#include <rdma/ib_umem.h>
#include <linux/scatterlist.h>
#include "rxe_sr_pages.h"

#include "rxe_sr_glue.h"

/* Fills @pages with the umem's pinned pages, in order (at most @n). Returns how many. */
size_t rxe_sr_glue_umem_pages(struct ib_umem *umem, void **pages, size_t n)
{
	struct sg_page_iter it;
	size_t i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&it);
	}
	return i;
}

/*
 * Copies @len bytes between @buf and byte @offset of the memory behind a page array of
 * @npages pages (into the pages when @to_pages). Direct indexing: no scatterlist walk.
 */
int rxe_sr_glue_pages_copy(void *const *pages, size_t npages, size_t offset, void *buf,
			   size_t len, bool to_pages)
{
	if (offset + len < offset || offset + len > npages * PAGE_SIZE)
		return -EFAULT;
	while (len) {
		size_t in = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - in);

		rxe_sr_page_copy(pages[offset >> PAGE_SHIFT], in, buf, n, to_pages);
		buf += n;
		offset += n;
		len -= n;
	}
	return 0;
}
