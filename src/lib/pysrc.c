/* pysrc.c -- Python source parsed with tree-sitter, safely (see pysrc.h). */
#include "pysrc.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPython refuses more than 200 nested brackets ("too many nested parentheses"). */
#define MAX_NEST 200u
/* Lines holding nothing but a line continuation, in a row, kept as they are. */
#define MAX_CONT_RUN 16u
/* libtree-sitter 0.20.7 keeps a node's child count in 16 bits: a node with 65,536 children or more
 * (a run of that many comments, or that many tokens left open when an error is recovered) has its
 * count wrapped, and deleting the tree then frees an interior pointer. Such a node loses the width
 * of the children it no longer counts, at least one byte each. */
#define TS_CHILD_LIMIT 65536u
/* Python source parses at megabytes per second, but tree-sitter's error recovery on garbage (a
 * binary file, a mangled download) runs at about 100 KB/s: 16 MiB of it would take minutes. Ten
 * times what valid code needs bounds the wait. */
#define PARSE_MICROS_BASE 2000000u
#define PARSE_MICROS_PER_BYTE 2u
/* The bound is on the parsing thread's CPU time, not the wall clock, so that a loaded machine (a
 * CI runner running other jobs, say) parses what an idle one parses: tree-sitter's own timeout is
 * wall-clock, so it is used in slices, and a parse it stops is resumed (tree-sitter continues where
 * it stopped when called again with the same input) until the CPU time spent passes the bound. */
#define PARSE_SLICE_MICROS 50000u

/* A copy of the source, same length and same lines, with what would make libtree-sitter 0.20.7
 * crash or go quadratic blanked out (replaced by spaces):
 *   - comments: they are extras, so a run of 65,536 comment lines makes one node with too many
 *     children (see TS_CHILD_LIMIT), and the grammar's scanner rescans a run of comment lines
 *     inside a block once per line; they hold no access either;
 *   - brackets nested deeper than CPython accepts (their line is reported as an error): 100,000
 *     unclosed parentheses would otherwise leave 100,000 tokens open when the error is recovered;
 *   - backslashes of continuation-only lines beyond a short run (same two reasons as comments).
 * Strings are skipped with Python's rules (a backslash escapes the next character, a newline ends
 * a one-quote string) so that a `#` or a bracket in a string is left alone. */
static int sanitize(const char *s, size_t n, char *out, afd_pysrc_line_fn refused, void *ctx)
{
    uint32_t line = 1, depth = 0, cont_run = 0;
    int content = 0; /* the current line has had something besides blanks */
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == '\n') {
            line++;
            content = 0;
            i++;
        } else if (ch == '#') {
            while (i < n && s[i] != '\n' && s[i] != '\r')
                out[i++] = ' ';
        } else if (ch == '\'' || ch == '"') {
            int triple = i + 2 < n && s[i + 1] == ch && s[i + 2] == ch;
            i += triple ? 3 : 1;
            while (i < n) {
                if (s[i] == '\\') {
                    i++;
                    if (i + 1 < n && s[i] == '\r' && s[i + 1] == '\n')
                        i++;
                    if (i < n && s[i] == '\n')
                        line++;
                    i++;
                } else if (s[i] == ch && (!triple || (i + 2 < n && s[i + 1] == ch && s[i + 2] == ch))) {
                    i += triple ? 3 : 1;
                    break;
                } else if (!triple && (s[i] == '\n' || s[i] == '\r')) {
                    break; /* unterminated: the newline is the lexer's again */
                } else {
                    line += s[i] == '\n';
                    i++;
                }
            }
            content = 1;
        } else if (ch == '\\' && (i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r'))) {
            cont_run = content ? 0 : cont_run + 1;
            if (cont_run > MAX_CONT_RUN) {
                out[i] = ' ';
                int rc = refused ? refused(ctx, line) : 0;
                if (rc < 0)
                    return rc;
            }
            i++;
        } else {
            if (ch == '(' || ch == '[' || ch == '{' || ch == ')' || ch == ']' || ch == '}') {
                int open = ch == '(' || ch == '[' || ch == '{';
                if (open)
                    depth++;
                if (depth > MAX_NEST) {
                    out[i] = ' ';
                    int rc = refused ? refused(ctx, line) : 0;
                    if (rc < 0)
                        return rc;
                }
                if (!open && depth > 0)
                    depth--;
            }
            if (ch != ' ' && ch != '\t' && ch != '\f' && ch != '\r')
                content = 1;
            i++;
        }
    }
    return 0;
}

/* Whether the tree lost children to the 16-bit count (see TS_CHILD_LIMIT): every node's extent is
 * the sum of its children's, so the root then ends at least 65,536 bytes early. A sound tree
 * ends where the source does (the grammar's scanner claims trailing blanks). */
static int tree_truncated(const char *src, size_t len, TSNode root)
{
    uint32_t end = ts_node_end_byte(root);
    if (len < TS_CHILD_LIMIT || end >= len)
        return 0;
    if (len - end >= TS_CHILD_LIMIT)
        return 1;
    for (size_t i = end; i < len; i++)
        if (!strchr(" \t\n\r\f\v", src[i]) || src[i] == 0)
            return 1;
    return 0;
}

static uint64_t thread_cpu_micros(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The tree, or NULL once the parse has used more than budget microseconds of this thread's CPU
 * time. Where the thread's CPU clock cannot be read, each slice counts as spent in full (the bound
 * is then the wall clock, as tree-sitter's own). */
static TSTree *parse_bounded(TSParser *parser, const char *text, uint32_t len, uint64_t budget)
{
    ts_parser_set_timeout_micros(parser, PARSE_SLICE_MICROS);
    uint64_t start = thread_cpu_micros(), spent = 0;
    for (;;) {
        TSTree *tree = ts_parser_parse_string(parser, NULL, text, len);
        if (tree)
            return tree;
        uint64_t now = thread_cpu_micros();
        spent = now && start ? now - start : spent + PARSE_SLICE_MICROS;
        if (spent >= budget) {
            ts_parser_reset(parser);
            return NULL;
        }
    }
}

int afd_pysrc_parse(afd_pysrc *p, const char *src, size_t len, afd_pysrc_line_fn refused, void *ctx)
{
    memset(p, 0, sizeof *p);
    if ((!src && len) || len > UINT32_MAX)
        return AFD_EINVAL;
    p->text = malloc(len + 1);
    if (!p->text)
        return AFD_ENOMEM;
    if (len)
        memcpy(p->text, src, len);
    p->text[len] = 0;
    int rc = sanitize(src ? src : "", len, p->text, refused, ctx);
    if (rc < 0)
        return rc;
    p->parser = ts_parser_new();
    if (!p->parser || !ts_parser_set_language(p->parser, tree_sitter_python()))
        return AFD_ENOMEM;
    TSTree *tree = parse_bounded(p->parser, p->text, (uint32_t)len,
                                 PARSE_MICROS_BASE + PARSE_MICROS_PER_BYTE * (uint64_t)len);
    if (!tree)
        return AFD_EFULL; /* timed out: tree-sitter aborts the process when out of memory */
    if (tree_truncated(p->text, len, ts_tree_root_node(tree)))
        return AFD_EFULL; /* left allocated on purpose: freeing it crashes (TS_CHILD_LIMIT) */
    p->tree = tree;
    return 0;
}

void afd_pysrc_finish(afd_pysrc *p)
{
    if (p->tree)
        ts_tree_delete(p->tree);
    if (p->parser)
        ts_parser_delete(p->parser);
    free(p->text);
    memset(p, 0, sizeof *p);
}
