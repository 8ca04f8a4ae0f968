"""agree / magnitude：全书打印"一致/不一致"结论的小工具。"""

import math

import pytest
import torch

from tinyformer.compare import agree, magnitude


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


def test_nan_is_never_agreement():
    assert not agree(torch.tensor([math.nan]), torch.tensor([math.nan]))


def test_compares_in_float64_whatever_the_inputs():
    a = torch.tensor([1.0], dtype=torch.float16)
    b = torch.tensor([1.0 + 2**-10], dtype=torch.float32)  # float16 的一个 ulp
    assert agree(a, b).max_diff == 2**-10


def test_lists_and_numbers():
    assert agree([[1, 2], [3, 4]], torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert agree(0.1 + 0.2, 0.3, tol=1e-12)


@pytest.mark.parametrize(
    ("tol", "error", "message"),
    [
        (-1e-6, ValueError, r"tol must be a finite number >= 0, got tol=-1e-06"),
        (math.inf, ValueError, r"tol must be a finite number >= 0, got tol=inf"),
        (math.nan, ValueError, r"tol must be a finite number >= 0, got tol=nan"),
        ("1e-6", TypeError, r"tol must be a number, got str"),
        (True, TypeError, r"tol must be a number, got bool"),
    ],
)
def test_bad_tolerance(tol, error, message):
    with pytest.raises(error, match=message):
        agree(1.0, 1.0, tol=tol)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3.21e-4, "3e-4"), (0.14, "1e-1"), (2.0, "2e0"), (0, "0"), (-0.05, "5e-2"), (9.6e-8, "1e-7")],
)
def test_magnitude(value, expected):
    assert magnitude(value) == expected


def test_magnitude_of_a_tensor_is_its_largest_entry():
    assert magnitude(torch.tensor([1e-3, -4e-2, 0.0])) == "4e-2"
