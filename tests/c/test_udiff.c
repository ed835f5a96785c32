/* test_udiff.c -- unified diffs: make -> parse -> apply round trips, and malformed input. */
#include "afd.h"
#include "buf.h"
#include "harness.h"
#include "udiff.h"

static void roundtrip(const char *before, const char *after)
{
    afd_buf d, p;
    afd_buf_init(&d);
    afd_buf_init(&p);
    size_t bl = before ? strlen(before) : 0, al = after ? strlen(after) : 0;
    CHECK_EQ_INT(afd_udiff_make("pkg/m.py", before, bl, after, al, &d), 0);
    afd_udiff u;
    char err[128];
    CHECK_EQ_INT(afd_udiff_parse((const char *)d.data, d.len, &u, err, sizeof err), 0);
    if (before && after && strcmp(before, after) == 0) {
        CHECK_EQ_INT(d.len, 0);
        CHECK_EQ_INT(u.n_files, 0);
    } else {
        CHECK_EQ_INT(u.n_files, 1);
        CHECK_EQ_INT(u.files[0].is_new, before == NULL);
        CHECK_EQ_INT(u.files[0].is_deleted, after == NULL);
        CHECK_EQ_INT(afd_udiff_apply(&u.files[0], before, bl, &p, err, sizeof err), 0);
        CHECK_EQ_INT(p.len, al);
        CHECK(al == 0 || memcmp(p.data, after, al) == 0);
    }
    afd_udiff_finish(&u);
    afd_buf_finish(&d);
    afd_buf_finish(&p);
}

TEST(make_parse_apply)
{
    roundtrip("a\nb\nc\n", "a\nB\nc\n");
    roundtrip("a\nb\nc\n", "a\nb\nc\n");
    roundtrip("", "x\n");
    roundtrip("x\n", "");
    roundtrip("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n",
              "0\n1\n2\n3\n4\n5\n6\n7\nEIGHT\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n20\n21\n");
    roundtrip("a\nb", "a\nb\n");
    roundtrip("a\nb\n", "a\nb");
    roundtrip("a\nb", "a\nc");
    roundtrip("x\r\ny\r\n", "x\r\nz\r\n");
    roundtrip(NULL, "new\nfile\n");
    roundtrip("old\nfile\n", NULL);
    roundtrip("same\n", "same\nmore\nlines\n");
}

TEST(make_format)
{
    afd_buf d;
    afd_buf_init(&d);
    CHECK_EQ_INT(afd_udiff_make("t.py", "a\nb\nc\n", 6, "a\nx\nc\n", 6, &d), 0);
    CHECK_EQ_STR((const char *)d.data, "--- a/t.py\n+++ b/t.py\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n");
    d.len = 0;
    CHECK_EQ_INT(afd_udiff_make("t.py", NULL, 0, "a", 1, &d), 0);
    CHECK_EQ_STR((const char *)d.data,
                 "--- /dev/null\n+++ b/t.py\n@@ -0,0 +1 @@\n+a\n\\ No newline at end of file\n");
    afd_buf_finish(&d);
}

TEST(make_pseudo_random)
{
    /* Random edits of a 200-line file: the diff always applies back. */
    uint64_t seed = 42;
    for (int round = 0; round < 60; round++) {
        afd_buf a, b;
        afd_buf_init(&a);
        afd_buf_init(&b);
        for (int i = 0; i < 200; i++) {
            uint64_t r = afd_mix64(seed++);
            afd_buf_printf(&a, "line %d\n", i % 17);
            if (r % 7 == 0)
                afd_buf_printf(&b, "new %d\n", (int)(r % 5));
            if (r % 11 != 0)
                afd_buf_printf(&b, "line %d\n", i % 17);
        }
        afd_buf_put_u8(&a, 0);
        afd_buf_put_u8(&b, 0);
        roundtrip((const char *)a.data, (const char *)b.data);
        afd_buf_finish(&a);
        afd_buf_finish(&b);
    }
}

TEST(make_bounds)
{
    afd_buf big, d;
    afd_buf_init(&big);
    afd_buf_init(&d);
    for (int i = 0; i < 20001; i++)
        afd_buf_printf(&big, "%d\n", i);
    CHECK_EQ_INT(afd_udiff_make("x", (const char *)big.data, big.len, "a\n", 2, &d), AFD_EFULL);
    CHECK_EQ_INT(afd_udiff_make("x", NULL, 0, NULL, 0, &d), AFD_EINVAL);
    /* Completely different halves: beyond Myers' step bound, still a valid diff. */
    afd_buf a, b;
    afd_buf_init(&a);
    afd_buf_init(&b);
    for (int i = 0; i < 3000; i++) {
        afd_buf_printf(&a, "a%d\n", i);
        afd_buf_printf(&b, "b%d\n", i);
    }
    afd_buf_put_u8(&a, 0);
    afd_buf_put_u8(&b, 0);
    roundtrip((const char *)a.data, (const char *)b.data);
    afd_buf_finish(&a);
    afd_buf_finish(&b);
    afd_buf_finish(&big);
    afd_buf_finish(&d);
}

