#!/usr/bin/env python3
"""Extracts plain English text from Debian documentation packages.

Sources (install on the training machine only):
  apt-get install -y debian-handbook python3.11-doc linux-doc-6.1
  - debian-handbook (en-US HTML): GPL-2.0+ or CC-BY-SA-3.0
  - python3.11-doc (HTML):        PSF License Version 2 (Python documentation)
  - linux-doc-6.1 (HTML):         GPL-2.0 (Linux kernel documentation)

Writes <out>/train.txt and <out>/heldout.txt. Whole pages go to the
held-out set (chosen by a seeded hash of their path) until it holds about
--heldout-bytes; neither the tokenizer nor the model sees those pages.
"""
import argparse
import hashlib
import html.parser
import os
import re
import sys

HANDBOOK = "/usr/share/doc/debian-handbook/html/en-US"
PYDOC = "/usr/share/doc/python3.11/html"
LINUXDOC = "/usr/share/doc/linux-doc-6.1/html"
# Index, search and changelog pages are lists of names, not prose.
PYDOC_DIRS = ["tutorial", "library", "reference", "howto", "faq", "using", "glossary.html",
              "extending", "installing", "distributing", "c-api", "whatsnew"]

# Everything in the kernel's documentation but its translations and
# Sphinx's own folders.
LINUX_EXCLUDE = {"translations", "_downloads", "_images", "_sources", "_static"}
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}

BLOCK_TAGS = {"p", "div", "br", "li", "ul", "ol", "pre", "h1", "h2", "h3",
              "h4", "h5", "h6", "tr", "table", "dt", "dd", "dl", "section",
              "blockquote", "title", "figure", "caption"}


class TextExtractor(html.parser.HTMLParser):
    """Keeps visible text; block elements end a line. For Sphinx pages only
    the main body counts (navigation and sidebars repeat on every page)."""

    def __init__(self, main_only):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.main_only = main_only
        self.main_depth = 0  # >0 while inside <div role="main">
        self.div_stack = []
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag == "div":
            is_main = dict(attrs).get("role") == "main"
            self.div_stack.append(is_main)
            self.main_depth += is_main
        if tag == "pre":
            self.pre += 1
        if tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag == "div" and self.div_stack:
            self.main_depth -= self.div_stack.pop()
        if tag == "pre" and self.pre:
            self.pre -= 1
        if tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.main_only and self.main_depth == 0:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


SKIP_RE = re.compile(r"<(script|style|head|nav|footer)\b.*?</\1>", re.S | re.I)
NAV_RE = re.compile(r'<div class="(navheader|navfooter|sphinxsidebar|related|footer)".*?</div>', re.S)
HEADERLINK_RE = re.compile(r'<a class="headerlink".*?</a>', re.S)


def extract(path, main_only):
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.read()
    src = SKIP_RE.sub(" ", src)
    src = HEADERLINK_RE.sub("", src)
    if not main_only:
        src = NAV_RE.sub(" ", src)
    p = TextExtractor(main_only)
    p.feed(src)
    text = "".join(p.parts)
    lines = [ln.rstrip() for ln in text.split("\n")]
    out, blank = [], 0
    for ln in lines:
        if not ln.strip():
            blank += 1
            continue
        if blank and out:
            out.append("")
        blank = 0
        out.append(ln if ln.startswith("    ") else ln.strip())
    return "\n".join(out).strip() + "\n"


def pages():
    for name in sorted(os.listdir(HANDBOOK)):
        if name.endswith(".html") and name not in ("index.html", "ix01.html"):
            yield "handbook/" + name, os.path.join(HANDBOOK, name), False
    for entry in PYDOC_DIRS:
        root = os.path.join(PYDOC, entry)
        if os.path.isfile(root):
            yield "pydoc/" + entry, root, True
            continue
        yield from walk_html(root, PYDOC, "pydoc/")
    for entry in sorted(os.listdir(LINUXDOC)):
        if entry not in LINUX_EXCLUDE and entry not in SKIP_PAGES:
            yield from walk_html(os.path.join(LINUXDOC, entry), LINUXDOC, "linux/")


def walk_html(root, base, tag):
    if os.path.isfile(root):
        if root.endswith(".html"):
            yield tag + os.path.relpath(root, base), root, True
        return
    for dp, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".html"):
                full = os.path.join(dp, name)
                yield tag + os.path.relpath(full, base), full, True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--heldout-bytes", type=int, default=200_000)
    ap.add_argument("--seed", default="oscar-tiny")
    args = ap.parse_args()
    for d in (HANDBOOK, PYDOC, LINUXDOC):
        if not os.path.isdir(d):
            sys.exit(f"missing {d}: apt-get install -y debian-handbook python3.11-doc linux-doc-6.1")
    os.makedirs(args.out, exist_ok=True)
    docs = []
    for key, path, main_only in pages():
        text = extract(path, main_only)
        if len(text) > 200:
            h = hashlib.sha256((args.seed + key).encode()).hexdigest()
            docs.append((h, key, text))
    # Held-out pages: the lowest hashes, each at most 40 KB so the set mixes
    # many pages from all sources.
    held, held_bytes = set(), 0
    for h, key, text in sorted(docs):
        if held_bytes >= args.heldout_bytes:
            break
        n = len(text.encode())
        if n <= 40_000:
            held.add(key)
            held_bytes += n
    with open(os.path.join(args.out, "train.txt"), "w", encoding="utf-8") as tr, \
         open(os.path.join(args.out, "heldout.txt"), "w", encoding="utf-8") as ho, \
         open(os.path.join(args.out, "pages.txt"), "w", encoding="utf-8") as pl:
        for _, key, text in sorted(docs, key=lambda d: d[1]):
            is_held = key in held
            # Training pages end with the end-of-text token; the held-out
            # file stays plain text for the engine's perplexity tool.
            if is_held:
                ho.write(text + "\n")
            else:
                tr.write(text + "<|endoftext|>\n")
            pl.write(f"{'heldout' if is_held else 'train'}\t{key}\n")
    print(f"{len(docs)} pages, held out {len(held)} ({held_bytes} bytes)")


if __name__ == "__main__":
    main()
