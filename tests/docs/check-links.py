#!/usr/bin/python3
"""Fails if a Markdown file of the repository refers to a file or heading that is not in it.

   tests/docs/check-links.py [REPO]

Checked in every *.md outside build directories and node_modules: the targets of relative links and images
(with their #heading, GitHub's way of naming it), and file names in code spans that look like
paths into the repository (a top-level folder of it, or a name ending in .md). Absolute paths
and paths leaving the repository are broken by definition: a reader's clone has neither.
Prints one line per broken reference, and exits 1 if there is any.
"""
import os
import re
import sys

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
PLACEHOLDER = re.compile(r"[*<>{}$…|]")


def is_build_dir(path):
    """Build output, or packages a benchmark installs (npm's node_modules): not ours to check."""
    name = os.path.basename(path)
    return (name.startswith((".", "build")) or name == "node_modules"
            or os.path.exists(os.path.join(path, "CMakeCache.txt")))


def markdown_files(repo):
    for top, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if not is_build_dir(os.path.join(top, d)))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(top, name)


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                yield number, line


HEADINGS = {}  # Markdown file -> the anchors of its headings


def anchors(path):
    if path not in HEADINGS:
        found, repeats = set(), {}
        for _, line in prose_lines(path):
            match = HEADING.match(line)
            if match:
                base = slug(match.group(1))
                repeats[base] = repeats.get(base, -1) + 1
                # GitHub numbers a repeated heading's anchor: name, name-1, name-2, ...
                found.add(base if repeats[base] == 0 else "%s-%d" % (base, repeats[base]))
        HEADINGS[path] = found
    return HEADINGS[path]


def inside(repo, path):
    return os.path.commonpath([repo, os.path.realpath(path)]) == repo


def check_link(repo, source, target):
    """Why the link `target` in file `source` is broken, or None."""
    if SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        return "an absolute path, outside the repository"
    resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    if not inside(repo, resolved):
        return "leaves the repository"
    if not os.path.exists(resolved):
        return "no such file"
    if anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
        return "no heading #%s in %s" % (anchor, os.path.relpath(resolved, repo))
    return None


def check_code_span(repo, top_level, source, text):
    """Why the file named by code span `text` is missing, or None if it is found or no file name."""
    if re.search(r"\s", text) or PLACEHOLDER.search(text) or SCHEME.match(text):
        return None
    looks_like_doc = text.endswith(".md")
    if text.startswith("/"):
        return "an absolute path, outside the repository" if looks_like_doc else None
    if not looks_like_doc and text.split("/")[0] not in top_level:
        return None
    for base in (os.path.dirname(source), repo):
        candidate = os.path.normpath(os.path.join(base, text))
        if inside(repo, candidate) and os.path.exists(candidate):
            return None
    return "no such file in the repository"


def main():
    repo = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    top_level = {name for name in os.listdir(repo)
                 if os.path.isdir(os.path.join(repo, name)) and not is_build_dir(os.path.join(repo, name))}
    broken, checked, files = [], 0, 0
    for source in markdown_files(repo):
        files += 1
        for number, line in prose_lines(source):
            where = "%s:%d" % (os.path.relpath(source, repo), number)
            for span in CODE_SPAN.finditer(line):
                checked += 1
                why = check_code_span(repo, top_level, source, span.group(2).strip())
                if why:
                    broken.append("%s: `%s`: %s" % (where, span.group(2).strip(), why))
            text = CODE_SPAN.sub("", line)
            targets = [m.group(1) for m in INLINE_LINK.finditer(text)]
            targets += [m.group(1) for m in REFERENCE_DEFINITION.finditer(text)]
            for target in targets:
                checked += 1
                why = check_link(repo, source, target)
                if why:
                    broken.append("%s: (%s): %s" % (where, target, why))
    for line in broken:
        print(line)
    print("%d references in %d Markdown files, %d broken" % (checked, files, len(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
