/* harness.h -- a tiny unit-test runner for the C library (after libuv's runner).
 *
 * Each test runs in its own child process with a timeout, so a crash or a hang in one test is
 * reported as that test's failure and the others still run. Assertions print both operands.
 *
 *   TEST(name) { CHECK_EQ_INT(1 + 1, 2); }
 *   int main(void) { return RUN_TESTS(name, other); }  -- via the TESTS list macro below. */
#ifndef AFD_TEST_HARNESS_H
#define AFD_TEST_HARNESS_H

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_TIMEOUT_S 20

#define TEST(name) static void test_##name(void)

#define FAIL_AT(...)                                            \
    do {                                                        \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);       \
        fprintf(stderr, __VA_ARGS__);                           \
        fputc('\n', stderr);                                    \
        exit(1);                                                \
    } while (0)

#define CHECK(cond)                                     \
    do {                                                \
        if (!(cond))                                    \
            FAIL_AT("CHECK(%s) failed", #cond);         \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                   \
    do {                                                                                     \
        long long va_ = (long long)(a), vb_ = (long long)(b);                               \
        if (va_ != vb_)                                                                      \
            FAIL_AT("%s == %s failed: %lld != %lld", #a, #b, va_, vb_);                     \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                   \
    do {                                                                                     \
        uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                  \
        if (va_ != vb_)                                                                      \
            FAIL_AT("%s == %s failed: %" PRIu64 " != %" PRIu64, #a, #b, va_, vb_);         \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                   \
    do {                                                                                     \
        const char *va_ = (a), *vb_ = (b);                                                  \
        if (!va_ || !vb_ || strcmp(va_, vb_) != 0)                                           \
            FAIL_AT("%s == %s failed: \"%s\" != \"%s\"", #a, #b, va_ ? va_ : "(null)",       \
                    vb_ ? vb_ : "(null)");                                                   \
    } while (0)

#define CHECK_NEAR(a, b, eps)                                                                \
    do {                                                                                     \
        double va_ = (double)(a), vb_ = (double)(b);                                        \
        if (!(va_ - vb_ <= (eps) && vb_ - va_ <= (eps)))                                     \
            FAIL_AT("%s ~= %s failed: %.9g != %.9g", #a, #b, va_, vb_);                     \
    } while (0)

typedef struct test_entry {
    const char *name;
    void (*fn)(void);
} test_entry;

static inline int run_tests(const char *suite, const test_entry *tests, size_t n)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            alarm(TEST_TIMEOUT_S);
            tests[i].fn();
            exit(0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
            ;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            printf("ok   %s.%s\n", suite, tests[i].name);
        } else {
            failed++;
            if (WIFSIGNALED(st))
                printf("FAIL %s.%s (signal %d%s)\n", suite, tests[i].name, WTERMSIG(st),
                       WTERMSIG(st) == SIGALRM ? ": timed out" : "");
            else
                printf("FAIL %s.%s\n", suite, tests[i].name);
        }
    }
    printf("%zu passed, %d failed\n", n - (size_t)failed, failed);
    return failed ? 1 : 0;
}

#define T(name) {#name, test_##name}
#define RUN_TESTS(suite, ...)                                                        \
    do {                                                                             \
        static const test_entry tests_[] = {__VA_ARGS__};                            \
        return run_tests(suite, tests_, sizeof tests_ / sizeof tests_[0]);          \
    } while (0)

#endif
