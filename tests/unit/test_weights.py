"""tinyformer.weights：safetensors + JSON 的存取，坏文件各有写明原因的错误。"""

import pytest
import torch

from tests.kit import tiny_gpt
from tinyformer.weights import WeightsError, load_weights, read_metadata, save_weights


@pytest.fixture
def saved(tmp_path):
    model = tiny_gpt()
    path = tmp_path / "gpt.safetensors"
    save_weights(path, model, {"config": {"vocab_size": 50}, "itos": ["春", "夏"]})
    return model, path


def test_round_trip_keeps_metadata_weights_and_tying(saved):
    model, path = saved
    assert read_metadata(path) == {"config": {"vocab_size": 50}, "itos": ["春", "夏"]}
    fresh = tiny_gpt(seed=1)
    load_weights(path, fresh)
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert fresh.output.weight is fresh.token_embedding.embedding.weight


def test_the_file_holds_no_pickle_and_one_copy_of_a_tied_weight(saved):
    model, path = saved
    data = path.read_bytes()
    assert not data.startswith(b"PK") and b"\x80\x02" not in data[:64]
    header = 8 + int.from_bytes(data[:8], "little")
    every_name = sum(t.numel() * 4 for t in model.state_dict().values())
    assert len(data) - header == every_name - model.output.weight.numel() * 4


def test_a_header_length_too_large_is_damage(saved):
    _, path = saved
    path.write_bytes(b"\xff" * 8 + b"{}")  # safetensors 0.4 的措辞是 HeaderTooLarge
    with pytest.raises(WeightsError, match=r"(?i)header ?too ?large") as caught:
        load_weights(path, tiny_gpt())
    assert caught.value.reason == "damaged"


def test_a_header_length_that_starts_like_a_pickle_still_loads(tmp_path):
    # 头长度 0x280 的小端字节是 80 02 00 00 …，与 pickle 协议 2 的开头相同：它仍是 safetensors
    model, path = torch.nn.Linear(3, 2), tmp_path / "m.safetensors"
    for pad in range(1000):
        save_weights(path, model, {"pad": "x" * pad})
        if path.read_bytes()[:2] == b"\x80\x02":
            break
    else:
        pytest.fail("no padding gave a header length of 0x..280")
    load_weights(path, torch.nn.Linear(3, 2))
    assert read_metadata(path) == {"pad": "x" * pad}
