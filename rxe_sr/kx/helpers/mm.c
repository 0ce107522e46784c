// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/mm.h (copies to and from kernel
 * consumers' memory): static inlines and macros, one exported function each. No logic of the
 * driver's.
 */
#include <linux/mm.h>

#include "rxe_sr_glue.h"

int rxe_sr_glue_kva_copy(u64 addr, void *buf, size_t len, bool to_kva)
{
	if (addr + len < addr)
		return -EFAULT;
	while (len) {
		void *va = (void *)(uintptr_t)addr;
		size_t n = min_t(size_t, len, PAGE_SIZE - offset_in_page(va));

		if (!virt_addr_valid(va))
			return -EFAULT;
		if (to_kva)
			memcpy(va, buf, n);
		else
			memcpy(buf, va, n);
		buf += n;
		addr += n;
		len -= n;
	}
	return 0;
}
