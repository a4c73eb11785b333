#!/usr/bin/env python3
"""Builds ChatML conversations for the chat fine-tune of oscar-tiny from the
same Debian documentation pages it was trained on.

  python3 training/prepare_chat_data.py --work WORK --model BASE.gguf

WORK is training/prepare_data.py's output folder (pages.txt says which page
is held out). Questions and answers come only from the pages themselves:
  - headings that are questions (the Python FAQ, "Q:" lines in kernel
    documents) with the start of the text below them as the answer;
  - other headings turned into a question by a template ("What is X?",
    "Tell me about X.", "How do I configure X?" from "Configuring X"), the
    answer being the start of that section;
  - glossary and definition lists (term -> the start of its definition).
Answers are the first paragraph of the section, cut at a sentence end to at
most ANSWER_CHARS characters (and ANSWER_TOKENS tokens), so a 256-token
reply budget is natural; each ends with <|im_end|>. Some conversations have a system prompt, some several turns from
the same page.

Writes WORK/chat_train.jsonl (conversations from training pages only),
WORK/chat_heldout.jsonl (EVAL_QUESTIONS single-turn questions from the
held-out pages, for evaluation only) and WORK/chat_stats.txt. Deterministic:
pages in sorted order, one seeded random generator.
"""
import argparse
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import prepare_data  # noqa: E402

ANSWER_CHARS = 400
ANSWER_TOKENS = 150
MIN_ANSWER_CHARS = 40
EVAL_QUESTIONS = 200

SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are a helpful assistant. Answer briefly.",
    "You answer questions about Debian, Python and the Linux kernel from their documentation.",
    "You are a concise technical assistant.",
    "Answer the user's question in a few sentences.",
]

HEAD_START, HEAD_END = "\x01", "\x02"
TERM_START, TERM_END = "\x03", "\x04"
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class SectionExtractor(prepare_data.TextExtractor):
    """prepare_data's text extractor, with headings and definition-list
    terms marked so the text can be cut into (title, body) sections."""

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        if tag in HEADINGS:
            self.parts.append(HEAD_START)
        elif tag == "dt":
            self.parts.append(TERM_START)

    def handle_endtag(self, tag):
        if tag in HEADINGS:
            self.parts.append(HEAD_END)
        elif tag == "dt":
            self.parts.append(TERM_END)
        super().handle_endtag(tag)


def page_sections(path, main_only):
    """[(kind, title, body)] in page order; kind is 'heading' or 'term'."""
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.read()
    src = prepare_data.SKIP_RE.sub(" ", src)
    src = prepare_data.HEADERLINK_RE.sub("", src)
    if not main_only:
        src = prepare_data.NAV_RE.sub(" ", src)
    p = SectionExtractor(main_only)
    p.feed(src)
    text = "".join(p.parts)
    out, kind, title, body = [], None, None, []
    pattern = re.compile(f"{HEAD_START}(.*?){HEAD_END}|{TERM_START}(.*?){TERM_END}", re.S)
    pos = 0
    for m in pattern.finditer(text):
        body.append(text[pos:m.start()])
        if title is not None:
            out.append((kind, title, "".join(body)))
        kind = "heading" if m.group(1) is not None else "term"
        title = clean_title(m.group(1) if m.group(1) is not None else m.group(2))
        body, pos = [], m.end()
    body.append(text[pos:])
    if title is not None:
        out.append((kind, title, "".join(body)))
    # Questions written as "Q: ..." paragraphs (e.g. the kernel's swsusp FAQ)
    # are question/answer pairs too.
    qa = []
    for kind, t, b in out:
        qa.append((kind, t, b))
        for m in re.finditer(r"^Q: *(.+?)\n+A: *(.+?)(?=\n\s*\n|\Z)", b, re.S | re.M):
            qa.append(("faq", clean_title(m.group(1)), m.group(2)))
    return qa


