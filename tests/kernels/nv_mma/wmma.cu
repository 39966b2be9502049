// Tensor-core kernels: wmma through clang's __hmma/__mma/__imma builtins, and mma.sync, ldmatrix, stmatrix and
// movmatrix through inline PTX. Matrices are row-major unless a kernel says otherwise; 16-bit floats are passed as
// their bits (unsigned short).
#define FULL 0xffffffffu

// ---- wmma --------------------------------------------------------------------------------------------------------
// D (M x N) = A (M x K) @ B (K x N) + C, one warp a TM x TN tile of D, over K in steps of TK. A and B are stored
// row-major (layout 0) or column-major (1); C and D row-major. The first step multiplies into C's type (MMA), the
// later ones accumulate in D's (MMA_D), so a kernel can take C and D of different types.
#define GEMM(NAME, TIN, TC, TD, FA, FB, FC, FD, NA, NB, NC, ND, LDA, LDB, LDC, MMA, MMA_D, STD, TM, TN, TK, LA, LB,  \
             SATF)                                                                                               \
  extern "C" __global__ void NAME(const TIN *A, const TIN *B, const TC *C, TD *D, int M, int N, int K) {         \
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, m0 = w / (N / TN) * TM, n0 = w % (N / TN) * TN;        \
    FA a[NA];                                                                                                    \
    FB b[NB];                                                                                                    \
    FC c[NC];                                                                                                    \
    FD d[ND];                                                                                                    \
    LDC(c, (const FC *)(C + m0 * N + n0), N, 0);                                                                 \
    for (int k = 0; k < K; k += TK) {                                                                            \
      LDA(a, (const FA *)(LA ? A + k * M + m0 : A + m0 * K + k), LA ? M : K, LA);                                \
      LDB(b, (const FB *)(LB ? B + n0 * K + k : B + k * N + n0), LB ? K : N, LB);                                \
      if (k == 0)                                                                                                \
        MMA(d, a, b, c, LA * 2 + LB, SATF);                                                                      \
      else                                                                                                       \
        MMA_D(d, a, b, d, LA * 2 + LB, SATF);                                                                    \
    }                                                                                                            \
    STD((FD *)(D + m0 * N + n0), d, N, 0);                                                                       \
  }

// f16 operands: accumulators f32 (8 floats) or f16 (4 registers of two halves)
#define HALF_F32(NAME, S, TM, TN, LA, LB)                                                                          \
  GEMM(NAME, _Float16, float, float, int, int, float, float, 8, 8, 8, 8, __hmma_##S##_ld_a, __hmma_##S##_ld_b,      \
       __hmma_##S##_ld_c_f32, __hmma_##S##_mma_f32f32, __hmma_##S##_mma_f32f32, __hmma_##S##_st_c_f32, TM, TN, 16,  \
       LA, LB, 0)
HALF_F32(wmma_m16n16k16_f16_f32_rr, m16n16k16, 16, 16, 0, 0)
HALF_F32(wmma_m16n16k16_f16_f32_rc, m16n16k16, 16, 16, 0, 1)
HALF_F32(wmma_m16n16k16_f16_f32_cr, m16n16k16, 16, 16, 1, 0)
HALF_F32(wmma_m16n16k16_f16_f32_cc, m16n16k16, 16, 16, 1, 1)
HALF_F32(wmma_m32n8k16_f16_f32_rr, m32n8k16, 32, 8, 0, 0)
HALF_F32(wmma_m32n8k16_f16_f32_cc, m32n8k16, 32, 8, 1, 1)
HALF_F32(wmma_m8n32k16_f16_f32_rr, m8n32k16, 8, 32, 0, 0)
HALF_F32(wmma_m8n32k16_f16_f32_cc, m8n32k16, 8, 32, 1, 1)

#define HALF_F16(NAME, S, TM, TN)                                                                                  \
  GEMM(NAME, _Float16, _Float16, _Float16, int, int, int, int, 8, 8, 4, 4, __hmma_##S##_ld_a, __hmma_##S##_ld_b,    \
       __hmma_##S##_ld_c_f16, __hmma_##S##_mma_f16f16, __hmma_##S##_mma_f16f16, __hmma_##S##_st_c_f16, TM, TN, 16, \
       0, 0, 0)
