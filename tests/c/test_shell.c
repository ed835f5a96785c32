/* test_shell.c -- shell quoting: shlex.quote's exact output, and a real shell reading each word back
 * as the one word it was, running nothing. */
#include "buf.h"
#include "harness.h"
#include "shell.h"

#include <sys/stat.h>

/* s quoted, as a heap string the caller frees. */
static char *quoted(const char *s)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_shell_quote(&b, s);
    afd_buf_put_u8(&b, 0);
    CHECK_EQ_INT(b.err, 0);
    size_t len;
    return (char *)afd_buf_steal(&b, &len);
}

static void check_quote(const char *s, const char *want)
{
    char *q = quoted(s);
    CHECK_EQ_STR(q, want);
    free(q);
}

TEST(shlex_rules)
{
    /* The expected strings are what Python's shlex.quote returns for each input. */
    check_quote("abc", "abc");
    check_quote("tests/test_x.py::test_a", "tests/test_x.py::test_a");
    check_quote("afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4",
                "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4");
    check_quote("@%+=:,./_-", "@%+=:,./_-");
    check_quote("", "''");
    check_quote(NULL, "''");
    check_quote("a b", "'a b'");
    check_quote("t.py::test[1-2]", "'t.py::test[1-2]'");
    check_quote("t.py::test[$(touch PWNED)]", "'t.py::test[$(touch PWNED)]'");
    check_quote("it's", "'it'\"'\"'s'");
    check_quote("'", "''\"'\"''");
    check_quote("''", "''\"'\"''\"'\"''");
    check_quote("a\"b", "'a\"b'");
    check_quote("back\\slash", "'back\\slash'");
    check_quote("new\nline", "'new\nline'");
    check_quote("caf\xc3\xa9", "'caf\xc3\xa9'");
    check_quote("~user", "'~user'");
    check_quote("*", "'*'");
    check_quote("-n", "-n");
}

/* Runs `sh -c "printf %s WORD"` in a fresh directory and checks that the shell printed exactly s
 * and created no file there. */
static void check_shell_reads_back(const char *s)
{
    char dir[] = "/tmp/afd-shell-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    afd_buf cmd;
    afd_buf_init(&cmd);
    afd_buf_printf(&cmd, "cd %s && printf '%%s' ", dir);
    afd_shell_quote(&cmd, s);
    afd_buf_put_u8(&cmd, 0);
    CHECK_EQ_INT(cmd.err, 0);
    FILE *p = popen((const char *)cmd.data, "r");
    CHECK(p != NULL);
    char got[512];
    size_t n = fread(got, 1, sizeof got - 1, p);
    got[n] = 0;
    CHECK_EQ_INT(pclose(p), 0);
    CHECK_EQ_STR(got, s);
    char probe[64];
    snprintf(probe, sizeof probe, "%s/PWNED", dir);
    struct stat st;
    CHECK(stat(probe, &st) != 0); /* the command substitution never ran */
    CHECK_EQ_INT(rmdir(dir), 0);  /* and nothing else was created either */
    afd_buf_finish(&cmd);
}

TEST(a_shell_reads_each_word_back)
{
    const char *words[] = {
        "plain",
        "t.py::test[$(touch PWNED)]",
        "t.py::test[`touch PWNED`]",
        "t.py::test[a b]",
        "t.py::test[it's]",
        "t.py::test[\"q\"]",
        "t.py::test[;touch PWNED;]",
        "t.py::test[|touch PWNED]",
        "t.py::test[${IFS}x]",
        "t.py::test[\\]",
        "'",
        "a'b'c",
        "t.py::test[\n]",
        "t.py::test[*]",
        "t.py::test[caf\xc3\xa9]",
        "t.py::test[&& touch PWNED]",
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        check_shell_reads_back(words[i]);
}

int main(void)
{
    RUN_TESTS("shell", T(shlex_rules), T(a_shell_reads_each_word_back));
}
