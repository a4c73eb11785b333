// Scripted models for end-to-end tests (oscar-mkmodel --script FILE): weights
// under which greedy decoding follows fixed token chains, so a test can make
// a served model "decide" to write a tool call, or a plain answer, on cue.
//
// The script (JSON):
//   {"marker": "<tool_response>",
//    "chains":              [["\n", "<tool_call>", "\n{\"name\": ...", "<|im_end|>"]],
//    "chains_after_marker": [["\n", "It is sunny.", "<|im_end|>"]]}
// Each chain is a list of text pieces, one token each: after the first piece
// (the trigger, typically the last token of a rendered prompt) greedy
// decoding emits the others in order. "chains_after_marker" take over once
// the marker token occurs anywhere in the context (e.g. a tool response came
// back). Every token not scripted is followed by EOS.
//
// How: one qwen3 layer whose FFN adds nothing and whose attention only looks
// for the marker; one-hot embeddings (one hidden dimension per token, one
// more for "marker seen"), and output rows that map a token's dimension to
// its successor. See script_weights.cpp for the margins.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_value.h"
#include "model_spec.h"
#include "tensor_plan.h"

namespace oscar::mkmodel {

struct Script {
  std::string marker;  // empty: no after-marker chains
  std::vector<std::vector<std::string>> chains, after_marker;
};

// Reads and checks a script file; throws Error naming the problem.
Script load_script(const std::string& path);

// The script in token ids.
struct ScriptTokens {
  int marker = -1;
  int eos = -1;                   // what every unscripted token is followed by
  std::map<int, int> next;        // successor without the marker in context
  std::map<int, int> next_after;  // successor once the marker was seen
};

// Finds each piece in a byte-level BPE vocabulary (control / user-defined
// tokens by their text, others by their bytes) and appends the missing ones:
// triggers and the marker as user-defined tokens (so the tokenizer produces
// them from prompt text), the rest as normal tokens. Throws Error when a
// token would need two different successors.
ScriptTokens add_script_tokens(const Script& script, std::vector<gguf::KeyValue>& vocab);

// The hidden size a scripted model of n_vocab tokens needs.
int script_embd(int n_vocab);

// Replaces the planned tensors' values with the scripted weights. The spec
// must be qwen3 with untied output and n_embd >= script_embd(n_vocab).
void apply_script(const ScriptTokens& st, const ModelSpec& s, std::vector<TensorPlan>& plan);

}  // namespace oscar::mkmodel
