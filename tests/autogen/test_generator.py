"""The generator's pieces on small headers written here, and its command line."""

from __future__ import annotations

import ctypes
import re
import subprocess

import pytest

from usergpu.autogen import __main__ as autogen_main
from usergpu.autogen._support import FieldMacro, Ioctl
from usergpu.autogen.generator import cmacros, cstructs, spec, toolchain
from usergpu.errors import ToolchainError

HEADER = r"""
#include <linux/ioctl.h>
#include <linux/types.h>
#define BASE 3
#define SHIFTED (BASE << 4)
#define NEGATIVE (-2)
#define BIG 0xFFFFFFFFFFFFFFFFull
#define NAME "not a number"
#define RATIO 1.5
#define KEYWORD struct toy
#define FIELD(x) (((x) & 0xF) << 8)
#define PACK(a, b) ((1u << 31) | ((a) & 1) | (((b) & 3) << 4))
#define SQUARE(x) ((x) * (x))
enum toy_kind { TOY_A = 1, TOY_B = 0x80 };
struct toy {
    __u32 kind;
    union { __u64 addr; __u32 half[2]; };
    struct { __u16 lo, hi; } pair[3];
    __u8 tail;
};
#define TOY_IOC_MAKE _IOWR('T', 0x01, struct toy)
"""


@pytest.fixture
def header(tmp_path):
    h = tmp_path / "toy.h"
    h.write_text(HEADER)
    return h


def test_constants_are_valued_by_the_compiler(header):
    macros = cmacros.read(header, toolchain.clang_flags())
    values = cmacros.constants(macros, str(header), toolchain.c_flags())
    assert values["BASE"] == 3 and values["SHIFTED"] == 48 and values["NEGATIVE"] == -2
    assert values["BIG"] == 2**64 - 1
    assert values["TOY_IOC_MAKE"] == (3 << 30) | (32 << 16) | (ord("T") << 8) | 1
    for not_an_int in ("NAME", "RATIO", "KEYWORD"):
        assert not_an_int not in values


def test_field_macros_are_modelled_or_left_out(header):
    macros = cmacros.read(header, toolchain.clang_flags())
    fields, skipped = cmacros.field_macros(macros, str(header), toolchain.c_flags())
    assert fields["FIELD"] == (0, (("x", 8, 0xF00),))
    assert fields["PACK"] == (1 << 31, (("a", 0, 1), ("b", 4, 0x30)))
    assert FieldMacro(*fields["PACK"])(1, 7) == (1 << 31) | 1 | 0x30
    assert "SQUARE" in skipped and "SQUARE" not in fields


def test_struct_bindings_match_libclang_and_carry_the_ioctl(header):
    text = cstructs.render("toy", [header], ["test: toy.h"], ("TOY_IOC_",))
    ns: dict = {}
    exec(text, ns)
    toy = ns["struct_toy"]
    assert toy._cname_ == "struct toy"
    assert ctypes.sizeof(toy) == 32
    assert toy.addr.offset == 8 and toy.half.offset == 8  # the anonymous union's members, reached directly
    assert toy.pair.offset == 16 and toy.tail.offset == 28
    assert ns["TOY_IOC_MAKE"] == Ioctl(ns["TOY_IOC_MAKE"].request, toy) and ns["TOY_IOC_MAKE"].size == 32
    assert ns["toy_kind"].TOY_B == 0x80 and ns["TOY_B"] == 0x80


def test_check_reports_up_to_date_stale_and_skipped(monkeypatch, capsys, tmp_path):
    committed = tmp_path / "fine.py"
    committed.write_text("x = 1\n")
    (tmp_path / "stale.py").write_text("x = 1\n")

    def missing():
        raise ToolchainError("/usr/include/nothing.h not found: install the Debian package nothing-dev")

    rows = [spec.Module("fine", "-", lambda: "x = 1\n"), spec.Module("stale", "-", lambda: "x = 2\n"),
            spec.Module("absent", "nothing-dev", missing)]
    monkeypatch.setattr(autogen_main, "MODULES", rows)
    monkeypatch.setattr(autogen_main, "HERE", tmp_path)
    assert autogen_main.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "fine: up to date" in out and "stale: out of date" in out
    assert "absent: skipped (/usr/include/nothing.h not found: install the Debian package nothing-dev)" in out
    assert autogen_main.main(["--check", "--only", "fine"]) == 0
    assert committed.read_text() == "x = 1\n"  # --check never writes the committed files


# every rule of headers_install.sh's sed at work (the real uapi headers the generator reads only have __user)
UAPI_TOY = """#ifndef _UAPI_TOY_H
#define _UAPI_TOY_H
#include <linux/compiler.h>
#include <linux/compiler_types.h>
struct toy { char __user *name; void (__force *f)(void); int __iomem\tx; int __user
    y; } __packed;
struct toy2 { int a; } __packed__x;
static inline int f(int x) __attribute_const__;
int g(void) __attribute_const__ ;
asm volatile("nop");
#endif /* _UAPI_TOY_H */
"""


def test_uapi_headers_are_installed_as_headers_install_sh_does(tmp_path):
    """headers_install() gives what the sed of linux-source-6.12's scripts/headers_install.sh gives, on each uapi
    header the generator reads and on a header using every rule; the installed drm.h has no __user left."""
    try:
        tree = toolchain.linux_tree()
    except ToolchainError as e:
        pytest.skip(str(e))
    script = (tree / toolchain.HEADERS_INSTALL_SH).read_text()
    program = re.search(r"^sed -E -e '(.*?)' \$INFILE", script, re.S | re.M).group(1)
    toy = tmp_path / "toy.h"
    toy.write_text(UAPI_TOY)
    uapi = [tree / f for f in toolchain.LINUX_FILES if f.startswith(f"{toolchain.UAPI}/")]
    assert len(uapi) == 4
    for src in (*uapi, toy):
        sed = subprocess.run(["sed", "-E", "-e", program, str(src)], capture_output=True, text=True, check=True)
        assert toolchain.headers_install(src.read_text()) == sed.stdout, src.name
    assert toolchain.headers_install(UAPI_TOY) != UAPI_TOY
    drm_h = toolchain.uapi_header(toolchain.AMDGPU_DRM[1])[0].read_text()
    assert "char *name;" in drm_h and "__user" not in drm_h
