# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Slurm hostlist expressions: expand them to host names, compress host names into one.

Pure functions, no I/O. Errors are HostlistError (a ValueError); the filters turn them into
AnsibleFilterError.

Expand reads Slurm's syntax and the wider one of python-hostlist: comma-separated tokens, each a
plain name or a name with one or more bracketed range lists (``n[01-10]``, ``a[01-03,7]``,
``rack[1-2]-n[01-02]``, ``rack[1-2]-gpu``). A range's zero padding is the length of its low bound,
as in Slurm's ``_parse_single_range`` (``n[01-10]`` gives n01..n10, ``n[1-010]`` gives n1..n10).

Compress writes only what Slurm 22.05 itself reads: one bracket per token and nothing after it.
Slurm's ``_hostlist_create_bracketed`` rejects any text after the last ``]``, so ``rack[1-2]-gpu``
is no valid slurm.conf hostlist; names whose number is not at the end stay as they are, as in
``scontrol show hostlist``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Slurm's MAX_RANGE (src/common/hostlist.c): a single range of more hosts is an error there.
MAX_RANGE = 64 * 1024
# Guard against expressions such as a[0-60000]b[0-60000] that would exhaust memory.
MAX_HOSTS = 100_000

_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TRAILING_NUMBER_RE = re.compile(r"^(.*?)(\d+)$")
_NUMBER_RE = re.compile(r"(\d+)")


class HostlistError(ValueError):
    """A hostlist expression or host name that cannot be used."""


def natural_key(name):
    """Sort key that orders n2 before n10 (text compared as text, numbers as numbers)."""
    return [(int(part), part) if part.isdigit() else (-1, part) for part in _NUMBER_RE.split(name)]


def _parse_ranges(body, expression):
    """'01-03,7' -> [(1, 3, 2), (7, 7, 1)] as (low, high, width)."""
    if body == "":
        raise HostlistError(f"empty brackets in hostlist {expression!r}")
    ranges = []
    for item in body.split(","):
        match = _RANGE_RE.match(item.strip())
        if not match:
            raise HostlistError(f"bad range {item!r} in hostlist {expression!r}")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = int(high_text) if high_text is not None else low
        if high < low:
            raise HostlistError(f"reversed range {item!r} in hostlist {expression!r}")
        if high - low + 1 > MAX_RANGE:
            raise HostlistError(
                f"range {item!r} in hostlist {expression!r} has more than {MAX_RANGE} hosts (Slurm's limit)"
            )
        ranges.append((low, high, len(low_text)))
    return ranges


def _split_token(token, expression):
    """'rack[1-2]-n[01-02]' -> ['rack', [(1, 2, 1)], '-n', [(1, 2, 2)], '']: literals and range lists alternate."""
    parts = []
    literal_start = 0
    open_at = None
    for index, char in enumerate(token):
        if char == "[":
            if open_at is not None:
                raise HostlistError(f"nested brackets in hostlist {expression!r}")
            parts.append(token[literal_start:index])
            open_at = index
        elif char == "]":
            if open_at is None:
                raise HostlistError(f"unbalanced brackets in hostlist {expression!r}")
            parts.append(_parse_ranges(token[open_at + 1:index], expression))
            open_at = None
            literal_start = index + 1
        elif char.isspace() and open_at is None:
            raise HostlistError(f"whitespace inside host name {token!r} in hostlist {expression!r}")
    if open_at is not None:
        raise HostlistError(f"unbalanced brackets in hostlist {expression!r}")
    parts.append(token[literal_start:])
    return parts


def _split_tokens(expression):
    """Split on commas that are not inside brackets; brackets are checked later."""
    tokens = []
    depth = 0
    start = 0
    for index, char in enumerate(expression):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            tokens.append(expression[start:index])
            start = index + 1
    tokens.append(expression[start:])
    return tokens


def _expand_token(token, expression):
    names = [""]
    for position, part in enumerate(_split_token(token, expression)):
        if position % 2 == 0:
            names = [name + part for name in names]
            continue
        count = len(names) * sum(high - low + 1 for low, high, _width in part)
        if count > MAX_HOSTS:
            raise HostlistError(f"hostlist {expression!r} expands to more than {MAX_HOSTS} hosts")
        names = [
            f"{name}{number:0{width}d}"
            for name in names
            for low, high, width in part
            for number in range(low, high + 1)
        ]
    return names


