"""Slurm's network topology (``topology/tree``'s ``topology.conf``) as hpcopt's fat tree.

``topology.conf`` names leaf switches with their nodes (``SwitchName=s1 Nodes=n[1-4]``) and
upper switches with the switches below them (``SwitchName=s0 Switches=s[1-2]``).  hpcopt's
``FatTree`` numbers nodes left to right with a fixed number of nodes per leaf and of leaves per
pod, so ``read_topology`` orders the leaves under their parents, checks that the tree has
that shape, and returns the tree with the node names in id order (``SlurmTopology``).  Node
names map both ways, Slurm's bracketed host lists (``n[1-4,7]``, ``rack[01-02]``) included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import HpcoptError
from ..topology import FatTree


class TopologyConfError(HpcoptError):
    """A topology.conf hpcopt cannot read or cannot model."""


_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list (``n[1-3,7],m05``) -> ``["n1", "n2", "n3", "n7", "m05"]``; zero
    padding is kept (``n[08-10]``); several bracket groups in one name expand in turn."""
    names: list[str] = []
    for item in _top_level_split(text.strip()):
        if item:
            names.extend(_expand(item))
    return names


def _top_level_split(text: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise TopologyConfError(f"host list {text!r}: unbalanced ']'")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise TopologyConfError(f"host list {text!r}: unbalanced '['")
    out.append("".join(cur))
    return out


def _expand(item: str) -> list[str]:
    m = _BRACKET.search(item)
    if m is None:
        return [item]
    head, tail = item[:m.start()], item[m.end():]
    out = []
    for part in m[1].split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise TopologyConfError(f"host list {item!r}: range {part!r} is not N or N-M")
        width = len(lo) if lo.startswith("0") else 0
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise TopologyConfError(f"host list {item!r}: range {part!r} runs backwards")
        for k in range(first, last + 1):
            out.extend(_expand(f"{head}{k:0{width}d}{tail}"))
    return out


@dataclass(frozen=True)
class SlurmTopology:
    """The fat tree of a ``topology.conf`` and the node names in its id order."""

    tree: FatTree
    names: tuple[str, ...]

    def ids(self, names) -> list[int]:
        """Node ids of node names (a host list string or a list of names)."""
        if isinstance(names, str):
            names = expand_hostlist(names)
        index = {n: i for i, n in enumerate(self.names)}
        try:
            return [index[n] for n in names]
        except KeyError as exc:
            raise TopologyConfError(f"node {exc.args[0]!r} is not in the topology") from None

    def nodes(self, ids) -> list[str]:
        """Node names of node ids."""
        return [self.names[int(i)] for i in ids]


def read_topology(path: str | Path) -> SlurmTopology:
    """The fat tree of the ``topology.conf`` at ``path`` (module docstring); a file hpcopt
    cannot read or model is a ``TopologyConfError`` naming the file and what is wrong."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise TopologyConfError(f"{path}: {exc.strerror}") from None
    leaves: dict[str, list[str]] = {}
    uppers: dict[str, list[str]] = {}
    order: list[str] = []
    for no, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = {}
        for word in line.split():
            key, sep, value = word.partition("=")
            if not sep:
                raise TopologyConfError(f"{path}:{no}: expected Key=Value words, got {word!r}")
            fields[key.lower()] = value
        name = fields.get("switchname")
        if not name:
            raise TopologyConfError(f"{path}:{no}: a line without SwitchName=")
        order.append(name)
        if "nodes" in fields:
            leaves[name] = expand_hostlist(fields["nodes"])
        elif "switches" in fields:
            uppers[name] = expand_hostlist(fields["switches"])
        else:
            raise TopologyConfError(f"{path}:{no}: switch {name} has neither Nodes= nor "
                                    "Switches=")
    if not leaves:
        raise TopologyConfError(f"{path}: no leaf switch (SwitchName=... Nodes=...)")
    below = {s for kids in uppers.values() for s in kids}
    roots = [s for s in order if s in uppers and s not in below]
    if len(roots) != 1 and uppers:
        raise TopologyConfError(f"{path}: expected one root switch, found {roots or 'none'}")
    pods = _pods(roots[0], uppers, leaves, path) if uppers else [[s] for s in leaves]
    per_leaf = {len(leaves[s]) for pod in pods for s in pod}
    per_pod = {len(pod) for pod in pods}
    names = [n for pod in pods for s in pod for n in leaves[s]]
    if len(per_leaf) != 1 or len(per_pod) != 1:
        sizes = ", ".join(f"{s}: {len(leaves[s])}" for pod in pods for s in pod)
        raise TopologyConfError(f"{path}: hpcopt's fat tree needs the same number of nodes "
                                f"under every leaf switch and of leaves under every pod switch "
                                f"(leaves {sizes}; pods of {sorted(per_pod)} leaves)")
    if len(set(names)) != len(names):
        raise TopologyConfError(f"{path}: a node is under two leaf switches")
    tree = FatTree(len(names), per_leaf.pop(), per_pod.pop())
    return SlurmTopology(tree, tuple(names))


def _pods(root: str, uppers: dict, leaves: dict, path: Path) -> list[list[str]]:
    """The leaves grouped by pod: under a root over leaves, one pod; under a root over pod
    switches over leaves, one pod per pod switch."""
    kids = uppers[root]
    if all(k in leaves for k in kids):
        return [list(kids)]
    if all(k in uppers and all(g in leaves for g in uppers[k]) for k in kids):
        return [list(uppers[k]) for k in kids]
    raise TopologyConfError(f"{path}: hpcopt models trees of two or three levels (a root over "
                            "leaf switches, or over pod switches over leaf switches)")
