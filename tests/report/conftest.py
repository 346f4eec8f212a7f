"""Reading the report's SVG figures back: parsed with xml.etree (a broken document fails the parse)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

SVG = "{http://www.w3.org/2000/svg}"


def _parse(source: str | Path) -> ET.Element:
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    return root


@pytest.fixture
def parse_svg() -> Callable[[str | Path], ET.Element]:
    """``parse_svg(text or path)``: the root element of an SVG document."""
    return _parse


@pytest.fixture
def svg_texts() -> Callable[[ET.Element], list[str]]:
    """Every text element's content (tspans joined by newlines)."""

    def texts(root: ET.Element) -> list[str]:
        out = []
        for t in root.iter(f"{SVG}text"):
            spans = t.findall(f"{SVG}tspan")
            out.append("\n".join(s.text or "" for s in spans) if spans else (t.text or ""))
        return out

    return texts


@pytest.fixture
def path_points() -> Callable[[str], list[tuple[float, float]]]:
    """The absolute points of a path's ``d`` written as ``M x y x y ...`` runs (what follows as relative commands,
    arcs or ``h0`` dots, ignored)."""

    def points(d: str) -> list[tuple[float, float]]:
        out = []
        for run in re.findall(r"M([-\d. ]*)", d):
            nums = [float(v) for v in run.split()]
            out += list(zip(nums[::2], nums[1::2], strict=True))
        return out

    return points
