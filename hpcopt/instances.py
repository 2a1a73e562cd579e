"""Instance files: JSON envelopes around a model's data, checked against a published schema.

An instance file looks like::

    {"format": "hpcopt-instance", "version": 1, "name": "bb_table1", "model": "knapsack",
     "description": "...", "meta": {...}, "data": {...}}

The schema is ``instances/schema/hpcopt-instance.schema.json`` in a checkout; a wheel ships it
(with the demo's inputs) as package data, see ``bundled_path``.  Every problem with a file is
an ``InstanceError`` with one line naming the file, the JSON path of the field (e.g.
``data.weights[1]``) and what was expected.
"""

from __future__ import annotations

import csv
import functools
import glob
import gzip
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InstanceError, ModelError

FORMAT = "hpcopt-instance"
VERSION = 1
BUNDLED_PACKAGE_DIR = "_bundled"  # pyproject maps it onto the checkout's instances/ folder


def bundled_path(*parts: str) -> Path:
    """A file (or folder) of the project's ``instances/`` folder that hpcopt needs at run time:
    the instance schema, the demo trace and the bundled instances of every model family.

    An installed wheel has them as package data under ``hpcopt/_bundled/`` (pyproject's
    ``package-dir`` maps ``hpcopt._bundled`` onto ``instances/``, only what the library
    reads); an editable install or a source tree reads the checkout's ``instances/``.  (The
    package's folder is read from ``__file__``, as ``importlib.resources.files`` would give it
    for a package on disk, without loading importlib.resources, tempfile and zipfile into
    every command.)
    """

    packaged = Path(__file__).resolve().parent.joinpath(BUNDLED_PACKAGE_DIR, *parts)
    if packaged.exists():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "instances"
    return checkout.joinpath(*parts)


SCHEMA_PATH = bundled_path("schema", "hpcopt-instance.schema.json")
FAMILIES = ("bbsched", "dcas", "knapsack", "osdec", "scas")  # bundled instance folders
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
               float: "number", type(None): "null"}


@dataclass(frozen=True)
class Instance:
    """A loaded instance: its ``name``, validated ``model`` and where it came from."""

    name: str
    model: Any
    path: Path | None = None
    description: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def model_kind(self) -> str:
        return self.model.kind

    def to_dict(self) -> dict:
        """The whole file content (envelope plus ``model.to_dict()``)."""
        out = {"format": FORMAT, "version": VERSION, "name": self.name, "model": self.model.kind}
        if self.description:
            out["description"] = self.description
        if self.meta:
            out["meta"] = self.meta
        out["data"] = self.model.to_dict()
        return out


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    """The instance-file JSON Schema (draft 2020-12)."""
    try:
        return json.loads(SCHEMA_PATH.read_text())
    except OSError as err:
        raise InstanceError(
            f"instance schema not found at {SCHEMA_PATH} ({err.strerror})"
        ) from None


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def _json_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _short(value: Any) -> str:
    plain = isinstance(value, (dict, list, str, bool, type(None)))
    text = json.dumps(value) if plain else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(error) -> tuple[list, str]:
    """(JSON path parts, "expected ..." text) for one jsonschema error."""
    parts, kind = list(error.absolute_path), error.validator
    want, got = error.validator_value, error.instance
    if kind == "required":
        missing = next(k for k in want if k not in got)
        return parts + [missing], "missing required field"
    if kind == "additionalProperties":
        extra = sorted(k for k in got if k not in error.schema.get("properties", {}))
        allowed = ", ".join(error.schema.get("properties", {}))
        return parts + [extra[0]], f"unexpected field (allowed: {allowed})"
    if kind == "type":
        want = " or ".join(want) if isinstance(want, list) else want
        return parts, f"expected {want}, got {_JSON_TYPES.get(type(got), 'value')} {_short(got)}"
    if kind == "const":
        return parts, f"expected {_short(want)}, got {_short(got)}"
    if kind == "minimum":
        return parts, f"expected a number >= {want}, got {_short(got)}"
    if kind == "minItems":
        return parts, f"expected at least {want} entries, got {len(got)}"
    if kind == "minLength":
        return parts, "expected a non-empty string"
    if kind == "uniqueItems":
        return parts, "expected unique entries, got duplicates"
    if kind == "pattern":
        return parts, f"expected a string matching {want}, got {_short(got)}"
    return parts, error.message.splitlines()[0]