TEST(parse_git_diff)
{
    const char *diff = "commit message text\n"
                       "diff --git a/src/x.py b/src/x.py\n"
                       "index 83db48f..bf269f4 100644\n"
                       "--- a/src/x.py\n"
                       "+++ b/src/x.py\n"
                       "@@ -1,3 +1,4 @@ def f():\n"
                       " a\n"
                       "-b\n"
                       "+B\n"
                       "+C\n"
                       " c\n"
                       "@@ -10 +11 @@\n"
                       "-j\n"
                       "+J\n"
                       "\\ No newline at end of file\n"
                       "diff --git a/new.py b/new.py\n"
                       "new file mode 100644\n"
                       "--- /dev/null\n"
                       "+++ b/new.py\n"
                       "@@ -0,0 +1,2 @@\n"
                       "+x\n"
                       "+\n"
                       "diff --git a/gone.py b/gone.py\n"
                       "deleted file mode 100644\n"
                       "--- a/gone.py\n"
                       "+++ /dev/null\n"
                       "@@ -1 +0,0 @@\n"
                       "-bye\n"
                       "--- plain.py\t2024-01-01 10:00:00\n"
                       "+++ plain.py\t2024-01-01 10:00:01\n"
                       "@@ -1,2 +1,2 @@\n"
                       "\n"
                       "-q\n"
                       "+r\n"
                       "-- \n"
                       "2.39.2\n";
    afd_udiff u;
    char err[128];
    CHECK_EQ_INT(afd_udiff_parse(diff, strlen(diff), &u, err, sizeof err), 0);
    CHECK_EQ_INT(u.n_files, 4);
    CHECK_EQ_STR(u.files[0].old_path, "src/x.py");
    CHECK_EQ_STR(u.files[0].new_path, "src/x.py");
    CHECK_EQ_INT(u.files[0].n_hunks, 2);
    CHECK_EQ_INT(u.files[0].hunks[0].n_lines, 5);
    CHECK_EQ_INT(u.files[0].hunks[1].old_start, 10);
    CHECK_EQ_INT(u.files[0].hunks[1].old_count, 1);
    CHECK_EQ_INT(u.files[0].hunks[1].lines[1].no_eol, 1);
    CHECK_EQ_INT(u.files[0].hunks[1].lines[0].no_eol, 0);
    CHECK_EQ_INT(u.files[1].is_new, 1);
    CHECK(u.files[1].old_path == NULL);
    CHECK_EQ_STR(u.files[1].new_path, "new.py");
    CHECK_EQ_INT(u.files[2].is_deleted, 1);
    CHECK(u.files[2].new_path == NULL);
    CHECK_EQ_STR(u.files[3].old_path, "plain.py");

    const char *orig = "a\nb\nc\n4\n5\n6\n7\n8\n9\nj\n";
    afd_buf out;
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_udiff_apply(&u.files[0], orig, strlen(orig), &out, err, sizeof err), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR((const char *)out.data, "a\nB\nC\nc\n4\n5\n6\n7\n8\n9\nJ");
    out.len = 0;
    CHECK_EQ_INT(afd_udiff_apply(&u.files[1], "", 0, &out, err, sizeof err), 0);
    CHECK_EQ_INT(out.len, 3);
    out.len = 0;
    CHECK_EQ_INT(afd_udiff_apply(&u.files[2], "bye\n", 4, &out, err, sizeof err), 0);
    CHECK_EQ_INT(out.len, 0);
    CHECK_EQ_INT(afd_udiff_apply(&u.files[2], "bye\nmore\n", 9, &out, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_udiff_apply(&u.files[1], "x", 1, &out, err, sizeof err), AFD_EINVAL);
    out.len = 0;
    CHECK_EQ_INT(afd_udiff_apply(&u.files[3], "\nq\n", 3, &out, err, sizeof err), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR((const char *)out.data, "\nr\n");
    afd_buf_finish(&out);
    afd_udiff_finish(&u);
    afd_udiff_finish(&u); /* idempotent */
}

TEST(does_not_apply)
{
    const char *diff = "--- a/m.py\n+++ b/m.py\n@@ -2,2 +2,2 @@\n x\n-y\n+z\n";
    afd_udiff u;
    char err[128];
    CHECK_EQ_INT(afd_udiff_parse(diff, strlen(diff), &u, err, sizeof err), 0);
    afd_buf out;
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_udiff_apply(&u.files[0], "w\nx\nY\n", 6, &out, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, "hunk 1 of m.py does not apply at line 3");
    out.len = 0;
    CHECK_EQ_INT(afd_udiff_apply(&u.files[0], "w\n", 2, &out, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, "hunk 1 of m.py does not apply at line 2");
    out.len = 0;
    /* The no-newline state is part of the match. */
    CHECK_EQ_INT(afd_udiff_apply(&u.files[0], "w\nx\ny", 5, &out, err, sizeof err), AFD_EINVAL);
    out.len = 0;
    CHECK_EQ_INT(afd_udiff_apply(&u.files[0], "w\nx\ny\n", 6, &out, err, sizeof err), 0);
    afd_buf_finish(&out);
    afd_udiff_finish(&u);
}

static void bad(const char *diff)
{
    afd_udiff u;
    char err[128] = "unset";
    int rc = afd_udiff_parse(diff, strlen(diff), &u, err, sizeof err);
    if (rc != AFD_EINVAL)
        FAIL_AT("accepted malformed diff (rc %d):\n%s", rc, diff);
    CHECK(err[0] != 0 && strcmp(err, "unset") != 0);
    CHECK(strchr(err, '\n') == NULL);
    afd_udiff_finish(&u);
}

TEST(malformed)
{
    bad("@@ -1 +1 @@\n-a\n+b\n");                /* hunk before any file */
    bad("--- a/x\n+++ b/x\n@@ -1 +1\n-a\n+b\n"); /* bad header */
    bad("--- a/x\n+++ b/x\n@@ -a +1 @@\n-a\n+b\n");
    bad("--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n");         /* too short */
    bad("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n+b\n");       /* too long */
    bad("--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n+b\nzzz\n");    /* junk inside */
    bad("--- a/x\n+++ b/x\n@@ -99999999999 +1 @@\n-a\n+b\n"); /* absurd */
    bad("--- a/x\n+++ b/x\n@@ -1,4294967297 +1 @@\n-a\n+b\n");
    bad("--- a/x\n+++ b/x\n@@ -0,1 +1 @@\n-a\n+b\n");                    /* start 0 with lines */
    bad("--- a/x\n+++ b/x\n@@ -0,0 +0,0 @@\n");                          /* empty hunk */
    bad("--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n"); /* out of order */
    bad("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n");
    bad("--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"); /* new file with old lines */
    bad("--- a/x\n+++ b/x\n\\ No newline at end of file\n");
    bad("--- a/x\n+++ b/x\n"); /* header, no hunk */
    bad("diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n");
    afd_udiff u;
    char err[64];
    CHECK_EQ_INT(afd_udiff_parse(NULL, 3, &u, err, sizeof err), AFD_EINVAL);
    afd_udiff_finish(&u);
    CHECK_EQ_INT(afd_udiff_parse("", 0, &u, NULL, 0), 0);
    CHECK_EQ_INT(u.n_files, 0);
    afd_udiff_finish(&u);
}

TEST(garbage_never_crashes)
{
    /* Mutations of a valid diff: every outcome is 0 or AFD_EINVAL. */
    const char *base = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n\\ No newline at end of file\n";
    size_t n = strlen(base);
    char buf[128];
    const char alphabet[] = "@-+ \n\\,0129a";
    for (uint64_t k = 0; k < 20000; k++) {
        memcpy(buf, base, n);
        uint64_t r = afd_mix64(k);
        for (int j = 0; j < 3; j++, r >>= 16)
            buf[(r & 0xff) % n] = alphabet[(r >> 8) % (sizeof alphabet - 1)];
        size_t len = (size_t)(afd_mix64(k + 99) % (n + 1));
        afd_udiff u;
        char err[96];
        int rc = afd_udiff_parse(buf, len, &u, err, sizeof err);
        CHECK(rc == 0 || rc == AFD_EINVAL);
        if (rc == 0)
            for (size_t f = 0; f < u.n_files; f++) {
                afd_buf out;
                afd_buf_init(&out);
                rc = afd_udiff_apply(&u.files[f], "a\nb\nd", 5, &out, err, sizeof err);
                CHECK(rc == 0 || rc == AFD_EINVAL);
                afd_buf_finish(&out);
            }
        afd_udiff_finish(&u);
    }
}

int main(void)
{
    RUN_TESTS("udiff", T(make_parse_apply), T(make_format), T(make_pseudo_random), T(make_bounds),
              T(parse_git_diff), T(does_not_apply), T(malformed), T(garbage_never_crashes));
}
