"""Safe file access for every layer: atomic writes that refuse special files, bounded reads, JSON errors.

Layer-neutral like `perception_safety.errors` (it imports nothing else of the package), so the science modules
that write their own tables use it too.
"""

from perception_safety.safe_io.atomic_write import (
    OutputPathError,
    atomic_open,
    atomic_path,
    check_output,
    write_bytes,
    write_files,
    write_text,
)
from perception_safety.safe_io.bounded_read import InputFileError, load_json, parse_json, read_bytes, read_text

__all__ = [
    "InputFileError",
    "OutputPathError",
    "atomic_open",
    "atomic_path",
    "check_output",
    "load_json",
    "parse_json",
    "read_bytes",
    "read_text",
    "write_bytes",
    "write_files",
    "write_text",
]
