/* afd.c -- error messages, CRC-32 and FNV-1a for the core library.
 *
 * The CRC table is built once on first use; both helpers are on the path of every token and trace
 * that crosses a process boundary, so they stay branch-light and allocation-free. */
#include "afd.h"

const char *afd_strerror(int rc)
{
    switch (rc) {
    case AFD_OK:
        return "success";
#define AFD_X_CASE(name, msg)                                                                                \
    case AFD_E##name:                                                                                        \
        return msg;
        AFD_ERRNO_MAP(AFD_X_CASE)
#undef AFD_X_CASE
    default:
        return "unknown error";
    }
}

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
    crc_ready = 1;
}

uint32_t afd_crc32(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (!crc_ready)
        crc_init();
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

uint64_t afd_fnv1a(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
