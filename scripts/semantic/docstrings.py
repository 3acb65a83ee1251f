"""Docstrings of a Python standard library, one JSON object a line: {"key", "text"}.

Run by the interpreter whose library it reads (Python 2.7 or 3.x), so that its own `ast`
parses its own sources: `python docstrings.py > out.jsonl`. The key is the module path and
the qualified name (`json/decoder.py:JSONDecoder.decode`); texts are cleaned as
`inspect.cleandoc` does. Tests, idlelib, lib2to3's fixtures and site-packages are left out.
"""
import ast
import inspect
import io
import json
import os
import sys

SKIP = ("test", "tests", "idlelib", "site-packages", "lib2to3", "turtledemo", "ensurepip")


def walk(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith("_"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def docs(tree, prefix):
    out = []

    def visit(node, name):
        doc = ast.get_docstring(node, clean=False)
        if doc:
            out.append((name, doc))
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)) or (
                hasattr(ast, "AsyncFunctionDef") and isinstance(child, ast.AsyncFunctionDef)
            ):
                visit(child, (name + "." if name else "") + child.name)

    visit(tree, "")
    return [(prefix + ":" + (n or "<module>"), d) for n, d in out]


def main():
    root = os.path.dirname(os.__file__)
    for path in walk(root):
        rel = os.path.relpath(path, root)
        try:
            with io.open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for key, doc in docs(tree, rel):
            text = inspect.cleandoc(doc)
            line = json.dumps({"key": key, "text": text}, ensure_ascii=False)
            if sys.version_info[0] == 2:
                line = line.encode("utf-8") if isinstance(line, unicode) else line  # noqa: F821
            sys.stdout.write(line + "\n" if sys.version_info[0] > 2 else line + b"\n")


if __name__ == "__main__":
    main()
