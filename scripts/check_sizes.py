#!/usr/bin/env python3
"""The house's size limits (docs/architecture.md, "Sizes"): no production source file over
1,000 lines and no production function over 120 lines.

Production code is everything under runtime/, hal/, adapters/, firmware_shim/ and examples/
(tests/ and bench/ are not). Functions are found by a small C/C++ tokenizer: a brace that
follows a parameter list (`name(...)`, with const/noexcept/override/final/mutable or a
constructor's initializer list between) opens a function body; bodies nested in a
function (lambdas, local classes) count as part of it.

  scripts/check_sizes.py [ROOT]          exit 1 and one line per breach if any
  scripts/check_sizes.py --list [ROOT]   also print the ten longest files and functions
"""
import os
import re
import sys

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 120
FOLDERS = ("runtime", "hal", "adapters", "firmware_shim", "examples")
SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".cc")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof",
           "static_assert", "requires", "noexcept", "alignas", "__attribute__"}
QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&"}

TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<pre>^[ \t]*\#(?:\\\n|[^\n])*)
  | (?P<word>[A-Za-z_]\w*)
  | (?P<num>\d[\w.']*)
  | (?P<nl>\n)
  | (?P<op>&&|::|->|[{}()\[\];,:<>=&*~])
  | (?P<other>\S)
""", re.S | re.M | re.X)


def tokens(text):
    """(kind, value, line) for every token, comments, strings and preprocessor lines dropped."""
    line = 1
    for m in TOKEN.finditer(text):
        kind = m.lastgroup if m.lastgroup != "delim" else "string"
        value = m.group(0)
        if kind == "nl":
            line += 1
            continue
        start = line
        line += value.count("\n")
        if kind in ("comment", "pre"):
            continue
        yield kind, value, start


def opens_function(toks, i):
    """True if the '{' at toks[i] opens a function body."""
    j = i - 1
    # skip qualifiers and a trailing return type's simple names: f() const noexcept {
    while j >= 0 and toks[j][1] in QUALIFIERS:
        j -= 1
    if j < 0 or toks[j][1] != ")":
        return False
    # walk back over a constructor initializer list: ) : a_(x), b_{y} {
    while True:
        depth = 0
        while j >= 0:
            v = toks[j][1]
            if v in (")", "}"):
                depth += 1
            elif v in ("(", "{"):
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j <= 0:
            return False
        before = toks[j - 1]
        if before[1] in CONTROL or before[1] in ("]", ")", ">"):
            # control statement, lambda, or a cast/call expression: not a function definition
            # (a template's '>' before '(' is rare in definitions; operator() is handled below)
            if before[1] == ")" and j >= 2 and toks[j - 2][1] == "(" and j >= 3 and toks[j - 3][1] == "operator":
                return True
            return False
        if before[0] != "word" and before[1] not in ("=", "<", "*", "&", "~"):
            return False
        # an initializer list entry? look past it for ':' or ','
        k = j - 2
        if k >= 0 and toks[k][1] in (",", ":") and toks[k][1] != "::":
            # a_(x), b_{y} ... : find the parameter list's ')' before the ':'
            while k >= 0 and toks[k][1] == ",":
                # previous member initializer: word ( ... ) or word { ... }
                k -= 1
                if k < 0 or toks[k][1] not in (")", "}"):
                    return False
                j = k
                depth = 0
                while j >= 0:
                    v = toks[j][1]
                    if v in (")", "}"):
                        depth += 1
                    elif v in ("(", "{"):
                        depth -= 1
                        if depth == 0:
                            break
                    j -= 1
                k = j - 2
            if k >= 0 and toks[k][1] == ":":
                k -= 1
                while k >= 0 and toks[k][1] in QUALIFIERS:
                    k -= 1
                if k >= 0 and toks[k][1] == ")":
                    j = k
                    continue
            return before[1] != "="
        return before[1] != "="


def functions(text):
    """(name, first line, last line) of every top-level function body."""
    toks = list(tokens(text))
    stack = []  # per open brace: (is_function_start, line, name)
    in_function = 0
    found = []
    for i, (kind, value, line) in enumerate(toks):
        if value == "{":
            starts = in_function == 0 and opens_function(toks, i)
            name = ""
            if starts:
                # the name: the word before the parameter list's '('
                depth, j = 0, i - 1
                while j >= 0 and toks[j][1] != ")":
                    j -= 1
                while j >= 0:
                    if toks[j][1] == ")":
                        depth += 1
                    elif toks[j][1] == "(":
                        depth -= 1
                        if depth == 0:
                            break
                    j -= 1
                name = toks[j - 1][1] if j > 0 else "?"
                if j > 2 and toks[j - 2][1] == "::":
                    name = toks[j - 3][1] + "::" + name
                in_function += 1
            elif in_function:
                in_function += 1
            stack.append((starts, line, name))
        elif value == "}" and stack:
            starts, first, name = stack.pop()
            if in_function:
                in_function -= 1
            if starts:
                found.append((name, first, line))
    return found


def sources(root):
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("build", "node_modules"))
            for f in sorted(filenames):
                if f.endswith(SUFFIXES):
                    yield os.path.join(dirpath, f)


def main(argv):
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    breaches, files, funcs = [], [], []
    for path in sources(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, root)
        lines = text.count("\n")
        files.append((lines, rel))
        if lines > MAX_FILE_LINES:
            breaches.append(f"{rel}: {lines} lines (limit {MAX_FILE_LINES})")
        for name, first, last in functions(text):
            n = last - first + 1
            funcs.append((n, f"{rel}:{first} {name}"))
            if n > MAX_FUNCTION_LINES:
                breaches.append(f"{rel}:{first}: function {name} is {n} lines (limit {MAX_FUNCTION_LINES})")
    if listing:
        print("longest files:")
        for n, rel in sorted(files, reverse=True)[:10]:
            print(f"  {n:5d}  {rel}")
        print("longest functions:")
        for n, where in sorted(funcs, reverse=True)[:10]:
            print(f"  {n:5d}  {where}")
    for b in breaches:
        print(b)
    print(f"check_sizes: {len(files)} files, {len(funcs)} functions, {len(breaches)} over the limits")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
