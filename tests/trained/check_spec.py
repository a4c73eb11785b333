"""The shipped model against the constraints of issue 9, read from the file
with the project's independent GGUF reader: qwen3, head dim 64 or 128, GQA,
per-head Q/K norms, >= 6 layers, trained context >= 1024, byte-level BPE of
4K-8K tokens with the special tokens and a chat template, F16, <= 30 MB."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import gguf_min  # noqa: E402


def main():
    path = sys.argv[1]
    g = gguf_min.Gguf(path)
    m, a = g.meta, "qwen3."
    problems = []

    def need(ok, what):
        if not ok:
            problems.append(what)

    need(m.get("general.architecture") == "qwen3", "architecture is qwen3")
    hd, nh, nkv = m[a + "attention.key_length"], m[a + "attention.head_count"], m[a + "attention.head_count_kv"]
    need(hd in (64, 128), f"head dim 64 or 128 (is {hd})")
    need(nkv < nh and nh % nkv == 0, f"GQA ({nh} query / {nkv} KV heads)")
    n_layer = m[a + "block_count"]
    need(n_layer >= 6, f">= 6 layers (is {n_layer})")
    need(m[a + "context_length"] >= 1024, "context >= 1024")
    for i in range(n_layer):
        for t in ("attn_q_norm", "attn_k_norm"):
            need(f"blk.{i}.{t}.weight" in g.tensors, f"blk.{i}.{t}.weight present")
    tokens = m["tokenizer.ggml.tokens"]
    need(4096 <= len(tokens) <= 8192, f"vocab 4K-8K (is {len(tokens)})")
    need(m["tokenizer.ggml.model"] == "gpt2", "gpt2-style BPE")
    need(len(m["tokenizer.ggml.merges"]) > 0, "merges present")
    for s in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        need(s in tokens and m["tokenizer.ggml.token_type"][tokens.index(s)] == 3, f"{s} is a control token")
    need("<|im_start|>" in m.get("tokenizer.chat_template", ""), "ChatML chat template")
    need(m.get("general.file_type") == 1, "F16")
    size = os.path.getsize(path)
    need(size <= 30 * 1024 * 1024, f"<= 30 MB (is {size})")
    for p in problems:
        print("FAIL:", p)
    print("OK" if not problems else f"{len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
