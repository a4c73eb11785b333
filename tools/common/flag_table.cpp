#include "flag_table.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>

#include "core/error.h"

namespace oscar::tools {

int flag_int(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < -(1L << 31) || x > (1L << 31) - 1)
    throw Error(flag + ": expected an integer, got '" + v + "'");
  return (int)x;
}

float flag_float(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end || errno) throw Error(flag + ": expected a number, got '" + v + "'");
  return x;
}

bool flag_bool_value(const std::string& flag, const std::string& v) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  if (l == "1" || l == "true" || l == "on" || l == "enabled") return true;
  if (l == "0" || l == "false" || l == "off" || l == "disabled") return false;
  throw Error(flag + ": expected true/false (1/0, on/off, enabled/disabled), got '" + v + "'");
}

std::vector<std::string> split_list(const std::string& list, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= list.size()) {
    size_t e = list.find(sep, b);
    if (e == std::string::npos) e = list.size();
    if (e > b) out.push_back(list.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

namespace {

// One flag found on the command line: the spec, the spelling used, its value.
struct Given {
  const FlagSpec* spec;
  std::string flag;
  std::string value;
};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string note_for(const std::string& flag, const FlagSpec& spec) {
  return flag + ": accepted, no effect here: " + spec.no_effect;
}

// LLAMA_ARG_X -> LLAMA_ARG_NO_X, the variable that turns an on/off flag off.
std::string negated_env(const std::string& env) {
  const std::string prefix = "LLAMA_ARG_";
  if (env.compare(0, prefix.size(), prefix) != 0) return "";
  return prefix + "NO_" + env.substr(prefix.size());
}

// Applies one spec's variable when set; returns whether it was.
bool apply_env(const FlagSpec& spec, const EnvLookup& env, FlagParseResult& out) {
  auto get = [&](const std::string& name) -> const char* {
    if (name.empty()) return nullptr;
    const char* v = env ? env(name.c_str()) : std::getenv(name.c_str());
    return v;
  };
  const char* v = get(spec.env);
  const bool on_off = !spec.negations.empty();
  std::string value;
  if (on_off && get(negated_env(spec.env))) {
    value = "0";  // LLAMA_ARG_NO_X turns the flag off whatever its value
  } else if (!v || (!*v && !spec.value.empty())) {
    return false;
  } else if (on_off) {
    value = flag_bool_value(spec.env, v) ? "1" : "0";
  } else if (spec.value.empty()) {
    if (!flag_bool_value(spec.env, *v ? v : "1")) return false;
  } else {
    value = v;
  }
  if (!spec.no_effect.empty()) out.notes.push_back(note_for(spec.env, spec));
  else if (spec.apply) spec.apply(value);
  return true;
}

}  // namespace

std::string nearest_flag(const std::vector<FlagSpec>& specs, const std::string& flag) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& s : specs)
    for (const auto* names : {&s.names, &s.negations})
      for (const auto& n : *names) {
        const size_t d = edit_distance(flag, n);
        if (d < best_d) best_d = d, best = n;
      }
  // Suggest only what looks like a typo: at most a third of the name changed.
  if (best.empty() || best_d > std::max<size_t>(2, best.size() / 3)) return "";
  return best;
}

FlagParseResult parse_flags(const std::vector<FlagSpec>& specs, int argc, char** argv, const EnvLookup& env,
                            const UntabledFlags& untabled) {
  std::map<std::string, std::pair<const FlagSpec*, bool>> by_name;  // spelling -> spec, negated
  for (const auto& s : specs) {
    for (const auto& n : s.names) by_name[n] = {&s, false};
    for (const auto& n : s.negations) by_name[n] = {&s, true};
  }
  // The command line first, so the variables of flags given there are skipped.
  std::vector<Given> given;
  std::set<const FlagSpec*> seen;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(f + ": missing value");
      return argv[++i];
    };
    const auto it = by_name.find(f);
    if (it == by_name.end()) {
      if (untabled && untabled(f, next)) continue;
      const std::string near = nearest_flag(specs, f);
      throw Error("unknown flag '" + f + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
                  " (see --help)");
    }
    const FlagSpec& spec = *it->second.first;
    Given g{&spec, f, ""};
    if (!spec.negations.empty()) g.value = it->second.second ? "0" : "1";
    else if (!spec.value.empty())
      for (int k = 0; k < spec.n_values; ++k) g.value += (k ? " " : "") + next();
    given.push_back(std::move(g));
    seen.insert(&spec);
  }
  FlagParseResult out;
  for (const auto& s : specs)
    if (!s.env.empty() && !seen.count(&s)) apply_env(s, env, out);
  std::set<const FlagSpec*> noted;
  for (const auto& g : given) {
    if (!g.spec->no_effect.empty()) {
      if (noted.insert(g.spec).second) out.notes.push_back(note_for(g.flag, *g.spec));
    } else if (g.spec->apply) {
      g.spec->apply(g.value);
    }
  }
  return out;
}

std::string flags_help(const std::vector<FlagSpec>& specs) {
  static const std::pair<FlagGroup, const char*> kSections[] = {
      {FlagGroup::Common, "----- common params -----"},
      {FlagGroup::Sampling, "----- sampling params -----"},
      {FlagGroup::Example, "----- example-specific params -----"},
      {FlagGroup::Oscar, "----- oscar.cpp params -----"}};
  std::string out;
  for (const auto& [group, title] : kSections) {
    std::string section;
    for (const auto& s : specs) {
      if (s.group != group) continue;
      std::string head;
      for (const auto* names : {&s.names, &s.negations})
        for (const auto& n : *names) head += (head.empty() ? "" : ", ") + n;
      if (!s.value.empty()) head += " " + s.value;
      std::string line = "  " + head;
      line += line.size() < 34 ? std::string(34 - line.size(), ' ') : "\n" + std::string(34, ' ');
      std::string help = s.help;
      if (!s.no_effect.empty()) help += (help.empty() ? "" : " ") + std::string("[no effect here: ") + s.no_effect + "]";
      if (!s.env.empty()) help += " (env: " + s.env + ")";
      // Continuation lines of a multi-line help text line up under the first.
      for (size_t p = 0; (p = help.find('\n', p)) != std::string::npos; p += 35) help.insert(p + 1, 34, ' ');
      section += line + help + "\n";
    }
    if (!section.empty()) out += std::string("\n") + title + "\n\n" + section;
  }
  return out;
}

}  // namespace oscar::tools
