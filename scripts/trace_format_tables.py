#!/usr/bin/env python3
"""Writes the tables of `docs/trace-format.md` (columns, event kinds, event classes) from the
trace format the Rust crate declares (`timely_py._core.trace_format()`), between the markers
`<!-- trace_format_tables: NAME -->` and `<!-- end -->`.

Usage: trace_format_tables.py [--check]
  without --check: rewrites the tables in place;
  --check: changes nothing and exits 1 if a table differs from what the crate declares
  (`tests/trace/test_trace_format_doc.py` runs it).
"""

import argparse
import re
import sys
from pathlib import Path

import pyarrow as pa
from timely_py import _core

DOC = Path(__file__).resolve().parent.parent / "docs" / "trace-format.md"
BLOCK = re.compile(r"(<!-- trace_format_tables: (\w+) -->\n)(.*?)(<!-- end -->)", re.S)


def type_name(data_type):
    """A column's type in the document's words."""
    if pa.types.is_dictionary(data_type):
        return f"{type_name(data_type.value_type)} (dictionary)"
    if pa.types.is_list(data_type):
        return f"list\\<{type_name(data_type.value_type)}\\>"
    return {pa.int64(): "int64", pa.string(): "string", pa.bool_(): "bool"}.get(data_type, str(data_type))


def tables(trace_format):
    """The document's tables, by name, as Markdown."""
    schema = trace_format["schema"]
    columns = ["| column | type | unit / values |", "|---|---|---|"]
    columns += [f"| `{name}` | {type_name(schema.field(name).type)} | {text} |" for name, text in trace_format["columns"]]
    kinds = ["| kind | when | columns |", "|---|---|---|"]
    kinds += [f"| `{name}` | {when} | {filled} |" for name, _class, when, filled in trace_format["kinds"]]
    classes = ["| class | kinds |", "|---|---|"]
    classes += [f"| `{name}` | {', '.join(f'`{k}`' for k in members)} |" for name, members in trace_format["classes"]]
    return {"columns": columns, "kinds": kinds, "classes": classes}


def render(text, trace_format):
    """`text` with every marked table replaced by the declared one."""
    generated = tables(trace_format)

    def replace(match):
        return match.group(1) + "\n".join(generated[match.group(2)]) + "\n" + match.group(4)

    return BLOCK.sub(replace, text)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a table differs; change nothing")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    found = {match.group(2) for match in BLOCK.finditer(text)}
    if found != {"columns", "kinds", "classes"}:
        print(f"{DOC}: expected the markers of the columns, kinds and classes tables, found {sorted(found)}")
        return 1
    rendered = render(text, _core.trace_format())
    if rendered == text:
        return 0
    if args.check:
        print(f"{DOC}: its tables differ from the trace format the crate declares; "
              f"run python scripts/trace_format_tables.py")  # fmt: skip
        return 1
    DOC.write_text(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
