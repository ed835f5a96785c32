/* shell.h -- words of the commands affidavit prints for people to paste into a POSIX shell.
 *
 * A node id is the user's text: a parametrized id such as test_x[$(touch PWNED)] or one with a
 * space or a quote must reach the pasted command as one word and run nothing. The rules are
 * Python's shlex.quote: a word made only of [A-Za-z0-9@%+=:,./_-] stays as it is; any other word
 * is put in single quotes, where every character is literal, and a single quote inside it becomes
 * '"'"' (close the quotes, a double-quoted quote, reopen); the empty word is ''. */
#ifndef AFD_SHELL_H
#define AFD_SHELL_H

#include "buf.h"

/* Appends s (NULL: the empty word) to out as one word for a POSIX shell. */
void afd_shell_quote(afd_buf *out, const char *s);
/* Appends the command that replays token on nodeid, "affidavit replay TOKEN NODEID", each word
 * quoted (nodeid NULL or empty: the command without it). No newline. */
void afd_shell_replay_command(afd_buf *out, const char *token, const char *nodeid);

#endif
