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


def test_embeddings_match_torch_and_pick_up_new_weights():
    F = torch.nn.functional

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6, padding_idx=0)  # padding_idx: gradients only
            self.table = nn.Parameter(torch.randn(7, 3))

        def forward(self, ids, j):
            return self.emb(ids) * 2.0, F.embedding(j, self.table)

    torch.manual_seed(0)
    module = M().eval()
    ids = torch.tensor([[0, 3, 9, 3, 1], [2, 0, 5, 8, 7]])
    j = torch.tensor([6, 0, 2], dtype=torch.int32)
    fn = weft.fx.compile(module, (ids, j))
    for g, w in zip(fn(ids, j), module(ids, j)):
        torch.testing.assert_close(g, w.detach(), rtol=0, atol=0)
    with torch.no_grad():
        module.emb.weight[3] = 1.5
    torch.testing.assert_close(fn(ids, j)[0], module(ids, j)[0].detach(), rtol=0, atol=0)


def test_gather_index_select_take_along_dim_and_tensor_indexing_match_torch():
    class M(nn.Module):
        def forward(self, x, idx, rows, cols, cols32, one):
            return (torch.gather(x, 1, idx), x.gather(-1, idx),
                    torch.index_select(x, 1, cols32), x.index_select(0, rows),
                    torch.take_along_dim(x, one, dim=1), torch.take_along_dim(x, idx),
                    x[rows], x[:, cols], x[..., cols] + 1.0)

    x = torch.randn(3, 4)
    idx = torch.tensor([[3, 0], [1, 1], [0, 2]])              # fewer columns than x
    rows = torch.tensor([2, 0, 2, 1])
    cols = torch.tensor([1, 3, 0])
    cols32 = torch.tensor([3, 3, 1, 0, 2], dtype=torch.int32)
    one = torch.tensor([[2, 0]])                               # broadcast over x's rows
    args = (x, idx, rows, cols, cols32, one)
    got, want = weft.fx.compile(M(), args)(*args), M()(*args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, i
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_negative_and_out_of_range_indices_give_weft_values():
    # torch wraps a negative x[idx]; it refuses indices out of range, which weft reads as 0.
    class M(nn.Module):
        def forward(self, x, rows, idx):
            return x[rows], torch.gather(x, 0, idx)

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    rows = torch.tensor([-1, 0, -3])
    idx = torch.tensor([[2, 1]])
    fn = weft.fx.compile(M(), (x, rows, idx))
    taken, gathered = fn(x, torch.tensor([-1, 3, -4]), torch.tensor([[-1, 5]]))
    torch.testing.assert_close(taken, torch.tensor([[5.0, 6.0], [0.0, 0.0], [0.0, 0.0]]))
    torch.testing.assert_close(gathered, torch.tensor([[5.0, 0.0]]))  # -1 is row 2; 5 is out


def test_unsupported_lookups_are_named():
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 2, max_norm=1.0)  # would renormalize rows in place

        def forward(self, ids):
            return self.emb(ids)

    with pytest.raises(weft.InputError, match=r'node "emb".*max_norm=1.0 is not supported'):
        weft.fx.compile(Lookup(), (torch.tensor([1, 2]),))

    class Mask(nn.Module):
        def forward(self, x, m):
            return x[m]

    with pytest.raises(weft.InputError, match=r'node "getitem".*bool mask is not supported'):
        weft.fx.compile(Mask(), (torch.randn(3), torch.tensor([True, False, True])))

    class Sliced(nn.Module):
        def forward(self, x, i):
            return x[1:, i]

    with pytest.raises(weft.InputError, match=r'node "getitem".*not \[1:, tensor\]'):
        weft.fx.compile(Sliced(), (torch.randn(3, 4), torch.tensor([0, 2])))

