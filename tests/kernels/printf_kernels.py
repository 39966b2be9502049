"""OpenCL C kernels calling printf (compile_opencl gives them usergpu's __printf_alloc, isa/amd/codeobj/printf.py
ALLOC), built once per arch."""

from __future__ import annotations

from functools import cache

from usergpu.isa.amd.codeobj import compile_opencl

SOURCE = r"""// OpenCL C printf: each work-item prints its id and a float, then two lines more in its own order; a
// second kernel prints every conversion kind the AMD lowering stores differently.
kernel void ids(global const float *x) {
  int i = get_global_id(0);
  printf("thread %d value %f\n", i, x[i]);
}

kernel void ordered(global const int *n) {
  int i = get_global_id(0);
  for (int k = 0; k < n[0]; k++)
    printf("%d:%d\n", i, k);
}

kernel void faults(global int *p) {
  printf("before the fault\n");
  ((global int *)16)[get_global_id(0)] = p[0];  /* the null page: never mapped, whatever else is allocated */
}

kernel void kinds(global const char *s, long big) {
  if (get_global_id(0) == 0) {
    printf("%s|%s|%c|%ld|%hhd|%5.2f|%e|%x|%p\n", "lit", s, 'A', big, (char)-3, 3.14159f, 1.5, 255u, (global void *)0);
    printf("%v4hlf|%v2hd|%v3hhd|%v2ld\n", (float4)(1, 2, 3, 4), (short2)(5, -6), (char3)(1, -2, 3), (long2)(7, 8));
    printf("colon: tab\t quote\" 100%%\n");
    printf("no newline ");
    printf("then one\n");
  }
}
"""


@cache
def printf_kernels(arch: str) -> bytes:
    return compile_opencl(SOURCE, arch)
