"""weft.fx: torch.fx modules compiled by weft and run on the simulator match torch on CPU."""
import numpy as np
import pytest

import weft
import weft.fx

torch = pytest.importorskip("torch")
nn = torch.nn


class Block(nn.Module):
    """linear -> layer norm -> GELU -> softmax, the issue's acceptance module."""

    def __init__(self, d_in=32, d_out=64):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.norm = nn.LayerNorm(d_out)
        self.act = nn.GELU()

    def forward(self, x):
        return torch.softmax(self.act(self.norm(self.fc(x))), dim=-1)


def test_linear_layer_norm_gelu_softmax_matches_torch():
    torch.manual_seed(0)
    module = Block().eval()
    with torch.no_grad():  # affine weights that are not the identity
        module.norm.weight.uniform_(0.5, 1.5)
        module.norm.bias.uniform_(-0.2, 0.2)
    x = torch.randn(16, 32)
    fn = weft.fx.compile(module, (x,))
    got = fn(x)
    want = module(x).detach()
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    # Another input of the same shape, and weights changed in place: both picked up.
    with torch.no_grad():
        module.fc.bias.add_(0.1)
    x2 = torch.randn(16, 32)
    torch.testing.assert_close(fn(x2), module(x2).detach(), rtol=1e-4, atol=1e-5)
    assert "kernel" in fn.plan().lower()


def test_rank3_methods_reductions_and_tuple_outputs():
    class M(nn.Module):
        def forward(self, x, y):
            z = (x * 2.0 - y).permute(0, 2, 1).contiguous()
            s = z.sum(dim=-1, keepdim=True)
            m = torch.amax(z, dim=1)
            e = torch.exp(z - s.expand(-1, -1, z.shape[-1]) / 10.0)
            return e.mean(dim=-1), m.view(-1), torch.nn.functional.relu(x).reshape(3, 20)

    x, y = torch.randn(3, 4, 5), torch.randn(3, 4, 5)
    fn = weft.fx.compile(M(), (x, y))
    got = fn(x, y)
    want = M()(x, y)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def test_matmul_and_log_softmax():
    class M(nn.Module):
        def forward(self, a, b):
            return torch.log_softmax(torch.matmul(a, b), dim=-1)

    a, b = torch.randn(2, 8, 16), torch.randn(2, 16, 4)
    fn = weft.fx.compile(M(), (a, b))
    torch.testing.assert_close(fn(a, b), M()(a, b), rtol=1e-4, atol=1e-5)


def test_unsupported_node_is_named():
    class M(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=0)

    with pytest.raises(weft.InputError, match=r'node "cumsum".*not supported'):
        weft.fx.compile(M(), (torch.randn(4),))
