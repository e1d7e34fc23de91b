#!/usr/bin/env python3
# Checks that every repository path cited in a source comment or a doc exists (ctest entry `docs:cited-paths`).
"""Every repository path cited in a comment or a doc must exist.

What is read (the files git tracks or would track, or every file when the tree is not a git checkout):
  - C, C++ and CMake sources: their comments (`//`, `/* */`, and `#` lines in CMake files);
  - shell and Python scripts: their `#` comments;
  - Markdown files and the .ci/ scripts: their whole text;
  - JSON files under scenarios/, validation/ and models/hw/: their whole text (descriptions and sources cite docs).
Test fixtures (tests/fuzz/seeds, tests/traces/fixtures) are data, not citations, and are not read.

What counts as a path (the rules are in PATH_RE and LINK_RE below):
  1. a token that starts with one of the repository's top-level folders (`apps/`, `core/`, `docs/`, `tests/`, ...,
     `.ci/`) not preceded by a word character, `/`, `.` or `-` (so `tensorflow/core/...` and URLs do not count),
     made of letters, digits and `_ . / + -`, and ending in a file extension (`docs/model.md`, `sim/platform.cpp`,
     `scenarios/examples/grpc.json`) or in `/` (a folder: `models/hw/`). Tokens with a placeholder or a glob
     (`models/hw/<kind>/<name>.json`, `scenarios/examples/*.json`) stop at the `<` or `*` and, lacking an extension,
     are not paths. A name without extension (`sim/transfer_job`) names a unit, not a file, and is not checked.
  2. a bare Markdown file name (`protocols.md`, `layout.md`) that is not part of a longer path: some file of that
     name must exist in the repository (this is how a cited document that was never added is caught).
  3. a relative path that starts with `../` and ends in a file extension, resolved against the citing file's folder
     (not after a double quote: `"hw": "../lab/host.json"` is a value in a user's file, not a citation);
  4. in Markdown, the target of a relative link `[text](target)`, resolved against the linking file's folder.
A cited path that .gitignore ignores (build/, notebooks/out/, notebooks/data/) is a generated output and is not
required to exist. Another project's file is cited with that project's name in front (`tensorflow/core/...`,
`HolisticTraceAnalysis/tests/data/...`), which the rules above do not take for a path of this repository.

Besides, docs/layout.md must name every top-level folder of the repository (as `name/` or `name/...` in
backquotes), `.ci/` included.

Exit status 0 when every cited path exists; 1 with one line `file:line: path` per broken citation otherwise.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))

SKIP_PREFIXES = ("tests/fuzz/seeds/", "tests/traces/fixtures/", "build/")
EXTENSIONS = ("md|cpp|hpp|h|c|cc|json|sh|py|txt|cmake|ipynb|supp|xml|csv|yaml|yml|gz|png|dot|log|pb|proto")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"], check=True, capture_output=True, text=True).stdout
        files = [f for f in out.splitlines() if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for base, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in (".git", "build")]
        for n in names:
            found.append(os.path.relpath(os.path.join(base, n), ROOT))
    return found


def top_folders(files):
    tops = set()
    for f in files:
        if "/" in f:
            tops.add(f.split("/", 1)[0])
    return sorted(tops)


def comment_lines(path, text):
    """(line number, text) pairs of what is read in this file, or [] when the file is not read."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    lines = text.split("\n")
    if ext == ".md" or path.startswith(".ci/"):
        return list(enumerate(lines, 1))
    if ext == ".json":
        if path.startswith(("scenarios/", "validation/", "models/hw/")):
            return list(enumerate(lines, 1))
        return []
    if ext in (".cpp", ".hpp", ".h", ".c", ".cc"):
        result = []
        in_block = False
        for no, line in enumerate(lines, 1):
            rest = line
            picked = []
            while rest:
                if in_block:
                    end = rest.find("*/")
                    if end < 0:
                        picked.append(rest)
                        rest = ""
                    else:
                        picked.append(rest[:end])
                        rest = rest[end + 2:]
                        in_block = False
                    continue
                # Skip string literals so that "//" inside a string is not a comment.
                m = re.search(r'//|/\*|"', rest)
                if not m:
                    break
                if m.group(0) == "//":
                    picked.append(rest[m.end():])
                    break
                if m.group(0) == "/*":
                    in_block = True
                    rest = rest[m.end():]
                    continue
                close = re.search(r'(?<!\\)"', rest[m.end():])
                rest = rest[m.end() + close.end():] if close else ""
            if picked:
                result.append((no, " ".join(picked)))
        return result
    if ext in (".sh", ".py", ".cmake") or name == "CMakeLists.txt" or name.endswith(".supp"):
        result = []
        for no, line in enumerate(lines, 1):
            idx = line.find("#")
            if idx >= 0:
                result.append((no, line[idx + 1:]))
        return result
    return []


