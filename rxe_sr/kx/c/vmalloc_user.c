// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: queue buffers user space maps: zeroed, charged to the caller's memory cgroup. C
 * because vmap() with VM_USERMAP has no Rust API in 6.12.
 */
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/gfp.h>

#include "rxe_sr_glue.h"

/*
 * A zeroed buffer user space may map (VM_USERMAP, for remap_vmalloc_range), its pages
 * charged to the caller's memory cgroup (GFP_KERNEL_ACCOUNT: rings are sized by the
 * user). vfree() frees it, pages and array included (VM_MAP_PUT_PAGES).
 */
void *rxe_sr_glue_vmalloc_user(size_t size)
{
	unsigned int n = PAGE_ALIGN(size) >> PAGE_SHIFT, i;
	struct page **pages;
	void *addr;

	if (!size || size > (size_t)INT_MAX)
		return NULL;
	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	addr = vmap(pages, n, VM_MAP | VM_MAP_PUT_PAGES | VM_USERMAP, PAGE_KERNEL);
	if (addr)
		return addr;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}
