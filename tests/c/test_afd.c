/* test_afd.c -- error table, CRC-32 and FNV-1a, buffers and readers. */
#include "afd.h"
#include "buf.h"
#include "harness.h"

TEST(strerror_covers_every_code)
{
    CHECK_EQ_STR(afd_strerror(0), "success");
    CHECK_EQ_STR(afd_strerror(AFD_ENOMEM), "out of memory");
    CHECK(AFD_ENOMEM == -1);
    CHECK(AFD_EFULL < AFD_EPROTO);
    CHECK_EQ_STR(afd_strerror(12345), "unknown error");
}

TEST(crc32_known_vector)
{
    CHECK_EQ_U64(afd_crc32(0, "123456789", 9), 0xcbf43926u);
    uint32_t c = afd_crc32(0, "1234", 4);
    CHECK_EQ_U64(afd_crc32(c, "56789", 5), 0xcbf43926u);
}

TEST(fnv1a_known_vector)
{
    CHECK_EQ_U64(afd_fnv1a(AFD_FNV_INIT, "a", 1), 0xaf63dc4c8601ec8cULL);
}

TEST(buf_roundtrip)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put_u8(&b, 7);
    afd_buf_put_u16(&b, 0xbeef);
    afd_buf_put_u32(&b, 0xdeadbeef);
    afd_buf_put_u64(&b, 0x0123456789abcdefULL);
    afd_buf_put_str(&b, "hello", 5);
    CHECK_EQ_INT(b.err, 0);
    afd_reader r;
    afd_reader_init(&r, b.data, b.len);
    CHECK_EQ_INT(afd_reader_u8(&r), 7);
    CHECK_EQ_INT(afd_reader_u16(&r), 0xbeef);
    CHECK_EQ_U64(afd_reader_u32(&r), 0xdeadbeefu);
    CHECK_EQ_U64(afd_reader_u64(&r), 0x0123456789abcdefULL);
    char *s = afd_reader_str(&r, 100);
    CHECK_EQ_STR(s, "hello");
    free(s);
    CHECK_EQ_INT(afd_reader_error(&r), 0);
    CHECK_EQ_INT(afd_reader_left(&r), 0);
    CHECK_EQ_INT(afd_reader_u32(&r), 0);
    CHECK_EQ_INT(afd_reader_error(&r), AFD_EOF);
    afd_buf_finish(&b);
    afd_buf_finish(NULL);
}

TEST(reader_refuses_long_strings)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put_str(&b, "abcdef", 6);
    afd_reader r;
    afd_reader_init(&r, b.data, b.len);
    CHECK(afd_reader_str(&r, 3) == NULL);
    CHECK_EQ_INT(afd_reader_error(&r), AFD_EFULL);
    afd_buf_finish(&b);
}

int main(void)
{
    RUN_TESTS("afd", T(strerror_covers_every_code), T(crc32_known_vector), T(fnv1a_known_vector),
              T(buf_roundtrip), T(reader_refuses_long_strings));
}