def ignored(path):
    """True when .gitignore ignores the path: a generated output (notebooks/out/), not a file to ship."""
    try:
        return subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", "--no-index", path],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def main():
    files = tracked_files()
    existing = set(files)
    folders = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            folders.add("/".join(parts[:i]))
    md_names = {os.path.basename(f) for f in files if f.endswith(".md")}
    tops = top_folders(files)
    path_re = re.compile(r"(?<![\w/.\-])((?:%s)/[\w./+\-]*?(?:\.(?:%s)(?!\w|/|\.\w)|/(?![\w.])))" %
                         ("|".join(re.escape(t) for t in tops), EXTENSIONS))
    rel_re = re.compile(r"(?<![\w/.\-\"])((?:\.\./)+[\w./+\-]*?\.(?:%s)(?!\w|/|\.\w))" % EXTENSIONS)
    bare_md_re = re.compile(r"(?<![\w/.\-])([\w\-]+\.md)(?![\w/])")
    link_re = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")

    broken = []
    checked = 0
    for f in files:
        if f.startswith(SKIP_PREFIXES):
            continue
        full = os.path.join(ROOT, f)
        try:
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in comment_lines(f, text):
            for m in path_re.finditer(line):
                cited = m.group(1).rstrip(".")
                checked += 1
                target = cited.rstrip("/")
                if cited.endswith("/"):
                    ok = target in folders
                else:
                    ok = target in existing or target in folders
                if not ok:
                    broken.append("%s:%d: %s" % (f, no, cited))
            for m in rel_re.finditer(line):
                checked += 1
                resolved = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
                if resolved not in existing and resolved not in folders:
                    broken.append("%s:%d: %s (resolved to %s)" % (f, no, m.group(1), resolved))
            for m in bare_md_re.finditer(line):
                checked += 1
                if m.group(1) not in md_names:
                    broken.append("%s:%d: %s (no Markdown file of that name in the repository)" % (f, no, m.group(1)))
            if f.endswith(".md"):
                for m in link_re.finditer(line):
                    target = m.group(1)
                    if re.match(r"^[a-z]+:", target):
                        continue  # a URL
                    checked += 1
                    resolved = os.path.normpath(os.path.join(os.path.dirname(f), target))
                    if resolved not in existing and resolved not in folders:
                        broken.append("%s:%d: %s (a link, resolved to %s)" % (f, no, target, resolved))
    layout_path = os.path.join(ROOT, "docs", "layout.md")
    layout = open(layout_path, encoding="utf-8").read() if os.path.exists(layout_path) else ""
    for t in tops:
        checked += 1
        if not re.search(r"`%s/" % re.escape(t), layout):
            broken.append("docs/layout.md: %s/ (a top-level folder the layout table does not name)" % t)
    broken = [b for b in broken if not ignored(b.split(": ", 1)[1].split(" ")[0])]
    if broken:
        print("cited paths that do not exist in the repository (%d of %d citations):" % (len(broken), checked))
        for b in broken:
            print("  " + b)
        print("Fix the citation or add the file; the patterns that count as a path are in %s." %
              os.path.relpath(__file__, ROOT))
        return 1
    print("%d cited paths checked, all exist" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