def expand_hostlist(expression):
    """'n[01-03],gpu1' -> ['n01', 'n02', 'n03', 'gpu1']: names in written order, duplicates dropped."""
    if not isinstance(expression, str):
        raise HostlistError(f"hostlist must be a string, got {type(expression).__name__} {expression!r}")
    if expression.strip() == "":
        raise HostlistError(f"hostlist {expression!r} is empty")
    seen = {}
    for raw_token in _split_tokens(expression):
        token = raw_token.strip()
        if token == "":
            raise HostlistError(f"empty host name in hostlist {expression!r}")
        if "[" not in token and "]" not in token:
            if any(char.isspace() for char in token):
                raise HostlistError(f"whitespace inside host name {token!r} in hostlist {expression!r}")
            seen.setdefault(token, None)
            continue
        for name in _expand_token(token, expression):
            if not name:
                raise HostlistError(f"empty host name in hostlist {expression!r}")
            seen.setdefault(name, None)
        if len(seen) > MAX_HOSTS:
            raise HostlistError(f"hostlist {expression!r} expands to more than {MAX_HOSTS} hosts")
    return list(seen)


def _runs(numbers):
    """Sorted distinct ints -> [(low, high)] of consecutive runs."""
    runs = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return runs


def _compress_numbers(digit_strings):
    """Digit strings sharing one prefix -> bracket body, e.g. {'08','09','10','3'} -> '3,08-10'.

    A zero-padded string ('08') fixes its range's width to its length; an unpadded one ('10') only
    needs the width to be no larger than its length. A padded run that ends just below the next
    power of ten (08-09) may therefore go on into unpadded numbers (10, 11): n[08-11] expands to
    n08 n09 n10 n11, exactly as Slurm prints a range of width 2.
    """
    padded = {}
    unpadded = set()
    for text in digit_strings:
        if len(text) > 1 and text[0] == "0":
            padded.setdefault(len(text), set()).add(int(text))
        else:
            unpadded.add(int(text))
    ranges = []
    for width in sorted(padded):
        for low, high in _runs(sorted(padded[width])):
            while high + 1 in unpadded and len(str(high + 1)) >= width:
                unpadded.discard(high + 1)
                high += 1
            ranges.append((low, high, width))
    ranges.extend((low, high, 0) for low, high in _runs(sorted(unpadded)))
    ranges.sort()
    return ",".join(
        f"{low:0{width}d}" if low == high else f"{low:0{width}d}-{high:0{width}d}" for low, high, width in ranges
    )


def compress_hostlist(names):
    """['n01', 'n02', 'n03', 'gpu1'] -> 'gpu1,n[01-03]': sorted, duplicates dropped.

    Each item may itself be a hostlist expression; it is expanded first.
    """
    if isinstance(names, (str, bytes, Mapping)) or not hasattr(names, "__iter__"):
        raise HostlistError(f"host names must be a list, got {type(names).__name__} {names!r}")
    numbered = {}
    plain = set()
    empty = True
    for item in names:
        empty = False
        if not isinstance(item, str):
            raise HostlistError(f"host name must be a string, got {type(item).__name__} {item!r}")
        if "[" in item or "]" in item or "," in item:
            expanded = expand_hostlist(item)
        elif item.strip() == "" or any(char.isspace() for char in item):
            raise HostlistError(f"bad host name {item!r}")
        else:
            expanded = (item,)
        for name in expanded:
            match = _TRAILING_NUMBER_RE.match(name)
            if match:
                numbered.setdefault(match.group(1), set()).add(match.group(2))
            else:
                plain.add(name)
    if empty:
        raise HostlistError("host name list is empty")
    tokens = [(natural_key(name), name) for name in plain]
    for prefix, digit_strings in numbered.items():
        if len(digit_strings) == 1:
            name = prefix + next(iter(digit_strings))
            tokens.append((natural_key(name), name))
        else:
            tokens.append((natural_key(prefix), f"{prefix}[{_compress_numbers(digit_strings)}]"))
    return ",".join(token for _key, token in sorted(tokens))