HALF_F16(wmma_m16n16k16_f16_f16, m16n16k16, 16, 16)
HALF_F16(wmma_m32n8k16_f16_f16, m32n8k16, 32, 8)
HALF_F16(wmma_m8n32k16_f16_f16, m8n32k16, 8, 32)

// C f16, D f32 (then accumulating in f32); C f32, D f16 (then in f16)
GEMM(wmma_m16n16k16_c16_d32, _Float16, _Float16, float, int, int, int, float, 8, 8, 4, 8, __hmma_m16n16k16_ld_a,
     __hmma_m16n16k16_ld_b, __hmma_m16n16k16_ld_c_f16, __hmma_m16n16k16_mma_f32f16, __hmma_m16n16k16_mma_f32f32,
     __hmma_m16n16k16_st_c_f32, 16, 16, 16, 0, 0, 0)
GEMM(wmma_m16n16k16_c32_d16, _Float16, float, _Float16, int, int, float, int, 8, 8, 8, 4, __hmma_m16n16k16_ld_a,
     __hmma_m16n16k16_ld_b, __hmma_m16n16k16_ld_c_f32, __hmma_m16n16k16_mma_f16f32, __hmma_m16n16k16_mma_f16f16,
     __hmma_m16n16k16_st_c_f16, 16, 16, 16, 0, 0, 0)
// bf16 operands, f32 accumulators (bf16 fragments hold each element once: NA and NB differ per shape)
#define BF16(NAME, S, TM, TN, NA, NB, LA, LB)                                                                      \
  GEMM(NAME, unsigned short, float, float, int, int, float, float, NA, NB, 8, 8, __mma_bf16_##S##_ld_a,            \
       __mma_bf16_##S##_ld_b, __hmma_##S##_ld_c_f32, __mma_bf16_##S##_mma_f32, __mma_bf16_##S##_mma_f32,           \
       __hmma_##S##_st_c_f32, TM, TN, 16, LA, LB, 0)
BF16(wmma_m16n16k16_bf16_rr, m16n16k16, 16, 16, 4, 4, 0, 0)
BF16(wmma_m16n16k16_bf16_cc, m16n16k16, 16, 16, 4, 4, 1, 1)
BF16(wmma_m32n8k16_bf16_rr, m32n8k16, 32, 8, 8, 2, 0, 0)
BF16(wmma_m8n32k16_bf16_rr, m8n32k16, 8, 32, 2, 8, 0, 0)

// tf32 operands (f32 bits), f32 accumulators
#define TF32(NAME, LA, LB)                                                                                         \
  GEMM(NAME, float, float, float, int, int, float, float, 4, 4, 8, 8, __mma_tf32_m16n16k8_ld_a,                    \
       __mma_tf32_m16n16k8_ld_b, __mma_tf32_m16n16k8_ld_c, __mma_tf32_m16n16k8_mma_f32, __mma_tf32_m16n16k8_mma_f32, \
       __mma_m16n16k8_st_c_f32, 16, 16, 8, LA, LB, 0)
TF32(wmma_m16n16k8_tf32_rr, 0, 0)
TF32(wmma_m16n16k8_tf32_cc, 1, 1)

// 8-bit integer operands, s32 accumulators
#define INT8(NAME, S, T, TIN, TM, TN, NA, NB, SATF)                                                                \
  GEMM(NAME, TIN, int, int, int, int, int, int, NA, NB, 8, 8, __imma_##S##_ld_a_##T, __imma_##S##_ld_b_##T,         \
       __imma_##S##_ld_c, __imma_##S##_mma_##T, __imma_##S##_mma_##T, __imma_##S##_st_c_i32, TM, TN, 16, 0, 0, SATF)
INT8(wmma_m16n16k16_s8, m16n16k16, s8, signed char, 16, 16, 2, 2, 0)
INT8(wmma_m16n16k16_u8, m16n16k16, u8, unsigned char, 16, 16, 2, 2, 0)
INT8(wmma_m32n8k16_s8, m32n8k16, s8, signed char, 32, 8, 4, 1, 0)
INT8(wmma_m8n32k16_s8, m8n32k16, s8, signed char, 8, 32, 1, 4, 0)
INT8(wmma_m16n16k16_s8_satfinite, m16n16k16, s8, signed char, 16, 16, 2, 2, 1)

// m16n16k16 with A, B and D in shared memory, A and B padded to a stride of 24: clang's builtins address it
// generically; A's load and D's store are also written with .shared (32-bit shared addresses)
typedef __attribute__((address_space(3))) void *shared_ptr;
static __device__ __forceinline__ unsigned smem(const void *p) { return (unsigned)(unsigned long long)(shared_ptr)p; }

extern "C" __global__ void wmma_m16n16k16_shared(const _Float16 *A, const _Float16 *B, const float *C, float *D) {
  __shared__ __attribute__((aligned(32))) _Float16 As[16 * 24], Bs[16 * 24];
  __shared__ __attribute__((aligned(32))) float Ds[16 * 16], Es[16 * 16];
  for (int i = threadIdx.x; i < 256; i += 32) {
    As[i / 16 * 24 + i % 16] = A[i];
    Bs[i / 16 * 24 + i % 16] = B[i];
  }
  __syncthreads();
  int a[8], b[8], e[8];
  float c[8], d[8];
  __hmma_m16n16k16_ld_a(a, (const int *)As, 24, 0);
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 24;"
               : "=r"(e[0]), "=r"(e[1]), "=r"(e[2]), "=r"(e[3]), "=r"(e[4]), "=r"(e[5]), "=r"(e[6]), "=r"(e[7])
               : "r"(smem(As)));
  __hmma_m16n16k16_ld_b(b, (const int *)Bs, 24, 0);
  __hmma_m16n16k16_ld_c_f32(c, C, 16, 0);
  __hmma_m16n16k16_mma_f32f32(d, a, b, c, 0, 0);
  __hmma_m16n16k16_st_c_f32(Ds, d, 16, 0);
  __hmma_m16n16k16_mma_f32f32(d, e, b, c, 0, 0);
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};"
               ::"r"(smem(Es)), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]),
               "f"(d[7]) : "memory");
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += 32) D[i] = Ds[i] + (Ds[i] != Es[i]) * 1e30f;  // Es must equal Ds
}

