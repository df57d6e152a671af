#!/usr/bin/env python3
"""The house's figures, per crate: functions longer than N lines (outside tests) and functions
returning `Result<_, String>` (outside tests). Used to measure issue 23's refactor.

    python3 scripts/house-figures.py [--over 150] [--list] [crate ...]
"""
import os, re, sys

args = sys.argv[1:]
over = 150
listing = "--list" in args
if "--over" in args:
    over = int(args[args.index("--over") + 1])
crates = [a for a in args if not a.startswith("--") and not a.isdigit()]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
crates = crates or sorted(os.listdir(root))


def strip(line, state):
    """The line with strings, chars and comments blanked; state carries block comments."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"] = False
            i = j + 2
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if c == 'r' and re.match(r'r#*"', line[i:]):
            m = re.match(r'r(#*)"', line[i:])
            end = '"' + m.group(1)
            j = line.find(end, i + len(m.group(0)))
            if j < 0:
                state["raw"] = end
                return "".join(out)
            i = j + len(end)
            out.append('""')
            continue
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            if j >= n:
                state["str"] = True
                return "".join(out)
            i = j + 1
            out.append('""')
            continue
        if c == "'" and re.match(r"'(\\.|[^\\'])'", line[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", line[i:]).group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, lines, returns Result<_, String>) for each fn outside test modules."""
    lines = open(path, encoding="utf-8").read().split("\n")
    state = {"block": False, "str": False, "raw": None}
    code = []
    for l in lines:
        if state["raw"]:
            j = l.find(state["raw"])
            if j < 0:
                code.append("")
                continue
            l = l[j + len(state["raw"]):]
            state["raw"] = None
        if state["str"]:
            j = 0
            while j < len(l) and l[j] != '"':
                j += 2 if l[j] == "\\" else 1
            if j >= len(l):
                code.append("")
                continue
            l = l[j + 1:]
            state["str"] = False
        code.append(strip(l, state))
    out = []
    depth = 0
    test_depth = None
    pending_test = False
    stack = []  # (name, start, depth at open, sig)
    sig = None
    for i, l in enumerate(code):
        if re.search(r"#\[cfg\(test\)\]", lines[i]):
            pending_test = True
        m = re.search(r"\bfn\s+(\w+)", l)
        if m and test_depth is None and sig is None:
            sig = (m.group(1), i, "")
        if sig is not None:
            sig = (sig[0], sig[1], sig[2] + l)
        for ch in l:
            if ch == "{":
                if pending_test and test_depth is None:
                    test_depth = depth
                    pending_test = False
                if sig is not None:
                    stack.append((sig[0], sig[1], depth, sig[2]))
                    sig = None
                depth += 1
            elif ch == "}":
                depth -= 1
                if stack and stack[-1][2] == depth:
                    name, start, _, s = stack.pop()
                    ret = s.split("->", 1)[1] if "->" in s else ""
                    stringy = bool(re.search(r"Result<.*,\s*String\s*>", ret))
                    out.append((name, start + 1, i - start + 1, stringy))
                if test_depth is not None and depth == test_depth:
                    test_depth = None
            elif ch == ";" and sig is not None and "{" not in sig[2]:
                sig = None  # a declaration without a body (trait method)
        if pending_test and re.search(r"\bfn\b", l):
            pending_test = False  # #[cfg(test)] on a function: it is skipped as one block anyway
    return out


tot_long = tot_str = 0
for c in crates:
    d = os.path.join(root, c)
    if not os.path.isdir(d):
        continue
    long_, stringy = [], []
    for dp, _, fs in os.walk(d):
        if "/tests" in dp[len(d):] or "/benches" in dp[len(d):] or "/fuzz" in dp[len(d):]:
            continue
        for f in fs:
            if not f.endswith(".rs") or f in ("build.rs", "tests.rs"):
                continue
            p = os.path.join(dp, f)
            for name, start, n, s in functions(p):
                rel = os.path.relpath(p, os.path.join(root, ".."))
                if n > over:
                    long_.append((n, f"{rel}:{start} {name}"))
                if s:
                    stringy.append(f"{rel}:{start} {name}")
    tot_long += len(long_)
    tot_str += len(stringy)
    print(f"{c:10} fns over {over}: {len(long_):3}   Result<_, String> fns: {len(stringy):3}")
    if listing:
        for n, w in sorted(long_, reverse=True):
            print(f"    {n:4} {w}")
        for w in stringy:
            print(f"    str  {w}")
print(f"{'total':10} fns over {over}: {tot_long:3}   Result<_, String> fns: {tot_str:3}")
