"""agree / magnitude：全书打印"一致/不一致"结论的小工具。"""

import math

import pytest
import torch

from tinyformer.book.compare import agree, magnitude


def test_within_tolerance_is_agreement():
    x = torch.randn(3, 4)
    result = agree(x + 5e-7, x)
    assert result and 0 < result.max_diff < 1e-6
    assert str(result) == "一致（最大差 ≤ 1e-6）"


def test_outside_tolerance_reports_magnitude_not_noise():
    x = torch.zeros(5)
    result = agree(x + torch.tensor([0.0, 0.0, 0.031, 0.0, 0.0]), x)
    assert not result
    assert str(result) == "不一致（最大差约 3e-2，容差 1e-6）"


def test_tolerance_is_printed_as_written():
    assert str(agree(1.0, 1.0 + 2e-5, tol=2.5e-5)) == "一致（最大差 ≤ 2.5e-5）"
    assert str(agree(1.0, 1.0, tol=0)) == "一致（最大差 ≤ 0e0）"


def test_shapes_must_match_exactly_no_broadcasting():
    result = agree(torch.zeros(2, 3), torch.zeros(3))
    assert not result
    assert "形状不同" in str(result) and "(2, 3)" in str(result)


def test_compares_in_float64_whatever_the_inputs():
    a = torch.tensor([1.0], dtype=torch.float16)
    b = torch.tensor([1.0 + 2**-10], dtype=torch.float32)  # float16 的一个 ulp
    assert agree(a, b).max_diff == 2**-10


def test_lists_and_numbers():
    assert agree([[1, 2], [3, 4]], torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert agree(0.1 + 0.2, 0.3, tol=1e-12)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3.21e-4, "3e-4"), (0.14, "1e-1"), (2.0, "2e0"), (0, "0"), (-0.05, "5e-2"), (9.6e-8, "1e-7")],
)
def test_magnitude(value, expected):
    assert magnitude(value) == expected


def test_magnitude_of_a_tensor_is_its_largest_entry():
    assert magnitude(torch.tensor([1e-3, -4e-2, 0.0])) == "4e-2"


# ---- issue 26：inf、复数、大整数，以及不是数的输入 ------------------------------------------


def test_identical_infinities_agree_and_opposite_ones_do_not():
    assert str(agree(torch.tensor([1.0, math.inf]), torch.tensor([1.0, math.inf]))) == (
        "一致（最大差 ≤ 1e-6）"
    )
    assert bool(agree([-math.inf], [-math.inf]))
    result = agree(torch.tensor([math.inf]), torch.tensor([-math.inf]))
    assert not result and str(result) == "不一致（最大差约 inf，容差 1e-6）"
    assert not agree([math.inf], [1.0])
    assert not agree([math.nan, math.inf], [math.nan, math.inf])  # nan 仍然永远不一致


def test_complex_inputs_compare_both_parts():
    assert not agree(torch.tensor([1j]), torch.tensor([2j]))
    assert not agree(torch.tensor([1 + 1j]), torch.tensor([1 + 0j]))
    assert agree(torch.tensor([1 + 2j]), torch.tensor([1 + 2j]), tol=0)
    assert agree(torch.tensor([3 + 4j]), torch.tensor([0j]), tol=5).max_diff == 5.0  # |3+4j| = 5


def test_big_integers_are_compared_exactly():
    big = 2**53
    assert not agree(torch.tensor([big + 1]), torch.tensor([big]), tol=0)
    assert agree(torch.tensor([big + 1]), torch.tensor([big + 1]), tol=0)
    extreme = agree(torch.tensor([-(2**63)]), torch.tensor([2**63 - 1]), tol=0)  # 差超出 int64
    assert not extreme and extreme.max_diff == float(2**64 - 1)
    assert str(agree([1, 2], [1, 2], tol=0)) == "一致（最大差 ≤ 0e0）"


def test_magnitude_of_complex_and_big_integers():
    assert magnitude(3 + 4j) == "5e0"
    assert magnitude(torch.tensor([2**60])) == "1e18"
    with pytest.raises(ValueError, match=r"value must hold at least one number"):
        magnitude(torch.zeros(0))


def test_sparse_tensors_compare_by_value():
    dense = torch.tensor([0.0, 1.0, 0.0])
    assert agree(dense.to_sparse(), dense, tol=0)
