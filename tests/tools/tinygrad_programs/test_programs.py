"""tinygrad programs, each checked against numpy: run by tests/tools/test_tinygrad.py inside `usergpu mock` (an
unmodified tinygrad from PyPI on usergpu's mock GPUs), skipped anywhere else."""

import os

import numpy as np
import pytest

if os.environ.get("MOCKGPU") != "1":  # usergpu mock sets it (DEV is PCI+AMD there for tinygrad's own AM, over REMOTE)
    pytest.skip("run by tests/tools/test_tinygrad.py under usergpu mock", allow_module_level=True)

tinygrad = pytest.importorskip("tinygrad")
from tinygrad import Device, Tensor, TinyJit, dtypes  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402
from tinygrad.nn.optim import SGD  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

RNG = np.random.default_rng(0)
DEVICE = Device.DEFAULT


def arrays(dtype, shape=(67,)):
    """Test data of a tinygrad dtype: values every op of the test keeps in range, as numpy arrays."""
    np_dtype = np.dtype(dtype.fmt) if dtype != dtypes.bfloat16 else np.float32
    if dtype == dtypes.bool:
        return RNG.integers(0, 2, shape).astype(bool), RNG.integers(0, 2, shape).astype(bool)
    if dtypes.is_int(dtype):
        hi = min(np.iinfo(np_dtype).max, 1 << 14) // 2
        lo = 0 if dtypes.is_unsigned(dtype) else -hi
        return RNG.integers(lo, hi, shape).astype(np_dtype), RNG.integers(1, hi, shape).astype(np_dtype)
    return RNG.uniform(-4, 4, shape).astype(np_dtype), RNG.uniform(0.5, 4, shape).astype(np_dtype)


def supported():
    return sorted((d for d in Device[DEVICE].renderer.supported_dtypes() if d.fmt is not None or d == dtypes.bfloat16
                   if d not in dtypes.fp8s), key=lambda d: d.name)


def test_the_device_is_the_mock():
    dev = Device[DEVICE]
    if os.environ["DEV"].upper().split(":")[0].endswith("+NV"):
        assert (DEVICE, dev.arch) == ("NV", os.environ.get("MOCKGPU_NV_ARCH", "sm_90"))
    else:
        assert (DEVICE, dev.arch) == ("AMD", os.environ.get("MOCKGPU_ARCH", "gfx1100"))
    # tinygrad's mock interfaces, or its own AM driver over REMOTE against usergpu serve's mock board
    remote = os.environ["DEV"].upper().startswith("PCI+") and os.environ.get("REMOTE")
    assert type(dev.iface).__name__.startswith("MOCK") or remote and "remote" in dev.iface.dev_impl.devfmt


