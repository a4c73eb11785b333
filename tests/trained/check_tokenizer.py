"""Our engine's tokenizer against the training script's on the model's own
vocabulary: the held-out text (line by line and whole) and tricky strings.

The Python side (training/bpe.py) reads tokens and merges from the GGUF, so
both encode with exactly what was shipped.

  check_tokenizer.py BIN_DIR MODEL.gguf HELDOUT.txt
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "training"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import bpe  # noqa: E402
import gguf_min  # noqa: E402

TRICKY = [
    "", " ", "  ", "\n", "\n\n\n", " \n ", "\t\tx", "a  b   c", "x \n\n y",
    "don't I'll we've she'd they're it's O'Neil 'quoted' ''", "DON'T I'LL",
    "1234567890 3.14159 0x1F -42", "héllo wörld naïve café", "Ünïcödé ÀÉÎ",
    "日本語のテキスト 中文", "emoji 🙂👍🏽 done", "\u00a0nbsp\u2003em\u3000ideo",
    "tabs\tand\u000bvertical\u000cfeed", "ligature ﬁ and ½ ² ⅷ",
    "$ apt-get install -y debian-handbook && echo ok", "def f(x):\n    return x ** 2\n",
    "<|endoftext|> written as text", "a<|im_start|>b", "trailing spaces   ",
    "   leading spaces", "\r\nwindows\r\nlines\r\n", "mixed-123abc_def", "...!!!???",
    "'s's's", " 's", "Zürich, Straße", "\u0300combining", "x\u200by zero width",
]


def engine_ids(bin_dir, model, text):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([os.path.join(bin_dir, "oscar-tokenize"), "-m", model, "-f", path, "--ids",
                            "--no-bos", "--no-parse-special"], capture_output=True)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        sys.exit(f"oscar-tokenize failed: {r.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def main():
    bin_dir, model, heldout = sys.argv[1:4]
    meta = gguf_min.Gguf(model).meta
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tk = bpe.Tokenizer(meta["tokenizer.ggml.tokens"], merges)
    with open(heldout, encoding="utf-8") as f:
        text = f.read()
    fails = 0
    whole_ref = tk.encode(text)
    whole_eng = engine_ids(bin_dir, model, text)
    if whole_ref != whole_eng:
        k = next((i for i, (a, b) in enumerate(zip(whole_ref, whole_eng)) if a != b),
                 min(len(whole_ref), len(whole_eng)))
        print(f"held-out text differs at token {k}: python {whole_ref[k:k + 8]} engine {whole_eng[k:k + 8]}")
        fails += 1
    for s in TRICKY:
        ref, eng = tk.encode(s), engine_ids(bin_dir, model, s)
        if ref != eng:
            print(f"differs on {s!r}: python {ref} engine {eng}")
            fails += 1
        elif tk.decode(ref) != s:
            print(f"python round trip fails on {s!r}")
            fails += 1
    print(f"held-out: {len(whole_ref)} tokens; {len(TRICKY)} tricky strings; {fails} mismatches")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
