// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: the CRC-32 of the ICRC through the crypto API. C because 6.12's kernel crate has no
 * crypto hash API.
 */
#include <linux/crc32.h>
#include <crypto/hash.h>

#include "rxe_sr_glue.h"

/*
 * As rdma_rxe: the crypto API's "crc32" (the CRC-32 of crc32_le, state not inverted between
 * updates), so that an architecture's implementation (crc32-pclmul on x86) is used where the
 * kernel has one; 6.12's crc32_le is lib/crc32.c's generic one. Allocated at load before any
 * device exists, freed at unload after the last is gone; without it, crc32_le.
 */
static struct crypto_shash *rxe_sr_crc32_tfm;

/*
 * A "crc32" descriptor's state is one u32. The descriptor lives on the stack of every call
 * (several per packet), sized for that state: SHASH_DESC_ON_STACK's HASH_MAX_DESCSIZE bytes
 * would be zeroed at each call by the kernel's automatic stack initialisation, which cost
 * more than the CRC itself. A transform wanting more is not used.
 */
#define RXE_SR_CRC32_DESC_MAX 16

union rxe_sr_crc32_desc {
	struct shash_desc desc;
	char bytes[sizeof(struct shash_desc) + RXE_SR_CRC32_DESC_MAX];
};

/* Allocates the transform; returns the implementation's name (until the exit). */
const char *rxe_sr_glue_crc32_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32", 0, 0);

	if (!IS_ERR(tfm) && crypto_shash_descsize(tfm) > RXE_SR_CRC32_DESC_MAX) {
		crypto_free_shash(tfm);
		tfm = ERR_PTR(-EINVAL);
	}
	rxe_sr_crc32_tfm = IS_ERR(tfm) ? NULL : tfm;
	return rxe_sr_crc32_tfm ? crypto_shash_driver_name(rxe_sr_crc32_tfm) : "crc32_le";
}

void rxe_sr_glue_crc32_exit(void)
{
	if (rxe_sr_crc32_tfm)
		crypto_free_shash(rxe_sr_crc32_tfm);
	rxe_sr_crc32_tfm = NULL;
}

u32 rxe_sr_glue_crc32(u32 crc, const void *data, size_t len)
{
	struct crypto_shash *tfm = rxe_sr_crc32_tfm;
	union rxe_sr_crc32_desc d;
	u32 *state;

	if (!tfm)
		return crc32_le(crc, data, len);
	d.desc.tfm = tfm;
	state = shash_desc_ctx(&d.desc);
	*state = crc;
	if (crypto_shash_update(&d.desc, data, len))
		return crc32_le(crc, data, len);
	return *state;
}
