#!/usr/bin/env python3
"""A minimal pkg-config for machines without one (the GPU machine): answers
the queries meson makes (--version, --modversion, --cflags, --libs,
--variable=NAME, --exists) from the .pc files on PKG_CONFIG_PATH. Requires
are not followed. Use: PKG_CONFIG=scripts/pkgconfig_shim.py meson setup ..."""
import os
import re
import sys


def find(name):
    for d in os.environ.get("PKG_CONFIG_PATH", "").split(os.pathsep):
        p = os.path.join(d, name + ".pc")
        if d and os.path.exists(p):
            return p
    return None


def parse(path):
    env = {"pcfiledir": os.path.dirname(os.path.abspath(path))}
    fields = {}
    expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), s)  # noqa: E731
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([\w.]+)\s*=\s*(.*)$", line)
        if m:
            env[m.group(1)] = expand(m.group(2))
            continue
        m = re.match(r"^([\w.]+)\s*:\s*(.*)$", line)
        if m:
            fields[m.group(1)] = expand(m.group(2))
    return env, fields


def main(argv):
    opts = [a for a in argv if a.startswith("--")]
    names = [a for a in argv if not a.startswith("-")]
    if "--version" in opts:
        print("0.29.2")
        return 0
    out = []
    for name in names:
        path = find(name)
        if not path:
            if "--print-errors" in opts or "--exists" not in opts:
                sys.stderr.write(f"Package {name} was not found in the pkg-config search path.\n")
            return 1
        env, fields = parse(path)
        for o in opts:
            if o == "--modversion":
                out.append(fields.get("Version", ""))
            elif o == "--cflags":
                out.append(fields.get("Cflags", ""))
            elif o == "--libs":
                out.append(fields.get("Libs", ""))
            elif o.startswith("--variable="):
                out.append(env.get(o.split("=", 1)[1], ""))
    text = " ".join(x for x in out if x)
    if text or any(o in opts for o in ("--modversion", "--cflags", "--libs")):
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
