"""BBSL's user-facing error: file, line:column, the offending line with a caret, and what was expected."""

from __future__ import annotations

from collections.abc import Iterable

from perception_safety.errors import PerceptionSafetyError

_SHOWN = 100
"""Characters of the offending source line shown under an error."""


class BBSLError(PerceptionSafetyError):
    """A syntax, type, binding or analysis error in a BBSL specification.

    ``str(err)`` is ``file:line:column: message``, then the source line and a caret
    under the offending column, then ``expected: ...`` when the parser knows it.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "<spec>",
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
        expected: Iterable[str] = (),
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.expected = tuple(sorted(set(expected)))
        self.source_line = _line_of(text, line) if text is not None and line is not None else None
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        out = f"{where}: {self.message}"
        if self.source_line is not None:
            shown = self.source_line.expandtabs(1).rstrip("\r")
            col = max(1, self.column or 1)
            if len(shown) > _SHOWN:  # a window around the column, so a 10k-character line stays readable
                start = max(0, min(col - 1 - _SHOWN // 2, len(shown) - _SHOWN))
                shown = (
                    ("..." if start else "")
                    + shown[start : start + _SHOWN]
                    + ("..." if start + _SHOWN < len(shown) else "")
                )
                col = col - start + (3 if start else 0)
            out += f"\n    {shown}\n    {' ' * (col - 1)}^"
        if self.expected:
            out += "\n  expected one of: " + ", ".join(self.expected)
        return out


def _line_of(text: str, line: int) -> str | None:
    lines = text.splitlines()
    if 1 <= line <= len(lines):
        return lines[line - 1]
    if line == len(lines) + 1:
        return ""
    return None
