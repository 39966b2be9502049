"""A kernel's C parameters (isa/nv/param_types.py): compile_cuda and compile_opencl write each kernel's parameter
names and C types, as clang's AST gives them, into the PTX as comment lines that ptxas ignores and assemble_ptx's
cubin carries; read() gives them back, and refuses lines that do not say them; a C++ kernel's mangled name says its
types where no line does. Layouts take them where they fit the PTX's parameters (params._typed)."""

from __future__ import annotations

import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

import usergpu
from usergpu.errors import CodeObjectError
from usergpu.isa.nv import cubin, param_types, params, ptx
from usergpu.isa.nv.param_types import CParam

needs_toolchain = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

CUDA = r"""
typedef float real;
typedef float *fptr;
struct Pair { int a; float b; };
extern "C" __global__ void vadd(const float *__restrict__ a, real *b, fptr c, unsigned n, Pair p, double d) {}
template <typename T> __global__ void fill(T *x, T y) { x[0] = y; }
template __global__ void fill<short>(short *, short);
namespace ns { __global__ void inner(unsigned long long *p, char c, long l) {} }
__global__ void declared(int *, float);
__global__ void declared(int *out, float f) { out[0] = f; }
__device__ int helper(int *q) { return *q; }
"""
WANT = {
    "vadd": (CParam("a", "float*"), CParam("b", "float*"), CParam("c", "float*"), CParam("n", "unsigned int"),
             CParam("p", "Pair"), CParam("d", "double")),
    "_Z4fillIsEvPT_S0_": (CParam("x", "short*"), CParam("y", "short")),
    "_ZN2ns5innerEPycl": (CParam("p", "unsigned long long*"), CParam("c", "char"), CParam("l", "long")),
    "_Z8declaredPif": (CParam("out", "int*"), CParam("f", "float")),
}


@needs_toolchain
def test_compile_cuda_names_each_kernels_c_parameters_in_its_ptx_and_the_cubin_keeps_them():
    text = usergpu.compile_cuda(CUDA, "sm_90").decode()
    assert set(ptx.parse(text).kernels) == set(WANT)  # the lines are comments: PTX parses as before
    assert dict(param_types.read(text)) == WANT  # typedefs resolved, qualifiers gone, a definition's names
    assert dict(param_types.read(cubin.parse(usergpu.assemble_ptx(text, "sm_90")).ptx)) == WANT


@needs_toolchain
def test_compile_opencl_names_its_kernels_parameters_too():
    src = ("typedef float real; __kernel void k(__global const real *a, __local float *tile, int n, float4 v, "
           "__constant uint *c) {}")
    assert dict(param_types.read(usergpu.compile_opencl(src, "sm_90").decode())) == {
        "k": (CParam("a", "float*"), CParam("tile", None), CParam("n", "int"), CParam("v", "float4"),
              CParam("c", "unsigned int*"))}  # a __local pointer is shared memory's, not an array's: none to check


@pytest.mark.parametrize(("written", "c_type"), [
    ("const float *__restrict", "float*"), ("__global volatile unsigned int *__private", "unsigned int*"),
    ("__private int", "int"), ("struct Pair", "Pair"), ("float const*", "float*"),
    ("unsigned long long", "unsigned long long")])
def test_a_written_type_is_named_as_the_checks_name_it(written, c_type):
    assert param_types.normal(written) == c_type


BAD_LINES = [
    "// usergpu.params k [[\"a\", \"float*\"]",  # not JSON
    "// usergpu.params k {\"a\": \"float*\"}",  # not a list
    "// usergpu.params k [[\"a\"]]",  # not a pair
    "// usergpu.params k [[\"a\", 7]]",  # a type that is no string
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_a_line_that_does_not_say_the_parameters_is_refused_with_its_line(line):
    with pytest.raises(CodeObjectError, match=r"ptx: line 3: usergpu.params for k is not a list of \[name, C type\]"):
        param_types.read(f".version 8.7\n.target sm_90\n{line}\n")


def test_ptx_without_the_lines_names_nothing():
    assert dict(param_types.read(".version 8.7\n.target sm_90\n// usergpu.paramsk []\n")) == {}
    assert dict(param_types.read(None)) == {}


@pytest.mark.skipif(not param_types.shutil.which(param_types.CXXFILT), reason=f"needs {param_types.CXXFILT}")
@pytest.mark.parametrize(("name", "types"), [
    ("_Z4vaddPKfS0_Pfj", ("float*", "float*", "float*", "unsigned int")),  # S0_: the second substitution
    ("_Z4fillIsEvPT_S0_", ("short*", "short")),  # a template's: the return type before its parameters
    ("_Z5emptyv", ()),
    ("_Z1fPFviE", ("void (*)(int)",)),  # a function pointer: one parameter, of no checked type
])
def test_a_mangled_name_says_its_parameters_types(name, types):
    assert param_types.of_mangled(name) == tuple(CParam(None, t) for t in types)


@pytest.mark.parametrize("name", ["vadd", "_Zgarbage", "_Z"])
def test_a_c_name_or_a_name_that_only_looks_mangled_says_nothing(name):
    assert param_types.of_mangled(name) is None


# ---- C parameters on a layout --------------------------------------------------------------------------------------
PTX = """
.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_p, .param .u32 k_n)
{ ret; }
"""
K = ptx.parse(PTX).kernels["k"]


def test_c_parameters_that_fit_type_the_slots():
    layout = params.of_ptx(K, (CParam("p", "float*"), CParam("n", "int")))
    assert [s.c for s in layout.slots] == [CParam("p", "float*"), CParam("n", "int")]
    assert [s.c for s in params.of_ptx(K).slots] == [None, None]  # a C name says nothing of its types


@pytest.mark.parametrize(("c_params", "says"), [
    ((CParam("p", "float*"),), "kernel k: the source declares 1 parameters, the PTX 2"),
    ((CParam("p", "float"), CParam("n", "int")), r"parameter 0 \(p\) is float in the source, 8 bytes in the PTX"),
    ((CParam("p", "float*"), CParam("n", "double")), r"parameter 1 \(n\) is double in the source, 4 bytes"),
    ((CParam("p", "float*"), CParam("n", "int*")), r"parameter 1 \(n\) is int\* in the source, 4 bytes"),
])
def test_c_parameters_that_do_not_fit_the_ptxs_are_refused(c_params, says):
    with pytest.raises(CodeObjectError, match=says):
        params.of_ptx(K, c_params)


def test_a_mangled_name_whose_types_do_not_fit_is_taken_untyped():
    fn = ptx.parse(PTX.replace("entry k(", "entry _Z1kPfS_S_(")).kernels["_Z1kPfS_S_"]  # says 3 parameters, has 2
    assert [s.c for s in params.of_ptx(fn).slots] == [None, None]