def clean_title(t):
    t = re.sub(r"\s+", " ", t).strip()
    t = t.replace("\u00b6", "").strip()
    # Handbook and Sphinx section numbers ("6.2.1. ", "3.1. ").
    return re.sub(r"^(Chapter |Appendix )?[0-9A-Z]?(\.?[0-9]+)*\.\s+", "", t).strip()


def answer_from(body):
    """The first paragraph of a section, at most ANSWER_CHARS characters
    (cut after a sentence when longer). One paragraph, so that the pattern
    the model learns is "a paragraph, then <|im_end|>": a small model that
    goes on past its first paragraph soon repeats itself, and a reply that
    loops never ends. A paragraph that only introduces what follows (ends
    with ':') is no answer."""
    text = "\n".join(ln.rstrip() for ln in body.split("\n")).strip()
    para = re.split(r"\n\s*\n", text, maxsplit=1)[0].strip()
    if len(para) > ANSWER_CHARS:
        head = para[:ANSWER_CHARS]
        cut = max(head.rfind(". "), head.rfind(".\n"))
        if cut < MIN_ANSWER_CHARS:
            return None
        para = head[:cut + 1]
    if para.endswith(":") or len(para) < MIN_ANSWER_CHARS:
        return None
    return para


GERUND_E = ("ur", "at", "iz", "is", "ag", "ov", "in", "ng", "ar", "ud", "ak", "ir", "av", "rc", "ib", "us")


def base_verb(gerund):
    """'Configuring' -> 'configure', 'Running' -> 'run' (a heuristic)."""
    s = gerund[:-3].lower()
    if len(s) > 2 and s[-1] == s[-2] and s[-1] not in "ls":
        return s[:-1]
    if s.endswith(GERUND_E) and not s.endswith(("ain", "ein", "oin")):
        return s + "e"
    return s


def question_for(kind, title, page_title, rng):
    if kind == "faq" or title.endswith("?"):
        return title if title.endswith("?") else title + "?"
    words = title.split()
    if kind == "term":
        name = title if len(title) <= 80 else None
        if name is None:
            return None
        return rng.choice([f"What is {name}?", f"What does {name} mean?", f"Explain {name}.",
                           f"What is {name} used for?"])
    if words and words[0].endswith("ing") and len(words[0]) > 5 and len(words) > 1:
        rest = " ".join(words[1:])
        verb = base_verb(words[0])
        return rng.choice([f"How do I {verb} {rest}?", f"How can I {verb} {rest}?",
                           f"Tell me about {title[0].lower() + title[1:]}."])
    context = f" in {page_title}" if len(words) <= 2 and page_title and page_title != title else ""
    return rng.choice([f"What is {title}{context}?", f"Tell me about {title}{context}.",
                       f"Can you explain {title}{context}?", f"What should I know about {title}{context}?",
                       f"Explain {title}{context}."])


# Headings that name a part of a page rather than a topic: no question
# can be made from them alone.
GENERIC_TITLES = {"contents", "table of contents", "footnotes", "see also", "examples", "example",
                  "notes", "note", "introduction", "overview", "summary", "description", "usage"}


def page_pairs(path, main_only, rng):
    """The (question, answer) pairs of one page, in page order."""
    sections = page_sections(path, main_only)
    page_title = next((t for k, t, _ in sections if k == "heading"), "")
    pairs = []
    for i, (kind, title, body) in enumerate(sections):
        if kind == "term" and title == "Q:":
            # A definition-list FAQ (the kernel's swsusp page): the term
            # "Q:" holds the question, the next term "A:" the answer.
            if i + 1 < len(sections) and sections[i + 1][1] == "A:":
                q = re.sub(r"\s+", " ", body).strip()
                answer = answer_from(sections[i + 1][2])
                if q and len(q) <= 300 and answer and len(answer) >= MIN_ANSWER_CHARS:
                    pairs.append((q, answer))
            continue
        if not title or len(title) > 160 or title.endswith(":") or len(title) < 3:
            continue  # labels ("Parameters:", "A:"), not topics
        if title.lower() in GENERIC_TITLES and (title == page_title or not page_title):
            continue
        answer = answer_from(body)
        if not answer or len(answer) < MIN_ANSWER_CHARS or "<|" in answer:
            continue
        q = question_for(kind, title, page_title, rng)
        if q and "\n" not in q and "<|" not in q:
            pairs.append((q, answer))
    return pairs