// ---- mma.sync with its fragments loaded by the PTX ISA's layouts (section 9.7.14.5) -------------------------------
static __device__ __forceinline__ unsigned pack16(unsigned short lo, unsigned short hi) {
  return lo | (unsigned)hi << 16;
}
static __device__ __forceinline__ unsigned pack8(const unsigned char *p, int step) {
  return p[0] | p[step] << 8 | p[2 * step] << 16 | (unsigned)p[3 * step] << 24;
}

// D (16 x 8 f32) stored from the m16n8 accumulator layout: c0, c1 in row g, c2, c3 in row g + 8, columns 2t, 2t+1
static __device__ __forceinline__ void store_c(float *D, float c0, float c1, float c2, float c3) {
  int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;
  D[g * 8 + 2 * t] = c0;
  D[g * 8 + 2 * t + 1] = c1;
  D[(g + 8) * 8 + 2 * t] = c2;
  D[(g + 8) * 8 + 2 * t + 1] = c3;
}
#define LOAD_C                                                                                                    \
  int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;                                                               \
  float c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t],                           \
        c3 = C[(g + 8) * 8 + 2 * t + 1];

// m16n8k16 .f16 or .bf16: A 16 x 16, B 16 x 8. A: a0 a1 row g, a2 a3 row g+8, a4 a5 row g, a6 a7 row g+8; columns
// 2t + (i & 1), 8 more from a4 on. B: b0 b1 rows 2t, 2t+1, b2 b3 rows 2t+8, 2t+9; column g.
#define MMA_K16(NAME, T)                                                                                          \
  extern "C" __global__ void NAME(const unsigned short *A, const unsigned short *B, const float *C, float *D) {   \
    LOAD_C                                                                                                       \
    unsigned a0 = pack16(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);                                              \
    unsigned a1 = pack16(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);                                  \
    unsigned a2 = pack16(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);                                          \
    unsigned a3 = pack16(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);                              \
    unsigned b0 = pack16(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]);                                              \
    unsigned b1 = pack16(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);                                        \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "     \
                 "{%8, %9}, {%0, %1, %2, %3};"                                                                   \
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)                                                        \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                        \
    store_c(D, c0, c1, c2, c3);                                                                                  \
  }