@pytest.mark.parametrize("dtype", supported(), ids=lambda d: d.name)
def test_elementwise(dtype):
    a, b = arrays(dtype)
    ta, tb = Tensor(a, dtype=dtype), Tensor(b, dtype=dtype)
    if dtype == dtypes.bool:
        np.testing.assert_equal((ta & tb).numpy(), a & b)
        np.testing.assert_equal((ta | tb).numpy(), a | b)
        np.testing.assert_equal(ta.where(tb, ~tb).numpy(), np.where(a, b, ~b))
        return
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (dtypes.half, dtypes.bfloat16) else {"rtol": 1e-6}
    cast = (lambda x: x.astype(np.float32)) if dtype == dtypes.bfloat16 else (lambda x: x)
    np.testing.assert_allclose(cast((ta + tb).numpy()), a + b, **tol)
    np.testing.assert_allclose(cast((ta * tb).numpy()), a * b, **tol) if not dtypes.is_int(dtype) else \
        np.testing.assert_equal((ta * tb).numpy(), a * b)
    np.testing.assert_equal(cast(ta.maximum(tb).numpy()), np.maximum(cast(ta.numpy()), cast(tb.numpy())))
    np.testing.assert_equal((ta < tb).numpy(), cast(ta.numpy()) < cast(tb.numpy()))
    np.testing.assert_allclose(ta.cast(dtypes.float32).numpy(), cast(ta.numpy()).astype(np.float32), rtol=1e-6)
    if dtypes.is_float(dtype):
        np.testing.assert_allclose(cast(ta.exp2().numpy()), np.exp2(cast(ta.numpy())), rtol=2e-2, atol=1e-3)
        np.testing.assert_allclose(cast(tb.sqrt().numpy()), np.sqrt(cast(tb.numpy())), rtol=1e-2)
    else:
        np.testing.assert_equal((ta // tb).numpy() if dtypes.is_unsigned(dtype) else (ta.abs() // tb).numpy(),
                                (a // b) if dtypes.is_unsigned(dtype) else np.abs(a) // b)


def test_reductions():
    x = RNG.standard_normal((37, 129)).astype(np.float32)
    t = Tensor(x)
    np.testing.assert_allclose(t.sum().numpy(), x.sum(), rtol=1e-4)
    np.testing.assert_allclose(t.sum(axis=0).numpy(), x.sum(axis=0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(t.max(axis=1).numpy(), x.max(axis=1))
    np.testing.assert_allclose(t.mean(axis=1).numpy(), x.mean(axis=1), rtol=1e-4, atol=1e-6)
    np.testing.assert_equal(t.argmax(axis=1).numpy(), x.argmax(axis=1))
    np.testing.assert_allclose(t.softmax(axis=1).numpy(), np.exp(x) / np.exp(x).sum(axis=1, keepdims=True),
                               rtol=1e-4, atol=1e-6)


def test_matmul_f32():
    a, b = RNG.standard_normal((64, 96)).astype(np.float32), RNG.standard_normal((96, 48)).astype(np.float32)
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_f16_uses_tensor_cores(capfd):
    """tinygrad's tensor cores on AMD: the kernel it prints at DEBUG=4 calls WMMA on RDNA, MFMA on CDNA (HIP's
    builtin, LLVM's intrinsic)."""
    a, b = (RNG.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    with Context(DEBUG=4):
        got = Tensor(a).matmul(Tensor(b), dtype=dtypes.float32).numpy()
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    want = "mfma" if os.environ.get("MOCKGPU_ARCH", "").startswith("gfx9") else "wmma"
    assert want in capfd.readouterr().out, f"tinygrad did not pick {want.upper()} for an f16 matmul"


def test_conv2d():
    x = RNG.standard_normal((2, 3, 12, 12)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    got = Tensor(x).conv2d(Tensor(w), padding=1).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 4, 12, 12), np.float32)
    for i in range(3):
        for j in range(3):
            want += np.einsum("ncij,oc->noij", xp[:, :, i:i + 12, j:j + 12], w[:, :, i, j])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_mlp_training_step():
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    y = RNG.standard_normal((16, 4)).astype(np.float32)
    w1 = RNG.standard_normal((8, 32)).astype(np.float32) * 0.3
    w2 = RNG.standard_normal((32, 4)).astype(np.float32) * 0.3
    t1, t2 = Tensor(w1), Tensor(w2)
    opt = SGD([t1, t2], lr=0.1)
    h = x @ w1
    r = np.maximum(h, 0)
    d = (r @ w2 - y) * 2 / y.size
    g1, g2 = x.T @ ((d @ w2.T) * (h > 0)), r.T @ d
    with Context(TRAINING=1):
        loss = ((Tensor(x) @ t1).relu() @ t2 - Tensor(y)).square().mean()
        opt.zero_grad()
        loss.backward()
        np.testing.assert_allclose(loss.numpy(), ((r @ w2 - y) ** 2).mean(), rtol=1e-5)
        np.testing.assert_allclose(t1.grad.numpy(), g1, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(t2.grad.numpy(), g2, rtol=1e-4, atol=1e-6)
        opt.step()
    np.testing.assert_allclose(t1.numpy(), w1 - 0.1 * g1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(t2.numpy(), w2 - 0.1 * g2, rtol=1e-4, atol=1e-5)


def test_tinyjit_replays_the_graph():
    @TinyJit
    def step(a: Tensor, b: Tensor) -> Tensor:
        return ((a * b).relu().contiguous() + 1).sum(axis=1).realize()  # two kernels: a graph

    for _ in range(5):
        a, b = RNG.standard_normal((8, 16)).astype(np.float32), RNG.standard_normal((8, 16)).astype(np.float32)
        np.testing.assert_allclose(step(Tensor(a), Tensor(b)).numpy(), (np.maximum(a * b, 0) + 1).sum(axis=1),
                                   rtol=1e-5)
    calls = step.captured.linear.src if step.captured is not None else ()
    assert any(c.src[0].op is Ops.CUSTOM_FUNCTION and c.src[0].arg == "graph" for c in calls), \
        "the JIT did not batch its kernels into an HCQ graph"


@pytest.mark.skipif(os.environ.get("MOCKGPU_COUNT", "1") == "1", reason="one GPU (MOCKGPU_COUNT=2 runs it)")
def test_two_gpus_copy_between_them():
    x = RNG.standard_normal(4096).astype(np.float32)
    a = Tensor(x, device=f"{DEVICE}:0")
    b = (a.to(f"{DEVICE}:1") * 2).realize()
    assert b.device == f"{DEVICE}:1"
    np.testing.assert_allclose((b.to(f"{DEVICE}:0") + a).numpy(), 3 * x, rtol=1e-6)
