#!/usr/bin/env python3
"""Keeps every JSON Schema in `schemas/` self-contained, and validates outputs with them as a
user would (Python's `jsonschema`, offline).

    schemas.py bundle                       rewrite schemas/*.schema.json with the definitions
                                            each one uses from another copied in
    schemas.py check                        exit 1 when a file differs from its bundle
    schemas.py validate SCHEMA DOC [...]    `jsonschema.validate(doc, schema)` for each pair
                                            (each schema checked and compiled once),
                                            with every network connection refused;
                                            `--reject` before a pair: that document must fail

A definition lives in one file, its source: the `$defs` entries without a dot. A file that uses
another's definition X of `detect.schema.json` refers to it as `#/$defs/detect.X` and carries a
copy under that name (with the definitions X uses, named the same way), so that no `$ref`
leaves the file: a stock validator resolves every reference without fetching anything. `check`
fails when a copy differs from its source (edit the source, then run `bundle`). `bundle` and
`check` use the standard library only; `validate` needs `jsonschema` (`cargo xtask setup`
installs it in target/tools/py).
"""

import json
import re
import sys
from pathlib import Path

SCHEMAS = ("detect", "analyze", "drill", "report", "lprof", "whatif", "ranks", "ranks-summary")
DIR = Path(__file__).resolve().parent.parent.parent / "schemas"
REF = re.compile(r"(?:([a-z]+)\.schema\.json)?#/\$defs/([^/]+)")


def path(name):
    return DIR / f"{name}.schema.json"


def load():
    return {name: json.loads(path(name).read_text(encoding="utf-8")) for name in SCHEMAS}


def text(doc):
    """The files' layout: two-space indent, keys in their order, UTF-8, a final newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def copied(key):
    """Whether a `$defs` key names a copy of another file's definition (`detect.bound`)."""
    home, dot, _ = key.partition(".")
    return dot == "." and home in SCHEMAS


def own_defs(doc):
    return {k: v for k, v in doc.get("$defs", {}).items() if not copied(k)}


def target(ref, home):
    """The definition a `$ref` of file `home` names: (file, definition)."""
    m = REF.fullmatch(ref)
    if not m:
        sys.exit(f"{home}.schema.json: $ref {ref!r} is not a definition (#/$defs/NAME)")
    file, name = m.groups()
    if file:
        return file, name
    if copied(name):
        file, _, name = name.partition(".")
        return file, name
    return home, name


def refs(value, home):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str):
                yield target(v, home)
            else:
                yield from refs(v, home)
    elif isinstance(value, list):
        for v in value:
            yield from refs(v, home)


def rewrite(value, home, into):
    """`value`, a part of file `home`, with its references as file `into` writes them."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str):
                file, name = target(v, home)
                out[k] = f"#/$defs/{name}" if file == into else f"#/$defs/{file}.{name}"
            else:
                out[k] = rewrite(v, home, into)
        return out
    if isinstance(value, list):
        return [rewrite(v, home, into) for v in value]
    return value


def bundle(docs, name):
    """File `name` with its own definitions and a copy of every other one it reaches."""
    doc = docs[name]
    body = {k: v for k, v in doc.items() if k != "$defs"}
    own = own_defs(doc)
    needed, todo = set(), list(refs([body, own], name))
    while todo:
        file, key = todo.pop()
        if file not in docs:
            sys.exit(f"{name}.schema.json refers to {file}.schema.json, which is not in schemas/")
        if file == name or (file, key) in needed:
            if file == name and key not in own:
                sys.exit(f"{name}.schema.json: no definition {key!r}")
            continue
        source = own_defs(docs[file])
        if key not in source:
            sys.exit(f"{name}.schema.json refers to {file}.schema.json's {key!r}, not defined there")
        needed.add((file, key))
        todo.extend(refs(source[key], file))
    defs = {k: rewrite(v, name, name) for k, v in own.items()}
    for file in SCHEMAS:
        for key, value in own_defs(docs[file]).items():
            if (file, key) in needed:
                defs[f"{file}.{key}"] = rewrite(value, file, name)
    out = {}
    for k, v in doc.items():
        out[k] = defs if k == "$defs" else rewrite(v, name, name)
    if "$defs" not in out and defs:
        out["$defs"] = defs
    return out


def main(argv):
    if len(argv) < 2 or argv[1] not in ("bundle", "check", "validate"):
        sys.exit(__doc__)
    if argv[1] == "validate":
        return validate(argv[2:])
    docs = load()
    stale = []
    for name in SCHEMAS:
        want = text(bundle(docs, name))
        if path(name).read_text(encoding="utf-8") == want:
            continue
        if argv[1] == "bundle":
            path(name).write_text(want, encoding="utf-8")
            print(f"rewrote {path(name)}")
        else:
            stale.append(name)
    if stale:
        print(
            "schemas/{" + ",".join(stale) + "}.schema.json differ from their bundle (a copied "
            "definition differs from its source, or a $ref leaves the file): edit the source "
            "definition, then run `python3 tests/tools/schemas.py bundle`",
            file=sys.stderr,
        )
        return 1
    return 0


def offline():
    """Every socket refused: a validator that tried to fetch a schema fails loudly."""
    import socket

    class Refused(socket.socket):
        def connect(self, *a, **k):
            raise OSError("schemas.py validate: network access refused (a $ref was fetched)")

        connect_ex = connect

    socket.socket = Refused

    def no_connection(*a, **k):
        raise OSError("schemas.py validate: network access refused (a $ref was fetched)")

    socket.create_connection = no_connection


def validate(args):
    offline()
    import jsonschema  # noqa: E402 (after the network is cut)

    failed = 0
    reject = False
    pairs = []
    for arg in args:
        if arg == "--reject":
            reject = True
            continue
        pairs.append((arg, reject))
        reject = False
    if len(pairs) % 2:
        sys.exit("validate: SCHEMA DOC pairs expected")
    validators = {}  # one per schema file, the schema itself checked once
    for (schema_path, _), (doc_path, must_fail) in zip(pairs[::2], pairs[1::2]):
        if schema_path not in validators:
            with open(schema_path, encoding="utf-8") as f:
                schema = json.load(f)
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validators[schema_path] = cls(schema)
        with open(doc_path, encoding="utf-8") as f:
            doc = json.load(f)
        # What `jsonschema.validate(doc, schema)` raises: the best match among the errors.
        best = jsonschema.exceptions.best_match(validators[schema_path].iter_errors(doc))
        error = None if best is None else f"at {'/'.join(map(str, best.absolute_path))}: {best.message}"
        if must_fail and error is None:
            print(f"{doc_path}: accepted by {schema_path}, expected a rejection")
            failed += 1
        elif not must_fail and error is not None:
            print(f"{doc_path}: rejected by {schema_path} {error}")
            failed += 1
    print(f"validated {len(pairs) // 2} documents; {failed} unexpected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