MMA_K16(mma_m16n8k16_f16, "f16")
MMA_K16(mma_m16n8k16_bf16, "bf16")

// m16n8k16 with f16 accumulators: C and D are two registers of two halves, in the f32 accumulators' places
extern "C" __global__ void mma_m16n8k16_f16_f16(const unsigned short *A, const unsigned short *B,
                                                const unsigned short *C, unsigned short *D) {
  int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;
  unsigned a0 = pack16(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
  unsigned a1 = pack16(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
  unsigned a2 = pack16(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
  unsigned a3 = pack16(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
  unsigned b0 = pack16(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]);
  unsigned b1 = pack16(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);
  unsigned c0 = pack16(C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1]);
  unsigned c1 = pack16(C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
               : "+r"(c0), "+r"(c1)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  D[g * 8 + 2 * t] = c0 & 0xffff;
  D[g * 8 + 2 * t + 1] = c0 >> 16;
  D[(g + 8) * 8 + 2 * t] = c1 & 0xffff;
  D[(g + 8) * 8 + 2 * t + 1] = c1 >> 16;
}

// m16n8k8 .f16: A 16 x 8 (a0 a1 row g, a2 a3 row g+8; columns 2t, 2t+1), B 8 x 8 (b0 b1 rows 2t, 2t+1; column g)
extern "C" __global__ void mma_m16n8k8_f16(const unsigned short *A, const unsigned short *B, const float *C,
                                           float *D) {
  LOAD_C
  unsigned a0 = pack16(A[g * 8 + 2 * t], A[g * 8 + 2 * t + 1]);
  unsigned a1 = pack16(A[(g + 8) * 8 + 2 * t], A[(g + 8) * 8 + 2 * t + 1]);
  unsigned b0 = pack16(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]);
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
               "{%0, %1, %2, %3};"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(b0));
  store_c(D, c0, c1, c2, c3);
}

// m16n8k8 .tf32: A 16 x 8 (a0 row g col t, a1 row g+8 col t, a2 row g col t+4, a3 row g+8 col t+4), B 8 x 8
// (b0 row t, b1 row t+4; column g)
extern "C" __global__ void mma_m16n8k8_tf32(const unsigned *A, const unsigned *B, const float *C, float *D) {
  LOAD_C
  unsigned a0 = A[g * 8 + t], a1 = A[(g + 8) * 8 + t], a2 = A[g * 8 + t + 4], a3 = A[(g + 8) * 8 + t + 4];
  unsigned b0 = B[t * 8 + g], b1 = B[(t + 4) * 8 + g];
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  store_c(D, c0, c1, c2, c3);
}

// m16n8k32 .s8 (or .e4m3): A 16 x 32 (a0-a3 row g, a4-a7 row g+8, a8-a11 row g, a12-a15 row g+8; columns 4t + (i & 3),
// 16 more from a8 on), B 32 x 8 (b0-b3 rows 4t.., b4-b7 rows 4t+16..; column g); C and D s32 (or f32)
#define MMA_K32(NAME, TACC, PTX, CONSTRAINT)                                                                 \
  extern "C" __global__ void NAME(const unsigned char *A, const unsigned char *B, const TACC *C, TACC *D) {       \
    int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;                                                             \
    TACC c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t],                          \
         c3 = C[(g + 8) * 8 + 2 * t + 1];                                                                         \
    unsigned a0 = pack8(A + g * 32 + 4 * t, 1), a1 = pack8(A + (g + 8) * 32 + 4 * t, 1);                          \
    unsigned a2 = pack8(A + g * 32 + 4 * t + 16, 1), a3 = pack8(A + (g + 8) * 32 + 4 * t + 16, 1);                \
    unsigned b0 = pack8(B + 4 * t * 8 + g, 8), b1 = pack8(B + (4 * t + 16) * 8 + g, 8);                           \
    asm volatile("mma.sync.aligned.m16n8k32.row.col." PTX " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "        \
                 "{%0, %1, %2, %3};"                                                                             \
                 : "+" CONSTRAINT(c0), "+" CONSTRAINT(c1), "+" CONSTRAINT(c2), "+" CONSTRAINT(c3)                \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                        \
    D[g * 8 + 2 * t] = c0;                                                                                       \
    D[g * 8 + 2 * t + 1] = c1;                                                                                   \
    D[(g + 8) * 8 + 2 * t] = c2;                                                                                 \
    D[(g + 8) * 8 + 2 * t + 1] = c3;                                                                             \
  }
MMA_K32(mma_m16n8k32_s8, int, "s32.s8.s8.s32", "r")
MMA_K32(mma_m16n8k32_u8s8_satfinite, int, "satfinite.s32.u8.s8.s32", "r")
#if __CUDA_ARCH__ >= 890
MMA_K32(mma_m16n8k32_e4m3, float, "f32.e4m3.e5m2.f32", "f")
#endif

// wmma.mma on m16n16k16 fragments built by hand the way tinygrad's extra/gemm/cuda_matmul.py builds them for sm_80
// and later (register r of A: row g + 8 (r % 2), columns 2t + 8 (r / 2) and one more; of B: rows 2t + 8 (r % 2) and
// one more, column g + 8 (r / 2); floats 2r, 2r+1 of C and D: A's places): A's and B's registers 4-7 hold NaNs,
// which the multiply must not read
extern "C" __global__ void wmma_m16n16k16_by_hand(const unsigned short *A, const unsigned short *B, const float *C,
                                                  float *D) {
  int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;
  int a[8], b[8];
  float c[8], d[8];
  for (int r = 0; r < 4; r++) {
    int row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2), k = 2 * t + 8 * (r % 2), n = g + 8 * (r / 2);
    a[r] = pack16(A[row * 16 + col], A[row * 16 + col + 1]);
    b[r] = pack16(B[k * 16 + n], B[(k + 1) * 16 + n]);
    a[r + 4] = b[r + 4] = 0x7fff7fff;
    c[2 * r] = C[row * 16 + col];
    c[2 * r + 1] = C[row * 16 + col + 1];
  }
  __hmma_m16n16k16_mma_f32f32(d, a, b, c, 0, 0);
  for (int r = 0; r < 4; r++) {
    int row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
    D[row * 16 + col] = d[2 * r];
    D[row * 16 + col + 1] = d[2 * r + 1];
  }
}

