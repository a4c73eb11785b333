// llama.cpp-style command-line flags as data: each flag is one FlagSpec
// (its spellings, value, help group, LLAMA_ARG_* variable, and either what it
// sets or why it has no effect here). One parser reads argv and the
// environment for any list of specs, so every tool accepts llama-server's
// flags the same way, prints them grouped as llama-server does, and suggests
// the nearest flag for a typo.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace oscar::tools {

// The --help sections, in llama-server's order ("example-specific" is the
// tool's own section; Oscar holds this project's additions).
enum class FlagGroup { Common, Sampling, Example, Oscar };

struct FlagSpec {
  std::vector<std::string> names;      // spellings that set the flag (or turn it on)
  std::vector<std::string> negations;  // --no-X spellings of an on/off flag
  std::string value;                   // the value's name in --help; "" for switches
  int n_values = 1;                    // values it takes when `value` is set (2: START END)
  FlagGroup group = FlagGroup::Common;
  std::string env;                     // LLAMA_ARG_* variable ("" when none)
  std::string help;
  // Called with the value; a switch gets "", an on/off flag "1" or "0".
  std::function<void(const std::string& value)> apply;
  // Non-empty: accepted but has no effect here, for this reason (logged once).
  std::string no_effect;
};

using EnvLookup = std::function<const char*(const char*)>;

// A tool's own flags outside the table (oscar-perplexity, oscar-calibrate):
// returns true when it consumed `flag`, reading a value with next().
using UntabledFlags = std::function<bool(const std::string& flag, const std::function<std::string()>& next)>;

struct FlagParseResult {
  // One line per no-effect flag that was given: "--numa: no effect here: ...".
  std::vector<std::string> notes;
};

// Applies the LLAMA_ARG_* variables of the specs whose flag is not on the
// command line (a flag beats its variable), then the command-line flags in
// order. Unknown flags throw Error with the nearest known spelling.
FlagParseResult parse_flags(const std::vector<FlagSpec>& specs, int argc, char** argv, const EnvLookup& env,
                            const UntabledFlags& untabled = nullptr);

// --help text: the specs in their groups, llama-server's section titles.
std::string flags_help(const std::vector<FlagSpec>& specs);

// The known spelling nearest to `flag` by edit distance ("" when none is close).
std::string nearest_flag(const std::vector<FlagSpec>& specs, const std::string& flag);

// Value helpers for handlers; they throw Error naming the flag.
int flag_int(const std::string& flag, const std::string& v);
float flag_float(const std::string& flag, const std::string& v);
bool flag_bool_value(const std::string& flag, const std::string& v);  // true/1/on/enabled, false/0/off/disabled
std::vector<std::string> split_list(const std::string& list, char sep = ',');

}  // namespace oscar::tools
