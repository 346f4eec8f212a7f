"""Issue 25 item 8: policy tables that are binary or nested too deeply are errors naming the file."""

from __future__ import annotations

import pytest

from perception_safety.verification.controllers import load_policy
from perception_safety.verification.errors import VerificationError


def test_deeply_nested_json_policy_is_named_not_a_recursion_error(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(VerificationError, match=r"p\.json: JSON nested too deeply to read \(policy table\)"):
        load_policy(path)


@pytest.mark.parametrize("name", ["p.csv", "p.json"])
def test_binary_policy_table_is_named_not_a_unicode_error(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"x,v,kind,next_x,next_v\n1,0,ped,1,0\n\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(VerificationError, match=rf"{name}:3: not UTF-8 text \(policy table; byte 35: 0x89\)"):
        load_policy(path)
