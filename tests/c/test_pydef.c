/* test_pydef.c -- finding a class's method in source, for `affidavit check`. */
#include "afd.h"
#include "harness.h"
#include "pydef.h"

static const char server[] = "import asyncio\n"
                             "\n"
                             "class MultiResourceServer:\n"
                             "    def __init__(self) -> None:\n"
                             "        self.sessions: dict = {}\n"
                             "\n"
                             "    async def handle_request(self, client_id: str, n=1, *rest, flag) -> None:\n"
                             "        await asyncio.sleep(0)\n"
                             "\n"
                             "    def sync_one(self, a, b: int):\n"
                             "        return a\n"
                             "\n"
                             "    @staticmethod\n"
                             "    async def helper(x, /, y=2):\n"
                             "        return x\n"
                             "\n"
                             "    @classmethod\n"
                             "    async def make(cls, name):\n"
                             "        return cls()\n"
                             "\n"
                             "@dataclass\n"
                             "class Other:\n"
                             "    async def go(self):\n"
                             "        pass\n"
                             "\n"
                             "def outer():\n"
                             "    class Hidden:\n"
                             "        async def go(self):\n"
                             "            pass\n";

static afd_pymethod look(const char *src, const char *cls, const char *method)
{
    afd_pymethod m;
    CHECK_EQ_INT(afd_pydef_method(src, strlen(src), cls, method, &m), 0);
    return m;
}

TEST(finds_an_async_method_and_its_required_parameters)
{
    afd_pymethod m = look(server, "MultiResourceServer", "handle_request");
    CHECK_EQ_INT(m.found_class, 1);
    CHECK_EQ_INT(m.found_method, 1);
    CHECK_EQ_INT(m.is_async, 1);
    CHECK_EQ_INT(m.is_static, 0);
    CHECK_EQ_INT(m.line, 7);
    CHECK_EQ_INT(m.error_line, 0);
    CHECK_EQ_STR(m.required, "client_id");
    CHECK_EQ_STR(m.methods, "__init__, handle_request, sync_one, helper, make");
}

TEST(sync_static_class_and_decorated)
{
    afd_pymethod m = look(server, "MultiResourceServer", "sync_one");
    CHECK_EQ_INT(m.found_method, 1);
    CHECK_EQ_INT(m.is_async, 0);
    CHECK_EQ_STR(m.required, "a, b");
    m = look(server, "MultiResourceServer", "helper");
    CHECK_EQ_INT(m.is_async, 1);
    CHECK_EQ_INT(m.is_static, 1);
    CHECK_EQ_STR(m.required, "x");
    m = look(server, "MultiResourceServer", "make");
    CHECK_EQ_INT(m.is_classmethod, 1);
    CHECK_EQ_STR(m.required, "name");
    m = look(server, "Other", "go");
    CHECK_EQ_INT(m.found_class, 1);
    CHECK_EQ_INT(m.is_async, 1);
    CHECK_EQ_STR(m.required, "");
}

TEST(missing_class_and_method)
{
    afd_pymethod m = look(server, "Nope", "go");
    CHECK_EQ_INT(m.found_class, 0);
    CHECK_EQ_INT(m.line, 0);
    m = look(server, "Hidden", "go"); /* not at module level */
    CHECK_EQ_INT(m.found_class, 0);
    m = look(server, "MultiResourceServer", "nope");
    CHECK_EQ_INT(m.found_class, 1);
    CHECK_EQ_INT(m.found_method, 0);
    CHECK_EQ_INT(m.line, 3);
    CHECK_EQ_STR(m.methods, "__init__, handle_request, sync_one, helper, make");
}

TEST(later_def_replaces_earlier)
{
    const char *src = "class A:\n    def f(self, x):\n        pass\n    async def f(self):\n        pass\n";
    afd_pymethod m = look(src, "A", "f");
    CHECK_EQ_INT(m.is_async, 1);
    CHECK_EQ_INT(m.line, 4);
    CHECK_EQ_STR(m.required, "");
}

TEST(syntax_errors_and_bad_arguments)
{
    const char *src = "class A:\n    async def f(self):\n        x = (\n\nclass B:\n    pass\n";
    afd_pymethod m = look(src, "A", "f");
    CHECK(m.error_line >= 3);
    CHECK_EQ_INT(afd_pydef_method(NULL, 0, "A", "f", &m), AFD_EINVAL);
    CHECK_EQ_INT(afd_pydef_method(src, strlen(src), NULL, "f", &m), AFD_EINVAL);
    m = look("", "A", "f");
    CHECK_EQ_INT(m.found_class, 0);
    CHECK_EQ_INT(m.error_line, 0);
    char garbage[4096];
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (char)((i * 7919u) % 251u);
    CHECK_EQ_INT(afd_pydef_method(garbage, sizeof garbage, "A", "f", &m), 0);
    CHECK_EQ_INT(m.found_method, 0);
}

