"""ctypes bindings of C headers: structs, unions, typedefs and enums through ctypeslib2's clang parser,
integer #defines through the C compiler, and ioctl macros as request numbers with the struct they carry.

ctypeslib2's own code generator writes a large preamble and packs every struct with explicit padding;
this emitter writes plain ctypes classes with natural alignment (`_pack_` where the header packs a record:
#pragma pack or __attribute__((packed)) leave it less aligned than its members) and proves each layout, bit
fields included, against the offsets libclang computed before the module is written. An untagged record
that a typedef names (`typedef struct { ... } T;`) is class T with _cname_ 'T'.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

from usergpu.autogen.generator import cmacros, toolchain, writer
from usergpu.errors import ToolchainError

# ioctl macro forms: the request-building macro, then (number, struct type)
IOCTL_CALL = re.compile(r"^(\w+)\s*\(\s*(.+?)\s*,\s*((?:struct|union)\s+\w+|\w+)\s*\)$")


class _Emitter:
    """Writes each record once, after the records its fields need (ctypes wants them defined first)."""

    def __init__(self, typedesc, files: set[str], anonymous: set[str], typedefs: dict[str, str] | None = None):
        self.td = typedesc
        self.files = files
        self.anonymous = anonymous
        self.typedefs = typedefs or {}  # untagged record -> the typedef that names it
        self.done: set[str] = set()
        self.out: list[str] = []
        self.records: dict[str, object] = {}

    def ours(self, item) -> bool:
        return bool(getattr(item, "location", None)) and item.location[0] in self.files

    def ctype(self, t) -> str:
        td = self.td
        if isinstance(t, td.CvQualifiedType):
            return self.ctype(t.typ)
        if isinstance(t, td.Typedef):
            return self.ctype(t.typ)
        if isinstance(t, td.FundamentalType):
            if t.name in ("None", "void"):
                return "None"
            return "C." + t.name
        if isinstance(t, td.Enumeration):
            negative = any(v.value < 0 for v in t.values)
            return f"C.c_{'' if negative else 'u'}int{t.size * 8}"
        if isinstance(t, td.ArrayType):
            return f"{self.ctype(t.typ)} * {t.size}"
        if isinstance(t, td.PointerType):
            target = t.typ
            while isinstance(target, (td.CvQualifiedType, td.Typedef)):
                target = target.typ
            if isinstance(target, td.FundamentalType) and target.name in ("None", "void"):
                return "C.c_void_p"
            if isinstance(target, (td.FunctionType, td.Function)):
                return "C.c_void_p"
            return f"C.POINTER({self.ctype(target)})"
        if isinstance(t, (td.Structure, td.Union)):
            self.record(t)
            return self.typedefs.get(t.name, t.name)
        raise ToolchainError(f"no ctypes form for {type(t).__name__} {getattr(t, 'name', '')}")

    def align(self, t) -> int:
        """The alignment libclang gives a member type (a packed record's is its packing)."""
        td = self.td
        while isinstance(t, (td.CvQualifiedType, td.Typedef, td.ArrayType)):
            t = t.typ
        return max(getattr(t, "align", 1), 1)

    def record(self, r) -> None:
        if r.name in self.done:
            return
        self.done.add(r.name)
        fields, anonymous = [], []
        for f in r.members:
            if f.is_padding:
                continue
            name = f.name or f"_{len(anonymous)}"
            if not f.name:
                anonymous.append(name)
            ct = self.ctype(f.type)
            fields.append(f"({name!r}, {ct}, {f.bits})" if f.is_bitfield else f"({name!r}, {ct})")
        base = "Union" if isinstance(r, self.td.Union) else "Struct"
        kind = "union" if base == "Union" else "struct"
        cname = r.name.removeprefix(f"{kind}_")
        anon_record = r.name in self.anonymous
        name = self.typedefs.get(r.name, r.name)
        lines = [f"class {name}({base}):"]
        if name != r.name:  # an untagged record C reaches through its typedef
            lines.append(f"    _cname_ = {name!r}")
        else:
            lines.append(f"    _cname_ = {None if anon_record else f'{kind} {cname}'!r}")
        if anonymous:
            lines.append(f"    _anonymous_ = {tuple(anonymous)!r}")
        natural = max((self.align(f.type) for f in r.members if not f.is_padding), default=1)
        if r.align < natural:
            lines.append(f"    _pack_ = {r.align}")
        lines.append(writer.table("_fields_", fields, "[", "]", indent="    ").rstrip("\n"))
        self.out.append("\n".join(lines))
        self.records[name] = r

    def typedef(self, t) -> str | None:
        target = t.typ
        while isinstance(target, self.td.CvQualifiedType):
            target = target.typ
        if isinstance(target, (self.td.Structure, self.td.Union)):
            if target.members is None:  # declared, never defined: an opaque handle has no layout to bind
                return None
            ct = self.ctype(target)
            return None if ct == t.name else f"{t.name} = {ct}"
        if isinstance(target, (self.td.FundamentalType, self.td.Enumeration, self.td.Typedef)):
            ct = self.ctype(target)
            return None if ct == "None" else f"{t.name} = {ct}"
        return None


def _tags(header: Path, flags: tuple[str, ...] = ()) -> set[str]:
    """'struct x' / 'union x' of every tagged record libclang sees; ctypeslib makes up names for the others.
    libclang spells an untagged record by the typedef naming it (`typedef struct { ... } T;` is 'T', its type
    'T' rather than 'struct T'), so a tag is a record whose type is spelled with its kind."""
    ci = toolchain.cindex()
    tu = ci.Index.create().parse(str(header), args=["-x", "c", *flags, *toolchain.clang_flags()])
    kinds = {ci.CursorKind.STRUCT_DECL: "struct", ci.CursorKind.UNION_DECL: "union"}
    tags, stack = set(), [tu.cursor]
    while stack:
        c = stack.pop()
        if c.kind in kinds and c.spelling and not c.is_anonymous() and c.type.spelling.startswith(f"{kinds[c.kind]} "):
            tags.add(f"{kinds[c.kind]}_{c.spelling}")
        stack.extend(c.get_children())
    return tags


def sections(
    headers: list[Path], ioctl_prefixes: tuple[str, ...] = (), select: re.Pattern | None = None,
    flags: tuple[str, ...] = (),
) -> tuple[list[str], dict]:
    """Module sections for headers[0] and what it includes of headers[1:] (names matching select, if given),
    with the records emitted (ctypeslib name -> its description, for _prove_layouts). flags: include folders the
    headers need, searched before the toolchain's."""
    clangparser, typedesc = toolchain.ctypeslib()
    main = headers[0]
    parser = clangparser.Clang_Parser([*flags, *toolchain.clang_flags()])
    parser.parse(str(main))
    items = parser.get_result()
    tags = _tags(main, flags)
    anon = {i.name for i in items if isinstance(i, (typedesc.Structure, typedesc.Union)) and i.name not in tags}
    files = {str(h) for h in headers}
    named: dict[str, str] = {}  # untagged record -> the first typedef of it in our headers
    for it in items:
        if isinstance(it, typedesc.Typedef) and getattr(it, "location", None) and it.location[0] in files:
            target = it.typ
            if isinstance(target, (typedesc.Structure, typedesc.Union)) and target.name in anon:
                named.setdefault(target.name, it.name)
    em = _Emitter(typedesc, files, anon, named)

    def wanted(name: str) -> bool:
        return select is None or bool(select.search(name))

    enums, typedefs = [], []
    for it in items:
        names = [it.name or "", *(v.name for v in it.values)] if isinstance(it, typedesc.Enumeration) else [it.name or ""]
        if not em.ours(it) or not any(map(wanted, names)):  # an enum, by its name or any enumerator's
            continue
        if isinstance(it, (typedesc.Structure, typedesc.Union)) and it.members is not None:
            if it.name not in anon:
                em.record(it)
        elif isinstance(it, typedesc.Enumeration):
            enums.append(it)
        elif isinstance(it, typedesc.Typedef):
            line = em.typedef(it)
            if line:
                typedefs.append(line)

    macros = [m for h in headers for m in cmacros.read(h, [*flags, *toolchain.clang_flags()]) if wanted(m.name)]
    values = cmacros.constants(macros, str(main), [*flags, *toolchain.c_flags()])
    enum_names = {v.name for e in enums for v in e.values}

    out = list(em.out)
    if typedefs:
        out.append("# typedefs\n" + "\n".join(typedefs))
    for e in enums:
        if e.name:
            members = "".join(f"\n    {v.name} = {writer.hexint(v.value)}" for v in e.values)
            out.append(f"class {e.name}(IntEnum):{members}")
    consts = [f"{v.name} = {writer.hexint(v.value)}" for e in enums for v in e.values]
    ioctls = []
    for m in macros:
        if m.params is not None or m.name not in values or m.name in enum_names:
            continue
        call = IOCTL_CALL.match(" ".join(m.body).replace(" (", "(").replace("( ", "(").replace(" )", ")"))
        if m.name.startswith(ioctl_prefixes) and call:
            struct = call.group(3).replace(" ", "_")
            if struct not in em.done:
                raise ToolchainError(f"{m.name} carries {call.group(3)}, which was not emitted")
            ioctls.append(f"{m.name} = Ioctl({values[m.name]:#x}, {struct})")
            continue
        consts.append(f"{m.name} = {writer.hexint(values[m.name])}")
    if consts:
        out.append("# enumerators and #defines\n" + "\n".join(consts))
    if ioctls:
        out.append("# ioctl request numbers and the struct each carries\n" + "\n".join(ioctls))
    return out, em.records


def render(
    doc: str, headers: list[Path], inputs: list[str], ioctl_prefixes: tuple[str, ...] = (), select: str | None = None
) -> str:
    """A whole module of the bindings of headers (see sections), its layouts proven against libclang."""
    out, records = sections(headers, ioctl_prefixes, re.compile(select) if select else None)
    text = writer.module(doc, inputs, writer.imports("\n".join(out)), out)
    prove_layouts(text, records)
    return text


def prove_layouts(text: str, records: dict) -> None:
    """Every emitted record's ctypes size and field offsets equal what libclang computed."""
    ns: dict = {}
    exec(compile(text, "<generated>", "exec"), ns)
    for name, r in records.items():
        cls = ns[name]
        if ctypes.sizeof(cls) != r.size:
            raise ToolchainError(f"{name}: ctypes size {ctypes.sizeof(cls)} != clang {r.size}")
        for f in r.members:
            if f.is_padding or not f.name:
                continue
            desc = getattr(cls, f.name)
            if f.is_bitfield:  # ctypes: the storage unit's byte offset, and (width << 16) | bit offset in it
                bit = desc.offset * 8 + (desc.size & 0xFFFF)
                if bit != f.offset or desc.size >> 16 != f.bits:
                    raise ToolchainError(f"{name}.{f.name}: ctypes bits {bit}:{desc.size >> 16} != clang "
                                         f"{f.offset}:{f.bits}")
                continue
            if desc.offset * 8 != f.offset:
                raise ToolchainError(f"{name}.{f.name}: ctypes offset {desc.offset} != clang {f.offset // 8}")
