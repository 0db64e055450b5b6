"""``python -m tieaudit.sources [FILE]``: print the dataset-source reference from the registry,
or rewrite it in FILE (between its markers; see :mod:`tieaudit.sources.docs`)."""

from __future__ import annotations

import sys

from tieaudit.sources.docs import reference, update


def main(argv: list[str]) -> int:
    if not argv:
        print(reference())
        return 0
    for path in argv:
        try:
            changed = update(path)
        except (OSError, ValueError) as exc:
            print(f"tieaudit.sources: {exc}", file=sys.stderr)
            return 2
        print(f"{path}: {'rewritten' if changed else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
