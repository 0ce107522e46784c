// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: on-demand paging MRs (ib_umem_odp): the MMU interval notifier that unmaps, and
 * mapping, locking and copying through an ODP MR's pages. C because MMU notifiers, the umem's
 * dma_list and pfn_list and its mutex have no Rust API in 6.12.
 */
#include <linux/mmu_notifier.h>
#include <linux/hmm.h>
#include <linux/mutex.h>
#include <linux/lockdep.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include "rxe_sr_pages.h"

#include "rxe_sr_glue.h"

/*
 * The process is about to change or drop pages of an ODP MR's range: under the umem's
 * mutex (which every copy through the MR holds), the pages' mappings in dma_list go, so
 * the next access faults them in again. The new sequence number makes a fault racing with
 * this retry.
 */
static bool rxe_sr_odp_invalidate(struct mmu_interval_notifier *mni,
				  const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	if (start < end)
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rxe_sr_odp_ops = {
	.invalidate = rxe_sr_odp_invalidate,
};

/* The kernel was built with on-demand paging (the core's ib_umem_odp). */
bool rxe_sr_glue_odp_supported(void)
{
	return IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING);
}

/* Registers @len bytes at @addr of the calling process for on-demand paging. */
struct ib_umem_odp *rxe_sr_glue_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
					int access)
{
	if (!IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING))
		return ERR_PTR(-EOPNOTSUPP);
	return ib_umem_odp_get(dev, addr, len, access, &rxe_sr_odp_ops);
}

void rxe_sr_glue_odp_release(struct ib_umem_odp *odp)
{
	ib_umem_odp_release(odp);
}

/* Every page of [@addr, @addr + @len) mapped with read (and write if @write) rights. */
static bool rxe_sr_odp_mapped(struct ib_umem_odp *odp, u64 addr, u64 len, bool write)
{
	u64 perm = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	size_t i = (addr - ib_umem_start(odp)) >> odp->page_shift;
	size_t last = (addr + len - 1 - ib_umem_start(odp)) >> odp->page_shift;

	lockdep_assert_held(&odp->umem_mutex);
	for (; i <= last; i++)
		if ((odp->dma_list[i] & perm) != perm)
			return false;
	return true;
}

/*
 * Maps bytes [@off, @off + @len) of the MR's range (offsets from its first byte) for reading,
 * or writing when @write: pages already mapped are used as they are; the others are faulted
 * in (@fault) or, without @fault, mapped only if the process has them (a prefetch that must
 * not fault). Returns 0 with the umem's mutex held (every page mapped, unless !@fault), or
 * a negative errno with it released.
 */
int rxe_sr_glue_odp_map_lock(struct ib_umem_odp *odp, u64 off, u64 len, bool write, bool fault)
{
	u64 addr = odp->umem.address + off;
	u64 perm = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	int np;

	if (!len || off > odp->umem.length || len > odp->umem.length - off)
		return -EFAULT;
	if (write && !odp->umem.writable)
		return -EACCES;
	mutex_lock(&odp->umem_mutex);
	if (rxe_sr_odp_mapped(odp, addr, len, write))
		return 0;
	mutex_unlock(&odp->umem_mutex);
	np = ib_umem_odp_map_dma_and_lock(odp, addr, len, perm, fault);
	if (np < 0)
		return np;
	if (fault && !rxe_sr_odp_mapped(odp, addr, len, write)) {
		mutex_unlock(&odp->umem_mutex);
		return -EFAULT;
	}
	return 0;
}

void rxe_sr_glue_odp_lock(struct ib_umem_odp *odp)
{
	mutex_lock(&odp->umem_mutex);
}

void rxe_sr_glue_odp_unlock(struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
}

/*
 * Copies @len bytes between @buf and byte @off of the MR's range (into the memory when
 * @to_pages). The caller holds the umem's mutex from rxe_sr_glue_odp_map_lock() over a range
 * that covers these bytes, so their pages stay mapped (an invalidation waits for the mutex).
 */
int rxe_sr_glue_odp_copy(struct ib_umem_odp *odp, u64 off, void *buf, size_t len, bool to_pages)
{
	u64 addr = odp->umem.address + off;
	size_t i = (addr - ib_umem_start(odp)) >> PAGE_SHIFT;
	size_t in = addr & ~PAGE_MASK;

	lockdep_assert_held(&odp->umem_mutex);
	if (off > odp->umem.length || len > odp->umem.length - off)
		return -EFAULT;
	while (len) {
		size_t n = min_t(size_t, len, PAGE_SIZE - in);

		rxe_sr_page_copy(hmm_pfn_to_page(odp->pfn_list[i]), in, buf, n, to_pages);
		buf += n;
		len -= n;
		in = 0;
		i++;
	}
	return 0;
}