TEST(long_method_lists_are_cut)
{
    char src[8192] = "class Big:\n";
    for (int i = 0; i < 100; i++) {
        char line[64];
        snprintf(line, sizeof line, "    def method_number_%d(self): pass\n", i);
        strcat(src, line);
    }
    afd_pymethod m = look(src, "Big", "method_number_99");
    CHECK_EQ_INT(m.found_method, 1);
    CHECK(strlen(m.methods) < sizeof m.methods);
    CHECK(strstr(m.methods, "...") != NULL);
}

TEST(bases_are_names_and_dotted_names_in_order)
{
    const char *src = "import typing\n"
                      "class C(Base, mod.sub.Other, typing.Generic[T], metaclass=Meta):\n"
                      "    pass\n"
                      "class D:\n"
                      "    pass\n";
    afd_pymethod m = look(src, "C", "increment");
    CHECK_EQ_INT(m.found_class, 1);
    CHECK_EQ_INT(m.found_method, 0);
    CHECK_EQ_STR(m.bases, "Base, mod.sub.Other");
    m = look(src, "D", "increment");
    CHECK_EQ_STR(m.bases, "");
}

static int import_of(const char *src, const char *name, char *module, char *attr)
{
    return afd_pydef_import(src, strlen(src), name, module, 128, attr, 128);
}

TEST(where_an_imported_name_comes_from)
{
    const char *src = "import json\n"
                      "import os.path\n"
                      "import collections.abc as cabc\n"
                      "from aiocache.base import BaseCache\n"
                      "from .backends import memory as mem, redis\n"
                      "from . import base\n"
                      "from x import *\n"
                      "def f():\n"
                      "    from y import Hidden\n";
    char module[128], attr[128];
    CHECK_EQ_INT(import_of(src, "BaseCache", module, attr), 1);
    CHECK_EQ_STR(module, "aiocache.base");
    CHECK_EQ_STR(attr, "BaseCache");
    CHECK_EQ_INT(import_of(src, "mem", module, attr), 1);
    CHECK_EQ_STR(module, ".backends");
    CHECK_EQ_STR(attr, "memory");
    CHECK_EQ_INT(import_of(src, "redis", module, attr), 1);
    CHECK_EQ_STR(attr, "redis");
    CHECK_EQ_INT(import_of(src, "base", module, attr), 1);
    CHECK_EQ_STR(module, ".");
    CHECK_EQ_STR(attr, "base");
    CHECK_EQ_INT(import_of(src, "json", module, attr), 1);
    CHECK_EQ_STR(module, "json");
    CHECK_EQ_STR(attr, "");
    CHECK_EQ_INT(import_of(src, "os", module, attr), 1); /* import os.path binds os */
    CHECK_EQ_STR(module, "os");
    CHECK_EQ_INT(import_of(src, "cabc", module, attr), 1);
    CHECK_EQ_STR(module, "collections.abc");
    CHECK_EQ_INT(import_of(src, "path", module, attr), 0);
    CHECK_EQ_INT(import_of(src, "Hidden", module, attr), 0); /* not at module level */
    CHECK_EQ_INT(import_of(src, "Nope", module, attr), 0);
    CHECK_EQ_STR(module, "");
    CHECK_EQ_INT(afd_pydef_import(NULL, 0, "x", module, 128, attr, 128), AFD_EINVAL);
}

TEST(a_later_import_wins)
{
    const char *src = "from a import Base\nfrom b import Other as Base\n";
    char module[128], attr[128];
    CHECK_EQ_INT(import_of(src, "Base", module, attr), 1);
    CHECK_EQ_STR(module, "b");
    CHECK_EQ_STR(attr, "Other");
}

int main(void)
{
    RUN_TESTS("pydef", T(finds_an_async_method_and_its_required_parameters),
              T(sync_static_class_and_decorated), T(missing_class_and_method), T(later_def_replaces_earlier),
              T(syntax_errors_and_bad_arguments), T(long_method_lists_are_cut),
              T(bases_are_names_and_dotted_names_in_order), T(where_an_imported_name_comes_from),
              T(a_later_import_wins));
}
