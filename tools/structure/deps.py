#!/usr/bin/env python3
"""The module dependency picture of the launcher, drawn from the code.

Reads every `.rs` file of the given source roots, maps each file to its top-level module (the
first folder or file under the root), and collects the paths it names: `crate::x`,
`crate::{x, y::z}`, `super::x` from a top-level module's own files, and the library's own name
(`decode_baseline::x`, `decode_baseline_launcher::x`). Prints the folder-level edges with how
many references carry them, then the two-way ties (a → b and b → a), which should be none.

    tools/structure/deps.py src            # before the launcher crate
    tools/structure/deps.py crates/launcher/src src

Test code (`#[cfg(test)]` modules and files under `tests/`) is left out: a test may reach
anywhere. Exit status 0 always; the picture is for reading.
"""

import re
import sys
from collections import Counter
from pathlib import Path

SELF = r"(?:crate|decode_baseline|decode_baseline_launcher)"


def top_level(root: Path, path: Path) -> str:
    rel = path.relative_to(root)
    first = rel.parts[0]
    return first[:-3] if first.endswith(".rs") else first


def without_tests(text: str) -> str:
    """Drops `#[cfg(test)] mod … { … }` blocks by brace matching."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def group_names(text: str, start: int) -> list[str]:
    """The first-level names of a `{a::b, c, d::{e}}` group that opens at `start`."""
    depth, j, names, cur = 0, start, [], ""
    while j < len(text):
        c = text[j]
        if c == "{":
            depth += 1
            if depth == 1:
                j += 1
                continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and c == ",":
            names.append(cur)
            cur = ""
        elif depth >= 1:
            cur += c
        j += 1
    names.append(cur)
    return [re.split(r"::|\s", n.strip())[0] for n in names if n.strip()]


def targets(text: str) -> list[str]:
    found = []
    for m in re.finditer(SELF + r"::(\{|\w+)", text):
        if m.group(1) == "{":
            found += group_names(text, m.start(1))
        else:
            found.append(m.group(1))
    return [t for t in found if t and t != "self"]


def main(roots: list[str]) -> None:
    edges: Counter = Counter()
    modules: set = set()
    for root in map(Path, roots):
        for path in sorted(root.rglob("*.rs")):
            if "tests" in path.relative_to(root).parts:
                continue
            src = top_level(root, path)
            if src in ("main", "lib"):
                continue
            modules.add(src)
            for dst in targets(without_tests(path.read_text())):
                if dst != src:
                    edges[(src, dst)] += 1
    edges = Counter({k: v for k, v in edges.items() if k[1] in modules})
    print(f"{len(modules)} top-level modules, {len(edges)} folder-level edges")
    for (a, b), n in sorted(edges.items()):
        print(f"  {a} -> {b} ({n})")
    ties = sorted({tuple(sorted(k)) for k in edges if (k[1], k[0]) in edges})
    print(f"two-way ties: {len(ties)}")
    for a, b in ties:
        print(f"  {a} <-> {b} ({edges[(a, b)]} / {edges[(b, a)]})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["src"])
