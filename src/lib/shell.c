/* shell.c -- POSIX shell quoting of the words of printed commands (see shell.h).
 *
 * Called a few times per command printed, on node ids and tokens of at most a few hundred bytes:
 * clarity over speed. The output is exactly what Python's shlex.quote returns, so that a test can
 * compare the two and a reader can predict the command. */
#include "shell.h"

#include <string.h>

static const char SAFE[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";

void afd_shell_quote(afd_buf *out, const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    if (len && strspn(s, SAFE) == len) {
        afd_buf_put(out, s, len);
        return;
    }
    afd_buf_put_u8(out, '\'');
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "'");
        afd_buf_put(out, p, n);
        p += n;
        if (*p == '\'') {
            /* Inside single quotes nothing is special, not even a backslash, so a quote can only
             * be written by leaving the quotes for a moment. */
            afd_buf_put(out, "'\"'\"'", 5);
            p++;
        }
    }
    afd_buf_put_u8(out, '\'');
}

void afd_shell_replay_command(afd_buf *out, const char *token, const char *nodeid)
{
    afd_buf_put(out, "affidavit replay ", 17);
    afd_shell_quote(out, token);
    if (nodeid && *nodeid) {
        afd_buf_put_u8(out, ' ');
        afd_shell_quote(out, nodeid);
    }
}