// ---- ldmatrix, stmatrix, movmatrix ---------------------------------------------------------------------------------

// m16n8k16 .f16 with A (16 x 16) and B (16 x 8, k-major rows) staged in shared memory: ldmatrix.x4 gives A's
// fragment (lane L the address of row L % 16, columns 8 (L / 16)...), ldmatrix.x2.trans B's (lane L row L of B);
// GENERIC: the same through generic addresses
#define MMA_LDMATRIX(NAME, SS, ADDR, CONSTRAINT)                                                                  \
  extern "C" __global__ void NAME(const unsigned short *A, const unsigned short *B, const float *C, float *D) {   \
    __shared__ __attribute__((aligned(16))) unsigned short As[16 * 16], Bs[16 * 8];                             \
    for (int i = threadIdx.x; i < 256; i += 32) As[i] = A[i];                                                   \
    for (int i = threadIdx.x; i < 128; i += 32) Bs[i] = B[i];                                                   \
    __syncthreads();                                                                                             \
    LOAD_C                                                                                                       \
    unsigned a0, a1, a2, a3, b0, b1;                                                                             \
    int l = threadIdx.x % 32;                                                                                    \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" SS ".b16 {%0, %1, %2, %3}, [%4];"                               \
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : CONSTRAINT(ADDR(&As[l % 16 * 16 + l / 16 * 8])));    \
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans" SS ".b16 {%0, %1}, [%2];"                                 \
                 : "=r"(b0), "=r"(b1) : CONSTRAINT(ADDR(&Bs[l % 16 * 8])));                                      \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "        \
                 "{%8, %9}, {%0, %1, %2, %3};"                                                                   \
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)                                                        \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                        \
    store_c(D, c0, c1, c2, c3);                                                                                  \
  }