def split_pages(work):
    held, train = [], []
    with open(os.path.join(work, "pages.txt"), encoding="utf-8") as f:
        for line in f:
            split, key = line.rstrip("\n").split("\t")
            (held if split == "heldout" else train).append(key)
    return set(train), set(held)


def conversations(pairs_by_page, rng):
    """Single- and multi-turn conversations, some with a system prompt."""
    convs = []
    for key in sorted(pairs_by_page):
        pairs = list(pairs_by_page[key])
        i = 0
        while i < len(pairs):
            turns = rng.choice([1, 1, 1, 2, 3])
            msgs = []
            if rng.random() < 0.35:
                msgs.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
            for q, a in pairs[i:i + turns]:
                msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
            convs.append({"page": key, "messages": msgs})
            i += turns
    rng.shuffle(convs)
    return convs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", required=True, help="the base GGUF (its tokenizer measures the answers)")
    ap.add_argument("--seed", type=int, default=47)
    args = ap.parse_args()
    import tokenizer_from_gguf
    tok = tokenizer_from_gguf.load(args.model)
    train_keys, held_keys = split_pages(args.work)
    rng = random.Random(args.seed)
    by_page = {"train": {}, "heldout": {}}
    n_long = 0
    for key, path, main_only in prepare_data.pages():
        split = "heldout" if key in held_keys else "train" if key in train_keys else None
        if split is None:
            continue  # a page prepare_data dropped (too short)
        pairs = []
        for q, a in page_pairs(path, main_only, rng):
            if len(tok.encode(a)) > ANSWER_TOKENS:
                n_long += 1
                continue
            pairs.append((q, a))
        if pairs:
            by_page[split][key] = pairs
    train = conversations(by_page["train"], rng)
    held = [{"page": k, "question": q, "answer": a}
            for k in sorted(by_page["heldout"]) for q, a in by_page["heldout"][k]]
    rng.shuffle(held)
    held = held[:EVAL_QUESTIONS]
    n_alt = 0
    if len(held) < EVAL_QUESTIONS:
        # The held-out pages have fewer sections than questions wanted: ask
        # some sections a second time, in another template's words (a
        # generator of its own, so the training conversations stay as they are).
        alt_rng = random.Random(args.seed + 1)
        seen = {h["question"] for h in held}
        alt = []
        for key, path, main_only in prepare_data.pages():
            if key in by_page["heldout"]:
                alt += [{"page": key, "question": q, "answer": a}
                        for q, a in page_pairs(path, main_only, alt_rng) if q not in seen]
        alt_rng.shuffle(alt)
        n_alt = min(len(alt), EVAL_QUESTIONS - len(held))
        held += alt[:n_alt]
    assert not {c["page"] for c in train} & held_keys
    with open(os.path.join(args.work, "chat_train.jsonl"), "w", encoding="utf-8") as f:
        for c in train:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    with open(os.path.join(args.work, "chat_heldout.jsonl"), "w", encoding="utf-8") as f:
        for h in held:
            f.write(json.dumps(h, ensure_ascii=False) + "\n")
    n_pairs = sum(len(v) for v in by_page["train"].values())
    stats = (f"training pages with pairs: {len(by_page['train'])}, pairs {n_pairs}, conversations {len(train)} "
             f"(multi-turn {sum(len(c['messages']) > 3 for c in train)}, "
             f"with system prompt {sum(c['messages'][0]['role'] == 'system' for c in train)}); "
             f"answers over {ANSWER_TOKENS} tokens dropped: {n_long}; "
             f"held-out pages with pairs: {len(by_page['heldout'])}, held-out questions {len(held)} "
             f"({n_alt} of them a second phrasing)")
    with open(os.path.join(args.work, "chat_stats.txt"), "w") as f:
        f.write(stats + "\n")
    print(stats)


if __name__ == "__main__":
    main()