def validate_instance(obj: Any, path: str | Path = "<memory>") -> None:
    """Check ``obj`` (parsed JSON) against the schema; ``InstanceError`` on the first problem."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(obj))
    if error is not None:
        parts, expected = _describe(error)
        raise InstanceError(f"{path}: {_json_path(parts)}: {expected}")


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name} is not valid JSON")


def instance_from_dict(obj: Any, path: str | Path = "<memory>") -> Instance:
    """Validate parsed JSON and build its ``Instance`` (``InstanceError`` on any problem,
    also for data nested too deeply to check or too large to build)."""

    try:
        validate_instance(obj, path)
    except RecursionError:
        raise InstanceError(f"{path}: JSON nested too deeply to check") from None
    from hpcopt.models import model_class  # the models, loaded when an instance is built

    try:
        cls = model_class(obj["model"])
    except InstanceError as err:
        raise InstanceError(f"{path}: model: {err}") from None
    try:
        model = cls.from_dict(obj["data"])
    except ModelError as err:
        where = f"data.{err.field}" if getattr(err, "field", None) else "data"
        raise InstanceError(f"{path}: {where}: {getattr(err, 'detail', err)}") from None
    except RecursionError:
        raise InstanceError(f"{path}: data: nested too deeply to build the model") from None
    except MemoryError:
        raise InstanceError(f"{path}: data: out of memory building the {obj['model']} model "
                            "(the instance is too large for this machine)") from None
    return Instance(obj["name"], model, Path(path) if path != "<memory>" else None,
                    obj.get("description", ""), obj.get("meta", {}))


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_instance_bytes(data: bytes, path: str | Path = "<memory>") -> str:
    """The text of an instance file: UTF-8, or UTF-8/16/32 with a byte-order mark (what
    Windows editors and PowerShell's ``>`` write); anything else is an ``InstanceError``
    naming the file (a binary file, UTF-16 without a BOM, Latin-1 ...)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as err:
                raise InstanceError(f"{path}: not valid {codec.upper()} text after its "
                                    f"byte-order mark (byte {err.start})") from None
    if b"\x00" in data:  # never in JSON text, whatever the bytes around it decode to
        raise InstanceError(f"{path}: not UTF-8 text (NUL bytes: a binary file, or UTF-16 "
                            "without a byte-order mark); instance files are JSON text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InstanceError(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                            f"{err.start}); instance files are JSON text") from None


def parse_instance_text(text: str, path: str | Path = "<memory>") -> Any:
    """``json.loads`` with one-line ``InstanceError``s naming ``path`` (invalid JSON,
    NaN/Infinity, nesting too deep, out of memory)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InstanceError(
            f"{path}: not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
        ) from None
    except ValueError as err:
        raise InstanceError(f"{path}: not valid JSON: {err}") from None
    except RecursionError:
        raise InstanceError(f"{path}: JSON nested too deeply to read") from None
    except MemoryError:
        raise InstanceError(f"{path}: out of memory reading the JSON ({len(text):,} "
                            "characters)") from None


def bundled_instance(name: str) -> Path | None:
    """The file of the bundled instance ``name`` (``"FAMILY/NAME"``, e.g.
    ``"knapsack/bb_table1"``; ``.json`` may be given), or None."""
    family, sep, stem = str(name).replace("\\", "/").partition("/")
    if not sep or family not in FAMILIES or not stem or "/" in stem:
        return None
    stem = stem[:-5] if stem.endswith(".json") else stem
    path = bundled_path(family, stem + ".json")
    return path if path.is_file() else None


def bundled_instances() -> list[dict]:
    """One row per bundled instance: ``name`` (``FAMILY/NAME``, what ``load_instance`` and
    ``hpcopt solve`` take), ``model``, the known ``optimum`` (from the family's
    ``optima.csv``, else None) and ``description``."""

    rows = []
    for family in FAMILIES:
        folder = bundled_path(family)
        optima: dict = {}
        if (folder / "optima.csv").is_file():
            with (folder / "optima.csv").open(newline="") as fh:
                optima = {r["instance"]: float(r["optimum"]) for r in csv.DictReader(fh)}
        for path in sorted(folder.glob("*.json")):
            doc = json.loads(path.read_text())
            rows.append(dict(name=f"{family}/{path.stem}", model=doc.get("model"),
                             optimum=optima.get(path.stem),
                             description=doc.get("description", "")))
    return rows


def load_instance(path: str | Path) -> Instance:
    """Read, validate and build one instance file, or a bundled instance by name
    (``"knapsack/bb_table1"``: ``FAMILY/NAME``, see ``bundled_instances``) when no such file
    exists.

    Raises
    ------
    InstanceError
        One line: the file, the JSON path of the bad field and what was expected (also for
        a file that is not text, nested too deeply or too large to load).

    Examples
    --------
    >>> inst = load_instance("knapsack/bb_table1")
    >>> inst.name, inst.model_kind, inst.model.n_items
    ('bb_table1', 'knapsack', 5)
    """
    path = Path(path)
    if not path.exists():
        path = bundled_instance(str(path)) or path
    obj = parse_instance_text(decode_instance_bytes(read_instance_bytes(path), path), path)
    return instance_from_dict(obj, path)


def read_instance_bytes(path: str | Path) -> bytes:
    """The bytes of an instance file, gunzipped when they start with gzip's magic bytes
    (``day.json.gz``); ``InstanceError`` naming the file when it cannot be read."""

    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InstanceError(f"{path}: cannot read file ({err.strerror})") from None
    except MemoryError:
        raise InstanceError(f"{path}: out of memory reading the file") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise InstanceError(f"{path}: corrupt gzip data ({err})") from None
        except MemoryError:
            raise InstanceError(f"{path}: out of memory unpacking the file") from None
    return data


def _dumps(obj: Any, indent: int = 0) -> str:
    """JSON with one entry per line, except that lists of numbers/strings stay on one line."""
    pad = " " * (indent + 2)
    if isinstance(obj, dict) and obj:
        body = ",\n".join(f"{pad}{json.dumps(k)}: {_dumps(v, indent + 2)}" for k, v in obj.items())
        return "{\n" + body + "\n" + " " * indent + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        body = ",\n".join(pad + _dumps(v, indent + 2) for v in obj)
        return "[\n" + body + "\n" + " " * indent + "]"
    return json.dumps(obj, allow_nan=False)


def save_instance(path: str | Path, model, name: str, *, description: str = "",
                  meta: dict | None = None) -> Path:
    """Write ``model`` as an instance file (validated first); returns the path."""
    inst = Instance(name, model, None, description, dict(meta or {}))
    obj = inst.to_dict()
    validate_instance(obj, path)
    path = Path(path)
    path.write_text(_dumps(obj) + "\n")
    return path


def expand_paths(patterns) -> list[Path]:
    """Expand file names, directories (their ``*.json``) and glob patterns, sorted, no duplicates.

    Globs are expanded here (``**`` too), so quoted patterns work on every shell.  A name that
    is no file but a bundled instance (``knapsack/bb_table1``) is that instance's file.  A
    pattern that matches nothing, or a missing file, is an ``InstanceError`` naming it.
    """
    if isinstance(patterns, (str, Path)):
        patterns = [patterns]
    found: set[Path] = set()
    for pattern in patterns:
        text = str(pattern)
        if glob.has_magic(text):
            matches = [Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file()]
        elif Path(text).is_dir():
            matches = [*Path(text).glob("*.json"), *Path(text).glob("*.json.gz")]
        else:
            bundled = None if Path(text).exists() else bundled_instance(text)
            matches = [Path(text)] if Path(text).is_file() else [bundled] if bundled else []
        if not matches:
            raise InstanceError(f"{text}: no such file (or the pattern matched no files, or "
                                "no bundled instance has that name: hpcopt instances)")
        found.update(matches)
    return sorted(found)


__all__ = [
    "FAMILIES", "Instance", "bundled_instance", "bundled_instances", "bundled_path",
    "decode_instance_bytes", "expand_paths", "instance_from_dict", "load_instance",
    "parse_instance_text", "read_instance_bytes", "save_instance", "schema",
    "validate_instance",
]
