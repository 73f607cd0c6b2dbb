"""zyx in a few lines: lazy ops fused into OpenCL kernels."""
import numpy as np

import zyx

print("device:", zyx.default_device())
a = zyx.randn(4, 5)
b = zyx.rand(5)
before = zyx.kernel_count()
y = ((a * b).sum(1) + 1).relu()  # recorded, not run
print("kernels so far:", zyx.kernel_count() - before)
print("y =", y)  # reading the values runs one fused kernel
print("kernels after reading:", zyx.kernel_count() - before)
print("softmax rows sum to", a.softmax(1).sum(1).numpy())
print("matmul matches numpy:", np.allclose((a @ a.T).numpy(), a.numpy() @ a.numpy().T, atol=1e-5))