#define GENERIC(p) (p)
MMA_LDMATRIX(mma_ldmatrix_shared, ".shared", smem, "r")
MMA_LDMATRIX(mma_ldmatrix_generic, "", GENERIC, "l")

// ldmatrix of four 8 x 8 matrices (M, 256 b16 elements, matrix i at 64 i), each lane's registers to out[4 L + i]:
// x1 loads M0, x2 M0 and M1, x4 all four; lane L points at row L % 8 of matrix L / 8
#define LDMATRIX(NAME, NUM, TRANS, OUTS, ADDR)                                                                     \
  extern "C" __global__ void NAME(const unsigned short *M, unsigned *out) {                                      \
    __shared__ __attribute__((aligned(16))) unsigned short Ms[256];                                             \
    for (int i = threadIdx.x; i < 256; i += 32) Ms[i] = M[i];                                                   \
    __syncthreads();                                                                                             \
    int l = threadIdx.x % 32;                                                                                    \
    unsigned r[4] = {0, 0, 0, 0};                                                                                \
    asm volatile("ldmatrix.sync.aligned.m8n8." #NUM TRANS ".shared.b16 " OUTS ", [" ADDR "];"               \
                 : LDMATRIX_OUT_##NUM : "r"(smem(&Ms[l / 8 * 64 + l % 8 * 8])));                                \
    for (int i = 0; i < 4; i++) out[4 * l + i] = r[i];                                                           \
  }
#define LDMATRIX_OUT_x1 "=r"(r[0])
#define LDMATRIX_OUT_x2 "=r"(r[0]), "=r"(r[1])
#define LDMATRIX_OUT_x4 "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
LDMATRIX(ldmatrix_x1, x1, "", "{%0}", "%1")
LDMATRIX(ldmatrix_x2, x2, "", "{%0, %1}", "%2")
LDMATRIX(ldmatrix_x4, x4, "", "{%0, %1, %2, %3}", "%4")
LDMATRIX(ldmatrix_x1_trans, x1, ".trans", "{%0}", "%1")
LDMATRIX(ldmatrix_x4_trans, x4, ".trans", "{%0, %1, %2, %3}", "%4")

// movmatrix: lane L holds row L / 4, columns 2 (L % 4) and 2 (L % 4) + 1 of an 8 x 8 matrix; out gets the transpose's
extern "C" __global__ void movmatrix_trans(const unsigned *in, unsigned *out) {
  unsigned d, a = in[threadIdx.x];
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
  out[threadIdx.x] = d;
}

#if __CUDA_ARCH__ >= 900
// stmatrix (sm_90): lane L's register i is its fragment of matrix i, stored to rows L % 8 of matrix L / 8 of out
#define STMATRIX(NAME, TRANS)                                                                                      \
  extern "C" __global__ void NAME(const unsigned *in, unsigned short *out) {                                     \
    __shared__ __attribute__((aligned(16))) unsigned short Ms[256];                                             \
    int l = threadIdx.x % 32;                                                                                    \
    asm volatile("stmatrix.sync.aligned.m8n8.x4" TRANS ".shared.b16 [%0], {%1, %2, %3, %4};" ::                  \
                 "r"(smem(&Ms[l / 8 * 64 + l % 8 * 8])), "r"(in[4 * l]), "r"(in[4 * l + 1]), "r"(in[4 * l + 2]),  \
                 "r"(in[4 * l + 3]) : "memory");                                                                 \
    __syncthreads();                                                                                             \
    for (int i = threadIdx.x; i < 256; i += 32) out[i] = Ms[i];                                                  \
  }
STMATRIX(stmatrix_x4, "")
STMATRIX(stmatrix_x4_trans, ".trans")
#endif
