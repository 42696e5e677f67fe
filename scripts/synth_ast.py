#!/usr/bin/env python3
"""Python-AST similarity of KernelBench programs, for kbsynth's
decontamination filter (docs/kbsynth-synthesis.md, "Decontamination").

A program becomes a sequence of tokens, one per AST node in depth-first
order, with what a renaming or a change of sizes would alter abstracted away:

  * imports are dropped, docstrings are dropped;
  * API references keep their full name, aliases resolved:
    `F.gelu`, `torch.nn.functional.gelu` and `from torch.nn import functional
    as fn; fn.gelu` all become `API:torch.nn.functional.gelu`;
  * the program's own names (variables, arguments, functions, classes other
    than the KernelBench entry points, `self.<member>`) become `V<n>` / `S<n>`
    numbered by first appearance, so a consistent renaming maps to the same
    sequence;
  * constants become their type (`C:int`, `C:float`, `C:str`, `C:bool`);
  * keyword argument names, tensor method names (`x.view`, `.sum`),
    builtins and every other node type are kept.

similarity(a, b) = difflib.SequenceMatcher(None, A, B, autojunk=False).ratio()
= 2 * matched tokens / (len A + len B), in [0, 1]; 1.0 means the same program
up to names and constants.

Usable as a script too (kbsynth similarity runs the last form):
    synth_ast.py A.py B.py            prints the similarity
    synth_ast.py --tokens A.py        prints A's token sequence
    synth_ast.py --reference DIR [--max-similarity 0.9] PROGRAM...
                                      one JSON line per program: similarity, nearest, flagged
"""

import ast
import builtins
import difflib
import os
import re
import sys

ENTRY_POINTS = {"Model", "forward", "__init__", "get_inputs", "get_init_inputs", "super"}
_BUILTINS = set(dir(builtins))


def _strip_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


def _aliases(tree):
    """Import aliases: local name -> full module or object path."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = node.module + "." + a.name
    return out


class _Tokens:
    def __init__(self, tree):
        self.aliases = _aliases(tree)
        self.names, self.members = {}, {}
        self.out = []

    def var(self, name):
        if name in ENTRY_POINTS:
            return "N:" + name
        if name in self.aliases:
            return "API:" + self.aliases[name]
        if name in _BUILTINS and name not in self.names:
            return "B:" + name
        return "V%d" % self.names.setdefault(name, len(self.names))

    def dotted(self, node):
        """['F', 'gelu'] for F.gelu, or None when the root is not a Name."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        return None

    def visit(self, node):
        if isinstance(node, (ast.expr_context, ast.Import, ast.ImportFrom)):
            return
        t = self.out.append
        if isinstance(node, ast.Name):
            t(self.var(node.id))
            return
        if isinstance(node, ast.Attribute):
            parts = self.dotted(node)
            if parts and parts[0] in self.aliases and parts[0] not in self.names:
                t("API:" + ".".join([self.aliases[parts[0]]] + parts[1:]))
                return
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                t("S%d" % self.members.setdefault(node.attr, len(self.members)))
                return
            t("ATTR:" + node.attr)
            self.visit(node.value)
            return
        if isinstance(node, ast.Constant):
            v = node.value
            t("C:" + ("bool" if isinstance(v, bool) else "None" if v is None else type(v).__name__))
            return
        if isinstance(node, ast.keyword):
            t("KW:" + str(node.arg))
        elif isinstance(node, ast.arg):
            t("ARG:" + ("self" if node.arg == "self" else self.var(node.arg)))
            return
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            t(type(node).__name__ + ":" + self.var(node.name))
        else:
            t(type(node).__name__)
        for child in ast.iter_child_nodes(node):
            self.visit(child)


def tokens(source):
    """The normalised token sequence of a program (SyntaxError if it does not parse)."""
    tree = ast.parse(source)
    _strip_docstrings(tree)
    v = _Tokens(tree)
    v.visit(tree)
    return v.out


def similarity(a, b):
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _reference_id(root, path):
    rel = os.path.relpath(path, root)
    parts = rel.replace(os.sep, "/").split("/")
    for i, p in enumerate(parts[:-1]):
        if re.fullmatch(r"level\d+", p):
            return "kernelbench/%s/%s" % (p, os.path.splitext(parts[-1])[0])
    if parts[-1] == "model.py" and len(parts) > 1:
        return "/".join(parts[:-1])
    base = os.path.basename(os.path.normpath(root))
    return base + "/" + os.path.splitext(rel)[0].replace(os.sep, "/")


class ReferenceSet:
    """Token sequences of every .py file under the given folders (or files)."""

    def __init__(self, paths):
        self.items = []      # (id, tokens)
        self.skipped = []    # (path, why)
        for root in paths:
            files = []
            if os.path.isfile(root):
                files = [root]
                root = os.path.dirname(root) or "."
            else:
                for d, _, names in os.walk(root):
                    files += [os.path.join(d, n) for n in names if n.endswith(".py")]
            for f in sorted(files):
                try:
                    with open(f, encoding="utf-8", errors="replace") as fh:
                        self.items.append((_reference_id(root, f), tokens(fh.read())))
                except SyntaxError as e:
                    self.skipped.append((f, "syntax error line %s" % e.lineno))

    def nearest(self, toks):
        """(similarity, reference id) of the most similar reference; (0.0, None) when empty.
        quick_ratio bounds skip references that cannot beat the best so far."""
        best, best_id = 0.0, None
        for rid, ref in self.items:
            sm = difflib.SequenceMatcher(None, toks, ref, autojunk=False)
            if sm.real_quick_ratio() <= best or sm.quick_ratio() <= best:
                continue
            r = sm.ratio()
            if r > best:
                best, best_id = r, rid
        return best, best_id


def main(argv):
    if len(argv) == 3 and argv[1] == "--tokens":
        with open(argv[2]) as f:
            print("\n".join(tokens(f.read())))
        return 0
    if "--reference" not in argv:
        if len(argv) != 3:
            sys.stderr.write(__doc__)
            return 2
        with open(argv[1]) as f:
            a = tokens(f.read())
        with open(argv[2]) as f:
            b = tokens(f.read())
        print("%.4f" % similarity(a, b))
        return 0
    import argparse
    import json
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", action="append", default=[])
    ap.add_argument("--max-similarity", type=float, default=0.9)
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args(argv[1:])
    refs = ReferenceSet(a.reference)
    for p in a.programs:
        out = {"program": p, "references": len(refs.items)}
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                sim, nearest = refs.nearest(tokens(f.read()))
            out.update(similarity=round(sim, 4), nearest=nearest, flagged=sim > a.max_similarity)
        except SyntaxError as e:
            out.update(error="syntax error line %s" % e.lineno, flagged=False)
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
